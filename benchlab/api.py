"""run() and compare(): wire a server, a backend and a driver; the run matrix and its order."""

from __future__ import annotations

import datetime as _dt
import http.client
import json
import os
import secrets
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from . import backends, cores, drivers, home, metadata, servers
from .errors import LoadError, ServerError, UsageError, VerifyError
from .load import Load
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
    server_cores, load_cores = cores.resolve(server_cpus, load_cpus)
    if isinstance(load, Load):
        load_ = load
    else:
        if threads is None:
            count = users if load == "count" and isinstance(users, int) else connections
            threads = max(1, min(len(load_cores), count if isinstance(count, int) and count > 0 else 1))
        load_ = Load(model=load, connections=connections, threads=threads, duration=duration, warmup=warmup,
                     timeout=timeout, users=users, loops=loops, rate=rate, ramp_up=ramp_up, plan=plan)
    driver_ = drivers.get(driver, load_.model)
    driver_.check(load_)  # a driver's own input checks (a user's .jmx), before anything starts
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
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("GET", "/info")
        return json.loads(conn.getresponse().read())
    except (OSError, ValueError):
        return {"server": server.flavour, "server_version": None}
    finally:
        conn.close()


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

def _warm_up(driver, url: str, spec: RunSpec, run_dir: Path, runner) -> None:
    """Warm the server for ``spec.load.warmup`` seconds; nothing of it is recorded.

    A count load has no duration of its own (and h2load's own warm-up option skews its byte counts), so
    wrk warms the server for it with the same number of connections.
    """
    load = spec.load
    if load.model == "count":
        driver = drivers.tool("wrk")
        load = Load(connections=load.users, threads=min(load.threads, load.users), duration=load.warmup,
                    warmup=load.warmup, timeout=load.timeout)
    drivers.execute(driver, url, spec.scenario, load, cpus=spec.load_cpus, workdir=run_dir, phase="warmup",
                    runner=runner)


def new_run_id(spec: RunSpec) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{spec.server.name}-{spec.scenario.name}-c{spec.load.connections}-{secrets.token_hex(2)}"


