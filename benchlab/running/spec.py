"""The options of a run, written once, and the run spec they resolve to, checked before anything starts.

:data:`OPTIONS` is the one list of what :func:`benchlab.run` and :func:`benchlab.compare` take. The
functions name every option in their signatures (a test checks them against this list), the command line
is generated from it, and :func:`prepare` checks every per-run option in one place, so an option cannot
reach a backend unchecked, or exist in one front end and not another.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import inspect
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import cores
from ..errors import UsageError
from . import backends, drivers, process, servers, variants
from .load import Load, parse_duration


@dataclass(frozen=True)
class Option:
    """One option: its name in Python and the notebooks, how the command line reads it, and its help.

    ``kind`` is how a command-line value becomes a Python one: ``text``, ``int``, ``float``, ``bool``
    (``--x`` / ``--no-x``), ``texts``/``ints``/``floats`` (comma-separated lists) or ``repeat`` (the flag
    given once per value) or ``count`` (a whole number or ``auto``). ``where`` is ``run``, ``compare`` or
    ``both``.
    """

    name: str
    kind: str
    where: str
    help: str
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # other flags for it, e.g. --factor for --factors

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


LOAD_MODELS = ("duration", "count", "rate")
ORDERS = ("interleaved", "shuffled")
RESTARTS = ("each-run", "never")
#: How a comparison's windows are ordered: each fork's windows back to back, forks interleaved ("forks"), or the
#: forks of a round alive together with their windows interleaved ("windows": benchlab.running.rounds).
INTERLEAVES = ("forks", "windows")

#: Options only the docker backend reads; given with backend="local" they are a mistake, said at once.
DOCKER_OPTIONS = ("docker_host", "base_image", "load_in_container", "load_docker_host")

OPTIONS: tuple[Option, ...] = (
    Option("server", "text", "run", "the server: spring-tomcat, spring-jetty, spring-undertow, spring-webflux, a "
           "variant such as spring-tomcat+vt@java25, or http://127.0.0.1:PORT/PATH"),
    Option("servers", "texts", "compare", "the servers to compare, comma separated; the first is the baseline"),
    Option("scenario", "text", "run", "hello, json, reflect, sleep, sleep:<ms>, echo (or a path for your own server)"),
    Option("scenarios", "texts", "compare", "one or more scenarios, comma separated"),
    Option("connections", "int", "run", "concurrent connections of the load generator"),
    Option("connections", "ints", "compare", "one or more connection counts, comma separated"),
    Option("repeats", "count", "compare", "runs per server and cell, interleaved; auto: until precision is reached"),
    Option("iterations", "count", "compare", "measured windows per repeat: each repeat is one server process (a "
           "fork), warmed once, then this many windows (see --interleave); auto: chosen from what forks and windows "
           "cost and how much each varies"),
    Option("interleave", "text", "compare", "forks: each fork's windows back to back; windows: a round's forks "
           "kept running and their windows taken in turn, spread over the round", INTERLEAVES),
    Option("precision", "float", "compare", "repeats=auto: add rounds until every rps ratio is within +/- this"),
    Option("max_repeats", "int", "compare", "repeats=auto: the most rounds; short of precision then, it is said"),
    Option("threads", "int", "both", "load threads (default: one per load core)"),
    Option("duration", "text", "both", "measured time, e.g. 30s or 2m"),
    Option("warmup", "text", "both", "warm-up before each measurement: auto (until throughput stops rising) or a "
           "time such as 30s"),
    Option("timeout", "text", "both", "per-request timeout, e.g. 10s"),
    Option("load", "text", "both", "the load model", LOAD_MODELS),
    Option("users", "int", "run", "count model: parallel users"),
    Option("users", "ints", "compare", "count model: users per cell, comma separated (pairs with --loops)"),
    Option("loops", "int", "run", "count model: requests per user"),
    Option("loops", "ints", "compare", "count model: loops per cell, comma separated (pairs with --users)"),
    Option("rate", "float", "run", "rate model: requests per second"),
    Option("rates", "floats", "compare", "rate model: requests per second per cell, comma separated"),
    Option("ramp_up", "text", "both", "jmeter: the time over which its users start, e.g. 5s"),
    Option("plan", "text", "both", "jmeter: a .jmx test plan of your own"),
    Option("driver", "text", "both", "wrk, h2load, jmeter or vegeta (default: the load model's own)"),
    Option("pipeline", "int", "both", "requests a connection sends together (HTTP/1.1 pipelining; wrk, "
           "load=duration; TechEmpower's pipelined test sends 16); wrk records one latency a batch"),
    Option("keepalive", "bool", "both", "requests reuse connections; --no-keepalive opens one per request of a "
           "rate load (vegeta -keepalive=false, as a new Gatling user per request does) or a duration load (wrk "
           "sends Connection: close), and its warm-up too"),
    Option("order", "text", "compare", "the order of the runs in each repeat", ORDERS),
    Option("seed", "int", "compare", "the seed of order=shuffled"),
    Option("restart", "text", "compare", "a fresh server for each run, or one per server kept for all", RESTARTS),
    Option("baseline", "text", "compare", "the server the others are compared with (default: the first)"),
    Option("backend", "text", "both", "where the server runs", tuple(backends.NAMES)),
    Option("server_cpus", "text", "both", "cores for the server, e.g. 0 or 0-3 (default: the first half)"),
    Option("load_cpus", "text", "both", "cores for the load generator, e.g. 1 or 4-7 (default: the rest)"),
    Option("jvm_opts", "repeat", "both", "a JVM option for the server, once per option, e.g. --jvm-opts=-Xmx512m"),
    Option("java", "text", "both", "the java binary of the server (default: java on PATH)"),
    Option("cds", "bool", "both", "start the built-in servers from a Class Data Sharing archive (half the startup)"),
    Option("memory", "text", "both", "docker: the server container's memory limit, e.g. 1g"),
    Option("port", "int", "both", "the server's port (default: a free one)"),
    Option("startup_timeout", "text", "both", "how long a server may take to answer after its start, e.g. 90s"),
    Option("allow_remote", "bool", "both", "allow load to an address that is not loopback (a machine you own)"),
    Option("docker_host", "text", "both", "docker: the server's engine (a DOCKER_HOST url)"),
    Option("base_image", "text", "both", "docker: a registry base image for the servers, e.g. eclipse-temurin:17-jre"),
    Option("load_in_container", "bool", "both", "docker: run wrk in its own container"),
    Option("load_docker_host", "text", "both", "docker: the engine of wrk's container"),
    Option("factors", "repeat", "compare", "a factor crossed with every server, once per factor, e.g. --factor "
           "virtual_threads=false,true --factor java=17,25 (java, virtual_threads, max_threads, gc, heap, aot, "
           "server_cpus)", aliases=("--factor",)),
    Option("results_dir", "text", "both", "where results are stored (default data/results)"),
    Option("label", "text", "both", "a label stored with every run, e.g. the machine or the change measured"),
    Option("progress", "bool", "compare", "show a progress bar with an ETA"),
)

#: Options of the Python functions that a command line cannot carry: a callback.
PYTHON_ONLY = {"compare": ("on_run", "on_progress", "on_slice"), "run": ()}


def options(where: str) -> list[Option]:
    """The options of ``run`` or ``compare``, in the order of :data:`OPTIONS`."""
    return [o for o in OPTIONS if o.where in (where, "both")]


def keywords(function):
    """Refuse an unknown keyword with a :class:`UsageError` that names it and the valid ones."""
    names = list(inspect.signature(function).parameters)

    @functools.wraps(function)
    def checked(*args, **kwargs):
        unknown = [k for k in kwargs if k not in names]
        if unknown:
            near = difflib.get_close_matches(unknown[0], names, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise UsageError(f"{function.__name__}() has no option {', '.join(unknown)}{hint}; "
                             f"its options are {', '.join(names)}")
        return function(*args, **kwargs)

    return checked


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
    cds: bool = True
    memory: str | None = None
    port: int | None = None
    startup_timeout: float = 90.0
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
            "cds": self.cds,
            "repeat": repeat,
            "backend_options": {k: str(v) for k, v in sorted(self.backend_options.items())},
            # A variant's settings, only when given: the runs of a plain server keep the keys they had; so too
            # a pipelined load's depth.
            **self.server.settings.asked(),
            **({"pipeline": load.pipeline} if load.pipeline > 1 else {}),
            **({"keepalive": False} if not load.keepalive else {}),
        }

    @property
    def server_java(self) -> str:
        """The JVM the server runs on: its variant's java setting, else the ``java`` option."""
        return self.server.settings.java or self.java

    def build(self) -> None:
        """The server's jar built, and its CDS archive or AOT cache for this run's java made, before any run's
        time starts (a container starts from its image's jar, without an archive)."""
        from .jars import ensure_built

        ensure_built(self.server, java=self.server_java, cds=self.cds and self.backend == "local")

    def launch(self, run_id: str, log_path: Path) -> backends.Launch:
        """How a backend starts this spec's server: its port (the one asked, or a free one), cores and JVM."""
        return backends.Launch(run_id=run_id, port=self.port or self.server.port or backends.free_port(),
                               cpus=self.server_cpus, log_path=log_path, jvm_opts=self.jvm_opts, java=self.server_java,
                               cds=self.cds, memory=self.memory, allow_remote=self.allow_remote,
                               startup_timeout=self.startup_timeout,
                               start_cpus=tuple(self.load_cpus) if self.backend == "local" else ())

    def cell_key(self) -> str:
        """A stable name for everything but the repeat: the same parameters give the same key."""
        params = self.params()
        params.pop("repeat")
        return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _choice(name: str, value, choices) -> None:
    if value not in choices:
        raise UsageError(f"unknown {name} {value!r}: choose one of {', '.join(choices)}")


