"""Every row of docs/bad-input.md, run as written: its one-line message, its exit code, and no trace left.

A row's input is a command line (`benchlab ...`) or Python (`python: ...`). Each runs in a child process
whose environment carries a marker, so any process it leaves behind is found by that marker, not by name;
the rows that only read results (`benchlab show`, `benchlab.load`) start nothing, and run in this process.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from benchlab.store.locks import ResultsWriter

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "docs" / "bad-input.md"
ROW = re.compile(r"^\| (\d+) \| `(.+)` \| (.*) \| (\d) \|$")

PYTHON = """
import sys
import benchlab
from benchlab.cli import exit_code
try:
    {code}
except benchlab.BenchlabError as exc:
    print("benchlab: error: " + str(exc).splitlines()[0], file=sys.stderr)
    sys.exit(exit_code(exc))
"""


#: Rows run in this process: every command line and every Python row; a bad option is refused before
#: anything starts, so there is nothing a process of its own would isolate (a row that did start a server
#: or a tool would still be caught: its children carry the marker). 93 subprocesses took 100 s.
IN_PROCESS = ("benchlab ", "python: ")


def rows() -> list[tuple[str, str, str, int]]:
    found = [ROW.match(line) for line in CATALOGUE.read_text().splitlines()]
    return [(m.group(1), m.group(2), m.group(3), int(m.group(4))) for m in found if m]


def test_the_catalogue_has_thirty_rows_or_more():
    numbers = [int(number) for number, *_ in rows()]
    assert len(numbers) >= 30 and numbers == list(range(1, len(numbers) + 1))


def _marked(marker: str) -> list[int]:
    left = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get("BENCHLAB_TEST_MARK") == marker:
                left.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return left


def _files(root: Path) -> set[tuple[str, int, int]]:
    """Every path under ``root`` with its size and modification time: what a row must leave as it was."""
    return {(str(p.relative_to(root)), p.lstat().st_size, p.lstat().st_mtime_ns) for p in root.rglob("*")}


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    """The files and the busy port the rows refer to, made once: no row may change them (each checks)."""
    tmp_path = tmp_path_factory.mktemp("scene")
    (tmp_path / "a-file").write_text("not a directory\n")
    (tmp_path / "broken.jmx").write_text("<jmeterTestPlan><unclosed>\n")
    (tmp_path / "corrupt" / "r1").mkdir(parents=True)
    (tmp_path / "corrupt" / "r1" / "run.json").write_text("{ not json")
    (tmp_path / "future" / "r1").mkdir(parents=True)
    (tmp_path / "future" / "r1" / "run.json").write_text(json.dumps({"format": "benchlab-run", "version": 99}))
    (tmp_path / "bad-batch.yaml").write_text("reports:\n  - notebook: notebooks/compare.ipynb\n    parameters:\n"
                                             "      repeat: 2\n")
    (tmp_path / "list-parameters.yaml").write_text("- notebook: notebooks/compare.ipynb\n  parameters: [1, 2]\n")
    writer = ResultsWriter(tmp_path / "locked")  # another writer of {tmp}/locked: this test process
    _damaged_results(tmp_path)
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    yield {"tmp": str(tmp_path), "busy_port": str(holder.getsockname()[1]),
           "fixtures": str(ROOT / "tests" / "fixtures"), "pid": str(os.getpid())}
    holder.close()
    writer.release()


def _damaged_results(tmp: Path) -> None:
    """A folder per kind of damage the reading rows name, each made from one good stored run."""
    from benchlab.store.histogram import Histogram
    from benchlab.store.results import Run, save

    good = Run(id="r1", params={"server": "s", "scenario": "hello"}, metrics={"rps": 100.0, "errors_timeout": 500},
               metadata={}, samples=((0.25, "server", 95.0, 1e8),))

    def stored(name: str, change=None) -> Path:
        save(good, tmp / name / "r1")
        Histogram.of([0.001, 0.002]).save(tmp / name / "r1")
        doc = json.loads((tmp / name / "r1" / "run.json").read_text())
        if change:
            change(doc)
            (tmp / name / "r1" / "run.json").write_text(json.dumps(doc))
        return tmp / name / "r1"

    stored("good")
    stored("no-id", lambda doc: doc.pop("id"))
    stored("metadata-text", lambda doc: doc.update(metadata="x"))
    stored("rps-text", lambda doc: doc["metrics"].update(rps="fast"))
    stored("running", lambda doc: doc.update(status="running"))
    stored("rps-nan", lambda doc: doc["metrics"].update(rps=math.nan))
    stored("rps-infinity", lambda doc: doc["metrics"].update(rps=math.inf))
    stored("negative-errors", lambda doc: doc["metrics"].update(errors_connect=-500))
    stored("samples-path", lambda doc: doc.update(samples="../../x"))
    stored("samples-absolute", lambda doc: doc.update(samples="/etc/passwd"))
    for name, index in (("big-bucket", 10**6), ("huge-bucket", 2**62)):
        latency = stored(name) / "latency.json"
        latency.write_text(json.dumps({**json.loads(latency.read_text()), "index": [index], "counts": [2]}))
    for name, file in (("zero-link", "run.json"), ("latency-link", "latency.json")):
        (stored(name) / file).unlink()
        (tmp / name / "r1" / file).symlink_to("/dev/zero")
    for name, file in (("fifo", "run.json"), ("latency-fifo", "latency.json"), ("samples-fifo", "samples.json")):
        (stored(name) / file).unlink()
        os.mkfifo(tmp / name / "r1" / file)
    for run_id in ("a", "b"):
        stored("all-damaged", lambda doc: doc.pop("id"))
        os.rename(tmp / "all-damaged" / "r1", tmp / "all-damaged" / run_id)
    save(good, tmp / "no-histogram" / "r1")
    _hdr_logs(tmp, Histogram.of([0.001, 0.002]))


def _hdr_logs(tmp: Path, histogram) -> None:
    """HdrHistogram logs the import rows name: one damaged, one in nanoseconds, one whose intervals last 0 s."""
    from benchlab.store import hdrlog

    window = hdrlog.Window(histogram, start=1.7e9, seconds=10.0)
    hdrlog.write(tmp / "ns.hlog", [window], unit="ns")
    hdrlog.write(tmp / "no-time.hlog", [window._replace(seconds=0.0)])
    text = hdrlog.written([window])
    (tmp / "damaged.hlog").write_text(text[:-20] + "\n")  # cut short, as a copy that was interrupted


def _in_process(text: str, results: Path, marker: str, monkeypatch, capsys) -> tuple[int, str]:
    """A reading row, run here: the command line's main, or the Python with the PYTHON wrapper's handling."""
    import benchlab
    from benchlab.cli import exit_code, main

    monkeypatch.setenv("BENCHLAB_RESULTS", str(results))
    monkeypatch.setenv("BENCHLAB_TEST_MARK", marker)
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    try:
        if text.startswith("benchlab "):
            code = main(shlex.split(text.removeprefix("benchlab ")))
        else:
            exec(text.removeprefix("python: "), {"benchlab": benchlab})
            code = 0
    except benchlab.BenchlabError as exc:
        print("benchlab: error: " + str(exc).splitlines()[0], file=sys.stderr)
        code = exit_code(exc)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


#: Rows that need a real program: a JDK to read the version of (a Java 17 asked for virtual threads).
NEEDS_A_JDK = {"58": "it reads the version of the JDK it names"}


def _tiered(row: tuple[str, str, str, int]):
    """A row that fails a run (exit 1) starts a server and a load tool, and one that reads a JDK starts java:
    those are integration tests. Every other row is refused before anything starts: the fast tier."""
    number, _, _, code = row
    starts = code == 1 or number in NEEDS_A_JDK
    return pytest.param(*row, id=f"row{number}", marks=[pytest.mark.integration] if starts else [])


@pytest.mark.parametrize("number, given, message, code", [_tiered(row) for row in rows()])
def test_bad_input(scene, monkeypatch, capsys, number, given, message, code):
    tmp_path = Path(scene["tmp"])
    results = tmp_path / "results"
    reports = ROOT / "data" / "reports"
    reports_before = _files(reports) if reports.exists() else set()
    before = _files(tmp_path)
    text = given
    for name, value in scene.items():
        text = text.replace("{" + name + "}", value)
    if text.startswith("python: "):
        argv = [sys.executable, "-c", PYTHON.format(code=text.removeprefix("python: "))]
    else:
        argv = [sys.executable, "-m", "benchlab", *shlex.split(text.removeprefix("benchlab "))]
    marker = uuid.uuid4().hex
    if text.startswith(IN_PROCESS):
        returncode, stderr = _in_process(text, results, marker, monkeypatch, capsys)
    else:
        env = {**os.environ, "BENCHLAB_RESULTS": str(results), "BENCHLAB_TEST_MARK": marker}
        done = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=ROOT, env=env)
        returncode, stderr = done.returncode, done.stderr

    assert "Traceback" not in stderr, stderr
    assert returncode == code, (returncode, stderr)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"one line expected, got: {stderr}"
    said = re.sub(r"^(benchlab|benchlab \w+): error: ", "", lines[0])
    expected = message
    for name, value in scene.items():
        expected = expected.replace("{" + name + "}", value)
    pattern = ".*".join(re.escape(part) for part in expected.split("…"))
    assert re.fullmatch(pattern, said), f"row {number}:\n said     {said}\n expected {expected}"

    assert not _marked(marker), f"row {number} left processes running"
    assert not results.exists(), f"row {number} wrote {results}"
    assert _files(tmp_path) == before, f"row {number} wrote into {tmp_path}, which the later rows share"
    assert (_files(reports) if reports.exists() else set()) == reports_before, f"row {number} wrote a report"
