"""Chart specs: each chart's encodings, fields and data, read from ``chart.to_dict()``.

The frames are built from real :class:`benchlab.store.results.Run` records, so they have exactly the columns
``results.frame()`` gives; every chart is also rendered to SVG through vl-convert, which catches specs
that Vega-Lite accepts as JSON but cannot draw.
"""

from __future__ import annotations

import pandas as pd
import pytest

from benchlab import schema
from benchlab.analysis import stats
from benchlab.analysis.suite import Suite
from benchlab.errors import BenchlabError, ResultsError
from benchlab.present import charts
from benchlab.store import results

SERVERS = ("spring-tomcat", "spring-jetty")


def make_run(server: str, repeat: int, *, connections: int = 200, rps: float = 1000.0, scenario: str = "hello",
             load: str = "duration", rate: float | None = None, p999: float | None = 0.012,
             status: str = "ok") -> results.Run:
    metrics = {name: None for name in schema.METRICS}
    if status == "ok":
        metrics.update(requests=int(rps * 2), elapsed_s=2.0, rps=rps, p50=0.001 * repeat, p75=0.002, p90=0.004,
                       p99=0.008, p999=p999, p9999=None if p999 is None else p999 * 1.5, errors_connect=0,
                       target_rps=rate)
    params = {"server": server, "scenario": scenario, "driver": "vegeta" if load == "rate" else "wrk",
              "load": load, "connections": connections, "threads": 1, "rate": rate, "duration": 2.0,
              "warmup": 1.0, "backend": "local", "server_cpus": [0], "load_cpus": [1], "repeat": repeat}
    return results.Run(id=f"{server}-{scenario}-{connections}-{rate}-{repeat}", params=params, metrics=metrics,
                       metadata={"server": {"java_version": "17.0.15"}}, status=status,
                       error=None if status == "ok" else "boom",
                       samples=tuple((0.25 * i, role, 50.0 + i, 2.0**27 + i) for i in range(1, 5)
                                     for role in ("server", "load")))


def frame(*runs: results.Run) -> pd.DataFrame:
    return results.frame(runs)


@pytest.fixture
def suite_runs() -> pd.DataFrame:
    runs = [make_run(s, r, connections=c, rps=1000 + 100 * r + (500 if s == "spring-jetty" else 0))
            for r in (1, 2, 3) for c in (16, 64) for s in SERVERS]
    runs.append(make_run("spring-jetty", 4, connections=16, status="failed"))
    return frame(*runs)


def layers(spec: dict) -> list[dict]:
    return spec["spec"]["layer"] if "spec" in spec else spec["layer"]


def rendered(chart) -> str:
    """The chart as a notebook shows it: a Vega-Lite 5 spec JupyterLab 4.6.6 draws, and its static SVG."""
    from benchlab.present import notebook
    from tests import vegalite

    bundle, _ = notebook._chart_bundle(chart.to_dict())
    spec = bundle[notebook.VEGALITE_MIMETYPE]
    assert spec["$schema"] == notebook.VEGALITE_SCHEMA and set(bundle) == {notebook.VEGALITE_MIMETYPE, "image/svg+xml",
                                                                           "text/plain"}
    assert vegalite.problems(spec) == []
    svg = bundle["image/svg+xml"]
    assert svg.startswith("<svg") and "<path" in svg
    return svg


def test_throughput_has_mean_ci_and_repeats_faceted_by_scenario_and_load(suite_runs):
    chart = charts.throughput(suite_runs)
    spec = chart.to_dict()
    assert "row" not in spec["facet"], "one scenario is no facet of one value"
    assert spec["facet"]["column"]["title"] == "scenario hello"
    assert spec["facet"]["column"]["field"] == "load_point"
    assert spec["facet"]["column"]["sort"] == ["16 connections", "64 connections"]
    bar, errorbar, dots = layers(spec)
    assert bar["mark"]["type"] == "bar" and bar["encoding"]["y"]["field"] == "value"
    assert errorbar["mark"]["type"] == "errorbar"
    assert (errorbar["encoding"]["y"]["field"], errorbar["encoding"]["y2"]["field"]) == ("ci_low", "ci_high")
    assert dots["mark"]["type"] == "point"
    for layer in (bar, dots):
        assert layer["encoding"]["x"] == {**layer["encoding"]["x"], "field": "server", "type": "nominal"}
        assert layer["encoding"]["tooltip"]
    assert "requests/s" in spec["title"]["text"] and spec["title"]["subtitle"]
    values = list(spec["datasets"].values())[0]
    cells = [v for v in values if v["kind"] == "cell"]
    assert len(cells) == 4 and len([v for v in values if v["kind"] == "run"]) == 12   # the failed run is left out
    jetty16 = next(c for c in cells if c["server"] == "spring-jetty" and c["load_point"] == "16 connections")
    # mean 1700 of 1600, 1700, 1800, with the summary's interval of that mean (Cox's, on the logs)
    assert jetty16["value"] == pytest.approx(1700)
    assert (jetty16["ci_low"], jetty16["ci_high"]) == pytest.approx(stats.mean_ci([1600, 1700, 1800])[:2])
    rendered(chart)


