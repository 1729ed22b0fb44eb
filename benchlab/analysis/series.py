"""A measured window second by second: throughput, the run's own CPU, what other processes and the host took of
its cores, and the JVM's JIT and GC, on the monitor's clock.

Throughput comes from the bytes the load tool read (``/proc/<pid>/io``, which the kernel keeps at no cost to the
tool; a per-request callback inside wrk would cost it a Lua call an answer), scaled so that the window's mean is
the tool's own requests/s; the server's written bytes stand in where the load tool's are not known (a load tool
in a container). The other processes' CPU is the cores' user+system time less the run's own processes' (the
server's tree on the server's cores; the load tool's tree and benchlab's own process on the load's), read a
quarter second at a time (:mod:`benchlab.running.machine`).

:func:`per_second` gives a run's series as a frame; :func:`disturbance` the figures the flags ``interference``,
``steal`` and ``dip`` read (:mod:`benchlab.analysis.flags`), stored with the run as it is measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from . import changepoints, steady

#: The series' columns: the second (its start, seconds since the window began), then each figure in that second.
COLUMNS = ("t", "rps", "server_cpu", "load_cpu", "benchlab_cpu", "other_server", "other_load", "steal", "jit_cpu",
           "gc", "disturbed")

#: A second in which other processes took more than this share of the server's or the load's cores, or the host
#: stole more than :data:`STEAL_LIMIT` of them, is disturbed. Derived from clean windows measured here
#: (benchmarks/disturbance.py; docs/machine.md): what the kernel's own threads and the monitor leave unattributed.
OTHER_LIMIT = 0.10
STEAL_LIMIT = 0.05
#: Dips are looked for in half-seconds: ten points in a 5 s window.
DIP_BIN = 0.5


def _by_role(samples: Sequence, role: str) -> tuple[np.ndarray, np.ndarray]:
    rows = sorted((s[0], s[2]) for s in samples if s[1] == role and s[2] is not None)
    if not rows:
        return np.zeros(0), np.zeros(0)
    t, v = np.array(rows, dtype=float).T
    return _midpoints(t), v


def _midpoints(t: np.ndarray) -> np.ndarray:
    """A sample's figure covers the interval since the one before it: it is placed at that interval's middle."""
    if len(t) < 2:
        return t
    step = np.diff(t)
    return t - np.concatenate([[float(np.median(step))], step]) / 2


def _binned(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The mean of ``v`` in each bin of ``edges`` (NaN where a bin has none)."""
    out = np.full(len(edges) - 1, np.nan)
    if len(t) == 0:
        return out
    where = np.digitize(t, edges) - 1
    for i in range(len(out)):
        inside = v[where == i]
        if len(inside):
            out[i] = inside.mean()
    return out


def _cumulative(rows: Sequence, field: int, edges: np.ndarray) -> np.ndarray:
    """How much a cumulative counter (column ``field`` of the JVM's counter rows) grew in each bin, per second."""
    known = sorted((r[0], r[field]) for r in rows if len(r) > field and r[field] is not None)
    if len(known) < 2:
        return np.full(len(edges) - 1, np.nan)
    t, v = np.array(known, dtype=float).T
    at = np.interp(edges, t, v, left=np.nan, right=np.nan)
    return np.diff(at) / np.diff(edges)


def throughput(samples: Sequence, rps: float | None, edges: np.ndarray) -> np.ndarray:
    """Requests/s in each bin: the load tool's read bytes (else the server's written ones) a second, scaled so
    that their mean over the window is ``rps``; NaN where no bytes moved or nothing is known."""
    for role in ("load", "server"):
        rates = steady.rates(samples, role)
        if len(rates) >= 2:
            break
    else:
        return np.full(len(edges) - 1, np.nan)
    t, v = np.array(rates, dtype=float).T
    per_bin = _binned(t, v, edges)
    mean = float(np.mean(v))
    scale = (rps / mean) if rps and mean > 0 else 1.0
    return per_bin * scale


