"""Statistics on data with known answers, the interleaving order, and every flag (unit tests)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from benchlab.analysis import flagframe, flags, stats, verdicts
from benchlab.errors import UsageError
from benchlab.store.results import COLUMNS


def frame(rows: list[dict]) -> pd.DataFrame:
    base = {c: None for c in COLUMNS}
    base.update(status="ok", scenario="hello", load="duration", driver="wrk", connections=10, load_cores=1,
                errors_total=0, server_cpus="0", load_cpus="1")
    out = []
    for i, row in enumerate(rows):
        r = dict(base, id=f"run{i}", **row)
        out.append(r)
    return pd.DataFrame(out, columns=list(COLUMNS))


def repeats(server: str, rps: list[float], **extra) -> list[dict]:
    return [dict(server=server, rps=v, repeat=i + 1, p50=10 / v, p99=0.01, **extra) for i, v in enumerate(rps)]


def test_describe_known_answers():
    d = stats.describe([10.0, 11.0, 12.0])
    assert (d["n"], d["mean"], d["median"], d["min"], d["max"]) == (3, 11.0, 11.0, 10.0, 12.0)
    assert d["stdev"] == pytest.approx(1.0)
    assert d["cv"] == pytest.approx(1 / 11)
    # Cox on the logs: m = 2.395129, v = 0.0083161; centre m + v/2 = 2.399287,
    # se = sqrt(v/3 + v^2/4) = 0.052814, half = t(0.975, 2) 4.302653 * se = 0.227238.
    assert (d["ci_low"], d["ci_high"]) == pytest.approx((math.exp(2.172049), math.exp(2.626525)), abs=1e-3)
    assert d["ci_method"] == "cox"


def test_a_metric_that_can_be_zero_gets_the_t_interval():
    # t(0.975, 2) = 4.3027; half-width = 4.3027 * 1 / sqrt(3) = 2.4841
    low, high, method = stats.mean_ci([0.0, 1.0, 2.0])
    assert (low, high, method) == (pytest.approx(-1.4841, abs=1e-3), pytest.approx(3.4841, abs=1e-3), "t")


def test_one_interval_method_at_every_number_of_repeats():
    # The old rule switched to a bootstrap at 10 repeats, and the interval got narrower than the t
    # interval's there: 9 and 10 repeats of the same noise must be treated alike.
    methods = {stats.mean_ci([100.0 + (i * 7) % 5 for i in range(n)])[2] for n in range(2, 40)}
    assert methods == {"cox"}
    values = [100.0 + i for i in range(12)]
    assert stats.mean_ci(values) == stats.mean_ci(values), "no random resampling: the interval is repeatable"


def test_a_positive_quantity_keeps_a_positive_interval():
    # A rendered report showed [-1,029, 6,495] req/s at 2 repeats: values near 2,437 and 3,029.
    low, high, method = stats.mean_ci([2437.0, 3029.0])
    assert method == "cox" and 0 < low < 2437 and high > 3029


def test_alpha_reaches_every_interval():
    values, baseline = [100.0, 104.0, 97.0, 101.0], [90.0, 95.0, 93.0, 91.0]
    wide, narrow = stats.mean_ci(values, alpha=0.01), stats.mean_ci(values, alpha=0.20)
    assert wide[0] < narrow[0] < narrow[1] < wide[1]
    assert stats.describe(values, alpha=0.20)["ci_low"] == narrow[0]
    wide, narrow = stats.ratio_ci(values, baseline, alpha=0.01), stats.ratio_ci(values, baseline, alpha=0.20)
    assert wide[1] < narrow[1] < narrow[2] < wide[2]
    runs = frame(repeats("tomcat", baseline) + repeats("jetty", values))
    loose, strict = (verdicts.verdicts(runs, baseline="tomcat", alpha=a).iloc[0] for a in (0.20, 0.01))
    assert strict["change_low"] < loose["change_low"] and strict["test"] == "Welch t"  # 4 v 4 cannot reach 1%
    s = stats.summary(runs, metrics=("rps",), baseline="tomcat", alpha=0.20).set_index("server")
    assert s.loc["jetty", "ci_low"] == narrow_mean_low(values) and s.loc["jetty", "ratio_low"] == narrow[1]


def narrow_mean_low(values):
    return stats.mean_ci(values, alpha=0.20)[0]


def test_repeats_that_never_vary_have_no_interval():
    # Whole milliseconds: three repeats of 2 ms say nothing about the noise; [2, 2] would claim certainty.
    assert stats.mean_ci([0.002, 0.002, 0.002])[2] == "none"
    ratio, low, high = stats.ratio_ci([0.003] * 3, [0.002] * 3)
    assert ratio == pytest.approx(1.5) and math.isnan(low) and stats.ratio_method([0.003] * 3, [0.002] * 3) == "none"
    rows = [dict(server=s, rps=100, p50=x, repeat=i) for s, x in [("a", 0.002), ("b", 0.003)] for i in range(3)]
    v = verdicts.verdicts(frame(rows), metric="p50", baseline="a").iloc[0]
    assert not v["significant"] and "no repeat differed" in v["verdict"]


def test_single_run_has_no_interval():
    d = stats.describe([5.0])
    assert d["n"] == 1 and math.isnan(d["ci_low"]) and d["ci_method"] == "none"


def test_ratio_interval_contains_the_ratio():
    ratio, low, high = stats.ratio_ci([178, 180, 176], [100, 101, 99])
    assert ratio == pytest.approx(1.78)
    assert low < 1.78 < high and low > 1.7 and high < 1.86
    assert stats.ratio_method([178, 180, 176], [100, 101, 99]) == "cox"


def test_ratio_of_counts_uses_fieller():
    # Error counts can be 0, so no logarithms: Fieller's interval, unbounded (NaN) when the baseline's
    # mean is not surely above 0.
    ratio, low, high = stats.ratio_ci([0, 2, 4], [10, 11, 12])
    assert stats.ratio_method([0, 2, 4], [10, 11, 12]) == "fieller" and low < 0.18 < high
    assert math.isnan(stats.ratio_ci([3, 4, 5], [0, 1, 3])[1])


def test_test_choice_follows_what_can_reach_alpha():
    assert stats.test_difference([1, 2, 3], [4, 5, 6])[0] == "Welch t"          # 3 v 3: MWU min p = 0.1
    test, p = stats.test_difference([1, 2, 3, 4], [5, 6, 7, 8])
    assert test == "Mann-Whitney" and p == pytest.approx(2 / 70)
    assert stats.test_difference([1, 2, 3, 4], [5, 6, 7, 8], alpha=0.01)[0] == "Welch t"  # 2/70 > 0.01


def test_ties_get_the_exact_p():
    # Whole-millisecond p50s: the normal approximation said p=0.047; 6 of the 70 splits are as extreme.
    test, p = stats.test_difference([1, 1, 1, 2], [2, 2, 3, 3])
    assert test == "Mann-Whitney" and p == pytest.approx(6 / 70)
    v = verdicts.verdicts(frame([dict(server=s, rps=100, p50=x / 1e3, repeat=i) for s, xs in
                              [("a", [1, 1, 1, 2]), ("b", [2, 2, 3, 3])] for i, x in enumerate(xs)]),
                       metric="p50", baseline="a").iloc[0]
    assert not v["significant"] and "Mann-Whitney p=0.0857" in v["verdict"]


def test_many_repeats():
    # math.comb(600, 300) overflowed a float; a few hundred or thousands of repeats must just work.
    values = [100.0 + (i * 37) % 11 for i in range(2000)]
    baseline = [101.0 + (i * 17) % 13 for i in range(2000)]
    test, p = stats.test_difference(values, baseline)
    assert test == "Mann-Whitney" and 0 <= p <= 1
    assert stats.mean_ci(values)[2] == "cox" and not math.isnan(stats.ratio_ci(values, baseline)[1])


def test_verdicts_separate_difference_from_noise():
    runs = frame(repeats("tomcat", [100, 101, 99]) + repeats("jetty", [178, 180, 176])
                 + repeats("undertow", [90, 112, 101]))
    v = verdicts.verdicts(runs, baseline="tomcat").set_index("server")
    assert v.loc["jetty", "significant"] and v.loc["jetty", "better"]
    assert v.loc["jetty", "verdict"].startswith("jetty vs tomcat: +78% rps [")
    assert "significant (Welch t p=" in v.loc["jetty", "verdict"]
    assert not v.loc["undertow", "significant"]
    assert "not distinguishable at 3 repeats" in v.loc["undertow", "verdict"]


def test_lower_latency_is_better():
    rows = [dict(server="a", rps=100, p99=v, repeat=i) for i, v in enumerate([0.010, 0.011, 0.010, 0.012])]
    rows += [dict(server="b", rps=100, p99=v, repeat=i) for i, v in enumerate([0.005, 0.005, 0.006, 0.005])]
    v = verdicts.verdicts(frame(rows), metric="p99", baseline="a").iloc[0]
    assert v["significant"] and v["better"] and v["test"] == "Mann-Whitney"


def test_summary_has_ratios_and_flags():
    runs = frame(repeats("tomcat", [100, 101, 99]) + repeats("jetty", [178, 250, 120]))
    s = stats.summary(runs, metrics=("rps",), baseline="tomcat").set_index("server")
    assert s.loc["tomcat", "ratio"] == 1.0 and set(s["ci_method"]) == set(s["ratio_method"]) == {"cox"}
    assert s.loc["jetty", "ratio"] == pytest.approx(182.667 / 100, rel=1e-3)
    assert "high_cv" in s.loc["jetty", "flags"] and s.loc["tomcat", "flags"] == ""


def test_unknown_baseline():
    with pytest.raises(UsageError, match="unknown baseline"):
        stats.summary(frame(repeats("a", [1.0])), baseline="b")


def test_table_layout():
    runs = frame(repeats("tomcat", [86845.68, 96100.71, 90682.52]) + repeats("jetty", [153280.57, 166991.19]))
    t = stats.table(runs, "rps")
    assert list(t.columns[:4]) == ["fork 1", "fork 2", "fork 3", "mean"]
    assert t.loc["tomcat", "mean"] == pytest.approx((86845.68 + 96100.71 + 90682.52) / 3)
    assert math.isnan(t.loc["jetty", "fork 3"])
    assert list(t.columns[-3:]) == ["windows", "within_cv", "left out"] and math.isnan(t.loc["jetty", "within_cv"])


def flagged(rows: list[dict]) -> set[str]:
    return set(flagframe.flags(frame(rows))["flag"])


def test_flag_high_cv():
    assert "high_cv" in flagged(repeats("a", [100, 120, 80]))
    assert "high_cv" not in flagged(repeats("a", [100, 101, 99]))


def test_flag_tail_instability_the_6_to_234_ms_case():
    rows = repeats("jetty", [160, 165, 170])
    for row, p99 in zip(rows, [0.0224, 0.23401, 0.00604]):
        row["p99"] = p99
    found = flagframe.flags(frame(rows))
    explanation = found[found.flag == "tail_unstable"]["explanation"].iloc[0]
    assert "38.7x" in explanation and "6.04 ms to 234.01 ms" in explanation


def test_flag_errors():
    assert "errors" in flagged([dict(server="a", rps=100, p50=0.1, errors_total=3)])


def test_the_errors_flag_says_which_kind_and_names_the_accept_queue():
    """1000 connections against Jetty's accept queue of 50: read and connect errors, and why."""
    rows = [dict(server="spring-jetty", rps=900, p50=0.1, connections=1000, errors_total=34200, errors_read=34000,
                 errors_connect=200, errors_status=0, accept_queue=50, somaxconn=4096),
            dict(server="spring-tomcat", rps=900, p50=0.1, connections=1000, errors_total=12, errors_timeout=12,
                 accept_queue=100, somaxconn=4096)]
    found = flagframe.flags(frame(rows))
    run = found[(found.level == "run") & (found.flag == "errors")].set_index("server")["explanation"]
    jetty, tomcat = run["spring-jetty"], run["spring-tomcat"]
    assert jetty.startswith("34200 failed requests, 200 connect (connections not accepted")
    assert "34000 read (connections reset" in jetty and "status" not in jetty.split(";")[1]
    assert "1000 connections opened at once against an accept queue of 50" in jetty and "somaxconn 4096" in jetty
    assert "12 timeout (answers slower than the timeout" in tomcat
    assert "accept queue of" not in tomcat, "timeouts are not an accept-queue overflow"
    # the same text from one row as from the frame
    assert [t for f, t in flags.run_flags(frame(rows).iloc[0]) if f == "errors"] == [jetty]
    # the kernel's cap is the queue when it is lower than the server's setting
    capped = flags.errors_text(300, {"read": 300}, connections=1000, accept_queue=1000, somaxconn=128)
    assert "accept queue of 128 (the server's 1000, capped by the kernel's somaxconn 128)" in capped
    assert "accept queue of" not in flags.errors_text(300, {"read": 300}, connections=100, accept_queue=1000,
                                                   somaxconn=4096)