def test_throughput_with_one_repeat_has_no_interval():
    chart = charts.throughput(frame(make_run("spring-tomcat", 1), make_run("spring-jetty", 1)))
    values = list(chart.to_dict()["datasets"].values())[0]
    cell = next(v for v in values if v["kind"] == "cell")
    assert cell["n"] == 1 and cell["ci_low"] is None and cell["ci_high"] is None
    assert [layer["mark"]["type"] for layer in layers(chart.to_dict())] == ["bar", "point"]   # no error bars
    rendered(chart)


def test_latency_curve_is_on_the_nines_scale_and_drops_missing_percentiles(suite_runs):
    imported = frame(make_run("spring-tomcat", 1, p999=None), make_run("spring-jetty", 1, p999=None))
    for runs in (suite_runs, imported):
        chart = charts.latency(runs)
        spec = chart.to_dict()
        line, dots = layers(spec)
        x = line["encoding"]["x"]
        assert x["field"] == "nines" and x["scale"]["type"] == "log"
        assert x["axis"]["values"] == [2.0, 10.0, 100.0, 1000.0, 10000.0]
        assert "'99.9'" in x["axis"]["labelExpr"] and "'99.99'" in x["axis"]["labelExpr"]
        assert line["encoding"]["y"]["field"] == "latency_ms" and line["encoding"]["y"]["aggregate"] == "mean"
        assert line["encoding"]["color"]["field"] == "server"
        assert dots["encoding"]["y"]["field"] == "latency_ms"
        assert spec["title"]["text"].endswith("nines scale") and "(ms)" in spec["title"]["text"]
        rendered(chart)
    values = list(chart.to_dict()["datasets"].values())[0]
    assert {v["percentile"] for v in values} == {50.0, 75.0, 90.0, 99.0}      # no p99.9, p99.99: left out
    assert all(v["latency_ms"] is not None for v in values)
    p50 = next(v for v in values if v["percentile"] == 50.0)
    assert p50["latency_ms"] == pytest.approx(1.0) and p50["nines"] == pytest.approx(2.0)


def test_nines_positions():
    assert [charts.nines(p) for p in (50, 90, 99, 99.9, 99.99)] == [2, 10, 100, 1000, 10000]


def test_sweep_draws_rps_and_p99_against_connections(suite_runs):
    chart = charts.sweep(suite_runs)
    spec = chart.to_dict()
    assert spec["facet"]["column"]["field"] == "panel"
    assert spec["resolve"]["scale"]["y"] == "independent"
    line, dots = layers(spec)
    assert line["mark"]["type"] == "line"
    assert line["encoding"]["x"]["field"] == "connections" and line["encoding"]["x"]["scale"]["type"] == "log"
    assert line["encoding"]["x"]["axis"]["values"] == [16, 64]
    assert line["encoding"]["color"]["field"] == "server"
    values = list(spec["datasets"].values())[0]
    assert {v["panel"] for v in values} == {"throughput (requests/s)", "p99 latency (ms)"}
    assert {v["value"] for v in values if v["panel"] == "p99 latency (ms)"} == {8.0}
    rendered(chart)


