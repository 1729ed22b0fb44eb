"""The vocabulary, written once: result columns, cells, percentiles, error kinds, units and flag names.

Every module that names a column, a percentile, an error kind, a time unit or a flag imports it from
here, so a new percentile or error kind is added in one place. Values are in seconds and bytes.

>>> ERROR_COLUMNS[0], PERCENTILE_COLUMNS["p999"], SECONDS["ms"]
('errors_connect', 99.9, 0.001)
"""

from __future__ import annotations

#: The kinds of failed request every driver counts, each in its own ``errors_<kind>`` column.
ERROR_KINDS = ("connect", "read", "write", "status", "timeout")

#: The error columns, in the order of :data:`ERROR_KINDS`.
ERROR_COLUMNS = tuple(f"errors_{kind}" for kind in ERROR_KINDS)

#: Percentile columns and the percentile each stands for (charts use the 'nines' scale).
PERCENTILE_COLUMNS = {"p50": 50.0, "p75": 75.0, "p90": 90.0, "p99": 99.0, "p999": 99.9, "p9999": 99.99}

#: The latency columns: lowest, mean, spread, highest, then the percentiles; lower is better for all.
LATENCY_COLUMNS = ("lat_min", "lat_mean", "lat_stdev", "lat_max", *PERCENTILE_COLUMNS)

#: The metric fields every driver's parser fills (None where a tool cannot tell). Seconds and bytes.
METRICS = (
    "requests", "bytes", "elapsed_s", "rps", "bytes_per_request",
    *LATENCY_COLUMNS,
    *ERROR_COLUMNS,
    "target_rps", "note",
)

#: Measured around the load: the monitor's summary and the server's start.
RESOURCES = (
    "server_cpu_mean", "server_cpu_max", "server_rss_mean", "server_rss_max", "server_samples",
    "load_cpu_mean", "load_cpu_max", "load_rss_mean", "load_rss_max", "load_samples",
    "startup_ms",
)

#: What a run was asked to do; with ``repeat`` they name its cell and identity.
PARAMS = (
    "server", "scenario", "driver", "load", "connections", "threads", "users", "loops", "rate",
    "duration", "warmup", "timeout", "backend", "server_cpus", "load_cpus", "load_cores", "memory",
    "jvm_opts", "repeat",
)

#: The tidy frame: one row per run, these columns, in this order.
COLUMNS = (
    "id", "suite", "label", "status", "error", "started_at", "finished_at",
    *PARAMS, "server_impl", "server_version", "java_version", "errors_total",
    *METRICS, *RESOURCES,
)

#: The columns that, with the server, name a cell of a comparison (the runs a statistic pools).
CELL = ("scenario", "load", "driver", "connections", "rate", "users", "loops")

#: Seconds per time unit, as the load tools and the duration strings write them.
SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}

#: Bytes per size unit, as wrk writes a transfer ("1.50MB" is 1.5 MiB).
BYTES = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40}

#: The noise and validity flags a run or a cell can carry (``benchlab.stats.FLAGS`` explains each).
FLAGS = ("high_cv", "tail_unstable", "errors", "generator_bound", "littles_law", "delayed_ack",
         "rate_shortfall", "shared_cores", "failed", "driver_note", "all_failed")
