"""A rendered report, opened in a real headless Chromium with no network: every chart draws, nothing errs.

The report re-renders stored results (``measure=False``) so this test needs a kernel and a browser but no load;
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
def rendered(stored_runs, tmp_path_factory) -> report.Report:  # noqa: F811 - stored_runs: the fixture imported above
    out = tmp_path_factory.mktemp("report") / "compare.ipynb"
    return report.execute(ROOT / "notebooks" / "compare.ipynb", {"measure": False, "results_dir": str(stored_runs)},
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
    assert expected == 5                  # throughput, latency, merged spectrum, each window, resources

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


def _ink(page, png: bytes) -> float:
    """The share of the screenshot's pixels that are not white, counted by the browser itself."""
    import base64

    return page.evaluate("""async (data) => {
        const image = new Image(); image.src = "data:image/png;base64," + data; await image.decode();
        const canvas = document.createElement("canvas"); canvas.width = image.width; canvas.height = image.height;
        const context = canvas.getContext("2d"); context.drawImage(image, 0, 0);
        const pixels = context.getImageData(0, 0, image.width, image.height).data;
        let ink = 0;
        for (let i = 0; i < pixels.length; i += 4) { if (pixels[i] + pixels[i + 1] + pixels[i + 2] < 720) ink++; }
        return ink / (pixels.length / 4); }""", base64.b64encode(png).decode())


def test_the_top_of_the_report_reads_as_a_report(rendered, stored_runs, browser, tmp_path):  # noqa: F811 - stored_runs: the fixture imported above
    """What a reader sees first: what was measured, then the verdict sentences; code hidden until asked for."""
    import re
    import struct

    import benchlab

    suite = benchlab.load(stored_runs)
    sentences = [*suite.verdicts("rps")["verdict"], *suite.verdicts("p99")["verdict"]]
    assert len(sentences) == 2
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(rendered.html.as_uri(), wait_until="load")
    page.wait_for_selector(".benchlab-chart[data-rendered=yes]", timeout=60_000)

    shot = tmp_path / "report-top.png"
    page.screenshot(path=str(shot))                              # the first screen, as a reader opens it
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1280, 1000)
    assert len(png) > 30_000 and 0.02 < _ink(page, png) < 0.6    # text on a white page: not blank, not a block

    text = page.inner_text("body")
    for sentence in sentences:
        assert sentence in text
    assert "What was measured" in text and "Spring Boot" in text and "warm-up" in text
    # numbers formatted for people: "9.0k [8.8k, 9.2k]" requests/s, "12.3 [11.9, 12.8] ms" latencies
    assert re.search(r"\t[\d.,]+k? \[[\d.,]+k?, [\d.,]+k?\]\t", text)
    assert re.search(r"\t[\d.,]+ \[[\d.,]+, [\d.,]+\] ms\t", text)
    code = "benchlab.compare(**options)"
    assert code not in text
    hidden = ".jp-CodeCell .jp-Cell-inputWrapper"
    assert page.eval_on_selector_all(hidden, "cells => cells.filter(c => c.offsetParent !== null).length") == 0

    def top(locator) -> float:
        return locator.first.bounding_box()["y"]

    header = top(page.locator("table.benchlab-header"))
    verdict = top(page.get_by_text(sentences[0], exact=False))
    chart = top(page.locator(".benchlab-chart"))
    tables = top(page.locator("th", has_text="mean [95% CI]"))
    assert header < verdict < chart < tables                     # measured, verdicts, charts, detailed tables
    assert verdict < 1000                                        # the first verdict is on the first screen

    # every table fits the page (no column off its right edge), and its text reads left to right
    widths = page.eval_on_selector_all(".jp-OutputArea-output table", """tables => tables.map(t => [
        Math.round(t.getBoundingClientRect().right), t.rows.length ? getComputedStyle(t.rows[t.rows.length - 1]
        .cells[t.rows[t.rows.length - 1].cells.length - 1]).textAlign : "left"])""")
    assert len(widths) >= 4 and all(right <= 1280 for right, _ in widths), widths
    assert {align for _, align in widths} <= {"left", "start"}, widths

    page.click("label.benchlab-code-toggle")                     # the reader asks for the code
    assert code in page.inner_text("body")
    assert page.eval_on_selector_all(hidden, "cells => cells.filter(c => c.offsetParent !== null).length") > 3
    page.close()


