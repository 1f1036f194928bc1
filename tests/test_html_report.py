"""One ``report.html`` for every kind of run folder, written by the one HtmlExporter.

Run folders come from the real commands run briefly (sweep, diagnose --out, tune --out) and from
the committed folders under ``results/`` copied to tmp (io, scaling, profile, a repeated sweep),
rebuilt by ``gluonbench report``. The browser tests open each page in headless Chromium.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO, run_cli, run_clis, with_more_budget

from gluonbench.report.charts import chart_html, png_bytes, svg_text
from gluonbench.report.exporters import EXPORTERS, HtmlExporter
from gluonbench.report.html import DATA_ID, TEMPLATE_FILES, embed_json, render_page, template
from gluonbench.report.store import RunStore
from gluonbench.rundir import load, rebuild

RESULTS = REPO / "results"
COMMITTED = {
    "sweep-repeat": "20261122T163950Z-sweep-mnist-cpu-1epoch-repeat3",
    "io": "20261122T162310Z-io-local-read",
    "scaling": "20261123T130925Z-scaling-dist_sync-cpu",
    "profile": "20261123T132544Z-profile-cpu-hog-mnist-w2",
}
KIND = {"sweep": "run", "sweep-repeat": "run", "io": "io", "scaling": "dist", "profile": "profile",
        "diagnosis": "diagnosis", "tune": "tune"}  # fmt: skip


def embedded(page: str) -> dict:
    """The JSON a report.html embeds."""
    match = re.search(rf'<script type="application/json" id="{DATA_ID}">(.*?)</script>', page, re.S)
    assert match, "no embedded records"
    return json.loads(match.group(1))


def assert_self_contained(page: str) -> None:
    """Nothing is loaded from anywhere: no URL, no external script, style sheet, image or font (an SVG's
    ``url(#id)`` names an element of the page itself)."""
    lowered = page.lower()
    for needle in ("http:", "https:", "//cdn", "<link", "src=", "@import", "<image"):
        assert needle not in lowered, needle
    assert not re.findall(r"url\((?!#)", lowered)


CHARTS = {
    "sweep": {"throughput": ["DataLoader workers", "training samples/s", "train duration (s)", "mnist, batch"],
              "split": ["mnist: where the steady step time goes", "input wait", "copy to device", "0 workers"]},
    "sweep-repeat": {"throughput": ["median with min-max over 3 repeats", "each repeat"],
                     "split": ["input wait: median over repeats", "8 workers"]},
    "diagnosis": {"probes": ["samples/s of each probe, in pipeline order", "full", "cached_batch", "95 % CI"],
                  "shares": ["Shares of the step time", "Sub-stages, each measured by its own probe", "whisker"]},
    "tune": {"expected": ["current setting (batch 32)", "recommended (batch", "model ceiling", "samples/s"],
             "evidence": ["every measurement the search made", "cores busy", "colour by phase"]},
    "io": {"throughput": ["read MB/s (all epochs)", "start-up to first batch (s)", "input mode", "fastfile"]},
    "scaling": {"throughput": ["aggregate training samples/s (steady)", "kvstore workers", "of ideal", "baseline"],
                "split": ["summed steady step time of all workers", "compute (no kvstore)", "kvstore"]},
    "profile": {"phases": ["training loop"], "steps-histogram": ["Step duration", "outlier limit"],
                "steps": ["Step duration and data wait per step"], "algo-1-cpu": ["CPU utilisation per core"]},
}  # fmt: skip
"""Each page's charts (its ``<figure id="chart-NAME">``, more in a profile) and text each one's SVG shows."""


def inline_charts(page: str) -> dict[str, str]:
    """Each chart's inline SVG in a page, by name."""
    found = re.findall(r'<figure class="chart" id="chart-([^"]+)">(<svg .*?</svg>)</figure>', page, re.S)
    return dict(found)


@pytest.fixture(scope="module")
def folders(tmp_path_factory, mnist_dir) -> dict[str, Path]:
    """One run folder per kind, each made by a real command (or committed), with its report.html."""
    tmp = tmp_path_factory.mktemp("html")
    out = tmp / "out"
    found: dict[str, Path] = {}
    # the committed folders' reports are rebuilt while the sweep runs (none of them is timed)
    for name, folder in COMMITTED.items():
        found[name] = tmp / folder
        shutil.copytree(RESULTS / folder, found[name])
        (found[name] / "report.html").unlink(missing_ok=True)
    sweep = ("sweep", "--workers", "0,1", "--max-batches", "8", "--data-dir", str(mnist_dir), "--no-download",
             "--out", str(out / "sweep"))  # fmt: skip
    for proc in run_clis(sweep, *(("report", str(found[name])) for name in COMMITTED)):
        assert proc.returncode == 0, proc.stderr
    (found["sweep"],) = (out / "sweep").iterdir()
    common = ("--dataset", "synthetic", "--samples", "512", "--batch-size", "32", "--data-dir", str(tmp / "cache"))
    proc = run_cli("diagnose", *common, "--budget", "4", "--out", str(out / "diagnosis"))
    assert proc.returncode == 0, proc.stderr
    (found["diagnosis"],) = (out / "diagnosis").iterdir()
    # a machine busy with other jobs can starve the loader's workers past a 10 s budget (the run then ends as a
    # stall, exit 2): measure again with twice the budget, into a folder of its own, as that message advises
    folders: list[Path] = []

    def tune(budget: float):
        folders.append(out / f"tune-{budget:g}")
        return run_cli("tune", *common, "--budget", f"{budget:g}", "--out", str(folders[-1]))

    proc = with_more_budget(tune, (10, 20, 40), lambda proc: not (proc.returncode == 2 and "stalled" in proc.stderr))
    assert proc.returncode == 0, proc.stderr
    tune_out = folders[-1]
    (found["tune"],) = tune_out.iterdir()
    assert proc.stdout.rstrip().endswith(f"results: {found['tune']}")
    return found


def test_the_html_exporter_is_one_exporter_among_the_formats():
    assert isinstance(EXPORTERS["html"], HtmlExporter) and EXPORTERS["html"].suffix == ".html"
    for name in TEMPLATE_FILES:  # shipped as package data (setup.cfg [options.package_data])
        assert template(name).strip()
    assert "gluonbench.report = templates/*.html, templates/*.css, templates/*.js" in (REPO / "setup.cfg").read_text()


def test_records_are_embedded_safely():
    hostile = {"command": "</script><script>alert(1)</script> & <!--", "nan": float("nan")}
    text = embed_json(hostile)
    assert "</" not in text and "<!--" not in text
    assert json.loads(text) == {"command": hostile["command"], "nan": None}
    page = render_page("run", "t <b>", "s", hostile)
    assert embedded(page)["data"]["command"] == hostile["command"]
    assert "<title>t &lt;b&gt;</title>" in page


@pytest.mark.parametrize("name", list(KIND))
def test_every_kind_of_run_folder_gets_a_self_contained_report(folders, name):
    page = (folders[name] / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert_self_contained(page)
    payload = embedded(page)
    assert payload["kind"] == KIND[name]
    assert template("report.js").strip()[:60] in page and template("report.css").strip()[:60] in page
    charts = inline_charts(page)
    for chart, texts in CHARTS[name].items():  # one matplotlib figure per chart, inlined as SVG with its text as text
        svg = charts[chart]
        assert "<text" in svg and "<?xml" not in svg and "<metadata" not in svg, chart
        for text in texts:
            assert text in html.unescape(svg), (chart, text)
    if name != "profile":
        assert set(charts) == set(CHARTS[name])
    assert page.count("<svg ") == len(charts) == page.count('<figure class="chart" id="chart-')
    data = payload["data"]
    if KIND[name] == "run":
        assert [r["workers"] for r in data["rows"]] == ([0, 1] if name == "sweep" else [0, 1, 2, 4, 8])
        assert len(data["runs"]) == len(RunStore(folders[name]).records()) == (2 if name == "sweep" else 15)
        for row in data["rows"]:
            assert row["runs"] >= 1 and set(row["split"]) == {"wait", "copy", "compute"}
            assert sum(row["split"].values()) == pytest.approx(1.0, abs=1e-6)
    elif KIND[name] == "diagnosis":
        assert data["probe_order"][0] == "full" and set(data["probe_order"]) == set(data["diagnosis"]["probes"])
    elif KIND[name] == "tune":
        assert data["dataloader"].startswith("gluon.data.DataLoader(") and data["evidence"]
    elif KIND[name] == "profile":
        assert "<h2>Rules</h2>" in page and "<svg" in page and any(r["rule"] == "InputBound" for r in data["rules"])
    else:
        assert data["rows"]


@pytest.mark.parametrize("name", ["sweep", "diagnosis", "tune", "scaling"])
def test_each_chart_title_names_the_pipeline(folders, name):
    report = load(folders[name])
    identity = "synthetic" if name in ("diagnosis", "tune") else "mnist"
    for chart in report.charts():
        fig = chart.draw()
        texts = [t.get_text() for t in [*fig.texts, fig._suptitle] if t is not None]
        assert any(t.startswith(f"{identity}:") or t.startswith(f"{identity},") for t in texts), (chart.name, texts)


@pytest.mark.parametrize("name", ["sweep", "io", "scaling"])
def test_the_png_and_the_page_draw_the_same_figure(folders, name):
    """The PNG file is the png chart's figure saved as PNG; the page inlines that same figure as SVG."""
    report = load(folders[name])
    (chart,) = [c for c in report.charts() if c.name == report.png_chart]
    png = folders[name] / report.files["png"]
    assert png.read_bytes() == png_bytes(chart.draw())
    page = (folders[name] / "report.html").read_text(encoding="utf-8")
    assert chart_html(chart) in page
    assert inline_charts(page)[chart.name] == svg_text(chart.draw(), salt=f"gluonbench-{chart.name}").replace(
        "<svg ", f'<svg role="img" aria-label="{html.escape(chart.title)}" ', 1
    )


def test_drawing_charts_imports_matplotlib_only_when_drawn_and_keeps_no_figure():
    import subprocess
    import sys

    code = (
        "import sys, gluonbench.cli, gluonbench.rundir, gluonbench.report.charts, gluonbench.profiler.report; "
        "print('matplotlib' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    report = load(RESULTS / COMMITTED["sweep-repeat"])
    assert len(report.charts()) == 2
    for chart in report.charts():
        assert chart_html(chart).startswith(f'<figure class="chart" id="chart-{chart.name}"><svg ')
    assert plt.get_fignums() == before  # no figure registered with pyplot, none left open


@pytest.mark.parametrize("name", ["sweep", "diagnosis", "tune", "io", "scaling"])
def test_report_html_is_rebuilt_identically_from_the_records(folders, name):
    page = folders[name] / "report.html"
    before = page.read_bytes()
    page.unlink()
    assert page in rebuild(folders[name])
    assert page.read_bytes() == before


def test_tune_out_refuses_an_unwritable_folder_before_measuring(cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = cli("tune", "--dataset", "synthetic", "--samples", "64", "--out", str(blocker / "sub"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "is a file, not a folder" in proc.stderr and "tune-" not in proc.stdout


def diagnosis_with_other_fields(folders: dict[str, Path], folder: Path) -> Path:
    """The real diagnosis with a field the page does not know (a later verdict's) and without sub-stages (older)."""
    folder.mkdir(exist_ok=True)
    record = RunStore(folders["diagnosis"]).records()[-1]
    record["diagnosis"]["speedups"] = {"no_preprocess": {"ratio": 1.06, "ci": [1.02, 1.1]}}
    del record["diagnosis"]["stages"]
    RunStore(folder).append(record)
    rebuild(folder)
    return folder


def diagnosis_at_the_line(folders: dict[str, Path], folder: Path) -> Path:
    """The real diagnosis re-labelled as one at the line (a gain beyond the noise whose CI crosses the 5 % line)."""
    folder.mkdir(exist_ok=True)
    record = RunStore(folders["diagnosis"]).records()[-1]
    d = record["diagnosis"]
    d["verdict"], d["analysis"] = "inconclusive", {**(d.get("analysis") or {}), "reuse": "at_line"}
    d["speedups"] = {**(d.get("speedups") or {}), "input": 1.05}
    d["speedup_ci"] = {**(d.get("speedup_ci") or {}), "input": [1.03, 1.07]}
    RunStore(folder).append(record)
    rebuild(folder)
    return folder


def sweep_with_every_section(folders: dict[str, Path], folder: Path) -> Path:
    """The real sweep's records plus a failed run, per-count verdicts and a data-parallel step."""
    folder.mkdir(exist_ok=True)
    records = RunStore(folders["sweep"]).records()
    for r in records:
        name = f"20261123T2158Z-profile-w{r['spec']['workers']}-r0"
        profile = {"dir": str(folder / "profiles" / name), "triggered": []}
        r["extra"] = dict(r.get("extra") or {}, profile=profile, verdict="gpu_io", shares={"preprocessing": 0.2, "gpu_io": 0.8},
                          input_bound="moderately", comm_share=0.12, kvstore_step_ms=3.5, devices=["cpu(0)", "cpu(1)"],
                          params_equal_on_devices=True)  # fmt: skip
    failed = dict(records[0], status="failed", error="exit code -6 (SIGABRT)", spec=dict(records[0]["spec"], workers=2))
    store = RunStore(folder)
    for r in [*records, failed]:
        store.append(r)
    shutil.copy(folders["sweep"] / "sweep.json", folder / "sweep.json")
    rebuild(folder)
    return folder


def test_a_diagnosis_field_the_page_does_not_know_is_still_embedded(folders, tmp_path):
    data = embedded((diagnosis_with_other_fields(folders, tmp_path) / "report.html").read_text())["data"]
    assert data["diagnosis"]["speedups"]["no_preprocess"]["ci"] == [1.02, 1.1]


# -- in a real browser ---------------------------------------------------------------------------

HEADINGS = {
    "sweep": ["Throughput by worker count", "Step split", "Per worker count", "Run"],
    "sweep-repeat": ["Throughput by worker count", "Step split", "Per worker count", "Run"],
    "diagnosis": ["Pipeline", "Probe chain", "Shares", "Measurement", "Run"],
    "tune": ["Expected throughput", "Evidence", "Run"],
    "io": ["Read throughput per cell", "Cells", "Run"],
    "scaling": ["Aggregate throughput", "Step split", "Per setting", "Run"],
    "profile": ["Job summary", "Rules", "System usage", "Steps", "Timelines"],
}


@pytest.fixture(scope="module")
def driver():
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromedriver = shutil.which("chromedriver")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromedriver or not browser:
        pytest.skip("chromium and chromium-driver are not installed (apt-get install -y chromium chromium-driver)")
    options = Options()
    options.binary_location = browser
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1100,1400",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(chromedriver), options=options)
    yield d
    d.quit()


@pytest.mark.browser
@pytest.mark.parametrize("name", list(HEADINGS))
def test_each_report_renders_in_chromium_without_console_errors(driver, folders, name):
    page = folders[name] / "report.html"
    driver.set_window_size(1100, 1400)
    driver.get(page.as_uri())
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert not errors, errors
    assert driver.title.startswith("gluonbench")
    headings = [h.text for h in driver.find_elements("tag name", "h2")]
    for heading in HEADINGS[name]:
        assert heading in headings, (heading, headings)
    charts = driver.find_elements("css selector", "figure.chart > svg")
    assert len(charts) == len(driver.find_elements("tag name", "svg")) >= len(CHARTS[name])
    assert all(c.size["width"] > 0 and c.size["height"] > 0 for c in charts)
    # the renderer moved each chart into its section: right under the section's heading
    placed = driver.execute_script(
        "return Array.from(document.querySelectorAll('figure.chart')).map(function (f) {"
        "  var h = f.previousElementSibling; while (h && h.tagName !== 'H2' && h.tagName !== 'H3') {"
        "    h = h.previousElementSibling; } return [f.id, h ? h.textContent : null]; })"
    )
    for chart, heading in placed:
        assert heading in HEADINGS[name] or name == "profile", (chart, heading)
    assert not driver.find_elements("css selector", "div.chart-slot")
    text = driver.find_element("tag name", "main").text
    assert "could not draw" not in text
    svg_text = driver.execute_script(
        "return Array.from(document.querySelectorAll('figure.chart')).map(function (f) { return f.textContent; })"
        ".join(' ')"
    )
    if name == "sweep-repeat":
        # 0 workers' best repeat reaches 1 worker's worst: no best count is named
        assert "median with min-max over 3 repeats" in svg_text and "within noise: rerun with --repeat" in text
    if name == "sweep":
        assert "one run per worker count (spread unknown)" in svg_text and "min-max" not in svg_text
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1100, min(height + 200, 8000))
    keep = REPO / ".pytest-artifacts"
    keep.mkdir(exist_ok=True)
    shot = keep / f"report-{name}.png"
    assert driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 20_000


@pytest.mark.browser
def test_optional_sections_render_when_their_fields_are_there(driver, folders, tmp_path):
    cases = {
        "diagnosis-other-fields": (
            diagnosis_with_other_fields(folders, tmp_path / "d"),
            ["More fields of the diagnosis"],
        ),
        "diagnosis-at-the-line": (diagnosis_at_the_line(folders, tmp_path / "a"), ["Pipeline", "Probe chain"]),
        "sweep-every-section": (
            sweep_with_every_section(folders, tmp_path / "s"),
            ["Failed runs", "Bottleneck per worker count", "Data-parallel step"],
        ),
    }
    for name, (folder, sections) in cases.items():
        driver.get((folder / "report.html").as_uri())
        assert not [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"], name
        headings = [h.text for h in driver.find_elements("tag name", "h2")]
        for heading in sections:
            assert heading in headings, (name, heading, headings)
        text = driver.find_element("tag name", "main").text
        assert "could not draw" not in text
        if name.startswith("sweep"):  # a link to each run's profile page (sweep --profile), beside this page
            links = [a.get_attribute("href") for a in driver.find_elements("css selector", "main a")]
            assert [link.rsplit("/", 3)[1:] for link in links] == [
                ["profiles", f"20261123T2158Z-profile-w{w}-r0", "report.html"] for w in (0, 1)
            ]
        if name == "diagnosis-at-the-line":
            assert (
                "Verdict: inconclusive, at the line (reusing one batch gains beyond the noise, 1.050x [1.030, 1.070]"
                in text
            )
        elif name.startswith("diagnosis"):
            assert "speedups" in text and "Sub-stages" not in text
        else:
            assert "SIGABRT" in text
        driver.save_screenshot(str(REPO / ".pytest-artifacts" / f"report-{name}.png"))
