"""wrk: a closed loop for a fixed time or a fixed count, with its Lua ``done()`` reporter and a text parser.

A timed load may pipeline (``pipeline=16``): :data:`PIPELINE` sends that many requests a connection in one write;
wrk counts every answer and records one latency per batch, from the write to the batch's last answer, and its
percentiles of those are wrong (:func:`pipelined_percentiles`), so they are read off the recorded latencies.

wrk 4.x corrects its latencies for coordinated omission before ``done()`` runs: after the load, every
recorded latency longer than twice the mean time between a connection's requests adds synthetic samples
(that latency minus one, two, ... intervals). Its percentiles and the histogram kept here both include
them, so the histogram counts more latencies than requests; :data:`CORRECTED` says so in the run's metadata.

A ``count`` load (``users`` x ``loops`` requests) is wrk with :data:`COUNTER`: each thread stops after its
share of the answers, and the last thread to finish interrupts wrk's main thread (which otherwise sleeps
for the whole ``-d``), so the run lasts as long as the requests take. wrk counts every status above 399
as an error whatever the status line looks like, which h2load cannot do for Tomcat's (no reason phrase).
A few answers already in flight when a thread stops are counted too: ``requests`` can exceed the plan by
less than the number of users.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ...errors import LoadError
from ...schema import BYTES, ERROR_KINDS, PERCENTILE_COLUMNS, SECONDS
from ...store.histogram import Histogram
from .base import Driver, Invocation

MARK = "BENCHLAB_JSON "
DISTRIBUTION = "BENCHLAB_LATENCY "

#: What wrk did to its latencies before reporting them; recorded as the run's ``latency_corrected``.
CORRECTED = ("wrk 4.x coordinated-omission correction: synthetic samples added for latencies over twice the "
             "mean interval between a connection's requests")

# wrk calls done() once, after the run, with every latency it recorded (in microseconds).
REPORTER = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  local p = {}
  for _, q in ipairs({@QUANTILES@}) do
    p[#p + 1] = string.format('"%s":%.1f', tostring(q), latency:percentile(q))
  end
  io.write("BENCHLAB_JSON ")
  io.write(string.format(
    '{"requests":%.0f,"bytes":%.0f,"duration_us":%.0f,' ..
    '"errors":@ERRORS@,' ..
    '"latency_us":{"min":%.1f,"mean":%.3f,"stdev":%.3f,"max":%.1f},"percentiles_us":{%s}}\n',
    summary.requests, summary.bytes, summary.duration,
    @ERROR_VALUES@,
    latency.min, latency.mean, latency.stdev, latency.max, table.concat(p, ",")))
end
""".replace("@QUANTILES@", ", ".join(f"{q:g}" for q in PERCENTILE_COLUMNS.values())).replace(
    "@ERRORS@", "{" + ",".join(f'"{kind}":%.0f' for kind in ERROR_KINDS) + "}").replace(
    "@ERROR_VALUES@", ", ".join(f"e.{kind}" for kind in ERROR_KINDS))

# The measure phase's reporter also writes every (latency, count) wrk recorded, in microseconds. latency(i)
# walks wrk's buckets from the lowest each time, so this is quadratic in the distinct latencies: some 0.1 s
# for a few thousand of them, after the load ended.
DISTRIBUTION_REPORTER = r"""
local report = done
done = function(summary, latency, requests)
  report(summary, latency, requests)
  local seen = {}
  for i = 1, #latency do
    local value, count = latency(i)
    seen[i] = string.format("%d:%d", value, count)
  end
  io.write("BENCHLAB_LATENCY ", table.concat(seen, ","), "\n")
end
"""


def _lua_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# Pipelining, as TechEmpower's pipeline.lua does it: each connection sends ``depth`` requests in one write and
# waits for their answers; wrk counts every answer and records one latency per batch.
PIPELINE = r"""
init = function(args)
  local batch = {}
  for i = 1, @DEPTH@ do batch[i] = wrk.format() end
  benchlab_batch = table.concat(batch)
end
request = function() return benchlab_batch end
"""


