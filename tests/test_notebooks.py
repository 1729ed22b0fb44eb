"""The notebooks, executed by papermill against the real servers with tiny durations.

Each notebook runs top to bottom through :func:`benchlab.report.execute` (the code behind
``benchlab report``): real JVMs, real wrk and h2load, 2 s measured after 1 s of warm-up, two servers, one or
two repeats. Then the re-render path (``measure=False``: stored results only, no JVM), and the failure path:
a bad parameter stops the notebook with one clear line as its first output, the executed notebook is
still written, and ``benchlab report`` exits non-zero naming the cell.

Run them under the machine's load lock, as every load test: ``flock /tmp/benchlab-heavy.lock pytest
tests/test_notebooks.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchlab import report

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SERVERS = ["spring-tomcat", "spring-jetty"]
TINY = {"servers": SERVERS, "duration": "2s", "warmup": "1s", "connections": 16}
#: compare.ipynb's runs must be fit for its verdicts and its merged spectrum: C1 only, the JIT is done within a 3 s
#: warm-up (with both compilers it compiles for minutes, and a window measured while it does is left out)
FIT = {**TINY, "warmup": "3s", "jvm_opts": ["-XX:TieredStopAtLevel=1"]}

pytestmark = pytest.mark.integration

_made: dict[str, tuple] = {}


def compare_once(tmp_root: Path) -> tuple[report.Report, Path]:
    """compare.ipynb run for real once per session; the browser test re-renders the same results."""
    if "compare" not in _made:
        results = tmp_root / "compare-results"
        done = report.execute(NOTEBOOKS / "compare.ipynb", {**FIT, "repeats": 2, "results_dir": str(results)},
                              output=tmp_root / "compare.ipynb")
        _made["compare"] = (done, results)
    return _made["compare"]


@pytest.fixture(scope="session")
def compared(tmp_path_factory, jars) -> tuple[report.Report, Path]:
    return compare_once(tmp_path_factory.getbasetemp() / "notebooks")


@pytest.fixture(scope="session")
def stored_runs(compared) -> Path:
    """A results directory of real runs: the compare notebook's."""
    return compared[1]


def outputs(path: Path) -> list[tuple[int, dict]]:
    import nbformat  # here, not at the top: its jsonschema costs every fast-tier worker 2 s of collection
    nb = nbformat.read(str(path), as_version=4)
    return [(i, o) for i, cell in enumerate(nb.cells) for o in cell.get("outputs", [])]


def errors(path: Path) -> list[str]:
    return [f"{o['ename']}: {o['evalue']}" for _, o in outputs(path) if o["output_type"] == "error"]


def charts_in(path: Path) -> list[dict]:
    """The Vega-Lite specs the notebook displayed; each must also carry its static SVG."""
    found = []
    for _, o in outputs(path):
        data = o.get("data", {})
        if report.VEGALITE_MIMETYPE in data:
            assert data["image/svg+xml"].lstrip().startswith("<svg")
            spec = data[report.VEGALITE_MIMETYPE]
            heading = spec.get("title", {}).get("text")
            if isinstance(heading, list):  # a title too long for a narrow chart is drawn on two lines
                spec = {**spec, "title": {**spec["title"], "text": " ".join(heading)}}
            found.append(spec)
    return found


def text_of(path: Path) -> str:
    parts = []
    for _, o in outputs(path):
        parts.append(o.get("text", ""))
        parts.extend(str(v) for k, v in o.get("data", {}).items() if k in ("text/plain", "text/html"))
    return "\n".join(parts)


def run_files(results: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in results.rglob("run.json")
            if "-retaken" not in p.parent.name}  # a disturbed window measured again is kept beside, not counted


