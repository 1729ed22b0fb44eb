"""h2load (nghttp2): a closed loop over HTTP/1.1 or HTTP/2, in clear text or over TLS: for a time (``duration``:
``-D``, ``connections`` x ``streams`` requests in flight) or a fixed count (``users`` x ``loops``).

Its traps, handled here: it exits 0 even when every connection is refused, so the parser checks its
counts (succeeded against requested, errored, failed) and raises :class:`LoadError`; its
``--warm-up-time`` leaves warm-up bytes in the traffic counters, so it is never passed (benchlab warms in a
phase of its own). Latencies come from its per-request log (``--log-file``: start time in microseconds since
the epoch, status, microseconds until the end of the response), one row per request: its summary gives only a
mean and a standard deviation, never a percentile. It prints the protocol it negotiated ("Application protocol:
h2c"), which must be the one asked: a server that fell back to HTTP/1.1 fails the window in one line. Its HTTP/2
flow-control windows are set to the protocol's defaults (``-w16 -W16``: its own default of 2^30 bytes switches
flow control off in effect), and over TLS it offers TLS 1.3's one cipher every server is given
(:data:`benchlab.running.protocols.CIPHER`).
"""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import LoadError, UsageError
from ...schema import PROTOCOLS, SECONDS
from ...store.histogram import Histogram
from ..protocols import CIPHER, HTTP2, NEGOTIATED, WINDOW_BITS
from . import latency
from .base import Driver, Invocation

_REQUESTS = re.compile(
    r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, "
    r"(\d+) timeout")
_TRAFFIC = re.compile(r"traffic: \S+ \((\d+)\) total")
_FINISHED = re.compile(r"finished in ([\d.]+)(us|ms|s)")


def log_path(workdir: Path, phase: str) -> Path:
    return Path(workdir) / f"h2load-{phase}.log"


_PROTOCOL = re.compile(r"^Application protocol: (\S+)", re.MULTILINE)
_CIPHER = re.compile(r"^Cipher: (\S+)", re.MULTILINE)


class H2load(Driver):
    name = "h2load"
    models = ("count", "duration")
    protocols = PROTOCOLS
    streams = True
    install = "apt-get install nghttp2-client (or bash .ci/install-drivers.sh)"

    def command(self, url: str, scenario, load, *, phase: str, workdir: Path) -> Invocation:
        if load.model not in self.models:
            raise UsageError(f"h2load offers a closed loop ('duration' or 'count'), not {load.model!r}: use vegeta")
        log = log_path(workdir, phase)
        if load.model == "count":
            users, requests = load.users, load.users * load.loops
            size = ["-n", str(requests), "-c", str(users), "-t", str(max(1, min(load.threads, users)))]
        else:
            users, requests = load.connections, None
            seconds = load.warmup if phase == "warmup" else load.duration
            size = ["-D", f"{max(1, round(seconds))}", "-c", str(users),
                    "-t", str(max(1, min(load.threads, users)))]
        argv = [
            self.executable(), *PROTOCOL_FLAGS[load.protocol], *size,
            *(["-m", str(load.streams), f"-w{WINDOW_BITS}", f"-W{WINDOW_BITS}"] if load.protocol in HTTP2
              else []),
            f"--connection-inactivity-timeout={max(1, round(load.timeout * 1000))}ms",
            f"--log-file={log}",
        ]
        if scenario.method not in ("GET", "POST"):
            raise UsageError(f"h2load sends GET or POST, not {scenario.method}: use driver='jmeter' for it")
        if scenario.method == "POST":
            body = Path(workdir) / "h2load-body.bin"
            body.write_bytes(scenario.body or b"")
            argv += ["-d", str(body)]
        if scenario.content_type:
            argv += ["-H", f"Content-Type: {scenario.content_type}"]
        return Invocation((*argv, url + scenario.path), phase, workdir, files={"log": log},
                          planned_requests=requests, protocol=load.protocol)

    def parse(self, stdout: str, invocation: Invocation) -> dict:
        log = invocation.files["log"]
        negotiated(stdout, invocation.protocol)
        return parse(stdout, log.read_text() if log.exists() else "")

    def histogram(self, stdout: str, invocation: Invocation) -> Histogram | None:
        log = invocation.files["log"]
        return distribution(log.read_text()) if log.exists() else None