def test_flag_generator_bound():
    assert "generator_bound" in flagged([dict(server="a", rps=100, p50=0.1, load_cpu_mean=97.0)])
    assert "generator_bound" not in flagged([dict(server="a", rps=100, p50=0.1, load_cpu_mean=150.0,
                                                  load_cores=2)])
    # One wrk thread can keep one core busy: 97% of one core is bound though two cores were given.
    assert "generator_bound" in flagged([dict(server="a", rps=100, p50=0.1, load_cpu_mean=97.0, load_cores=2,
                                              threads=1)])
    assert "generator_bound" not in flagged([dict(server="a", rps=100, p50=0.1, load_cpu_mean=150.0,
                                                  load_cores=2, threads=4)])


def test_flag_littles_law():
    # 100 connections at 1000 req/s means a mean of 100 ms in flight; a 5 ms mean cannot be.
    assert "littles_law" in flagged([dict(server="a", rps=1000, lat_mean=0.005, p50=0.005, connections=100)])
    assert "littles_law" not in flagged([dict(server="a", rps=1000, lat_mean=0.09, p50=0.09, connections=100)])
    # Little's law is about the mean: a skewed latency (p50 5 ms, a tail pulling the mean to 95 ms) obeys
    # it. The old check read p50 and flagged this run.
    assert "littles_law" not in flagged([dict(server="a", rps=1000, lat_mean=0.095, p50=0.005, connections=100)])


