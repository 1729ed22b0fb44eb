"""run() and compare(): wire a server, a backend and a driver; the run matrix and its order."""

from __future__ import annotations

import datetime as _dt
import http.client
import json
import os
import secrets
import urllib.parse
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import backends, cores, drivers, home, metadata, servers
from .errors import BenchlabError, UsageError, VerifyError
from .load import Load, parse_duration
from .monitor import Monitor
from .results import Run, save


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class RunSpec:
    """Everything one run needs, resolved and checked before anything starts."""

    server: servers.Server
    scenario: servers.Scenario
    load: Load
    driver: str
    backend: str
    server_cpus: tuple[int, ...]
    load_cpus: tuple[int, ...]
    jvm_opts: tuple[str, ...] = ()
    java: str = "java"
    memory: str | None = None
    port: int | None = None
    allow_remote: bool = False
    backend_options: dict = field(default_factory=dict)
    sample_interval: float = 0.25

    def params(self, repeat: int = 1) -> dict:
        load = self.load
        return {
            "server": self.server.name,
            "scenario": self.scenario.name,
            "path": self.scenario.path,
            "method": self.scenario.method,
            "driver": self.driver,
            "load": load.model,
            "connections": load.connections,
            "threads": load.threads,
            "users": load.users,
            "loops": load.loops,
            "rate": load.rate,
            "duration": load.duration,
            "warmup": load.warmup,
            "timeout": load.timeout,
            "ramp_up": load.ramp_up,
            "plan": load.plan,
            "backend": self.backend,
            "server_cpus": list(self.server_cpus),
            "load_cpus": list(self.load_cpus),
            "load_cores": len(self.load_cpus),
            "memory": self.memory,
            "jvm_opts": list(self.jvm_opts),
            "java": self.java,
            "repeat": repeat,
            "backend_options": {k: str(v) for k, v in sorted(self.backend_options.items())},
        }

    def cell_key(self) -> str:
        """A stable name for everything but the repeat: the same parameters give the same key."""
        import hashlib

        params = self.params()
        params.pop("repeat")
        return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:12]


def prepare(server="spring-tomcat", scenario=None, *, connections=200, threads=None, duration="30s",
            warmup="10s", timeout="10s", load="duration", users=None, loops=None, rate=None, ramp_up=0,
            plan=None, driver=None, backend="local", server_cpus=None, load_cpus=None, jvm_opts=(),
            java=None, memory=None, port=None, allow_remote=False, backend_options=None,
            sample_interval=0.25) -> RunSpec:
    """Check every argument of :func:`run` and resolve the defaults, starting nothing."""
    server = servers.get(server)
    scenario_ = server.scenario(scenario)
    if isinstance(load, Load):
        load_ = load
    else:
        server_cores, load_cores = cores.resolve(server_cpus, load_cpus)
        if threads is None:
            count = users if load == "count" and isinstance(users, int) else connections
            threads = max(1, min(len(load_cores), count if isinstance(count, int) and count > 0 else 1))
        load_ = Load(model=load, connections=connections, threads=threads, duration=duration, warmup=warmup,
                     timeout=timeout, users=users, loops=loops, rate=rate, ramp_up=ramp_up, plan=plan)
    server_cores, load_cores = cores.resolve(server_cpus, load_cpus)
    driver_ = drivers.get(driver, load_.model)
    if backend not in backends.NAMES:
        raise UsageError(f"unknown backend {backend!r}: choose one of {', '.join(backends.NAMES)}")
    if isinstance(jvm_opts, str):
        jvm_opts = jvm_opts.split()
    jvm_opts = tuple(jvm_opts or ())
    if jvm_opts and server.kind != "spring":
        raise UsageError(f"jvm_opts apply to the built-in Spring servers, not to {server.name}")
    if memory is not None and backend == "local":
        raise UsageError("memory= sets a container limit (backend='docker'); locally use jvm_opts=['-Xmx512m']")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
        raise UsageError(f"port must be 1-65535, not {port!r}")
    if server.kind == "url":
        servers.check_loopback(server.url, allow_remote=allow_remote)
    return RunSpec(
        server=server, scenario=scenario_, load=load_, driver=driver_.name, backend=backend,
        server_cpus=server_cores, load_cpus=load_cores, jvm_opts=jvm_opts,
        java=java or os.environ.get("BENCHLAB_JAVA", "java"), memory=memory, port=port,
        allow_remote=allow_remote, backend_options=dict(backend_options or {}), sample_interval=sample_interval,
    )


