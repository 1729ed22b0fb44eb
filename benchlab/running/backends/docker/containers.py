"""The containers: the server's (created, started, waited for, sampled, stopped, removed), wrk's, and their stats.

Containers use the host's network, so the server binds 127.0.0.1 as it does locally and no port is
published. Every container started here is removed however the run ends.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from ....cores import format_cpus
from ....errors import LoadError, ServerError, UsageError, tail
from ..base import Launch, start_failure_hint, wait_ready
from . import images
from .engine import ROLE_LABEL, archive, container_name, is_not_found, remove

#: Where a container's files go (nginx's configuration, pid file and temporary files): made in every image.
FOLDER_IN_IMAGE = "/bench"
MIN_MEMORY = 6 * 2**20  # the engine refuses less


def parse_memory(memory: str | int | None) -> int | None:
    """Bytes from ``"512m"``, ``"2g"``, ``"1024k"`` or an int, as docker reads a memory limit.

    >>> parse_memory("512m")
    536870912
    """
    from docker.errors import DockerException
    from docker.utils import parse_bytes

    if memory is None:
        return None
    if isinstance(memory, bool):
        raise UsageError(f"bad memory {memory!r}: give a size such as 512m or 2g")
    try:
        size = parse_bytes(memory.strip() if isinstance(memory, str) else memory)
    except DockerException:
        raise UsageError(f"bad memory {memory!r}: give a size such as 512m or 2g") from None
    if size < MIN_MEMORY:
        raise UsageError(f"memory {memory!r} is below docker's minimum of 6m; a Spring Boot server needs 256m or more")
    return size


# --- sampling -------------------------------------------------------------------------------------------

def parse_stats(stats: dict) -> tuple[float | None, float | None]:
    """(cpu %, memory bytes) from one sample of the engine's stats stream; 100 % is one busy core.

    CPU is the container's share of the host's CPU time since the previous sample, times the online
    CPUs (as ``docker stats`` computes it); memory is the resident set (cgroup v1 ``total_rss``, v2
    ``anon``), the number psutil's RSS gives for a local process.
    """
    cpu, pre = stats.get("cpu_stats") or {}, stats.get("precpu_stats") or {}
    percent = None
    if pre.get("system_cpu_usage") and cpu.get("system_cpu_usage"):
        used = cpu["cpu_usage"]["total_usage"] - pre["cpu_usage"]["total_usage"]
        system = cpu["system_cpu_usage"] - pre["system_cpu_usage"]
        online = cpu.get("online_cpus") or len(cpu["cpu_usage"].get("percpu_usage") or ()) or 1
        if system > 0:
            percent = used / system * online * 100.0
    memory = stats.get("memory_stats") or {}
    detail = memory.get("stats") or {}
    rss = next((detail[k] for k in ("total_rss", "rss", "anon") if k in detail), None)
    if rss is None and "usage" in memory:
        rss = memory["usage"] - detail.get("total_inactive_file", detail.get("inactive_file", 0))
    return percent, (float(rss) if rss is not None else None)


def _cgroup_cpu(pid: int | None) -> str | None:
    """The file that counts the CPU time of ``pid``'s cgroup on this machine, or None (no such process here)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines() if pid else []
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # cgroup v2's one hierarchy
            found = Path("/sys/fs/cgroup") / path.lstrip("/") / "cpu.stat"
        elif "cpuacct" in controllers.split(","):
            found = Path("/sys/fs/cgroup") / controllers / path.lstrip("/") / "cpuacct.usage"
        else:
            continue
        if found.exists():
            return str(found)
    return None


def _read_cpu(path: str) -> float | None:
    r"""Seconds from a cgroup's ``cpu.stat`` (``usage_usec``) or ``cpuacct.usage`` (ns); None once it is gone.

    >>> import tempfile, os; f = os.path.join(tempfile.mkdtemp(), "cpu.stat")
    >>> _ = open(f, "w").write("usage_usec 2500000\nuser_usec 2000000\n"); _read_cpu(f)
    2.5
    """
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    if path.endswith("cpuacct.usage"):
        return int(text.strip()) * 1e-9
    fields = dict(line.split() for line in text.splitlines() if line.strip())
    return int(fields["usage_usec"]) * 1e-6 if "usage_usec" in fields else None