def test_resource_timeline_shows_server_cpu_and_rss_in_mib(suite_runs):
    runs = [make_run("spring-tomcat", 1), make_run("spring-jetty", 1)]
    samples = pd.concat([r.samples_frame() for r in runs], ignore_index=True)
    chart = charts.resources(samples, runs=frame(*runs))
    spec = chart.to_dict()
    cpu, rss = spec["vconcat"]
    assert cpu["encoding"]["y"]["field"] == "cpu" and "% of one core" in cpu["encoding"]["y"]["title"]
    assert rss["encoding"]["y"]["field"] == "rss_mib" and "MiB" in rss["encoding"]["y"]["title"]
    assert cpu["encoding"]["x"]["field"] == "t" and cpu["encoding"]["detail"]["field"] == "id"
    values = list(spec["datasets"].values())[0]
    assert len(values) == 8                                                      # server samples only
    assert values[0]["rss_mib"] == pytest.approx(128.0, abs=0.01)
    assert values[0]["load_point"] == "200 connections"
    rendered(chart)


def test_warmup_curves_draw_a_line_per_run_and_dash_a_warm_up_that_hit_its_limit():
    from dataclasses import replace

    from benchlab.analysis import steady

    def warmed(run, rps, ended):
        slices = [{"t": 5.0 * (i + 1), "rps": value, "p99": 0.01} for i, value in enumerate(rps)]
        return replace(run, metadata={**run.metadata, "warmup": {"mode": "auto", "steady": ended, "slices": slices}})

    runs = [warmed(make_run("spring-tomcat", 1), [500, 900, 1000, 1005, 1002], True),
            warmed(make_run("spring-jetty", 1), [300, 600, 800, 900], False), make_run("spring-jetty", 2)]
    curves = steady.curves(runs)
    assert len(curves) == 9, "a fixed warm-up (the third run) adds no slice"
    chart = charts.warmup(curves, runs=frame(*runs))
    spec = chart.to_dict()
    rps, p99 = spec["vconcat"]
    assert rps["encoding"]["y"]["field"] == "rps" and p99["encoding"]["y"]["field"] == "p99_ms"
    assert rps["encoding"]["detail"]["field"] == "id" and rps["encoding"]["strokeDash"]["field"] == "ended"
    values = list(spec["datasets"].values())[0]
    assert {v["ended"] for v in values if v["server"] == "spring-jetty"} == {"limit reached"}
    assert values[0]["p99_ms"] == pytest.approx(10.0)
    rendered(chart)
    with pytest.raises(ResultsError, match="only warmup='auto' keeps one"):
        charts.warmup(steady.curves(runs[2:]))


def test_published_comparison_puts_our_ratio_beside_theirs(suite_runs):
    reference = pd.DataFrame(
        [("wrk", "tomcat", 1, "rps", 100.0, "1/s"), ("wrk", "tomcat", 2, "rps", 100.0, "1/s"),
         ("wrk", "jetty", 1, "rps", 170.0, "1/s"), ("wrk", "jetty", 2, "rps", 190.0, "1/s")],
        columns=["experiment", "server", "run", "metric", "value", "unit"])
    ours = suite_runs[suite_runs["connections"] == 64]
    chart = charts.published(ours, reference, baseline="spring-tomcat")
    spec = chart.to_dict()
    bars, dots, parity = spec["layer"]
    assert bars["encoding"]["xOffset"]["field"] == "source" and bars["encoding"]["y"]["field"] == "ratio"
    assert parity["mark"]["type"] == "rule"
    values = [v for data in spec["datasets"].values() for v in data if "source" in v]
    means = {(v["source"], v["server"]): v["ratio"] for v in values if v["kind"] == "mean"}
    assert means[("published", "jetty")] == pytest.approx(1.8)
    assert means[("benchlab (ours)", "jetty")] == pytest.approx(1700 / 1200)
    assert means[("benchlab (ours)", "tomcat")] == pytest.approx(1.0)
    rendered(chart)
    with pytest.raises(ResultsError, match="baseline 'spring-undertow'"):
        charts.published(ours, reference, baseline="spring-undertow")


def test_rate_sweep_plots_p99_against_achieved_rps_in_target_order():
    runs = frame(*[make_run(s, 1, load="rate", rate=rate, rps=min(rate, 700.0)) for s in SERVERS
                   for rate in (200.0, 400.0, 800.0)], make_run("spring-jetty", 1))
    chart = charts.rate_sweep(runs)
    spec = chart.to_dict()
    line, dots = layers(spec)
    assert line["encoding"]["x"]["field"] == "rps" and line["encoding"]["y"]["field"] == "p99_ms"
    assert line["encoding"]["order"]["field"] == "target"
    assert spec["spec"]["layer"][0]["transform"][0]["aggregate"]
    values = list(spec["datasets"].values())[0]
    assert len(values) == 6                                            # the duration run is left out
    assert sorted({v["target"] for v in values}) == [200.0, 400.0, 800.0]
    rendered(chart)


