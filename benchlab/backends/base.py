"""What every backend shares: the launch settings, the Instance and Backend protocols, ports and readiness."""

from __future__ import annotations

import socket
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from ..errors import ServerError


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


def check_port_free(port: int, host: str = "127.0.0.1") -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            raise ServerError(
                f"port {port} on {host} is in use by another program: stop it, or pick another port "
                "(leave port unset and benchlab picks a free one)"
            ) from None


def start_failure_hint(log: str) -> str:
    """What a server's log says stopped its start, as the end of an error message ("" if nothing known)."""
    if any(s in log for s in ("Unrecognized VM option", "Could not create the Java Virtual Machine",
                              "Unrecognized option")):
        return " - a bad JVM option: check jvm_opts"
    if "Address already in use" in log:
        return " - its port is in use: stop what holds it or leave port unset"
    return ""


def wait_ready(url: str, *, timeout: float, alive: Callable[[], bool], poll: float = 0.01,
               on_exit: Callable[[], Exception] | None = None) -> float:
    """Poll ``url`` every ``poll`` seconds until any HTTP answer; return the seconds it took.

    ``alive()`` is checked between polls so a server that dies during start fails at once, with the
    error ``on_exit()`` builds.
    """
    began = time.monotonic()
    deadline = began + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1.0) as response:
                response.read()
            return time.monotonic() - began
        except urllib.error.HTTPError:
            return time.monotonic() - began  # it answered: that is ready, whatever the status
        except (OSError, ValueError):
            pass
        if not alive():
            raise on_exit() if on_exit else ServerError(f"the server exited before {url} answered")
        if time.monotonic() > deadline:
            raise ServerError(f"{url} did not answer within {timeout:.0f} s; the server is stopped")
        time.sleep(poll)