def per_second(samples: Sequence, counters: Sequence = (), machine: Sequence = (), *, rps: float | None = None,
           seconds: float | None = None, server_cores: int = 1, load_cores: int = 1, benchlab_on_load: bool = True,
           width: float = 1.0) -> pd.DataFrame:
    """One window's series: a row per ``width`` seconds (:data:`COLUMNS`); CPU figures in cores (1.0 is one
    busy core), ``gc`` the share of the second the GC paused the server, ``disturbed`` whether other processes or
    the host took more than their limit of a group of cores then. ``seconds``: how long the load ran (the
    tool's own elapsed time); the seconds after it (the tool writing its report) are left out.

    >>> rows = [(t / 4, "load", 50.0, 1, 1000.0 * t) for t in range(9)]
    >>> rows += [(t / 4, "server", 90.0, 1, None) for t in range(9)]
    >>> cores = [(t / 4, g, busy, 0.0, 0.0) for t in range(1, 9) for g, busy in (("server", 140.0), ("load", 52.0))]
    >>> per_second(rows, machine=cores, rps=100.0)[["t", "server_cpu", "other_server", "disturbed"]].values.tolist()
    [[0.0, 0.9, 0.5, True], [1.0, 0.9, 0.5, True]]
    """
    times = [s[0] for s in samples] + [m[0] for m in machine]
    if not times:
        return pd.DataFrame(columns=list(COLUMNS))
    end = max(times) if not seconds else min(max(times), seconds)
    edges = np.arange(0.0, max(math.floor(end / width + 1e-9), 1) * width + width / 2, width)
    if len(edges) < 2:
        edges = np.array([0.0, width])
    cpu = {role: _binned(*_by_role(samples, role), edges) / 100.0 for role in ("server", "load", "benchlab")}
    groups = {group: _group(machine, group, edges) for group in ("server", "load")}
    own_load = cpu["load"] + (np.nan_to_num(cpu["benchlab"]) if benchlab_on_load else 0.0)
    if not any(m[1] == "load" for m in machine):  # the load shares the server's cores: one group holds them all
        own_server = cpu["server"] + np.nan_to_num(own_load)
    else:
        own_server = cpu["server"]
    other_server = np.maximum(0.0, groups["server"]["busy"] - np.nan_to_num(own_server))
    other_load = np.maximum(0.0, groups["load"]["busy"] - np.nan_to_num(own_load))
    steal = np.nan_to_num(groups["server"]["steal"]) + np.nan_to_num(groups["load"]["steal"])
    steal = np.where(np.isnan(groups["server"]["steal"]) & np.isnan(groups["load"]["steal"]), np.nan, steal)
    with np.errstate(invalid="ignore"):
        disturbed = ((other_server / max(server_cores, 1) > OTHER_LIMIT) | (other_load / max(load_cores, 1)
                                                                            > OTHER_LIMIT)
                     | (steal / max(server_cores + load_cores, 1) > STEAL_LIMIT))
    frame = pd.DataFrame({
        "t": edges[:-1], "rps": throughput(samples, rps, edges), "server_cpu": cpu["server"],
        "load_cpu": cpu["load"], "benchlab_cpu": cpu["benchlab"], "other_server": other_server,
        "other_load": other_load, "steal": steal, "jit_cpu": _cumulative(counters, 8, edges),
        "gc": _cumulative(counters, 5, edges), "disturbed": disturbed})
    return frame.round({c: 4 for c in COLUMNS if c not in ("t", "disturbed")})


def _group(machine: Sequence, group: str, edges: np.ndarray) -> dict[str, np.ndarray]:
    rows = sorted((m[0], m[2], m[4]) for m in machine if m[1] == group)
    if not rows:
        return {"busy": np.full(len(edges) - 1, np.nan), "steal": np.full(len(edges) - 1, np.nan)}
    t, busy, steal = np.array(rows, dtype=float).T
    t = _midpoints(t)
    return {"busy": _binned(t, busy, edges) / 100.0, "steal": _binned(t, steal, edges) / 100.0}


def disturbance(series: pd.DataFrame, *, server_cores: int = 1, load_cores: int = 1) -> dict:
    """What the flags read of a window's series (:func:`per_second`): the seconds other processes took more than
    :data:`OTHER_LIMIT` of the server's cores (``other_server_s``) and how many cores they took then, on average
    (``other_server_cpu``); the same of the load's cores; the seconds and cores of steal; None where the
    machine was not watched.

    >>> s = pd.DataFrame({"other_server": [0.0, 0.5, 0.5, 0.02], "other_load": [0.0] * 4, "steal": [0.0] * 4})
    >>> disturbance(s)["other_server_s"], disturbance(s)["other_server_cpu"]
    (2.0, 0.5)
    """
    width = float(series["t"].diff().median()) if "t" in series and len(series) > 1 else 1.0
    out: dict = {}
    for name, column, cores, limit in (("other_server", "other_server", server_cores, OTHER_LIMIT),
                                       ("other_load", "other_load", load_cores, OTHER_LIMIT),
                                       ("steal", "steal", server_cores + load_cores, STEAL_LIMIT)):
        values = pd.to_numeric(series.get(column, pd.Series(dtype=float)), errors="coerce").to_numpy(dtype=float)
        if len(values) == 0 or np.isnan(values).all():
            out[f"{name}_s"], out[f"{name}_cpu"] = None, None
            continue
        over = values / max(cores, 1) > limit
        out[f"{name}_s"] = round(float(over.sum()) * width, 3)
        out[f"{name}_cpu"] = round(float(values[over].mean()), 3) if over.any() else 0.0
    return out