def test_compare_notebook_runs_the_real_servers(compared):
    done, results = compared
    assert errors(done.ipynb) == []
    runs = [json.loads(Path(p).read_text()) for p in run_files(results)]
    assert len(runs) == 4 and {r["status"] for r in runs} == {"ok"}
    assert {r["params"]["server"] for r in runs} == set(SERVERS)
    assert all(r["params"]["duration"] == 2.0 and r["params"]["warmup"] == 3.0 for r in runs)
    text = text_of(done.ipynb)
    for shown in ("mean [95% CI]", "spring-jetty vs spring-tomcat: ", "significant", "fork 1", "fork 2",
                  "What was measured", "Spring Boot"):
        assert shown in text
    assert "explanation" in text or "no flags" in text
    assert "no warm-up curves: these runs had a fixed warm-up" in text, "a fixed warm-up draws no curve, and says so"
    specs = charts_in(done.ipynb)
    titles = [s["title"]["text"] for s in specs]
    assert len(specs) == 5 and titles[0].startswith("Throughput") and titles[1].startswith("Latency")
    assert titles[2].startswith("Latency spectrum")  # the merged cells: every run kept its histogram
    assert titles[3].startswith("Each measured window")  # the machine during each window
    assert "2 s measured after 3 s warm-up" in " ".join(specs[0]["title"]["subtitle"])
    assert done.html.exists() and done.html.stat().st_size > 100_000


def test_rerender_reads_stored_results_and_starts_nothing(compared, tmp_path, no_jvm_left):
    done, results = compared
    before = run_files(results)
    started = time.monotonic()
    again = report.execute(NOTEBOOKS / "compare.ipynb", {"measure": False, "results_dir": str(results)},
                           output=tmp_path / "rerender.ipynb")
    assert run_files(results) == before                          # not one run added or rewritten
    assert errors(again.ipynb) == []
    assert time.monotonic() - started < 120                       # 4 runs would take longer with JVM starts
    ours, theirs = charts_in(done.ipynb), charts_in(again.ipynb)
    assert [list(s["datasets"].values()) for s in ours[:2]] == [list(s["datasets"].values()) for s in theirs[:2]]


def test_sweep_notebook_finds_a_knee_per_server(tmp_path, jars):
    results = tmp_path / "sweep-results"
    done = report.execute(NOTEBOOKS / "sweep.ipynb", {**TINY, "connections": [8, 32], "repeats": 1,
                                                      "results_dir": str(results)}, output=tmp_path / "sweep.ipynb")
    assert errors(done.ipynb) == []
    assert len(run_files(results)) == 4
    specs = charts_in(done.ipynb)
    assert specs[0]["title"]["text"].startswith("Concurrency sweep")
    assert sorted({v["connections"] for v in list(specs[0]["datasets"].values())[0]}) == [8, 32]
    text = text_of(done.ipynb)
    assert "knee: fewest connections" in text and "spring-jetty" in text


def test_sweep_notebook_over_rates_draws_latency_against_throughput(tmp_path, jars):
    results = tmp_path / "rate-results"
    done = report.execute(NOTEBOOKS / "sweep.ipynb", {**TINY, "connections": [16], "rates": [100, 300], "repeats": 1,
                                                      "results_dir": str(results)}, output=tmp_path / "rates.ipynb")
    assert errors(done.ipynb) == []
    runs = [json.loads(Path(p).read_text()) for p in run_files(results)]
    assert sorted((r["params"]["driver"], r["params"]["rate"]) for r in runs) == [
        ("vegeta", 100.0), ("vegeta", 100.0), ("vegeta", 300.0), ("vegeta", 300.0)]
    spec = charts_in(done.ipynb)[0]
    assert spec["title"]["text"].startswith("Latency against throughput")
    assert sorted({v["target"] for v in list(spec["datasets"].values())[0]}) == [100.0, 300.0]
    assert "highest rate served at" in text_of(done.ipynb)


