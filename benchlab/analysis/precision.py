"""Repeats by precision: add interleaved rounds until every throughput ratio is known to +/- ``precision``.

The rule looks only at the width of the intervals, never at whether a difference is significant:
stopping once a test happens to reject would make its p-values lie (optional stopping). The width does
not depend on the direction of the difference, so stopping on it keeps every test at its level.
"""

from __future__ import annotations

import math

import pandas as pd

from ..schema import AUTO, Interleave
from . import cells, custom, pairs, stats
from .spread import beyond_round, cell_of, noise
from .wall import span


def _windows(records) -> dict[str, dict[str, dict[str, list[float]]]]:
    """``{cell: {server: {fork: [rps, ...]}}}`` of the finished runs, each cell named by :func:`.spread.cell_of`."""
    windows: dict[str, dict[str, dict[str, list[float]]]] = {}
    for record in records:
        if record.status != "ok":
            continue
        name = cell_of(record)
        fork = cells.fork_key(record.params.get("fork"), record.id, record.started_at)
        windows.setdefault(name, {}).setdefault(record.params["server"], {}).setdefault(fork, []).append(
            record.metrics.get("rps"))
    return windows


def _cells(records) -> dict[str, dict[str, pd.DataFrame]]:
    """``{cell: {server: forks}}``: one row per fork, its round (``suite``, ``repeat``) and ``rps``, the mean
    of its windows."""
    rounds = {cells.fork_key(r.params.get("fork"), r.id, r.started_at): (r.suite, r.params.get("repeat"))
              for r in records}
    return {cell: {server: pd.DataFrame([(*rounds[fork], sum(v) / len(v)) for fork, v in forks.items()],
                                        columns=["suite", "repeat", "rps"])
                   for server, forks in servers.items()}
            for cell, servers in _windows(records).items()}


def widest(records, baseline: str, *, alpha: float = 0.05, borrow: bool = False, history=None) -> float:
    """The widest relative half-width among the cells' rps ratios to ``baseline`` (the mean's, alone), each
    paired by round where the forks share rounds (:func:`benchlab.analysis.cells.rounds`), as the summary judges;
    with ``borrow``, the verdicts' own intervals (:func:`judged_widest`).

    ``inf`` while some interval is missing or unbounded: fewer than 2 repeats, or failed ones.
    """
    judged = judged_widest(records, baseline, alpha=alpha, history=history) if borrow else None
    if judged is not None:
        return judged
    worst = 0.0
    for servers in _cells(records).values():
        base = servers.get(baseline, pd.DataFrame(columns=["suite", "repeat", "rps"]))
        others = [forks for name, forks in servers.items() if name != baseline] or [None]
        for forks in others:
            if forks is None:
                low, high, _ = stats.mean_ci(base["rps"], alpha=alpha)
                centre = float(base["rps"].mean()) if len(base) else math.nan
            else:
                a, b, paired = cells.rounds(forks, base, "rps", alpha=alpha)
                centre, low, high = stats.ratio_ci(a, b, alpha=alpha, paired=paired)
            if any(math.isnan(v) for v in (centre, low, high)) or centre <= 0:
                return math.inf
            worst = max(worst, high / centre - 1, 1 - low / centre)
    return worst


def judged_widest(records, baseline: str, *, alpha: float = 0.05, history=None) -> float | None:
    """The widest relative half-width of the rps verdicts against ``baseline`` as the comparison prints them: the
    one validity rule, and strength borrowed for the fork variance where the rounds are few
    (:mod:`benchlab.analysis.borrow`, ``history`` its folders), so the budget's "widest" is the verdicts' own.
    ``inf`` while some pair is not judged or its interval is unbounded; None where there is no pair (one server:
    :func:`widest` judges its mean alone)."""
    from .suite import Suite  # the Suite reads the history once and judges as compare()'s caller sees it

    suite = Suite(list(records), baseline=baseline)
    suite.borrow, suite.history = True, history
    judged = suite.verdicts("rps", baseline, alpha=alpha)
    if judged.empty:
        return None
    worst = 0.0
    for centre, low, high in zip(judged["change"] + 1, judged["change_low"] + 1, judged["change_high"] + 1):
        if any(not math.isfinite(v) for v in (centre, low, high)) or centre <= 0:
            return math.inf
        worst = max(worst, high / centre - 1, 1 - low / centre)
    return worst


def enough(records, baseline: str, precision: float, *, alpha: float = 0.05, borrow: bool = False,
           history=None) -> bool:
    """True when every ratio's interval lies within +/- ``precision`` of the ratio."""
    return widest(records, baseline, alpha=alpha, borrow=borrow, history=history) <= precision


# --- the design: how many windows a fork, from what forks and windows cost and how much each varies ----------