def test_static_charts_fit_in_their_image(rendered, browser):
    """JupyterLab shows a chart's static SVG; drawn in this browser's font, no text may pass its right edge
    (the explore panel's subtitle was cut at "... server cores 0, lo" and a legend at "spring-tomca")."""
    import nbformat

    nb = nbformat.read(str(rendered.ipynb), as_version=4)
    svgs = [o["data"]["image/svg+xml"] for cell in nb.cells for o in cell.get("outputs", [])
            if "image/svg+xml" in o.get("data", {})]
    assert len(svgs) == 5, ("throughput, latency, the merged spectrum, each window and the resources (a fixed "
                            "warm-up draws no curve)")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    for svg in svgs:
        page.set_content(f"<html><body style='margin:0'>{svg}</body></html>")
        overflow = page.evaluate("""() => { const svg = document.querySelector("svg");
            const width = svg.width.baseVal.value;
            return [...svg.querySelectorAll("text")].filter(t => t.getBoundingClientRect().right > width)
                .map(t => t.textContent); }""")
        assert overflow == []
        assert page.evaluate("document.querySelectorAll('svg text').length") > 10
    page.close()


# --- one story on the page (issue 47): a left-out and a retaken window, told alike everywhere ------------------

#: JavaScript: every table of text on the page as {headers, rows}, the cells of each row its data cells only (a
#: MultiIndex's row headers span rows, so the data cells line up with the last headers).
TABLES = """() => [...document.querySelectorAll('.jp-OutputArea-output table')].map(t => ({
    headers: [...(t.tHead ? t.tHead.rows[0].cells : [])].map(c => c.innerText.trim()),
    rows: [...t.tBodies].flatMap(b => [...b.rows]).map(r => ({
        heads: [...r.querySelectorAll('th')].map(c => c.innerText.trim()),
        cells: [...r.querySelectorAll('td')].map(c => c.innerText.trim())}))}))"""


def column(table: dict, name: str) -> list[str]:
    """A column of a table read by :data:`TABLES`, by its header."""
    at = table["headers"].index(name) - len(table["headers"])  # from the right: data cells end the row
    return [row["cells"][at] for row in table["rows"]]


@pytest.fixture(scope="module")
def story(stored_runs, tmp_path_factory) -> tuple[Path, report.Report]:  # noqa: F811 - the fixture imported above
    """The stored runs with one window left out (its JIT still compiling, as a 2 s window of a cold JVM is) and one
    retaken beside another server's window (disturbed, measured again, as a busy loop on its cores does), then
    the report of them."""
    import dataclasses

    import benchlab
    from benchlab.store.results import save

    folder = tmp_path_factory.mktemp("story") / "results"
    shutil.copytree(stored_runs, folder)
    records = [r for r in benchlab.load(folder).records if r.status == "ok"]
    servers = list(dict.fromkeys(r.params["server"] for r in records))
    cold = next(r for r in records if r.params["server"] == servers[0])
    save(dataclasses.replace(cold, metrics={**cold.metrics, "jit_share": 0.3, "jit_cpu_share": 0.3}),
         Path(cold.directory))
    kept = next(r for r in records if r.params["server"] == servers[-1])
    aside = Path(kept.directory).with_name(Path(kept.directory).name + "-retaken1")
    shutil.copytree(kept.directory, aside)
    save(dataclasses.replace(kept, id=kept.id + "-retaken1", status="retaken", directory=str(aside),
                             metrics={**kept.metrics, "rps": kept.metrics["rps"] * 0.6},
                             metadata={**kept.metadata, "retaken": {"attempt": 1, "for": kept.id}}), aside)
    out = tmp_path_factory.mktemp("story-report") / "compare.ipynb"
    return folder, report.execute(ROOT / "notebooks" / "compare.ipynb", {"measure": False, "results_dir": str(folder)},
                                  output=out)


