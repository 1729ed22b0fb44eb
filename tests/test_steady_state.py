"""Steady state: warmup="auto" warms until the JIT is quiet and throughput steady; repeats="auto" adds rounds
until precise."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import benchlab
from benchlab.errors import UsageError
from benchlab.present import charts
from benchlab.running import warmup
from benchlab.running.load import Load

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize("rps, expected", [
    ([1000, 1010, 1005, 995, 1002, 1008], True),
    ([1000, 1010, 1005], False),                                # too short to see a JIT step
    ([1000, 1010, 1021, 1030, 1040, 1050], False),              # climbing 1% a slice
    ([500, 900] + [1000, 1010, 1005, 995, 1002, 1008], True),   # a step, then a steady 30 s
    ([500] * 6 + [1000, 1010, 1005], False),                    # a step, then too little after it
    ([0, 0, 0, 0, 0, 0], False),                                # nothing answered
    ([1000, 1010, 1005, 995], True),                            # flat from its first slice: a native server
    ([500, 520, 1000, 1010], False),                            # a step in its first slices: not flat, too short
])
def test_steady_rule(rps, expected):
    assert warmup.steady(rps) is expected


def test_a_server_flat_from_its_first_slices_is_warm_by_its_own_rule_and_a_jvm_never_is():
    flat = [{"t": 5.0 * i, "rps": r} for i, r in enumerate((41000.0, 40600.0, 41300.0, 40900.0), start=1)]
    assert warmup.judge(flat) == {"warm": True, "class": "flat", "jit_quiet": None, "rule": "native-flat"}
    assert warmup.judge(flat[:3])["warm"] is False, "three slices cannot show a step between two of them"
    rising = [{"t": s["t"], "rps": 30000.0 + 2000.0 * i} for i, s in enumerate(flat)]
    assert warmup.judge(rising)["rule"] == "throughput" and warmup.judge(rising)["warm"] is False
    jvm = [{**s, "compile_s": 30.0} for s in flat]
    assert warmup.judge(jvm, origin={"t": 0.0, "compile_s": 30.0})["rule"] == "jit+throughput", \
        "a JVM with counters waits for its steady segment whatever its first slices look like"


def test_warmup_is_auto_by_default_or_a_time():
    assert Load().warmup == "auto" and Load(warmup="30s").warmup == 30.0
    with pytest.raises(UsageError, match="use 'auto'"):
        Load(warmup="warm")


@pytest.mark.integration
def test_a_server_slow_to_warm_is_warmed_until_steady(tmp_path):
    server = benchlab.Server.from_command([sys.executable, str(FIXTURES / "warming_server.py"), "{port}", "12"],
                                          name="warming", path="/")
    run = benchlab.run(server, "/", connections=4, duration="2s", results_dir=tmp_path)
    curve = run.metadata["warmup"]
    assert curve["mode"] == "auto" and curve["steady"] is True and run.metrics["warm"] is True
    assert curve["rule"] == "throughput", "a Python server has no JVM counters: throughput alone, said so"
    assert curve["class"] == "warm-up" and run.metrics["warmup_class"] == "warm-up"
    rps = [s["rps"] for s in curve["slices"]]
    assert len(rps) >= 2 + 6, "two slow slices, then a steady 30 s at least"
    assert rps[0] < 0.5 * rps[-1], "the first slice saw the slow server, the last the fast one"
    # The server turns fast 12 s after its start, not after the warm-up's start: the wait for it to answer
    # comes first, and one slice may straddle the change. So count slices, not seconds since the start.
    slow = [i for i, r in enumerate(rps) if r < 0.5 * rps[-1]]
    assert slow and max(slow) < len(rps) - warmup.STEADY_SPAN / warmup.SLICE, "a steady 30 s after the change"
    assert curve["seconds"] >= (len(slow) * warmup.SLICE + warmup.STEADY_SPAN) * 0.99
    assert run.metrics["warmup_s"] == curve["seconds"]
    assert all(s["p99"] > 0 for s in curve["slices"])
    assert run.metrics["rps"] > 0.8 * rps[-1], "the measurement came after the change"
    stored = benchlab.load(tmp_path).records[0]
    assert stored.metadata["warmup"]["slices"] == curve["slices"], "the curve is stored with the run"
    curves = benchlab.load(tmp_path).warmups
    assert curves["rps"].tolist() == rps and set(curves["steady"]) == {True}
    spec = charts.warmup(curves).to_dict()
    assert len(list(spec["datasets"].values())[0]) == len(rps), "the report draws every slice"


@pytest.mark.integration
def test_a_rate_load_warms_with_the_connections_that_carry_its_rate(tmp_path):
    # 4 ms an answer: 2 connections carry about 450 req/s of the 1,500 asked, so the JIT of a real server
    # would compile the rest in the measured window; by Little's law about 8 carry it.
    server = benchlab.Server.from_command([sys.executable, str(FIXTURES / "warming_server.py"), "{port}", "0"],
                                          name="steady", path="/")
    run = benchlab.run(server, "/", load="rate", rate=1500, connections=2, duration="2s", results_dir=tmp_path)
    slices = run.metadata["warmup"]["slices"]
    assert slices[0]["connections"] == 2 and slices[0]["rps"] < 0.6 * 1500, "the run's own connections fell short"
    counts = [s["connections"] for s in slices]
    assert counts[1] >= 6 and counts == sorted(counts) and counts[-1] <= 20, "raised once by Little's law, never cut"
    assert min(s["rps"] for s in slices[-3:]) > 0.9 * 1500, "the warm-up carried the rate"
    assert run.metrics["warm"] is True and run.metrics["rps"] > 0.9 * 1500


@pytest.mark.integration
def test_a_fixed_warmup_keeps_its_time_and_judges_nothing(tmp_path):
    server = benchlab.Server.from_command([sys.executable, str(FIXTURES / "warming_server.py"), "{port}", "0"],
                                          name="warm", path="/")
    run = benchlab.run(server, "/", connections=4, duration="1s", warmup="2s", results_dir=tmp_path)
    assert run.metadata["warmup"]["mode"] == "fixed" and run.metadata["warmup"]["steady"] is None
    assert 2.0 <= run.metrics["warmup_s"] < 10


@pytest.mark.integration
def test_a_measurement_that_catches_the_server_speeding_up_is_flagged_drifting(tmp_path):
    # 20 ms an answer (4 connections: about 200 a second) for its first 1000 answers, 4 ms after: the 1 s
    # warm-up takes about 200, and the 8 s measurement sees the change near its middle, however long benchlab
    # waited for quiet cores first. No retake: a retake would measure after the change. A steady server is not
    # flagged.
    changing = benchlab.Server.from_command([sys.executable, str(FIXTURES / "warming_server.py"), "{port}",
                                             "1000r"], name="changing", path="/")
    run = benchlab.run(changing, "/", connections=4, duration="8s", warmup="1s", retakes=0,
                       results_dir=tmp_path / "a")
    assert run.metrics["drift"] > 0.5 and run.metrics["drift"] > run.metrics["drift_limit"]
    assert "drifting" in benchlab.load(tmp_path / "a").flags()["flag"].tolist()
    loads = [s for s in run.samples if s[1] == "load"]
    assert loads and all(s[4] is not None for s in loads), "the load tool's read bytes are sampled"

    steady = benchlab.Server.from_command([sys.executable, str(FIXTURES / "warming_server.py"), "{port}", "0"],
                                          name="steady", path="/")
    run = benchlab.run(steady, "/", connections=4, duration="8s", warmup="1s", results_dir=tmp_path / "b")
    # The limit is two standard errors of the run's own quarter-second noise, so a steady server crosses it
    # now and then by design (CI saw -0.023 against 0.020): its drift is small beside the changing one's,
    # and the flag says exactly what the limit says.
    # The host may steal the window and have it retaken (retakes are part of every run): a retaken window's flags
    # are its own, on its own row, so the kept window's are read by its id and its standing.
    drift, limit = run.metrics["drift"], run.metrics["drift_limit"]
    assert drift is not None and abs(drift) < 0.1
    flags = benchlab.load(tmp_path / "b").flags()
    kept = flags[(flags["level"] == "run") & (flags["id"] == run.id)]
    assert all(s == "used" or s.startswith("left out") for s in kept["standing"]), "the kept window is no retake"
    assert ("drifting" in kept["flag"].tolist()) == (abs(drift) > limit)
    assert set(flags.loc[flags["id"] != run.id, "standing"].dropna()) <= {"retaken"}, "the others are retaken"


def _record(server: str, repeat: int, rps: float, suite=None):
    from benchlab.store.results import Run

    return Run(id=f"{server}-{repeat}", params={"server": server, "repeat": repeat, "scenario": "hello"},
               metrics={"rps": rps}, metadata={}, suite=suite)


def test_precision_is_the_widest_relative_half_width():
    from benchlab.analysis import precision

    tight = [_record(s, r, base * (1 + 0.002 * r)) for r in (1, 2, 3) for s, base in (("a", 1000), ("b", 1500))]
    loose = [_record(s, r, base * (1 + 0.2 * (r % 2))) for r in (1, 2, 3) for s, base in (("a", 1000), ("b", 1500))]
    assert precision.enough(tight, "a", 0.03) and precision.widest(tight, "a") < 0.03
    assert not precision.enough(loose, "a", 0.03) and precision.widest(loose, "a") > 0.1
    assert precision.widest(tight[:2], "a") == float("inf"), "one repeat has no interval"


def test_precision_pairs_the_forks_of_a_round():
    # Rounds that move both servers together by up to 20%, as this machine's did: judged apart, the ratio is
    # known to about +/-20%; paired by round (one suite, one repeat), to within 1%, as the summary judges it.
    from benchlab.analysis import precision

    shift = {1: 1.0, 2: 1.2, 3: 0.8, 4: 1.1, 5: 0.9, 6: 1.15}  # 6 rounds: the signed rank's least at 0.05
    odd = {1: 1.0, 2: 1.004, 3: 0.997, 4: 1.002, 5: 0.999, 6: 1.003}
    rounds = [_record(s, r, base * shift[r] * (odd[r] if s == "b" else 1.0), suite="one")
              for r in shift for s, base in (("a", 1000), ("b", 1500))]
    apart = [_record(s, r, base * shift[r] * (odd[r] if s == "b" else 1.0), suite=s)
             for r in shift for s, base in (("a", 1000), ("b", 1500))]
    assert precision.widest(rounds, "a") < 0.01 < 0.15 < precision.widest(apart, "a")


def test_the_precision_said_is_that_of_every_round_the_last_included():
    # Measured here: 4 rounds of two alike servers, +/-10% asked, max_repeats 4. Before round 4 the rule
    # was not precise (it went on); after it the widest ratio was +/-7.5%, yet the suite said "not reached".
    from benchlab import Suite
    from benchlab.analysis import precision

    rps = {"a": [812.97, 787.30, 785.25, 803.62], "b": [805.03, 734.30, 794.62, 816.73]}
    records = [_record(s, r + 1, rps[s][r]) for r in range(4) for s in ("a", "b")]
    rule = precision.Rule(repeats="auto", windows=1, precision=0.10, baseline="a")
    assert not rule.stop(records[:6], repeat=4, new_round=True), "three rounds are not precise enough"
    suite = Suite(records)
    rule.describe(suite, records)
    assert suite.precision["reached"] is True and suite.precision["repeats"] == 4
    assert suite.precision["widest"] == pytest.approx(0.075, abs=0.001)


def _forks(between: float, within: float, *, servers=("a", "b"), forks=40, windows=10, fork_s=120.0, window_s=5.0,
           seed=7, alike=False):
    """Records of forks x windows whose rps logs have a fork effect of sd ``between`` and window noise of sd
    ``within``, each fork costing ``fork_s`` before its first window and each window ``window_s``; ``alike``:
    every fork's windows the same draws, so that their means agree exactly."""
    import datetime as dt

    import numpy as np

    from benchlab.store.results import Run

    rng = np.random.default_rng(seed)
    shared = rng.normal(0, within, windows)
    t0 = dt.datetime(2026, 12, 3, tzinfo=dt.timezone.utc)
    records = []
    for server in servers:
        for fork in range(forks):
            effect = rng.normal(0, between)
            for i in range(1, windows + 1):
                start = t0 + dt.timedelta(seconds=window_s * i)
                records.append(Run(
                    id=f"{server}-{fork}-{i}", params={"server": server, "repeat": fork + 1, "scenario": "hello",
                                                       "fork": f"{server}-{fork}", "window": i},
                    metrics={"rps": 1000 * np.exp(effect + (shared[i - 1] if alike else rng.normal(0, within))),
                             **({"fork_s": fork_s} if i == 1 else {})},
                    metadata={}, started_at=start.isoformat(),
                    finished_at=(start + dt.timedelta(seconds=window_s)).isoformat()))
    return records