def script(scenario, *, distribution: bool = False, pipeline: int = 1, close: bool = False) -> str:
    """The Lua script for one scenario: its method, body and headers, ``pipeline`` requests a write when more
    than one, then the reporter (with every latency and its count when ``distribution``). ``close``: each
    request asks the server to close its connection, and wrk opens a new one for the next.

    >>> get = type("S", (), {"method": "GET", "body": None, "content_type": None})
    >>> "benchlab_batch" in script(get, pipeline=16), 'wrk.headers["Connection"] = "close"' in script(get, close=True)
    (True, True)
    """
    lines = []
    if scenario.method != "GET":
        lines.append(f"wrk.method = {_lua_string(scenario.method)}")
    if scenario.body is not None:
        lines.append(f"wrk.body = {_lua_string(scenario.body.decode())}")
    if scenario.content_type:
        lines.append(f'wrk.headers["Content-Type"] = {_lua_string(scenario.content_type)}')
    if close:
        lines.append('wrk.headers["Connection"] = "close"')
    batch = PIPELINE.replace("@DEPTH@", str(int(pipeline))) if pipeline > 1 else ""
    return "\n".join(lines) + "\n" + batch + REPORTER + (DISTRIBUTION_REPORTER if distribution else "")


# The count: each thread's share is set by setup() in wrk's main Lua state; the semaphore lives there and
# its address is handed to every thread. sem_post is a full barrier, so the last thread to post reads
# the full count and sends SIGINT to the main thread (tgkill: syscall 234 on x86-64, 131 on arm64; SIGINT is 2), whose
# handler ends wrk's sleep; wrk then joins the threads and calls done() as after a timed run.
COUNTER = r"""
local ffi = require("ffi")
ffi.cdef[[
typedef union { char size[32]; long align; } benchlab_sem_t;
int sem_init(benchlab_sem_t *sem, int pshared, unsigned int value);
int sem_post(benchlab_sem_t *sem);
int sem_getvalue(benchlab_sem_t *sem, int *value);
int getpid(void);
long syscall(long number, ...);
]]
local planned, threads, made = @REQUESTS@, @THREADS@, 0
local TGKILL = {x64 = 234, arm64 = 131}  -- the tgkill syscall's number on each architecture
setup = function(thread)
  if benchlab_finished == nil then
    benchlab_finished = ffi.new("benchlab_sem_t[1]")
    ffi.C.sem_init(benchlab_finished, 0, 0)
  end
  local share = math.floor(planned / threads) + ((made < planned % threads) and 1 or 0)
  thread:set("benchlab_share", share)
  thread:set("benchlab_semaphore", tonumber(ffi.cast("uintptr_t", benchlab_finished)))
  made = made + 1
end
local answered = 0
response = function(status, headers, body)
  answered = answered + 1
  if answered == benchlab_share then
    wrk.thread:stop()
    local sem = ffi.cast("benchlab_sem_t *", benchlab_semaphore)
    ffi.C.sem_post(sem)
    local count = ffi.new("int[1]")
    ffi.C.sem_getvalue(sem, count)
    if count[0] >= threads then
      local pid = ffi.C.getpid()
      ffi.C.syscall(TGKILL[ffi.arch], ffi.cast("long", pid), ffi.cast("long", pid), ffi.cast("long", 2))
    end
  end
end
"""


def count_script(scenario, requests: int, threads: int, *, distribution: bool = False) -> str:
    """The Lua script of a count load: the scenario, the reporter, and :data:`COUNTER` for ``requests``
    answers over ``threads`` threads."""
    counter = COUNTER.replace("@REQUESTS@", str(int(requests))).replace("@THREADS@", str(int(threads)))
    return script(scenario, distribution=distribution) + counter


def _whole_seconds(seconds: float) -> str:
    return f"{max(1, round(seconds))}s"