def execute(spec: RunSpec, run_dir: Path, *, run_id: str, repeat: int = 1, suite: str | None = None,
            label: str | None = None, key: str | None = None, on_phase=None, instance=None) -> Run:
    """Start the server, verify, warm up, measure, stop; store and return the :class:`Run`.

    The server is stopped however this ends. A :class:`BenchlabError` propagates after cleanup; the
    caller decides whether to record a failed run. A given ``instance`` (an already started server) is
    used as it is and left running.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    driver = drivers.get(spec.driver, spec.load.model)
    driver.executable()
    servers.ensure_built(spec.server)
    started_at = _now()
    backend = backends.get(spec.backend, **spec.backend_options)
    phase = on_phase or (lambda name: None)

    owned = instance is None
    try:
        phase("start")
        if instance is not None:
            pass
        elif spec.server.kind == "url":
            instance = _Attached(spec.server)
        else:
            port = spec.port or spec.server.port or backends.free_port()
            launch = backends.Launch(run_id=run_id, port=port, cpus=spec.server_cpus,
                                     log_path=run_dir / "server.log", jvm_opts=spec.jvm_opts, java=spec.java,
                                     memory=spec.memory, allow_remote=spec.allow_remote)
            instance = backend.start(spec.server, launch)
        servers.check_loopback(instance.url, allow_remote=spec.allow_remote)
        phase("verify")
        status, headers, body = verify(instance.url, spec.scenario)
        info = _server_info(instance.url, spec.server)
        # A backend may run the load tool itself (docker: wrk in its own container).
        runner = backend.load_runner()
        if spec.load.warmup > 0:
            phase("warmup")
            _warm_up(driver, instance.url, spec, run_dir, runner)
        phase("measure")
        with Monitor(spec.sample_interval) as monitor:
            monitor.watch("server", instance.probe)
            metrics, _raw = drivers.execute(driver, instance.url, spec.scenario, spec.load, cpus=spec.load_cpus,
                                            workdir=run_dir, phase="measure", monitor=monitor, runner=runner)
        resources = monitor.summary()
        alive_after = instance.alive()
    finally:
        if owned and instance is not None:
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


# --- compare ------------------------------------------------------------------------------------------

ORDERS = ("interleaved", "shuffled")
RESTARTS = ("each-run", "never")


def _as_list(value, name: str) -> list:
    if value is None:
        return [None]
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [value]
    values = list(value)
    if not values:
        raise UsageError(f"{name} is empty: give at least one value")
    return values


def _load_points(load: str, connections, users, loops, rates) -> list[dict]:
    """The load settings of the matrix: connections (duration), users x loops pairs (count) or rates."""
    if load == "count":
        users_, loops_ = _as_list(users, "users"), _as_list(loops, "loops")
        if len(users_) == 1 and len(loops_) > 1:
            users_ = users_ * len(loops_)
        if len(loops_) == 1 and len(users_) > 1:
            loops_ = loops_ * len(users_)
        if len(users_) != len(loops_):
            raise UsageError("users and loops pair up: give lists of the same length, e.g. users=[100, 1000], "
                             "loops=[1000, 100]")
        return [{"users": u, "loops": n, "connections": u} for u, n in zip(users_, loops_)]
    if load == "rate":
        if rates is None:
            raise UsageError("a rate comparison needs rates=[...] in requests per second, e.g. rates=[500, 1000]")
        return [{"rate": r, "connections": c} for r in _as_list(rates, "rates")
                for c in _as_list(connections, "connections")]
    return [{"connections": c} for c in _as_list(connections, "connections")]


def _load_tag(spec: RunSpec) -> str:
    load = spec.load
    if load.model == "count":
        return f"u{load.users}x{load.loops}"
    if load.model == "rate":
        return f"rate{load.rate:g}"
    return f"c{load.connections}"


def plan(servers=servers.BUILTINS, scenarios=("hello",), connections=(200,), repeats=3, *, order="interleaved",
         seed=None, load="duration", users=None, loops=None, rates=None, **options) -> list[tuple[int, RunSpec]]:
    """The run matrix of :func:`compare` in the order it runs: ``[(repeat, spec), ...]``.

    Each repeat runs every cell and every server once before the next repeat starts (A B C A B C), so a
    drift on the machine hits every server alike; ``order="shuffled"`` shuffles inside each repeat.
    """
    import random

    server_list = _as_list(servers, "servers") if servers is not None else []
    if not server_list or server_list == [None]:
        raise UsageError("servers is empty: give at least one, e.g. servers=['spring-tomcat', 'spring-jetty']")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise UsageError(f"repeats must be a whole number of 1 or more, not {repeats!r}")
    if order not in ORDERS:
        raise UsageError(f"unknown order {order!r}: choose one of {', '.join(ORDERS)} (never grouped A A A B B B)")
    names = [servers_module.get(s).name for s in server_list]
    if len(set(names)) != len(names):
        raise UsageError(f"servers lists one server twice: {', '.join(names)}")
    cells = []
    for scenario in _as_list(scenarios, "scenarios"):
        for point in _load_points(load, connections, users, loops, rates):
            cells.append([prepare(s, scenario, load=load, **{**options, **point}) for s in server_list])
    rng = random.Random(seed)
    matrix = []
    for repeat in range(1, repeats + 1):
        block = [spec for cell in cells for spec in cell]
        if order == "shuffled":
            rng.shuffle(block)
        matrix.extend((repeat, spec) for spec in block)
    return matrix


servers_module = servers


def _suite_id(matrix: list[tuple[int, RunSpec]]) -> str:
    import hashlib

    keys = sorted({spec.cell_key() for _, spec in matrix})
    return hashlib.sha256(",".join(keys).encode()).hexdigest()[:10]


def _failed_run(spec: RunSpec, run_id: str, repeat: int, suite: str, key: str, error: BaseException,
                started_at: str, run_dir: Path, label) -> Run:
    files = tuple(sorted(p.name for p in run_dir.iterdir() if p.is_file() and p.name != "run.json"))
    record = Run(id=run_id, params=spec.params(repeat), metrics={}, metadata={}, status="failed",
                 error=f"{type(error).__name__}: {error}", suite=suite, label=label, key=key,
                 started_at=started_at, finished_at=_now(), files=files)
    save(record, run_dir)
    return record


def compare(servers=servers.BUILTINS, scenarios=("hello",), connections=(200,), repeats=3, *, duration="30s",
            warmup="10s", timeout="10s", threads=None, load="duration", users=None, loops=None, rates=None,
            driver=None, order="interleaved", restart="each-run", seed=None, baseline=None, backend="local",
            server_cpus=None, load_cpus=None, jvm_opts=(), java=None, memory=None, results_dir=None,
            progress=True, allow_remote=False, label=None, on_run=None, **backend_options):
    """Run every server in every cell ``repeats`` times, interleaved, and return a :class:`Suite`.

    Each finished run is on disk (``results_dir/<run>/run.json``) before the next starts. Calling again
    with the same parameters and ``results_dir`` runs only the missing (or failed) runs, so an
    interrupted comparison, by Ctrl-C, a crash or a killed kernel, resumes where it stopped. A run that
    fails is recorded as failed and the others go on.

    Parameters
    ----------
    servers : the servers to compare; the first is the baseline unless ``baseline`` names another
    scenarios, connections : lists; with ``load="count"`` pair ``users`` and ``loops`` lists instead, and
        with ``load="rate"`` give ``rates`` (requests/s) for a rate sweep
    order : "interleaved" (A B C A B C) or "shuffled" (shuffled inside each repeat, with ``seed``)
    restart : "each-run" (a fresh server every run, the default) or "never" (each server started once)
    on_run : called with each :class:`Run` as it is stored (or found stored), failed ones included, so a
        notebook can redraw while the comparison goes on

    Example
    -------
    >>> import benchlab
    >>> suite = benchlab.compare(["spring-tomcat", "spring-jetty"], repeats=3,
    ...                          duration="10s", warmup="5s")              # doctest: +SKIP
    >>> suite.verdicts()["verdict"].tolist()                               # doctest: +SKIP
    """
    from .progress import Progress
    from .results import Suite, read

    if restart not in RESTARTS:
        raise UsageError(f"unknown restart {restart!r}: choose one of {', '.join(RESTARTS)}")
    matrix = plan(servers, scenarios, connections, repeats, order=order, seed=seed, load=load, users=users,
                  loops=loops, rates=rates, duration=duration, warmup=warmup, timeout=timeout, threads=threads,
                  driver=driver, backend=backend, server_cpus=server_cpus, load_cpus=load_cpus,
                  jvm_opts=jvm_opts, java=java, memory=memory, allow_remote=allow_remote,
                  backend_options=backend_options)
    names = list(dict.fromkeys(spec.server.name for _, spec in matrix))
    if baseline is not None:
        baseline = servers_module.get(baseline).name if baseline not in names else baseline
        if baseline not in names:
            raise UsageError(f"unknown baseline {baseline!r}: choose one of {', '.join(names)}")
    suite_id = _suite_id(matrix)
    base = Path(results_dir) if results_dir else home.results_dir() / f"compare-{suite_id}"
    base.mkdir(parents=True, exist_ok=True)

    bar = Progress([spec.load.warmup + spec.load.planned_seconds for _, spec in matrix], enabled=progress)
    records: list[Run] = []
    shared: dict[str, object] = {}
    try:
        for repeat, spec in matrix:
            key = spec.cell_key()
            run_id = f"{spec.server.name}-{spec.scenario.name.replace(':', '')}-{_load_tag(spec)}-r{repeat}-{key[:8]}"
            run_dir = base / run_id
            done = run_dir / "run.json"
            if done.exists():
                previous = read(done)
                if previous.status == "ok":
                    records.append(previous)
                    if on_run:
                        on_run(previous)
                    bar.finish(ran=False)
                    continue
            if run_dir.exists():  # an unfinished or failed attempt: start that run again, clean
                for leftover in run_dir.iterdir():
                    if leftover.is_file():
                        leftover.unlink()
            bar.start(f"{spec.server.name} {spec.scenario.name} {_load_tag(spec)} r{repeat}")
            started_at = _now()
            try:
                instance = _shared_instance(shared, spec, base) if restart == "never" else None
                records.append(execute(spec, run_dir, run_id=run_id, repeat=repeat, suite=suite_id, label=label,
                                       key=key, on_phase=bar.phase, instance=instance))
            except (ServerError, VerifyError, LoadError) as exc:
                records.append(_failed_run(spec, run_id, repeat, suite_id, key, exc, started_at, run_dir, label))
                import sys

                print(f"benchlab: run {run_id} failed: {str(exc).splitlines()[0]}", file=sys.stderr)
            if on_run:
                on_run(records[-1])
            bar.finish()
    finally:
        for instance in shared.values():
            instance.stop()
        bar.close()
    return Suite(records, baseline=baseline or names[0], path=str(base))


def _shared_instance(shared: dict, spec: RunSpec, base: Path):
    """restart="never": each server is started once, on its cores, and kept for all its runs."""
    name = spec.server.name
    if name not in shared:
        servers.ensure_built(spec.server)
        backend = backends.get(spec.backend, **spec.backend_options)
        port = spec.port or spec.server.port or backends.free_port()
        launch = backends.Launch(run_id=f"shared-{name}", port=port, cpus=spec.server_cpus,
                                 log_path=base / f"{name}.server.log", jvm_opts=spec.jvm_opts, java=spec.java,
                                 memory=spec.memory, allow_remote=spec.allow_remote)
        shared[name] = backend.start(spec.server, launch)
    return shared[name]
