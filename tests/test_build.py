"""The Maven build of the four jars: each with one server, skipped when unchanged, a failure shown clearly
(integration)."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

import benchlab
from benchlab.errors import BuildError, ToolMissing
from benchlab.running import servers

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
    source = controller.read_text()
    assert "return Responses.HELLO;" in source
    controller.write_text(source.replace("return Responses.HELLO;", "return Responses.HELLO"))
    with pytest.raises(BuildError, match="the Maven build failed") as info:
        benchlab.build()
    assert "BenchController.java" in str(info.value) and "';' expected" in str(info.value)
    assert not (checkout / "servers/.benchlab-build").exists(), "a failed build is not stamped as done"


def test_mvn_missing_says_how_to_install(checkout, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolMissing, match="apt-get install maven"):
        benchlab.build(force=True)


#: What each jar's BOOT-INF/lib must hold, and what it must not: one web stack and one server, or Boot
#: would start another (spring-webmvc beside WebFlux makes a servlet application).
STACKS = {
    "spring-tomcat": ("tomcat-embed-core", ("jetty-server", "undertow-core", "reactor-netty", "spring-webflux")),
    "spring-jetty": ("jetty-server", ("tomcat-embed-core", "undertow-core", "reactor-netty", "spring-webflux")),
    "spring-undertow": ("undertow-core", ("tomcat-embed-core", "jetty-server", "reactor-netty", "spring-webflux")),
    "spring-webflux": ("reactor-netty-http", ("tomcat-embed-core", "jetty-server", "undertow-core", "spring-webmvc",
                                              "benchlab-app")),
}


def test_four_jars_each_with_its_one_server(jars):
    # the built-ins with a jar: the Spring ones (nginx and go-nethttp are the references, not JVMs)
    assert set(jars) == set(STACKS) == set(servers.BUILTINS) - set(servers.REFERENCES)
    for name, (server, others) in STACKS.items():
        with zipfile.ZipFile(jars[name]) as jar:
            libs = [n.removeprefix("BOOT-INF/lib/") for n in jar.namelist() if n.startswith("BOOT-INF/lib/")]
        assert any(lib.startswith(server) for lib in libs), f"{name} lacks {server}"
        assert any(lib.startswith("benchlab-common") for lib in libs), f"{name} lacks the shared module"
        found = [lib for lib in libs if lib.startswith(others)]
        assert not found, f"{name} also carries {found}"