def test_every_chart_refuses_a_frame_without_finished_runs():
    failed = frame(make_run("spring-tomcat", 1, status="failed"))
    for chart in (charts.throughput, charts.latency, charts.sweep, charts.rate_sweep):
        with pytest.raises(ResultsError, match="failed"):
            chart(failed)
        with pytest.raises(BenchlabError, match="no runs"):
            chart(failed.iloc[0:0])


def test_describe_and_machine_make_the_subtitle(suite_runs):
    note = charts.describe(suite_runs, machine=charts.machine({"cpu": {"model": "AMD EPYC", "logical_cpus": 2}}))
    assert note == ("wrk, 2 s measured after 1 s warm-up, 1 load thread, backend local, server cores 0, "
                    "load cores 1, Java 17.0.15, 3 repeats, AMD EPYC, 2 cores")
    spec = charts.throughput(suite_runs, note=note).to_dict()
    assert " ".join(spec["title"]["subtitle"]).replace(", ", ",").replace(",", ", ") == note


def test_a_sweep_of_one_point_still_draws():
    chart = charts.sweep(frame(make_run("spring-tomcat", 1, connections=64),
                               make_run("spring-jetty", 1, connections=64)))
    x = layers(chart.to_dict())[0]["encoding"]["x"]
    assert x["scale"] == {"type": "log", "base": 2} and x["axis"]["values"] == [64]
    rendered(chart)


# --- latency spectrum of merged cells ------------------------------------------------------------------------

def test_spectrum_draws_merged_lines_bands_and_faint_runs(tmp_path):
    import numpy as np

    from benchlab.store.histogram import Histogram

    records = []
    for i, run in enumerate(make_run(s, r, connections=16) for r in (1, 2, 3) for s in SERVERS):
        directory = tmp_path / run.id
        results.save(run, directory)
        Histogram.of(np.random.default_rng(i).lognormal(-6, 0.5, 2000)).save(directory)
        records.append(results.read(directory / "run.json"))
    suite = Suite(records)
    chart = charts.spectrum(suite.latency(), suite.runs)
    spec = chart.to_dict()
    run_lines, band, lines = layers(spec)
    assert lines["encoding"]["x"]["field"] == "nines" and lines["encoding"]["x"]["scale"]["type"] == "log"
    assert lines["encoding"]["y"]["scale"]["type"] == "log"
    assert run_lines["mark"]["opacity"] < 0.5 and run_lines["encoding"]["detail"]["field"] == "id"
    assert band["mark"]["type"] == "area"
    assert "'max'" in lines["encoding"]["x"]["axis"]["labelExpr"]
    data = pd.DataFrame(next(iter(spec["datasets"].values())))
    merged = data[data["kind"] == "merged"]
    assert sorted(merged["percentile"].unique()) == [50, 90, 99, 99.9, 99.99, 100]
    assert set(merged["server"]) == set(SERVERS)
    assert set(data.loc[data["kind"] == "run", "id"]) == {r.id for r in records}
    rendered(chart)
    alone = charts.spectrum(suite.latency()).to_dict()
    assert len(layers(alone)) == 2


def test_spectrum_without_histograms_says_what_to_chart_instead(tmp_path):
    import benchlab.analysis.tails as tails

    empty = tails.latency([], results.frame([]))
    with pytest.raises(ResultsError, match="charts.latency"):
        charts.spectrum(empty)


