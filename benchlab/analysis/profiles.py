"""Why one server is faster: where a profiled window's CPU went, by layer, per request, against a baseline.

A profiled window (``metrics["profiled"]``) is one extra window of a fork, taken with async-profiler loaded into
the server's JVM (event ``cpu``: every thread of the process on a CPU, the GC's and the JIT's too, kernel frames
included), which enters no other statistic. Its folded stacks (Brendan Gregg's collapsed format, one line per
distinct stack, root first, then its sample count) lie beside its run.json, gzip'd. Since event ``cpu`` samples
every thread on a CPU, a stack's share of the window's samples is its share of the server's CPU; times the fork's
CPU per request (the mean of its used windows, :func:`benchlab.analysis.validity.fit`), it is microseconds of CPU
per request.

Each stack falls in one layer of :data:`LAYERS`: walking from its leaf toward its root, the first frame that
matches a layer's patterns decides, so a kernel leaf under Tomcat's socket write is "kernel and syscalls" and a
``String.hashCode`` under ``Http11InputBuffer.parseHeaders`` is "HTTP parsing". A layer's difference between two
servers is taken over forks, Welch's interval of a difference of means (:func:`.intervals.difference_interval`).
"""

from __future__ import annotations

import functools
import gzip
import io
import math
import re
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ResultsError, UsageError
from ..schema import CELL
from ..store.files import MAX_BYTES, read_bytes, why
from ..store.results import Run, frame
from ..store.stacks import parse
from . import cells, intervals

#: The layers a server's CPU is told in, each with the patterns (regular expressions, searched in one frame's name
#: as async-profiler writes it) that claim a frame; the last, with none, takes what no frame claims. A frame is
#: tried against the layers in this order, so the narrower pattern of an earlier layer wins (Undertow's
#: ``io/undertow/server/protocol/http`` is HTTP parsing before ``io/undertow/server`` is servlet dispatch).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # the kernel's frames, its time page, and the C library's thin wrappers that enter it (futex: a park or unpark)
    ("kernel and syscalls", (r"_\[k\]$", r"^\[vdso\]$", r"^__GI_", r"^__libc_", r"futex", r"^__lll_lock_wake",
                             r"^(writev|readv|read|write|send|sendto|sendmsg|recv|recvfrom|recvmsg|epoll_wait|"
                             r"epoll_ctl|accept4?|syscall|clock_gettime.*|___?pthread_cond_\w+)$")),
    # the collector's operations and threads, of every collector: Serial (GenCollectedHeap, DefNew), G1, Parallel,
    # Z, Shenandoah; the allocation slow path is not here: it is the allocating code's cost
    ("GC", (r"^VM_\w*(GC|Collect)", r"^(G1|Z|Shenandoah|PS|ParallelScavenge|DefNew|Tenured|SerialHeap|"
            r"CardTableRS|ClearNonclean|DirtyCardToOop|MarkSweep|WeakProcessor|ReferenceProcessor)\w*::",
            r"^GenCollectedHeap::(do_collection|collect|process_roots|full_process_roots|young_process_roots|"
            r"satisfy_failed_allocation)", r"^(GCTaskThread|ConcurrentGCThread|WorkerThread)::")),
    # the compilers: their broker and threads, C2 (Compile, its Phases, the parser, the matcher), C1, and the
    # compiler interface (ci*) they read the JVM through
    ("JIT", (r"^(CompileBroker|C2Compiler|Compiler|Compile|Compilation|Parse|ParseGenerator|Matcher|"
             r"PhaseOutput|InlineTree|LinearScan|GraphBuilder)::", r"^Phase[A-Z]\w*::", r"^ci[A-Z]\w*::")),
    # the server's sockets, selectors, event loops and the thread pools that run them
    # (not Jetty's AutoLock: a lock helper used everywhere in Jetty, whose caller says what it locks for)
    ("server I/O", (r"^org/apache/tomcat/util/(net|threads)/", r"^org/xnio/", r"^org/eclipse/jetty/io/",
                    r"^org/eclipse/jetty/util/thread/(QueuedThreadPool|ReservedThreadExecutor|strategy/)",
                    r"^io/undertow/(conduits|connector)/", r"^io/undertow/server/DefaultByteBufferPool",
                    r"^io/netty/(channel|buffer|util/concurrent)/", r"^reactor/netty/",
                    r"^sun/nio/ch/", r"^java/nio/channels/", r"^Java_sun_nio_ch_")),
    # reading the request and writing the response's head: Tomcat's coyote, Jetty's http, Undertow's protocol
    ("HTTP parsing", (r"^org/apache/coyote/", r"^org/apache/tomcat/util/(http|buf)/",
                      r"^org/eclipse/jetty/http/", r"^org/eclipse/jetty/server/internal/HttpConnection",
                      r"^io/undertow/server/protocol/http/", r"^io/undertow/util/(HttpString|HeaderMap|Headers)",
                      r"^io/netty/handler/codec/http")),
    ("servlet dispatch", (r"^jakarta/servlet/", r"^javax/servlet/", r"^org/apache/catalina/", r"^io/undertow/",
                          r"^org/eclipse/jetty/(ee10|ee9|ee8|server|session)/")),
    ("Spring MVC", (r"^org/springframework/",)),
    ("controller", (r"^dev/benchlab/",)),
    ("JVM and other", ()),
)
#: Where a stack no frame of which a layer claims falls.
OTHER = LAYERS[-1][0]
#: What a fork's CPU per request was taken from: its used windows, or (when it has none) the profiled window itself.
COST_FROM = ("fork", "profiled window")
#: The most a profile may hold once unzipped: a 5 s window's stacks are 4-5 MB of text.
MAX_TEXT = 512 * 2**20
#: The columns of :func:`stacks`; :func:`layers` keeps the fork's and adds its own.
FORK = ("server", *CELL, "fork")
STACKS = (*FORK, "id", "stack", "frame", "layer", "samples", "share", "us_per_request", "cpu_per_request",
          "cost_from")
