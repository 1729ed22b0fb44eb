"""Cells of the runs frame: the runs that measured one setup, the unit every statistic is taken over.

A run's cell is named once, by :func:`benchlab.schema.cell` (its columns, :data:`benchlab.schema.CELL`): the
load (scenario, model, tool, connections, rate, users x loops, threads, pipelining, keep-alive) *and*
everything else that changes what is measured: backend and image, duration, warm-up, timeout, memory, JVM
options, java, CDS, the cores, and the label (an imported run is not a repeat of a local one). The runs frame
holds those columns as that function gives them, so grouping on them is grouping by cell. Runs that differ in
any of these are never pooled; the summary shows a cell column only where it varies.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..schema import CELL
from . import pairs


def finite(values) -> np.ndarray:
    """The finite numbers among ``values``, as floats."""
    array = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
    return array[np.isfinite(array)]


def ok(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that finished: a failed run enters no statistic."""
    return runs[runs["status"] == "ok"] if "status" in runs else runs


def key(value):
    """A cell column's value as a group key: lists joined, missing as ``"-"``."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return " ".join(map(str, value))
    return "-" if value is None or (isinstance(value, float) and np.isnan(value)) else value


def group(runs: pd.DataFrame):
    """``(keys, [(cell, rows), ...])``: the runs by cell, in the order each cell first appears, each cell a tuple of
    keys (a missing value is ``"-"`` in it; :func:`restore` undoes it), while each cell's rows keep their values
    and their order."""
    keys, found = members(runs)
    return keys, [(cell, runs.iloc[positions]) for cell, positions in found]


def members(runs: pd.DataFrame):
    """``(keys, [(cell, positions), ...])``: each cell as :func:`group` names and orders it (a tuple of
    keys), with the positions of its runs in ``runs``, in order; no sub-frame is built per cell. One integer a
    row names its cell, numbered in order of first appearance: each column's keys numbered (``pd.factorize``, as
    groupby does) and folded into it, column by column; a column with one key splits nothing."""
    keys, filled = _filled(runs)
    columns = [filled[c] for c in keys]
    number = np.zeros(len(runs), dtype=np.int64)
    for column in columns:
        codes, distinct = pd.factorize(column, use_na_sentinel=False)
        if len(distinct) > 1:  # renumbered each time, so it never outgrows the rows
            number = pd.factorize(number * len(distinct) + codes)[0]
    order = np.argsort(number, kind="stable")
    return keys, [(tuple(column[positions[0]] for column in columns), positions)
                  for positions in np.split(order, np.flatnonzero(np.diff(number[order])) + 1) if len(positions)]


def _filled(runs: pd.DataFrame):
    """``(keys, {column: its values as group keys})``: each cell column's :func:`key` values, an object array."""
    keys = [c for c in CELL if c in runs]
    return keys, {c: _keys(runs[c]) for c in keys}


def _keys(column: pd.Series) -> np.ndarray:
    """``column.astype(object).map(key)`` as an object array, without a Python call per run where the dtype
    answers: numbers with no missing value are their own keys, a column no run sets is all ``"-"``, and text only
    needs its missing values filled."""
    values = column.to_numpy(dtype=object)
    missing = pd.isna(values)
    if missing.all():  # a column no run sets (most cell columns of most runs), or no run at all
        return np.full(len(values), "-", dtype=object)
    if column.dtype.kind in "iufb" and not missing.any():
        return values
    if column.dtype != object and pd.api.types.is_string_dtype(column.dtype):
        values[missing] = "-"
        return values
    return np.fromiter(map(key, values), dtype=object, count=len(values))


#: The load a cell offers, of all its columns (the first of :data:`benchlab.schema.CELL`): borrowed strength fits
#: its prior from the stored variances at the judged cell's own load point where there are enough of them
#: (:meth:`benchlab.analysis.history.History.prior`), since a p99's fork variance differs with the load.
LOAD_POINT = CELL[:CELL.index("keepalive") + 1]


def load_point(forks) -> tuple:
    """The load point of one cell's rows (a runs or forks frame): its :data:`LOAD_POINT` values, as group keys.

    >>> import pandas as pd
    >>> load_point(pd.DataFrame({"scenario": ["hello"], "connections": [16]}))[:5]
    ('hello', '-', '-', '-', 16)
    """
    first = forks.iloc[0] if len(forks) else {}
    values = (first.get(column) for column in LOAD_POINT)  # a column the frame lacks is None
    return tuple(key(v.item() if isinstance(v, np.generic) else v) for v in values)


