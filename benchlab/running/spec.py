"""The run spec: every per-run option checked in one place (:func:`prepare`), before anything starts.

The options themselves are declared once in :mod:`benchlab.running.options`.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .. import cores, schema
from ..errors import UsageError
from ..schema import LOAD_MODELS, BackendName
from . import backends, drivers, generators, profiler, protocols, servers, variants
from .load import Load, parse_duration
from .options import DOCKER_OPTIONS, MAX_RETAKES, RunOptions


@dataclass(frozen=True)
class RunSpec:
    """Everything one run needs, resolved and checked before anything starts."""

    server: servers.Server
    scenario: servers.Scenario
    load: Load
    driver: str
    backend: BackendName
    server_cpus: tuple[int, ...]
    load_cpus: tuple[int, ...]
    jvm_opts: tuple[str, ...] = ()
    java: str = "java"
    cds: bool = True
    memory: str | None = None
    port: int | None = None
    startup_timeout: float = 90.0
    allow_remote: bool = False
    docker: backends.DockerOptions = backends.DockerOptions()  # stored as its backend_options, those given
    sample_interval: float = 0.25
    retakes: int = 2
    profile: bool = False  # each fork's last window taken under the profiler (benchlab.running.profiler)
    #: the load's generators (:mod:`benchlab.running.generators`); empty: one load tool, as without load_hosts
    load_hosts: tuple[str, ...] = ()
    host: str | None = None  # the machine of compare(hosts=...) its round runs on

    def params(self, repeat: int = 1) -> dict:
        load = self.load
        return {
            "server": self.server.name,
            "scenario": self.scenario.name,
            "path": self.scenario.path,
            "method": self.scenario.method,
            "driver": self.driver,
            "load": load.model,
            "protocol": load.protocol,
            "connections": load.connections,
            "streams": load.streams,
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
            "backend_options": {k: str(v) for k, v in sorted(self.docker.given().items())},
            # A variant's settings, only when given: the runs of a plain server keep the keys they had; so too
            # a pipelined load's depth.
            **self.server.settings.asked(),
            **({"pipeline": load.pipeline} if load.pipeline > 1 else {}),
            **({"keepalive": False} if not load.keepalive else {}),
            **({"slo": load.slo} if load.slo else {}),  # a capacity search's limit: its rate is the search's start
            **({"generators": len(self.load_hosts), "load_hosts": list(self.load_hosts)} if self.load_hosts else {}),
            **({"host": self.host} if self.host else {}),
        }

    @property
    def server_java(self) -> str:
        """The JVM the server runs on: its variant's java setting, else the ``java`` option."""
        return self.server.settings.java or self.java

    def build(self) -> None:
        """The server's jar built, and its CDS archive or AOT cache for this run's java made, before any run's
        time starts (a container starts from its image's jar, without an archive)."""
        self.server.build(java=self.server_java, cds=self.cds and self.backend == "local")

    def launch(self, run_id: str, log_path: Path) -> backends.Launch:
        """How a backend starts this spec's server: its port (the one asked, or a free one), cores and JVM."""
        return backends.Launch(run_id=run_id, port=self.port or self.server.port or backends.free_port(),
                               cpus=self.server_cpus, log_path=log_path, jvm_opts=self.jvm_opts, java=self.server_java,
                               cds=self.cds, memory=self.memory, allow_remote=self.allow_remote,
                               startup_timeout=self.startup_timeout,
                               start_cpus=tuple(self.load_cpus) if self.backend == "local" else (),
                               listener=protocols.listener(self.load.protocol))

    def server_key(self) -> str:
        """Everything that makes this run's server a different one (a shared server of ``restart="never"`` serves
        only forks with the same key): its name and settings, cores, JVM options, java, archive, memory, port,
        backend and engine, and the protocol it was started for."""
        parts = [self.server.name, self.server_cpus, self.jvm_opts, self.server_java, self.cds, self.memory,
                 self.port, self.backend, sorted(self.docker.given().items()), self.load.protocol]
        return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]

    def cell_key(self, label: str | None = None) -> str:
        """A stable name for the cell of this spec's runs stored with ``label`` (:func:`benchlab.schema.cell`): a
        spec of another server at the same setup has the same key, and a spec of another setup another."""
        cell = json.dumps(schema.cell(self.params(), label), default=str)
        return hashlib.sha256(cell.encode()).hexdigest()[:12]


