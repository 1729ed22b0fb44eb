"""Cells of the runs frame: the runs that measured one setup, the unit every statistic is taken over.

A cell is the load (scenario, model, driver, connections, rate, users x loops) *and* everything else
that changes what is measured: backend, duration, warm-up, timeout, memory, JVM options, java, CDS,
the cores, and the label (an imported run is not a repeat of a local one). Runs that differ in any of
these are never pooled; the summary shows a setup column only where it varies.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .schema import CELL

#: What else, beside the load, makes two runs measure different things.
SETUP = ("backend", "duration", "warmup", "timeout", "memory", "jvm_opts", "java", "cds", "server_cpus",
         "load_cpus", "label")


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
    """``(keys, groupby)``: the runs by cell; a missing value is ``"-"`` (:func:`restore` undoes it)."""
    keys, filled = _filled(runs)
    return keys, filled.groupby(keys, sort=False, dropna=False)


def members(runs: pd.DataFrame):
    """``(keys, [(cell, positions), ...])``: each cell as :func:`group` names and orders it (a tuple of
    keys), with the positions of its runs in ``runs``, in order; no sub-frame is built per cell."""
    keys, filled = _filled(runs)
    number = filled.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    order = np.argsort(number, kind="stable")
    columns = [filled[c].to_numpy(dtype=object) for c in keys]
    return keys, [(tuple(column[positions[0]] for column in columns), positions)
                  for positions in np.split(order, np.flatnonzero(np.diff(number[order])) + 1) if len(positions)]


def _filled(runs: pd.DataFrame):
    keys = [c for c in (*CELL, *SETUP) if c in runs]
    return keys, runs.assign(**{c: _keys(runs[c]) for c in keys})


def _keys(column: pd.Series) -> pd.Series:
    """``column.astype(object).map(key)``, without a Python call per run where the dtype answers: numbers
    with no missing value are their own keys, and text only needs its missing values filled."""
    if len(column) == 0:  # map() makes an empty column object, whatever it was
        return column.astype(object)
    if column.dtype != object and pd.api.types.is_string_dtype(column.dtype):
        return column.fillna("-")
    if column.dtype in (np.int64, np.float64, np.bool_) and not column.isna().any():
        return column
    return column.astype(object).map(key)


def restore(value):
    return None if value == "-" else value


def varying(frame: pd.DataFrame) -> list[str]:
    """The cell columns whose value differs between rows: the ones worth showing."""
    return [c for c in (*CELL, *SETUP) if c in frame and frame[c].astype(str).nunique(dropna=False) > 1]
