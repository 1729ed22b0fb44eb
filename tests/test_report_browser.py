"""A rendered report, opened in a real headless Chromium with no network: every chart draws, nothing errs.

The report re-renders stored results (``run=False``) so this test needs a kernel and a browser but no load;
the runs it renders are made once, for real, by the ``stored_runs`` fixture (two servers, 2 s each).
Chromium is Debian's (/usr/bin/chromium), driven by playwright for Python; requests that leave the page
are refused and counted, so a report that needs a CDN fails here.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from benchlab import report
from tests.test_notebooks import compared, stored_runs  # noqa: F401 - fixtures: real runs, made once a session

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("BENCHLAB_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--no-first-run", "--disable-quic", "--disable-sync", "--disable-dev-shm-usage"]
#: A place to keep the screenshot for a person to look at (CI keeps it as an artifact if it wants).
SHOTS = Path(os.environ.get("BENCHLAB_SCREENSHOTS", ROOT / "data" / "reports" / "screenshots"))

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def rendered(stored_runs, tmp_path_factory) -> report.Report:
    out = tmp_path_factory.mktemp("report") / "compare.ipynb"
    return report.execute(ROOT / "notebooks" / "compare.ipynb", {"run": False, "results_dir": str(stored_runs)},
                          output=out)


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (never 'playwright "
                                                                      "install': the system chromium is used)")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no chromium at {CHROMIUM}: apt-get install chromium, or set BENCHLAB_CHROMIUM")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield browser
        browser.close()


def test_report_draws_every_chart_offline_without_errors(rendered, browser, tmp_path):
    html_text = rendered.html.read_text()
    assert "<script src=\"http" not in html_text and "<link href=\"http" not in html_text
    expected = html_text.count('class="benchlab-chart"')
    assert expected == 4                                   # throughput, latency, merged spectrum, resources

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    outside: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type in ("error", "warning") else None)

    def refuse(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", refuse)
    page.goto(rendered.html.as_uri(), wait_until="load")
    page.wait_for_function(
        f"document.querySelectorAll('.benchlab-chart[data-rendered=yes], .benchlab-chart[data-error]').length "
        f"== {expected}", timeout=60_000)

    charts = page.query_selector_all(".benchlab-chart")
    assert len(charts) == expected
    for chart in charts:
        assert chart.get_attribute("data-error") is None, chart.get_attribute("data-error")
        marks = chart.query_selector_all("svg g.role-mark path, svg g.role-mark line, svg g.role-mark rect")
        assert chart.query_selector("svg") is not None and len(marks) > 0
        box = chart.bounding_box()
        assert box and box["width"] > 200 and box["height"] > 150
    # the dots of every repeat are drawn: one symbol per run in the throughput chart
    dots = charts[0].query_selector_all("g.mark-symbol path")
    assert len(dots) >= 4
    assert errors == [] and outside == []

    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / "compare-report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    shutil.copy(shot, tmp_path / shot.name)
    page.close()


def test_tooltip_shows_the_figures_on_hover(rendered, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(rendered.html.as_uri(), wait_until="load")
    page.wait_for_selector(".benchlab-chart[data-rendered=yes] g.mark-symbol path", timeout=60_000)
    dot = page.query_selector(".benchlab-chart g.mark-symbol path")
    dot.hover(force=True)
    page.wait_for_selector("#vg-tooltip-element.visible", timeout=10_000)
    text = page.inner_text("#vg-tooltip-element")
    assert "server" in text and "rps" in text and "spring-" in text
    page.close()