def test_runs_of_different_settings_are_drawn_apart_never_pooled():
    """The explore panel's second press (3 s after 2 s) once made '2 repeats' with an interval far off the bars."""
    def timed(server, rps, duration):
        run = make_run(server, 1, rps=rps)
        return results.Run(id=f"{run.id}-{duration}", params={**run.params, "duration": duration},
                           metrics=run.metrics, metadata=run.metadata, status="ok")

    runs = frame(timed("spring-tomcat", 1000.0, 2.0), timed("spring-tomcat", 5000.0, 3.0),
                 timed("spring-jetty", 1200.0, 2.0), timed("spring-jetty", 5200.0, 3.0))
    spec = charts.throughput(runs).to_dict()
    cells = [v for v in list(spec["datasets"].values())[0] if v["kind"] == "cell"]
    assert len(cells) == 4 and {c["n"] for c in cells} == {1}                # one run per setup, no pooled interval
    assert spec["facet"]["column"]["sort"] == ["200 connections, 2 s measured", "200 connections, 3 s measured"]
    tomcat = sorted((c["load_point"], c["value"]) for c in cells if c["server"] == "spring-tomcat")
    assert [value for _, value in tomcat] == [1000.0, 5000.0]
    latency = charts.latency(runs).to_dict()
    assert {v["load_point"] for v in list(latency["datasets"].values())[0]} == set(spec["facet"]["column"]["sort"])
    note = charts.describe(runs)
    assert "1 repeat," in note and "duration differs between runs: drawn apart, never pooled" in note
    rendered(charts.throughput(runs))


def test_subtitles_wrap_at_the_chart_width_and_legends_have_room(suite_runs):
    note = "a fairly long description of what was measured, " * 6
    one = charts.throughput(suite_runs[suite_runs["connections"] == 16], note=note).to_dict()
    two = charts.throughput(suite_runs, note=note).to_dict()
    assert " ".join(one["title"]["subtitle"]) == note.strip()
    widest = max(map(len, one["title"]["subtitle"]))
    assert 40 <= widest <= 70 and max(map(len, two["title"]["subtitle"])) > widest   # two panels: wider lines
    color = layers(one)[0]["encoding"]["color"]
    assert color["legend"]["labelLimit"] >= 200


def test_a_sweep_draws_each_setting_as_its_own_line():
    def timed(server, connections, duration):
        run = make_run(server, 1, connections=connections, rps=1000.0 * duration)
        return results.Run(id=f"{run.id}-{duration}", params={**run.params, "duration": duration},
                           metrics=run.metrics, metadata=run.metadata, status="ok")

    mixed = charts.sweep(frame(*[timed("spring-tomcat", c, d) for c in (16, 64) for d in (2.0, 3.0)])).to_dict()
    line = layers(mixed)[0]
    assert line["encoding"]["strokeDash"]["field"] == "setup"
    assert {v["setup"] for v in list(mixed["datasets"].values())[0]} == {"2 s measured", "3 s measured"}
    one = charts.sweep(frame(*[timed("spring-tomcat", c, 2.0) for c in (16, 64)])).to_dict()
    assert "strokeDash" not in layers(one)[0]["encoding"]
    rendered(charts.sweep(frame(*[timed("spring-tomcat", c, d) for c in (16, 64) for d in (2.0, 3.0)])))


def test_describe_names_an_auto_warm_up_without_a_number():
    # warmup="auto" (the default) is stored as the word; describe() once formatted it as a number and failed
    runs = frame(make_run("spring-tomcat", 1))
    runs["warmup"] = "auto"
    assert "2 s measured after auto warm-up" in charts.describe(runs)


def test_the_throughput_charts_interval_is_the_summarys_with_three_windows_a_fork():
    # 2 servers x 4 forks x 3 windows: the windows of one fork share its luck, so the summary takes fork means
    runs = []
    for repeat, luck in enumerate((0.9, 1.05, 1.0, 1.1), start=1):
        for server, base in (("spring-tomcat", 1000.0), ("spring-jetty", 1400.0)):
            for iteration, noise in enumerate((0.99, 1.0, 1.01), start=1):
                run = make_run(server, repeat, rps=base * luck * noise)
                runs.append(results.Run(id=f"{run.id}-i{iteration}", metrics=run.metrics, metadata=run.metadata,
                                        params={**run.params, "window": iteration, "fork": run.id}, suite="s"))
    suite = Suite(runs)
    summary = suite.summary(["rps"])
    values = list(charts.throughput(suite.runs).to_dict()["datasets"].values())[0]
    for server in ("spring-tomcat", "spring-jetty"):
        table = summary[summary["server"] == server].iloc[0]
        drawn = next(v for v in values if v["kind"] == "cell" and v["server"] == server)
        assert table["n"] == drawn["n"] == 4
        assert (drawn["value"], drawn["ci_low"], drawn["ci_high"]) == pytest.approx(
            (table["mean"], table["ci_low"], table["ci_high"]))
    assert len([v for v in values if v["kind"] == "run"]) == 8  # a dot a fork: its windows' mean