def test_reproduce_notebook_judges_every_claim_first(tmp_path, jars):
    from benchlab.analysis import claims
    from benchlab.present import replay
    from benchlab.schema import CLAIM_VERDICTS, PROCEDURE_SENSITIVE

    results = tmp_path / "reproduce-results"
    sources = ["wrk write-up", "JMeter write-up", "jhipster"]
    done = report.execute(NOTEBOOKS / "reproduce.ipynb", {
        "servers": SERVERS, "baseline": "spring-tomcat", "repeats": 1, "duration": "2s", "warmup": "1s",
        "connections": 200, "users": [100], "loops": [1000], "count_scale": 0.01, "results_dir": str(results),
        "stack": "theirs", "procedure": "both", "claims": sources, "count_drivers": ["jmeter"]},
        output=tmp_path / "reproduce.ipynb")
    assert errors(done.ipynb) == []
    stored = {p: json.loads(Path(p).read_text()) for p in run_files(results)}
    runs = list(stored.values())
    # their stack: the wrk write-up's Java 24 on the nearest JDK here (25), the JMeter write-up's G1 and 4 GiB
    assert {r["metadata"]["java"]["version"].split(".")[0] for r in runs if r["params"]["load"] == "duration"} == {"25"}
    assert all(r["params"]["jvm_opts"] == ["-Xms4096m", "-Xmx4096m", "-XX:+UseG1GC"]
               for r in runs if r["params"]["driver"] == "jmeter")
    assert all(Path(p).parts[-3] in ("wrk", "count-jmeter", "count-wrk") and "their-stack" in p
               for p in stored), "only the chosen sources' experiments ran (no wrk-512, no jmeter-ramp)"
    # two procedures: ours, one window per fork after the 1 s warm-up; theirs, no warm-up and 3 runs back to
    # back against one server
    kept = {}
    for path, r in stored.items():
        way = "theirs" if "their-procedure" in path else "controlled"
        kept.setdefault((way, Path(path).parts[-3], r["params"]["server"]), []).append(
            (r["params"]["warmup"], r["params"]["fork"], r["params"]["window"]))
    for (way, experiment, server), forks in kept.items():
        warmups, ids, windows = zip(*forks)
        expected = 3 if way == "theirs" else 1
        assert len(set(ids)) == 1 and sorted(windows) == list(range(1, expected + 1)), (way, experiment, server)
        assert set(warmups) <= ({0.0} if way == "theirs" else {"1s", 1.0}), (way, warmups)
    # jhipster compares Jetty with Undertow and only Jetty is in servers: a claim runs only when every server it
    # compares was asked for (one side alone judges nothing), and the notebook says why its experiment did not run
    assert not [key for key in kept if key[1] == "h2load-count"], kept
    said = "h2load-count: each of its claims compares a server that is not in servers, so it does not run"
    assert said in text_of(done.ipynb)
    # The header of what was measured opens the notebook; the verdict table is the first table after it,
    # in the notebook and in the report: one row per chosen claim, each with a verdict word and its sentence,
    # and the verdict of both procedures beside it.
    tables = [o["data"]["text/html"] for _, o in outputs(done.ipynb) if "text/html" in o.get("data", {})]
    assert "benchlab-header" in tables[0] and "What was measured" in tables[0]
    first = tables[1]
    chosen = replay.select(claims.read(), sources)
    heads = re.findall(r"<th>(.*?)</th>", first.split("<tbody>", 1)[0], re.S)
    assert heads[1:9] == ["stack", "it says", "load", "published", "their procedure", "controlled", "verdict", "why"]
    rows = re.findall(r"<tr>\s*<th>([\w-]+)</th>(.*?)</tr>", first.split("<tbody>", 1)[1], re.S)
    assert [claim for claim, _ in rows] == list(chosen["claim"]) and len(rows) == 11
    for claim, row in rows:
        cells = re.findall(r"<td>(.*?)</td>", row, re.S)
        assert cells[0] == "their stack", (claim, cells)
        assert {cells[4].split(" (")[0], cells[5].split(" (")[0]} <= set(CLAIM_VERDICTS), (claim, cells)
        assert cells[6] in {*CLAIM_VERDICTS, *PROCEDURE_SENSITIVE} and cells[7].endswith("."), "its sentence"
    assert "not testable here" in first and "no finished run of spring-undertow" in first
    html = done.html.read_text()
    assert html.index("wrk-undertow-rps") < html.index("The wrk experiment: ratios to the baseline")
    assert "no finished run of spring-undertow" in html
    judged = dict(rows)["jmeter-100x1000-jetty"]
    # Jetty and Tomcat ran at 100 users, so the claim is judged, unless the one rule left a side's one run out: the
    # load tool was the bottleneck, or (a 1 s warm-up) the JVM was not warm yet (its JIT compiling, its GC heavy, or
    # a stall, as one CI run's G1 Tomcat sat idle for 2 s while JMeter waited)
    from benchlab.analysis.validity import INVALID, WARMTH

    reasons = [INVALID[flag] for flag in ("generator_bound", *WARMTH)]
    assert "not testable here" not in judged or any(reason in judged for reason in reasons), judged
    assert "Each source: its procedure beside ours" in html
    assert "no warm-up, 3 runs back to back against one server each" in tables[2], "the sources' table"
    text = text_of(done.ipynb)
    assert "count claims get a different verdict with another driver" in text
    specs = charts_in(done.ipynb)
    sources_drawn = {v["source"] for s in specs if "hconcat" in s or "layer" in s
                     for data in s.get("datasets", {}).values() for v in data if "source" in v}
    assert sources_drawn == {"benchlab (ours)", "published"}
    assert "ratio published" in text and "ratio ours" in text and "Spring Boot" in text
    assert "their stack: wrk on the JVM's own GC and heap, Java 25 for their 24" in text


