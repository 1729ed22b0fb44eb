"""compare(hosts=...) without an engine: the hosts' form, the round queue, and the host_differs test's level.

The queue's hosts here are unanswering sockets, so a host whose round fails is one that stopped answering; the
real engines, servers and load are in tests/test_hosts.py.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest

from benchlab.analysis import hosts as host_stats
from benchlab.analysis.suite import Suite
from benchlab.errors import UsageError
from benchlab.running import hosts
from benchlab.running.backends import DockerOptions
from benchlab.running.options import Comparison
from benchlab.store.results import Run

A, B = "unix:///nonexistent/a.sock", "unix:///nonexistent/b.sock"


# --- the test of host_differs: its level and its power, by simulation ------------------------------------------

@pytest.mark.parametrize("count, rounds", [(2, 3), (2, 6), (3, 4), (4, 3)])
def test_host_differs_false_positive_rate_is_at_most_its_level(count, rounds):
    """Under the null (every round's value from one distribution) the share of comparisons that flag any host is
    at most LEVEL (0.05), within the simulation's error: 4000 simulated comparisons, SE 0.0034."""
    rng = np.random.default_rng(41 + count * 10 + rounds)
    names = np.repeat([f"h{i}" for i in range(count)], rounds)
    flagged = sum(any(host_stats.per_host(rng.normal(0.0, 0.03, len(names)), names)["host_differs"])
                  for _ in range(4000))
    rate = flagged / 4000
    assert rate <= host_stats.LEVEL + 0.012, f"{count} hosts x {rounds} rounds: {rate:.3f} flagged under the null"
    if count == 2:  # one test at the full level, not below it either
        assert rate >= host_stats.LEVEL - 0.012, f"{rate:.3f}"


def test_host_differs_finds_a_slower_host():
    rng = np.random.default_rng(7)
    names = np.repeat(["fast", "slow"], 6)
    found = [host_stats.judge(rng.normal(0, 0.02, 12) + np.where(names == "slow", np.log(0.9), 0.0), names)
             for _ in range(200)]
    assert np.mean([f["host_differs"].all() for f in found]) > 0.95  # a 10% slower host, 2% noise a round
    assert found[0].set_index("host").loc["slow", "shift"] == pytest.approx(-0.1, abs=0.04)


def _round(suite: str, repeat: int, host: str, rps: dict[str, float]) -> list[Run]:
    return [Run(id=f"{server}-r{repeat}", params={"server": server, "scenario": "hello", "connections": 16,
                                                  "repeat": repeat, "host": host},
                metrics={"rps": value}, metadata={}, suite=suite) for server, value in rps.items()]


def test_suite_hosts_counts_rounds_and_flags_the_host_that_differs_across_servers_of_any_speed():
    rng = np.random.default_rng(3)
    records = []
    for repeat in range(1, 13):
        host = "a" if repeat % 2 else "b"
        scale = 0.8 if host == "b" else 1.0  # b's machine is 20% slower for every server
        records += _round("s", repeat, host, {"spring-jetty": 9000 * scale * rng.normal(1, 0.01),
                                              "spring-undertow": 12000 * scale * rng.normal(1, 0.01)})
    suite = Suite(records)
    found = suite.hosts().set_index("host")
    assert found["rounds"].to_dict() == {"a": 6, "b": 6} and found["runs"].to_dict() == {"a": 12, "b": 12}
    assert found["host_differs"].all() and found.loc["b", "shift"] == pytest.approx(-0.2, abs=0.03)
    assert set(suite.flags().query("flag == 'host_differs'")["explanation"].str[:6]) == {"host a", "host b"}
    assert "rounds by host: a 6 (differs), b 6 (differs)" in str(suite)
    alike = Suite([r for repeat in range(1, 13) for r in _round(
        "s", repeat, "a" if repeat % 2 else "b", {"spring-jetty": 9000 * rng.normal(1, 0.01)})])
    assert not alike.hosts()["host_differs"].any() and "host_differs" not in set(alike.flags()["flag"])


def test_a_suite_without_hosts_says_nothing_of_them():
    suite = Suite(_round("s", 1, None, {"spring-jetty": 9000.0}))
    assert suite.hosts().empty and "host" not in str(suite)


# --- the hosts' form --------------------------------------------------------------------------------------------

def test_hosts_are_engines_or_pairs():
    assert hosts.parse(A) == [hosts.Host(A, A)]
    pair = hosts.parse([f"{A}+{B}"])[0]
    assert (pair.server, pair.load, pair.engines) == (A, B, (A, B))
    for bad, said in [([], "a list of docker engine urls"), ([A, A], "twice"), (["bench2"], "not a docker engine"),
                      ([A, f"{A}+{B}"], "mixes pairs"), ([f"{A}+"], "not a docker engine")]:
        with pytest.raises(UsageError, match=said):
            hosts.parse(bad)


def test_hosts_take_the_engines_and_refuse_what_they_cannot_plan():
    with pytest.raises(UsageError, match="drop docker_host"):
        hosts.prepare(Comparison.of(hosts=[A], docker_host=A))
    for given in ({"budget": "10m"}, {"windows": "auto"}):  # planned on hosts too: only the engine stops these
        with pytest.raises(UsageError, match=rf"^host {A} does not answer"):
            hosts.prepare(Comparison.of(hosts=[A], **given))
    with pytest.raises(UsageError, match=rf"^host {A} does not answer .*leave it out of hosts$"):
        hosts.prepare(Comparison.of(hosts=[A]))
    assert hosts.prepare(Comparison.of()) == (Comparison.of(), [])


# --- the queue: whole rounds, a host lost, its round run again ------------------------------------------------------

class Bar:
    def __getattr__(self, name):
        return lambda *args, **kwargs: None


class Pool:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def test_each_round_runs_whole_on_one_host_and_a_lost_hosts_round_runs_on_the_other(tmp_path):
    """Host b fails its second round (its engine does not answer): that round is cleared and host a runs it; b's
    first round is kept. The queue's logic with Python callables; the engines are tests/test_hosts.py's."""
    a, b = hosts.Host("a", A), hosts.Host("b", B)
    played, kept, gate, failed = [], [], threading.Barrier(2), []

    def plan(repeat, specs):
        assert {s.host for s in specs} == {specs[0].host}, "a round's specs are on one host"
        return [(specs[0], [(tmp_path / f"r{repeat}", f"r{repeat}")])]

    def play(planned, *, repeat, pool, bar):
        host = planned[0][0].host
        played.append((repeat, host))
        (tmp_path / f"r{repeat}").mkdir()
        if repeat <= 2:
            gate.wait(5)  # both hosts hold a round at once
        if host == "a":
            time.sleep(0.3)  # b comes back for a second round while a runs its first
        elif sum(h == "b" for _, h in played) == 2:
            failed.append(repeat)
            raise ConnectionError("engine gone")
        yield [Run(id=f"r{repeat}", params={"repeat": repeat, "host": host}, metrics={"rps": 1.0}, metadata={})]

    rounds = [(r, [Spec()]) for r in range(1, 6)]
    hosts.distribute([a, b], rounds, plan=plan, play=play, keep=kept.extend, pool=Pool, bar=Bar())
    by_round = {r.params["repeat"]: r.params["host"] for r in kept}
    assert sorted(by_round) == [1, 2, 3, 4, 5], "every round kept once"
    assert len(failed) == 1 and by_round[failed[0]] == "a", "b's lost round ran again on a"
    assert not (tmp_path / f"r{failed[0]}").exists() or by_round[failed[0]] == "a"
    assert list(by_round.values()).count("b") == 1, "b's finished round is kept"


def test_every_host_lost_says_which_rounds_were_not_run(tmp_path):
    def play(planned, *, repeat, pool, bar):
        raise ConnectionError("engine gone")
        yield

    def plan(repeat, specs):
        return [(specs[0], [(tmp_path / f"r{repeat}", f"r{repeat}")])]

    with pytest.raises(Exception, match=r"every host stopped answering \(.*\): rounds 1, 2, 3 were not run"):
        hosts.distribute([hosts.Host("a", A)], [(r, [Spec()]) for r in (1, 2, 3)], plan=plan, play=play,
                  keep=lambda runs: None, pool=Pool, bar=Bar())


@dataclasses.dataclass(frozen=True)
class Spec:
    """What hosts.on() changes of a RunSpec (a frozen dataclass too): its engines and its host."""

    docker: DockerOptions = DockerOptions()
    host: str | None = None


def test_a_round_stored_in_part_by_another_host_runs_again_whole_and_a_whole_one_is_kept(tmp_path):
    from benchlab.store.results import save

    planned = [(Spec(), [(tmp_path / f"{server}-r1", f"{server}-r1")]) for server in ("jetty", "undertow")]

    def stored(server: str, host: str) -> None:
        (tmp_path / f"{server}-r1").mkdir()
        save(Run(id=f"{server}-r1", params={"repeat": 1, "host": host}, metrics={"rps": 1.0}, metadata={}),
             tmp_path / f"{server}-r1")

    stored("jetty", "b")  # an earlier call's host b finished one fork of round 1, then stopped
    hosts._claim(planned, hosts.Host("a", A))
    assert not (tmp_path / "jetty-r1").exists(), "a round never mixes two hosts' forks"
    stored("jetty", "b")
    stored("undertow", "b")
    hosts._claim(planned, hosts.Host("a", A))
    assert (tmp_path / "jetty-r1" / "run.json").exists() and (tmp_path / "undertow-r1" / "run.json").exists()


def test_an_error_of_the_callers_stops_every_host_and_is_raised(tmp_path):
    """on_run raising in one host's thread: run() raises it, and the other host does not wait for a round forever."""
    def plan(repeat, specs):
        return [(specs[0], [(tmp_path / f"r{repeat}", f"r{repeat}")])]

    def play(planned, *, repeat, pool, bar):
        time.sleep(0.05)
        yield [Run(id=f"r{repeat}", params={"repeat": repeat}, metrics={"rps": 1.0}, metadata={})]

    def keep(runs):
        raise ValueError("on_run failed")

    raised: list[BaseException] = []

    def call():
        try:
            hosts.distribute([hosts.Host("a", A), hosts.Host("b", B)], [(r, [Spec()]) for r in range(1, 7)], plan=plan,
                      play=play, keep=keep, pool=Pool, bar=Bar())
        except BaseException as exc:
            raised.append(exc)

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    caller.join(10)
    assert not caller.is_alive(), "a host waited forever"
    assert [str(e) for e in raised] == ["on_run failed"]
