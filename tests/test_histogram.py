"""The latency histogram against the raw latencies it stands for, its file, merging, and the merged cells.

Unit tests need nothing; the integration tests run real servers with real h2load and wrk, a few seconds each.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

import benchlab
from benchlab.analysis import tails
from benchlab.analysis.suite import Suite
from benchlab.errors import ResultsError
from benchlab.running.drivers import h2load, wrk
from benchlab.running.drivers.latency import percentile
from benchlab.store import histogram
from benchlab.store.histogram import Histogram
from benchlab.store.results import Run, save

QS = (0.01, 1, 25, 50, 75, 90, 99, 99.9, 99.99, 100)
RESOLUTION = 0.005  # a bucket's representative is within half of the 1% bucket width of every value in it


def lognormal(n: int, seed: int, median: float = 0.002, sigma: float = 0.8) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(math.log(median), sigma, n)


def assert_percentiles_match(h: Histogram, raw, qs=QS) -> None:
    ordered = sorted(raw)
    for q in qs:
        exact = percentile(ordered, q)
        assert h.percentile(q) == pytest.approx(exact, rel=RESOLUTION, abs=1e-12), q


def same(a: Histogram, b: Histogram) -> bool:
    """Equal buckets and extremes; the sums only to rounding (they were added in another order)."""
    return (a.counts, a.zeros, a.min, a.max) == (b.counts, b.zeros, b.min, b.max) and math.isclose(a.total, b.total)


# --- the histogram ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_percentiles_match_the_raw_latencies_within_the_resolution(seed):
    raw = lognormal(20_000, seed)
    h = Histogram.of(raw)
    assert_percentiles_match(h, raw)
    assert (h.count, h.min, h.max) == (len(raw), raw.min(), raw.max())
    assert h.mean == pytest.approx(raw.mean(), rel=1e-12)


def test_the_resolution_is_what_the_bucket_width_says():
    # The worst case sits at a bucket's edge: half a bucket (0.5%) from the representative, never more.
    edges = histogram.UNIT * histogram.RATIO ** (np.arange(100, 2000) + 0.4999)
    h = [Histogram.of([v]).percentiles([50])[0] for v in edges[::97]]
    # one value alone: the clamp to the exact min and max gives it back; in company it is the representative
    assert h == pytest.approx(edges[::97].tolist(), rel=1e-12)
    pairs = [Histogram.of([1e-9, v, 1e3]).percentile(50) / v - 1 for v in edges[::97]]
    assert max(map(abs, pairs)) == pytest.approx(0.005, abs=1e-4)


def test_value_count_pairs_are_the_same_as_the_raw_values():
    raw = np.round(lognormal(5_000, 7) * 1e6) * 1e-6  # whole microseconds, as wrk and h2load write them
    values, counts = np.unique(raw, return_counts=True)
    assert same(Histogram.of_counts(values, counts), Histogram.of(raw))


def test_merging_is_adding_counts_and_equals_the_histogram_of_all_latencies():
    runs = [lognormal(3_000, seed, median=0.001 * (seed + 1)) for seed in range(3)]
    merged = Histogram.merge(Histogram.of(r) for r in runs)
    together = np.concatenate(runs)
    assert merged.counts == Histogram.of(together).counts and merged.count == len(together)
    assert merged.mean == pytest.approx(together.mean(), rel=1e-12)
    assert_percentiles_match(merged, together)
    # ... and not the mean of the runs' percentiles, which is what the summary used to show
    mean_p99 = np.mean([percentile(sorted(r), 99) for r in runs])
    assert abs(merged.percentile(99) / mean_p99 - 1) > 0.05


def test_zero_latencies_have_their_own_bucket():
    # JMeter writes whole milliseconds: a fast local answer is 0 ms, and the median may be 0.
    raw = [0.0] * 60 + [0.001] * 39 + [0.004]
    h = Histogram.of(raw)
    assert (h.zeros, h.percentile(50), h.percentile(60), h.min) == (60, 0.0, 0.0, 0.0)
    assert h.percentile(61) == pytest.approx(0.001, rel=RESOLUTION) and h.percentile(100) == 0.004


def test_an_empty_histogram_has_no_percentiles():
    h = Histogram.merge([])
    assert h.count == 0 and math.isnan(h.percentile(99)) and math.isnan(h.mean)


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        Histogram.of([0.001, math.nan])
    with pytest.raises(ValueError):
        Histogram.of_counts([0.001], [1, 2])
    with pytest.raises(ValueError):
        Histogram.of([0.001]).percentile(101)


# --- the file ---------------------------------------------------------------------------------------------

def test_the_file_round_trips_and_is_small(tmp_path):
    raw = lognormal(100_000, 3)
    h = Histogram.of(raw, source="test")
    path = h.save(tmp_path)
    assert path.name == "latency.json" and path.stat().st_size < 20_000
    back = histogram.read(tmp_path)
    assert back == h and back.source == "test"
    assert_percentiles_match(back, raw)


def test_a_run_without_a_histogram_reads_as_none(tmp_path):
    assert histogram.read(tmp_path) is None and histogram.read(None) is None


def test_a_newer_or_damaged_file_is_refused(tmp_path):
    doc = Histogram.of([0.001, 0.002]).to_json()
    (tmp_path / "latency.json").write_text(json.dumps({**doc, "version": 99}))
    with pytest.raises(ResultsError, match="newer benchlab"):
        histogram.read(tmp_path)
    (tmp_path / "latency.json").write_text(json.dumps({**doc, "count": 3}))
    with pytest.raises(ResultsError, match="damaged"):
        histogram.read(tmp_path)
    (tmp_path / "latency.json").write_text(json.dumps({**doc, "ratio": 1.02}))
    with pytest.raises(ResultsError, match="another size"):
        histogram.read(tmp_path)


def test_parsers_of_each_tool_give_the_same_histogram():
    assert same(wrk.distribution("BENCHLAB_LATENCY 1000:2,2000:1"), Histogram.of([0.001, 0.001, 0.002]))
    assert wrk.distribution("no line") is None
    log = "1\t200\t1000\n2\t200\t2000\n3\t200\t1000\n"
    assert same(h2load.distribution(log), Histogram.of([0.001, 0.002, 0.001]))


# --- merged cells -----------------------------------------------------------------------------------------

def stored_suite(tmp_path, latencies: dict[str, list], *, histograms: bool = True) -> Suite:
    """Runs of one cell per server, each stored with its histogram, read back as benchlab.load does."""
    for server, runs in latencies.items():
        for repeat, raw in enumerate(runs, start=1):
            directory = tmp_path / f"{server}-{repeat}"
            directory.mkdir()
            ordered = sorted(raw)
            run = Run(id=f"{server}-{repeat}", metadata={},
                      params={"server": server, "scenario": "hello", "load": "duration", "driver": "wrk",
                              "connections": 8, "repeat": repeat},
                      metrics={"rps": 1000.0, "p50": percentile(ordered, 50), "p99": percentile(ordered, 99)})
            save(run, directory)
            if histograms:
                Histogram.of(raw).save(directory)
    return benchlab.load(tmp_path)


def test_suite_latency_merges_the_repeats_of_each_cell(tmp_path):
    runs = {"a": [lognormal(4_000, s) for s in range(3)],
            "b": [lognormal(4_000, 10 + s, median=0.004) for s in range(3)]}
    suite = stored_suite(tmp_path, runs)
    frame = suite.latency()
    assert list(frame.columns[-7:]) == ["percentile", "latency_s", "low", "high", "method", "n", "count"]
    assert sorted(frame["percentile"].unique()) == [50, 90, 99, 99.9, 99.99, 100]
    for server, raws in runs.items():
        together = sorted(np.concatenate(raws))
        mine = frame[frame["server"] == server].set_index("percentile")
        for q, row in mine.iterrows():
            assert row["latency_s"] == pytest.approx(percentile(together, q), rel=RESOLUTION)
            assert row["low"] <= row["latency_s"] <= row["high"] and row["method"] == "run bootstrap"
            assert (row["n"], row["count"]) == (3, 12_000)
    slow, fast = (frame.loc[frame["server"] == server, "latency_s"].iloc[0] for server in ("b", "a"))
    assert slow > fast


def test_the_summary_p99_is_the_merged_one_and_the_table_keeps_each_runs(tmp_path):
    # One slow run among three: the merged p99 is the p99 of all requests, not the mean of three p99s.
    runs = {"a": [lognormal(2_000, 1), lognormal(2_000, 2), lognormal(2_000, 3, median=0.02)],
            "b": [lognormal(2_000, 4), lognormal(2_000, 5), lognormal(2_000, 6)]}
    suite = stored_suite(tmp_path, runs)
    row = suite.summary(["rps", "p99"]).set_index(["server", "metric"]).loc[("a", "p99")]
    together = sorted(np.concatenate(runs["a"]))
    assert row["mean"] == pytest.approx(percentile(together, 99), rel=RESOLUTION)
    assert row["ci_method"] == "merged, run bootstrap" and row["ci_low"] <= row["mean"] <= row["ci_high"]
    b99 = percentile(sorted(np.concatenate(runs["b"])), 99)
    b = suite.summary(["p99"]).set_index("server").loc["b"]  # a is the baseline
    assert b["ratio"] == pytest.approx(b99 / percentile(together, 99), rel=2 * RESOLUTION)
    assert b["ratio_method"] == "run bootstrap" and b["ratio_low"] <= b["ratio"] <= b["ratio_high"]
    own = [percentile(sorted(r), 99) for r in runs["a"]]
    table = suite.table("p99").loc["a"]
    assert [table[f"fork {i}"] for i in (1, 2, 3)] == own


def test_runs_without_histograms_still_load_and_keep_the_old_summary(tmp_path):
    runs = {"a": [lognormal(500, 1), lognormal(500, 2)]}
    suite = stored_suite(tmp_path, runs, histograms=False)
    assert suite.latency().empty
    row = suite.summary(["p99"]).iloc[0]
    assert row["ci_method"] == "cox" and row["mean"] == pytest.approx(np.mean([percentile(sorted(r), 99)
                                                                                for r in runs["a"]]))


def test_one_run_has_no_interval(tmp_path):
    frame = stored_suite(tmp_path, {"a": [lognormal(500, 1)]}).latency(percentiles=(99,))
    assert frame["method"].tolist() == ["none"] and math.isnan(frame["low"].iloc[0])


def test_the_run_bootstrap_draws_only_runs_that_exist():
    runs = [Histogram.of([0.001] * 100), Histogram.of([0.002] * 100), Histogram.of([0.003] * 100)]
    merged, draws = tails.resampled(runs, [50])
    assert merged[0] == pytest.approx(0.002, rel=RESOLUTION)
    nearest = {min((0.001, 0.002, 0.003), key=lambda v: abs(v - d)) for d in draws[:, 0]}
    assert nearest == {0.001, 0.002, 0.003}
    assert all(min(abs(d / v - 1) for v in (0.001, 0.002, 0.003)) <= RESOLUTION for d in draws[:, 0])


@pytest.mark.parametrize("seed", range(4))
def test_the_windowed_bootstrap_gives_exactly_the_percentiles_of_the_whole_merge(seed):
    # drawn() multiplies only the buckets near each percentile; it must equal merging every bucket
    rng = np.random.default_rng(seed)
    runs = [Histogram.of(np.concatenate([lognormal(int(rng.integers(50, 3_000)), seed * 100 + i,
                                                   median=0.001 * rng.uniform(0.5, 4), sigma=rng.uniform(0.2, 1.5)),
                                         np.zeros(int(rng.integers(0, 3)))]))
            for i in range(int(rng.integers(2, 150)))]
    index, counts, mins, maxes = tails._matrix(runs)
    weights = rng.multinomial(len(runs), [1 / len(runs)] * len(runs), size=300)
    weights[0] = 0  # an empty draw: no percentiles
    weights[1] = 0
    weights[1, 0] = len(runs)  # one run drawn every time: its own percentiles
    qs = [0.01, 1, 50, 90, 99, 99.9, 99.99, 100]
    got = tails.drawn(index, counts, weights, qs, mins.min(), maxes.max())
    want = histogram.quantiles(index, weights @ counts, qs, mins.min(), maxes.max())
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[0, :-1]).all() and got[1, 2] == pytest.approx(runs[0].percentile(50), rel=1e-12)


# --- real runs: every driver keeps its histogram; merged cells against the raw per-request log ----------------

@pytest.fixture(scope="module")
def jetty(jars, tmp_path_factory):
    """A Spring Boot Jetty server on core 0, started once for the module and stopped by its pid."""
    from benchlab.running import backends, servers
    from benchlab.running.backends.local import LocalBackend

    log = tmp_path_factory.mktemp("jetty") / "server.log"
    launch = backends.Launch(run_id="histogram", port=backends.free_port(), cpus=(0,), log_path=log)
    instance = LocalBackend().start(servers.get("spring-jetty"), launch)
    yield benchlab.Server.from_url(instance.url + "/hello", name="jetty")
    instance.stop()


@pytest.mark.integration
def test_a_three_repeat_h2load_compare_merges_to_the_p99_of_all_its_requests(jetty, tmp_path):
    suite = benchlab.compare([jetty], ["/hello"], load="count", driver="h2load", users=[8], loops=[250], repeats=3,
                             warmup="1s", results_dir=tmp_path, progress=False)
    assert len(suite) == 3 and set(suite.runs["status"]) == {"ok"}
    raw = []
    for run in suite.records:
        log = (tmp_path / run.id / "h2load-measure.log").read_text()
        raw += [int(line.split("\t")[2]) * 1e-6 for line in log.splitlines() if line.strip()]
        assert "latency.json" in run.files
    assert len(raw) == 3 * 8 * 250
    ordered = sorted(raw)
    frame = benchlab.load(tmp_path).latency(percentiles=(50, 99, 99.9, 100)).set_index("percentile")
    for q in (50, 99, 99.9, 100):
        assert frame.loc[q, "latency_s"] == pytest.approx(percentile(ordered, q), rel=RESOLUTION), q
    assert (frame.loc[99, "n"], frame.loc[99, "count"]) == (3, len(raw))
    assert frame.loc[99, "low"] <= frame.loc[99, "latency_s"] <= frame.loc[99, "high"]
    # the per-run p99s (the table) are each run's own; their mean is not the merged p99 in general
    own = sorted(suite.table("p99").iloc[0][["fork 1", "fork 2", "fork 3"]])
    merged = frame.loc[99, "latency_s"]
    assert own[0] <= merged * (1 + RESOLUTION) and own[-1] >= merged * (1 - RESOLUTION)


@pytest.mark.integration
def test_a_wrk_run_keeps_its_corrected_distribution_which_agrees_with_wrks_own_p99(jetty, tmp_path):
    run = benchlab.run(jetty, duration="2s", warmup="1s", connections=8, results_dir=tmp_path)
    h = histogram.read(tmp_path / run.id)
    m = run.metrics
    assert h is not None and "coordinated-omission" in run.metadata["latency_corrected"]
    assert h.count >= m["requests"]  # wrk's correction adds samples, never removes any
    for name, q in (("p50", 50), ("p99", 99), ("p999", 99.9)):
        assert h.percentile(q) == pytest.approx(m[name], rel=0.01), name
    assert (h.min, h.max) == (pytest.approx(m["lat_min"]), pytest.approx(m["lat_max"]))
    assert BENCHLAB_LATENCY_LINE.search((tmp_path / run.id / "wrk.out").read_text())


BENCHLAB_LATENCY_LINE = re.compile(r"^BENCHLAB_LATENCY \d+:\d+", re.M)


@pytest.mark.integration
@pytest.mark.parametrize("driver,options", [
    ("vegeta", {"load": "rate", "rate": 200, "duration": "2s"}),
    ("jmeter", {"load": "count", "users": 2, "loops": 100}),
])
def test_vegeta_and_jmeter_keep_their_distribution(jetty, tmp_path, driver, options):
    run = benchlab.run(jetty, driver=driver, warmup="1s", results_dir=tmp_path, **options)
    h = histogram.read(tmp_path / run.id)
    assert h is not None and h.count == run.metrics["requests"] and run.metadata["latency_corrected"] is None
    # JMeter's whole milliseconds make p99 a whole number of ms: the bucket is within 0.5% of it
    assert h.percentile(99) == pytest.approx(run.metrics["p99"], rel=RESOLUTION, abs=1e-9)
    assert h.max == pytest.approx(run.metrics["lat_max"])
