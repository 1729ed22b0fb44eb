"""What every backend shares: the launch settings, the Instance and Backend protocols, ports and readiness."""

from __future__ import annotations

import http.client
import socket
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ...errors import ServerError


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
    host: str = "127.0.0.1"
    startup_timeout: float = 90.0
    allow_remote: bool = False  # a backend may then run the server on another machine (docker_host=)
    #: The cores a local JVM may also use while it starts (the run holds them: no load runs yet); it is
    #: pinned to ``cpus`` once it answers. Empty: it starts on ``cpus``.
    start_cpus: tuple[int, ...] = ()


class Instance(Protocol):
    url: str                 # the base url load goes to, e.g. http://127.0.0.1:34567
    startup_ms: float        # from launch until the readiness path answered
    metadata: dict           # what the backend knows: pid or container id, image, limits...

    def probe(self) -> tuple[float | None, ...]: ...   # (cpu %, rss bytes[, bytes written])
    def alive(self) -> bool: ...
    def stop(self) -> None: ...                                  # idempotent; saves the log


class Backend(Protocol):
    name: str

    def start(self, server, launch: Launch) -> Instance: ...
    def metadata(self) -> dict: ...
    def load_runner(self) -> Callable | None: ...   # runs the load tool itself (docker), or None: a local process


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether another program holds ``port`` on ``host``: the one probe, before a run and at its start."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def check_port_free(port: int, host: str = "127.0.0.1") -> None:
    """At a server's start: a port taken since the options were checked fails the run."""
    if port_in_use(port, host):
        raise ServerError(f"port {port} on {host} is in use by another program: stop it, or pick another port "
                          "(leave port unset and benchlab picks a free one)")


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


def http_get(url: str, path: str | None = None, *, timeout: float, limit: int | None = None) -> tuple[int, bytes]:
    """``GET`` ``path`` (default: the url's own) from the host and port of ``url``: ``(status, body)``.

    Through :mod:`http.client`, so straight to that address: no ``http_proxy`` from the environment (a
    proxy's 502 is not the server's answer) and no redirect followed (a 3xx is the answer, wherever it
    points). At most ``limit`` (:data:`PROBE_LIMIT`) bytes are read; more is :class:`TooLarge`.
    """
    limit = PROBE_LIMIT if limit is None else limit
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:  # Server.from_url and the backends make none such
        raise ServerError(f"{url} names no host: give http://HOST:PORT/PATH")
    target = path or ((parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    try:
        conn.request("GET", target)
        response = conn.getresponse()
        body = response.read(limit + 1)
        if len(body) > limit:
            raise TooLarge(f"{url}{path or ''} answered more than {limit} bytes")
        return response.status, body
    finally:
        conn.close()


def wait_ready(url: str, *, timeout: float, alive: Callable[[], bool], poll: float = 0.01,
               on_exit: Callable[[], Exception] | None = None) -> float:
    """Poll ``url`` every ``poll`` seconds until any HTTP answer; return the seconds it took.

    Any status is an answer (a 404, a redirect: the server is listening); only the server itself is
    asked (:func:`http_get`: no proxy, no redirect followed). ``alive()`` is checked between polls so a
    server that dies during start fails at once, with the error ``on_exit()`` builds.
    """
    began = time.monotonic()
    deadline = began + timeout
    while True:
        try:
            http_get(url, timeout=1.0)
            return time.monotonic() - began
        except TooLarge:
            return time.monotonic() - began  # it answered, at length: that is ready too
        except (OSError, http.client.HTTPException, ValueError):
            pass
        if not alive():
            raise on_exit() if on_exit else ServerError(f"the server exited before {url} answered")
        if time.monotonic() > deadline:
            raise ServerError(f"{url} did not answer within {timeout:.0f} s; the server is stopped")
        time.sleep(poll)