def test_flag_delayed_ack():
    assert "delayed_ack" in flagged([dict(server="a", rps=25, p50=0.040, connections=1, server_cpu_mean=3.0)])
    assert "delayed_ack" not in flagged([dict(server="a", rps=25, p50=0.040, connections=1,
                                              server_cpu_mean=95.0)])
    # A scenario that sleeps 40 ms explains a 40 ms p50 on an idle server; the built-in sleep is 10 ms.
    for scenario, flags_it in [("sleep:40", False), ("sleep:45", False), ("sleep", True), ("sleep:5", True)]:
        runs = [dict(server="a", scenario=scenario, rps=25, p50=0.041, connections=1, server_cpu_mean=3.0)]
        assert ("delayed_ack" in flagged(runs)) is flags_it, scenario


def test_flag_rate_shortfall_and_shared_cores():
    assert "rate_shortfall" in flagged([dict(server="a", load="rate", rps=800, target_rps=1000, p50=0.001)])
    assert "rate_shortfall" in flagged([dict(server="a", load="rate", rps=990, sent_rps=800, target_rps=1000)])
    assert "rate_shortfall" not in flagged([dict(server="a", load="rate", rps=800, sent_rps=1000, target_rps=1000)]), \
        "a rate sent in full against a slow server is no shortfall"
    # HttpArena's rate_ratio: the answers over the attack and its wait, more than 1% behind the rate
    assert "rate_shortfall" in flagged([dict(server="a", load="rate", rps=1000, sent_rps=1000, achieved_rps=985,
                                             target_rps=1000)]), "a server that answered 1.5% late fell behind"
    assert "rate_shortfall" not in flagged([dict(server="a", load="rate", rps=1000, sent_rps=1000, achieved_rps=995,
                                                 target_rps=1000)]), "within 1% of the rate"
    assert "shared_cores" in flagged([dict(server="a", rps=100, p50=0.1, server_cpus="0-1", load_cpus="1")])