def test_windows_auto_chooses_kalibera_and_jones_windows_from_both_noises_and_both_costs():
    from benchlab.analysis import precision

    # a fork costs 120 s and a window 5 s; windows 1.5x noisier than forks: m = sqrt(120/5 x 1.5^2) = 7.3
    chosen = precision.design(_forks(0.10, 0.15), interleave="windows")
    assert (chosen["fork_s"], chosen["window_s"]) == (120.0, 5.0)
    assert chosen["between_cv"] == pytest.approx(0.10, rel=0.25) and chosen["within_cv"] == pytest.approx(0.15, rel=0.1)
    assert 6 <= chosen["windows"] <= 9 and "Kalibera and Jones" in chosen["why"]
    truth = [precision.saving(0.01, 0.0225, 120, 5, m) for m in range(1, 31)]
    assert min(range(30), key=truth.__getitem__) + 1 == 7, "the model's own optimum is the rule's m"
    assert chosen["saving"] == pytest.approx(truth[6], abs=0.08) and chosen["saving"] < 1
    assert f"{chosen['saving']:.2f}x the time of one window a fork" in chosen["why"]
    # forks that agree and noisy windows: as many windows as allowed; quiet windows: one a fork
    alike = _forks(0.0, 0.15, alike=True)
    assert precision.design(alike, interleave="windows")["windows"] == precision.MAX_WINDOWS["windows"]
    assert precision.design(alike, interleave="forks")["windows"] == precision.MAX_WINDOWS["forks"]
    assert precision.design(_forks(0.20, 0.001))["windows"] == 1


