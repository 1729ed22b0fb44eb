"""What a verdict may use: one rule, shared by the summary, the verdicts, the charts and the claims.

A window that carries a validity flag (:data:`INVALID`) measured something other than the server serving its
load: the load tool's limit, a server still compiling, a stall, another process on its cores. Such a window
enters no statistic: each side is judged on its clean windows (a fork's mean over the windows it has left; a
fork with none is left out), and the verdict says how many were left out and why. A side with no clean fork is
not judged at all, and says why; it is never called significantly different on flagged data. A failed or
retaken window is not a measurement of the server either and is left out the same way (:func:`cells.ok`).

>>> import pandas as pd
>>> runs = pd.DataFrame({"server": ["a", "a"], "scenario": "hello", "status": "ok", "rps": [9e3, 5e3],
...                      "load_cpu_mean": [40.0, 97.0], "threads": [1, 1], "load_cores": [1, 1]})
>>> clean, left = usable(runs)
>>> len(clean), [entry["flags"] for entry in left.values()]
(1, [{'generator_bound': 1}])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..schema import STANDINGS
from . import cells
from .flags import runs_flags

#: The flags that make a window unfit for any verdict, and what they say of the windows left out, in the order
#: they are named.
INVALID = {
    "generator_bound": "bound by their load generator",
    "errors": "with failed requests above 0.1% of their requests",
    "rate_shortfall": "short of their asked rate",
    "capacity_unfound": "whose capacity search stopped short of the server's limit",
    "not_warm": "not warm",
    "jit_active": "measured while their JIT was still compiling",
    "gc_heavy": "heavy with GC pauses",
    "server_idle": "with a server that stalled while the load tool was busy",
    "interference": "disturbed by other processes on their cores",
    "steal": "disturbed by the host's steal",
    "dip": "disturbed by a dip in their own throughput",
    "profiled": "taken under the profiler",
}

#: The flags that say a window was not warm: under a source's own procedure (a claim judged "theirs") they are
#: counted, not left out, since that procedure measured cold servers on purpose.
WARMTH = ("not_warm", "jit_active", "gc_heavy", "server_idle")

#: Failed requests up to this share of a window's requests leave it fit.
ERROR_SHARE_LIMIT = 0.001


def reasons(runs: pd.DataFrame, *, exempt=(), found: list | None = None) -> list[list[str]]:
    """The :data:`INVALID` flags of every run of the frame (``exempt`` ones aside), in :data:`INVALID`'s order;
    ``found``: the runs' flags (:func:`~benchlab.analysis.flags.runs_flags`) where the caller has them already."""
    found = runs_flags(runs.reset_index(drop=True)) if found is None else found
    requests = pd.to_numeric(runs.get("requests", pd.Series(np.nan, index=runs.index)), errors="coerce").to_numpy()
    errors = pd.to_numeric(runs.get("errors_total", pd.Series(np.nan, index=runs.index)), errors="coerce").to_numpy()
    out = []
    for i, flags in enumerate(found):
        names = {flag for flag, _ in flags if flag in INVALID and flag not in exempt}
        if "errors" in names and requests[i] > 0 and errors[i] / requests[i] <= ERROR_SHARE_LIMIT:
            names.discard("errors")
        out.append([flag for flag in INVALID if flag in names])
    return out


def standing(runs: pd.DataFrame, *, found: list | None = None) -> list[str]:
    """What each run of the frame is to every statistic, table, chart and count: one word of
    :data:`~benchlab.schema.STANDINGS`, a window left out followed by the flags that left it out. The one place
    this is decided: :func:`fit`, :class:`Tally` and every table and chart that marks a window read it.

    >>> standing(pd.DataFrame({"status": ["ok", "retaken", "ok", "failed"], "load_cpu_mean": [40.0, 40.0, 99.0, None],
    ...                        "threads": 1, "load_cores": 1}))
    ['used', 'retaken', 'left out (generator_bound)', 'failed']
    """
    used, left, retaken, failed = STANDINGS
    flagged = reasons(runs, found=found) if len(runs) else []
    status = runs["status"].to_numpy(dtype=object) if "status" in runs else np.full(len(runs), "ok", dtype=object)
    return [failed if s == "failed" else retaken if s == "retaken" else f"{left} ({', '.join(why)})" if why else used
            for s, why in zip(status, flagged)]


def fit(runs: pd.DataFrame) -> np.ndarray:
    """Whether each run of the frame may enter a statistic: its :func:`standing` is "used" (finished, not retaken,
    without an :data:`INVALID` flag); what :func:`usable` keeps, as a mask over the whole frame.

    >>> fit(pd.DataFrame({"status": ["ok", "retaken", "ok"], "load_cpu_mean": [40.0, 40.0, 99.0],
    ...                   "threads": 1, "load_cores": 1})).tolist()
    [True, False, False]
    """
    return np.array([s == STANDINGS[0] for s in standing(runs)], dtype=bool)