def prepare(server="spring-tomcat", scenario=None, *, connections=200, threads=None, duration="30s",
            warmup="auto", timeout="10s", load="duration", users=None, loops=None, rate=None, ramp_up=0,
            plan=None, driver=None, pipeline=1, keepalive=True, backend="local", server_cpus=None, load_cpus=None,
            jvm_opts=(), java=None, cds=True, memory=None, port=None, startup_timeout="90s", allow_remote=False,
            docker_host=None, base_image=None, load_in_container=False, load_docker_host=None, tools=True) -> RunSpec:
    """Check every per-run option of :func:`benchlab.run` and resolve the defaults, starting nothing.

    Ports and files are checked here too, so a mistake is one line before any build, start or write; then,
    unless ``tools`` is False, the programs the run needs (:func:`check_tools`).
    """
    server = servers.get(server)
    scenario_ = server.scenario(scenario)
    server_cores, load_cores = cores.resolve(server_cpus, load_cpus)
    load_ = load if isinstance(load, Load) else _load(
        load, load_cores, connections=connections, threads=threads, duration=duration, warmup=warmup,
        timeout=timeout, users=users, loops=loops, rate=rate, ramp_up=ramp_up, plan=plan, pipeline=pipeline,
        keepalive=keepalive)
    driver_ = drivers.get(driver, load_.model)
    driver_.check(load_)  # a driver's own input checks (a user's .jmx)
    _choice("backend", backend, backends.NAMES)
    docker = _docker_options(backend, docker_host=docker_host, base_image=base_image,
                             load_in_container=load_in_container, load_docker_host=load_docker_host)
    jvm_opts = _jvm_opts(jvm_opts, server)
    if not isinstance(cds, bool):
        raise UsageError(f"cds is True or False, not {cds!r}")
    if memory is not None and backend == "local":
        raise UsageError("memory= sets a container limit (backend='docker'); locally use jvm_opts=['-Xmx512m']")
    java = _java(java, server, backend)
    variants.check_launch(server.settings, java=java, jvm_opts=jvm_opts, backend=backend)
    if port is not None:
        _check_port(port, server)
    startup = parse_duration(startup_timeout, what="startup_timeout")
    if startup <= 0:
        raise UsageError("startup_timeout must be more than 0 seconds, for example '90s'")
    if not server.starts:
        servers.check_loopback(server.url, allow_remote=allow_remote)
    if backend == "docker":
        _check_docker(docker_host, load_docker_host, memory, allow_remote=allow_remote)
    spec = RunSpec(
        server=server, scenario=scenario_, load=load_, driver=driver_.name, backend=backend,
        server_cpus=server_cores, load_cpus=load_cores, jvm_opts=jvm_opts, java=java, cds=bool(cds), memory=memory,
        port=port, startup_timeout=startup, allow_remote=allow_remote, backend_options=docker,
    )
    if tools:
        check_tools(spec)
    return spec