# --- verify -------------------------------------------------------------------------------------------

def verify(url: str, scenario: servers.Scenario, *, timeout: float = 10.0) -> tuple[int, dict, bytes]:
    """Send the scenario's request once; raise :class:`VerifyError` showing what came back if it is wrong."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    headers = {"Content-Type": scenario.content_type} if scenario.content_type else {}
    try:
        conn.request(scenario.method, scenario.path, body=scenario.body, headers=headers)
        response = conn.getresponse()
        body = response.read()
        status, response_headers = response.status, dict(response.getheaders())
    except OSError as exc:
        raise VerifyError(f"verify {scenario.method} {url}{scenario.path}: no answer ({exc})") from None
    finally:
        conn.close()
    problem = scenario.check(status, body)
    if problem:
        shown = body[:200].decode(errors="replace")
        raise VerifyError(
            f"verify {scenario.method} {url}{scenario.path}: {problem}; got {status} with body {shown!r} "
            "- check the scenario and the server's log"
        )
    return status, response_headers, body


def _server_info(url: str, server: servers.Server) -> dict:
    if server.kind != "spring":
        return {"server": server.name, "server_version": None}
    try:
        conn = http.client.HTTPConnection(urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port,
                                          timeout=10)
        conn.request("GET", "/info")
        info = json.loads(conn.getresponse().read())
        conn.close()
        return info
    except (OSError, ValueError):
        return {"server": server.flavour, "server_version": None}


class _Attached:
    """A server benchlab did not start (Server.from_url): nothing to sample or stop."""

    def __init__(self, server: servers.Server):
        self.url = server.url
        self.startup_ms = None
        self.metadata = {"attached": True}

    def probe(self):
        return (None, None)

    def alive(self) -> bool:
        return True

    def stop(self) -> None:
        pass


# --- one run ------------------------------------------------------------------------------------------

def new_run_id(spec: RunSpec) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{spec.server.name}-{spec.scenario.name}-c{spec.load.connections}-{secrets.token_hex(2)}"


def execute(spec: RunSpec, run_dir: Path, *, run_id: str, repeat: int = 1, suite: str | None = None,
            label: str | None = None, key: str | None = None, on_phase=None) -> Run:
    """Start the server, verify, warm up, measure, stop; store and return the :class:`Run`.

    The server is stopped however this ends. A :class:`BenchlabError` propagates after cleanup; the
    caller decides whether to record a failed run.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    driver = drivers.get(spec.driver, spec.load.model)
    driver.executable()
    servers.ensure_built(spec.server)
    started_at = _now()
    backend = backends.get(spec.backend, **spec.backend_options)
    phase = on_phase or (lambda name: None)

    instance = None
    try:
        phase("start")
        if spec.server.kind == "url":
            instance = _Attached(spec.server)
        else:
            port = spec.port or spec.server.port or backends.free_port()
            launch = backends.Launch(run_id=run_id, port=port, cpus=spec.server_cpus,
                                     log_path=run_dir / "server.log", jvm_opts=spec.jvm_opts, java=spec.java,
                                     memory=spec.memory)
            instance = backend.start(spec.server, launch)
        servers.check_loopback(instance.url, allow_remote=spec.allow_remote)
        phase("verify")
        status, headers, body = verify(instance.url, spec.scenario)
        info = _server_info(instance.url, spec.server)
        # A backend may run the load tool itself (docker: wrk in its own container).
        runner = backend.load_runner() if hasattr(backend, "load_runner") else None
        if spec.load.warmup > 0 and spec.load.model != "count":
            phase("warmup")
            drivers.execute(driver, instance.url, spec.scenario, spec.load, cpus=spec.load_cpus,
                            workdir=run_dir, phase="warmup", runner=runner)
        phase("measure")
        with Monitor(spec.sample_interval) as monitor:
            monitor.watch("server", instance.probe)
            metrics, _raw = drivers.execute(driver, instance.url, spec.scenario, spec.load, cpus=spec.load_cpus,
                                            workdir=run_dir, phase="measure", monitor=monitor, runner=runner)
        resources = monitor.summary()
        alive_after = instance.alive()
    finally:
        if instance is not None:
            phase("stop")
            instance.stop()

    resources["startup_ms"] = instance.startup_ms
    meta = metadata.collect(java=spec.java if spec.server.kind == "spring" else "java", driver=spec.driver)
    meta.update(
        server=info,
        backend={**backend.metadata(), **{k: v for k, v in instance.metadata.items() if k != "argv"},
                 "argv": instance.metadata.get("argv")},
        verify={"status": status, "bytes": len(body), "content_type": headers.get("Content-Type")},
        shared_cores=bool(set(spec.server_cpus) & set(spec.load_cpus)),
        server_alive_after_load=alive_after,
    )
    measured = {**{k: None for k in ("target_rps",)}, **metrics, **resources}
    files = tuple(sorted(p.name for p in run_dir.iterdir() if p.is_file() and p.name != "run.json"))
    record = Run(id=run_id, params=spec.params(repeat), metrics=measured, metadata=meta,
                 samples=tuple((s.t, s.role, s.cpu, s.rss) for s in monitor.samples), suite=suite, label=label,
                 key=key or spec.cell_key(), started_at=started_at, finished_at=_now(), files=files)
    save(record, run_dir)
    return record


