"""A fork: one server process, started and warmed once, and its measured windows; the one owner of its state.

Its lifecycle is :meth:`Fork.start` (build, launch or attach, verify), :meth:`Fork.warm`, :meth:`Fork.resume` (after
sitting idle while other forks of its round warmed), :meth:`Fork.window` for each window, and :meth:`Fork.stop`.
Each step is taken through :meth:`Fork.step`, which ends the fork on one of :data:`FAILURES` and keeps the error:
the fork is then its own outcome, the windows it stored and why it stopped, whichever way its windows were
ordered (back to back: :func:`whole`; in turn with its round's: :mod:`benchlab.running.rounds`). :meth:`Fork.stored`
gives what a comparison keeps of it: its windows, and a failed record in place of the window it could not measure.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from ..errors import LoadError, ServerError, VerifyError, tail
from ..store import locks
from ..store.results import Run, save
from . import backends, drivers, servers, window
from .backends.base import Attached
from .spec import RunSpec
from .verify import verified
from .warmup import resume, warm_up
from .window import files, now

log = logging.getLogger(__name__)

#: What fails a fork without failing its comparison: its server, its answer, its load tool.
FAILURES = (ServerError, VerifyError, LoadError)


def launch(spec: RunSpec, run_id: str, log_path: Path, *, backend=None, **changes):
    """The server of ``spec`` started by its backend (``backend``, the fork's own, or a new one; ``changes`` to its
    launch, such as ``start_cpus``), or attached to when it is a URL benchlab does not own: what a fork and a
    shared server (:mod:`.pool`) start alike."""
    import dataclasses

    if not spec.server.starts:
        return Attached(spec.server)
    spec.build()
    backend = backend or backends.get(spec.backend, spec.docker)
    return backend.start(spec.server, dataclasses.replace(spec.launch(run_id, log_path), **changes))


class Fork:
    """One server process and its windows ``[(folder, run id), ...]``. An ``instance`` given (a shared server) is
    used as it is and left running; ``on_phase`` hears each step's name, ``on_slice`` each warm-up slice, ``echo``
    each one-line note (the ``benchlab`` log's warnings by default); ``notes`` go into every window's metadata."""

    def __init__(self, spec: RunSpec, windows: list[tuple[Path, str]], *, repeat: int = 1, suite=None, label=None,
                 on_phase=None, on_slice=None, instance=None, echo=None, notes=None):
        self.spec, self.windows = spec, [(Path(d), i) for d, i in windows]
        #: what the comparison adds to every window's metadata (the common rate it found: benchlab.running.common)
        self.notes: dict = dict(notes or {})
        self.repeat, self.suite, self.label, self.key = repeat, suite, label, spec.cell_key()
        self.phase = on_phase or (lambda name: None)
        self.on_slice = on_slice
        #: where its one-line notes go (waiting for cores or for quiet, a retake, its failure): a bar, or the log
        self.echo = echo or log.warning
        self.instance, self.owned = instance, instance is None
        self.records: list[Run] = []        # the windows stored so far
        self.retaken: list[Run] = []        # the disturbed windows measured again, kept beside them
        self.error: BaseException | None = None  # why the fork stopped early, if it did
        self.waited = 0.0                   # seconds it waited for its cores, said by its first window
        self.started_at = now()
        self.name = ""                      # its first run id and when it started: unique across folders
        self.driver = drivers.get(spec.driver, spec.load.model)
        self.backend = backends.get(spec.backend, spec.docker)
        self.log_path = self.windows[0][0] / "server.log"
        self.meta: dict = {}                # what its windows share: the machine, the server's facts, its checks
        self.runner: Any = None             # the docker backend may run the load tool in a container
        self.jvm = None                     # the JVM's counters; None for a server that is not a JVM
        self.warmed: dict = {}              # what the warm-up did, resumes included
        self.warm_began = 0.0
        self.fork_s = 0.0                   # what it cost before its first window: start, verify, warm-up

    # --- the lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> None:
        """Launch (unless given) and verify the server."""
        spec = self.spec
        for run_dir, _ in self.windows:
            run_dir.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        self.started_at = now()
        self.name = f"{self.windows[0][1]}@{self.started_at}"
        self.phase("start")
        if self.instance is None:
            # the fork's own backend: the one that started the server labels the load tool's container with its run
            self.instance = launch(spec, self.windows[0][1], self.log_path, backend=self.backend)
        else:
            spec.build()
        servers.check_loopback(self.instance.url, allow_remote=spec.allow_remote)
        self.phase("verify")
        self.meta = verified(spec, self.instance, self.driver)
        self.runner = self.backend.load_runner()
        self.fork_s = time.monotonic() - began

    def warm(self) -> None:
        """Warm the server once for all its windows (:func:`benchlab.running.warmup.warm_up`)."""
        spec, began = self.spec, time.monotonic()
        self.phase("warmup")
        self.jvm = self.instance.counters() if hasattr(self.instance, "counters") else None
        self.warm_began = began
        self.warmed = warm_up(self.instance.url, spec.scenario, spec.load, cpus=spec.load_cpus,
                              workdir=self.windows[0][0], runner=self.runner, perfdata=self.jvm,
                              on_slice=self.on_slice)
        if not self.instance.alive():
            raise ServerError(f"{spec.server.name} died during the warm-up")
        self.meta["jvm"] = ({"collectors": self.jvm.collectors, "policy": self.jvm.policy, "perfdata": self.jvm.path}
                            if self.jvm is not None else None)
        self.fork_s += time.monotonic() - began

    def resume(self) -> None:
        """Bring the server back to its load after it sat idle, until its JIT is quiet again; said in its warm-up,
        on the warm-up's own clock."""
        offset, shown = time.monotonic() - self.warm_began, self.on_slice
        self.phase("resume")
        again = resume(self.instance.url, self.spec.scenario, self.spec.load, cpus=self.spec.load_cpus,
                       workdir=self.windows[0][0], runner=self.runner, perfdata=self.jvm,
                       on_slice=None if shown is None else lambda row: shown({**row, "t": round(row["t"] + offset, 3)}))
        slices = [{**s, "t": round(s["t"] + offset, 3)} for s in again["slices"]]
        self.warmed = {**self.warmed, "resumed_s": again["seconds"],
                       "slices": [*self.warmed.get("slices", []), *slices]}
        self.fork_s += again["seconds"]

    def window(self) -> Run:
        """Measure and store the next window; a disturbed one is set aside as retaken and measured again, at most
        ``spec.retakes`` times (:func:`benchlab.running.window.take`)."""
        number = len(self.records) + 1
        run_dir, run_id = self.windows[number - 1]
        record, retaken = window.take(self, run_dir, run_id, number)
        self.retaken.extend(retaken)
        save(record, run_dir)
        self.records.append(record)
        return record

    def profiler(self, number: int, run_dir: Path):
        """The profiler of window ``number``: the fork's last, where its spec asks for profiles
        (:class:`benchlab.running.profiler.Profiler`, loaded into the server's JVM); else None."""
        if not self.spec.profile or number < len(self.windows):
            return None
        from .profiler import Profiler

        return Profiler(int(self.instance.metadata["pid"]), run_dir)

    def stop(self) -> None:
        """Stop the server (if this fork started it), let go of its counters, and remove the folders of windows
        it never measured; again, it does nothing."""
        jvm, self.jvm = self.jvm, None
        if jvm is not None:
            jvm.close()
        if self.owned and self.instance is not None:
            instance, self.instance = self.instance, None
            self.phase("stop")
            instance.stop()
        for run_dir, _ in self.windows[len(self.records) + (self.error is not None):]:
            if run_dir.is_dir() and not any(run_dir.iterdir()):
                run_dir.rmdir()

    # --- its outcome -----------------------------------------------------------------------------------------

    def step(self, action) -> bool:
        """Take one step; one of :data:`FAILURES` ends the fork (stopped at once, the error kept). True if it
        is still going."""
        if self.error is not None:
            return False
        try:
            action()
        except FAILURES as exc:
            self.error = exc
            self.stop()
        return self.error is None

    @property
    def pinned(self) -> tuple[int, ...]:
        """The cores this fork holds on this machine while it runs (:func:`benchlab.store.locks.cores`): its
        server's and its load's, none when its server runs on another docker engine."""
        spec = self.spec
        return () if spec.docker.docker_host else (*spec.server_cpus, *spec.load_cpus)

    def alive(self) -> bool:
        """Whether the fork is going and has windows left to measure."""
        return self.error is None and len(self.records) < len(self.windows)

    def stored(self) -> list[Run]:
        """What a comparison keeps of this fork: its windows and the disturbed ones it measured again, and when it
        failed, a failed record (stored) in the place of the window it could not measure, so the comparison goes on
        without counting it."""
        if self.error is None or len(self.records) >= len(self.windows):
            return self.measured()
        run_dir, run_id = self.windows[len(self.records)]
        run_dir.mkdir(parents=True, exist_ok=True)
        exc = self.error
        broken = Run(id=run_id, params={**self.spec.params(self.repeat), "window": len(self.records) + 1},
                     metrics={}, metadata=getattr(exc, "metadata", {}), status="failed",
                     error=f"{type(exc).__name__}: {exc}", suite=self.suite, label=self.label, key=self.key,
                     started_at=self.started_at, finished_at=now(), files=files(run_dir), directory=str(run_dir))
        save(broken, run_dir)
        self.echo(f"benchlab: run {run_id} failed: {str(exc).splitlines()[0]}")
        return [*self.measured(), broken]

    def measured(self) -> list[Run]:
        """Its windows and the disturbed ones it measured again, in the order they were measured: a retaken window
        before the one measured in its place, so whoever is told of them one by one sees them as they came."""
        return sorted([*self.records, *self.retaken], key=lambda record: record.started_at or "")

    def died(self) -> ServerError:
        """The error of a server that died under load, with the last lines of its log."""
        code = self.instance.metadata.get("exit_code") if self.instance is not None else None
        log = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        exit = code if code is not None else "unknown"
        return ServerError(f"{self.spec.server.name} died during the load (exit {exit}): this run does not count\n"
                           f"  last lines of {self.log_path}:\n{tail(log, 12)}")

    def __enter__(self) -> Fork:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def whole(fork: Fork) -> Fork:
    """A fork as ``interleave="forks"`` takes it: holding its cores, started, warmed, its windows back to back,
    stopped; its outcome is on it (:meth:`Fork.stored`). The fork's ``echo`` hears the line that says it waits for
    its cores (:func:`benchlab.store.locks.cores`)."""
    with locks.cores(fork.pinned, echo=fork.echo) as waited:
        fork.waited = waited
        with fork:
            if fork.step(fork.start) and fork.step(fork.warm):
                while fork.alive() and fork.step(fork.window):
                    pass
    return fork