def test_failed_cells_are_reported():
    rows = [dict(server="a", status="failed", error="ServerError: boom", rps=None)] * 2
    rows += repeats("b", [100, 101])
    found = flagframe.flags(frame(rows))
    assert set(found[found.server == "a"]["flag"]) == {"failed", "all_failed"}
    assert "boom" in found[found.flag == "failed"]["explanation"].iloc[0]


def test_every_flag_has_one_line():
    assert all("\n" not in text for text in flags.FLAGS.values())


# --- the order of a comparison (no server is started: plan() only resolves the matrix) ---------------

SERVERS = ["spring-tomcat", "spring-jetty", "spring-undertow"]




def test_flag_not_warm_only_when_auto_gave_up():
    from benchlab.analysis import flags

    assert [f for f, _ in flags.run_flags({"warm": False, "warmup_s": 181.0})] == ["not_warm"]
    assert not flags.run_flags({"warm": True, "warmup_s": 40.0})
    assert not flags.run_flags({"warm": None, "warmup_s": 10.0}), "a fixed warm-up is not judged"


def test_flag_drifting_when_the_halves_differ_beyond_the_runs_own_noise():
    from benchlab.analysis import flags

    assert [f for f, _ in flags.run_flags({"drift": 0.08, "drift_limit": 0.03})] == ["drifting"]
    assert [f for f, _ in flags.run_flags({"drift": -0.08, "drift_limit": 0.03})] == ["drifting"]
    assert not flags.run_flags({"drift": 0.02, "drift_limit": 0.03}), "within its own noise"
    assert not flags.run_flags({"drift": None, "drift_limit": None}), "no byte counts: not judged"


