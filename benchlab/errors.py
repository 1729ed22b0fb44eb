"""The errors benchlab raises on purpose.

Every one is a :class:`BenchlabError`. The command line prints it as one line, without a traceback,
and exits 2; in a notebook it is an ordinary exception whose message says what to do::

    BenchlabError         anything benchlab refuses or cannot do, with the fix in its message
    ├── UsageError        bad input: an unknown server or scenario, a bad duration, cores that don't exist
    ├── ToolMissing       java, mvn, wrk, h2load, jmeter, vegeta or docker is not installed or not reachable
    ├── BuildError        a Maven or image build failed; carries the tail of its log
    ├── ServerError       the server would not start, exited, or its port is taken
    ├── VerifyError       the verify request did not get the status or body the scenario expects
    ├── LoadError         the load generator failed or wrote no usable report
    └── ResultsError      a results directory is missing, empty, or written by another format version
"""

from __future__ import annotations

__all__ = [
    "BenchlabError",
    "UsageError",
    "ToolMissing",
    "BuildError",
    "ServerError",
    "VerifyError",
    "LoadError",
    "ResultsError",
]


class BenchlabError(Exception):
    """Root of every error benchlab raises on purpose."""


class UsageError(BenchlabError, ValueError):
    """The caller asked for something that cannot be: the message names the valid choices."""


class ToolMissing(BenchlabError):
    """An external tool is not installed; the message says how to install it."""


class BuildError(BenchlabError):
    """A build (Maven, docker image) failed; the message ends with the tail of its log."""


class ServerError(BenchlabError):
    """The server under test did not start, exited early, or could not bind its port.

    ``metadata`` is what the failed run records of the server, such as what its ``GET /info`` said.
    """

    def __init__(self, message: str = "", *, metadata: dict | None = None) -> None:
        super().__init__(message)
        self.metadata = metadata or {}


class VerifyError(BenchlabError):
    """The one verify request before load did not return the expected status or body."""


class LoadError(BenchlabError):
    """The load generator failed, or its output could not be turned into a result."""


class ResultsError(BenchlabError):
    """Stored results cannot be read: missing, empty, or of another format version."""


def tail(text: str, lines: int = 15) -> str:
    """The last ``lines`` lines of a log, indented, for the end of an error message."""
    kept = [line for line in text.strip().splitlines()][-lines:]
    return "\n".join("    " + line for line in kept) if kept else "    (empty)"