def test_reproduce_notebook_replays_an_ab_claim_with_h2load_under_both_procedures(tmp_path, jars):
    """jhipster issue 814 (ab -n 10000 -c 50, Jetty against Undertow) replays through h2load at the table's own
    load shape: 50 users, the loops scaled; its procedure is one run a server, no warm-up."""
    from benchlab.schema import CLAIM_VERDICTS, PROCEDURE_SENSITIVE

    results = tmp_path / "jhipster-results"
    done = report.execute(NOTEBOOKS / "reproduce.ipynb", {
        "servers": ["spring-jetty", "spring-undertow"], "baseline": "spring-jetty", "repeats": 1, "duration": "2s",
        "warmup": "1s", "count_scale": 0.05, "results_dir": str(results), "procedure": "both",
        "claims": ["jhipster"]}, output=tmp_path / "reproduce.ipynb")
    assert errors(done.ipynb) == []
    stored = {p: json.loads(Path(p).read_text()) for p in run_files(results)}
    assert {Path(p).parts[-3] for p in stored} == {"h2load-count"}, "only the chosen source's experiment ran"
    ran = {("theirs" if "their-procedure" in p else "controlled", r["params"]["server"]):
           (r["params"]["driver"], r["params"]["users"], r["params"]["loops"], r["params"]["warmup"], r["status"])
           for p, r in stored.items()}
    assert set(ran) == {(way, server) for way in ("controlled", "theirs")
                        for server in ("spring-jetty", "spring-undertow")}, ran
    for (way, server), (driver, users, loops, warmup, status) in ran.items():
        assert (driver, users, loops, status) == ("h2load", 50, 10, "ok"), (way, server, driver, users, loops)
        assert warmup in ({0.0} if way == "theirs" else {"1s", 1.0}), (way, warmup)
    first = [o["data"]["text/html"] for _, o in outputs(done.ipynb) if "text/html" in o.get("data", {})][1]
    rows = dict(re.findall(r"<tr>\s*<th>([\w-]+)</th>(.*?)</tr>", first.split("<tbody>", 1)[1], re.S))
    assert list(rows) == ["jhipster814-jetty-undertow-rps"]
    cells = re.findall(r"<td>(.*?)</td>", rows["jhipster814-jetty-undertow-rps"], re.S)
    words = [c.split(" (")[0] for c in cells if c.split(" (")[0] in {*CLAIM_VERDICTS, *PROCEDURE_SENSITIVE}]
    assert len(words) == 3, ("a verdict for each procedure and their joint one", cells)
    text = text_of(done.ipynb)
    assert "h2load, 50 users x 10 loops (theirs 200)" in text
    # the report says what the two procedures decided: which claims are procedure-sensitive, or that none is
    said = re.search(r"Both procedures judged (\d) of 1 claims: (none is procedure-sensitive|1 is procedure-sensitive "
                     r"\(jhipster814-jetty-undertow-rps\))\.", text)
    assert said, text
    assert (said.group(2) == "none is procedure-sensitive") == (words[2] != "procedure-sensitive"), (said[0], words)


