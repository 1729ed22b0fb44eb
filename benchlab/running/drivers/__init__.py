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
from ..protocols import HTTP2
from .base import Driver, Invocation, LoadTool, version_of

__all__ = ["Driver", "Invocation", "LoadTool", "NAMES", "DEFAULTS", "tool", "get", "warmer", "check_protocol",
           "execute", "run_local", "version_of"]

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


def get(name: str | None, model: LoadModel = "duration", protocol: str = "http1") -> LoadTool:
    """The driver for a load ``model`` over ``protocol``: ``name``, or the model's default driver (h2load for a
    closed loop over HTTP/2, which wrk cannot speak)."""
    default = "h2load" if protocol in HTTP2 and model != "rate" else DEFAULTS[model]
    driver = tool(name or default)
    if model not in driver.models:
        raise UsageError(
            f"{name} cannot offer a {model!r} load: it does {', '.join(driver.models)}; "
            f"use driver={DEFAULTS[model]!r} for {model!r}"
        )
    return driver


def warmer(load) -> LoadTool:
    """The tool that warms a server for ``load`` (:mod:`benchlab.running.warmup`): wrk, or over HTTP/2, which wrk
    cannot speak, h2load, so the JIT compiles the protocol's own code paths.

    >>> from benchlab.running.load import Load
    >>> warmer(Load(protocol="h2c", streams=10)).name, warmer(Load(protocol="https")).name
    ('h2load', 'wrk')
    """
    return tool("h2load" if load.protocol in HTTP2 else "wrk")


def check_protocol(driver: LoadTool, load) -> None:
    """The driver speaks the load's protocol, and sets its streams; a :class:`UsageError` naming one that does if not.

    >>> from benchlab.running.load import Load
    >>> check_protocol(tool("wrk"), Load(protocol="h2c"))
    Traceback (most recent call last):
    benchlab.errors.UsageError: wrk cannot speak h2c: it speaks http1, https; use driver='h2load' (or vegeta for a rate)
    """
    if load.protocol not in driver.protocols:
        other = "h2load" if load.model != "rate" else "vegeta"
        raise UsageError(f"{driver.name} cannot speak {load.protocol}: it speaks {', '.join(driver.protocols)}; use "
                         f"driver={other!r}" + (" (or vegeta for a rate)" if other == "h2load" else ""))
    if load.streams > 1 and not driver.streams:
        raise UsageError(f"streams={load.streams} is h2load's -m: {driver.name} sets no streams a connection; use "
                         "driver='h2load', or drop streams")


def check_rate(driver: LoadTool, load, *, cores: int) -> None:
    """A rate the tool can offer from ``cores`` load cores at all (its ``most_per_core``), said before any server
    starts (docs/bad-input.md); a rate under it that the tool still falls short of is flagged when it runs
    (``rate_shortfall``), and ``rates="auto"`` lowers the common rate to what it keeps (docs/cost.md).

    >>> from benchlab.running.load import Load
    >>> check_rate(tool("vegeta"), Load(model="rate", rate=20_000), cores=1)  # allowed: the run will tell
    """
    most = getattr(driver, "most_per_core", None)
    if load.model == "rate" and most and load.rate > most * cores:
        raise UsageError(f"rate={load.rate:g} is more than {driver.name} offers from {cores} load core"
                         f"{'s' if cores != 1 else ''} (at most {most:,.0f} req/s a core): give more load_cpus or "
                         "load_hosts, or a lower rate")


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
