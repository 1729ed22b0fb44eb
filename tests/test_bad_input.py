"""Every row of docs/bad-input.md, run as written: its one-line message, its exit code, and no trace left.

A row's input is a command line (`benchlab ...`) or Python (`python: ...`). Each runs in a child process
whose environment carries a marker, so any process it leaves behind is found by that marker, not by name.
"""

from __future__ import annotations

import json
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

from benchlab.locks import ResultsWriter

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


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def scene(tmp_path):
    """The files and the busy port the rows refer to."""
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
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    yield {"tmp": str(tmp_path), "busy_port": str(holder.getsockname()[1]),
           "fixtures": str(ROOT / "tests" / "fixtures"), "pid": str(os.getpid())}
    holder.close()
    writer.release()


@pytest.mark.parametrize("number, given, message, code", rows(), ids=[f"row{r[0]}" for r in rows()])
def test_bad_input(scene, tmp_path, number, given, message, code):
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
    env = {**os.environ, "BENCHLAB_RESULTS": str(results), "BENCHLAB_TEST_MARK": marker}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=ROOT, env=env)

    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == code, (done.returncode, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"one line expected, got: {done.stderr}"
    said = re.sub(r"^(benchlab|benchlab \w+): error: ", "", lines[0])
    expected = message
    for name, value in scene.items():
        expected = expected.replace("{" + name + "}", value)
    pattern = ".*".join(re.escape(part) for part in expected.split("…"))
    assert re.fullmatch(pattern, said), f"row {number}:\n said     {said}\n expected {expected}"

    assert not _marked(marker), f"row {number} left processes running"
    assert not results.exists(), f"row {number} wrote {results}"
    assert _files(tmp_path) == before, f"row {number} wrote into {tmp_path}"
    assert (_files(reports) if reports.exists() else set()) == reports_before, f"row {number} wrote a report"
