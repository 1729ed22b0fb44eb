"""What a notebook shows while it runs, without a kernel: the live view, the progress bar's words, explore's run rule.

The live view is driven through a display handle that records what it was given, as IPython's is driven by the
frontend; the real JupyterLab is tests/test_jupyterlab.py's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlab.present import live, notebook
from benchlab.present.numbers import Note, cores, ratio
from benchlab.running.progress import Progress, said
from tests import vegalite

ROOT = Path(__file__).resolve().parent.parent


class Handle:
    """A display handle as IPython's: what was shown, in order."""

    def __init__(self):
        self.shown: list[dict] = []

    def update(self, bundle, *, raw=False, metadata=None):
        assert raw
        self.shown.append(bundle)


def slice_row(t: float, rps: float, compile_s: float | None = None) -> dict:
    return {"run": "spring-jetty hello c8 r1", "t": t, "phase": "load", "connections": 8, "rps": rps,
            "p99": 0.01, "compile_s": compile_s}


def test_the_live_view_draws_each_row_as_a_vega_lite_5_chart_and_empties_when_the_run_ends():
    handle = Handle()
    view = live.Live(handle=handle, enabled=True)
    view.add(slice_row(5.0, 900.0, 3.1))
    view.add(slice_row(10.0, 1400.0, 6.0))
    first, second = handle.shown
    spec = second[notebook.VEGALITE_MIMETYPE]
    assert spec["$schema"] == notebook.VEGALITE_SCHEMA and vegalite.problems(spec) == []
    assert "image/svg+xml" not in second, "no static picture of a chart that lives only while its run does"
    rows = list(spec["datasets"].values())[0]
    assert [r["rps"] for r in rows] == [900.0, 1400.0] and len(spec["vconcat"]) == 2  # rps and the JIT's compile time
    assert all(layer["encoding"]["tooltip"] for layer in spec["vconcat"])
    view.clear()
    assert handle.shown[-1] == {"text/plain": ""} and view.rows == []
    view.clear()
    assert len(handle.shown) == 3, "an empty view is not emptied again"


def test_the_live_view_costs_nothing_where_nobody_watches(monkeypatch):
    assert live.watched() is False                                  # no kernel here
    handle = Handle()
    view = live.Live(handle=handle)
    view.add(slice_row(5.0, 900.0))
    assert view.rows == [] and handle.shown == []
    monkeypatch.setenv(live.BATCH, "1")                             # a batch: nobody watches even in a kernel
    assert live.watched() is False


def test_a_server_without_jvm_counters_draws_throughput_only():
    handle = Handle()
    live.Live(handle=handle, enabled=True).add(slice_row(5.0, 900.0))
    spec = handle.shown[0][notebook.VEGALITE_MIMETYPE]
    assert len(spec["vconcat"]) == 1 and vegalite.problems(spec) == []


def test_the_bar_says_each_phase_as_a_person_reads_it_and_tells_its_listener():
    assert [said(p) for p in ("warmup", "measure", "measure 2/3", "spring-jetty measure 1/2", "stop")] == [
        "warm-up", "window", "window 2 of 3", "spring-jetty window 1 of 2", "stop"]
    heard = []
    bar = Progress([10.0, 10.0], enabled=False, listener=lambda p: heard.append(p.line().rsplit(" - ETA", 1)[0]))
    bar.start("spring-jetty r1")
    bar.phase("warmup")
    bar.waiting("benchlab: waiting for cores 0,1 held by PID 42")
    bar.finish()
    bar.complete()
    assert heard[:2] == ["[1/2] spring-jetty r1 - start", "[1/2] spring-jetty r1 - warm-up"]
    assert heard[2].startswith("[1/2] spring-jetty r1 - waiting for cores 0,1 held by PID 42, since ")
    assert bar.planned == [10.0] and bar.eta() == 0.0, "a comparison that stopped early has no run left"


