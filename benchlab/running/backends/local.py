"""The local backend: the server is a process on this machine, pinned with taskset, sampled by psutil."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

from ...errors import ServerError, tail
from .. import process
from ..monitor import ProcessProbe
from .base import Launch, check_port_free, start_failure_hint, wait_ready


def _exit_error(server, argv: list[str], log_path: Path, returncode) -> ServerError:
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    return ServerError(
        f"{server.name} exited during start (exit {returncode}){start_failure_hint(log)}; command: {' '.join(argv)}\n"
        f"  last lines of {log_path}:\n{tail(log, 12)}"
    )


def _silent_error(url: str, launch: Launch) -> ServerError:
    """A server that never answered: the first line as before, then what it wrote meanwhile."""
    log = launch.log_path.read_text(errors="replace") if launch.log_path.exists() else ""
    return ServerError(f"{url} did not answer within {launch.startup_timeout:.0f} s; the server is stopped\n"
                       f"  last lines of {launch.log_path}:\n{tail(log, 12) or '  (nothing)'}")


def _wide(server, launch: Launch) -> bool:
    """Whether this JVM starts on more cores than it runs on: a built-in server whose run holds more cores
    than the server's. On one pinned core Spring Boot took 5.3 s to answer, on two 3.2 s; its ergonomics
    (SerialGC, one compiler thread, the pools' sizes) stay those of its own cores through
    ``-XX:ActiveProcessorCount``, unless the JVM options set that themselves."""
    return (server.jvm and bool(launch.cpus) and bool(set(launch.start_cpus) - set(launch.cpus))
            and not any(o.startswith("-XX:ActiveProcessorCount=") for o in launch.jvm_opts))


def pin_threads(pid: int, cpus) -> None:
    """Pin every thread of ``pid`` to ``cpus``, again until no new thread shows up (a thread made meanwhile
    inherits its maker's cores, which may still be the wide ones)."""
    done: set[int] = set()
    for _ in range(10):
        try:
            threads = {int(t) for t in os.listdir(f"/proc/{pid}/task")}
        except FileNotFoundError:
            return
        if threads <= done:
            return
        for tid in threads - done:
            try:
                os.sched_setaffinity(tid, set(cpus))
            except (ProcessLookupError, PermissionError):
                pass
        done |= threads


class LocalInstance:
    def __init__(self, server, launch: Launch, argv: list[str], *, wide: bool = False):
        self.server = server
        self.launch = launch
        self.argv = argv
        self.url = f"{launch.listener.scheme}://{launch.address}:{launch.port}"
        self.startup_ms = 0.0
        self._log = open(launch.log_path, "ab")
        env = dict(os.environ, **dict(server.env)) if server.env else None
        self.wide = wide  # started on the run's cores too, pinned to its own once it answers (_wide)
        cpus = tuple(sorted(set(launch.start_cpus) | set(launch.cpus))) if self.wide else launch.cpus
        self.process = process.start(argv, cpus=cpus, stdout=self._log, stderr=self._log, env=env)
        self.metadata = {"pid": self.process.pid, "argv": argv, "cpus": list(launch.cpus)}
        if self.wide:
            self.metadata["start_cpus"] = list(cpus)  # started on these, pinned to cpus once it answered
        self._probe: ProcessProbe | None = None

    def wait(self) -> None:
        ready = self.url + (self.server.ready_path or self.server.path)
        seconds = wait_ready(
            ready,
            timeout=self.launch.startup_timeout,
            alive=self.alive,
            on_exit=lambda: _exit_error(self.server, self.argv, self.launch.log_path, self.process.poll()),
            on_timeout=lambda: _silent_error(ready, self.launch),
            protocol=self.launch.listener.protocol,
        )
        self.startup_ms = seconds * 1000.0
        if self.wide:
            pin_threads(self.process.pid, self.launch.cpus)
        self._probe = ProcessProbe(self.process.pid, io="write")

    def probe(self):
        return self._probe() if self._probe else (None, None)

    def cpu_seconds(self) -> float | None:
        """The server's process tree's CPU time so far (:meth:`ProcessProbe.cpu_seconds`); None before it answers."""
        return self._probe.cpu_seconds() if self._probe else None

    def counters(self):
        """The JVM's performance counters (:class:`~benchlab.running.perfdata.PerfData`), or None: not a JVM."""
        from ..perfdata import PerfData

        return PerfData.find(self.process.pid)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        try:
            code = process.stop(self.process)
            self.metadata["exit_code"] = code
        finally:
            self._log.close()


class LocalBackend:
    """Start servers as local processes: ``java <jvm opts> -jar <jar> --server.port=... --server.address=127.0.0.1``."""

    name = "local"

    def start(self, server, launch: Launch) -> LocalInstance:
        server.require(launch.java)
        check_port_free(launch.port, launch.address)  # waits, bounded, for the last fork's server to let it go
        folder = launch.log_path.parent  # the run's folder: nginx's configuration, pid file and temporary files
        for name, text in server.files(launch.port, address=launch.address, cpus=launch.cpus, folder=str(folder),
                                       listener=launch.listener).items():
            (folder / name).write_text(text)
        wide = _wide(server, launch)
        jvm_opts = (f"-XX:ActiveProcessorCount={len(launch.cpus)}", *launch.jvm_opts) if wide else launch.jvm_opts
        argv = server.argv(launch.port, jvm_opts=jvm_opts, java=launch.java, address=launch.address, cds=launch.cds,
                           folder=str(folder), listener=launch.listener)
        began = time.monotonic()
        instance = LocalInstance(server, launch, argv, wide=wide)
        try:
            instance.wait()
        except BaseException:
            instance.stop()
            raise
        instance.startup_ms = (time.monotonic() - began) * 1000.0
        return instance

    def load_runner(self) -> None:
        """None: the load tool runs as a local process (see :func:`benchlab.running.drivers.run_local`)."""
        return None

    def metadata(self) -> dict:
        return {"backend": "local", "hostname": platform.node()}
