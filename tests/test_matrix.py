"""The run matrix of compare(): interleaved or seeded-shuffled order, every cell, its checks (unit tests)."""

from __future__ import annotations

import pytest

from benchlab.errors import UsageError
from benchlab.running.matrix import matrix
from benchlab.running.options import Comparison


def plan(servers, scenarios=None, connections=(200,), repeats=3, **given):
    """The matrix of compare()'s options, as compare() builds it: one Comparison, every option by name."""
    return matrix(Comparison.of(servers=servers, scenarios=scenarios, connections=connections, repeats=repeats,
                                **given))

SERVERS = ["spring-tomcat", "spring-jetty", "spring-undertow"]
SHORT = {"duration": "1s", "warmup": 0}


def names(runs):
    return [spec.server.name.removeprefix("spring-")[0].upper() for _, spec in runs]


def test_interleaved_order_is_abcabc():
    runs = plan(SERVERS, ["hello"], [10], repeats=3, **SHORT)
    assert "".join(names(runs)) == "TJUTJUTJU"
    assert [r for r, _ in runs] == [1, 1, 1, 2, 2, 2, 3, 3, 3]


def test_shuffled_order_is_seeded_and_blocked():
    a = plan(SERVERS, ["hello"], [10], repeats=4, order="shuffled", seed=7, **SHORT)
    b = plan(SERVERS, ["hello"], [10], repeats=4, order="shuffled", seed=7, **SHORT)
    assert names(a) == names(b)
    assert names(a) != names(plan(SERVERS, ["hello"], [10], repeats=4, order="shuffled", seed=8, **SHORT))
    for block in range(4):
        assert sorted(names(a)[block * 3:block * 3 + 3]) == ["J", "T", "U"], "every repeat holds every server"


def test_matrix_covers_every_cell():
    runs = plan(SERVERS[:2], ["hello", "json"], [16, 64], repeats=2, **SHORT)
    assert len(runs) == 2 * 2 * 2 * 2
    cells = {(s.server.name, s.scenario.name, s.load.connections, r) for r, s in runs}
    assert len(cells) == 16


@pytest.mark.parametrize("kwargs, message", [
    (dict(servers=[]), "servers is empty"),
    (dict(repeats=0), "repeats must be"),
    (dict(order="grouped"), "unknown order"),
    (dict(servers=["spring-tomcat", "spring-tomcat"]), "twice"),
    (dict(load="rate"), "rates="),
])
def test_bad_compare_input(kwargs, message):
    options = dict(servers=SERVERS, scenarios=["hello"], connections=[10], repeats=1)
    options.update(kwargs)
    with pytest.raises(UsageError, match=message):
        plan(**options, **SHORT)
