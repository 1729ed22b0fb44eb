"""What makes the load: one small class per tool, each an argv builder and a pure parser.

A driver never starts anything itself. :func:`execute` runs the argv of its :class:`Invocation` pinned
to the load cores, lets the monitor watch it, keeps its raw output beside the result and hands the text
and the invocation to ``driver.parse``. Every
parser returns the same metric fields (see :data:`benchlab.schema.METRICS`), in seconds and bytes.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import LoadError, UsageError, tail
from ...schema import LoadModel
from .. import process
from .base import Driver, Invocation, LoadTool, version_of

__all__ = ["Driver", "Invocation", "LoadTool", "NAMES", "DEFAULTS", "tool", "get", "execute", "run_local",
           "version_of"]

NAMES = ("wrk", "h2load", "jmeter", "vegeta")

#: The driver each load model uses unless one is named. A count load is wrk with its Lua counter: it reads
#: every status on every built-in server (h2load cannot read Tomcat's), at h2load's CPU per request, and
#: one driver for every server keeps a comparison of servers from being one of drivers too (README).
DEFAULTS: dict[LoadModel, str] = {"duration": "wrk", "count": "wrk", "rate": "vegeta"}


def tool(name: str) -> LoadTool:
    """The driver called ``name``, whatever load models it does."""
    if name == "wrk":
        from .wrk import Wrk

        return Wrk()
    if name == "h2load":
        from .h2load import H2load

        return H2load()
    if name == "jmeter":
        from .jmeter import JMeter

        return JMeter()
    if name == "vegeta":
        from .vegeta import Vegeta

        return Vegeta()
    raise UsageError(f"unknown driver {name!r}: choose one of {', '.join(NAMES)}")


def get(name: str | None, model: LoadModel = "duration") -> LoadTool:
    """The driver for a load ``model``: ``name``, or the model's default driver."""
    driver = tool(name or DEFAULTS[model])
    if model not in driver.models:
        raise UsageError(
            f"{name} cannot offer a {model!r} load: it does {', '.join(driver.models)}; "
            f"use driver={DEFAULTS[model]!r} for {model!r}"
        )
    return driver


def execute(driver: LoadTool, url: str, scenario, load, *, cpus, workdir: Path, phase: str = "measure",
            monitor=None, runner=None, on_start=None) -> tuple[dict, str]:
    """Run one phase of load and return ``(metrics, raw stdout)``; the measure phase's latency
    histogram, where the tool gives one, is saved as ``workdir/latency.json``.

    ``runner``, when given, replaces the local process (the docker backend runs load in a container).
    It is called as ``runner(argv, cpus=..., timeout=..., monitor=..., workdir=...)``, must register its
    own ``"load"`` probe on ``monitor`` when that is not None, and returns a
    :class:`benchlab.running.process.Finished`. ``on_start(pid)`` is told a local load tool's process id as it
    starts (its process tree is the run's own: :mod:`benchlab.running.window`).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    invocation = driver.command(url, scenario, load, phase=phase, workdir=workdir)
    argv = list(invocation.argv)
    seconds = load.warmup if phase == "warmup" else load.planned_seconds
    # A count load's length is only a guess from its size, so it gets room to be three times slower.
    timeout = seconds * (3 if load.model == "count" and phase == "measure" else 1) + load.timeout + 60.0
    if runner is not None:
        finished = runner(argv, cpus=cpus, timeout=timeout, monitor=monitor, workdir=workdir)
    else:
        finished = run_local(argv, cpus=cpus, timeout=timeout, monitor=monitor, workdir=workdir, on_start=on_start)
    if finished.returncode < 0:  # a signal ended it: whatever it printed is not a whole run
        raise LoadError(f"{driver.name} was killed by signal {-finished.returncode} during the {phase}: this run "
                        f"does not count (command: {' '.join(argv)})")
    if phase == "measure":
        (workdir / f"{driver.name}.out").write_text(finished.stdout)
        if finished.stderr.strip():
            (workdir / f"{driver.name}.err").write_text(finished.stderr)
    try:
        metrics = driver.parse(finished.stdout, invocation)
        histogram = driver.histogram(finished.stdout, invocation) if phase == "measure" else None
    except LoadError as exc:
        raise LoadError(f"{exc} (exit {finished.returncode}; command: {' '.join(argv)})\n"
                        f"{tail(finished.stderr or finished.stdout, 8)}") from None
    if histogram is not None:
        histogram.save(workdir)
    return metrics, finished.stdout


def run_local(argv: list[str], *, cpus, timeout: float, monitor=None, workdir: Path | None = None, on_start=None):
    """Run a load tool as a local process pinned to ``cpus``, watched by ``monitor`` as ``"load"``."""

    def watch(pid: int) -> None:
        if on_start is not None:
            on_start(pid)
        if monitor is not None:
            from ..monitor import ProcessProbe

            try:
                monitor.watch("load", ProcessProbe(pid))
            except Exception:  # it ended before it could be watched: a very short run
                pass

    return process.run(argv, cpus=cpus, timeout=timeout, on_start=watch, cwd=workdir)
