"""Repeats by precision: add interleaved rounds until every throughput ratio is known to +/- ``precision``.

The rule looks only at the width of the intervals, never at whether a difference is significant:
stopping once a test happens to reject would make its p-values lie (optional stopping). The width does
not depend on the direction of the difference, so stopping on it keeps every test at its level.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from .. import schema
from ..schema import AUTO, Interleave
from . import cells, custom, pairs, stats
from .wall import span


def _windows(records) -> dict[str, dict[str, dict[str, list[float]]]]:
    """``{cell: {server: {fork: [rps, ...]}}}`` of the finished runs, each cell named by :func:`_cell`."""
    windows: dict[str, dict[str, dict[str, list[float]]]] = {}
    for record in records:
        if record.status != "ok":
            continue
        cell = _cell(record)
        fork = cells.fork_key(record.params.get("fork"), record.id, record.started_at)
        windows.setdefault(cell, {}).setdefault(record.params["server"], {}).setdefault(fork, []).append(
            record.metrics.get("rps"))
    return windows


def _cell(record) -> str:
    """A record's cell (:func:`benchlab.schema.cell`, as the summary groups its runs) as one text."""
    return json.dumps(schema.cell(record.params, record.label), default=str)


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


def noise(servers) -> tuple[float, float]:
    """(between**2, within**2) of the rps logs: each server's random-effects components
    (:func:`benchlab.analysis.stats.components`), the variances averaged over the servers that can tell them;
    NaN where none can. ``servers``: each server's forks, a fork its windows' rps.

    >>> [round(v, 4) for v in noise([[[100, 102, 98], [150, 153, 147]]])]
    [0.0821, 0.0004]
    """
    parts = []
    for forks in servers:
        forks = list(forks)
        keys = [i for i, fork in enumerate(forks) for _ in fork]
        parts.append(stats.components([v for fork in forks for v in fork], keys))
    between = [p["between_cv"] ** 2 for p in parts if p["between_cv"] == p["between_cv"]]
    within = [p["within_cv"] ** 2 for p in parts if p["within_cv"] == p["within_cv"]]
    return (sum(between) / len(between) if between else math.nan, sum(within) / len(within) if within else math.nan)


def beyond_round(records, w2: float) -> float:
    """The variance of a fork's own effect on the rps logs beyond what its round (one ``suite`` and ``repeat``)
    shares with the other servers' forks: what a ratio judged by round (:func:`benchlab.analysis.cells.rounds`)
    carries of the forks. Two-way analysis of variance of the fork means by server and round, per cell over the
    rounds every server has a fork in: the interaction's mean square, (S-1)(R-1) degrees of freedom, less the
    window noise ``w2`` over the forks' windows, 0 when negative; pooled over cells by degrees of freedom. NaN
    where no cell has 2 servers in 2 rounds.

    >>> from benchlab.store.results import Run
    >>> recs = [Run(id=f"{s}{r}", params={"server": s, "repeat": r, "fork": f"{s}{r}"}, metrics={"rps": v},
    ...             metadata={}, suite="x") for r, k in ((1, 1.0), (2, 1.3), (3, 0.8))
    ...         for s, v in (("a", 100 * k), ("b", 150 * k * (1.02 if r == 2 else 1.0)))]
    >>> round(math.sqrt(beyond_round(recs, 0.0)), 4)  # b's round-2 fork 2% off its round: log 1.02 / sqrt 6
    0.0081
    """
    forks: dict[str, dict] = {}
    for record in records:
        rps = record.metrics.get("rps")
        if record.status != "ok" or not isinstance(rps, (int, float)) or not rps > 0:
            continue
        fork = forks.setdefault(cells.fork_key(record.params.get("fork"), record.id, record.started_at), {
            "cell": _cell(record), "server": record.params["server"],
            "round": (record.suite, record.params.get("repeat")), "logs": []})
        fork["logs"].append(math.log(rps))
    by_cell: dict[str, dict] = {}
    for fork in forks.values():
        if fork["round"][0] is not None and fork["round"][1] is not None:
            by_cell.setdefault(fork["cell"], {}).setdefault(fork["server"], {})[fork["round"]] = fork["logs"]
    found = [(v, df) for v, df in (interaction(servers, w2) for servers in by_cell.values()) if df]
    weight = sum(df for _, df in found)
    return sum(v * df for v, df in found) / weight if weight else math.nan


