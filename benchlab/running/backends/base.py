"""What every backend shares: the launch settings, the Instance and Backend protocols, ports and readiness."""

from __future__ import annotations

import http.client
import socket
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Protocol

from ...errors import ServerError
from ...schema import Wire
from ..protocols import Listener


@dataclass(frozen=True)
class Launch:
    """How to start one server: its port, cores, memory, JVM and where its log goes."""

    run_id: str
    port: int
    cpus: tuple[int, ...]
    log_path: Path
    jvm_opts: tuple[str, ...] = ()
    java: str = "java"
    cds: bool = True         # a built-in server starts from its Class Data Sharing archive
    memory: str | None = None
    address: str = "127.0.0.1"  # what the server binds
    startup_timeout: float = 90.0
    allow_remote: bool = False  # a backend may then run the server on another machine (docker_host=)
    #: The cores a local JVM may also use while it starts (the run holds them: no load runs yet); it is
    #: pinned to ``cpus`` once it answers. Empty: it starts on ``cpus``.
    start_cpus: tuple[int, ...] = ()
    #: the protocol it serves, and over TLS its certificate (:mod:`benchlab.running.protocols`)
    listener: Listener = Listener()


@dataclass(frozen=True)
class DockerOptions:
    """The options only the docker backend reads (``RunSpec.docker``; their help is
    :data:`benchlab.running.options.DOCKER_OPTIONS`'s fields'): the server's engine, the servers' base image, and
    the load tool in a container of its own, on that engine or another.

    >>> DockerOptions(docker_host="unix:///d.sock").given()
    {'docker_host': 'unix:///d.sock'}
    """

    docker_host: str | None = None
    base_image: str | None = None
    load_in_container: bool = False
    load_docker_host: str | None = None

    def given(self) -> dict:
        """The options given (neither None nor False), by name: what a run stores as its ``backend_options``."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) not in (None, False)}


class Instance(Protocol):
    url: str                 # the base url load goes to, e.g. http://127.0.0.1:34567
    startup_ms: float        # from launch until the readiness path answered
    metadata: dict           # what the backend knows: pid or container id, image, limits...

    def probe(self) -> tuple[float | None, ...]: ...   # (cpu %, rss bytes[, bytes written])
    def cpu_seconds(self) -> float | None: ...         # the server's CPU time so far, user + system; None: unknown
    def alive(self) -> bool: ...
    def stop(self) -> None: ...                                  # idempotent; saves the log


class Backend(Protocol):
    name: str

    def start(self, server, launch: Launch) -> Instance: ...
    def metadata(self) -> dict: ...
    def load_runner(self) -> Callable | None: ...   # runs the load tool itself (docker), or None: a local process


class Attached:
    """A server benchlab did not start (``Server.from_url``): nothing to sample or stop."""

    def __init__(self, server):
        self.url = server.url
        self.startup_ms = None
        self.metadata = {"attached": True}

    def probe(self):
        return (None, None)

    def cpu_seconds(self) -> None:
        return None

    def alive(self) -> bool:
        return True

    def stop(self) -> None:
        pass


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((address, 0))
        except OSError as exc:  # every ephemeral port taken: a load tool's connections, still closing
            raise ServerError(f"no free port on {address} for the server ({exc.strerror}): the machine's ephemeral "
                              "ports are taken, usually by a load tool's closed connections waiting out TIME-WAIT; "
                              "wait a minute, or see `ss -s`") from None
        return sock.getsockname()[1]


def port_in_use(port: int, address: str = "127.0.0.1") -> bool:
    """Whether a program listens on ``port`` at ``address``: the one probe, before a run and at each fork's start.

    It binds as servers do, with ``SO_REUSEADDR``, which Linux refuses only while a socket listens there: the
    sockets a fork's connections leave in TIME-WAIT for a minute after its server stopped do not count, as
    they do not stop the next server (nginx, Go's net/http, Netty, Tomcat all bind so). A plain bind would
    fail on them, and every other fork on a fixed port with it.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError:
            return True
    return False


def holder(port: int) -> str:
    """Who listens on ``port``, for a message: "PID 123 (nginx: master process ...)", or "another program"
    where the kernel does not say (another user's process, another network namespace)."""
    import psutil

    try:
        found = [c.pid for c in psutil.net_connections(kind="tcp")
                 if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid]
    except (psutil.Error, OSError):
        found = []
    for pid in found:
        try:
            process = psutil.Process(pid)
            command = " ".join(process.cmdline()) or process.name()
        except psutil.Error:
            continue
        return f"PID {pid} ({command[:120]})"
    return "another program"


#: Seconds a fork's start waits for the port to be let go: the last fork's server tree is gone by then, unless
#: a program outside it holds the port.
PORT_WAIT = 10.0


def check_port_free(port: int, address: str = "127.0.0.1", *, wait: float = PORT_WAIT) -> None:
    """At a server's start: wait up to ``wait`` seconds until nothing listens on ``port``; a port still held
    then fails the run, naming the program that holds it."""
    deadline = time.monotonic() + wait
    while port_in_use(port, address):
        if time.monotonic() >= deadline:
            raise ServerError(f"port {port} on {address} is held by {holder(port)} (still after {wait:.0f} s): stop "
                              "it, or pick another port (leave port unset and benchlab picks a free one)")
        time.sleep(0.05)


def start_failure_hint(log: str) -> str:
    """What a server's log says stopped its start, as the end of an error message ("" if nothing known)."""
    if any(s in log for s in ("Unrecognized VM option", "Could not create the Java Virtual Machine",
                              "Unrecognized option")):
        return " - a bad JVM option: check jvm_opts"
    if "Address already in use" in log:
        return " - its port is in use: stop what holds it or leave port unset"
    return ""


#: The most a probe reads of an answer: /info is a few hundred bytes; a server sending more is not benchlab's.
PROBE_LIMIT = 1 << 20


class TooLarge(ValueError):
    """A probe's answer went past :data:`PROBE_LIMIT`."""


def http_get(url: str, path: str | None = None, *, timeout: float, limit: int | None = None,
             protocol: Wire = "http1") -> tuple[int, bytes]:
    """``GET`` ``path`` (default: the url's own) from the host and port of ``url`` over ``protocol``:
    ``(status, body)``.

    Straight to that address (:func:`benchlab.running.protocols.request`): no ``http_proxy`` from the environment (a
    proxy's 502 is not the server's answer) and no redirect followed (a 3xx is the answer, wherever it
    points). At most ``limit`` (:data:`PROBE_LIMIT`) bytes are read; more is :class:`TooLarge`.
    """
    from ..protocols import request

    limit = PROBE_LIMIT if limit is None else limit
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:  # Server.from_url and the backends make none such
        raise ServerError(f"{url} names no host: give http://HOST:PORT/PATH")
    target = path or ((parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
    answer = request(url, target, protocol, timeout=timeout, limit=limit)
    if len(answer.body) > limit:
        raise TooLarge(f"{url}{path or ''} answered more than {limit} bytes")
    return answer.status, answer.body


def wait_ready(url: str, *, timeout: float, alive: Callable[[], bool], poll: float = 0.01,
               on_exit: Callable[[], Exception] | None = None,
               on_timeout: Callable[[], Exception] | None = None, protocol: Wire = "http1") -> float:
    """Poll ``url`` every ``poll`` seconds until any HTTP answer; return the seconds it took.

    Any status is an answer (a 404, a redirect: the server is listening); only the server itself is
    asked (:func:`http_get`: no proxy, no redirect followed). ``alive()`` is checked between polls so a
    server that dies during start fails at once, with the error ``on_exit()`` builds; one that never answers
    fails after ``timeout`` seconds with the error ``on_timeout()`` builds.
    """
    began = time.monotonic()
    deadline = began + timeout
    while True:
        try:
            http_get(url, timeout=1.0, protocol=protocol)  # a server that speaks another protocol: VerifyError
            return time.monotonic() - began
        except TooLarge:
            return time.monotonic() - began  # it answered, at length: that is ready too
        except (OSError, http.client.HTTPException, ValueError):
            pass
        if not alive():
            raise on_exit() if on_exit else ServerError(f"the server exited before {url} answered")
        if time.monotonic() > deadline:
            raise on_timeout() if on_timeout else ServerError(f"{url} did not answer within {timeout:.0f} s; the "
                                                               "server is stopped")
        time.sleep(poll)