def test_scenarios_are_rows_only_when_there_are_several_and_legends_are_solid(suite_runs):
    two = frame(*[make_run(s, r, scenario=scenario) for r in (1, 2) for s in SERVERS for scenario in ("hello", "json")])
    for chart in (charts.throughput, charts.latency, charts.sweep):
        one_spec, two_spec = chart(suite_runs).to_dict(), chart(two).to_dict()
        assert "row" not in one_spec["facet"] and one_spec["facet"]["column"]["title"] == "scenario hello"
        assert two_spec["facet"]["row"]["field"] == "scenario" and two_spec["facet"]["column"]["title"] is None
        legend = layers(one_spec)[0]["encoding"]["color"]["legend"]
        assert legend["symbolOpacity"] == 1, "a faint mark's legend dot drawn as solid as its line"
    bar = layers(charts.throughput(frame(make_run("spring-jetty", 1))).to_dict())[0]
    assert "ci_low" not in str(bar["encoding"]["tooltip"]), "the interval is one text, never 'null'"
    assert bar["encoding"]["tooltip"][2]["field"] == "ci"


def test_the_spectrum_labels_the_median_and_the_slowest_request(tmp_path):
    import importlib

    spectrum = importlib.import_module("benchlab.present.charts.spectrum")
    label = spectrum.tick_labels({spectrum._where(p): text for p, text in spectrum.TICKS.items()})
    at = {text: spectrum._where(p) for p, text in spectrum.TICKS.items()}
    assert at["50"] == 2.0 and f"datum.value == {at['max']!r} ? 'max'" in label
    assert "'0'" not in label and "min" not in label, "the left end is unlabelled: a label there sat on the median's"


def test_the_throughput_chart_follows_the_one_rule_and_keeps_its_axis():
    """A generator-bound fork is a hollow dot that says why, out of the mean; a side with none left has no bar; and
    two repeats far apart (a t interval of one degree of freedom) are cut at the axis, said in the subtitle."""
    import dataclasses

    def bound(run):
        return dataclasses.replace(run, metrics={**run.metrics, "load_cpu_mean": 97.0})

    runs = [make_run("spring-tomcat", 1, rps=1000.0), make_run("spring-tomcat", 2, rps=3000.0),
            make_run("spring-jetty", 1, rps=1500.0), bound(make_run("spring-jetty", 2, rps=900.0)),
            bound(make_run("nginx", 1, rps=5000.0)), bound(make_run("nginx", 2, rps=5100.0))]
    chart = charts.throughput(frame(*runs))
    spec = chart.to_dict()
    values = list(spec["datasets"].values())[0]
    jetty = next(v for v in values if v["kind"] == "cell" and v["server"] == "spring-jetty")
    assert jetty["value"] == 1500.0 and jetty["n"] == 1, "the bound fork is not in the mean"
    hollow = [v for v in values if v["kind"] == "left out"]
    assert {v["server"] for v in hollow} == {"spring-jetty", "nginx"} and all("generator_bound" in v["left_out"]
                                                                           for v in hollow)
    assert not any(v["kind"] == "cell" and v["server"] == "nginx" for v in values), "no bar for a side not judged"
    y = layers(spec)[0]["encoding"]["y"]["scale"]
    tomcat = next(v for v in values if v["kind"] == "cell" and v["server"] == "spring-tomcat")
    assert tomcat["ci_high"] > 1.5 * 5100.0 and y["domain"] == [0, 1.5 * 5100.0], "an absurd interval is cut"
    subtitle = spec["title"]["subtitle"]
    assert "cut at the axis" in (" ".join(subtitle) if isinstance(subtitle, list) else subtitle)
    rendered(chart)