def check_tools(spec: RunSpec) -> None:
    """The programs the run starts are installed: the load tool, a local Spring server's java and a command
    server's program. Checked after every option, so a wrong option is named even where a tool is missing
    (and the fast tier of the tests needs none)."""
    drivers.get(spec.driver, spec.load.model).executable()
    if spec.backend == "local":  # a container has its own JDK
        for program, install in spec.server.programs(spec.java):
            process.require(program, install)


def _load(model: str, load_cores, *, connections, threads, duration, warmup, timeout, users, loops, rate, ramp_up,
          plan, pipeline=1, keepalive=True) -> Load:
    """The load from its options; threads default to one per load core, at most one per connection (or user)."""
    _choice("load", model, LOAD_MODELS)
    if threads is None:
        count = users if model == "count" and isinstance(users, int) else connections
        threads = max(1, min(len(load_cores), count if isinstance(count, int) and count > 0 else 1))
    if plan is not None:  # the load tool runs in the run's directory: a relative path would miss
        plan = str(Path(plan).resolve())
    return Load(model=model, connections=connections, threads=threads, duration=duration, warmup=warmup,
                timeout=timeout, users=users, loops=loops, rate=rate, ramp_up=ramp_up, plan=plan, pipeline=pipeline,
        keepalive=keepalive)