class Wrk(Driver):
    name = "wrk"
    models = ("duration", "count")
    protocols = ("http1", "https")  # HTTP/1.1, in clear text or over TLS (an https url); no HTTP/2
    install = "apt-get install wrk (or conda install -c conda-forge wrk)"
    version_flag = "-v"
    corrected = CORRECTED

    def command(self, url: str, scenario, load, *, phase: str, workdir: Path) -> Invocation:
        lua = Path(workdir) / "wrk.lua"
        planned = None
        if load.model == "count" and phase == "measure":
            lua = Path(workdir) / "wrk-count.lua"
            planned, threads = load.users * load.loops, max(1, min(load.threads, load.users))
            lua.write_text(count_script(scenario, planned, threads, distribution=True))
            # The count ends the run; -d is only its limit, below the time drivers.execute allows it.
            seconds = 3 * load.planned_seconds + load.timeout + 50
        else:
            threads = load.threads
            lua.write_text(script(scenario, distribution=phase == "measure", pipeline=load.pipeline,
                                  close=not load.keepalive))
            seconds = load.warmup if phase == "warmup" else load.duration
        argv = [
            self.executable(),
            f"-t{threads}",
            f"-c{load.connections}",
            f"-d{_whole_seconds(seconds)}",
            f"--timeout={_whole_seconds(load.timeout)}",
            "--latency",
            "-s", str(lua),
            url + scenario.path,
        ]
        return Invocation(tuple(argv), phase, workdir, files={"script": lua}, planned_requests=planned,
                          pipeline=load.pipeline)

    def parse(self, stdout: str, invocation: Invocation | None = None) -> dict:
        metrics = parse(stdout)
        planned = invocation.planned_requests if invocation is not None else None
        if planned and metrics["requests"] < planned:
            raise LoadError(f"wrk answered {metrics['requests']} of the {planned} requests before its time limit: "
                            "the server is too slow for this count, or stopped answering")
        if invocation is not None and invocation.pipeline > 1:
            metrics.update(pipelined_percentiles(stdout))
        return metrics

    def histogram(self, stdout: str, invocation: Invocation | None = None) -> Histogram | None:
        return distribution(stdout)


def pipelined_percentiles(stdout: str) -> dict:
    """A pipelined run's percentiles, read off the latencies wrk recorded (one a batch): wrk's own
    ``latency:percentile`` ranks them against its count of requests, not of batches, and gives 0 for every
    percentile above the share of requests that were a batch's first (seen here: p90 and up 0 at 16 deep).
    Nothing when the run kept no latency (a warm-up slice).

    >>> pipelined_percentiles("BENCHLAB_LATENCY 1000:1,2000:1,3000:2")["p99"]
    0.003
    """
    histogram = distribution(stdout)
    if histogram is None or histogram.count == 0:
        return {}
    return {name: round(float(histogram.percentile(q)), 6) for name, q in PERCENTILE_COLUMNS.items()}


def distribution(stdout: str) -> Histogram | None:
    """The histogram of the reporter's ``BENCHLAB_LATENCY value:count,...`` line (microseconds), or None.

    >>> distribution("BENCHLAB_LATENCY 100:3,250:1").count
    4
    """
    for line in stdout.splitlines():
        if line.startswith(DISTRIBUTION):
            pairs = [pair.split(":") for pair in line[len(DISTRIBUTION):].split(",") if pair]
            values = [int(value) * SECONDS["us"] for value, _ in pairs]
            return Histogram.of_counts(values, [int(count) for _, count in pairs], source="wrk, corrected")
    return None


def parse(stdout: str) -> dict:
    """Metrics from wrk's output with the benchlab reporter (falls back to the text report)."""
    for line in stdout.splitlines():
        if line.startswith(MARK):
            return parse_json(json.loads(line[len(MARK):]))
    if "Requests/sec" in stdout:
        return parse_text(stdout)
    if "unable to connect" in stdout or "Connection refused" in stdout:
        raise LoadError("wrk could not connect to the server (connection refused): is it listening there?")
    raise LoadError("wrk printed no report")