#: windows="auto": the windows of each fork in the first two rounds, which measure both noises.
PILOT_WINDOWS = 3
#: The most windows a fork the rule chooses. Back to back (interleave="forks"), past 10 a fork's own drift matters
#: more than its noise. Spread over a round (interleave="windows"), 8: the most measured here
#: (``benchmarks/turnaround.py --verdict``, 27 rounds of 8 windows), where the time to +/-5% fell from 0.267 of one
#: window a fork at 4 windows to 0.244 at 8. Past 8 the model's saving is its own word: a pilot of two rounds
#: often reads the forks' spread beyond their round as 0, and the model then asks for windows without end.
MAX_WINDOWS: dict[Interleave, int] = {"forks": 10, "windows": 8}


def costs(records) -> tuple[float, float]:
    """(seconds a fork costs before its first window, seconds a window costs), from the finished runs: a
    window is a run that is not its fork's first (its start to its end); a fork is what its runs say it cost
    (``fork_s``: start, verify, warm-up), else its first run's span from its fork's start less one window.
    Falls back on warmup_s
    and the measured time."""
    ok = [r for r in records if r.status == "ok"]
    later_spans = [span([r]) for r in ok if (r.params.get("window") or 1) > 1]
    later = [s for s in later_spans if s is not None and s > 0]
    window = (sum(later) / len(later) if later else
              sum(float(r.metrics.get("elapsed_s") or r.params.get("duration") or 0) for r in ok) / max(len(ok), 1))
    first_spans = [span([r], forks=True) for r in ok if (r.params.get("window") or 1) == 1]
    firsts = [float(r.metrics["fork_s"]) for r in ok
              if (r.params.get("window") or 1) == 1 and r.metrics.get("fork_s") is not None]
    if not firsts:
        firsts = [s - window for s in first_spans if s is not None]
    if not firsts:
        firsts = [float(r.metrics.get("warmup_s") or 0) for r in ok if (r.params.get("window") or 1) == 1]
    fork = sum(firsts) / len(firsts) if firsts else 0.0
    return max(fork, 0.0), max(window, 1e-3)


def saving(b2: float, w2: float, fork_s: float, window_s: float, m: int) -> float:
    """Kalibera and Jones' time to one precision with ``m`` windows a fork over the time with one: the grand
    mean's variance a fork, b2 + w2/m, times a fork's cost, fork + m x window, against m = 1 (b2 and w2 the
    between- and within-fork variances). Below 1 the windows save time; it is never below b2 / (b2 + w2),
    what windows that cost nothing would give.

    >>> round(saving(0.0092, 0.0142, 129, 5.2, 6), 2), saving(0.01, 0.0, 100, 5, 1), saving(0.01, 0.0, 100, 5, 3) > 1
    (0.59, 1.0, True)
    """
    if b2 + w2 <= 0:
        return 1.0
    return (b2 + w2 / m) * (fork_s + m * window_s) / ((b2 + w2) * (fork_s + window_s))


def design(records, *, interleave: Interleave = "forks", paired: bool = False, budget: dict | None = None) -> dict:
    """Kalibera and Jones' allocation ("Rigorous benchmarking in reasonable time", ISMM 2013) for two levels:
    the windows a fork that make the grand mean's variance, between**2/k + within**2/(k*m), smallest for
    its cost, k*(fork + m*window), is m = sqrt(fork/window * within**2/between**2), rounded, from 1 to
    :data:`MAX_WINDOWS` of ``interleave``. The spreads are the rps components of every server's cell
    (stats.components), pooled as mean variances. ``paired``: the comparison will have rounds enough to judge
    its ratios by round (:func:`.cells.rounds`), so between is the forks' spread beyond their round
    (:func:`beyond_round`), where the forks ran in rounds. The costs come from :func:`costs`. ``budget`` (``forks``
    a round, rounds ``done``, ``left_s``, ``cap`` and ``slower``, of a comparison with a time budget): the windows
    whose rounds, as many as the budget buys, give the narrowest ratio (:func:`.budget.plan`), by round where
    they reach the signed rank's rounds. Returns the choice with what it was made from."""
    fork_s, window_s = costs(records)
    b2, w2 = noise(list(forks.values()) for servers in _windows(records).values() for forks in servers.values())
    out = {"fork_s": fork_s, "window_s": window_s, "between_cv": math.nan, "within_cv": math.nan,
           "note": custom.note(custom.attached(records))}  # a running server's forks are windows of it
    if math.isnan(b2) or math.isnan(w2):
        return _noted({**out, "windows": PILOT_WINDOWS, "why": "too few forks or windows to tell the two noises "
                       "apart: the pilot's windows a fork are kept"})
    own = beyond_round(records, w2) if paired or budget else math.nan  # judged by round, the round's share leaves
    if budget is not None:
        return _noted({**out, **_bought(b2, own, w2, fork_s, window_s, MAX_WINDOWS[interleave], budget)})
    apart = f"forks differ by {math.sqrt(b2):.1%}"
    if own == own:
        apart = f"forks differ by {math.sqrt(own):.1%} beyond their round ({math.sqrt(b2):.1%} with it)"
        b2 = own
    out.update(between_cv=math.sqrt(b2), within_cv=math.sqrt(w2))
    raw = math.inf if b2 == 0 else math.sqrt(fork_s / window_s * w2 / b2)
    most = MAX_WINDOWS[interleave]
    chosen = most if math.isinf(raw) else int(min(most, max(1, round(raw))))  # forks that agree: windows only
    saved = saving(b2, w2, fork_s, window_s, chosen)
    return _noted({**out, "windows": chosen, "saving": saved, "why": (
        f"{chosen} window{'s' if chosen != 1 else ''} a fork: a fork costs {fork_s:.0f} s before its first "
        f"window (start, verify, warm-up) and a window {window_s:.0f} s; {apart} "
        f"and one fork's windows by {math.sqrt(w2):.1%}, so sqrt({fork_s:.0f}/{window_s:.0f} x "
        f"{math.sqrt(w2):.3f}^2/{math.sqrt(b2):.3f}^2) = {raw:.1f} (Kalibera and Jones), held to 1..{most}; "
        f"by their model one precision takes {saved:.2f}x the time of one window a fork")})


