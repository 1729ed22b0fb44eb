"""One story on the page (issue 47): every count, table and chart says the same of the same windows.

A comparison with one window left out (its JIT still compiling) and one retaken (disturbed, measured again):
the suite's line, the header, the panel's last line, the terminal, the progress bar's end, the summary, the
every-run table, the throughput chart and the flags all count and mark them alike, from
:func:`benchlab.analysis.validity.standing`.
"""

from __future__ import annotations

import dataclasses

from benchlab.analysis.suite import Suite
from benchlab.analysis.validity import Tally
from tests.test_charts import left_and_retaken

SAID = "3 windows used, 1 left out (measured while their JIT was still compiling), 1 retaken"


def suite() -> Suite:
    runs = left_and_retaken()
    runs[-1] = dataclasses.replace(runs[-1], metrics={**runs[-1].metrics, "drift": 0.3, "drift_limit": 0.08})
    return Suite(runs)


def test_every_count_says_the_same_windows_in_the_same_words(capsys):
    from benchlab.api import _stored
    from benchlab.present import header, terminal
    from benchlab.widgets import Panel

    both = suite()
    assert both.tally() == Tally(used=3, left=1, retaken=1, failed=0, why=(("jit_active", 1),))
    assert str(both) == f"spring-tomcat, spring-jetty: {SAID}"
    assert dict(header.measured(both).rows)["repeats"] == f"2 per server and setup; {SAID}"
    assert Panel.said(both.records, "x") == ("done", f"{SAID}; stored under x")
    assert _stored(list(both.records)) == f"5 windows stored; {SAID}", "the progress bar's last line"
    terminal.print_suite(both)
    printed = capsys.readouterr().out
    assert f"<Suite {SAID}; servers" in printed


def test_the_summary_the_every_run_table_and_the_chart_count_the_windows_used():
    from benchlab.present import charts, formatting

    both = suite()
    used = both.tally().used
    summary = both.summary(["rps"])
    assert summary["windows"].sum() == used and summary.set_index("server")["left_out"]["spring-jetty"] == 1
    table = both.table("rps")
    assert table["windows"].sum() == used
    assert table.loc["spring-jetty", "left out"] == "fork 2 (jit_active)"
    assert table.loc["spring-tomcat", "left out"] == "1 retaken"
    assert table.loc["spring-jetty", "mean"] == summary.set_index("server").loc["spring-jetty", "mean"]
    assert "left out of the mean" in formatting.per_fork(table).columns
    cells = [v for v in list(charts.throughput(both.runs).to_dict()["datasets"].values())[0] if v["kind"] == "cell"]
    assert sum(v["windows"] for v in cells) == used
    shown = formatting.runs(both.runs)
    assert sorted(shown["window"]) == ["left out (jit_active)", "retaken", "used", "used", "used"]


def test_each_flag_names_its_window_and_a_retaken_windows_flags_stay_on_its_row(capsys):
    from benchlab.present import formatting, terminal

    both = suite()
    flags = both.flags()
    runs = flags[flags["level"] == "run"]
    assert runs["standing"].notna().all()
    retaken = runs[runs["standing"] == "retaken"]
    assert set(retaken["flag"]) == {"retaken", "drifting"} and retaken["id"].str.endswith("-retaken1").all()
    cell = flags[(flags["level"] == "cell") & (flags["server"] == "spring-tomcat")]
    assert not cell["explanation"].str.contains("drift").any() and "drifting" not in set(cell["flag"]), \
        "the kept windows did not drift"
    assert "drifting" not in both.summary(["rps"]).set_index("server").loc["spring-tomcat", "flags"]
    assert "window" in formatting.flags(flags).columns
    terminal.print_suite(both)
    assert f"[drifting] {retaken['id'].iloc[0]} (retaken):" in capsys.readouterr().out


def test_the_tables_for_reading_count_the_windows_used_where_some_were_left_out():
    from benchlab.present import formatting

    both = suite()
    summary = formatting.summary(both.summary(["rps"])).reset_index().set_index("server")
    assert summary["windows used"].sum() == both.tally().used and summary.loc["spring-jetty", "left out"] == 1
    every = formatting.per_fork(both.table("rps"))
    assert every["windows used"].sum() == both.tally().used
    assert "windows used" not in formatting.summary(Suite(both.records[:2]).summary(["rps"])).columns, \
        "said only where a window was left out"
