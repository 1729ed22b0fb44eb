"""One story on the page (issue 47), as a person meets it: a comparison run from JupyterLab's menu in a real Chromium
that has a window left out and a window retaken, then the HTML report of the same runs.

story.ipynb is compare.ipynb with spring-jetty and spring-undertow, one fork each of three 2 s windows, C1 only and
no warm-up at all: the first window of a fork usually measures a JVM whose JIT is still compiling (``jit_active``,
left out), the later ones a warm one. Once the progress bar says the first fork's third window has begun, a busy
loop is started on the server's core *apart from benchlab's process tree* (its own session, ``start_new_session``,
as a user's IDE or a neighbour's job would be; ``taskset`` as :mod:`tests.test_machine` places one); benchlab finds
the window disturbed and retakes it, and the loop is stopped, by its PID, once the bar says "(retake 1)". Then, in
the notebook and in the report alike:

- the left-out and the retaken marks of the throughput chart are visible: hollow, with an outline (a stroke of
  some width in the rendered SVG), one a window of each kind;
- the suite's line, the header, the summary, the every-run table and the throughput chart's bars count the same
  windows used, the count of the stored runs (:meth:`benchlab.Suite.tally`);
- no chart is wider than its output area;
- the bar's last words say done, with what was stored, used, left out (and why) and retaken.

The fixtures (JupyterLab at tiny sizes, Chromium, the screenshots' folder) are test_jupyterlab's.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests import test_jupyterlab
from tests.test_jupyterlab import ROOT, Notebook, _seen, _tiny
from tests.test_report_browser import TABLES, column

# test_jupyterlab's fixtures, for this module: JupyterLab at tiny sizes, Chromium, the screenshots' folder
lab, browser, shots = test_jupyterlab.lab, test_jupyterlab.browser, test_jupyterlab.shots

pytestmark = pytest.mark.integration

#: story.ipynb's parameters, over compare.ipynb's tiny ones: a cold C1 JVM, three windows a fork.
STORY = {"repeats": 1, "windows": 3, "warmup": "0s", "jvm_opts": ["-XX:TieredStopAtLevel=1"]}
#: The window the busy loop disturbs: the first fork's last (a JIT long done, so it would have been used).
DISTURBED = r"\[1/2\] .* - window 3 of 3 - ETA"
#: JavaScript: the text of the output that holds the progress bar ('' until there is one).
BAR = """() => { const bar = document.querySelector('.jp-OutputArea-output .widget-hprogress');
    const out = bar && bar.closest('.jp-OutputArea-output');
    return out ? out.textContent.replace(/\\s+/g, ' ').trim() : ''; }"""
#: JavaScript: every data symbol of a chart, with its label and how it is painted.
SYMBOLS = """paths => paths.map(p => ({label: p.getAttribute('aria-label') || '', stroke: p.getAttribute('stroke'),
    width: parseFloat(p.getAttribute('stroke-width') || '0'),
    hollow: [null, 'none', 'transparent'].includes(p.getAttribute('fill'))
        || p.getAttribute('fill-opacity') === '0'}))"""


# --- a busy loop, apart from benchlab ---------------------------------------------------------------------------

def _busy(core: int) -> subprocess.Popen:
    """A busy loop on ``core`` in a session of its own (not benchlab's tree, not this test's process group); a
    ``timeout`` of 5 minutes in case this test dies before it stops it."""
    return subprocess.Popen(["taskset", "-c", str(core), "timeout", "300", "sh", "-c", "while :; do :; done"],
                            start_new_session=True, stdin=subprocess.DEVNULL)


def _stop(loop: subprocess.Popen) -> None:
    """The loop and its ``sh``, by the PID of its session's leader (its process group is its own)."""
    try:
        os.killpg(loop.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    loop.wait(timeout=10)


def _disturb(page, core: int, timeout: float = 420) -> list[str]:
    """Watch the progress bar; while it says :data:`DISTURBED`'s window, keep a busy loop on ``core``, stopped once
    the bar says the window is retaken (or it moved on). Returns every text the bar said, in order."""
    said: list[str] = []
    loop = None
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            text = page.evaluate(BAR)
            if not text:  # the run cell out of view: bring it in, so its output is drawn
                page.evaluate("() => document.querySelectorAll('.jp-Notebook .jp-Cell')[4]?.scrollIntoView()")
            elif not said or said[-1] != text:
                said.append(text)
            if loop is None and re.search(DISTURBED, text):
                loop = _busy(core)
            if loop is not None and (re.search(r"\(retake 1\)|^\[2/2\]| - stop - ", text) or "done" in text):
                break
            if said and "done" in said[-1]:
                break
            page.wait_for_timeout(200)
    finally:
        if loop is not None:
            _stop(loop)
    return said


# --- what the page must say, in the notebook and in the report -------------------------------------------------

def _marks(chart, tally) -> list[str]:
    """The throughput chart's hollow marks: one a window left out or retaken, each with a visible outline."""
    found = []
    marks = chart.locator("g.mark-symbol.role-mark path").evaluate_all(SYMBOLS)
    for kind, count in (("left out", tally.left), ("retaken", tally.retaken)):
        hollow = [m for m in marks if f"kind: {kind}" in m["label"]]
        visible = [m["hollow"] and m["stroke"] not in (None, "none", "transparent") and m["width"] > 0
                   for m in hollow]
        if len(hollow) != count or not all(visible):
            found.append(f"{count} windows {kind}, {len(hollow)} marks of them, outlined: {visible}: {marks}")
    return found


def _counts(page, text: str, chart, tally) -> list[str]:
    """The windows used, as the suite's line and the header say them, and as the summary, the every-run table and
    the throughput chart's bars count them: each the stored runs' count."""
    said = sorted(set(re.findall(r"(\d+) windows? used", text)))
    tables = page.evaluate(TABLES)
    summary = next((t for t in tables if "windows used" in t["headers"] and "mean [95% CI]" in t["headers"]), None)
    every = next((t for t in tables if "left out of the mean" in t["headers"]), None)  # requests/s first
    if summary is None or every is None:
        headers = [t["headers"] for t in tables]
        return [f"no 'windows used' in the summary or no 'left out of the mean' table: {headers}"]
    rps = sum(int(n) for n, row in zip(column(summary, "windows used"), summary["rows"])
              if row["heads"][-1].startswith("rps"))
    per_fork = sum(int(n) for n in column(every, "windows used"))
    bars = chart.locator("g.mark-rect.role-mark path").evaluate_all("ps => ps.map(p => p.getAttribute('aria-label'))")
    charted = sum(int(n) for label in bars for n in re.findall(r"windows used: (\d+)", label or ""))
    if said != [str(tally.used)] or {rps, per_fork, charted} != {tally.used}:
        return [f"{tally.used} windows used; said {said}, summary {rps}, every run {per_fork}, chart {charted}"]
    return []


def _too_wide(page, charts: str) -> list[str]:
    """Each chart whose drawing passes its output area's right edge, with both edges."""
    wide = page.eval_on_selector_all(charts, """views => views.map(v => {
        const area = v.closest('.jp-OutputArea-output') || v.parentElement;
        return [Math.round(v.querySelector('svg').getBoundingClientRect().right),
                Math.round(area.getBoundingClientRect().right)]; }).filter(([chart, area]) => chart > area)""")
    return [f"charts past the right edge of their output area (chart, area): {wide}"] if wide else []


def _one_story(page, text: str, charts: str, tally) -> list[str]:
    chart = page.locator(charts).first
    return _marks(chart, tally) + _counts(page, text, chart, tally) + _too_wide(page, charts)


# --- the test ---------------------------------------------------------------------------------------------------

def _story_notebook(folder: Path) -> Path:
    notebooks = folder / "notebooks"
    shutil.copy(notebooks / "compare.ipynb", notebooks / "story.ipynb")
    _tiny(notebooks / "story.ipynb", {**STORY, "results_dir": str(folder / "story-results")})
    return folder / "story-results"


def _report(results: Path, context, folder: Path, tally) -> list[str]:
    """The report of the same runs (``measure=False``), in a 960 px window: the same story."""
    from benchlab import report

    (results.parent / "story-report").mkdir(exist_ok=True)
    rendered = report.execute(ROOT / "notebooks" / "compare.ipynb", {"measure": False, "results_dir": str(results)},
                              output=results.parent / "story-report" / "compare.ipynb")
    page = context.new_page()
    page.set_viewport_size({"width": 960, "height": 1000})
    page.goto(rendered.html.as_uri(), wait_until="load")
    page.wait_for_function("document.querySelectorAll('.benchlab-chart[data-rendered=yes]').length == 5",
                           timeout=60_000)
    found = _one_story(page, page.inner_text("body"), ".benchlab-chart", tally)
    page.screenshot(path=str(folder / "story-report.png"), full_page=True)
    page.close()
    return [f"report: {finding}" for finding in found]


def test_a_window_left_out_and_one_retaken_tell_one_story_in_the_notebook_and_the_report(lab, browser, shots,
                                                                                          no_jvm_left):
    import benchlab
    from benchlab.cores import default_split

    results = _story_notebook(lab[2])
    began = time.monotonic()
    notebook = Notebook(browser, lab, "story.ipynb")
    page = notebook.page
    page.click("#jp-MainMenu .lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
    said = _disturb(page, default_split()[0][0])
    notebook.wait_idle(600)
    stored = benchlab.load(results)
    tally = stored.tally()
    print(f"\nthe story, {time.monotonic() - began:.0f} s: {tally}; the bar said {said}")
    assert tally.used >= 1 and tally.left >= 1 and tally.retaken >= 1, f"the premise: {tally}; the bar: {said}"
    found = _seen(notebook)
    if not any("window 3 of 3 (retake 1)" in text for text in said):
        found.append(f"the bar never said 'window 3 of 3 (retake 1)': {said}")
    end = page.evaluate(BAR)
    if f"done: {len(stored.records)} windows stored; {tally}" not in end:
        found.append(f"the bar's last words: {end!r}, not 'done: {len(stored.records)} windows stored; {tally}'")
    # the window as tall as the notebook, 1400 px wide still: every cell in view is drawn, so its text can be read
    tall = page.eval_on_selector(".jp-NotebookPanel .jp-WindowedPanel-outer", "e => e.scrollHeight")
    page.set_viewport_size({"width": 1400, "height": min(20_000, tall + 200)})
    page.wait_for_timeout(500)
    found += _one_story(page, page.inner_text(".jp-Notebook"), ".jp-RenderedVegaCommon5", tally)
    shot = notebook.screenshot(shots, "story")
    page.close()
    found += _report(results, browser, shots, tally)
    print(f"screenshots: {shot}, {shots / 'story-report.png'} ({time.monotonic() - began:.0f} s in all)")
    assert found == [], "\n".join(found)