def test_windows_never_save_more_than_the_forks_share_of_the_noise():
    from benchlab.analysis import precision

    for b2, w2 in ((0.01, 0.02), (0.02, 0.01), (0.0001, 0.05)):
        floor = b2 / (b2 + w2)
        ratios = [precision.saving(b2, w2, 129, 5.2, m) for m in range(1, 500)]
        assert ratios[0] == pytest.approx(1.0) and min(ratios) > floor
        assert precision.saving(b2, w2, 1e9, 1e-9, 10**7) == pytest.approx(floor, rel=1e-3), "free windows"


def _steady_server(name: str):
    return benchlab.Server.from_command([sys.executable, str(FIXTURES / "warming_server.py"), "{port}", "0"],
                                        name=name, path="/")


@pytest.mark.integration
@pytest.mark.parametrize("asked, reached", [(0.25, True), (0.0001, False)], ids=["reached", "capped"])
def test_repeats_auto_adds_rounds_until_the_ratio_is_precise(tmp_path, asked, reached):
    # Two alike servers whose 1 s runs vary by about 8%: +/-25% is reached within a few rounds (+/-10% was
    # asked here once, and 4 rounds reached it about half the time: 0.099-0.166 in four tries).
    from benchlab.analysis import precision

    suite = benchlab.compare([_steady_server("a"), _steady_server("b")], ["/"], [4], repeats="auto",
                             precision=asked, max_repeats=6 if reached else 4, duration="1s", warmup=0,
                             results_dir=tmp_path, progress=False)
    rounds = suite.runs.groupby("server")["repeat"].max()
    assert suite.precision["reached"] is reached and suite.precision["asked"] == asked
    if reached:
        last = int(rounds.iloc[0])
        assert (rounds == last).all() and suite.precision["widest"] <= asked
        if last > 2:
            earlier = [r for r in suite.records if r.params["repeat"] < last]
            # judged as the rule judged it: the verdicts' intervals, borrowing as they do
            assert precision.widest(earlier, "a", borrow=suite.borrow, history=suite.history) > asked, \
                "it stopped at the first round that was precise"
    else:
        assert (rounds == 4).all() and suite.precision["widest"] > asked, "it went on to max_repeats, and says so"