def interaction(servers: dict, w2: float) -> tuple[float, int]:
    """(variance, degrees of freedom) of the forks' own effects in one cell, ``servers`` as ``{server: {round:
    [log rps of each window]}}``: the server-by-round interaction of the fork means over the rounds every server
    has a fork in, less the window noise ``w2`` it carries, 0 when negative; (NaN, 0) below 2 servers or 2
    rounds."""
    common = sorted(set.intersection(*(set(r) for r in servers.values())), key=str) if servers else []
    size, count = len(servers), len(common)
    if size < 2 or count < 2:
        return math.nan, 0
    y = np.array([[sum(servers[s][r]) / len(servers[s][r]) for r in common] for s in servers])
    m = np.array([[len(servers[s][r]) for r in common] for s in servers], dtype=float)
    rest = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()
    df = (size - 1) * (count - 1)
    return max(0.0, float((rest ** 2).sum()) / df - (w2 if w2 == w2 else 0.0) * float((1 / m).mean())), df


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


def design(records, *, interleave: Interleave = "forks", paired: bool = False) -> dict:
    """Kalibera and Jones' allocation ("Rigorous benchmarking in reasonable time", ISMM 2013) for two levels:
    the windows a fork that make the grand mean's variance, between**2/k + within**2/(k*m), smallest for
    its cost, k*(fork + m*window), is m = sqrt(fork/window * within**2/between**2), rounded, from 1 to
    :data:`MAX_WINDOWS` of ``interleave``. The spreads are the rps components of every server's cell
    (stats.components), pooled as mean variances. ``paired``: the comparison will have rounds enough to judge
    its ratios by round (:func:`.cells.rounds`), so between is the forks' spread beyond their round
    (:func:`beyond_round`), where the forks ran in rounds. The costs come from :func:`costs`. Returns the choice
    with what it was made from."""
    fork_s, window_s = costs(records)
    b2, w2 = noise(list(forks.values()) for servers in _windows(records).values() for forks in servers.values())
    out = {"fork_s": fork_s, "window_s": window_s, "between_cv": math.nan, "within_cv": math.nan,
           "note": custom.note(custom.attached(records))}  # a running server's forks are windows of it
    if math.isnan(b2) or math.isnan(w2):
        return _noted({**out, "windows": PILOT_WINDOWS, "why": "too few forks or windows to tell the two noises "
                       "apart: the pilot's windows a fork are kept"})
    own = beyond_round(records, w2) if paired else math.nan  # judged by round, the round's share leaves every ratio
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
                 budget=None, borrow: bool = False, history=None):
        self.by_precision, self.by_design = repeats == AUTO, windows == AUTO
        self.borrow, self.history = borrow, history  # the widest interval is the verdicts' own, borrowing as they do
        self.budget = budget
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
            if not self.budget.fits(forks * (fork_s + self.windows(records, repeat=repeat) * window_s)):
                self.stopped_by_budget = True  # what the summary says stopped it, not max_repeats
                return True
        return self.by_precision and new_round and repeat > 2 and self.widest(records) <= self.precision

    def widest(self, records) -> float:
        """The widest rps interval of ``records`` as this comparison's verdicts judge it (:func:`widest`)."""
        return widest(records, self.baseline, borrow=self.borrow, history=self.history)

    def windows(self, records, *, repeat: int) -> int:
        """The windows the fork of round ``repeat`` measures."""
        if not self.by_design:
            return self.windows_a_fork
        # On several hosts (compare(hosts=...)) round 3 can be planned while the pilot's rounds still run: the design
        # waits for both, and rounds planned meanwhile measure the pilot's windows.
        piloted = len({r.params.get("repeat") for r in records if r.status == "ok"}) >= 2
        if repeat > 2 and self.chosen is None and piloted:
            self.chosen = design(records, interleave=self.interleave, paired=self.paired)
        return self.chosen["windows"] if self.chosen else PILOT_WINDOWS

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
