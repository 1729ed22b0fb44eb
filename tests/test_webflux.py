"""spring-webflux: the same answers as the servlet servers, under wrk, h2load and vegeta (integration).

Real servers and real tools, a few seconds each. One WebFlux server, started once for the module, takes
the checks and the attached runs; one run goes the whole way, with benchlab starting its own server from
its CDS archive.
"""

from __future__ import annotations

import json
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

import benchlab
from benchlab.running import backends, servers, verify
from benchlab.running.backends.local import LocalBackend
from benchlab.running.servers import SCENARIOS

from .test_drivers_integration import assert_real

pytestmark = pytest.mark.integration


def _start(name: str, directory) -> object:
    launch = backends.Launch(run_id=name, port=backends.free_port(), cpus=(0,), log_path=directory / "server.log")
    return LocalBackend().start(servers.get(name), launch)


@pytest.fixture(scope="module")
def webflux(jars, tmp_path_factory):
    """A spring-webflux server on core 0, started once for the module and stopped by its pid."""
    instance = _start("spring-webflux", tmp_path_factory.mktemp("webflux"))
    yield instance
    instance.stop()


def attached(instance, path: str = "/hello") -> benchlab.Server:
    return benchlab.Server.from_url(instance.url + path, name="webflux")


def test_webflux_is_a_builtin_but_not_a_default():
    assert "spring-webflux" in servers.BUILTINS
    assert "spring-webflux" not in servers.DEFAULT_SERVERS, "a comparison's default stays servlet against servlet"
    assert servers.get("spring-webflux").jar.endswith("webflux/target/benchlab-webflux.jar")


@pytest.mark.parametrize("scenario", [*SCENARIOS, "sleep:50"])
def test_every_scenario_passes_its_check(webflux, scenario):
    status = verify.verify(webflux.url, servers.scenario(scenario)).status
    assert status == 200


def test_the_bodies_are_the_servlet_servers_bodies(webflux, tmp_path):
    tomcat = _start("spring-tomcat", tmp_path)
    try:
        for name in [*SCENARIOS, "sleep:30"]:
            scenario = servers.scenario(name)
            ours = verify.verify(webflux.url, scenario)
            theirs = verify.verify(tomcat.url, scenario)
            assert ours.body == theirs.body, f"{name}: {ours.body[:80]!r} != {theirs.body[:80]!r}"
            assert ours.headers["Content-Type"].lower() == theirs.headers["Content-Type"].lower(), name
    finally:
        tomcat.stop()


def test_wrk_with_a_server_benchlab_starts_from_its_cds_archive(jars, tmp_path, no_jvm_left):
    run = benchlab.run("spring-webflux", "hello", connections=16, duration="2s", warmup="1s", results_dir=tmp_path)
    assert_real(run, "wrk")
    row = run.to_frame().iloc[0]
    assert row["server_impl"] == "netty" and row["server_version"].startswith("1.2.")
    assert run.metadata["server"]["spring_boot_version"].startswith("3.5.")
    assert run.metadata["launch"]["launch"] == "cds", run.metadata["launch"]
    assert "Netty started on port" in (tmp_path / run.id / "server.log").read_text()


def test_h2load_post(webflux, tmp_path):
    run = benchlab.run(attached(webflux), SCENARIOS["echo"], load="count", driver="h2load", warmup="1s", users=8,
                       loops=100, results_dir=tmp_path)
    assert_real(run, "h2load")
    assert run.metrics["requests"] == 800


def test_vegeta_constant_rate(webflux, tmp_path):
    run = benchlab.run(attached(webflux, "/json"), load="rate", rate=200, duration="2s", warmup="1s",
                       results_dir=tmp_path)
    assert_real(run, "vegeta")
    assert run.metrics["requests"] == 400 and run.metrics["sent_rps"] == pytest.approx(200, rel=0.05)


def test_sleep_does_not_hold_an_event_loop(webflux):
    # 32 requests at once, each waiting 1 s: on timers they all come back after about 1 s. Were the wait
    # a Thread.sleep on the event loops (a handful here), they would come back a few at a time, the last
    # after 32 / loops seconds (8 s with 4 loops). Wall time, not throughput: it holds on a busy machine.
    with urllib.request.urlopen(webflux.url + "/info", timeout=10) as answer:
        loops = json.load(answer)["pool_max"]
    assert 1 <= loops <= 8

    def one(_):
        with urllib.request.urlopen(webflux.url + "/sleep?ms=1000", timeout=60) as answer:
            return answer.read()

    began = time.monotonic()
    with ThreadPoolExecutor(max_workers=32) as pool:
        bodies = list(pool.map(one, range(32)))
    elapsed = time.monotonic() - began
    assert bodies == [b"slept 1000 ms"] * 32
    assert 1.0 <= elapsed < 32 / loops / 2, f"{elapsed:.1f} s for 32 waits of 1 s on {loops} event loops"