@pytest.mark.integration
def test_a_compare_of_six_rounds_is_judged_by_round(tmp_path):
    # A real compare (real processes, real wrk) of 6 rounds: each ratio paired with the baseline's fork of the
    # same round, Wilcoxon's signed rank; the same runs' first 5 rounds are judged apart (too few to pair).
    suite = benchlab.compare([_steady_server("a"), _steady_server("b")], ["/"], [4], repeats=6, duration="1s",
                             warmup=0, results_dir=tmp_path, progress=False)
    verdict = suite.verdicts().iloc[0]
    assert verdict["test"] == "Wilcoxon signed-rank"
    assert verdict["significant"] or "not distinguishable at 6 rounds" in verdict["verdict"], verdict["verdict"]
    summary = suite.summary(["rps"]).set_index("server")
    assert summary.loc["b", "ratio_method"] == "cox paired" and summary.loc["b", "n"] == 6
    five = benchlab.Suite([r for r in suite.records if r.params["repeat"] <= 5])
    assert five.verdicts().iloc[0]["test"] == "Mann-Whitney"
    assert five.summary(["rps"]).set_index("server").loc["b", "ratio_method"] == "cox"


@pytest.mark.integration
def test_windows_auto_measures_a_pilot_then_the_design_it_chose(tmp_path):
    # A real compare (real processes, real wrk, windows in turn) of 3 rounds with windows="auto": the first
    # two rounds measure the pilot's 3 windows a fork, the third what the design chose from their costs and
    # spreads, and the suite says the design and why.
    from benchlab.analysis import precision

    suite = benchlab.compare([_steady_server("a"), _steady_server("b")], ["/"], [4], repeats=3, windows="auto",
                             interleave="windows", duration="1s", warmup=0, results_dir=tmp_path, progress=False)
    runs = suite.runs
    assert (runs["status"] == "ok").all()
    windows = runs.groupby(["repeat", "server"])["window"].max().unstack()
    chosen = suite.design["windows"]
    assert (windows.loc[[1, 2]] == precision.PILOT_WINDOWS).all().all() and (windows.loc[3] == chosen).all()
    assert 1 <= chosen <= precision.MAX_WINDOWS["windows"] and "Kalibera and Jones" in suite.design["why"]
    assert suite.design["fork_s"] > 0 and 1.0 <= suite.design["window_s"] < 5, suite.design
    pilot = [r for r in suite.records if r.params["repeat"] <= 2]
    assert precision.design(pilot, interleave="windows")["windows"] == chosen, "chosen from the pilot's rounds"