LAYER_COLUMNS = (*FORK, "layer", "samples", "share", "us_per_request", "cpu_per_request", "cost_from")

_COMPILED = tuple((name, re.compile("|".join(patterns))) for name, patterns in LAYERS if patterns)


def profiled(record: Run) -> bool:
    """Whether ``record`` is a finished profiled window (``metrics["profiled"]``)."""
    return record.status == "ok" and bool(record.metrics.get("profiled"))


def read(record: Run) -> dict[str, int]:
    """The folded stacks of a profiled window (a run): ``{stack: samples}``, frames root first joined by ``;``.

    A missing, unreadable or damaged file is a :class:`~benchlab.errors.ResultsError` that names it, in one line.

    Example
    -------
    >>> read(suite.records[0])["java/lang/Thread.run;org/xnio/nio/WorkerThread.run"]   # doctest: +SKIP
    12
    """
    said = record.metadata.get("profile")
    name = said.get("file") if isinstance(said, dict) else None
    name = name if isinstance(name, str) and name and "/" not in name and not name.startswith(".") else \
        "profile.collapsed.gz"
    path = Path(record.directory or ".") / name
    try:
        text = _unzipped(read_bytes(path, limit=MAX_BYTES), name).decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise ResultsError(f"{path}: {why(exc)}: the profile cannot be read") from None
    try:
        return parse(text)
    except ValueError as exc:
        raise ResultsError(f"{path}: {exc}: the profile is damaged") from None


def _unzipped(data: bytes, name: str) -> bytes:
    if not name.endswith(".gz"):
        return data
    # gzip.decompress has no cap: a small file could unzip to gigabytes, so stream it and stop past MAX_TEXT
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
        text = stream.read(MAX_TEXT + 1)
    if len(text) > MAX_TEXT:
        raise ValueError(f"more than {MAX_TEXT} bytes unzipped")
    return text


@functools.lru_cache(maxsize=1 << 16)
def frame_layer(name: str) -> str | None:
    """The layer whose patterns claim the frame ``name`` first, or None.

    >>> frame_layer("tcp_sendmsg_[k]"), frame_layer("org/apache/coyote/http11/Http11Processor.service")
    ('kernel and syscalls', 'HTTP parsing')
    >>> frame_layer("java/util/HashMap.get") is None
    True
    """
    return next((layer for layer, pattern in _COMPILED if pattern.search(name)), None)


def layer(stack: str) -> str:
    """The layer of a folded stack: its leaf's, else the first frame's toward the root that a layer claims.

    >>> layer("java/lang/Thread.run;org/apache/coyote/http11/Http11InputBuffer.parseHeaders;java/lang/String.hashCode")
    'HTTP parsing'
    """
    for name in reversed(stack.split(";")):
        found = frame_layer(name)
        if found:
            return found
    return OTHER


def _costs(runs: pd.DataFrame) -> dict[str, float]:
    """Each fork's mean CPU per request over its used windows (never its profiled ones)."""
    from .validity import fit

    if runs.empty:
        return {}
    used = runs[fit(runs)]  # never a profiled window: its flag leaves it out
    cost = pd.to_numeric(used["cpu_per_request"], errors="coerce")
    means = cost.groupby(cells.fork_keys(used)).mean()
    return {fork: float(value) for fork, value in means.items() if math.isfinite(value)}


