"""The explore panel driven as JupyterLab drives it: displayed in a real IPython shell, pressed twice with other
settings, then cleared; real servers and real wrk, 2 s and 3 s measured after 1 s of warm-up.

What the panel shows is read from the display messages IPython publishes (the display and its updates by
display id), which is what JupyterLab draws.
"""

from __future__ import annotations

import html
import re

import pytest

from benchlab import report
from benchlab.present import notebook
from benchlab.widgets import Panel

pytestmark = pytest.mark.integration


def _shown(outputs, handle) -> list[dict]:
    """Every bundle the panel published under ``handle``'s display id: the first display, then each update."""
    return [o.data for o in outputs if (o.transient or {}).get("display_id") == handle.display_id]


def test_panel_keeps_each_press_apart_refreshes_its_table_and_clears(tmp_path, jars, no_jvm_left):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    notebook.enable_charts()                                # as explore.ipynb's set-up does
    panel = Panel(servers=["spring-tomcat"], connections=16, duration="2s", warmup="1s", results_dir=tmp_path)
    with capture_output() as shown:
        display(panel)
        first = panel.run()
        panel.duration.value = "3s"                        # a second press with other settings
        second = panel.run()
        after_presses = len(shown.outputs)
        panel.reset()

    assert [r.status for r in first + second] == ["ok", "ok"], [r.error for r in first + second]
    throughput, table = _shown(shown.outputs, panel._handles["throughput"]), _shown(shown.outputs,
                                                                                   panel._handles["runs"])
    # the table: nothing at first (the status line says "ready"), one update per finished run, nothing after Clear
    assert len(table) == 4
    assert table[0] == {"text/plain": ""} and table[-1] == {"text/plain": ""}
    one, two = table[1]["text/html"], table[2]["text/html"]
    # a window disturbed by the machine is listed too, as retaken beside the one measured again: count the kept ones
    kept = [[w for w in re.findall(r"<th>(spring-tomcat-[^<]*)</th>", html) if "-retaken" not in w]
            for html in (one, two)]
    assert [len(ids) for ids in kept] == [1, 2], kept
    assert "duration" in two and "3.0" in two                 # the setting that differs is a column
    assert "<th>press</th>" in two and "press" not in one     # and each run's press, once there are two
    # the last chart of the presses: each press its own panel and mean, nobody pooled into "2 repeats"
    spec = next(b for b in reversed(throughput) if report.VEGALITE_MIMETYPE in b)[report.VEGALITE_MIMETYPE]
    # (a 1 s warm-up leaves the JIT compiling, so a window may be drawn as left out rather than as a bar: each
    # press's marks are counted whatever their kind)
    marks = list(spec["datasets"].values())[0]
    points = ["16 connections, 2 s measured, press 1", "16 connections, 3 s measured, press 2"]
    assert sorted({m["load_point"] for m in marks}) == points
    assert [sum(m["load_point"] == p and m["kind"] in ("run", "left out") for m in marks) for p in points] == [1, 1]
    assert all(c["n"] == 1 and c["ci_high"] is None for c in marks if c["kind"] == "cell")
    assert "1 repeat," in " ".join(spec["title"]["subtitle"])
    assert len(shown.outputs) > after_presses and panel.records == [] and panel.runs.empty
    assert throughput[-1] == {"text/plain": ""} and panel.state == "ready"


def test_two_presses_of_the_same_settings_are_told_apart(tmp_path, jars, no_jvm_left):
    """The same settings pressed twice: two comparisons, not one cell of "2 repeats" with a vast interval."""
    panel = Panel(servers=["spring-jetty"], connections=8, duration="2s", warmup="1s", results_dir=tmp_path)
    states = []
    panel.status.observe(lambda change: states.append(change["new"].split("</b>")[0].rsplit(">", 1)[-1]), "value")
    first, second = panel.run(), panel.run()
    assert [r.status for r in first + second] == ["ok", "ok"]
    assert states[0] == "running" and states[-1] == "done" and set(states) == {"running", "done"}
    running = [change for change in states if change == "running"]
    assert len(running) >= 4                                   # start, verify, warm-up, window: one line each
    assert first[0].id == second[0].id, "the same settings name a run alike in each press's folder"
    table = panel.table()
    assert table["press"].tolist() == [1, 2]
    marks = list(panel.throughput().to_dict()["datasets"].values())[0]  # bars, dots or marks left out alike
    assert sorted({m["load_point"] for m in marks}) == ["8 connections, press 1", "8 connections, press 2"]


def test_a_press_whose_every_window_is_left_out_draws_each_and_says_why(tmp_path, jars, no_jvm_left):
    """A cold JVM measured at once (no warm-up), twice: its 2 s windows compile for more than 5% of the time, so
    the one rule leaves every window out. The chart still draws each, hollow and outlined, and says why it has no
    bar; the panel's last line says none of the windows can be used, and why."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    from benchlab.analysis.validity import Tally

    InteractiveShell.instance()
    notebook.enable_charts()
    panel = Panel(servers=["spring-jetty"], connections=8, duration="2s", warmup="0s", repeats=2,
                  results_dir=tmp_path)
    with capture_output() as shown:
        display(panel)
        done = panel.run()

    assert [r.status for r in done] == ["ok", "ok"], [r.error for r in done]
    tally = Tally.of(panel.runs)
    assert tally.used == 0 and tally.left == 2, f"the premise, a cold JVM's windows left out as compiling: {tally}"
    said = html.unescape(re.sub(r"<[^>]+>", "", panel.status.value))
    assert said.startswith(f"done: none of the {tally.windows} windows can be used: 2 left out (measured while "
                           "their JIT was still compiling)"), said
    bundle = next(b for b in reversed(_shown(shown.outputs, panel._handles["throughput"]))
                  if report.VEGALITE_MIMETYPE in b)
    spec = bundle[report.VEGALITE_MIMETYPE]
    marks = list(spec["datasets"].values())[0]
    assert not [m for m in marks if m["kind"] == "cell"], "no window used, so no mean and no bar"
    assert sum(m["kind"] == "left out" for m in marks) == 2, marks
    subtitle = " ".join(spec["title"]["subtitle"])
    assert f"no bars: {tally}" in subtitle, subtitle
    # what a viewer without a kernel sees: the static SVG beside the spec, each left-out mark hollow and outlined
    paths = re.findall(r"<path[^>]*aria-label=\"[^\"]*kind: left out[^\"]*\"[^>]*>", bundle["image/svg+xml"])
    assert len(paths) == 2, bundle["image/svg+xml"][:2000]
    for path in paths:
        fill = re.search(r'fill="([^"]*)"', path)
        stroke, width = re.search(r'stroke="([^"]*)"', path), re.search(r'stroke-width="([^"]*)"', path)
        assert fill is None or fill.group(1) in ("none", "transparent"), path
        assert stroke and stroke.group(1) not in ("none", "transparent") and width and float(width.group(1)) > 0, path