def parse_json(report: dict) -> dict:
    """Metrics, in seconds and bytes, from the reporter's JSON (whose times are microseconds)."""
    us = SECONDS["us"]
    requests = int(report["requests"])
    elapsed = report["duration_us"] * us
    lat = report["latency_us"]
    pct = report["percentiles_us"]
    errors = report["errors"]
    metrics = {
        "requests": requests,
        "bytes": int(report["bytes"]),
        "elapsed_s": elapsed,
        "rps": requests / elapsed if elapsed > 0 else 0.0,
        "bytes_per_request": report["bytes"] / requests if requests else None,
        "lat_min": lat["min"] * us,
        "lat_mean": lat["mean"] * us,
        "lat_stdev": lat["stdev"] * us,
        "lat_max": lat["max"] * us,
    }
    for name, q in PERCENTILE_COLUMNS.items():
        key = f"{q:g}"  # Lua's tostring: 50, 99.9
        metrics[name] = pct[key] * us if key in pct else None
    for kind in ERROR_KINDS:
        metrics[f"errors_{kind}"] = int(errors[kind])
    if requests == 0:
        raise LoadError("wrk completed no request: the server never answered")
    return metrics


# --- the plain-text report, for importing wrk logs people already have ----------------------------------

_COUNT = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}


def _scaled(text: str, units: dict, what: str) -> float:
    """``"1.5k"`` with ``{"k": 1e3}`` -> 1500.0: a number followed by one of ``units``."""
    suffixes = "|".join(sorted(units, key=len, reverse=True))
    m = re.fullmatch(rf"([\d.]+)({suffixes})", text)
    if not m:
        raise LoadError(f"wrk report: cannot read the {what} {text!r}")
    return float(m.group(1)) * units[m.group(2)]


def _time(text: str) -> float:
    return _scaled(text, SECONDS, "time")


def _count(text: str) -> float:
    return _scaled(text, _COUNT, "number")


def _size(text: str) -> float:
    return _scaled(text, BYTES, "size")


def parse_text(text: str) -> dict:
    """Metrics from wrk's plain ``--latency`` report.

    Times in us/ms/s, counts with k/M suffixes and transfer in KB/MB/GB are all converted to seconds,
    requests and bytes. Fields the text does not carry (p99.9, p99.99, min) are None.
    """
    metrics: dict = {k: None for k in ("lat_min", "p999", "p9999")}
    found = re.search(r"Latency\s+([\d.]+\w+)\s+([\d.]+\w+)\s+([\d.]+\w+)", text)
    if found:
        metrics["lat_mean"], metrics["lat_stdev"], metrics["lat_max"] = (_time(g) for g in found.groups())
    else:
        metrics.update(lat_mean=None, lat_stdev=None, lat_max=None)
    for q, value in re.findall(r"^\s*(50|75|90|99)(?:\.000)?%\s+([\d.]+\w+)\s*$", text, re.M):
        metrics[f"p{q}"] = _time(value)
    for q in ("p50", "p75", "p90", "p99"):
        metrics.setdefault(q, None)
    total = re.search(r"(\d+) requests in ([\d.]+\w+), ([\d.]+\w*B) read", text)
    if not total:
        raise LoadError("not a wrk report: no 'N requests in T, S read' line")
    requests = int(total.group(1))
    metrics["requests"] = requests
    metrics["elapsed_s"] = _time(total.group(2))
    metrics["bytes"] = int(_size(total.group(3)))
    rps = re.search(r"Requests/sec:\s+([\d.]+[kM]?)", text)
    metrics["rps"] = _count(rps.group(1)) if rps else requests / metrics["elapsed_s"]
    metrics["bytes_per_request"] = metrics["bytes"] / requests if requests else None
    socket_errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    for i, kind in enumerate(("connect", "read", "write", "timeout")):
        metrics[f"errors_{kind}"] = int(socket_errors.group(i + 1)) if socket_errors else 0
    status = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    metrics["errors_status"] = int(status.group(1)) if status else 0
    return metrics