def stacks(records: Iterable[Run], *, folded: Sequence[dict | None] | None = None,
           runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The profiled windows' stacks, tidy: one row per fork and stack (:data:`STACKS`).

    ``share`` is the stack's samples over its window's, ``us_per_request`` the fork's CPU per request times that
    share, in microseconds; ``cpu_per_request`` (seconds) is the mean of the fork's used windows, or where it has
    none the profiled window's own, as ``cost_from`` says. ``folded``: each record's stacks where the caller read
    them (:meth:`benchlab.Suite.profiles`, a damaged file None), else read here; ``runs``: the records' frame.

    Example
    -------
    >>> stacks(suite.records).groupby("layer")["share"].sum()   # doctest: +SKIP
    """
    records = tuple(records)
    folded = [read(r) if profiled(r) else None for r in records] if folded is None else folded
    costs = _costs(frame(records) if runs is None else runs)
    parts = [_window(record, found, costs) for record, found in zip(records, folded)
             if found and profiled(record)]
    if not parts:
        return pd.DataFrame(columns=list(STACKS))
    return pd.concat(parts, ignore_index=True)[list(STACKS)]


def _window(record: Run, found: dict[str, int], costs: dict[str, float]) -> pd.DataFrame:
    """One profiled window's stacks, with its fork's cell and cost."""
    row = record.row()
    fork = cells.fork_key(record.params.get("fork"), record.id, record.started_at)
    own = pd.to_numeric(pd.Series([record.metrics.get("cpu_per_request")]), errors="coerce").iloc[0]
    cost, source = (costs[fork], COST_FROM[0]) if fork in costs else (float(own), COST_FROM[1])
    samples = np.fromiter(found.values(), dtype=np.int64, count=len(found))
    share = samples / samples.sum() if samples.sum() else np.zeros(len(samples))
    names = list(found)
    table = pd.DataFrame({"stack": names, "frame": [s.rpartition(";")[2] for s in names],
                          "layer": [layer(s) for s in names], "samples": samples, "share": share,
                          "us_per_request": share * cost * 1e6})
    return table.assign(**{c: row.get(c) for c in ("server", *CELL)}, fork=fork, id=record.id,
                        cpu_per_request=cost, cost_from=source)


def layers(stacks: pd.DataFrame) -> pd.DataFrame:
    """Per fork and layer (:data:`LAYER_COLUMNS`): its samples, its share of the fork's and its microseconds of CPU
    per request; a layer a fork never entered is there with zeros, so every fork has every layer of :data:`LAYERS`.

    >>> layers(stacks(suite.records)).pivot_table("share", "layer", "server")   # doctest: +SKIP
    """
    if stacks is None or stacks.empty:
        return pd.DataFrame(columns=list(LAYER_COLUMNS))
    names = [name for name, _ in LAYERS]
    counted = stacks.groupby(["fork", "layer"], sort=False)["samples"].sum()
    forks = stacks.drop_duplicates("fork").set_index("fork")
    every = pd.MultiIndex.from_product([forks.index, names], names=["fork", "layer"])
    table = counted.reindex(every, fill_value=0).reset_index()
    totals = table.groupby("fork", sort=False)["samples"].transform("sum").astype(float)
    table["share"] = np.where(totals > 0, table["samples"] / totals.where(totals > 0, 1.0), 0.0)
    table = table.join(forks[[c for c in LAYER_COLUMNS if c in forks and c not in table]], on="fork")
    table["us_per_request"] = table["share"] * table["cpu_per_request"].astype(float) * 1e6
    return table[list(LAYER_COLUMNS)]


def table(stacks: pd.DataFrame) -> pd.DataFrame:
    """Microseconds of CPU a request, a row per layer and a column per server, the mean over its forks: what the
    terminal and compare.ipynb show first.

    >>> table(stacks(suite.records)).round(2)   # doctest: +SKIP
    """
    return layers(stacks).pivot_table("us_per_request", "layer", "server", aggfunc="mean", sort=False)


#: The columns of :func:`differences`.
DIFFERENCES = ("server", "baseline", *CELL, "layer", "us_per_request", "baseline_us_per_request", "difference",
               "low", "high", "forks", "baseline_forks", "explains")


def differences(layers: pd.DataFrame, baseline: str | None, *, alpha: float = 0.05) -> pd.DataFrame:
    """Per cell, server (not ``baseline``) and layer: how many more microseconds of CPU a request takes in that
    layer than on ``baseline``, the means over forks, with Welch's interval at ``1 - alpha`` over forks (NaN with a
    single fork a side, or where no fork differs from another), the forks each side, and ``explains``: the layer's
    part of the server's whole difference (the layers' differences add up to it). A server's layers come in the
    order of how much of that difference they explain, the largest (either way) first.

    Example
    -------
    >>> differences(layers(stacks(suite.records)), "spring-tomcat").head(3)   # doctest: +SKIP
    """
    if layers is None or layers.empty:
        return pd.DataFrame(columns=list(DIFFERENCES))
    servers = list(dict.fromkeys(layers["server"]))
    if baseline is None or baseline not in servers:
        raise UsageError(f"no profiled window of {baseline!r} to compare against: give baseline= one of "
                         f"{', '.join(map(str, servers))}")
    keys, groups = cells.group(layers)
    rows: list[dict] = []
    for cell, group in groups:
        cell = cell if isinstance(cell, tuple) else (cell,)
        described = {c: cells.restore(v) for c, v in zip(keys, cell)}
        base = _matrix(group[group["server"] == baseline])
        for server, mine in group[group["server"] != baseline].groupby("server", sort=False):
            rows.extend({**row, **described} for row in _against(server, _matrix(mine), baseline, base, alpha))
    return pd.DataFrame(rows, columns=list(DIFFERENCES))


def _matrix(side: pd.DataFrame) -> pd.DataFrame:
    """One side's microseconds per request: a row per layer (in :data:`LAYERS`' order), a column per fork."""
    wide = side.pivot_table(index="layer", columns="fork", values="us_per_request", aggfunc="sum", fill_value=0.0)
    return wide.reindex([name for name, _ in LAYERS], fill_value=0.0)


def _against(server: str, mine: pd.DataFrame, baseline: str, base: pd.DataFrame, alpha: float) -> list[dict]:
    a, b = mine.to_numpy(dtype=float), base.to_numpy(dtype=float)
    if not b.shape[1]:
        return []  # the baseline has no profiled fork in this cell: nothing to tell the difference from
    low, high = intervals.difference_interval(a, b, alpha)
    means, base_means = a.mean(axis=1), b.mean(axis=1)
    difference = means - base_means
    whole = difference.sum()
    order = np.argsort(-np.abs(difference), kind="stable")
    return [{"server": server, "baseline": baseline, "layer": mine.index[i], "us_per_request": means[i],
             "baseline_us_per_request": base_means[i], "difference": difference[i], "low": low[i], "high": high[i],
             "forks": a.shape[1], "baseline_forks": b.shape[1],
             "explains": difference[i] / whole if whole else math.nan} for i in order]


#: The columns of :func:`slowdown`.
SLOWDOWN = ("server", *CELL, "forks", "ratio", "low", "high")


def slowdown(runs: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """What the profiler cost, as each comparison measures it: per cell and server, a profiled window's requests/s
    over its fork's used windows' mean (:func:`benchlab.analysis.validity.fit`), the geometric mean over forks and a
    t interval on the logs (NaN below 2 forks). A fork before warm, whose window was left out, gives none.

    >>> slowdown(suite.runs)   # doctest: +SKIP
    """
    from .validity import fit

    if runs.empty or "profiled" not in runs:
        return pd.DataFrame(columns=list(SLOWDOWN))
    forks = pd.Series(cells.fork_keys(runs), index=runs.index)
    marked = runs["profiled"].map(lambda v: v is True or v == 1).astype(bool) & (runs["status"] == "ok")
    rps = pd.to_numeric(runs["rps"], errors="coerce")
    used = fit(runs)
    plain = rps[used].groupby(forks[used]).mean()
    ratios = (rps[marked] / forks[marked].map(plain)).rename("ratio")
    rows = []
    keys, groups = cells.group(runs[marked].assign(ratio=ratios))
    for cell, group in groups:
        cell = cell if isinstance(cell, tuple) else (cell,)
        for server, mine in group.groupby("server", sort=False):
            logs = np.log(mine["ratio"].dropna().to_numpy(dtype=float))
            low, high = (np.exp(intervals.t_interval(logs, alpha)) if len(logs) > 1 and intervals.varies(logs)
                         else (math.nan, math.nan))
            rows.append({"server": server, **{c: cells.restore(v) for c, v in zip(keys, cell)}, "forks": len(logs),
                         "ratio": float(np.exp(logs.mean())) if len(logs) else math.nan,
                         "low": float(low), "high": float(high)})
    return pd.DataFrame(rows, columns=list(SLOWDOWN))