def _docker_options(backend: str, *, docker_host, base_image, load_in_container, load_docker_host) -> dict:
    """The docker-only options that were given; given with another backend they are a mistake."""
    docker = {"docker_host": docker_host, "base_image": base_image, "load_in_container": load_in_container,
              "load_docker_host": load_docker_host}
    docker = {k: v for k, v in docker.items() if v not in (None, False)}
    if docker and backend != "docker":
        raise UsageError(f"{', '.join(docker)} applies to backend='docker' (--backend docker); add it or drop "
                         f"{'this option' if len(docker) == 1 else 'these options'}")
    return docker


def _jvm_opts(jvm_opts, server: servers.Server) -> tuple[str, ...]:
    """The JVM options as a tuple (a string is split on spaces); only a built-in Spring server takes them."""
    if isinstance(jvm_opts, str):
        jvm_opts = jvm_opts.split()
    jvm_opts = tuple(jvm_opts or ())
    if jvm_opts and not server.builtin:
        raise UsageError(f"jvm_opts apply to the built-in Spring servers, not to {server.name}")
    return jvm_opts


def _java(java: str | None, server: servers.Server, backend: str) -> str:
    """The java to launch: ``java=``, else $BENCHLAB_JAVA, else ``java`` (:func:`check_tools` checks it is there)."""
    return java or os.environ.get("BENCHLAB_JAVA", "java")


def _check_port(port, server: servers.Server) -> None:
    """A port is 1-65535, and free on 127.0.0.1 where benchlab starts the server."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise UsageError(f"port must be 1-65535, not {port!r}")
    if server.starts and backends.port_in_use(port):
        raise UsageError(f"port {port} on 127.0.0.1 is in use by another program: stop it, or leave port "
                         "unset and benchlab picks a free one")


def _check_docker(docker_host, load_docker_host, memory, *, allow_remote: bool) -> None:
    """The engines are where they may be and answer, and the memory limit reads."""
    from .backends.docker import containers, engine

    engine.check_engine(docker_host, allow_remote=allow_remote)
    if load_docker_host:
        engine.check_engine(load_docker_host, allow_remote=allow_remote, role="load")
    containers.parse_memory(memory)
    engine.connect(docker_host, timeout=10).close()