@dataclass(frozen=True)
class Tally:
    """How many windows were used, left out (and why), retaken and failed: the one count the header, the
    suite's line, the panel, the terminal and the progress bar's last line all say, from :func:`standing`.

    >>> print(Tally.of(pd.DataFrame({"status": ["ok", "retaken", "ok", "ok"], "load_cpu_mean": [40.0, 40.0, 99.0, 40.0],
    ...                              "threads": 1, "load_cores": 1})))
    2 windows used, 1 left out (bound by their load generator), 1 retaken
    """

    used: int
    left: int
    retaken: int
    failed: int
    #: flag -> the windows it left out (a window may carry two)
    why: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, runs: pd.DataFrame) -> Tally:
        said = standing(runs)
        used, left, retaken, failed = STANDINGS
        counts: dict[str, int] = {}
        for words in said:
            if words.startswith(left):
                for flag in words[len(left) + 2:-1].split(", "):
                    counts[flag] = counts.get(flag, 0) + 1
        return cls(used=said.count(used), left=sum(s.startswith(left) for s in said), retaken=said.count(retaken),
                   failed=said.count(failed), why=tuple((flag, counts[flag]) for flag in INVALID if flag in counts))

    @property
    def windows(self) -> int:
        return self.used + self.left + self.retaken + self.failed

    def reasons(self) -> str:
        """Why the windows left out were: ``"measured while their JIT was still compiling"``; a count before each
        reason where they differ."""
        return "; ".join(INVALID[flag] if count == self.left else f"{count} {INVALID[flag]}"
                         for flag, count in self.why)

    def __str__(self) -> str:
        rest = [*([f"{self.left} left out ({self.reasons()})"] if self.left else []),
                *([f"{self.retaken} retaken"] if self.retaken else []),
                *([f"{self.failed} failed"] if self.failed else [])]
        if not self.windows:
            return "no window"
        if not self.used:
            n = self.windows
            return f"none of the {n} windows can be used: {', '.join(rest)}" if n > 1 else \
                f"the one window cannot be used: {rest[0]}"
        return ", ".join([f"{self.used} window{'s' if self.used != 1 else ''} used", *rest])


def usable(runs: pd.DataFrame, *, exempt=(), found: list | None = None) -> tuple[pd.DataFrame, dict]:
    """``(clean, left)``: the finished windows that carry no :data:`INVALID` flag, and for each (cell, server)
    that lost some (the cell a tuple as :func:`cells.group` names it), ``{"server", "windows", "left", "forks",
    "forks_left", "flags": {flag: windows}}``: ``windows`` and ``forks`` what it had, ``left`` and ``forks_left``
    what was left out. ``found``: the flags of every run of ``runs`` where the caller has them already."""
    ok = cells.ok(runs)
    if ok.empty:
        return ok, {}
    if found is not None and len(ok) < len(runs):
        found = [found[i] for i in np.flatnonzero((runs["status"] == "ok").to_numpy())]
    found = reasons(ok, exempt=exempt, found=found)
    bad = np.array([bool(r) for r in found], dtype=bool)
    clean = ok[~bad]
    if not bad.any():
        return clean, {}
    keys, members = cells.members(ok)
    servers = ok["server"].to_numpy(dtype=object)
    forks = cells.fork_keys(ok)
    left = {}
    for cell, positions in members:
        for server in dict.fromkeys(servers[positions]):
            mine = positions[servers[positions] == server]
            lost = mine[bad[mine]]
            if not len(lost):
                continue
            counts: dict[str, int] = {}
            for i in lost:
                for flag in found[i]:
                    counts[flag] = counts.get(flag, 0) + 1
            kept_forks = set(forks[mine[~bad[mine]]])
            all_forks = set(forks[mine])
            left[(cell, server)] = {"server": server, "windows": len(mine), "left": len(lost),
                                    "forks": len(all_forks), "forks_left": len(all_forks - kept_forks),
                                    "flags": counts}
    return clean, left


def said(entry: dict | None) -> str:
    """What a verdict says of a side's left-out windows: ``"1 of 3 nginx runs left out (bound by ...)"``; ""
    when none was.

    >>> said({"server": "nginx", "windows": 3, "left": 3, "forks": 3, "forks_left": 3,
    ...       "flags": {"generator_bound": 3}})
    'all 3 nginx runs left out (bound by their load generator)'
    """
    if not entry:
        return ""
    unit = "runs" if entry["windows"] == entry["forks"] else "windows"
    why = "; ".join(INVALID[flag] if count == entry["left"] else f"{count} {INVALID[flag]}"
                    for flag, count in sorted(entry["flags"].items(), key=lambda kv: list(INVALID).index(kv[0])))
    share = f"all {entry['windows']}" if entry["left"] == entry["windows"] else f"{entry['left']} of {entry['windows']}"
    return f"{share} {entry['server']} {unit} left out ({why})"