def _choice(name: str, value, choices) -> None:
    if value not in choices:
        raise UsageError(f"unknown {name} {value!r}: choose one of {', '.join(choices)}")


def prepare(server="spring-tomcat", scenario=None, options: RunOptions | None = None, *,
            tools: bool = True) -> RunSpec:
    """Check ``server``, its ``scenario`` and every option of one run (:class:`RunOptions`) and resolve the
    defaults, starting nothing.

    Ports and files are checked here too, so a mistake is one line before any build, start or write; then,
    unless ``tools`` is False, the programs the run needs (:func:`check_tools`).

    >>> prepare("spring-jetty", "hello", RunOptions(connections=16, warmup="2s"), tools=False).load.warmup
    2.0
    """
    o = options or RunOptions()
    server = servers.get(server)
    scenario_ = server.scenario(scenario)
    server_cores, load_cores = cores.resolve(o.server_cpus, o.load_cpus)
    load_hosts = generators.hosts(o.load_hosts)
    load = _load(o, load_cores, load_hosts)
    driver = drivers.get(o.driver, load.model, load.protocol)
    driver.check(load)  # a driver's own input checks (a user's .jmx)
    drivers.check_protocol(driver, load)
    drivers.check_rate(driver, load, cores=len(load_cores))
    _check_protocol(load.protocol, server)
    _choice("backend", o.backend, backends.NAMES)
    docker = _docker_options(o)
    generators.check(load_hosts, driver=driver.name, load=load, docker=docker)
    jvm_opts = _jvm_opts(o.jvm_opts, server)
    if not isinstance(o.cds, bool):
        raise UsageError(f"cds is True or False, not {o.cds!r}")
    if o.memory is not None and o.backend == "local":
        raise UsageError("memory= sets a container limit (backend='docker'); locally use jvm_opts=['-Xmx512m']")
    java = o.java or os.environ.get("BENCHLAB_JAVA", "java")  # check_tools checks that it is there
    variants.check_launch(server.settings, java=java, jvm_opts=jvm_opts, backend=o.backend)
    if o.port is not None:
        _check_port(o.port, server)
    startup = parse_duration(o.startup_timeout, what="startup_timeout")
    if startup <= 0:
        raise UsageError("startup_timeout must be more than 0 seconds, for example '90s'")
    if not server.starts:
        servers.check_loopback(server.url, allow_remote=o.allow_remote)
    if isinstance(o.retakes, bool) or not isinstance(o.retakes, int) or not 0 <= o.retakes <= MAX_RETAKES:
        raise UsageError(f"retakes is a whole number from 0 to {MAX_RETAKES} (0: never measure a disturbed window "
                         f"again), not {o.retakes!r}")
    profiler.check(o.profile, server, o.backend)
    if o.backend == "docker":
        _check_docker(o)
    spec = RunSpec(
        server=server, scenario=scenario_, load=load, driver=driver.name, backend=o.backend,
        server_cpus=server_cores, load_cpus=load_cores, jvm_opts=jvm_opts, java=java, cds=o.cds, memory=o.memory,
        port=o.port, startup_timeout=startup, allow_remote=o.allow_remote, docker=docker,
        retakes=o.retakes, load_hosts=load_hosts, profile=o.profile,
    )
    if tools:
        check_tools(spec)
    return spec


def check_tools(spec: RunSpec) -> None:
    """The programs the run starts are installed: the load tool, a local Spring server's java and a command
    server's program. Checked after every option, so a wrong option is named even where a tool is missing
    (and the fast tier of the tests needs none)."""
    drivers.get(spec.driver, spec.load.model).executable()
    generators.check_engines(spec.load_hosts, allow_remote=spec.allow_remote)
    if spec.backend == "local" or not spec.server.jvm:  # a JVM's container has its own JDK; nginx's is this one's
        spec.server.require(spec.java)
    if spec.profile:
        profiler.library()


