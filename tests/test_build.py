"""The Maven build of the three jars: skipped when unchanged, a failure shown clearly (integration)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import benchlab
from benchlab.errors import BuildError, ToolMissing

pytestmark = pytest.mark.integration

SERVERS = Path(__file__).resolve().parent.parent / "servers"


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A copy of servers/ (sources only) in a checkout of its own."""
    shutil.copytree(SERVERS, tmp_path / "servers", ignore=shutil.ignore_patterns("target", ".benchlab-build",
                                                                               "target-build.log"))
    monkeypatch.setenv("BENCHLAB_HOME", str(tmp_path))
    return tmp_path


def test_a_compile_error_is_a_build_error_with_the_log_tail(checkout):
    controller = checkout / "servers/app/src/main/java/dev/benchlab/server/BenchController.java"
    controller.write_text(controller.read_text().replace("return HELLO;", "return HELLO"))
    with pytest.raises(BuildError, match="the Maven build failed") as info:
        benchlab.build()
    assert "BenchController.java" in str(info.value) and "';' expected" in str(info.value)
    assert not (checkout / "servers/.benchlab-build").exists(), "a failed build is not stamped as done"


def test_mvn_missing_says_how_to_install(checkout, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolMissing, match="apt-get install maven"):
        benchlab.build(force=True)