def run(server="spring-tomcat", scenario=None, *, connections=200, threads=None, duration="30s", warmup="10s",
        timeout="10s", load="duration", users=None, loops=None, rate=None, ramp_up=0, plan=None, driver=None,
        backend="local", server_cpus=None, load_cpus=None, jvm_opts=(), java=None, memory=None, port=None,
        results_dir=None, allow_remote=False, label=None, **backend_options) -> Run:
    """Measure one server under one load and return the stored :class:`Run`.

    Starts ``server`` on ``server_cpus`` (the first half of the cores by default), checks one response,
    warms it up for ``warmup``, then offers the load for ``duration`` from ``load_cpus`` while sampling
    both sides' CPU and memory. The result is written to ``results_dir/<run id>/run.json`` with the load
    tool's raw output and the server log beside it.

    Parameters
    ----------
    server : "spring-tomcat", "spring-jetty", "spring-undertow", or a :class:`Server`
    scenario : "hello", "json", "reflect", "sleep", "sleep:<ms>", "echo" (built-ins) or a path (custom)
    load : "duration" (wrk), "count" (``users`` x ``loops``: h2load or JMeter) or "rate" (``rate``/s: vegeta)
    backend : "local" (a pinned process) or "docker" (a container with a cpuset)

    Example
    -------
    >>> import benchlab
    >>> r = benchlab.run("spring-jetty", "hello", connections=64, duration="5s", warmup="2s")  # doctest: +SKIP
    >>> r.to_frame()[["server", "rps", "p99"]]  # doctest: +SKIP
    """
    spec = prepare(server, scenario, connections=connections, threads=threads, duration=duration, warmup=warmup,
                   timeout=timeout, load=load, users=users, loops=loops, rate=rate, ramp_up=ramp_up, plan=plan,
                   driver=driver, backend=backend, server_cpus=server_cpus, load_cpus=load_cpus,
                   jvm_opts=jvm_opts, java=java, memory=memory, port=port, allow_remote=allow_remote,
                   backend_options=backend_options)
    run_id = new_run_id(spec)
    base = Path(results_dir) if results_dir else home.results_dir()
    return execute(spec, base / run_id, run_id=run_id, label=label)