def test_the_series_chart_shades_the_disturbed_seconds_and_draws_in_jupyterlab():
    from benchlab.analysis.suite import Suite

    samples = [(t / 4, role, cpu, 1.0, 1000.0 * t if role == "load" else None)
               for t in range(1, 41) for role, cpu in (("server", 60.0), ("load", 40.0), ("benchlab", 2.0))]
    machine = [(t / 4, group, busy if not 12 <= t < 28 else busy + 50.0, 0.0, 0.0)
               for t in range(1, 41) for group, busy in (("server", 60.0), ("load", 42.0))]
    run = make_run("spring-jetty", 1, rps=4000.0)
    run = results.Run(id=run.id, params=run.params, metrics={**run.metrics, "elapsed_s": 10.0},
                      metadata=run.metadata, samples=tuple(samples), machine=tuple(machine))
    frame_ = Suite([run]).series
    # 4 s of others from t=3 s: each sample covers the quarter second before it, so the seconds 2 to 6 hold some
    assert list(frame_["disturbed"]) == [False, False, True, True, True, True, True, False, False, False]
    chart = charts.series(frame_)
    values = list(chart.to_dict()["datasets"].values())[0]
    assert sum(v["disturbed"] for v in values) == 5
    rendered(chart)


# --- one story: a window left out or retaken is drawn as such (issue 47) ------------------------------------

def left_and_retaken() -> list[results.Run]:
    """Two servers, two forks each: Jetty's second fork left out (its JIT still compiling), and one of Tomcat's
    windows retaken (disturbed, measured again: the kept one is its first fork)."""
    import dataclasses

    runs = [make_run(s, r, rps=1000.0 + 100 * r + (300 if s == "spring-jetty" else 0)) for s in SERVERS for r in (1, 2)]
    runs[3] = dataclasses.replace(runs[3], metrics={**runs[3].metrics, "jit_share": 0.3})
    retaken = dataclasses.replace(runs[0], id=runs[0].id + "-retaken1", status="retaken",
                                  metrics={**runs[0].metrics, "rps": 600.0})
    return [*runs, retaken]


def test_a_window_left_out_or_retaken_is_drawn_hollow_with_an_outline():
    chart = charts.throughput(frame(*left_and_retaken()))
    spec = chart.to_dict()
    marks = layers(spec)[-1]
    assert marks["mark"]["filled"] is False and marks["mark"]["strokeWidth"] >= 1.5, "hollow marks have an outline"
    fill = marks["encoding"]["fill"]
    assert fill["condition"]["field"] == "server" and fill["value"] == "transparent", "a fork filled, the others not"
    assert marks["encoding"]["shape"]["legend"]["symbolFillColor"] == "transparent", "the legend's symbols hollow too"
    values = list(spec["datasets"].values())[0]
    kinds = {(v["kind"], v["left_out"]) for v in values if v["kind"] != "cell"}
    assert ("left out", "left out (jit_active)") in kinds and ("retaken", "retaken") in kinds
    jetty = next(v for v in values if v["kind"] == "cell" and v["server"] == "spring-jetty")
    assert jetty["n"] == 1 and jetty["windows"] == 1 and jetty["value"] == 1400.0, "the mean is over the used fork"
    svg = rendered(chart)
    import re

    drawn = [p for p in re.findall(r"<path[^>]*>", svg) if "graphics-symbol" in p and "kind: " in p]
    hollow = [p for p in drawn if "kind: run" not in p]
    assert len(hollow) == 2 and all('stroke-width="2"' in p and 'stroke="#' in p and " fill=" not in p
                                    for p in hollow), hollow
    assert all(' fill="#' in p for p in drawn if "kind: run" in p), "a fork used is filled"


def test_a_chart_of_windows_all_left_out_draws_their_marks_and_says_why():
    import dataclasses

    runs = [dataclasses.replace(r, metrics={**r.metrics, "jit_share": 0.3}) for r in
            (make_run("spring-jetty", 1), make_run("spring-jetty", 2))]
    spec = charts.throughput(frame(*runs)).to_dict()
    assert [layer["mark"]["type"] for layer in layers(spec)] == ["point"], "no bar, the marks"
    assert layers(spec)[0]["encoding"]["y"]["title"] == "rps (requests/s)", "the axis names the metric, not 'value'"
    subtitle = " ".join(spec["title"]["subtitle"])
    assert "none of the 2 windows can be used: 2 left out (measured while their JIT was still compiling)" in subtitle


def test_the_latency_line_is_the_mean_of_the_windows_used():
    spec = charts.latency(frame(*left_and_retaken())).to_dict()
    line, dots = layers(spec)
    assert line["transform"] == [{"filter": "(datum.standing === 'used')"}], "the mean line: the windows used"
    assert dots["encoding"]["fillOpacity"]["value"] == 0 and dots["mark"]["strokeWidth"] > 0
    standings = {v["standing"] for v in list(spec["datasets"].values())[0]}
    assert standings == {"used", "left out (jit_active)", "retaken"}