def _load(o: RunOptions, load_cores, load_hosts: tuple[str, ...] = ()) -> Load:
    """The load from its options; threads default to one per load core, at most one per connection (or user); with
    several generators, one per core of each generator, at most one per connection of its share."""
    _choice("load", o.load, LOAD_MODELS)
    threads = o.threads
    if threads is None and load_hosts and isinstance(o.connections, int) and o.connections >= len(load_hosts):
        threads = generators.default_threads(load_hosts, o.connections, load_cores)
    if threads is None:
        count = o.users if o.load == "count" and isinstance(o.users, int) else o.connections
        threads = max(1, min(len(load_cores), count if isinstance(count, int) and count > 0 else 1))
    plan = str(Path(o.plan).resolve()) if o.plan is not None else None  # the tool runs in the run's folder
    return Load(model=o.load, connections=o.connections, threads=threads,
                duration=parse_duration(o.duration), warmup=o.warmup, warming=o.warming,
                timeout=parse_duration(o.timeout, what="timeout"),
                users=o.users, loops=o.loops, rate=o.rate, ramp_up=parse_duration(o.ramp_up, what="ramp_up"), plan=plan,
                pipeline=o.pipeline, keepalive=o.keepalive, slo=o.slo, protocol=o.protocol, streams=o.streams)


def _check_protocol(protocol, server: servers.Server) -> None:
    """A protocol benchlab can start the server for: any for a built-in (in a container too, its certificate copied
    in); over TLS, a URL server's own https url (its certificate is its own). The protocol itself the load has
    checked."""
    tls = protocol in protocols.TLS
    if tls and server.kind == "command":
        raise UsageError(f"benchlab cannot give {server.name} a certificate: start it yourself with TLS and give its "
                         "https url (Server.from_url), or use protocol='h2c' or 'http1'")
    if server.kind == "url" and tls != str(server.url).startswith("https://"):
        raise UsageError(f"protocol {protocol!r} {'needs' if tls else 'cannot use'} an https url: {server.url} is "
                         f"{'plain http' if tls else 'TLS'}; give the server's {'https' if tls else 'http'} url")


def _docker_options(o: RunOptions) -> backends.DockerOptions:
    """The docker-only options; given with another backend they are a mistake."""
    docker = backends.DockerOptions(**{name: getattr(o, name) for name in DOCKER_OPTIONS})
    given = docker.given()
    if given and o.backend != "docker":
        raise UsageError(f"{', '.join(given)} applies to backend='docker' (--backend docker); add it or drop "
                         f"{'this option' if len(given) == 1 else 'these options'}")
    return docker


def _jvm_opts(jvm_opts, server: servers.Server) -> tuple[str, ...]:
    """The JVM options as a tuple (a string is split on spaces); only a built-in Spring server takes them."""
    if isinstance(jvm_opts, str):
        jvm_opts = jvm_opts.split()
    jvm_opts = tuple(jvm_opts or ())
    if jvm_opts and not server.jvm:
        raise UsageError(f"jvm_opts apply to the built-in Spring servers, not to {server.name}")
    return jvm_opts


def _check_port(port, server: servers.Server) -> None:
    """A port is 1-65535, and free on 127.0.0.1 where benchlab starts the server."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise UsageError(f"port must be 1-65535, not {port!r}")
    if server.starts and backends.port_in_use(port):
        raise UsageError(f"port {port} on 127.0.0.1 is in use by {backends.holder(port)}: stop it, or leave port "
                         "unset and benchlab picks a free one")


def _check_docker(o: RunOptions) -> None:
    """The engines are where they may be and answer, and the memory limit reads."""
    from .backends.docker import containers, engine

    engine.check_engine(o.docker_host, allow_remote=o.allow_remote)
    if o.load_docker_host:
        engine.check_engine(o.load_docker_host, allow_remote=o.allow_remote, role="load")
    containers.parse_memory(o.memory)
    engine.connect(o.docker_host, timeout=10).close()