def ar1_window(rng, *, rho: float, sd: float, rise: float = 0.0, steps: int = 40) -> list[tuple]:
    """A load tool's quarter-second byte counts: rates with AR(1) noise (``rho``, ``sd`` of the rate) around a
    steady rate, or one rising by ``rise`` from the window's start to its end."""
    noise, total = 0.0, 0.0
    rows = [(0.0, "load", 50.0, 1, 0.0)]
    for i in range(steps):
        noise = rho * noise + sd * math.sqrt(1 - rho * rho) * rng.standard_normal()
        total += 1e6 * (1 + rise * (i / (steps - 1) - 0.5)) * max(0.05, 1 + noise) / 4
        rows.append(((i + 1) / 4, "load", 50.0, 1, total))
    return rows + [((steps + 1) / 4, "load", 50.0, 1, total)]  # the tool stops: no bytes in the last interval


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.8])
def test_the_drift_limit_holds_its_false_flags_on_autocorrelated_noise_and_still_sees_a_rise(rho, monkeypatch):
    # Known truth: a steady server whose quarter-second rates carry this machine's noise (a 5% sd, as in its clean
    # windows) in runs (AR(1)); then the same server rising 40% across its window. At three times that noise with
    # rho 0.5-0.8 the error, not the floor, sets the limit and a rho read from 8 samples a half is too low: the
    # rate is then 0.12-0.21 (docs/machine.md says so).
    import numpy as np

    from benchlab.analysis import steady

    def rates(seed: int, sd: float = 0.05) -> tuple[float, float]:
        rng = np.random.default_rng(seed)
        steady_ = [steady.drift(ar1_window(rng, rho=rho, sd=sd)) for _ in range(1500)]
        risen = [steady.drift(ar1_window(rng, rho=rho, sd=0.05, rise=0.4)) for _ in range(300)]
        return (float(np.mean([abs(d["drift"]) > d["drift_limit"] for d in steady_])),
                float(np.mean([d["drift"] > d["drift_limit"] for d in risen])))

    false, seen = rates(37)
    assert false <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 1500), (rho, false)
    assert seen >= 0.8, (rho, seen)
    if rho == 0.8:  # at three times the noise, judged as if the samples were independent: what the widening is for
        widened = rates(37, sd=0.15)[0]
        monkeypatch.setattr(steady, "_autocorrelation", lambda *halves: 0.0)
        assert rates(37, sd=0.15)[0] > widened + 0.1, widened


