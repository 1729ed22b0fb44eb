"""Altair charts of benchlab results: a tidy frame in, a chart out.

Every function takes the tidy runs frame (one row per run, the columns of
:data:`benchlab.schema.COLUMNS`, latencies in seconds, sizes in bytes) or, for the resource timeline, the
samples frame (for the profile charts: ``Suite.profiles`` and ``Suite.layers()``), and returns an Altair chart.
None of them saves or displays anything: a notebook shows the chart by leaving it as a cell's last value,
:mod:`benchlab.present.render` draws it in HTML.

Conventions shared by all charts:

- failed runs (``status != "ok"``) are left out; a frame with no finished run raises
  :class:`~benchlab.errors.ResultsError`;
- latencies are drawn in milliseconds, memory in MiB, CPU in percent of one core (100 % = one busy core);
- a missing value (an imported wrk text has no p99.9) is dropped, never drawn as zero;
- one repeat is fine: a cell with a single run has no confidence interval, so no error bar;
- the title names the unit and the subtitle says what was measured and on what (:func:`describe`).

The 95 % confidence intervals are the summary's: over fork means (a fork's windows averaged first, as
:func:`benchlab.analysis.stats.summary` takes them), by :func:`benchlab.analysis.stats.mean_ci` (Cox's log-normal
interval for positive values, Student's t otherwise), and over the cells :func:`benchlab.schema.cell` names, so a
chart and the summary table agree.

Example
-------
>>> import benchlab, benchlab.present.charts as charts                      # doctest: +SKIP
>>> runs = benchlab.store.results.frame(benchlab.store.results.load_runs("data/results"))  # doctest: +SKIP
>>> charts.throughput(runs) | charts.latency(runs)                  # doctest: +SKIP
"""

from __future__ import annotations

from .capacity import capacity
from .factors import interaction
from .frames import NINES_TICKS, describe, machine, machine_of, nines
from .load import latency, rate_sweep, sweep, throughput
from .profile import flame, layer_differences
from .reference import published
from .series import series
from .spectrum import spectrum
from .timeline import live, resources, warmup

__all__ = [
    "throughput",
    "capacity",
    "latency",
    "spectrum",
    "sweep",
    "resources",
    "series",
    "warmup",
    "live",
    "published",
    "rate_sweep",
    "interaction",
    "flame",
    "layer_differences",
    "describe",
    "machine",
    "machine_of",
    "NINES_TICKS",
    "nines",
]
