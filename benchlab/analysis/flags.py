"""Noise and validity flags: why a run or a cell of the runs frame should not be trusted, one line each.

A run is flagged from its own row (a busy load generator, errors, Little's law, the delayed-ACK signature,
a missed rate, shared cores, a failure); a cell from its repeats (throughput that varies, an unstable tail,
every repeat failed) and from the flags of its runs, in the flags frame (:mod:`benchlab.analysis.flagframe`, which
knows each window's standing). The limits are written once, here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..schema import ACCEPT_QUEUE_NOTE, ERROR_CAUSES, ERROR_KINDS, FLAGS
from .disturbance import dip_rule, interference_rule, steal_rule

CV_LIMIT = 0.05
TAIL_SPREAD_LIMIT = 3.0
GENERATOR_BUSY_LIMIT = 0.90
LITTLE_LIMIT = 3.0
RATE_SHORTFALL_LIMIT = 0.99
#: The share of the server's core the JIT's compiler threads may take in a measured window before it counts as
#: still warming (``jit_cpu_share``): above it the JIT's own cost alone could move the window's throughput by
#: more than that. Compile *time* is a poor measure of that cost on a contended core: a compile counts from start
#: to end, waits for the core included (measured here, Undertow at 200 connections: 9.2 s of compile time came
#: from 1.2 s of compiler CPU, and a warm JVM's recompiles come in bursts of 1-3 s of it, 0.1-0.3 s of CPU).
#: A run stored without the compiler's CPU is judged by its compile time's share, as it was before.
JIT_SHARE_LIMIT = 0.05
#: The GC pauses' share of the measured window above which the run measured the heap (hello on SerialGC
#: at 200 connections pauses about 1-3% here).
GC_SHARE_LIMIT = 0.10
#: Seconds a server may sit idle while the load tool is busy before the run is a stall, not a measurement.
IDLE_LIMIT_S = 2.0
SLEEP_DEFAULT_MS = 10.0  # servers.SCENARIOS["sleep"] asks /sleep?ms=10



def _explain(flag: str, **values) -> str:
    return FLAGS[flag].format(**values)


def errors_text(errors: float, counts: dict, connections=None, accept_queue=None, somaxconn=None) -> str:
    """The ``errors`` flag's line: how many failed, of which kind (``counts``: kind -> count), what usually
    causes each, and, when connect or read errors meet more connections than the accept queue holds
    (the server's ``accept_queue`` capped by the kernel's ``somaxconn``), that queue.

    >>> errors_text(30, {"read": 30}, connections=1000, accept_queue=100, somaxconn=4096)[:44]
    '30 failed requests, 30 read (connections res'
    """
    known = lambda v: None if v is None or v != v else v  # noqa: E731  NaN, as a frame has it, is unknown
    counts = {kind: known(counts.get(kind)) for kind in ERROR_KINDS}
    kinds = "; ".join(f"{counts[k]:.0f} {k} ({ERROR_CAUSES[k]})" for k in ERROR_KINDS if counts[k])
    text = _explain("errors", errors=errors, kinds=kinds or "of a kind the load tool did not say")
    connections, accept_queue, somaxconn = known(connections), known(accept_queue), known(somaxconn)
    queue = min((q for q in (accept_queue, somaxconn) if q is not None), default=None)
    if queue is not None and connections and connections > queue and (counts["connect"] or counts["read"]):
        text += ". " + ACCEPT_QUEUE_NOTE.format(connections=connections, queue=queue,
                                                 setting=accept_queue if accept_queue is not None else queue,
                                                 somaxconn=somaxconn if somaxconn is not None else float("nan"))
    return text


def _sleep_ms(scenario) -> float | None:
    """How long a sleep scenario waits: ``"sleep:40"`` 40 ms, ``"sleep"`` the built-in 10 ms
    (``servers.SCENARIOS``); None for any other scenario."""
    if scenario == "sleep":
        return SLEEP_DEFAULT_MS
    if isinstance(scenario, str) and scenario.startswith("sleep:") and scenario[6:].isdigit():
        return float(scenario[6:])
    return None


def run_flags(row) -> list[tuple[str, str]]:
    """The flags of one run (a row of the runs frame, or a dict of its columns): ``[(flag, explanation), ...]``.

    - ``generator_bound``: the load tool's CPU over the cores it could use, ``min(threads, load_cores)``
      when the run says how many threads it had: one saturated wrk thread on two cores is bound at 50%; a load
      spread over generators, each generator on its own cores (``generator_busy``: the busiest one's share).
    - ``littles_law``: closed-loop loads obey N = X * R, so connections / rps should be near the *mean*
      latency (not p50, which a skewed distribution leaves far below it); flagged beyond 3x either way.
    - ``delayed_ack``: p50 within 35-45 ms while the server idles (< 30% CPU) is the delayed-ACK
      signature, unless the scenario itself sleeps 30-50 ms, which explains that p50.
    - ``not_warm``: ``warmup="auto"`` reached its limit before the JVM was warm.
    - ``jit_active``, ``gc_heavy``: the JVM's own counters say its JIT's compiler threads took, or its GC
      paused it for, more than :data:`JIT_SHARE_LIMIT` / :data:`GC_SHARE_LIMIT` of the measured window.
    - ``server_idle``: the server sat near 0% CPU for :data:`IDLE_LIMIT_S` s or more while the load tool
      was busy: a stall, not a measurement.
    - ``drifting``: throughput in the second half of the measurement differs from the first half by more
      than the run's own noise allows (:mod:`benchlab.analysis.steady`).

    >>> [flag for flag, _ in run_flags({"load_cpu_mean": 97.0, "threads": 1, "load_cores": 2})]
    ['generator_bound']
    """
    return runs_flags(pd.DataFrame([dict(row)]))[0]


def _numbers(runs: pd.DataFrame, name: str) -> np.ndarray:
    """A column as floats, NaN where it is missing or not a number."""
    if name not in runs:
        return np.full(len(runs), np.nan)
    column = runs[name]
    if column.dtype.kind in "fiub":  # already numbers: to_numeric would only copy them, 34,000 times a fast tier
        return column.to_numpy(dtype=float, na_value=np.nan)
    return np.asarray(pd.to_numeric(column, errors="coerce"), dtype=float)


def _values(runs: pd.DataFrame, name: str) -> np.ndarray:
    """A column as Python objects (None where the column is missing)."""
    return runs[name].to_numpy(dtype=object) if name in runs else np.full(len(runs), None, dtype=object)


# --- the run rules: each takes the runs frame and gives (which runs, the explanation of run i) ---------------

def _errors(runs):
    errors = _numbers(runs, "errors_total")
    kinds = {k: _numbers(runs, f"errors_{k}") for k in ERROR_KINDS}
    queues = [_numbers(runs, c) for c in ("connections", "accept_queue", "somaxconn")]
    return ~np.isnan(errors) & (errors != 0), lambda i: errors_text(
        float(errors[i]), {k: float(v[i]) for k, v in kinds.items()}, *(float(q[i]) for q in queues))


def _generator_bound(runs):
    load_cpu, cores, threads = _numbers(runs, "load_cpu_mean"), _numbers(runs, "load_cores"), _numbers(runs, "threads")
    cores = np.where(np.isnan(cores) | (cores == 0), 1.0, cores)
    usable = np.where(threads > 0, np.minimum(threads, cores), cores)
    busy = load_cpu / (100.0 * usable)
    # a spread load: each generator judged on its own cores, the busiest one standing for the run
    spread, own_cores = _numbers(runs, "generator_busy"), _numbers(runs, "generator_cores")
    busy, usable = np.where(np.isnan(spread), busy, spread), np.where(np.isnan(spread), usable, own_cores)
    count = _numbers(runs, "generators")

    def explain(i: int) -> str:
        text = _explain("generator_bound", busy=float(busy[i]), usable=float(usable[i]))
        return text + (f" (the busiest of {count[i]:.0f} generators)" if count[i] > 1 else "")

    return busy > GENERATOR_BUSY_LIMIT, explain


def _known(x: np.ndarray) -> np.ndarray:
    """A number that is there and not zero."""
    return ~np.isnan(x) & (x != 0)


def _littles_law(runs):
    rps, mean, conns = _numbers(runs, "rps"), _numbers(runs, "lat_mean"), _numbers(runs, "connections")
    closed = np.array([load in ("duration", "count") for load in _values(runs, "load")], dtype=bool)
    streams = _numbers(runs, "streams")  # HTTP/2 keeps this many requests in flight on each connection
    expected = conns * np.where(np.isnan(streams), 1.0, streams) / rps
    ratio = mean / expected
    off = ~((1 / LITTLE_LIMIT <= ratio) & (ratio <= LITTLE_LIMIT))
    return closed & _known(rps) & _known(mean) & _known(conns) & off, lambda i: _explain(
        "littles_law", expected=float(expected[i]) * 1e3, mean=float(mean[i]) * 1e3)


def _delayed_ack(runs):
    p50, server_cpu = _numbers(runs, "p50"), _numbers(runs, "server_cpu_mean")
    explained = np.array([_sleep_explains(s) for s in _values(runs, "scenario")], dtype=bool)
    return (0.035 <= p50) & (p50 <= 0.045) & (server_cpu < 30) & ~explained, lambda i: _explain(
        "delayed_ack", p50=float(p50[i]) * 1e3, cpu=float(server_cpu[i]))


def _rate_shortfall(runs):
    target, sent = _numbers(runs, "target_rps"), _numbers(runs, "sent_rps")
    sent = np.where(np.isnan(sent), _numbers(runs, "rps"), sent)  # the rate sent where the driver says; else answers
    # and the answers over the attack with the wait for the last ones: a server that fell behind answers late
    sent = np.fmin(sent, _numbers(runs, "achieved_rps"))
    return _known(target) & (sent < RATE_SHORTFALL_LIMIT * target), lambda i: _explain(
        "rate_shortfall", achieved=float(sent[i]), target=float(target[i]), share=float(sent[i] / target[i]))


def _not_warm(runs):
    warmup_s = _numbers(runs, "warmup_s")  # warm is False when warmup="auto" hit its limit; None says nothing
    return np.array([warm is False for warm in _values(runs, "warm")], dtype=bool), lambda i: _explain(
        "not_warm", limit=0.0 if np.isnan(warmup_s[i]) else float(warmup_s[i]))


def _jit_active(runs):
    wall, cpu, compiled = _numbers(runs, "jit_share"), _numbers(runs, "jit_cpu_share"), _numbers(runs, "jit_compile_s")
    share = np.where(np.isnan(cpu), wall, cpu)

    def cost(i: int) -> str:
        if np.isnan(cpu[i]):
            return f"compiled for {wall[i]:.1%} of the wall time"
        return f"took {cpu[i]:.1%} of the server's core"

    return share > JIT_SHARE_LIMIT, lambda i: _explain(
        "jit_active", cost=cost(i), seconds=0.0 if np.isnan(compiled[i]) else float(compiled[i]))


def _gc_heavy(runs):
    gc = _numbers(runs, "gc_share")
    return gc > GC_SHARE_LIMIT, lambda i: _explain("gc_heavy", share=float(gc[i]))


def _server_idle(runs):
    idle = _numbers(runs, "server_idle_s")
    return idle >= IDLE_LIMIT_S, lambda i: _explain("server_idle", seconds=float(idle[i]))


def _drifting(runs):
    drift, limit = _numbers(runs, "drift"), _numbers(runs, "drift_limit")
    return np.abs(drift) > limit, lambda i: _explain("drifting", drift=float(drift[i]), limit=float(limit[i]))


def _driver_note(runs):
    notes = _values(runs, "note")
    return (np.array([isinstance(note, str) and bool(note) for note in notes], dtype=bool),
            lambda i: _explain("driver_note", note=notes[i]))


#: What a capacity search that did not end at the server's own limit stopped at (:func:`benchlab.running.cost.search`).
UNFOUND = {"load tool": "the load tool could not send a higher rate", "limit": "its first rate already failed the "
           "limit: start lower", "steps": "it ran out of steps: start nearer the capacity",
           "hold": "no whole window kept the rate found, nor the ones tried a step lower: its knee is not sustained"}


def _streams_queued(runs):
    streams, limit = _numbers(runs, "streams"), _numbers(runs, "stream_limit")
    return _known(limit) & (streams > limit), lambda i: _explain(
        "streams_queued", streams=float(streams[i]), limit=float(limit[i]))


def _capacity_unfound(runs):
    by = _values(runs, "capacity_by")
    return (np.array([b in UNFOUND for b in by], dtype=bool),
            lambda i: _explain("capacity_unfound", why=UNFOUND[by[i]]))


def _profiled(runs):
    samples = _numbers(runs, "profile_samples")
    marked = np.array([v is True or v == 1 for v in _values(runs, "profiled")], dtype=bool)
    return marked, lambda i: _explain("profiled", samples=float(np.nan_to_num(samples[i])))


def _shared_cores(runs):
    return _shared(_values(runs, "server_cpus"), _values(runs, "load_cpus")), lambda i: FLAGS["shared_cores"]


#: The run rules, in the order a run's flags are listed. A failed run has the one flag ``failed``.
RUN_RULES = (("errors", _errors), ("generator_bound", _generator_bound), ("littles_law", _littles_law),
             ("delayed_ack", _delayed_ack), ("rate_shortfall", _rate_shortfall), ("not_warm", _not_warm),
             ("jit_active", _jit_active), ("gc_heavy", _gc_heavy), ("server_idle", _server_idle),
             ("interference", interference_rule), ("steal", steal_rule), ("dip", dip_rule),
             ("capacity_unfound", _capacity_unfound), ("streams_queued", _streams_queued), ("drifting", _drifting),
             ("driver_note", _driver_note), ("profiled", _profiled),
             ("shared_cores", _shared_cores))


def runs_flags(runs: pd.DataFrame) -> list[list[tuple[str, str]]]:
    """The flags of every run of the frame, each rule computed column by column (10,000 runs took seconds
    row by row), in :data:`RUN_RULES`' order.

    >>> frame = pd.DataFrame({"status": ["ok", "failed"], "error": [None, "ServerError: boom"]})
    >>> [[flag for flag, _ in found] for found in runs_flags(frame)]
    [[], ['failed']]
    """
    found: list[list[tuple[str, str]]] = [[] for _ in range(len(runs))]
    error = _values(runs, "error")
    failed = np.array([s == "failed" for s in _values(runs, "status")], dtype=bool)
    for i in np.flatnonzero(failed):
        found[i].append(("failed", _explain("failed", error=str(error[i] or "unknown error").splitlines()[0])))
    for i in np.flatnonzero(np.array([s == "retaken" for s in _values(runs, "status")], dtype=bool)):
        found[i].append(("retaken", FLAGS["retaken"]))
    with np.errstate(divide="ignore", invalid="ignore"):  # a missing number is NaN, and NaN compares False
        for flag, rule in RUN_RULES:
            mask, explain = rule(runs)
            for i in np.flatnonzero(mask & ~failed):
                found[i].append((flag, explain(i)))
    return found


def _sleep_explains(scenario) -> bool:
    sleep = _sleep_ms(scenario)
    return sleep is not None and 30 <= sleep <= 50


def _shared(server_cpus: np.ndarray, load_cpus: np.ndarray) -> np.ndarray:
    """Whether each run's server and load cores overlap, as run_flags judges it; each pair parsed once."""
    from ..cores import expand

    seen: dict = {}
    out = np.zeros(len(server_cpus), dtype=bool)
    for i, (server, load) in enumerate(zip(server_cpus, load_cpus)):
        if server is None or load is None or pd.isna(server) is True or pd.isna(load) is True:
            continue  # a failed run's missing cores are NaN in a frame
        try:
            known = seen.get((server, load))
        except TypeError:  # a list of cores: not hashable, judge it on its own
            known = None
        if known is None:
            known = bool(set(expand(server)) & set(expand(load)))
            try:
                seen[(server, load)] = known
            except TypeError:
                pass
        out[i] = known
    return out