def test_a_runs_flags_do_not_depend_on_the_other_runs_of_the_frame():
    # The rules run column by column over the whole frame; a run's flags must be those it has alone (a
    # column's dtype or a NaN in another row must not change them), for every flag, explanation and order.
    import random

    rng = random.Random(5)
    choices = {
        "status": ["ok"] * 6 + ["failed", "retaken"], "error": [None, "ServerError: boom\nmore", ""],
        "errors_total": [0, 0, 3, None, -1], "load_cpu_mean": [None, 50.0, 91.0, 97.0, 150.0, 190.0],
        "threads": [None, 0, 1, 2, 4], "load_cores": [None, 0, 1, 2], "load": ["duration", "count", "rate", None],
        "rps": [None, 0.0, 25.0, 800.0, 1000.0], "lat_mean": [None, 0.0, 0.005, 0.09, 0.2],
        "connections": [None, 0, 1, 100], "p50": [None, 0.001, 0.035, 0.040, 0.045, 0.05],
        "server_cpu_mean": [None, 3.0, 29.9, 30.0, 95.0], "scenario": ["hello", "sleep", "sleep:40", "sleep:5", None],
        "target_rps": [None, 0.0, 1000.0], "warm": [True, False, None], "warmup_s": [None, 0.0, 181.0],
        "drift": [None, 0.0, 0.019, -0.05, 0.2], "drift_limit": [None, 0.02, 0.1],
        "note": [None, "", "3 sockets timed out"], "server_cpus": ["0", "0-1", "2"], "load_cpus": ["1", "1-3"],
        "server": ["a", "b"], "jit_share": [None, 0.0, 0.049, 0.3, 1.8], "jit_compile_s": [None, 0.0, 3.2],
        "gc_share": [None, 0.01, 0.15], "server_idle_s": [None, 0.0, 1.9, 2.0, 5.5],
        "other_server_s": [None, 0.0, 0.9, 1.0, 6.0], "other_server_cpu": [None, 0.0, 0.48],
        "other_load_s": [None, 0.0, 2.0], "other_load_cpu": [None, 0.3], "elapsed_s": [None, 10.0],
        "others": [None, "", "python3 (PID 8) 5.9 s on core 0"], "steal_s": [None, 0.0, 0.9, 3.0],
        "steal_cpu": [None, 0.2], "dip": [None, 0.0, -0.05, -0.1, -0.3], "dip_s": [None, 0.5, 1.0, 4.0],
        "capacity_by": [None, "server", "load tool", "limit", "steps"],
        "streams": [None, 1, 10, 128], "stream_limit": [None, 20, 100],
        "profiled": [None, None, True, False], "profile_samples": [None, 4800],
    }
    rows = [{name: rng.choice(values) for name, values in choices.items()} for _ in range(250)]  # each flag 10+ times
    runs = frame(rows)
    assert flags.runs_flags(runs) == [flags.run_flags(row) for _, row in runs.iterrows()]
    assert {flag for found in flags.runs_flags(runs) for flag, _ in found} == set(flags.FLAGS) - {
        "high_cv", "tail_unstable", "all_failed", "damaged", "host_differs", "noisy_sitting"}, \
        "the frame is varied enough to raise every run flag"


def test_large_cells_without_ties_use_the_normal_approximation():
    # A thousand repeats a side: 10,000 random splits cost a third of a second a pair. Without ties and with
    # 50+ repeats a side the normal approximation is as good, and the verdict names it.
    import numpy as np

    from benchlab.analysis import intervals

    rng = np.random.default_rng(1)
    a, b = rng.normal(100.2, 1, 1000), rng.normal(100.0, 1, 1000)
    test, p = stats.test_difference(a, b)
    assert test == "Mann-Whitney normal"
    assert p == pytest.approx(float(intervals._mann_whitney_p(a, b)), abs=0.01)  # Monte Carlo error ~0.002
    assert stats.test_difference(a[:49], b[:49])[0] == "Mann-Whitney", "below 50 a side: the permutation p"
    assert stats.test_difference(np.round(a, 1), np.round(b, 1))[0] == "Mann-Whitney", "ties: the permutation p"
    rows = repeats("a", list(rng.normal(200, 2, 1200))) + repeats("b", list(rng.normal(100, 1, 1200)))
    assert "(Mann-Whitney normal p<1e-300)" in verdicts.verdicts(frame(rows), baseline="b").iloc[0]["verdict"]


def test_cell_keys_by_dtype_equal_key_value_by_value():
    import numpy as np

    from benchlab.analysis import cells

    runs = frame([dict(server="a", connections=c, rate=r, users=u, cds=d, label=label, scenario=s)
                  for c, r, u, d, label, s in [(10, None, 1, True, None, "hello"), (100, 5.5, 2, False, "x", None),
                                               (None, 5.5, 2, True, "x", "sleep")]])
    odd = pd.DataFrame({"scenario": [["a", "b"], "x"], "connections": np.array([1, 2], dtype="uint8"),
                        "rate": pd.Series([1, 2], dtype="Int64"), "users": [1.5, 2.0], "cds": [True, False]})
    for table in (runs, runs.iloc[:1], runs.iloc[:0], odd):
        keys, filled = cells._filled(table)
        for c in keys:
            expected = table[c].astype(object).map(cells.key).tolist()
            assert filled[c].tolist() == expected and [type(v) for v in filled[c]] == list(map(type, expected)), c


