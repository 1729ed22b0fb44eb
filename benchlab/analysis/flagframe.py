"""The flags frame: each window's flags with the window's standing (used, left out, retaken, failed), and each cell's.

The rules that find a window's flags are :mod:`benchlab.analysis.flags`; what a window is to the statistics is
decided once, by :func:`benchlab.analysis.validity.standing`. A cell's flags are taken over the windows that rule
lets in (a fork left out is not a repeat whose spread counts), and a run flag is said for the cell from its kept
windows only: a retaken window's flags are its own, listed on its row, never beside the window that replaced it.

>>> import pandas as pd
>>> frame = flags(pd.DataFrame({"id": ["w1-retaken1", "w1"], "server": "a", "scenario": "hello", "repeat": 1,
...                             "status": ["retaken", "ok"], "drift": [0.2, 0.01], "drift_limit": 0.08}))
>>> frame[["id", "standing", "flag"]].values.tolist()
[['w1-retaken1', 'retaken', 'retaken'], ['w1-retaken1', 'retaken', 'drifting']]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..schema import FLAGS
from . import cells
from .flags import CV_LIMIT, TAIL_SPREAD_LIMIT, runs_flags
from .validity import standing


def _column(runs: pd.DataFrame, name: str) -> np.ndarray:
    return runs[name].astype(object).to_numpy() if name in runs else np.full(len(runs), None, dtype=object)


def _numbers(runs: pd.DataFrame, name: str) -> np.ndarray:
    if name not in runs:
        return np.full(len(runs), np.nan)
    return np.asarray(pd.to_numeric(runs[name], errors="coerce"), dtype=float)


def _cell_flags(rps: np.ndarray, p99: np.ndarray, forks: np.ndarray, found: list, finished: int) -> list:
    """The flags of one server's cell, from the rps and p99 of the windows the one rule lets in (``forks``: each
    one's fork), the flags ``found`` on each of its kept windows (not retaken), and how many windows ``finished``:
    the spread is between fork means (a fork's windows are not repeats), and a run flag is said once for the
    cell."""
    if not finished:
        return [("all_failed", FLAGS["all_failed"])]
    out = []
    rps = cells.fork_means(rps, forks)
    cv = rps.std(ddof=1) / rps.mean() if len(rps) > 1 and rps.mean() else 0.0
    if cv > CV_LIMIT:
        out.append(("high_cv", FLAGS["high_cv"].format(cv=cv)))
    p99 = cells.fork_means(p99, forks)
    if len(p99) > 1 and p99.min() > 0 and p99.max() / p99.min() > TAIL_SPREAD_LIMIT:
        out.append(("tail_unstable", FLAGS["tail_unstable"].format(spread=p99.max() / p99.min(), low=p99.min() * 1e3,
                                                                    high=p99.max() * 1e3)))
    if len(found) < 2:
        return out  # a cell of one run: the run's own row says each of its flags, the cell would say it again
    seen: dict[str, str] = {}
    counts: dict[str, int] = {}
    for run in found:
        for flag, text in dict(run).items():
            if flag not in ("failed", "profiled"):  # a profiled window is one a fork by design, not a finding
                seen.setdefault(flag, text)
                counts[flag] = counts.get(flag, 0) + 1
    return out + [(flag, f"in {'every repeat' if counts[flag] == len(found) else 'some repeats'}: {text}")
                  for flag, text in seen.items()]


def flags(runs: pd.DataFrame) -> pd.DataFrame:
    """Every noise and validity flag, on each window (level "run", with the window's ``standing``) and each cell
    (level "cell")."""
    return flags_by_cell(runs)[0]


def flags_by_cell(runs: pd.DataFrame, *, found: list | None = None):
    """(the flags frame, {(cell, server): set of flag names}): the set is what the frame holds for the
    runs and the cell, which :func:`benchlab.analysis.stats.summary` shows, found without searching the frame.
    ``found``: the runs' flags (:func:`~benchlab.analysis.flags.runs_flags`) where the caller has them already."""
    keys, members = cells.members(runs)
    found = runs_flags(runs) if found is None else found
    said = np.array(standing(runs, found=found), dtype=object)
    used = np.array([s == "used" for s in said], dtype=bool)
    ids, servers = _column(runs, "id"), _column(runs, "server")
    columns = {c: _column(runs, c) for c in keys}
    rows: list[dict] = []
    names: dict[tuple, set[str]] = {}
    for i in range(len(runs)):
        for flag, explanation in found[i]:
            rows.append({"level": "run", "id": ids[i], **{c: columns[c][i] for c in keys}, "server": servers[i],
                         "standing": said[i], "flag": flag, "explanation": explanation})
    status = _column(runs, "status") if "status" in runs else np.full(len(runs), "ok", dtype=object)
    rps_all, p99_all = _numbers(runs, "rps"), _numbers(runs, "p99")
    fork_of = cells.fork_keys(runs)
    for cell, positions in members:
        order = dict.fromkeys(s for s in servers[positions] if not pd.isna(s))  # groupby drops a missing server
        for server in order:
            mine = positions[servers[positions] == server]
            base = {"level": "cell", "id": None, **{c: cells.restore(v) for c, v in zip(keys, cell)}, "server": server,
                    "standing": None}
            named = names.setdefault((cell, server), set())
            # a retaken window's own flags stay on its row; the cell says only that it had one
            named.update(flag for i in mine for flag, _ in found[i] if status[i] != "retaken" or flag == "retaken")
            fit = mine[used[mine]]
            kept = [found[i] for i in mine if status[i] != "retaken"]
            cell_rows = [{**base, "flag": flag, "explanation": text} for flag, text in
                         _cell_flags(rps_all[fit], p99_all[fit], fork_of[fit], kept, int((status[mine] == "ok").sum()))]
            named.update(row["flag"] for row in cell_rows)
            rows.extend(cell_rows)
    frame = pd.DataFrame(rows, columns=["level", "id", *keys, "server", "standing", "flag", "explanation"])
    return frame, names
