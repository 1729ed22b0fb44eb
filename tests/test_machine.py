"""Watching the machine, for real: a busy loop started apart from benchlab's process tree (``setsid -f``, as a user's
IDE or a neighbour's job would be) on the server's core or the load's, while a real server is measured; and a
comparison whose one side is generator-bound, judged by the one rule."""

from __future__ import annotations

import subprocess
import threading

import pytest

import benchlab
from benchlab.running.fork import Fork, whole
from benchlab.running.options import RunOptions
from benchlab.running.spec import prepare

pytestmark = pytest.mark.integration

SERVER = "go-nethttp"  # no JIT: a window's figure is the machine's, not a compiler's


def busy(core: int, seconds: float) -> None:
    """A busy loop on ``core`` for ``seconds``, not benchlab's: ``setsid -f`` forks it away from this process."""
    subprocess.run(["setsid", "-f", "taskset", "-c", str(core), "timeout", f"{seconds:g}", "sh", "-c",
                    "while :; do :; done"], check=True)


def measured(tmp_path, core_of, *, when: str, duration: float = 6.0, retakes: int = 1) -> Fork:
    """A fork of :data:`SERVER`: two clean windows, then one into which a busy loop is started on the core
    ``core_of(spec)`` for half of it (``when="during"``), or just before it for 3 s (``when="before"``)."""
    spec = prepare(SERVER, "hello", RunOptions(connections=16, duration=f"{duration:g}s", warmup="3s",
                                              retakes=retakes))
    core = core_of(spec)

    def phase(step: str) -> None:
        if step == "measure 3/3":
            if when == "before":
                busy(core, 3.0)
            else:  # the window starts after a 0.5 s look at the cores; the loop covers its middle half
                threading.Timer(0.5 + duration / 4, busy, (core, duration / 2)).start()

    windows = [(tmp_path / f"w{k}", f"w{k}") for k in (1, 2, 3)]
    fork = whole(Fork(spec, windows, on_phase=phase))
    assert fork.error is None, fork.error
    return fork


@pytest.mark.parametrize("side", ["server", "load"])
def test_a_busy_loop_on_a_core_for_half_a_window_is_flagged_with_its_seconds_and_share_and_retaken(tmp_path, side):
    fork = measured(tmp_path, lambda spec: (spec.server_cpus if side == "server" else spec.load_cpus)[0],
                    when="during")
    clean, kept = fork.records[:2], fork.records[2]
    assert len(fork.retaken) == 1, "the disturbed window is kept beside the fork and measured again"
    disturbed = fork.retaken[0]
    assert disturbed.status == "retaken" and kept.metadata["retook"] == [disturbed.id]
    assert disturbed.metrics[f"other_{side}_s"] >= 2.0, disturbed.metrics
    assert 0.2 <= disturbed.metrics[f"other_{side}_cpu"] <= 1.0, "a busy loop shares the core: about half of it"
    assert "sh (PID" in (disturbed.metrics["others"] or ""), "the busiest other process is named"
    flags = benchlab.load(tmp_path).flags()
    said = flags[(flags["id"] == disturbed.id) & (flags["flag"] == "interference")]["explanation"].tolist()
    assert said and f"of the {side}'s core" in said[0] and "s of the" in said[0], said
    assert "retaken" in set(flags.loc[flags["id"] == disturbed.id, "flag"])
    low = min(r.metrics["rps"] for r in clean)
    high = max(r.metrics["rps"] for r in clean)
    assert 0.85 * low <= kept.metrics["rps"] <= 1.15 * high, ("the kept window lies within the clean ones' noise",
                                                             [r.metrics["rps"] for r in (*clean, disturbed, kept)])
    assert kept.metrics["other_server_s"] == 0 and kept.metrics["other_load_s"] == 0
    suite = benchlab.load(tmp_path)
    assert set(suite.runs["status"]) == {"ok", "retaken"} and suite.summary(["rps"]).iloc[0]["windows"] == 3, \
        "the retaken window enters no statistic"
    assert suite.series["disturbed"].any(), "the disturbed seconds show in the window's series"


def test_a_busy_loop_just_before_a_window_makes_benchlab_wait_for_quiet(tmp_path, caplog):
    fork = measured(tmp_path, lambda spec: spec.server_cpus[0], when="before", retakes=0)
    last = fork.records[2]
    assert last.metrics["quiet_wait_s"] >= 1.0, last.metrics
    assert "waiting up to" in caplog.text, "it says, in one line of the benchlab log, that it waits"
    assert "(sh (PID" in caplog.text, f"and names who is busy: {caplog.text}"
    assert "sh (PID" in last.metadata["cores"]["quiet"]["others"], "and keeps it with the window"
    assert last.metrics["other_server_s"] == 0, "it measured once the cores were quiet"


def test_a_generator_bound_side_is_not_judged_and_the_verdict_says_why(tmp_path):
    # nginx on one core against wrk on the other: wrk is the bound (measured here: 96% busy); go-nethttp beside it
    suite = benchlab.compare(["go-nethttp", "nginx"], connections=[64], repeats=2, duration="3s", warmup="3s",
                             results_dir=tmp_path, progress=False)
    flags = suite.flags()
    bound = set(flags.loc[(flags["flag"] == "generator_bound") & (flags["level"] == "run"), "id"])
    nginx = set(suite.runs.loc[suite.runs["server"] == "nginx", "id"])
    assert nginx <= bound, "the premise: wrk on one core cannot saturate nginx on another"
    verdict = suite.verdicts().iloc[0]
    assert not verdict["significant"] and not verdict["judged"]
    assert verdict["verdict"].startswith("nginx vs go-nethttp: rps not judged: all 2 nginx runs left out (bound by")