def dip(samples: Sequence, *, width: float = DIP_BIN) -> dict:
    """The deepest lasting dip in a window's own throughput: ``{"dip", "dip_s"}``, the lowest valley's level
    (a segment with higher ones on both sides) over the highest segment's, less 1 (-0.2: a fifth lower), and its
    length in seconds, from change points on the half-seconds' logs
    (:func:`benchlab.analysis.changepoints.segments`); 0.0 and 0.0 when the window has no valley (one segment, or
    one step up or down: the drift flag's); None and None when the bytes say too little (under 4 bins).

    >>> flat = [(t / 4, "load", 50.0, 1, 1000.0 * t) for t in range(41)]
    >>> dip(flat)
    {'dip': 0.0, 'dip_s': 0.0}
    >>> dipped = [(t / 4, "load", 50.0, 1, 1000.0 * t - 600.0 * min(max(t - 12, 0), 16)) for t in range(41)]
    >>> found = dip(dipped); round(found["dip"], 2), found["dip_s"]
    (-0.6, 4.0)
    >>> stepped = [(t / 4, "load", 50.0, 1, 1000.0 * t + 3000.0 * max(t - 20, 0)) for t in range(41)]
    >>> dip(stepped)
    {'dip': 0.0, 'dip_s': 0.0}
    """
    rates = steady.rates(samples, "load")
    if len(rates) < 4:
        rates = steady.rates(samples, "server")
    if not rates:
        return {"dip": None, "dip_s": None}
    t, v = np.array(rates, dtype=float).T
    edges = np.arange(math.floor(t.min() / width) * width, t.max() + width, width)
    values = _binned(t, v, edges)
    values = values[~np.isnan(values)]
    if len(values) < 4 or (values <= 0).any():
        return {"dip": None, "dip_s": None}
    found = changepoints.segments(values)
    # a dip is a valley: a segment with a higher one before it and after it. A single step, up or down, is the
    # server changing speed (still warming, or slowing down): the drift flag's, and no retake would cure it
    valleys = [(i, s) for i, s in enumerate(found)
               if max((b.mean for b in found[:i]), default=0.0) > s.mean < max((a.mean for a in found[i + 1:]),
                                                                                default=0.0)]
    if not valleys:
        return {"dip": 0.0, "dip_s": 0.0}
    low = min((s for _, s in valleys), key=lambda s: s.mean)
    high = max(found, key=lambda s: s.mean)
    return {"dip": round(low.mean / high.mean - 1.0, 4), "dip_s": round(low.length * width, 3)}


def of_run(run) -> pd.DataFrame | None:
    """A stored run's series (:func:`per_second`), with its ``id``, ``server``, ``status``, ``fork`` and ``window``;
    None for a run without samples (a failed one).

    >>> from benchlab.store.results import Run
    >>> rows = [(t / 4, "load", 50.0, 1, 1000.0 * t) for t in range(9)]
    >>> run = Run(id="r", params={"server": "s", "server_cpus": [0], "load_cpus": [1]}, metrics={"rps": 4e3},
    ...           metadata={}, samples=rows)
    >>> of_run(run)[["id", "t", "rps"]].values.tolist()
    [['r', 0.0, 4000.0], ['r', 1.0, 4000.0]]
    """
    if not run.samples:
        return None
    params, metrics = run.params, run.metrics
    cores = (run.metadata or {}).get("cores") or {}
    spare = cores.get("benchlab_cpus") if isinstance(cores, dict) else None
    load_cpus = params.get("load_cpus") or []
    frame = per_second(run.samples, run.counters, run.machine, rps=metrics.get("rps"), seconds=metrics.get("elapsed_s"),
                   server_cores=len(params.get("server_cpus") or []) or 1,
                   load_cores=len([c for c in load_cpus if c not in (params.get("server_cpus") or [])]) or 1,
                   benchlab_on_load=not spare or set(spare) <= set(load_cpus))
    frame.insert(0, "window", params.get("window") or 1)
    frame.insert(0, "fork", params.get("fork") or f"{run.id}@{run.started_at}")
    frame.insert(0, "status", run.status)
    frame.insert(0, "server", params.get("server"))
    frame.insert(0, "id", run.id)
    return frame
