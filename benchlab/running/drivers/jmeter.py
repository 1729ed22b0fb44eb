"""Apache JMeter 5.6: a thread-group plan (``users`` threads x ``loops``), run non-GUI, read from its JTL.

benchlab writes the plan (``jmeter-plan.jmx``, kept beside the result) from the load and the scenario,
or runs a user's own ``.jmx`` (``plan=``), passing the target as JMeter properties (``benchlab.host``,
``benchlab.port``, ``benchlab.path``, ``benchlab.users``, ``benchlab.loops``, ``benchlab.ramp_up``)
so such a plan can use ``${__P(benchlab.port)}``. JMeter exits 0 whatever its plan did, so the parser
checks that the JTL exists and has rows. JMeter records whole milliseconds.

The JMeter used is the 5.6.x home that ``.ci/install-drivers.sh`` assembles from Maven Central under
``<repo>/.tools/jmeter``, else a ``jmeter`` 5.x on PATH. Debian's jmeter 2.13 fails every plan on Java 17
and still exits 0, so it is refused.
"""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
import urllib.parse
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from xml.sax.saxutils import escape

from ... import home
from ...errors import LoadError, ToolMissing, UsageError
from ...schema import ERROR_KINDS, SECONDS
from ...store.histogram import Histogram
from .. import process
from . import latency
from .base import Driver, Invocation, error_kind, version_of

INSTALL = "bash .ci/install-drivers.sh (assembles Apache JMeter 5.6.3 from Maven Central under .tools/jmeter)"

#: JMeter's JVM: a fixed heap, so a run does not pause to grow it.
JVM_OPTIONS = ("-Xms512m", "-Xmx1g", "-XX:+UseG1GC", "-Djava.awt.headless=true")

#: The JTL we ask for: CSV with a header, one row per request (no sub-results).
JTL_PROPERTIES = (
    "-Jjmeter.save.saveservice.output_format=csv",
    "-Jjmeter.save.saveservice.print_field_names=true",
    "-Jjmeter.save.saveservice.subresults=false",
    "-Jjmeter.save.saveservice.timestamp_format=ms",
    "-Jjmeterengine.nongui.port=0",  # no shutdown listener on port 4445: runs may overlap
)


def _tools_home() -> Path:
    return home.project_root() / ".tools" / "jmeter"


def plan(url: str, scenario, load) -> str:
    """A JMeter test plan: one thread group of ``load.users`` threads, each sending the scenario ``loops`` times."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<jmeterTestPlan version="1.2" properties="5.0" jmeter="5.6.3">
  <hashTree>
    <TestPlan guiclass="TestPlanGui" testclass="TestPlan" testname="benchlab">
      <elementProp name="TestPlan.user_defined_variables" elementType="Arguments">
        <collectionProp name="Arguments.arguments"/>
      </elementProp>
    </TestPlan>
    <hashTree>
{_thread_group(load)}
      <hashTree>
{_sampler(url, scenario, load)}
      </hashTree>
    </hashTree>
  </hashTree>
</jmeterTestPlan>
"""


#: The loop controller's opening tag, on one line as JMeter writes it.
_LOOP_CONTROLLER = ('<elementProp name="ThreadGroup.main_controller" elementType="LoopController" '
                    'guiclass="LoopControlPanel" testclass="LoopController" testname="loops">')


def _thread_group(load) -> str:
    """The thread group: ``load.users`` threads started over ``ramp_up`` seconds, each looping ``loops`` times."""
    return f"""      <ThreadGroup guiclass="ThreadGroupGui" testclass="ThreadGroup" testname="users">
        <intProp name="ThreadGroup.num_threads">{load.users}</intProp>
        <intProp name="ThreadGroup.ramp_time">{math.ceil(load.ramp_up)}</intProp>
        <boolProp name="ThreadGroup.same_user_on_next_iteration">true</boolProp>
        <stringProp name="ThreadGroup.on_sample_error">continue</stringProp>
        {_LOOP_CONTROLLER}
          <stringProp name="LoopController.loops">{load.loops}</stringProp>
          <boolProp name="LoopController.continue_forever">false</boolProp>
        </elementProp>
      </ThreadGroup>"""


