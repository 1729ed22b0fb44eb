"""The README, executed: its first command exactly as written, and every fenced block that can run here.

Blocks are read out of README.md, so editing the README changes what runs. The only edits made to a block
are those listed in SHORTER (shorter runs, and results in a temporary folder); a block that cannot run on
this machine is listed in NOT_HERE with the reason. A block that is in neither and fails, fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
FENCE = re.compile(r"^```(bash|python)\n(.*?)^```", re.S | re.M)

#: (old, new): the edits made to the README's blocks before they run, each only to save time.
SHORTER = [
    ('repeats=5,\n                         duration="30s"',
     'repeats=2,\n                         duration="2s", warmup="1s"'),
    ('-p repeats 3 -p duration 10s', '-p repeats 1 -p duration 2s -p warmup 1s'),
    ('data/results/', '{tmp}/results/'),
]

#: Blocks that cannot run here, found by a line they hold, with the reason.
NOT_HERE = {
    "python3 -m pytest -n auto --dist loadfile -m":
        "the test command itself; test_ci_runs_the_readme_test_command checks that CI runs it",
}


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(README)]


def first_command() -> str:
    section = README[README.index("## On a fresh machine"):]
    return FENCE.search(section).group(2).strip()


def _reason(text: str) -> str | None:
    return next((why for line, why in NOT_HERE.items() if line in text), None)


def _shortened(text: str, **places: str) -> str:
    for old, new in SHORTER:
        text = text.replace(old, new.format(**places))
    return text


def _run(kind: str, text: str, tmp: Path, timeout: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "BENCHLAB_RESULTS": str(tmp / "results")}
    argv = ["bash", "-euo", "pipefail", "-c", text] if kind == "bash" else [sys.executable, "-c", text]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_readme_has_the_two_fresh_machine_commands():
    section = README[README.index("## On a fresh machine"):]
    found = FENCE.findall(section)[:2]
    assert found[0][1].strip() == first_command()
    assert found[1][1].strip() == TEST_COMMAND


#: The README's test command: the fast tier, then the integration tier.
TEST_COMMAND = ('python3 -m pytest -n auto --dist loadfile -m "not integration and not docker" tests && '
                'python3 -m pytest -v -m "integration or docker" tests')


def test_ci_runs_the_readme_test_command():
    # CI runs the two halves apart: the fast tier before any tool is installed, the integration tier after
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    halves = TEST_COMMAND.split(" && ")
    assert all(half in lines for half in halves), "CI runs both halves of the README's test command"
    assert lines.index(halves[0]) < lines.index(halves[1]), "the fast tier first"


@pytest.mark.integration
def test_the_first_command_as_written(jars):
    """What a newcomer types first: set-up, then a comparison of two servers on warm runs. Nothing is shortened."""
    done = subprocess.run(["bash", "-c", first_command()], cwd=ROOT, capture_output=True, text=True,
                          timeout=2400, env={**os.environ, "CI": "true"})
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    counted = r"<Suite (\d+ windows? used|none of the \d+ windows|the one window)"  # validity.Tally's words
    assert "baseline: spring-jetty" in out and re.search(counted, out), "the summary"
    assert re.search(r"warm-up: auto in \d+ runs", out), "the warm-up is said before any number"
    assert re.search(r"^budget: spent [\d.]+ of 10\.0 minutes on \d+ rounds", out, re.M), \
        "what the budget bought, and what more time would buy"
    assert "per-fork requests/s:" in out and "windows=auto" in out, "each fork, and the design chosen"
    verdicts = re.findall(r"^  spring-undertow vs spring-jetty: .*$", out, re.M)
    assert len(verdicts) == 2, "the verdict lines, rps and p99 against the baseline (judged, or why not)"


@pytest.fixture(scope="module")
def readme_place(tmp_path_factory):
    return tmp_path_factory.mktemp("readme")


def _other_blocks() -> list[tuple[str, str]]:
    first = first_command()
    return [(kind, text) for kind, text in blocks() if text.strip() != first]


@pytest.mark.integration
@pytest.mark.parametrize("kind, text", _other_blocks(),
                         ids=[f"{k}-{i + 2}" for i, (k, _) in enumerate(_other_blocks())])
def test_every_other_block_runs(jars, readme_place, kind, text, request):
    reason = _reason(text)
    if reason:
        pytest.skip(f"not run here: {reason}")
    tmp_path = readme_place  # one place for all blocks: a later block reads what an earlier one stored
    if "docker" in text:
        request.getfixturevalue("docker_engine")  # DOCKER_HOST for the block
    short_batch = tmp_path / "batch.yaml"
    example = (ROOT / "data" / "batch-example.yaml").read_text()
    short_batch.write_text(example.replace("duration: 10s", "duration: 2s").replace("warmup: auto", "warmup: 1s")
                           .replace("repeats: 3", "repeats: 1").replace("repeats: 2", "repeats: 1")
                           .replace("data/results/", f"{tmp_path}/results/")
                           .replace("data/reports/", f"{tmp_path}/reports/")
                           # the sweep at two points of one server, the comparison of two: what the batch
                           # does is the same, with three runs fewer
                           .replace("connections: [16, 64, 256]", "connections: [16, 64]")
                           .replace("servers: [spring-tomcat, spring-jetty, spring-undertow]\n      connections: [",
                                    "servers: [spring-jetty]\n      connections: [")
                           .replace("servers: [spring-tomcat, spring-jetty, spring-undertow]\n      scenarios:",
                                    "servers: [spring-tomcat, spring-jetty]\n      scenarios:")
                           .replace("notebook: notebooks/", f"notebook: {ROOT}/notebooks/"))
    script = _shortened(text, tmp=str(tmp_path), short_batch=str(short_batch))
    if kind == "python" and "import benchlab" not in script:
        script = "import benchlab\n" + script
    done = _run(kind, script, tmp_path, timeout=1200)
    assert done.returncode == 0, f"{script}\n--- stderr:\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr


def test_every_block_is_run_or_said_why_not():
    """A new block is run by the test above unless NOT_HERE names it; no entry of NOT_HERE is stale."""
    texts = [text for _, text in blocks()]
    for line in NOT_HERE:
        assert any(line in text for text in texts), f"NOT_HERE names a block the README no longer has: {line}"
    used = [old for old, _ in SHORTER if any(old in text for text in texts)]
    assert used == [old for old, _ in SHORTER], f"SHORTER edits text the README no longer has: " \
        f"{[old for old, _ in SHORTER if old not in used]}"