def test_the_knee_is_the_fewest_connections_near_the_best_and_the_highest_rate_served():
    from benchlab.analysis.knee import knees

    runs = pd.DataFrame({"server": ["a"] * 6 + ["b"] * 3, "status": ["ok"] * 8 + ["failed"],
                         "connections": [16, 16, 64, 64, 256, 256, 16, 64, 256],
                         "rps": [4e3, 6e3, 9.4e3, 9.8e3, 1e4, 1e4, 8e3, 7e3, 1e9],
                         "p99": [0.001] * 4 + [0.02, 0.04] + [0.001] * 3})
    table = knees(runs).set_index("server")
    column = "knee: fewest connections >= 95% of best"
    assert table.loc["a", column] == 64 and table.loc["a", "best at connections"] == 256, "9.6k >= 95% of 10k"
    assert table.loc["a", "p99 at knee (ms)"] == 1.0
    assert table.loc["b", column] == 16 and table.loc["b", "best rps"] == 8e3, "a failed run is not the best"
    assert knees(runs, 0.99).set_index("server").loc["a", "knee: fewest connections >= 99% of best"] == 256
    rated = pd.DataFrame({"server": ["a"] * 3, "status": ["ok"] * 3, "rate": [200, 400, 800],
                          "rps": [200.0, 396.0, 500.0], "p99": [0.001, 0.002, 0.5]})
    row = knees(rated, by_rate=True).iloc[0]
    assert row["highest rate served at >= 95% (req/s)"] == 400 and row["p99 there (ms)"] == 2.0


def test_the_permutation_p_is_scipys_exact_p_and_each_row_its_own():
    # Without ties the exact permutation p is scipy's exact Mann-Whitney p. Many rows share one null
    # distribution (counted by search), tied rows mostly have their own (every split at once), and a cell
    # past MASK_SIZE streams its splits: each row's p must be what that row alone gets, whichever path ran.
    import numpy as np
    from scipy import stats as scipy_stats

    from benchlab.analysis import intervals

    rng = np.random.default_rng(8)
    a, b = rng.normal(1.0, 1, (300, 5)), rng.normal(0.0, 1, (300, 6))
    exact = scipy_stats.mannwhitneyu(a, b, method="exact", axis=-1).pvalue
    assert np.allclose(intervals._mann_whitney_p(a, b), exact)
    tied_a, tied_b = np.round(a), np.round(b)  # ties: most rows a set of their own
    together = intervals._mann_whitney_p(tied_a, tied_b)
    alone = [intervals._mann_whitney_p(tied_a[i:i + 1], tied_b[i:i + 1])[0] for i in range(0, 300, 37)]
    assert np.array_equal(together[::37], alone)
    many_a, many_b = rng.normal(0.3, 1, (40, 60)), np.round(rng.normal(0.0, 1, (40, 60)), 1)  # Monte Carlo
    assert (60 + 60) * intervals._split_count(60, 60) > intervals.MASK_SIZE, "this cell streams its splits"
    streamed = intervals._mann_whitney_p(many_a, many_b)
    assert np.array_equal(streamed[:3], [intervals._mann_whitney_p(many_a[i:i + 1], many_b[i:i + 1])[0]
                                         for i in range(3)])
    assert ((streamed > 0) & (streamed <= 1)).all() and streamed.mean() < 0.5, "a shift of 0.3 sd, 60 a side"


def test_a_round_pairing_left_short_by_a_missing_value_says_how_many_rounds_it_needs():
    # 6 rounds in common, so judged by round; one round's p99 is missing, which leaves 5 pairs: no sign flip can
    # reach 0.05, and the verdict says what it needs rather than "2 each".
    rows = [{"server": s, "suite": "x", "repeat": r, "status": "ok", "scenario": "hello", "id": f"{s}{r}",
             "p99": (math.nan if (s, r) == ("a", 3) else 0.010 * (1.1 if s == "a" else 1.0) * (1 + 0.01 * r))}
            for r in range(1, 7) for s in ("a", "b")]
    verdict = verdicts.verdicts(pd.DataFrame(rows), "p99", baseline="b").iloc[0]
    assert verdict["test"] == "none" and "at 5 rounds (at least 6 rounds are needed)" in verdict["verdict"]