def test_explore_notebook_presses_run_and_draws(tmp_path, jars):
    results = tmp_path / "explore-results"
    done = report.execute(NOTEBOOKS / "explore.ipynb", {**TINY, "repeats": 1, "results_dir": str(results),
                                                        "measure": True}, output=tmp_path / "explore.ipynb")
    assert errors(done.ipynb) == []
    assert len(run_files(results)) == 2
    titles = [s["title"]["text"] for s in charts_in(done.ipynb)]
    assert any(t.startswith("Throughput") for t in titles) and any(t.startswith("Latency") for t in titles)
    assert "interactive panel" in done.html.read_text()


@pytest.mark.parametrize("parameters, message", [
    ({"repeat": 3}, "unknown parameter 'repeat': this notebook takes servers"),
    ({"cds": "yes"}, "parameter 'cds' must be bool, not str 'yes'"),
    ({"measure": False, "results_dir": "EMPTY"}, "no runs under"),
    ({"measure": False}, "measure=False re-renders stored results: set results_dir"),
])
def test_a_bad_parameter_stops_the_notebook_with_a_clear_first_output(parameters, message, tmp_path, no_jvm_left):
    """In the kernel, as in JupyterLab with an edited parameters cell: the check cell stops it, first output."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    if parameters.get("results_dir") == "EMPTY":
        (tmp_path / "empty").mkdir()
        parameters = {**parameters, "results_dir": str(tmp_path / "empty")}
    out = tmp_path / "bad.ipynb"
    with pytest.raises(PapermillExecutionError):
        papermill.execute_notebook(str(NOTEBOOKS / "compare.ipynb"), str(out), parameters=parameters,
                                   kernel_name="python3", cwd=str(ROOT))
    (first_cell, first), *_ = outputs(out)
    assert first["output_type"] == "stream" and first["text"].startswith("benchlab: error: ")
    assert message in first["text"]


@pytest.mark.parametrize("parameters, message", [
    ({"repeat": 3}, "unknown parameter 'repeat': compare.ipynb takes servers"),
    ({"cds": "yes"}, "parameter 'cds' must be bool, not str 'yes'"),
    ({"measure": False}, "measure=False re-renders stored results: set results_dir"),
])
def test_a_report_refuses_bad_parameters_before_any_kernel_starts(parameters, message, tmp_path):
    from benchlab.errors import ResultsError, UsageError

    out = tmp_path / "bad.ipynb"
    with pytest.raises((UsageError, ResultsError), match=re.escape(message)):
        report.execute(NOTEBOOKS / "compare.ipynb", parameters, output=out)
    assert not out.exists() and not out.with_suffix(".html").exists(), "nothing is written"


def test_report_command_refuses_an_unknown_server_before_the_kernel_starts(tmp_path):
    # A server is checked by the option's own rule before papermill starts a kernel (it used to fail in
    # a cell, with a report written): one line, exit 2, nothing written.
    out = tmp_path / "bad.ipynb"
    done = subprocess.run([sys.executable, "-m", "benchlab", "report", str(NOTEBOOKS / "sweep.ipynb"),
                           "-p", "connections", "16,64", "-p", "servers", "nosuch-server", "-o", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 2, done.stderr
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "unknown server 'nosuch-server'" in lines[0] and "Traceback" not in done.stderr
    assert not out.exists() and not out.with_suffix(".html").exists()


def test_batch_runs_every_entry_in_order_and_refuses_a_bad_one_before_any_kernel(stored_runs, tmp_path):
    good = f"""
defaults:
  measure: false
  results_dir: {stored_runs}
reports:
  - notebook: {NOTEBOOKS / "compare.ipynb"}
    output: {tmp_path / "first.ipynb"}
  - notebook: {NOTEBOOKS / "sweep.ipynb"}
    output: {tmp_path / "third.ipynb"}