def _sampler(url: str, scenario, load) -> str:
    """The scenario's HTTP request, with its timeouts, its body and its content type."""
    parts = urllib.parse.urlsplit(url)
    ms = str(int(load.timeout * 1000))
    opening = ('<HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy" '
               f'testname="{escape(scenario.name)}">')
    return f"""        {opening}
          <stringProp name="HTTPSampler.domain">{escape(parts.hostname or "127.0.0.1")}</stringProp>
          <stringProp name="HTTPSampler.port">{parts.port or 80}</stringProp>
          <stringProp name="HTTPSampler.protocol">http</stringProp>
          <stringProp name="HTTPSampler.path">{escape(scenario.path)}</stringProp>
          <stringProp name="HTTPSampler.method">{escape(scenario.method)}</stringProp>
          <boolProp name="HTTPSampler.use_keepalive">true</boolProp>
          <boolProp name="HTTPSampler.follow_redirects">false</boolProp>
          <stringProp name="HTTPSampler.connect_timeout">{ms}</stringProp>
          <stringProp name="HTTPSampler.response_timeout">{ms}</stringProp>{_body(scenario)}
        </HTTPSamplerProxy>
        {_content_type(scenario)}"""


def _body(scenario) -> str:
    """The sampler's raw request body, or nothing for a request without one."""
    if scenario.body is None:
        return ""
    return f"""
          <boolProp name="HTTPSampler.postBodyRaw">true</boolProp>
          <elementProp name="HTTPsampler.Arguments" elementType="Arguments">
            <collectionProp name="Arguments.arguments">
              <elementProp name="" elementType="HTTPArgument">
                <boolProp name="HTTPArgument.always_encode">false</boolProp>
                <stringProp name="Argument.value">{escape(scenario.body.decode())}</stringProp>
                <stringProp name="Argument.metadata">=</stringProp>
              </elementProp>
            </collectionProp>
          </elementProp>"""


def _content_type(scenario) -> str:
    """The sampler's tree: a header manager sending the scenario's Content-Type, or empty."""
    if not scenario.content_type:
        return "<hashTree/>"
    return f"""<hashTree>
          <HeaderManager guiclass="HeaderPanel" testclass="HeaderManager" testname="headers">
            <collectionProp name="HeaderManager.headers">
              <elementProp name="" elementType="Header">
                <stringProp name="Header.name">Content-Type</stringProp>
                <stringProp name="Header.value">{escape(scenario.content_type)}</stringProp>
              </elementProp>
            </collectionProp>
          </HeaderManager>
          <hashTree/>
        </hashTree>"""


def check_plan(path: str | Path) -> Path:
    """``path`` if it is a JMeter test plan with a thread group, else :class:`UsageError`."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no JMeter plan at {path}: give the path of a .jmx file saved by JMeter")
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as exc:
        raise UsageError(f"{path} is not a JMeter plan (not XML: {exc}): save it from JMeter as .jmx") from None
    if root.tag != "jmeterTestPlan":
        raise UsageError(f"{path} is not a JMeter plan (its root is <{root.tag}>, not <jmeterTestPlan>)")
    if not any(el.tag.endswith("ThreadGroup") or "ThreadGroup" in el.get("testclass", "") for el in root.iter()):
        raise UsageError(f"{path} has no thread group: add one in JMeter, or leave plan unset to get one")
    return path


class JMeter(Driver):
    name = "jmeter"
    models = ("count",)
    install = INSTALL

    def check(self, load) -> None:
        """Refuse a user's plan that is not a JMeter plan before any server starts."""
        if load.plan:
            check_plan(load.plan)

    def executable(self) -> str:
        """The JMeter launcher: ``.tools/jmeter/bin/ApacheJMeter.jar``, or a jmeter 5.x script on PATH."""
        jar = _tools_home() / "bin" / "ApacheJMeter.jar"
        if jar.exists():
            process.require("java", "apt-get install openjdk-17-jre-headless")
            return str(jar)
        found = shutil.which("jmeter")
        if found:
            if re.search(r"\b5\.\d+", version_of([found, "--version"], "5.")) is None:
                raise ToolMissing(f"the jmeter on PATH ({found}) is not JMeter 5.x (Debian's 2.13 fails on "
                                  f"Java 17): {INSTALL}")
            return found
        raise ToolMissing(f"JMeter is not installed: {INSTALL}")

    def _launcher(self) -> list[str]:
        exe = self.executable()
        if exe.endswith(".jar"):
            return [process.require("java", "apt-get install openjdk-17-jre-headless"), *JVM_OPTIONS, "-jar", exe]
        return [exe]

    def version(self) -> str:
        exe = self.executable()
        version_file = Path(exe).parent.parent / "VERSION"
        if version_file.exists():
            return f"Apache JMeter {version_file.read_text().strip()}"
        return version_of([exe, "--version"], "5.")

    def command(self, url: str, scenario, load, *, phase: str, workdir: Path) -> Invocation:
        if load.model != "count":
            raise UsageError(f"JMeter offers a 'count' load (users x loops), not {load.model!r}: use wrk or vegeta")
        workdir = Path(workdir)
        if load.plan:
            plan_path = check_plan(load.plan)
            planned = None  # a user's plan decides how many requests it sends
        else:
            plan_path = workdir / "jmeter-plan.jmx"
            plan_path.write_text(plan(url, scenario, load))
            planned = load.users * load.loops
        jtl = jtl_path(workdir, phase)
        if jtl.exists():
            jtl.unlink()  # JMeter appends to an existing JTL
        parts = urllib.parse.urlsplit(url)
        log = workdir / f"jmeter-{phase}.log"
        argv = [
            *self._launcher(), "-n",
            "-t", str(plan_path),
            "-l", str(jtl),
            "-j", str(log),
            *JTL_PROPERTIES,
            f"-Jbenchlab.host={parts.hostname}",
            f"-Jbenchlab.port={parts.port}",
            f"-Jbenchlab.path={scenario.path}",
            f"-Jbenchlab.users={load.users}",
            f"-Jbenchlab.loops={load.loops}",
            f"-Jbenchlab.ramp_up={math.ceil(load.ramp_up)}",
        ]
        return Invocation(tuple(argv), phase, workdir, files={"plan": plan_path, "jtl": jtl, "log": log},
                          planned_requests=planned)

    def parse(self, stdout: str, invocation: Invocation) -> dict:
        jtl, log, planned = invocation.files["jtl"], invocation.files["log"], invocation.planned_requests
        if not jtl.exists():
            raise LoadError(f"JMeter wrote no JTL ({jtl}): its plan did not run; see {log}")
        metrics = parse(jtl.read_text())
        if planned is not None and metrics["requests"] != planned:
            raise LoadError(f"JMeter recorded {metrics['requests']} of {planned} planned requests; see {log}")
        return metrics

    def histogram(self, stdout: str, invocation: Invocation) -> Histogram | None:
        jtl = invocation.files["jtl"]
        return distribution(jtl.read_text()) if jtl.exists() else None


