"""The one rule for what a verdict may use (benchlab.analysis.validity), as the summary, the verdicts and the claims
apply it: no window with a validity flag enters a statistic, and a side left with no clean fork is not judged."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from benchlab.analysis import stats, validity, verdicts
from benchlab.store.results import COLUMNS


def frame(rows: list[dict]) -> pd.DataFrame:
    base = {"status": "ok", "scenario": "hello", "load": "duration", "driver": "wrk", "connections": 64,
            "threads": 1, "load_cores": 1, "load_cpu_mean": 40.0, "suite": "s"}
    return pd.DataFrame([{**base, **row} for row in rows], columns=list(COLUMNS))


def side(server: str, rps: list[float], **columns) -> list[dict]:
    out = []
    for i, value in enumerate(rps):
        row = {"server": server, "rps": value, "repeat": i + 1, "id": f"{server}-r{i + 1}",
               "fork": f"{server}-r{i + 1}"}
        row.update({k: (v[i] if isinstance(v, list) else v) for k, v in columns.items()})
        out.append(row)
    return out


def test_a_generator_bound_side_is_not_judged_and_the_verdict_says_why():
    # nginx on one core against wrk on the other: every nginx run generator-bound (wrk 96% busy); go-nethttp clean.
    runs = frame(side("go-nethttp", [61e3, 60e3, 62e3]) + side("nginx", [30e3, 31e3, 30.5e3], load_cpu_mean=96.0))
    verdict = verdicts.verdicts(runs, baseline="nginx").iloc[0]
    assert not verdict["significant"] and not verdict["judged"] and math.isnan(verdict["change"])
    assert verdict["verdict"] == ("go-nethttp vs nginx: rps not judged: all 3 nginx runs left out (bound by their load "
                                  "generator)")
    summary = stats.summary(runs, ["rps"], baseline="nginx").set_index("server")
    assert not summary.loc["nginx", "judged"] and summary.loc["nginx", "left_out"] == 3
    assert summary.loc["nginx", "mean"] == pytest.approx(30.5e3), "its figures still show, marked not judged"
    assert math.isnan(summary.loc["go-nethttp", "ratio"]), "no ratio against a side that is not judged"


def test_without_the_rule_the_same_runs_were_called_significant():
    """The same figures, nothing flagged: the verdict the issue saw printed over generator-bound runs."""
    runs = frame(side("go-nethttp", [61e3, 60e3, 62e3]) + side("nginx", [30e3, 31e3, 30.5e3]))
    assert verdicts.verdicts(runs, baseline="nginx").iloc[0]["significant"]


@pytest.mark.parametrize("flags, why", [
    ({"load_cpu_mean": [40.0, 97.0, 40.0, 40.0]}, "bound by their load generator"),
    ({"other_server_s": [0.0, 6.0, 0.0, 0.0], "other_server_cpu": [0.0, 0.5, 0.0, 0.0], "elapsed_s": 10.0},
     "disturbed by other processes on their cores"),
    ({"dip": [0.0, -0.3, 0.0, 0.0], "dip_s": [0.0, 4.0, 0.0, 0.0]}, "disturbed by a dip in their own throughput"),
    ({"jit_share": [0.0, 0.3, 0.0, 0.0]}, "measured while their JIT was still compiling"),
    ({"status": ["ok", "retaken", "ok", "ok"]}, None),
])
def test_a_flagged_window_enters_no_statistic_and_is_said(flags, why):
    runs = frame(side("b", [100.0, 101.0, 99.0, 100.5]) + side("a", [110.0, 60.0, 111.0, 109.0], **flags))
    summary = stats.summary(runs, ["rps"], baseline="b").set_index("server")
    assert summary.loc["a", "n"] == 3 and summary.loc["a", "mean"] == pytest.approx(110.0)
    verdict = verdicts.verdicts(runs, baseline="b").iloc[0]
    assert verdict["judged"] and verdict["change"] == pytest.approx(110.0 / 100.125 - 1)
    if why is None:
        assert summary.loc["a", "left_out"] == 0, "a retaken window was never a candidate: its retake replaced it"
    else:
        assert summary.loc["a", "left_out"] == 1
        assert verdict["verdict"].endswith(f"; 1 of 4 a runs left out ({why})"), verdict["verdict"]


def test_windows_of_a_fork_are_left_out_one_by_one_and_the_fork_keeps_its_clean_ones():
    rows = []
    for fork, values in (("f1", [100.0, 40.0, 102.0]), ("f2", [98.0, 99.0, 97.0])):
        for i, value in enumerate(values):
            rows.append({"server": "a", "rps": value, "repeat": int(fork[1]), "window": i + 1, "fork": fork,
                         "id": f"{fork}-i{i}", "dip": -0.5 if value < 50 else 0.0, "dip_s": 3.0})
    clean, left = validity.usable(frame(rows))
    assert len(clean) == 5 and list(left.values())[0]["forks_left"] == 0
    said = validity.said(list(left.values())[0])
    assert said == "1 of 6 a windows left out (disturbed by a dip in their own throughput)"
    summary = stats.summary(frame(rows), ["rps"]).iloc[0]
    assert summary["n"] == 2 and summary["mean"] == pytest.approx((101.0 + 98.0) / 2)


def test_small_errors_leave_a_window_fit():
    runs = frame(side("a", [100.0, 101.0], errors_total=[3, 0], errors_read=[3, 0], requests=[1e5, 1e5]))
    assert validity.reasons(runs) == [[], []]
    runs = frame(side("a", [100.0, 101.0], errors_total=[300, 0], errors_read=[300, 0], requests=[1e5, 1e5]))
    assert validity.reasons(runs) == [["errors"], []]
