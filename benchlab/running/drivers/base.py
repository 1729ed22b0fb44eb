"""What every driver is: the protocol :func:`benchlab.running.drivers.execute` relies on, its base class and
the invocation.

``command()`` builds an :class:`Invocation` (the argv, the phase and the files the tool reads or writes)
and ``parse()`` reads that same invocation back, so a driver keeps no state between the two calls.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ...schema import LoadModel
from .. import process

if TYPE_CHECKING:
    from ...store.histogram import Histogram


@dataclass(frozen=True)
class Invocation:
    """One run of a load tool: what ``command()`` built and ``parse()`` reads back.

    ``files`` names what the tool writes or reads beside the result, by role (``"log"``, ``"jtl"``,
    ``"results"``, ``"script"``); ``planned_requests`` is a count load's size when the driver knows it,
    ``target_rps`` a rate load's rate, ``pipeline`` the requests a connection sends together, ``protocol`` what
    its requests speak.

    >>> Invocation(("wrk", "-c1"), "warmup", Path("runs/1")).phase
    'warmup'
    """

    argv: tuple[str, ...]
    phase: str
    workdir: Path
    files: Mapping[str, Path] = field(default_factory=dict)
    planned_requests: int | None = None
    target_rps: float | None = None
    pipeline: int = 1
    protocol: str = "http1"

    def __post_init__(self) -> None:
        if self.phase not in ("warmup", "measure"):
            raise ValueError(f"phase must be 'warmup' or 'measure', not {self.phase!r}")
        object.__setattr__(self, "argv", tuple(self.argv))
        object.__setattr__(self, "workdir", Path(self.workdir))


class LoadTool(Protocol):
    """Every attribute and method of a driver that benchlab uses; the attributes are only read, so a
    driver's class constants (``models = ("count",)``) fit them."""

    @property
    def name(self) -> str: ...
    @property
    def models(self) -> tuple[LoadModel, ...]: ...
    @property
    def install(self) -> str: ...
    @property
    def corrected(self) -> str | None: ...
    @property
    def protocols(self) -> tuple[str, ...]: ...
    @property
    def streams(self) -> bool: ...

    def executable(self) -> str: ...
    def version(self) -> str: ...
    def check(self, load) -> None: ...
    def command(self, url: str, scenario, load, *, phase: str, workdir: Path) -> Invocation: ...
    def parse(self, stdout: str, invocation: Invocation) -> dict: ...
    def histogram(self, stdout: str, invocation: Invocation) -> Histogram | None: ...


class Driver:
    """The base of the drivers: defaults for a tool on PATH called ``name``, and a no-op :meth:`check`."""

    name = ""
    models: tuple[LoadModel, ...] = ()
    install = ""
    version_flag = "--version"
    #: What the tool did to its latencies before reporting them (wrk's correction), None when nothing.
    corrected: str | None = None
    #: The protocols it speaks (:data:`benchlab.schema.PROTOCOLS`), and whether it sets HTTP/2 streams a connection.
    protocols: tuple[str, ...] = ("http1",)
    streams = False

    def check(self, load) -> None:
        """Refuse this tool's own inputs (a user's JMeter plan) before any server starts; none by default."""

    def executable(self) -> str:
        """The tool's path on PATH, or :class:`~benchlab.errors.ToolMissing` saying how to install it."""
        return process.require(self.name, self.install)

    def version(self) -> str:
        """The line of ``<tool> <version_flag>`` that names the tool."""
        return version_of([self.executable(), self.version_flag], self.name)

    def command(self, url: str, scenario, load, *, phase: str, workdir: Path) -> Invocation:
        raise NotImplementedError

    def parse(self, stdout: str, invocation: Invocation) -> dict:
        raise NotImplementedError

    def histogram(self, stdout: str, invocation: Invocation) -> Histogram | None:
        """The measure phase's whole latency distribution, from the same output :meth:`parse` read; None
        when the tool gives none."""
        return None


def version_of(argv: list[str], pattern: str = "") -> str:
    """The first line of a tool's version output that contains ``pattern``."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    for line in (done.stdout + "\n" + done.stderr).splitlines():
        if pattern in line and line.strip():
            return line.strip()
    return "unknown"


#: The words by which a tool's failure text says what failed, tried in this order; anything else is a read.
#: A connection reset is a read (wrk counts it so): "connect" alone would take "Connection reset" for one.
FAILURE_WORDS = (("timeout", ("timeout", "timed out", "deadline exceeded")),
                 ("connect", ("refused", "dial tcp", "connect to", "connectexception", "no route to host")),
                 ("write", ("broken pipe", "write")))


def error_kind(status: int | None, failure: str = "") -> str | None:
    """Which METRICS error field one request counts in, or None for a good answer: a request with no HTTP
    status (``status`` None or 0) or with a failure text is classed by the text's words, one with only a
    status outside 2xx-3xx is a ``status`` error.

    >>> error_kind(None, "java.net.SocketException: Connection reset"), error_kind(0, "dial tcp: connection refused")
    ('read', 'connect')
    >>> error_kind(503, "503 Service Unavailable"), error_kind(200)
    ('status', None)
    """
    if not status or failure:
        text = failure.lower()
        for kind, words in FAILURE_WORDS:
            if any(word in text for word in words):
                return kind
        if not status:
            return "read"
    return None if 200 <= status < 400 else "status"
