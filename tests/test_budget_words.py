"""A budget's words (issue 46, item 2): the progress bar's ETA is what the budget will spend, the summary says the
budget stopped the rounds, and an interval that does not exist prints as "-", not NaN NaN (unit tests, nothing
starts)."""

from __future__ import annotations

import time

from benchlab.analysis.budget import Budget
from benchlab.analysis.precision import Rule
from benchlab.analysis.suite import Suite
from benchlab.present.terminal import print_suite
from benchlab.running.progress import Progress
from benchlab.store.results import Run


def test_under_a_budget_the_eta_is_what_is_left_of_it():
    planned = [600.0] * 20  # max_repeats rounds of slow forks: 3h20m as planned
    assert Progress(planned, enabled=False).eta() > 3 * 3600
    bar = Progress(planned, enabled=False, deadline=time.monotonic() + 600)
    assert 590 <= bar.eta() <= 600 and bar.line().endswith("(budget)")


def _forks(rounds: int, *, p50_equal: bool = False):
    return [Run(id=f"{s}{r}", params={"server": s, "repeat": r, "window": 1, "fork": f"{s}{r}"},
                metrics={"rps": 1000.0 * (1 + 0.3 * (r % 2)) * (1.1 if s == "b" else 1.0),
                         "p50": 0.002 if p50_equal else 0.002 * r, "elapsed_s": 5.0, "fork_s": 60.0},
                metadata={}, suite="x", started_at=f"2026-12-06T10:0{r}:00") for r in range(1, rounds + 1)
            for s in ("a", "b")]


def test_the_summary_says_the_budget_stopped_it_not_max_repeats(capsys):
    rule = Rule(repeats="auto", windows=1, precision=0.03, baseline="a", budget=Budget(90.0))
    records = _forks(2)
    assert rule.stop(records, repeat=3, new_round=True, forks=2)  # two forks of 65 s do not fit in 90 s
    suite = Suite(records)
    rule.describe(suite, records)
    print_suite(suite, metrics=("rps", "p50"))
    out = capsys.readouterr().out
    assert "NOT reached: the budget stopped it" in out and "max_repeats" not in out


def test_an_interval_of_equal_forks_prints_as_a_dash_not_nan(capsys):
    print_suite(Suite(_forks(2, p50_equal=True)), metrics=("rps", "p50"))
    out = capsys.readouterr().out
    assert "NaN" not in out.split("per-fork")[0] and " - " in out


def test_on_several_hosts_the_design_waits_for_both_pilot_rounds():
    """compare(hosts=...) may plan round 3 while round 2 still runs elsewhere: it measures the pilot's windows."""
    from benchlab.analysis.precision import PILOT_WINDOWS

    rule = Rule(repeats=6, windows="auto", precision=0.03, baseline="a", interleave="windows")
    one_round = [r for r in _forks(2) if r.params["repeat"] == 1]
    assert rule.windows(one_round, repeat=3) == PILOT_WINDOWS and rule.chosen is None
    rule.windows(_forks(2), repeat=4)
    assert rule.chosen is not None


class _Clock(Budget):
    """A budget whose spent time the test sets: the rounds' cost without running them."""

    def __init__(self, seconds: float, spent: float):
        super().__init__(seconds)
        self.used = spent

    @property
    def spent(self) -> float:
        return self.used


def _pilot(round_effect: float, fork_noise: float):
    """Two servers' two pilot rounds of 3 windows: a fork costs 33 s, a window 6 s (the README's first command)."""
    import numpy as np

    rng = np.random.default_rng(7)
    runs = []
    for r in (1, 2):
        shared = 1.0 - round_effect * (r == 1)
        for s, mu in (("a", 31000.0), ("b", 32000.0)):
            own = float(np.exp(rng.normal(0, fork_noise)))
            for w in (1, 2, 3):
                runs.append(Run(id=f"{s}{r}w{w}", params={"server": s, "repeat": r, "window": w, "fork": f"{s}{r}"},
                                metrics={"rps": mu * shared * own * float(np.exp(rng.normal(0, 0.04))),
                                         "elapsed_s": 6.0, "fork_s": 33.0}, metadata={}, suite="x"))
    return runs


def test_a_budget_spends_its_windows_on_the_rounds_that_pair_where_they_narrow_the_ratio():
    """The README's first command spent 10 minutes on 5 rounds of 4 windows, judged apart, where its first round
    served a quarter less on both servers: the budget's design buys the 6 rounds that judge by round instead."""
    records = _pilot(round_effect=0.25, fork_noise=0.02)
    rule = Rule(repeats="auto", windows="auto", precision=0.03, baseline="a", interleave="windows",
                budget=_Clock(600.0, spent=2 * 2 * (33 + 3 * 6)))
    chosen = rule.windows(records, repeat=3, forks=2)
    assert rule.chosen["paired"] and rule.chosen["rounds"] >= 6 and "judged by round" in rule.chosen["why"]
    unbudgeted = Rule(repeats="auto", windows="auto", precision=0.03, baseline="a", interleave="windows")
    assert unbudgeted.windows(records, repeat=3) > chosen, "Kalibera and Jones alone ask for more windows a fork"
    # the stop rule lets the budget buy the rounds the design counted on, and not one more
    started = 2
    while not rule.stop(records, repeat=started + 1, new_round=True, forks=2):
        started += 1
        rule.budget.used += 2 * (33 + chosen * 6)
    assert started == rule.chosen["rounds"]


def test_a_budget_too_small_to_pair_keeps_the_windows_that_narrow_forks_judged_apart():
    records = _pilot(round_effect=0.0, fork_noise=0.01)
    rule = Rule(repeats="auto", windows="auto", precision=0.03, baseline="a", interleave="windows",
                budget=_Clock(360.0, spent=2 * 2 * (33 + 3 * 6)))
    rule.windows(records, repeat=3, forks=2)
    assert not rule.chosen["paired"] and rule.chosen["rounds"] < 6 and "judged apart" in rule.chosen["why"]