def jtl_path(workdir: Path, phase: str) -> Path:
    return Path(workdir) / f"jmeter-{phase}.jtl"


def _error_kind(row: dict) -> str | None:
    """Which METRICS error field one JTL row counts in, or None for a good answer. A row JMeter failed
    with an HTTP status (an assertion on a 200, a 500) is a status error; one without is classed by its
    message."""
    code = row.get("responseCode", "")
    if row.get("success") == "true" and code.isdigit() and 200 <= int(code) < 400:
        return None
    if code.isdigit():
        return "status"
    return error_kind(None, f"{code} {row.get('responseMessage', '')} {row.get('failureMessage', '')}")


def distribution(jtl: str) -> Histogram:
    r"""The histogram of every sample's ``elapsed`` (whole milliseconds) in a JTL in CSV with its header.

    >>> distribution("timeStamp,elapsed\n1700000000000,0\n1700000000001,3\n").percentile(50)
    0.0
    """
    ms = SECONDS["ms"]
    return Histogram.of([int(row["elapsed"]) * ms for row in csv.DictReader(io.StringIO(jtl))],
                        source="JMeter JTL, whole milliseconds")


def parse(jtl: str) -> dict:
    """Metrics, in seconds and bytes, from a JTL in CSV with its header row (times in ms)."""
    rows = list(csv.DictReader(io.StringIO(jtl)))
    if not rows:
        raise LoadError("JMeter's JTL has no rows: no request was sent (check the plan's thread group and target)")
    missing = {"timeStamp", "elapsed", "responseCode", "success", "bytes"} - set(rows[0])
    if missing:
        raise LoadError(f"JMeter's JTL lacks the columns {', '.join(sorted(missing))}: save it as CSV with a header")
    ms = SECONDS["ms"]
    starts = [int(r["timeStamp"]) for r in rows]
    ends = [int(r["timeStamp"]) + int(r["elapsed"]) for r in rows]
    elapsed = max((max(ends) - min(starts)) * ms, ms)
    errors = dict.fromkeys(ERROR_KINDS, 0)
    for row in rows:
        kind = _error_kind(row)
        if kind:
            errors[kind] += 1
    if sum(errors.values()) == len(rows):
        first = rows[0].get("responseMessage") or rows[0].get("responseCode")
        raise LoadError(f"JMeter got no good answer to {len(rows)} requests ({first}): is the server listening?")
    received = sum(int(r["bytes"]) for r in rows)
    return {
        "requests": len(rows),
        "bytes": received,
        "elapsed_s": elapsed,
        "rps": len(rows) / elapsed,
        "bytes_per_request": received / len(rows),
        **latency.summary([int(r["elapsed"]) * ms for r in rows]),
        **{f"errors_{kind}": count for kind, count in errors.items()},
        "target_rps": None,
    }