def test_no_tooltip_of_the_spectrum_says_null(tmp_path):
    """A cell of one run has no interval: its tooltip says so in words, never "low (ms): null"."""
    from benchlab.store.histogram import Histogram

    run = make_run("spring-jetty", 1)
    results.save(run, tmp_path / run.id)
    Histogram.of([0.001, 0.002, 0.004] * 50).save(tmp_path / run.id)
    suite = Suite(results.load_runs(tmp_path))
    spec = charts.spectrum(suite.latency(), suite.runs).to_dict()
    rows = list(spec["datasets"].values())[0]
    for layer in layers(spec):
        kind = "merged" if "merged" in str(layer.get("transform")) else "run"
        shown = [t["field"] for t in layer["encoding"].get("tooltip", [])]
        for row in (r for r in rows if r["kind"] == kind):
            assert all(row.get(field) is not None and row.get(field) == row.get(field) for field in shown), \
                (kind, {field: row.get(field) for field in shown})
    merged = next(r for r in rows if r["kind"] == "merged")
    assert merged["interval"] == "none: 1 run merged"


def series_of(runs: list[results.Run]):
    samples = [(t / 4, role, cpu, 1.0, 1000.0 * t if role == "load" else None)
               for t in range(1, 41) for role, cpu in (("server", 60.0), ("load", 40.0), ("benchlab", 2.0))]
    machine = [(t / 4, group, busy, 0.0, 0.0)
               for t in range(1, 41) for group, busy in (("server", 60.0), ("load", 42.0))]
    return Suite([results.Run(id=r.id, params=r.params, metrics={**r.metrics, "elapsed_s": 10.0}, metadata=r.metadata,
                              samples=tuple(samples), machine=tuple(machine), status=r.status) for r in runs]).series


def test_the_windows_chart_wraps_to_fit_its_output_area_in_one_sorted_order():
    import re

    import vl_convert

    runs = left_and_retaken() + [make_run("spring-undertow", r) for r in (1, 2, 3, 4)]
    chart = charts.series(series_of(runs))
    spec = chart.to_dict()
    assert 1 <= spec["columns"] <= 3, "rows of panels, not one row behind a scroll bar"
    order = spec["facet"]["sort"]
    assert order[:5] == ["spring-jetty r1 w1", "spring-jetty r2 w1 left out", "spring-tomcat r1 w1 retaken 1",
                         "spring-tomcat r1 w1", "spring-tomcat r2 w1"], "sorted: server, repeat, window, retakes first"
    assert len(order) == len(set(order)) == 9 and all(len(title) <= 30 for title in order), "short, every one its own"
    svg = vl_convert.vegalite_to_svg(spec)
    width = float(re.search(r'<svg[^>]*width="([\d.]+)"', svg).group(1))
    assert width <= 900, f"{width} px in an output area of about 960"
    assert svg.count(">second of the window<") == len(order), "an x axis a panel, none under an empty slot"
    rendered(chart)


def test_the_windows_chart_has_no_panel_for_a_window_without_a_throughput_second():
    frame_ = series_of(left_and_retaken())
    frame_.loc[frame_["id"] == frame_["id"].iloc[0], "rps"] = None  # spring-tomcat r1: no second of throughput
    spec = charts.series(frame_).to_dict()
    assert spec["facet"]["sort"] == ["spring-jetty r1 w1", "spring-jetty r2 w1 left out",
                                     "spring-tomcat r1 w1 retaken 1", "spring-tomcat r2 w1"]
    assert spec["columns"] == 3 and {r["run"] for r in list(spec["datasets"].values())[0]} == set(spec["facet"]["sort"])


def test_the_resources_chart_dashes_a_window_left_out_or_retaken():
    runs = left_and_retaken()
    suite = Suite(runs)
    spec = charts.resources(suite.samples, runs=suite.runs).to_dict()
    dash = spec["vconcat"][0]["encoding"]["strokeDash"]
    assert dash["condition"]["value"] == [1, 0] and dash["value"] == [4, 3]
    assert {r["standing"] for r in list(spec["datasets"].values())[0]} == {"used", "left out (jit_active)", "retaken"}
