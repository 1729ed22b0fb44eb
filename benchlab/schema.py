"""The vocabulary, written once: result columns, cells, percentiles, error kinds, units and flag names.

Every module that names a column, a percentile, an error kind, a time unit or a flag imports it from
here, so a new percentile or error kind is added in one place. Values are in seconds and bytes.

>>> ERROR_COLUMNS[0], PERCENTILE_COLUMNS["p999"], SECONDS["ms"]
('errors_connect', 99.9, 0.001)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

from .cores import format_cpus

#: The kinds of failed request every driver counts, each in its own ``errors_<kind>`` column.
ERROR_KINDS = ("connect", "read", "write", "status", "timeout")

#: The error columns, in the order of :data:`ERROR_KINDS`.
ERROR_COLUMNS = tuple(f"errors_{kind}" for kind in ERROR_KINDS)

#: Percentile columns and the percentile each stands for (charts use the 'nines' scale).
PERCENTILE_COLUMNS = {"p50": 50.0, "p75": 75.0, "p90": 90.0, "p99": 99.0, "p999": 99.9, "p9999": 99.99}

#: The percentiles of a merged latency distribution shown by default (100 is the maximum).
SPECTRUM = (50.0, 90.0, 99.0, 99.9, 99.99, 100.0)

#: The columns of the merged latency frame (``Suite.latency()``), after the cell columns and the server:
#: the percentile, its latency in seconds, its interval and how it was made, the runs merged, the latencies.
MERGED_COLUMNS = ("percentile", "latency_s", "low", "high", "method", "n", "count")

#: The latency columns: lowest, mean, spread, highest, then the percentiles; lower is better for all.
LATENCY_COLUMNS = ("lat_min", "lat_mean", "lat_stdev", "lat_max", *PERCENTILE_COLUMNS)

#: The metric fields every driver's parser fills (None where a tool cannot tell). Seconds and bytes.
METRICS = (
    "requests", "bytes", "elapsed_s", "rps", "bytes_per_request",
    *LATENCY_COLUMNS,
    *ERROR_COLUMNS,
    "target_rps", "sent_rps", "achieved_rps", "note",
)

#: Measured around the load: the monitor's summary and the server's start.
RESOURCES = (
    "server_cpu_mean", "server_cpu_max", "server_rss_mean", "server_rss_max", "server_samples",
    "load_cpu_mean", "load_cpu_max", "load_rss_mean", "load_rss_max", "load_samples",
    "startup_ms", "warmup_s", "fork_s", "warm", "drift", "drift_limit",
    # the JVM's own counters (benchlab.running.perfdata) over the measured window, and the warm-up's judgement
    "warmup_class", "jit_quiet_s", "jit_compile_s", "jit_share", "jit_cpu_share", "gc_count", "gc_share",
    "safepoint_share", "server_idle_s",
    # the machine during the window (benchlab.analysis.series): the seconds other processes took more than their
    # limit of the server's and the load's cores, and how much then (in cores); the seconds the host stole;
    # the deepest dip inside the window's own throughput and how long it lasted; who else ran; the wait for quiet
    "other_server_s", "other_server_cpu", "other_load_s", "other_load_cpu", "steal_s", "steal_cpu", "dip", "dip_s",
    "others", "quiet_wait_s",
    # a load spread over several generators (benchlab.running.generators): the busiest one's CPU over the cores
    # its threads could use, and their count; the generator_bound flag judges each generator on its own by these
    "generator_busy", "generator_cores",
    # what the window cost the server (benchlab.running.cost): its process tree's CPU time over the window, user
    # and system, read exactly before and after the load (the container's cgroup in docker), and that per answer
    "server_cpu_s", "cpu_per_request",
    # a capacity search (slo=, benchlab.running.cost.search): the highest rate that met the limit, what stopped the
    # search ("server", or "load tool", "limit", "steps": flagged capacity_unfound), its steps and their time
    "capacity_rps", "capacity_by", "search_steps", "search_s",
    # a window under the profiler (benchlab.running.profiler), which enters no statistic, and its CPU samples
    "profiled", "profile_samples",
)

#: The figures of what serving cost: CPU seconds per answer, and resident memory (steady: the window's mean; peak:
#: its max); lower is better for each, and each gets a verdict where the load is a fixed rate (docs/cost.md).
COST_COLUMNS = ("cpu_per_request", "server_rss_mean", "server_rss_max")

#: The queues that decide whether many connections opened at once are accepted: the server's accept queue
#: (backlog) setting and the kernel's cap on every backlog (somaxconn); HTTP/2's streams run at once a connection.
LIMITS = ("accept_queue", "somaxconn", "stream_limit")

#: What usually causes each kind of failed request, said in the ``errors`` flag.
ERROR_CAUSES = {
    "connect": "connections not accepted: the server's accept queue was full, or a side ran out of file "
               "descriptors (ulimit -n)",
    "read": "connections reset or closed while waiting for an answer: usually an accept queue that overflowed "
            "(the kernel resets or drops what it cannot queue), or the server closing connections",
    "write": "the connection was closed before the request went out: the server dropped it",
    "timeout": "answers slower than the timeout: the server is too slow for this many connections",
    "status": "answers with an error status (4xx or 5xx): check the scenario's path and the server's log",
}

#: Added to the ``errors`` flag when connect or read errors meet more connections than the accept queue.
ACCEPT_QUEUE_NOTE = ("{connections:.0f} connections opened at once against an accept queue of {queue:.0f} (the "
                     "server's {setting:.0f}, capped by the kernel's somaxconn {somaxconn:.0f}): raise the "
                     "server's setting (Tomcat: server.tomcat.accept-count) or open fewer connections")

#: A variant's settings (:mod:`benchlab.running.variants`), empty for a server's default. ``java_major`` is the
#: variant's java setting (17, 25); ``java``, the run's java option, is the JVM of servers without one.
SETTINGS = ("virtual_threads", "max_threads", "gc", "heap", "aot", "java_major")

#: What a run was asked to do, as the runs frame shows it: its server, its cell (:data:`CELL`, the label
#: aside) and what :data:`NOT_CELL` leaves out of it.
PARAMS = (
    "server", "scenario", "driver", "load", "protocol", "connections", "streams", "threads", "users", "loops", "rate",
    "slo", "pipeline", "keepalive", "ramp_up", "plan",
    "duration", "warmup", "timeout", "backend", "base_image", "load_in_container", "generators", "server_cpus",
    "load_cpus", "load_cores", "memory", "jvm_opts", "java", "cds", *SETTINGS, "repeat", "window", "fork", "host",
)

#: A fork is one server process, warmed once, and its windows (``compare(windows=m)``). A run is one window:
#: ``window`` counts them from 1 and ``fork`` names the fork, shared by its windows. A run stored before forks had
#: several windows is its own fork of one window (one stored before format 4 says ``iteration``: it reads as
#: ``window``).

#: One monitor sample: seconds since the measurement began, whose ("server" or "load"), CPU % (100 is one
#: busy core), resident bytes, and the bytes the process has written (server) or read (load tool) so far.
SAMPLE_FIELDS = ("t", "role", "cpu", "rss", "io")

#: What a group of a run's cores did between two monitor samples (benchlab.running.machine): seconds since the
#: measurement began, the group ("server" or "load": the cores each runs on), then the cores' user+nice+system
#: time, their irq+softirq time and their steal, each in % of one core (100 is one core's whole time).
MACHINE_FIELDS = ("t", "group", "busy", "irq", "steal")

#: The server JVM's counters as the monitor reads them (benchlab.running.perfdata), each cumulative since the JVM
#: started: JIT compile time (s) and count, invalidated compiled methods, GC collections and pause time
#: (s), safepoints and their time (s). Stored rows put the sample's ``t`` first.
#: A JVM counter row's fields after its time: HotSpot's own counters, then (from the kernel) the CPU time of the JVM's
#: compiler threads, ``jit_cpu_s``. Rows stored before it was read are one field shorter.
COUNTER_FIELDS = ("compile_s", "compiles", "invalidations", "gc_count", "gc_s", "safepoints", "safepoint_s",
                  "jit_cpu_s")

#: The tidy frame: one row per run, these columns, in this order.
COLUMNS = (
    "id", "suite", "label", "status", "error", "started_at", "finished_at",
    *PARAMS, "server_impl", "server_version", "java_version", "errors_total",
    *METRICS, *RESOURCES, *LIMITS,
)

#: A run's cell: the runs of one setup, which every statistic pools per server. Its columns are the load (the
#: scenario, the model, the tool and its shape) and everything else that changes what is measured (the
#: measured and warm-up times, the backend and its image, the cores, the JVM) and the run's label (the
#: machine or the change measured, as the user names it). :func:`cell` names a run's cell; runs that differ
#: in any of these are never pooled.
CELL = (
    "scenario", "load", "driver", "protocol", "connections", "streams", "rate", "slo", "users", "loops", "threads",
    "pipeline", "keepalive",
    "ramp_up", "plan", "duration", "warmup", "timeout", "backend", "base_image", "load_in_container", "generators",
    "server_cpus", "load_cpus", "memory", "jvm_opts", "java", "cds", "label",
)

#: The value of a cell's parameter in a run stored before that parameter was asked: what such a run did. A
#: parameter missing from a run and not here is None (for ``base_image``: the backend's default image).
CELL_DEFAULTS = {"pipeline": 1, "keepalive": True, "ramp_up": 0.0, "load_in_container": False, "generators": 1,
                 "protocol": "http1", "streams": 1}

#: The parameters a run stores that are not in its cell, and why.
NOT_CELL = {
    "server": "what a cell compares: each statistic is taken per cell and server",
    "repeat": "numbers a cell's forks, which its statistics pool",
    "window": "numbers a fork's windows, which its mean pools",
    "fork": "names the server process a window ran in, which its mean pools",
    **dict.fromkeys(SETTINGS, "a variant's setting, named by its server (spring-tomcat+vt@java25): it differs "
                              "between the servers a cell compares"),
    "path": "how the server spells the scenario (the scenario is in the cell): servers of one cell may spell it "
            "apart",
    "method": "how the server spells the scenario, as path",
    "load_cores": "the count of load_cpus, which is in the cell",
    "docker_host": "where a docker engine is reached: an address of the machine, which no cell names",
    "load_docker_host": "where the load tool's docker engine is reached, as docker_host",
    "load_hosts": "where each generator of a spread load ran, as docker_host; how many there were, generators, is in "
                  "the cell",
    "host": "the machine a round ran on (compare(hosts=...)): a block, as the round is; rounds pair across hosts",
}

#: Seconds per time unit, as the load tools and the duration strings write them.
SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}

#: Bytes per size unit, as wrk writes a transfer ("1.50MB" is 1.5 MiB).
BYTES = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40}

#: Every noise and validity flag a run or a cell can carry, and the one line a notebook reader gets for it.
FLAGS = {
    "high_cv": "throughput varies by more than 5% between repeats (CV {cv:.1%}): more repeats or a quieter "
               "machine are needed before a small difference means anything",
    "tail_unstable": "p99 spreads {spread:.1f}x across repeats ({low:.2f} ms to {high:.2f} ms): the tail is not "
                     "stable, so no single run's p99 can be quoted",
    "errors": "{errors:.0f} failed requests, {kinds}; failures count in the rps",
    "generator_bound": "the load generator was {busy:.0%} busy on the {usable:g} core(s) its threads could use: "
                       "the run measured the load tool, not the server; give it more threads and cores",
    "streams_queued": "{streams:.0f} streams a connection were asked, but the server runs at most {limit:.0f} at "
                      "once: the others waited for a stream, so the latency is that of its limit, not of its work",
    "littles_law": "Little's law expects a mean latency near connections/rps = {expected:.2f} ms but it is "
                   "{mean:.2f} ms: connections sat idle or queued outside the server, so rps and latency disagree",
    "delayed_ack": "p50 is {p50:.1f} ms with the server {cpu:.0f}% busy and no sleep of that length asked: the "
                   "40 ms delayed-ACK signature (Nagle on one side), not server work",
    "rate_shortfall": "kept {achieved:.0f} req/s of the {target:.0f} asked ({share:.0%}; what was sent, or what "
                      "was answered over the attack and the wait for its last answers, whichever is less): the "
                      "driver or the server could not keep the rate, so latencies and cost are not those of the "
                      "target load",
    "shared_cores": "the server and the load generator shared cores: each slowed the other",
    "capacity_unfound": "the capacity search did not find the server's limit ({why}), so the rate held is not its "
                        "capacity",
    "failed": "the run failed: {error}",
    "driver_note": "the load tool says: {note}",
    "drifting": "throughput moved {drift:+.1%} from the first half of the measurement to the second, more than "
                "the {limit:.1%} its own noise allows: the server was not steady (still warming, or slowing "
                "down), so this run's figures are an average over a change",
    "jit_active": "the JIT {cost} in the measured window ({seconds:.1f} s of compile time): the server was still "
                  "warming while it was measured; warm longer (warmup=\"auto\" waits for a quiet compiler)",
    "gc_heavy": "garbage collection paused the server for {share:.1%} of the measured window: the figures measure "
                "the heap as much as the server; give it a larger heap (heap=) or another gc (gc=)",
    "server_idle": "the server sat below 10% CPU for {seconds:.1f} s while the load tool was busy: it stalled (a "
                   "lock, a full accept queue, a pause), so this run does not measure its serving",
    "not_warm": "the warm-up reached its limit of {limit:.0f} s before the JVM was warm (its compiler quiet and "
                "its throughput steady): the measurement may still include JIT compilation; warm longer (a fixed "
                "warmup) or find what keeps it moving",
    "all_failed": "every repeat of this cell failed; the other cells went on",
    "interference": "other processes took {what} of the {window:.0f} s measured window{who}: the server or its load "
                    "had less CPU than in a quiet window, so the figures are not the server's own",
    "steal": "the host took {cpu:.2f} cores from this machine (steal) for {seconds:.0f} s of the measured window: "
             "another guest ran on its cores, which nothing inside the machine can see",
    "dip": "throughput was {dip:.0%} lower for {seconds:.1f} s of the measured window than in the rest of it: "
           "something slowed the server or its load for a while (the window's own change points)",
    "host_differs": "host {host}'s rounds ran {shift:+.1%} from the other hosts' (t-test p={p:.3f}, below "
                    "{level:.3f}): that machine differs beyond the noise; check its cores, image and clock",
    "noisy_sitting": "{metric}'s fork variance in this sitting was {times:.1f}x this machine's stored prior "
                     "({s2:.2g} on {d:.0f} df against s0^2 = {s02:.2g}, d0 = {d0}), above the {limit:.1f}x F allows at "
                     "{level}: not squeezed toward that history, {server} vs {against} judged on this sitting alone",
    "retaken": "this window was disturbed and measured again in the same fork; its figures enter no statistic",
    "profiled": "this window ran under the profiler ({samples:.0f} CPU samples): it shows where the CPU went, and "
                "enters no statistic, since profiling costs some throughput (docs/why.md)",
    # a file of a run that cannot be read (Suite.flags): its line names the file and what is wrong
    "damaged": "{line}",
}

#: What a published claim can be judged to be from our runs (:func:`benchlab.analysis.claims.judge`).
ClaimVerdict = Literal["holds", "differs", "reversed", "inconclusive", "not testable here"]

#: What each :data:`ClaimVerdict` means. An ordering ("a<b<c") holds when every adjacent pair holds, is reversed
#: when any pair is.
CLAIM_VERDICTS: dict[ClaimVerdict, str] = {
    "holds": "significant, in the published direction, and the published ratio is inside our interval",
    "differs": "significant, in the published direction, but our interval excludes the published ratio",
    "reversed": "significant, in the other direction",
    "inconclusive": "not significant at this alpha and number of repeats",
    "not testable here": "our runs cannot judge it: not run at that load, or generator-bound, failed, not warm, "
                         "or with errors above 0.1% of requests",
}

#: The verdict of a claim judged under two procedures (:func:`benchlab.analysis.claims.procedures`) when they
#: disagree; where they agree, the verdict is the controlled procedure's.
Sensitive = Literal["procedure-sensitive"]
PROCEDURE_SENSITIVE: dict[Sensitive, str] = {
    "procedure-sensitive": "holds under its source's own procedure and not under benchlab's controlled one, or the "
                          "reverse: how the runs were taken decides the answer",
}

#: The native reference servers built in beside the Spring ones: the machine's ceiling, each server's throughput read
#: as a share of the fastest of them in its cell (benchlab.analysis.ceiling).
REFERENCES = ("nginx", "go-nethttp")

#: The settings a comparison can vary as factors (:mod:`benchlab.running.factors`), and each one's runs column.
FACTOR_COLUMNS = {"virtual_threads": "virtual_threads", "max_threads": "max_threads", "gc": "gc", "heap": "heap",
                  "aot": "aot", "java": "java_major", "server_cpus": "server_cpus", "protocol": "protocol",
                  "streams": "streams"}


def base_name(server: str) -> str:
    """The server a variant is a variant of: ``spring-tomcat+vt@java25`` -> ``spring-tomcat``.

    >>> base_name("spring-tomcat+vt@java25")
    'spring-tomcat'
    """
    return server.partition("@")[0].split("+")[0]


#: The value an option takes to let benchlab choose: ``warmup`` (until warm), ``repeats`` (until precise enough),
#: ``windows`` (a fork's, by Kalibera and Jones' rule).
AUTO = "auto"

# --- the closed sets: each a Literal that mypy checks where it is annotated, and the tuple of its values ---------

#: What a stored run can be: finished, failed with its error, or retaken: a window that finished but was disturbed
#: (flags interference, steal, dip) and measured again in its fork, kept on disk, shown, and in no statistic. A
#: damaged stored run has no status, since it was never read; it is a ``damaged`` flag (:data:`FLAGS`).
Status = Literal["ok", "failed", "retaken"]
STATUSES: tuple[Status, ...] = get_args(Status)

#: What a window is to the statistics, one word each wherever a window is counted, listed or drawn
#: (:func:`benchlab.analysis.validity.standing`): used (finished, no validity flag), left out (finished, with a
#: validity flag, named beside it), retaken (disturbed and measured again in its fork), failed.
Standing = Literal["used", "left out", "retaken", "failed"]
STANDINGS: tuple[Standing, ...] = get_args(Standing)

#: Where a server runs: a pinned local process, or a container with a cpuset (:mod:`benchlab.running.backends`).
BackendName = Literal["local", "docker"]
BACKENDS: tuple[BackendName, ...] = get_args(BackendName)

#: The load models (:mod:`benchlab.running.load`): closed loops for a time or a count, an open loop at a rate.
LoadModel = Literal["duration", "count", "rate"]
LOAD_MODELS: tuple[LoadModel, ...] = get_args(LoadModel)

#: What a run's requests speak (:mod:`benchlab.running.protocols`): HTTP/1.1, h2c (prior knowledge), h2, HTTP/1.1+TLS.
Wire = Literal["http1", "h2c", "h2", "https"]
PROTOCOLS: tuple[Wire, ...] = get_args(Wire)

#: The order of a comparison's runs in each repeat (:func:`benchlab.running.matrix.matrix`): in turn, or shuffled.
Order = Literal["interleaved", "shuffled"]
ORDERS: tuple[Order, ...] = get_args(Order)

#: When a comparison starts a server: a fresh one for each fork, or one per server kept for all its runs.
Restart = Literal["each-fork", "never"]
RESTARTS: tuple[Restart, ...] = get_args(Restart)

#: How a comparison's windows are ordered: each fork's windows back to back, forks interleaved ("forks"), or the
#: forks of a round alive together with their windows interleaved ("windows": :mod:`benchlab.running.rounds`).
Interleave = Literal["forks", "windows"]
INTERLEAVES: tuple[Interleave, ...] = get_args(Interleave)

#: How ``warmup="auto"`` makes room for a JVM's compiler on the server's core (:mod:`benchlab.running.warming`): its
#: compiler threads first ("jit-first"), the load paused while they work ("pauses"), or the scheduler's ("shared").
Warming = Literal["jit-first", "pauses", "shared"]
WARMINGS: tuple[Warming, ...] = get_args(Warming)

#: A warm-up's class after Barrett et al. (:func:`benchlab.analysis.changepoints.classify`); see docs/warm-up.md.
WarmupClass = Literal["flat", "warm-up", "slowdown", "no steady state"]
WARMUP_CLASSES: tuple[WarmupClass, ...] = get_args(WarmupClass)


def cell(params: Mapping, label: str | None = None) -> dict:
    """A run's cell (:data:`CELL`): ``{column: value}`` as the runs frame shows it (cores as ``"0-1"``), a parameter
    the run was stored without at the value it had then (:data:`CELL_DEFAULTS`). One cell: these are equal.

    >>> cell({"scenario": "hello", "connections": 64, "server_cpus": [0, 1]})["server_cpus"]
    '0-1'
    >>> cell({"pipeline": 1}) == cell({})
    True
    """
    docker = params.get("backend_options")
    docker = docker if isinstance(docker, Mapping) else {}
    out = {}
    for name in CELL:
        value = label if name == "label" else docker.get(name) if name in docker else params.get(name)
        if value is None:
            value = CELL_DEFAULTS.get(name)
        if name in ("server_cpus", "load_cpus") and isinstance(value, (list, tuple)):
            value = format_cpus(value)
        elif name == "jvm_opts" and isinstance(value, (list, tuple)):
            value = " ".join(map(str, value))
        elif name == "load_in_container":
            value = value in (True, "True", "true")  # a docker option is stored as its text
        out[name] = value
    return out
