"""The HTML export: one self-contained ``report.html`` for every kind of run folder.

hyperfine's HTML export in shape: a template (``templates/report.html``), a style sheet
(``report.css``) and a small renderer (``report.js``), shipped as package data, with the
report's records embedded as JSON in the page. The charts are the report's matplotlib figures
(:meth:`~gluonbench.report.exporters.Report.charts`, the same figures as its PNG file) inlined
as SVG (:mod:`gluonbench.report.charts`); the renderer writes the headline, the tables and the
text from the JSON and moves each chart into its section. The page needs no network and no
file beside it: no CDN, no external font, no image file. A report that is already HTML (the
profiler's) hands its body in through :meth:`~gluonbench.report.exporters.Report.html_body` and
goes through the same template. :class:`~gluonbench.report.exporters.HtmlExporter` writes it.
Without JavaScript the page shows the charts and the report's Markdown document.

The renderer reads the fields it knows and shows any other field of a diagnosis as a plain
table, so a field added to the records later appears without a template change.
"""

from __future__ import annotations

import html
import json
from functools import cache
from importlib import resources
from string import Template
from typing import TYPE_CHECKING

from gluonbench.report.store import json_safe
from gluonbench.version import __version__

if TYPE_CHECKING:
    from gluonbench.report.exporters import Report

TEMPLATE_FILES = ("report.html", "report.css", "report.js")
"""The template files under ``gluonbench/report/templates/`` (package data)."""

DATA_ID = "gluonbench-data"
"""The id of the ``<script type="application/json">`` element holding the records."""


@cache
def template(name: str) -> str:
    """The text of one template file shipped with the package."""
    return (resources.files("gluonbench.report") / "templates" / name).read_text(encoding="utf-8")


def embed_json(value: object) -> str:
    """``value`` as JSON safe inside a ``<script>`` element (no ``</script>``, no ``<!--``)."""
    text = json.dumps(json_safe(value), sort_keys=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(
    kind: str, title: str, subtitle: str, data: object, body: str = "", fallback: str = "", charts: str = ""
) -> str:
    """One page from the template: ``data`` embedded as JSON, ``body`` and ``charts`` as given (HTML),
    ``fallback`` as text."""
    payload = {"kind": kind, "title": title, "subtitle": subtitle, "gluonbench": __version__, "data": data}
    noscript = f"<noscript><pre class='fallback'>{html.escape(fallback)}</pre></noscript>" if fallback else ""
    return Template(template("report.html")).substitute(
        title=html.escape(title),
        subtitle=html.escape(subtitle),
        kind=html.escape(kind),
        version=html.escape(__version__),
        css=template("report.css"),
        body=body + charts + noscript,
        data_id=DATA_ID,
        data=embed_json(payload),
        js=template("report.js"),
    )


def html_text(report: Report) -> str:
    """The ``report.html`` of ``report``: its charts inlined as SVG."""
    from gluonbench.report.charts import chart_html

    return render_page(
        report.kind,
        report.html_title(),
        report.html_subtitle(),
        report.html_data(),
        report.html_body(),
        report.html_fallback(),
        "".join(chart_html(c) for c in report.charts()),
    )