def restore(value):
    return None if value == "-" else value


def varying(frame: pd.DataFrame) -> list[str]:
    """The cell columns whose value differs between rows: the ones worth showing."""
    return [c for c in CELL if c in frame and frame[c].astype(str).nunique(dropna=False) > 1]


# --- forks: a server process, warmed once, and the windows measured in it --------------------------------

def fork_key(fork, run_id, started_at) -> str:
    """A run's fork, as a key: the stored ``fork``, or for a run stored before forks had several windows (or
    made in memory) its id and start, so that it is its own fork of one window."""
    return fork if isinstance(fork, str) else f"{run_id}@{started_at}"


def fork_keys(runs: pd.DataFrame) -> np.ndarray:
    """:func:`fork_key` of every row of the runs frame."""
    ids = runs["id"].to_numpy(dtype=object) if "id" in runs else np.arange(len(runs)).astype(object)
    starts = runs["started_at"].to_numpy(dtype=object) if "started_at" in runs else np.full(len(runs), None)
    stored = runs["fork"].to_numpy(dtype=object) if "fork" in runs else np.full(len(runs), None)
    return np.array(list(map(fork_key, stored, ids, starts)), dtype=object)


def fork_means(values, forks) -> np.ndarray:
    """The mean of ``values`` per fork, forks in the order they first appear; NaN values are left out, and
    a fork with none is left out.

    >>> fork_means([10.0, 12.0, 20.0, float("nan")], ["a", "a", "b", "c"]).tolist()
    [11.0, 20.0]
    """
    frame = pd.DataFrame({"v": pd.to_numeric(pd.Series(list(values)), errors="coerce").astype(float),
                          "f": list(forks)})
    means = frame.groupby("f", sort=False)["v"].mean()
    means = means[np.isfinite(means)]
    return means.to_numpy(dtype=float)


def forks(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per fork: its windows' numbers averaged, its other columns those of its first window, and
    ``windows`` how many went in. Fork means are the unit of every interval and test: the windows of one
    fork share its JIT's and its heap's luck, so they are not independent repeats. A frame of one window
    per fork comes back as it is, with ``windows`` 1."""
    keys = fork_keys(runs)
    if len(set(keys)) == len(keys):
        return runs.assign(windows=1)
    skip = {*CELL, "repeat", "window"}
    numeric = [c for c, dtype in runs.dtypes.items()
               if c not in skip and pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)]
    grouped = runs.assign(_fork=keys).groupby("_fork", sort=False)
    first = grouped.nth(0).set_index("_fork")
    # the means joined as one block, not set column by column (a runs frame has a hundred numeric columns)
    first = pd.concat([first.drop(columns=numeric), grouped[numeric].mean(), grouped.size().rename("windows")],
                      axis=1)[[*runs.columns, "windows"]]
    return first.reset_index(drop=True)


# --- rounds: one fork of every server, run one after another -----------------------------------------------

def rounds(forks: pd.DataFrame, baseline: pd.DataFrame, metric: str, *, alpha: float = 0.05):
    """``(values, baseline values, paired)``: two servers' fork rows of one cell (:func:`forks`), paired by
    round where they have rounds enough in common for the signed-rank test to reach ``alpha``
    (:func:`.pairs.reach`: 6 at 0.05). Forks with the same ``suite`` and ``repeat`` were run one after another
    and share that round's machine. A fork whose round the other server has no fork in is left out. Forks with
    fewer rounds in common, a round key missing, or two forks of one side in a round, are judged apart
    (``paired`` False, every fork kept)."""
    apart = (forks[metric], baseline[metric], False)
    if not {"suite", "repeat"} <= set(forks.columns) & set(baseline.columns):
        return apart
    keyed = []
    for side in (forks, baseline):
        keys = list(zip(side["suite"].astype(object), side["repeat"].astype(object)))
        if any(s is None or s != s or r is None or r != r for s, r in keys) or len(set(keys)) != len(keys):
            return apart
        keyed.append(dict(zip(keys, side[metric])))
    shared = [k for k in keyed[0] if k in keyed[1]]
    if len(shared) < pairs.reach(alpha):
        return apart
    return (pd.Series([keyed[0][k] for k in shared], dtype=float), pd.Series([keyed[1][k] for k in shared],
                                                                             dtype=float), True)

