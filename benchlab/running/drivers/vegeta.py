"""vegeta: an open loop at a constant rate, so a stalled server shows in the latency (no coordinated omission).

``vegeta attack`` sends ``rate`` requests per second on schedule, whether or not earlier ones were
answered, and writes every result to ``vegeta-<phase>.bin``. The parser then runs ``vegeta report
-type=json`` (counts, achieved rate, throughput; durations in ns) and ``vegeta encode -to=csv`` (each
request's status, latency and error, from which the exact percentiles and the errors by kind come) on that
file, and keeps the JSON report and the latency histogram beside the result.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

from ... import home
from ...errors import LoadError, ToolMissing, UsageError
from ...schema import ERROR_KINDS, PROTOCOLS, SECONDS
from ...store.histogram import Histogram
from .. import process
from . import latency
from .base import Driver, Invocation, error_kind, version_of

#: Below this share of the requested rate, a run is flagged.
REACHED = 0.95

#: Histogram buckets kept beside the result (vegeta report -type=hist).
HISTOGRAM = "hist[0,1ms,2ms,5ms,10ms,20ms,50ms,100ms,200ms,500ms,1s,2s,5s]"


#: The most requests vegeta keeps in flight, and connections it opens: 10,000 req/s answered in 100 ms need 1,000.
MAX_WORKERS = 1000


def _rate_flag(rate: float) -> str:
    # vegeta's rate is a whole count per period: 12.5/s is written 125/10s.
    if float(rate).is_integer():
        return f"{int(rate)}/1s"
    return f"{round(rate * 1000)}/1000s"


#: vegeta's flags for each protocol: Go's client offers h2 by ALPN over TLS unless told -http2=false, speaks h2c with
#: prior knowledge only when told -h2c, and is told not to verify the throwaway certificate.
PROTOCOL_FLAGS = {"http1": [], "h2c": ["-h2c"], "h2": ["-http2=true", "-insecure"],
                  "https": ["-http2=false", "-insecure"]}


class Vegeta(Driver):
    name = "vegeta"
    models = ("rate",)
    protocols = PROTOCOLS
    #: The most requests a second it is let offer from one load core: five times what it kept here (10,000 req/s on
    #: one core; at 20,000 it sent 1,022), so only a rate no machine's vegeta sends is refused before the run.
    most_per_core = 50_000
    install = ("GOBIN=<repo>/.tools/bin go install github.com/tsenart/vegeta/v12@v12.13.0 "
               "(or bash .ci/install-drivers.sh)")

    def executable(self) -> str:
        found = shutil.which("vegeta")
        local = home.project_root() / ".tools" / "bin" / "vegeta"
        if found:
            return found
        if local.exists():
            return str(local)
        raise ToolMissing(f"vegeta is not installed or not on PATH: {self.install}")

    def version(self) -> str:
        return "vegeta " + version_of([self.executable(), "-version"], "Version").removeprefix("Version:").strip()

    def command(self, url: str, scenario, load, *, phase: str, workdir: Path) -> Invocation:
        if load.model != "rate":
            raise UsageError(f"vegeta offers a 'rate' load (requests/s), not {load.model!r}: use wrk or h2load")
        workdir = Path(workdir)
        target = [f"{scenario.method} {url}{scenario.path}"]
        if scenario.content_type:
            target.append(f"Content-Type: {scenario.content_type}")
        if scenario.body is not None:
            body = workdir / "vegeta-body.bin"
            body.write_bytes(scenario.body)
            target.append(f"@{body}")
        targets = workdir / "vegeta-targets.txt"
        targets.write_text("\n".join(target) + "\n")
        seconds = load.warmup if phase == "warmup" else load.duration
        results = results_path(workdir, phase)
        argv = [
            self.executable(), "attack",
            f"-rate={_rate_flag(load.rate)}",
            f"-duration={seconds:g}s",
            f"-timeout={load.timeout:g}s",
            # the most requests in flight: past it an overloaded server shows as a rate not kept, not as an unbounded
            # pile of connections (measured here: a capacity search past Undertow's knee on reflect left every
            # ephemeral port taken, and the next server could not bind one)
            f"-max-workers={MAX_WORKERS}", f"-max-connections={MAX_WORKERS}",
            f"-targets={targets}",
            f"-output={results}",
            *([] if load.keepalive else ["-keepalive=false"]),
            *PROTOCOL_FLAGS[load.protocol],
        ]
        return Invocation(tuple(argv), phase, workdir, files={"targets": targets, "results": results},
                          target_rps=load.rate)

    def parse(self, stdout: str, invocation: Invocation) -> dict:
        results, workdir = invocation.files["results"], invocation.workdir
        if not results.exists() or results.stat().st_size == 0:
            raise LoadError(f"vegeta wrote no results to {results}")
        report = self._run([self.executable(), "report", "-type=json", str(results)])
        table = self._run([self.executable(), "encode", "-to=csv", str(results)])
        if invocation.phase == "measure":
            (workdir / "vegeta-report.json").write_text(report)
            histogram = self._run([self.executable(), "report", f"-type={HISTOGRAM}", str(results)])
            (workdir / "vegeta-histogram.txt").write_text(histogram)
        return parse(report, table, target_rps=invocation.target_rps)

    def histogram(self, stdout: str, invocation: Invocation) -> Histogram | None:
        results = invocation.files["results"]
        if not results.exists() or results.stat().st_size == 0:
            return None
        return distribution(self._run([self.executable(), "encode", "-to=csv", str(results)]))

    @staticmethod
    def _run(argv: list[str]) -> str:
        done = process.run(argv, timeout=300)
        if done.returncode != 0:
            raise LoadError(f"{' '.join(argv)} failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
        return done.stdout


def results_path(workdir: Path, phase: str) -> Path:
    return Path(workdir) / f"vegeta-{phase}.bin"


def distribution(results_csv: str) -> Histogram:
    r"""The histogram of every result's latency (its third column, nanoseconds) in ``vegeta encode -to=csv``.

    >>> distribution("1700000000000000000,200,1500000,0,12,,,GET,/\n").max
    0.0015
    """
    ns = SECONDS["ns"]
    return Histogram.of([int(row[2]) * ns for row in csv.reader(io.StringIO(results_csv)) if row],
                        source="vegeta results")


def parse(report_json: str, results_csv: str, *, target_rps: float | None = None) -> dict:
    """Metrics from ``vegeta report -type=json`` and ``vegeta encode -to=csv`` of the same results.

    The CSV has one row per request: timestamp (ns), status, latency (ns), bytes out, bytes in, error,
    body, ... Every latency counts, timeouts and errors included: an open loop's latency is the time from
    when a request was due to its answer, whatever it was.
    """
    report = json.loads(report_json)
    ns = SECONDS["ns"]
    requests = int(report["requests"])
    if requests == 0:
        raise LoadError("vegeta sent no request: the duration or rate is too small")
    errors = dict.fromkeys(ERROR_KINDS, 0)
    latencies = []
    for row in csv.reader(io.StringIO(results_csv)):
        if not row:
            continue
        code, took, error = int(row[1]), int(row[2]), row[5]
        latencies.append(took * ns)
        kind = error_kind(code, error)
        if kind:
            errors[kind] += 1
    if len(latencies) != requests:
        raise LoadError(f"vegeta's results hold {len(latencies)} rows for {requests} requests")
    good = requests - sum(errors.values())
    if good == 0:
        first = (report.get("errors") or ["no error text"])[0]
        raise LoadError(f"vegeta got no good answer to {requests} requests ({first}): is the server listening?")
    elapsed = (report["duration"] + report["wait"]) * ns
    received = int(report["bytes_in"]["total"])
    # Answers (a wrong status is an answer, as wrk counts it) per second of the attack: vegeta's own
    # "throughput" adds the wait for the last answers to the window, so a run that kept its rate against a
    # slow server would look as if it had not.
    answered = good + errors["status"]
    summary = latency.summary(latencies)
    # The answers kept up with the rate when the last ones came no later than a typical answer takes (the median
    # latency): a server that answers every request in 50 ms keeps a 2 s window's rate, where counting its 50 ms
    # wait would make it 2.5% short; one that fell behind has a backlog to drain beyond that.
    kept = (report["duration"] + max(0.0, report["wait"] - (summary.get("p50") or 0.0) / ns)) * ns
    metrics = {
        "requests": requests,
        "bytes": received,
        "elapsed_s": elapsed,
        "rps": answered / (report["duration"] * ns),
        "bytes_per_request": received / requests,
        **summary,
        **{f"errors_{kind}": count for kind, count in errors.items()},
        "target_rps": target_rps,
        "sent_rps": float(report["rate"]),
        # the answers over the attack and the wait for the last ones beyond a typical answer's time: a server that
        # fell behind answers late, so this falls below the rate where sent_rps does not (HttpArena's rate_ratio)
        "achieved_rps": answered / kept if kept > 0 else None,
        "success_ratio": float(report["success"]),
    }
    if target_rps and metrics["sent_rps"] < REACHED * target_rps:
        metrics["note"] = (
            f"sent {metrics['sent_rps']:.1f} of the {target_rps:g} requests/s asked "
            f"({metrics['sent_rps'] / target_rps:.0%}), below {REACHED:.0%}: the load tool could not keep that rate"
        )
    return metrics
