"""MkDocs hook: Sphinx cross-reference roles in docstrings (``:class:`~a.b.C```) read as code, not as text.

mkdocstrings' Python handler parses Sphinx-style fields (``:param x:``) but renders inline roles as
they stand, so a page would show ``:class:`` before the name. After each page is rendered, a role followed by
its code span becomes the code span alone; a leading ``~`` keeps only the last dotted part, as Sphinx does.
"""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|exc|data|obj|const):<code>(~?)([^<]*)</code>")


def _code(m: re.Match[str]) -> str:
    name = m[2].rsplit(".", 1)[-1] if m[1] else m[2]
    return f"<code>{name}</code>"


def on_page_content(html: str, page, config, files) -> str:
    """Drop the role, keep the name as code."""
    return ROLE.sub(_code, html)