def test_the_report_tells_one_story_of_its_windows(story, browser, tmp_path):
    """The left-out and the retaken window drawn visibly (an outline in the rendered SVG), the same count of
    windows used in the header, the summary, the every-run table and the throughput chart, every chart within its
    output area in a 960 px window, and printed lines that wrap at spaces."""
    import re

    import benchlab

    folder, rendered_story = story
    tally = benchlab.load(folder).tally()
    assert tally.used >= 1 and tally.left >= 1 and tally.retaken == 1, f"the premise: {tally}"
    page = browser.new_page(viewport={"width": 960, "height": 1000})
    page.goto(rendered_story.html.as_uri(), wait_until="load")
    page.wait_for_function("document.querySelectorAll('.benchlab-chart[data-rendered=yes]').length == 5",
                           timeout=60_000)
    throughput = page.query_selector_all(".benchlab-chart")[0]
    marks = throughput.eval_on_selector_all("g.mark-symbol.role-mark path", """paths => paths.map(p => ({
        label: p.getAttribute('aria-label') || '', stroke: p.getAttribute('stroke'),
        width: parseFloat(p.getAttribute('stroke-width') || '0'),
        hollow: [null, 'none', 'transparent'].includes(p.getAttribute('fill'))
            || p.getAttribute('fill-opacity') === '0'}))""")
    for kind, count in (("left out", tally.left), ("retaken", tally.retaken)):
        hollow = [m for m in marks if f"kind: {kind}" in m["label"]]
        assert len(hollow) == count and all(m["stroke"] not in (None, "none", "transparent") and m["width"] > 0
                                        and m["hollow"] for m in hollow), (kind, marks)

    text = page.inner_text("body")
    said = re.findall(r"(\d+) windows? used", text)
    assert said and set(said) == {str(tally.used)}, said  # the suite's line and the header: one count
    tables = page.evaluate(TABLES)
    summary = next(t for t in tables if "windows used" in t["headers"] and "mean [95% CI]" in t["headers"])
    rps = [int(n) for n, metric in zip(column(summary, "windows used"), [r["heads"][-1] for r in summary["rows"]])
           if metric.startswith("rps")]
    every = next(t for t in tables if "left out of the mean" in t["headers"])  # requests/s first
    bars = throughput.eval_on_selector_all("g.mark-rect.role-mark path", "ps => ps.map(p => p.getAttribute("
                                           "'aria-label') || '')")
    charted = [int(m) for label in bars for m in re.findall(r"windows used: (\d+)", label)]
    assert sum(rps) == sum(int(n) for n in column(every, "windows used")) == sum(charted) == tally.used, \
        (rps, column(every, "windows used"), charted)

    wide = page.eval_on_selector_all(".benchlab-chart", """charts => charts.map(c => {
        const area = c.closest('.jp-OutputArea-output') || c.parentElement;
        return [Math.round(c.querySelector('svg').getBoundingClientRect().right),
                Math.round(area.getBoundingClientRect().right)]; }).filter(([chart, area]) => chart > area)""")
    assert wide == [], f"charts past the right edge of their output area: {wide}"
    breaks = page.eval_on_selector_all(".jp-OutputArea-output pre", "ps => ps.map(p => getComputedStyle(p).wordBreak)")
    assert breaks and set(breaks) == {"normal"}, breaks
    page.screenshot(path=str(tmp_path / "report-story.png"), full_page=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(tmp_path / "report-story.png", SHOTS / "compare-report-story.png")
    page.close()
