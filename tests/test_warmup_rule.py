"""The warm-up rule on series with a known truth: change points, Barrett's classes, and the JIT's say."""

from __future__ import annotations

import numpy as np
import pytest

from benchlab.analysis import changepoints
from benchlab.running import warmup


@pytest.mark.parametrize("n", [10, 20, 40])
def test_pure_noise_rarely_gets_a_change_point(n):
    rng = np.random.default_rng(n)
    normal = np.mean([len(changepoints.segments(rng.normal(100, 8, n))) > 1 for _ in range(2000)])
    heavy = np.mean([len(changepoints.segments(100 + 8 * rng.standard_t(4, n))) > 1 for _ in range(2000)])
    assert normal <= 0.05, f"{normal:.3f} of pure Normal series got a false change point at n={n}"
    assert heavy <= 0.07, f"{heavy:.3f} of heavy-tailed (t, 4 df) series got a false change point at n={n}"


def test_a_jit_step_is_found_where_it_is():
    rng = np.random.default_rng(7)
    found = 0
    for _ in range(200):
        series = np.r_[rng.normal(5000, 300, 14), rng.normal(18000, 1500, 16)]  # Jetty's step, as measured
        cuts = [s.start for s in changepoints.segments(series)[1:]]
        found += cuts == [14]
    assert found >= 190, f"the step at slice 14 was found exactly in {found} of 200 series"


@pytest.mark.parametrize("series, expected", [
    ([20.0] * 12, "flat"),
    ([5.0] * 6 + [20.0] * 8, "warm-up"),
    ([20.0] * 6 + [12.0] * 8, "slowdown"),
    ([5.0] * 10 + [20.0] * 4, "no steady state"),
    ([5.0, 10.0, 20.0, 20.1, 19.9, 20.0, 20.2, 19.8, 20.0], "warm-up"),
])
def test_classes(series, expected):
    assert changepoints.classify(series, steady_slices=6)[0] == expected


def _jetty_like(compile_rate_until: float, *, seed: int = 0) -> list[dict]:
    """Slices shaped like the Jetty curve measured here: a plateau near 4.8k req/s while its compiler adds
    about 1 s of compile time per second, then 18k once it is quiet."""
    rng = np.random.default_rng(seed)
    slices, compile_s = [], 30.0
    for i in range(1, 37):
        t = 5.0 * i
        compiling = t <= compile_rate_until
        compile_s += 5.0 if compiling else 0.02
        rps = rng.normal(4800, 150) if t < compile_rate_until - 25 else rng.normal(18000, 1200)
        slices.append({"t": t, "rps": float(rps), "compile_s": compile_s})
    return slices


def test_a_plateau_while_the_jit_compiles_is_not_warm():
    slices = _jetty_like(80.0)
    origin = {"t": 0.0, "compile_s": 25.0}
    calls = [warmup.judge(slices[:i], origin=origin)["warm"] for i in range(1, len(slices) + 1)]
    first = calls.index(True)
    assert slices[first]["t"] >= 80.0 + warmup.QUIET_SPAN, "no call before the compiler was quiet a whole window"
    assert all(not warm for warm, s in zip(calls, slices) if s["t"] <= 80.0), "every slice while compiling: not warm"
    # The same series without counters: the throughput rule alone is fooled by nothing here either, since
    # the plateau ends in a step; but it says it judged throughput only.
    alone = warmup.judge([{"t": s["t"], "rps": s["rps"]} for s in slices])
    assert alone["rule"] == "throughput" and alone["jit_quiet"] is None


def test_the_old_rule_was_fooled_by_that_plateau_and_the_new_one_is_not():
    slices = _jetty_like(80.0, seed=3)
    plateau = [s for s in slices if s["t"] <= 50.0]  # 4.8k req/s, the compiler busy
    assert warmup.judge(plateau, origin={"t": 0.0, "compile_s": 25.0})["warm"] is False
    assert warmup.judge(plateau, origin={"t": 0.0, "compile_s": 25.0})["jit_quiet"] is False


def test_jit_quiet_and_the_time_it_went_quiet():
    busy = [{"t": 5.0 * i, "compile_s": 5.0 * i} for i in range(1, 10)]
    assert warmup.jit_quiet(busy) is False
    quiet = busy + [{"t": 45.0 + 5.0 * i, "compile_s": 45.0 + 0.1 * i} for i in range(1, 10)]
    assert warmup.jit_quiet(quiet) is True
    assert warmup.quiet_since(quiet) == 45.0 + warmup.QUIET_SPAN, \
        "the end of the first whole quiet window after the last compile burst"
    assert warmup.quiet_since([{"t": 5.0, "rps": 1.0}]) is None, "no counters, no time"


def test_a_rising_series_is_not_steady_however_smooth():
    climbing = [10000.0 * (1 + 0.01 * i) for i in range(12)]  # 1% a slice, no step to find
    assert warmup.steady(climbing) is False
    assert warmup.steady([10000.0 + (50.0 if i % 2 else -50.0) for i in range(12)]) is True