def test_windows_auto_judged_by_round_takes_the_forks_spread_beyond_their_round():
    # Rounds 15% apart, shared by the servers, forks 2% apart beyond them, windows 10%: judged apart the forks
    # look 15% apart and few windows pay; judged by round (6 rounds or more) only the 2% is left, so more do.
    import datetime as dt

    import numpy as np

    from benchlab.analysis import precision
    from benchlab.store.results import Run

    rng = np.random.default_rng(21)
    t0 = dt.datetime(2026, 12, 3, tzinfo=dt.timezone.utc)
    records = []
    for r in range(1, 17):
        shared = rng.normal(0, 0.15)
        for server in ("a", "b", "c"):
            own = rng.normal(0, 0.02)
            for i in range(1, 4):
                start = t0 + dt.timedelta(seconds=600 * r + 5 * i)
                records.append(Run(id=f"{server}-{r}-{i}", suite="s",
                                   params={"server": server, "repeat": r, "scenario": "hello",
                                           "fork": f"{server}-{r}", "window": i},
                                   metrics={"rps": 1000 * np.exp(shared + own + rng.normal(0, 0.10)),
                                            **({"fork_s": 120.0} if i == 1 else {})},
                                   metadata={}, started_at=start.isoformat(),
                                   finished_at=(start + dt.timedelta(seconds=5)).isoformat()))
    apart = precision.design(records, interleave="windows")
    paired = precision.design(records, interleave="windows", paired=True)
    assert apart["between_cv"] > 0.10 and paired["between_cv"] < 0.06, (apart, paired)
    assert paired["windows"] > apart["windows"] and "beyond their round" in paired["why"]
    assert precision.Rule(repeats=6, windows="auto", precision=0.03, baseline="a").paired
    assert not precision.Rule(repeats=5, windows="auto", precision=0.03, baseline="a").paired


def test_with_borrowing_the_budgets_widest_is_the_verdicts_own_interval(tmp_path):
    # The budget said "+/-104%" beside verdicts that borrowed strength: one rule, one interval. Three servers in
    # two rounds of one sitting, no history (an empty folder): the fork variance is pooled over the servers.
    from benchlab import Suite
    from benchlab.analysis import precision

    wobble = {("a", 1): 1.00, ("a", 2): 1.02, ("b", 1): 1.01, ("b", 2): 1.00, ("c", 1): 0.99, ("c", 2): 1.02}
    records = [_record(s, r, base * wobble[s, r], suite="one") for r in (1, 2)
               for s, base in (("a", 1000), ("b", 1500), ("c", 1200))]
    own = precision.widest(records, "a")
    borrowed = precision.widest(records, "a", borrow=True, history=[str(tmp_path)])
    suite = Suite(records, baseline="a")
    suite.borrow, suite.history = True, [str(tmp_path)]
    judged = suite.verdicts("rps")
    assert any("pooled over 3 servers" in v for v in judged["verdict"]), judged["verdict"].tolist()
    halves = [max(h / c - 1, 1 - lo / c) for c, lo, h in
              zip(judged["change"] + 1, judged["change_low"] + 1, judged["change_high"] + 1)]
    assert borrowed == max(halves), "the widest is the widest verdict's, not an interval of its own"
    assert borrowed < own, f"{borrowed:.3f} against {own:.3f} from each pair alone"
    assert precision.widest(records[:1], "a", borrow=True) == float("inf"), "one fork: nothing to judge"