class ContainerStats:
    """A probe on the engine's stats stream (one sample a second, read by a thread).

    Each sample is handed to the monitor once, so the monitor stamps it with its own clock; between
    samples the probe returns ``(None, None)``, which the monitor skips.
    """

    def __init__(self, client, container_id: str):
        self._latest: tuple[float | None, float | None] | None = None
        self._lock = threading.Lock()
        self._stream = client.api.stats(container_id, stream=True, decode=True)
        self._thread = threading.Thread(target=self._read, name="benchlab-docker-stats", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for stats in self._stream:  # ends when the container stops
                sample = parse_stats(stats)
                if sample[0] is not None:
                    with self._lock:
                        self._latest = sample
        except Exception:  # the container was removed under the stream: sampling just ends
            pass

    def __call__(self) -> tuple[float | None, float | None]:
        with self._lock:
            sample, self._latest = self._latest, None
        return sample or (None, None)


class DockerInstance:
    """One server container: created, started, waited for, sampled, stopped and removed."""

    def __init__(self, client, server, launch: Launch, image: images.Image, *, url: str, bind: str,
                 labels: dict, grace: float):
        self.client = client
        self.server = server
        self.launch = launch
        self.image = image
        self.url = url
        self.name = container_name(launch.run_id)
        self.grace = grace
        self.startup_ms = 0.0
        # docker's Container, which the SDK leaves untyped; None only until create() returns (see stop)
        self.container: Any = None
        self._stats: ContainerStats | None = None
        self._cgroup: str | None = None  # the file counting its CPU time ("" where this machine cannot read it)
        self._exited = threading.Event()
        self._stopped = False
        listener, secrets = launch.listener.within(FOLDER_IN_IMAGE)  # over TLS, its certificate and key copied in
        argv = server.container_argv(launch.port, jvm_opts=launch.jvm_opts, address=bind, folder=FOLDER_IN_IMAGE,
                                     listener=listener)
        files = server.files(launch.port, address=bind, cpus=launch.cpus, folder=FOLDER_IN_IMAGE, listener=listener)
        for name, text in files.items():  # kept beside the run's log too, as the local backend keeps them
            (Path(launch.log_path).parent / name).write_text(text)
        memory = parse_memory(launch.memory)
        self.metadata: dict = {"container": self.name, "image": image.tag, "image_id": image.id, "argv": argv,
                               "cpus": list(launch.cpus)}
        self._began = time.monotonic()
        self.container = client.containers.create(
            image.tag, entrypoint=argv[:1], command=argv[1:], name=self.name, labels=labels,
            network_mode="host", cpuset_cpus=format_cpus(launch.cpus), mem_limit=memory, memswap_limit=memory,
            detach=True,
        )
        self.metadata["container_id"] = self.container.id
        if files or secrets:  # the folder comes with them: a Spring image has no /bench of its own
            self.container.put_archive("/", archive({**{k: v.encode() for k, v in files.items()}, **secrets},
                                                 folder=FOLDER_IN_IMAGE))
        self.container.start()
        threading.Thread(target=self._watch_exit, name="benchlab-docker-wait", daemon=True).start()

    def _watch_exit(self) -> None:
        # One long-polling wait instead of an inspect every 10 ms while the server starts.
        import requests

        while not self._stopped:
            try:
                self.client.api.wait(self.container.id, timeout=60)
                break
            except requests.exceptions.RequestException:
                time.sleep(0.1)  # the wait timed out (the container still runs) or the engine hiccuped
                continue
            except Exception:  # the engine says the container is gone (removed, or lost): it has exited
                break
        self._exited.set()

    def wait(self) -> None:
        ready = self.url + (self.server.ready_path or self.server.path)
        wait_ready(ready, timeout=self.launch.startup_timeout, alive=self.alive, on_exit=self._exit_error,
                   protocol=self.launch.listener.protocol)
        self.startup_ms = (time.monotonic() - self._began) * 1000.0
        self._stats = ContainerStats(self.client, self.container.id)
        attrs = self.client.api.inspect_container(self.container.id)
        host = attrs["HostConfig"]
        self.metadata.update(limits={"cpuset_cpus": host.get("CpusetCpus"), "memory": host.get("Memory") or None,
                                     "memory_swap": host.get("MemorySwap") or None,
                                     "network_mode": host.get("NetworkMode")},
                             image_digests=self.client.images.get(self.image.tag).attrs.get("RepoDigests") or [],
                             image_digest=self.image.id)

    def probe(self) -> tuple[float | None, float | None]:
        return self._stats() if self._stats else (None, None)

    def cpu_seconds(self) -> float | None:
        """The container's CPU time so far, user and system: its cgroup's ``cpu.stat`` ``usage_usec`` (v1: ns), as
        HttpArena reads it, found by its first process's host pid; None on an engine elsewhere."""
        if self._cgroup is None:
            self._cgroup = _cgroup_cpu(self._host_pid()) or ""
        return _read_cpu(self._cgroup) if self._cgroup else None

    def _host_pid(self) -> int | None:
        try:
            return self.client.api.inspect_container(self.container.id)["State"]["Pid"] or None
        except Exception:  # an engine that cannot say (the container gone, the engine elsewhere): no pid
            return None

    def counters(self):
        """The JVM's counters, read through the container's root by its java's host pid (None: engine elsewhere)."""
        from ...perfdata import PerfData

        pid = self._host_pid()
        return PerfData.find(pid) if pid else None

    def alive(self) -> bool:
        return self.container is not None and not self._exited.is_set()

    def _exit_error(self) -> ServerError:
        state = self.client.api.inspect_container(self.container.id)["State"]
        log = self._save_log()
        code, oom = state.get("ExitCode"), state.get("OOMKilled")
        if oom or code == 137 or "OutOfMemoryError" in log or "Could not reserve enough space" in log:
            hint = (f" - out of memory at memory={self.launch.memory!r} (OOM-killed: {bool(oom)}): raise memory= "
                    "(Spring Boot needs about 256m) or leave it unset")
        else:
            hint = start_failure_hint(log)
        return ServerError(
            f"{self.server.name} exited during start in container {self.name} (exit {code}){hint}\n"
            f"  last lines of {self.launch.log_path}:\n{tail(log, 12)}"
        )

    def _save_log(self) -> str:
        try:
            log = self.container.logs(stdout=True, stderr=True).decode(errors="replace")
        except Exception as exc:  # only NotFound is kept (docker is imported when first used, by is_not_found)
            if not is_not_found(exc):
                raise
            return Path(self.launch.log_path).read_text(errors="replace") if Path(self.launch.log_path).exists() else ""
        Path(self.launch.log_path).write_text(log)
        return log

    def stop(self) -> None:
        """Stop (SIGTERM, SIGKILL after the grace period), keep the log, remove; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        container = self.container
        try:
            if container is None:
                container = self.client.containers.get(self.name)  # interrupted between create and return
            container.stop(timeout=int(self.grace))
            self._save_log()
            state = self.client.api.inspect_container(container.id)["State"]
            self.metadata.update(exit_code=state.get("ExitCode"), oom_killed=state.get("OOMKilled"))
        except Exception as exc:  # only NotFound is kept: a container already gone is stopped
            if not is_not_found(exc):
                raise
        finally:
            remove(self.client, container, self.name)


# --- load in a container --------------------------------------------------------------------------------

class ContainerLoad:
    """Runs the load tool's argv in its own container with its own cpuset: a ``drivers.execute`` runner.

    Files of the run directory named on the command line (wrk's Lua script) are copied into the
    container, so this works on an engine on another machine too.
    """

    def __init__(self, client, *, run_id: str, labels: dict):
        self.client = client
        self.run_id = run_id
        self.labels = labels
        self.count = 0
        self.image = images.build_wrk(client)

    def __call__(self, argv: list[str], *, cpus, timeout: float, monitor=None, workdir: Path | None = None,
                 before_start=None):
        """Run ``argv`` in a new container; ``before_start()`` is called once it is ready to start (a barrier that
        starts several generators together)."""
        import requests

        from ...process import Finished

        tool = Path(argv[0]).name
        if tool != "wrk":
            raise UsageError(f"load in a container runs wrk only, not {tool}: use driver='wrk' or a local load tool")
        files: dict[str, bytes] = {}
        command = [tool]
        for arg in argv[1:]:
            path = Path(arg)
            if workdir is not None and path.is_file() and path.resolve().parent == Path(workdir).resolve():
                files[path.name] = path.read_bytes()
                command.append(f"/bench/{path.name}")
            else:
                command.append(arg)
        self.count += 1
        name = container_name(self.run_id, f"-load-{self.count}")
        began = time.monotonic()
        container = None
        try:
            container = self.client.containers.create(
                self.image.tag, command=command, name=name, labels={**self.labels, ROLE_LABEL: "load"},
                network_mode="host", cpuset_cpus=format_cpus(cpus) if cpus else None, detach=True,
            )
            container.put_archive("/", archive(files, folder=FOLDER_IN_IMAGE))
            if before_start is not None:
                before_start()
            container.start()
            if monitor is not None:
                monitor.watch("load", ContainerStats(self.client, container.id))
            try:
                status = container.wait(timeout=timeout)["StatusCode"]
            except requests.exceptions.RequestException:
                raise LoadError(f"{tool} in container {name} did not finish within {timeout:.0f} s and was removed: "
                                f"{' '.join(command)}") from None
            stdout = container.logs(stdout=True, stderr=False).decode(errors="replace")
            stderr = container.logs(stdout=False, stderr=True).decode(errors="replace")
        finally:
            remove(self.client, container, name)
        return Finished(tuple(command), status, stdout, stderr, time.monotonic() - began)