def test_the_bar_says_one_word_a_state_a_wait_stops_its_clock_and_its_end_says_done(monkeypatch):
    from benchlab.running import progress

    assert said("measure 2/3 (retake 1)") == "window 2 of 3 (retake 1)" and said("measure (retake 2)") == \
        "window (retake 2)", "a retake is a window too, as every other state says"
    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    bar = Progress([10.0, 10.0], enabled=False, listener=lambda p: None)  # a listener: the wait is in its line
    bar.start("spring-jetty r1")
    bar.phase("warmup")
    now[0] += 4.0
    bar.waiting("benchlab: waiting for cores 0,1 held by PID 42")
    waiting = bar.eta()
    assert bar.line().endswith(f"ETA {progress.clock(waiting)} once they are free"), bar.line()
    now[0] += 60.0
    assert bar.eta() == waiting, "the wait is not the run's: its ETA neither runs down nor freezes unsaid"
    bar.phase("measure")
    assert bar.eta() == waiting and "waiting" not in bar.line(), "the run's clock goes on where it stopped"
    bar.waiting("benchlab: r1 was disturbed (by sh): measuring it again (retake 1 of at most 2)")
    assert "since" not in bar.line() and bar.eta() == waiting, "a line that only tells is no wait"
    now[0] += 3.0
    assert bar.eta() == waiting - 3.0
    bar.finish()
    assert bar.overheads == [0.0], "a wait is no overhead a run costs"
    bar.finish()
    bar.complete(stored="2 windows stored; 1 window used, 1 retaken")
    assert bar.line() == "[2/2] done: 2 windows stored; 1 window used, 1 retaken", "not the last run's phase"


def test_a_wait_for_the_cores_without_a_bar_or_a_listener_is_said_in_the_log(caplog):
    Progress([1.0], enabled=False).waiting("benchlab: waiting for cores 0 held by PID 42")
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("benchlab.running.progress", "WARNING", "benchlab: waiting for cores 0 held by PID 42")]


def _parameters(name: str) -> str:
    cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
    return "".join(next(c for c in cells if "parameters" in c["metadata"].get("tags", []))["source"])


def test_only_explore_waits_for_a_press_and_needs_no_stored_runs_to_wait():
    assert notebook.waits(_parameters("explore.ipynb")) is True
    assert notebook.waits(_parameters("compare.ipynb")) is False
    notebook.check_given(ROOT / "notebooks" / "explore.ipynb", {"measure": False})   # the default: nothing needed
    notebook.check_given(ROOT / "notebooks" / "explore.ipynb", {})
    with pytest.raises(notebook.ResultsError, match="measure=False re-renders stored results"):
        notebook.check_given(ROOT / "notebooks" / "compare.ipynb", {"measure": False})


def test_numbers_say_cores_round_ratios_alike_and_notes_read_as_text():
    assert cores(1.794) == "1.79 cores" and [ratio(v) for v in (0.96, 0.828, 3.5)] == ["0.96", "0.83", "3.50"]
    from IPython.core.formatters import PlainTextFormatter

    note = Note("no flags: no run or cell tripped a noise or validity check")
    assert PlainTextFormatter()(note) == str(note) and note._repr_markdown_().strip("*") == str(note)


def test_a_cell_of_one_run_does_not_say_its_runs_flag_again():
    import pandas as pd

    from benchlab.analysis.flagframe import _cell_flags

    one = [[("jit_active", "the JIT compiled")]]
    assert _cell_flags(pd.Series([900.0]).to_numpy(), pd.Series([0.01]).to_numpy(), pd.Series(["f1"]).to_numpy(),
                       one, 1) == []
    two = [[("jit_active", "the JIT compiled")], []]
    said_twice = _cell_flags(pd.Series([900.0, 910.0]).to_numpy(), pd.Series([0.01, 0.01]).to_numpy(),
                             pd.Series(["f1", "f2"]).to_numpy(), two, 2)
    assert said_twice == [("jit_active", "in some repeats: the JIT compiled")]


def test_a_fixed_warm_up_tells_the_live_view_one_slice_and_offers_the_same_one_load(monkeypatch, tmp_path):
    """The live view of a fixed warm-up: the whole warm-up as one slice when it ends; the load the server sees is
    still one run of the load tool for the whole warm-up (no slices, which would reconnect every 5 s)."""
    from benchlab.running import drivers, warmup
    from benchlab.running.load import Load

    ran = []
    monkeypatch.setattr(drivers, "tool", lambda name: name)
    monkeypatch.setattr(drivers, "execute", lambda tool, url, scenario, load, **kw: (
        ran.append((tool, load.duration, load.connections)) or ({"rps": 900.0, "p99": 0.01}, None)))
    rows = []
    load = Load(connections=8, duration=2.0, warmup=3.0)
    warmed = warmup.warm_up("http://127.0.0.1:1/", None, load, cpus=[1], workdir=tmp_path, on_slice=rows.append)
    assert ran == [("wrk", 3.0, 8)], "one run of the load tool, as long as the warm-up"
    assert [(r["phase"], r["rps"], r["connections"]) for r in rows] == [("fixed", 900.0, 8)]
    assert warmed["mode"] == "fixed" and warmed["slices"] == [], "what is stored is what it was"