"""
    batch = tmp_path / "batch.yaml"
    batch.write_text(good)
    done = subprocess.run([sys.executable, "-m", "benchlab", "batch", str(batch)], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "[1/2]" in done.stdout and "[2/2]" in done.stdout
    for name in ("first", "third"):
        assert (tmp_path / f"{name}.ipynb").exists() and (tmp_path / f"{name}.html").exists()
    assert errors(tmp_path / "first.ipynb") == [] and errors(tmp_path / "third.ipynb") == []
    # An entry with a bad option is refused before any kernel starts, and no entry runs.
    bad = tmp_path / "bad.yaml"
    sweep = f"  - notebook: {NOTEBOOKS / 'sweep.ipynb'}"
    bad_first = f"""  - notebook: {NOTEBOOKS / 'compare.ipynb'}
    parameters: {{measure: true, servers: [nosuch-server]}}
    output: {tmp_path / "second.ipynb"}
"""
    bad.write_text(good.replace(sweep, bad_first + sweep).replace("first.ipynb", "again.ipynb"))
    done = subprocess.run([sys.executable, "-m", "benchlab", "batch", str(bad)], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert done.returncode == 2 and "report 2" in done.stderr and "unknown server 'nosuch-server'" in done.stderr
    assert not (tmp_path / "second.ipynb").exists() and not (tmp_path / "again.ipynb").exists()


def test_the_example_batch_reads():
    entries = report.read_batch(ROOT / "data" / "batch-example.yaml")
    assert [Path(e["notebook"]).name for e in entries] == ["compare.ipynb", "sweep.ipynb", "compare.ipynb"]
    assert all(Path(e["notebook"]).exists() for e in entries)


def test_panel_reports_a_bad_duration_in_its_status_line(no_jvm_left):
    from benchlab.widgets import Panel

    panel = Panel(servers=SERVERS, duration="soon")
    panel.button.click()                                        # what a press does: nothing runs
    assert "failed" in panel.status.value and "soon" in panel.status.value
    assert panel.records == [] and not panel.button.disabled
    panel.servers.value = ()
    with pytest.raises(report.UsageError, match="no server chosen"):
        panel.run()


def test_factors_notebook_shows_what_each_variant_ran_with_the_interaction_and_the_verdicts(tmp_path, jars):
    results = tmp_path / "factors-results"
    done = report.execute(NOTEBOOKS / "factors.ipynb", {**TINY, "servers": ["spring-tomcat"], "repeats": 2,
                                                        "results_dir": str(results)}, output=tmp_path / "factors.ipynb")
    assert errors(done.ipynb) == []
    runs = [json.loads(Path(p).read_text()) for p in run_files(results)]
    assert sorted({(r["params"]["server"], r["params"]["scenario"]) for r in runs}) == [
        ("spring-tomcat+vt@java25", "hello"), ("spring-tomcat+vt@java25", "sleep:50"),
        ("spring-tomcat@java25", "hello"), ("spring-tomcat@java25", "sleep:50")]
    assert all(r["metadata"]["settings"][0] == {"setting": "java", "asked": 25,
                                                "got": r["metadata"]["server"]["java_version"], "status": "ok"}
               for r in runs)
    spec = charts_in(done.ipynb)[0]
    assert spec["title"]["text"] == "rps by virtual_threads: one line per server"
    assert {(d["base"], d["setting"]) for d in list(spec["datasets"].values())[0]} == {
        ("spring-tomcat", "false"), ("spring-tomcat", "true")}
    text = text_of(done.ipynb)
    assert "spring-tomcat+vt@java25 vs spring-tomcat@java25: " in text
    assert "virtual_threads" in text and "runs" in text, "the verified-settings table"
    again = report.execute(NOTEBOOKS / "factors.ipynb", {"measure": False, "results_dir": str(results)},
                           output=tmp_path / "again.ipynb")
    assert errors(again.ipynb) == [] and "spring-tomcat+vt@java25 vs spring-tomcat@java25: " in text_of(again.ipynb)