def _bought(b2: float, own: float, w2: float, fork_s: float, window_s: float, most: int, budget: dict) -> dict:
    """The budget's design (:func:`design`): the windows a fork with the narrowest forecast, and why."""
    from . import budget as budgets

    options = budgets.plan(between=b2, beyond=own, within=w2, fork_s=fork_s, window_s=window_s, most=most,
                           reach=pairs.reach(0.05), **budget)
    best = options[0]
    other = next((o for o in options if o["paired"] != best["paired"]), None)

    def bought(option: dict) -> str:
        judged = "by round" if option["paired"] else "apart"
        return (f"{option['rounds']} rounds of {option['windows']} window{'s' if option['windows'] != 1 else ''} "
                f"judged {judged} (+/-{math.expm1(option['half']):.1%})")

    why = (f"{best['windows']} window{'s' if best['windows'] != 1 else ''} a fork: the {budget['left_s'] / 60:.1f} "
           f"minutes left of the budget buy {bought(best)}" + (f", against {bought(other)}" if other else "") +
           (" (by round first: two rounds cannot tell what a round's shared state does to a ratio judged apart)"
            if other is not None and other["half"] < best["half"] else "") +
           f"; a fork costs {fork_s:.0f} s before its first window and a window {window_s:.0f} s; forks differ by "
           f"{math.sqrt(b2):.1%}" + (f" ({math.sqrt(own):.1%} beyond their round)" if own == own else "") +
           f" and one fork's windows by {math.sqrt(w2):.1%} (a forecast from the pilot's two rounds)")
    between = own if best["paired"] else b2
    return {"windows": best["windows"], "rounds": best["rounds"], "paired": best["paired"],
            "between_cv": math.sqrt(between), "within_cv": math.sqrt(w2),
            "saving": saving(between, w2, fork_s, window_s, best["windows"]), "why": why}


def _noted(design: dict) -> dict:
    """The design's reason, and what it rests on where a server was already running (:mod:`.custom`)."""
    return {**design, "why": design["why"] + f"; {design['note']}"} if design["note"] else design


