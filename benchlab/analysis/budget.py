"""A comparison's time budget: whether the next round fits in what is left, and what more time would buy.

A round costs what its forks cost: each its start, verification and warm-up, then its windows
(:func:`benchlab.analysis.precision.costs`, measured on the comparison's own finished runs). Before each round
past the first, the round is started only if its cost fits in what is left of the budget; within a round whose
windows are taken in turn, no pass starts after the budget is spent. So a comparison overruns its budget by at
most one fork's or one pass's misjudged cost.

What more time would buy comes from how an interval narrows with rounds: its half-width goes as t(n-1) / sqrt(n)
for n rounds (or forks a side), the spread between them staying what it was. It is a forecast, and says so.

A budget also chooses the windows a fork (:func:`plan`): fewer windows buy more rounds, and from the signed rank's
6 rounds a ratio is judged by round, where the rounds' shared state leaves it. Kalibera and Jones' allocation, which
knows neither, would have spent the README's 10 minutes on 5 rounds of 4 windows, judged apart.
"""

from __future__ import annotations

import math
import time

from .intervals import t_quantile

#: The most rounds a forecast looks ahead.
HORIZON = 60


class Budget:
    """The wall time a comparison may take, from its start (``began``, a monotonic time; now by default)."""

    def __init__(self, seconds: float, *, began: float | None = None):
        self.seconds = seconds
        self.began = time.monotonic() if began is None else began

    @property
    def spent(self) -> float:
        return time.monotonic() - self.began

    @property
    def deadline(self) -> float:
        """The monotonic time at which the budget is spent."""
        return self.began + self.seconds

    def fits(self, round_s: float) -> bool:
        """Whether a round that costs ``round_s`` seconds ends within the budget."""
        return self.spent + round_s <= self.seconds


def narrowing(n: int, more: int) -> float:
    """How much an interval of ``n`` rounds narrows with ``more`` rounds: t(n+more-1)/sqrt(n+more) over
    t(n-1)/sqrt(n), at 95%.

    >>> round(narrowing(3, 3), 3)
    0.422
    """
    def half(k: int) -> float:
        return float(t_quantile(0.05, k - 1)) / math.sqrt(k)

    return half(n + more) / half(n)


def forecast(widest: float, rounds: int, round_s: float, precision: float) -> dict:
    """What more rounds would buy: ``{"rounds", "seconds", "widest"}``, the fewest more rounds (at most
    :data:`HORIZON`) that bring the ``widest`` half-width (0.12: +/-12%) of ``rounds`` rounds to ``precision``,
    and the time they take at ``round_s`` a round; ``rounds`` None where no interval exists yet (under 2 rounds)
    or the horizon does not reach it.

    >>> forecast(0.10, 4, 300.0, 0.05)["rounds"]
    5
    """
    if rounds < 2 or not math.isfinite(widest):
        return {"rounds": None, "seconds": None, "widest": None}
    if widest <= precision:
        return {"rounds": 0, "seconds": 0.0, "widest": widest}
    for more in range(1, HORIZON + 1):
        narrower = widest * narrowing(rounds, more)
        if narrower <= precision:
            return {"rounds": more, "seconds": more * round_s, "widest": narrower}
    return {"rounds": None, "seconds": None, "widest": widest * narrowing(rounds, HORIZON)}


def half(b2: float, w2: float, m: int, rounds: int, paired: bool, alpha: float = 0.05) -> float:
    """The forecast half-width (on the log scale, about a relative one) of two servers' ratio from ``rounds``
    rounds of ``m`` windows a fork, b2 and w2 the variances between forks and within one: t sqrt(2 (b2 + w2/m) /
    rounds), the t on rounds - 1 degrees of freedom by round (``paired``), on 2 (rounds - 1) apart; inf below 2.

    >>> round(half(0.026 ** 2, 0.041 ** 2, 2, 6, True), 3), round(half(0.037 ** 2, 0.041 ** 2, 4, 5, False), 3)
    (0.058, 0.062)
    """
    if rounds < 2:
        return math.inf
    df = rounds - 1 if paired else 2 * (rounds - 1)
    return float(t_quantile(alpha, df)) * math.sqrt(2 * (b2 + w2 / m) / rounds)


def plan(*, between: float, beyond: float, within: float, fork_s: float, window_s: float, forks: int, done: int,
         left_s: float, most: int, reach: int, cap: int, slower: float = 1.0, alpha: float = 0.05) -> list[dict]:
    """Each windows a fork from 1 to ``most`` with what the budget buys at it, best first: ``{"windows", "rounds",
    "paired", "half"}``. ``rounds``: the ``done`` ones and as many more of ``forks`` forks as ``left_s`` pays for (a
    fork ``fork_s`` before its first window, a window ``window_s``, both times ``slower``, what the rounds so far
    took beyond that model), at most ``cap``; ``paired`` from ``reach`` rounds, where the variance between forks is
    the one ``beyond`` their round, else ``between`` (with it).

    Best is judged by round where any choice reaches it, then the narrowest forecast ``half``, then fewer windows.
    Pairing comes first because the forecast cannot be trusted to weigh it: two pilot rounds read a round's shared
    state on 1 degree of freedom, and it is what moved whole rounds here by 15-25% (docs/statistics.md).

    >>> best = plan(between=0.037 ** 2, beyond=0.026 ** 2, within=0.041 ** 2, fork_s=33, window_s=6, forks=2,
    ...             done=2, left_s=400, most=8, reach=6, cap=10)[0]
    >>> best["windows"], best["rounds"], best["paired"]
    (2, 6, True)
    """
    options = []
    for m in range(1, most + 1):
        rounds = min(cap, done + int(left_s // (slower * forks * (fork_s + m * window_s))))
        paired = rounds >= reach and math.isfinite(beyond)
        options.append({"windows": m, "rounds": rounds, "paired": paired,
                        "half": half(beyond if paired else between, within, m, rounds, paired, alpha)})
    return sorted(options, key=lambda option: (not option["paired"], option["half"], option["windows"]))


def said(budget_s: float, spent_s: float, widest: float, rounds: int, more: dict, precision: float) -> str:
    """The budget's outcome in one sentence.

    >>> said(600, 590, 0.12, 3, {"rounds": 4, "seconds": 800.0, "widest": 0.05}, 0.05)[:60]
    'spent 9.8 of 10.0 minutes on 3 rounds; widest rps interval +'
    """
    where = ("no interval yet" if not math.isfinite(widest) else f"widest rps interval +/-{widest:.1%}")
    text = f"spent {spent_s / 60:.1f} of {budget_s / 60:.1f} minutes on {rounds} round{'s' if rounds != 1 else ''}; "
    text += where
    if more["rounds"] == 0:
        return text + f", within the +/-{precision:.0%} asked"
    if more["rounds"] is None:
        if rounds < 2:
            return text + ": an interval needs forks in at least 2 rounds; give a larger budget"
        return text + f"; +/-{precision:.0%} is beyond {HORIZON} more rounds at this noise"
    return (text + f"; about {more['seconds'] / 60:.0f} more minutes ({more['rounds']} more round"
            f"{'s' if more['rounds'] != 1 else ''}) would narrow it to about +/-{more['widest']:.1%} "
            "(a forecast from this run's noise)")