#: h2load's flags for each protocol: HTTP/1.1 is asked by ALPN (``--h1``), h2c is its default in clear text (prior
#: knowledge, no upgrade), h2 its default over TLS; over TLS it offers the one cipher every server is given.
PROTOCOL_FLAGS = {"http1": ["--h1"], "https": ["--h1", f"--tls13-ciphers={CIPHER}"], "h2c": [],
                  "h2": ["--npn-list=h2", f"--tls13-ciphers={CIPHER}"]}


def negotiated(stdout: str, protocol: str) -> str:
    """The protocol h2load negotiated, checked against the one asked: a fallback is a :class:`LoadError` in one line.

    >>> negotiated("TLS Protocol: TLSv1.3\\nApplication protocol: h2\\n", "h2")
    'h2'
    >>> negotiated("Application protocol: http/1.1\\n", "h2c")
    Traceback (most recent call last):
    benchlab.errors.LoadError: asked h2c, but h2load negotiated http/1.1: the server did not speak it; nothing of this \
window counts
    """
    found = _PROTOCOL.search(stdout)
    if found is None:  # no connection came up: the counts say why
        return ""
    if found.group(1) != NEGOTIATED[protocol]:
        raise LoadError(f"asked {protocol}, but h2load negotiated {found.group(1)}: the server did not speak it; "
                        "nothing of this window counts")
    return found.group(1)


def distribution(log: str) -> Histogram:
    r"""The histogram of every request's latency in h2load's per-request log (its third column, microseconds).

    >>> distribution("1700000000000000\t200\t1500\n1700000000000100\t200\t2500\n").max
    0.0025
    """
    us = SECONDS["us"]
    return Histogram.of([int(line.split("\t")[2]) * us for line in log.splitlines() if line.strip()],
                        source="h2load per-request log")


def parse(stdout: str, log: str) -> dict:
    """Metrics, in seconds and bytes, from h2load's summary (counts, bytes) and its per-request log."""
    counts = _REQUESTS.search(stdout)
    if not counts:
        raise LoadError("h2load printed no 'requests: N total, ...' summary: it did not run")
    total, started, done, succeeded, failed, errored, timeout = map(int, counts.groups())
    rows = [line.split("\t") for line in log.splitlines() if line.strip()]
    traffic = _TRAFFIC.search(stdout)
    received = int(traffic.group(1)) if traffic else 0
    # h2load reads the status code only from a status line with a reason phrase; Tomcat sends
    # "HTTP/1.1 200 " without one, so every answer counts as failed with status 0 though it arrived.
    unreadable = (succeeded == 0 and errored == 0 and timeout == 0 and done == total > 0 and received > 0
                  and rows and all(r[1] == "0" for r in rows))
    if succeeded == 0 and not unreadable:
        why = "connection refused - is the server listening there?" if started == 0 else "see its output"
        raise LoadError(f"h2load completed none of {total} requests ({errored} errored, {failed} failed): {why}")
    if done + errored < total:
        raise LoadError(f"h2load stopped early: {done} of {total} requests done, {errored} errored")
    if len(rows) < done:
        raise LoadError(f"h2load's log has {len(rows)} rows for {done} requests done: the log is incomplete")
    us = SECONDS["us"]
    starts = [int(r[0]) for r in rows]
    ends = [int(r[0]) + int(r[2]) for r in rows]
    elapsed = (max(ends) - min(starts)) * us
    finished = _FINISHED.search(stdout)
    if elapsed <= 0 and finished:
        elapsed = float(finished.group(1)) * SECONDS[finished.group(2)]
    # A timed run (-D) stops with requests in flight: started exceeds total by them, and they are no error.
    not_started = max(0, total - started)
    metrics = {
        "requests": done,
        "bytes": received,
        "elapsed_s": elapsed,
        "rps": done / elapsed if elapsed > 0 else 0.0,
        "bytes_per_request": received / done if done else None,
        **latency.summary([int(r[2]) * us for r in rows]),
        "errors_connect": not_started,
        "errors_read": max(0, errored - not_started - timeout),
        "errors_write": 0,
        "errors_status": None if unreadable else done - succeeded,
        "errors_timeout": timeout,
        "target_rps": None,
        "note": UNREADABLE_STATUS if unreadable else None,
    }
    return metrics


UNREADABLE_STATUS = ("h2load could not read the status lines (the server sends no reason phrase, as Tomcat does), "
                     "so the statuses under load are unchecked; only the verify request was; driver='wrk' (the "
                     "count default) checks every status")
