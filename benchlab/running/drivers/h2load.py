"""h2load (nghttp2): a closed loop of a fixed request count, ``users`` x ``loops`` over HTTP/1.1.

Its traps, handled here: it exits 0 even when every connection is refused, so the parser checks its
counts (succeeded against requested, errored, failed) and raises :class:`LoadError`; its
``--warm-up-time`` leaves warm-up bytes in the traffic counters, so it is never passed (the ``count``
model has no warm-up phase). Latencies come from its per-request log (``--log-file``: start time in
microseconds since the epoch, status, microseconds until the end of the response), one row per request.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import LoadError, UsageError
from ...schema import SECONDS
from ...store.histogram import Histogram
from . import latency
from .base import Driver, Invocation

_REQUESTS = re.compile(
    r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, "
    r"(\d+) timeout")
_TRAFFIC = re.compile(r"traffic: \S+ \((\d+)\) total")
_FINISHED = re.compile(r"finished in ([\d.]+)(us|ms|s)")


def log_path(workdir: Path, phase: str) -> Path:
    return Path(workdir) / f"h2load-{phase}.log"


class H2load(Driver):
    name = "h2load"
    models = ("count",)
    install = "apt-get install nghttp2-client (or bash .ci/install-drivers.sh)"

    def command(self, url: str, scenario, load, *, phase: str, workdir: Path) -> Invocation:
        if load.model != "count":
            raise UsageError(f"h2load offers a 'count' load (users x loops), not {load.model!r}: use wrk or vegeta")
        users, requests = load.users, load.users * load.loops
        log = log_path(workdir, phase)
        argv = [
            self.executable(), "--h1",
            "-n", str(requests),
            "-c", str(users),
            "-t", str(max(1, min(load.threads, users))),
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
                          planned_requests=requests)

    def parse(self, stdout: str, invocation: Invocation) -> dict:
        log = invocation.files["log"]
        return parse(stdout, log.read_text() if log.exists() else "")

    def histogram(self, stdout: str, invocation: Invocation) -> Histogram | None:
        log = invocation.files["log"]
        return distribution(log.read_text()) if log.exists() else None


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
    not_started = total - started
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