class Rule:
    """One comparison's stopping rule and windows a fork, asked between forks as the runs come in.

    ``repeats="auto"`` stops once a whole round is done (past the first two) and every ratio to
    ``baseline`` is within +/- ``precision`` (:func:`enough`); ``windows="auto"`` gives each fork of the
    first two rounds :data:`PILOT_WINDOWS` windows, then the :func:`design` chosen from them. A ``budget``
    (:class:`benchlab.analysis.budget.Budget`) stops it before a round that would not fit in what is left.

    >>> rule = Rule(repeats=3, windows=2, precision=0.03, baseline="spring-tomcat")
    >>> rule.stop([], repeat=1, new_round=False), rule.windows([], repeat=1)
    (False, 2)
    """

    def __init__(self, *, repeats, windows, precision: float, baseline: str, interleave: Interleave = "forks",
                 budget=None, borrow: bool = False, history=None, most_rounds: int = 10):
        self.by_precision, self.by_design = repeats == AUTO, windows == AUTO
        self.borrow, self.history = borrow, history  # the widest interval is the verdicts' own, borrowing as they do
        self.budget, self.most_rounds = budget, most_rounds
        self.interleave = interleave
        self.windows_a_fork, self.precision, self.baseline = windows, precision, baseline
        self.chosen: dict | None = None  # the design, once the pilot's two rounds are in
        self.stopped_by_budget = False  # a round the budget could not pay for was not started
        # the ratios will be judged by round (cells.rounds) if the comparison may run rounds enough for it
        self.paired = repeats == AUTO or repeats >= pairs.reach(0.05)

    @property
    def first_windows(self) -> int:
        """The windows a fork of the first round gets: what a progress bar can plan with."""
        return PILOT_WINDOWS if self.by_design else self.windows_a_fork

    def stop(self, records, *, repeat: int, new_round: bool, forks: int = 1) -> bool:
        """Whether the comparison has what it asked for, or its budget cannot pay for round ``repeat`` of ``forks``
        forks, before that round starts."""
        if self.budget is not None and new_round and repeat > 1:
            fork_s, window_s = costs(records)
            if not self.budget.fits(forks * (fork_s + self.windows(records, repeat=repeat, forks=forks) * window_s)):
                self.stopped_by_budget = True  # what the summary says stopped it, not max_repeats
                return True
        return self.by_precision and new_round and repeat > 2 and self.widest(records) <= self.precision

    def widest(self, records) -> float:
        """The widest rps interval of ``records`` as this comparison's verdicts judge it (:func:`widest`)."""
        return widest(records, self.baseline, borrow=self.borrow, history=self.history)

    def windows(self, records, *, repeat: int, forks: int = 1) -> int:
        """The windows each of the ``forks`` forks of round ``repeat`` measures."""
        if not self.by_design:
            return self.windows_a_fork
        # On several hosts (compare(hosts=...)) round 3 can be planned while the pilot's rounds still run: the design
        # waits for both, and rounds planned meanwhile measure the pilot's windows.
        piloted = len({r.params.get("repeat") for r in records if r.status == "ok"}) >= 2
        if repeat > 2 and self.chosen is None and piloted:
            self.chosen = design(records, interleave=self.interleave, paired=self.paired,
                                 budget=self._left(records, forks, done=repeat - 1))
        return self.chosen["windows"] if self.chosen else PILOT_WINDOWS

    def _left(self, records, forks: int, *, done: int) -> dict | None:
        """What :func:`design` plans with under a budget: what is left of it, and how much slower the ``done``
        rounds ran than what their forks and windows cost."""
        if self.budget is None:
            return None
        fork_s, window_s = costs(records)
        modelled = done * forks * (fork_s + PILOT_WINDOWS * window_s)
        slower = max(1.0, self.budget.spent / modelled) if modelled > 0 else 1.0
        return {"forks": forks, "done": done, "left_s": max(0.0, self.budget.seconds - self.budget.spent),
                "cap": self.most_rounds, "slower": slower}

    def describe(self, suite, records) -> None:
        """Say on ``suite`` the design it ran with and the precision it reached, where the caller asked."""
        if self.by_design:
            suite.design = self.chosen or {**design(records, interleave=self.interleave, paired=self.paired),
                                           "windows": PILOT_WINDOWS,
                                           "why": f"{PILOT_WINDOWS} windows a fork: the pilot's, as the "
                                                  "comparison ended within its two rounds"}
        if self.by_precision:
            # judged on every record, the last round's too: a rule that ran to max_repeats may have got there
            wide = self.widest(records)  # once: with borrowing it reads this machine's history
            suite.precision = {"asked": self.precision, "reached": bool(wide <= self.precision),
                               "repeats": max(r.params["repeat"] for r in records), "widest": wide,
                               "note": custom.note(custom.attached(records)),
                               # the budget, where it ended the rounds or their forks (its deadline within a round)
                               "budget": bool(self.budget is not None and (
                                   self.stopped_by_budget or self.budget.spent >= self.budget.seconds))}
        if self.budget is not None:
            suite.budget = self.spent(records, wide=suite.precision["widest"] if self.by_precision else None)

    def spent(self, records, *, wide: float | None = None) -> dict:
        """What the budget bought: ``{"asked_s", "spent_s", "rounds", "widest", "more", "text"}``; ``wide``, the
        widest interval where the caller has it already."""
        from . import budget

        rounds = len({r.params.get("repeat") for r in records if r.status == "ok"})
        fork_s, window_s = costs(records)
        forks = len({(r.params.get("server"), r.params.get("repeat")) for r in records}) / max(rounds, 1)
        round_s = forks * (fork_s + (self.chosen or {}).get("windows", PILOT_WINDOWS) * window_s)
        wide = self.widest(records) if wide is None else wide
        more = budget.forecast(wide, rounds, round_s, self.precision)
        return {"asked_s": self.budget.seconds, "spent_s": round(self.budget.spent, 1), "rounds": rounds,
                "widest": wide, "more": more, "text": budget.said(self.budget.seconds, self.budget.spent, wide,
                                                                  rounds, more, self.precision)}
