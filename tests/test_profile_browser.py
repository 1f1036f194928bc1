"""The profile report in a real headless browser: renders, no console errors, a screenshot."""

from __future__ import annotations

import shutil
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.browser


@pytest.fixture
def driver(no_leaks):
    """Chromium for one test; quit before ``no_leaks`` checks for processes left behind."""
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


def test_report_renders_without_console_errors(driver, cli, tmp_path):
    script = tmp_path / "hooked.py"
    script.write_text(
        "import time\nfrom gluonbench import profiler\n"
        "for i in profiler.wrap(range(150)):\n"
        "    with profiler.step():\n"
        "        time.sleep(0.03 if i % 50 == 7 else 0.002)\n"
    )
    proc = cli("profile", "--interval", "100", "--out", str(tmp_path / "r"), "--", sys.executable, str(script))
    assert proc.returncode == 0, proc.stderr
    report = next((tmp_path / "r").iterdir()) / "report.html"
    driver.get(report.as_uri())
    errors = [e for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]
    assert not errors, errors
    assert driver.title.startswith("gluonbench profile")
    headings = [h.text for h in driver.find_elements("tag name", "h2")]
    for section in ("Job summary", "Rules", "System usage", "Steps", "DataLoader analysis", "Timelines"):
        assert section in headings, headings
    charts = driver.find_elements("tag name", "svg")
    assert len(charts) >= 8
    assert all(c.size["width"] > 0 and c.size["height"] > 0 for c in charts)
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1100, min(height + 40, 6000))
    shot = tmp_path / "report.png"
    assert driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 20_000
    keep = REPO / ".pytest-artifacts"
    keep.mkdir(exist_ok=True)
    shutil.copy(shot, keep / "profile-report.png")
