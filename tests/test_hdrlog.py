"""HdrHistogram logs out and in, judged by the ``hdrhistogram`` package's own writer and decoder (unit tests).

Out: a run's histogram written as a log and decoded by hdrh's HistogramLogReader gives the count and, at many
percentiles of several distributions, the raw latencies' percentiles within the stated precision. In: a log
that hdrh's HistogramLogWriter made from known values imports as a run with that count, max and percentiles,
and reads back with benchlab.load(); a damaged or foreign file is one line naming it, and writes nothing.
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
import zlib

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader, HistogramLogWriter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import benchlab
from benchlab.errors import ResultsError, UsageError
from benchlab.schema import PERCENTILE_COLUMNS, SECONDS
from benchlab.store import hdrlog
from benchlab.store.histogram import Histogram
from benchlab.store.results import Run, save

#: A benchlab bucket's representative is within half its 1% width of every latency in it.
BUCKET = 0.005
QS = (1, 5, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 99.999, 100)
START = 1_767_261_600.0  # 2026-01-01 10:00 UTC


def sample(family: str, n: int, seed: int, median: float) -> np.ndarray:
    """``n`` latencies in seconds of one distribution family around ``median``."""
    rng = np.random.default_rng(seed)
    if family == "lognormal":
        return rng.lognormal(math.log(median), 0.8, n)
    if family == "uniform":
        return rng.uniform(0.5 * median, 1.5 * median, n)
    if family == "bimodal":  # most requests fast, some 20x slower: a GC pause, a cache miss
        return np.where(rng.random(n) < 0.9, rng.normal(median, median / 10, n).clip(median / 10), 20 * median)
    if family == "pareto":  # a heavy tail, cut at the longest latency a log holds (an hour: no load tool waits so long)
        return (median * (1 + rng.pareto(1.5, n))).clip(max=hdrlog.LONGEST_S)
    if family == "ties":  # few distinct values, many ties, some zeros: JMeter's whole milliseconds
        return rng.integers(0, 6, n) * median
    raise ValueError(family)


def hdr_rank_value(ordered: np.ndarray, q: float) -> float:
    """The raw latency at the rank HdrHistogram's percentile takes: round(q * n / 100), 1 at least."""
    rank = max(1, int(q * len(ordered) / 100 + 0.5))
    return float(ordered[min(rank, len(ordered)) - 1])


def tolerance(value: float, unit: str, digits: int) -> float:
    """The stated precision: benchlab's 0.5%, HdrHistogram's bucket (relative), half a unit of rounding."""
    return value * (BUCKET + hdrlog.resolution(digits)) * 1.000001 + SECONDS[unit] * 0.5 + 1e-15


def decoded(path) -> HdrHistogram:
    """Every interval of the log at ``path`` added, by hdrh's own reader, into a histogram as fine as the finest log
    benchlab writes (3 digits: its buckets nest in each log's, so adding loses nothing; 5 digits only made each
    percentile walk 3.7 million counts)."""
    reader = HistogramLogReader(str(path), HdrHistogram(1, 10**13, 3))
    try:
        intervals = 0
        while reader.add_next_interval_histogram() is not None:
            intervals += 1
    finally:
        reader.close()
    assert intervals, f"hdrh's reader found no interval in {path}"
    return reader.reference_histogram


# --- out: benchlab's histogram as a log, read by hdrh --------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(family=st.sampled_from(["lognormal", "uniform", "bimodal", "pareto", "ties"]),
       n=st.integers(1, 4000), seed=st.integers(0, 2**32 - 1),
       median=st.sampled_from([60e-6, 0.0008, 0.004, 0.09, 1.5]),
       unit=st.sampled_from(["us", "ns", "ms"]), digits=st.sampled_from([2, 3]))
def test_a_written_log_gives_hdrhistograms_reader_the_count_and_percentiles(tmp_path, family, n, seed, median, unit,
                                                                             digits):
    raw = np.sort(sample(family, n, seed, median))
    histogram = Histogram.of(raw)
    path = hdrlog.write(tmp_path / "run.hlog", [hdrlog.Window(histogram, START, 30.0)], unit=unit, digits=digits)

    hdr = decoded(path)
    unit_s = SECONDS[unit]
    assert hdr.get_total_count() == n
    found = hdr.get_percentile_to_value_dict(list(QS))
    for q in QS:
        exact = hdr_rank_value(raw, q)
        assert abs(found[q] * unit_s - exact) <= tolerance(exact, unit, digits), (q, found[q] * unit_s, exact)
    # the max is written exactly, so only HdrHistogram's bucket and the unit stand between it and the log's
    assert abs(hdr.get_max_value() * unit_s - raw[-1]) <= raw[-1] * hdrlog.resolution(digits) + unit_s


def test_the_log_says_its_unit_digits_and_times(tmp_path):
    histogram = Histogram.of(sample("lognormal", 500, 1, 0.002))
    windows = [hdrlog.Window(histogram, START, 30.0), hdrlog.Window(histogram, START + 40, 30.0)]
    path = hdrlog.write(tmp_path / "x.hlog", windows, unit="us", digits=3, notes=["server a\nb\x1b[2J"])
    text = path.read_text()
    assert "#[benchlab: values in us (microseconds), 3 significant digits;" in text
    assert "#[benchlab: server a b [2J]" in text, "a note stays one comment line, without control characters"
    reader = HistogramLogReader(str(path), None)
    first, second = reader.get_next_interval_histogram(), reader.get_next_interval_histogram()
    reader.close()
    assert (first.get_start_time_stamp(), first.get_end_time_stamp()) == (START * 1000, (START + 30) * 1000)
    assert second.get_start_time_stamp() == (START + 40) * 1000
    assert reader.start_time_sec == START and first.significant_figures == 3


def test_the_stated_precision():
    assert hdrlog.resolution(3) < 0.001 < hdrlog.resolution(2) < 0.01
    assert hdrlog.exact_below(3) == 2048 and hdrlog.exact_below(2) == 256
    hdr = HdrHistogram(1, 3_600_000_000, 3)
    assert hdr.get_highest_equivalent_value(2047) == 2047 and hdr.get_highest_equivalent_value(2048) == 2049


# --- in: a log made by hdrh, imported as a run -----------------------------------------------------------------

def hdrh_log(path, intervals, *, unit_s=1e-6, start=START, length=10.0, gap=0.0, digits=3, highest=3_600_000_000):
    """A log written by hdrh's own HistogramLogWriter: one interval per array of latencies (seconds), recorded
    as whole ``unit_s``; returns the HdrHistogram of all of them, as hdrh adds them."""
    text, everything = io.StringIO(), HdrHistogram(1, highest, digits)
    writer = HistogramLogWriter(text)
    writer.output_log_format_version()
    writer.output_legend()
    for k, seconds in enumerate(intervals):
        hdr = HdrHistogram(1, highest, digits)
        for value in np.rint(np.asarray(seconds) / unit_s).astype(np.int64).tolist():
            assert hdr.record_value(value)
        begin = start + k * (length + gap)
        writer.output_interval_histogram(hdr, begin, begin + length)
        everything.add(hdr)
    path.write_text(text.getvalue())
    return everything


def test_a_log_written_by_hdrh_imports_as_a_run_that_load_reads_beside_others(tmp_path, capture):
    parts = [sample("lognormal", 3000, seed, 0.003) for seed in (1, 2, 3)]
    raw = np.sort(np.rint(np.concatenate(parts) * 1e6) * 1e-6)  # what was recorded: whole microseconds
    expected = hdrh_log(tmp_path / "wrk2.hlog", parts)
    results = tmp_path / "results"
    other = benchlab.import_wrk(capture("wrk_text_jetty.txt"), server="spring-jetty", results_dir=results)

    run = benchlab.import_hdr(tmp_path / "wrk2.hlog", server="nginx", driver="wrk2", rate=300.0, results_dir=results)
    m = run.metrics
    assert m["requests"] == len(raw) == expected.get_total_count()
    assert m["elapsed_s"] == 30.0 and m["rps"] == pytest.approx(len(raw) / 30.0)
    assert m["lat_max"] == expected.get_max_value() * 1e-6  # HdrHistogram's max: the highest equivalent value
    assert abs(m["lat_max"] - raw[-1]) <= raw[-1] * hdrlog.resolution(3)
    assert m["lat_mean"] == pytest.approx(expected.get_mean_value() * 1e-6)  # read from the buckets with a count,
    assert m["lat_stdev"] == pytest.approx(expected.get_stddev() * 1e-6)  # as hdrh takes them over all of its own
    for name, q in PERCENTILE_COLUMNS.items():
        rank = max(1, math.ceil(round(q * len(raw) / 100, 9)))  # benchlab's nearest rank
        exact = raw[rank - 1]
        assert abs(m[name] - exact) <= tolerance(exact, "us", 3), name
    assert run.params["driver"] == "wrk2" and run.params["load"] == "rate" and run.params["rate"] == 300.0
    assert run.started_at.startswith("2026-01-01T10:00:00")

    suite = benchlab.load(results)
    assert sorted(suite.runs["server"]) == ["nginx", "spring-jetty"] and not suite.damaged
    assert {r.id for r in suite.records} == {run.id, other.id}
    stored = suite.histograms[[r.id for r in suite.records].index(run.id)]
    assert stored.count == len(raw) and stored.percentile(99) == pytest.approx(m["p99"])
    assert (results / run.id / "latency.hlog").read_bytes() == (tmp_path / "wrk2.hlog").read_bytes()


def test_the_rate_is_over_the_time_the_intervals_cover(tmp_path):
    hdrh_log(tmp_path / "gaps.hlog", [[0.001] * 100, [0.002] * 100], length=10.0, gap=5.0)
    run = benchlab.import_hdr(tmp_path / "gaps.hlog", server="s")
    assert run.metrics["elapsed_s"] == 20.0 and run.metrics["rps"] == 10.0  # the 5 s between them recorded nothing
    hdrh_log(tmp_path / "relative.hlog", [[0.001] * 100], start=1.0)  # times since the test began, as wrk2 writes
    run = benchlab.import_hdr(tmp_path / "relative.hlog", server="s", duration="20s")
    assert run.metrics["rps"] == 5.0 and run.params["duration"] == 20.0


def test_a_round_trip_through_benchlab_keeps_the_percentiles(tmp_path):
    raw = sample("bimodal", 5000, 7, 0.004)
    record = _stored(tmp_path / "results", "r1", "spring-tomcat", Histogram.of(raw))
    [path] = benchlab.export_hdr(record, tmp_path / "logs")
    run = benchlab.import_hdr(path, server="again")
    original = Histogram.of(raw)
    for name, q in PERCENTILE_COLUMNS.items():
        assert abs(run.metrics[name] - original.percentile(q)) <= original.percentile(q) * (
            2 * BUCKET + hdrlog.resolution(3)) + 1e-6, name
    assert run.metrics["requests"] == len(raw) and run.metadata["imported"]["digits"] == 3


def test_tags_are_chosen_not_mixed(tmp_path):
    hdrh_log(tmp_path / "plain.hlog", [[0.001] * 10, [0.002] * 10])
    lines = (tmp_path / "plain.hlog").read_text().splitlines(keepends=True)
    data = [k for k, line in enumerate(lines) if line[0].isdigit()]
    lines[data[0]] = "Tag=get," + lines[data[0]]  # as HdrHistogram's Java writer tags an interval
    lines[data[1]] = "Tag=post," + lines[data[1]]
    (tmp_path / "tagged.hlog").write_text("".join(lines))
    with pytest.raises(UsageError, match="2 tags \\('get', 'post'\\): give tag="):
        benchlab.import_hdr(tmp_path / "tagged.hlog", server="s")
    run = benchlab.import_hdr(tmp_path / "tagged.hlog", server="s", tag="post")
    assert run.metrics["requests"] == 10 and run.metrics["p50"] == pytest.approx(0.002, rel=BUCKET)


def test_the_unit_a_log_states_is_kept_and_an_implausible_one_refused(tmp_path):
    record = _stored(tmp_path / "results", "r1", "s", Histogram.of([0.001, 0.002]))
    [path] = benchlab.export_hdr(record, tmp_path / "logs", unit="ns")
    with pytest.raises(UsageError, match="says its values are in ns, not us: pass unit='ns'"):
        benchlab.import_hdr(path, server="s")
    assert benchlab.import_hdr(path, server="s", unit="ns").metrics["p50"] == pytest.approx(0.001, rel=BUCKET)
    hdrh_log(tmp_path / "hyperfoil.hlog", [[5.0] * 3], unit_s=1e-9, highest=10**12)  # 5 s in nanoseconds
    with pytest.raises(UsageError, match="beyond benchlab's 1000 s: give the unit its values count"):
        benchlab.import_hdr(tmp_path / "hyperfoil.hlog", server="s")  # read as microseconds: 5000 s


# --- damage --------------------------------------------------------------------------------------------------

def _payload_with(path, **fields):
    """The log at ``path`` with its first interval's payload header fields changed (a hostile or broken writer)."""
    lines = path.read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if line[:1].isdigit())
    head, _, blob = lines[k].rpartition(",")
    raw = base64.b64decode(blob)
    payload = bytearray(zlib.decompress(raw[8:]))
    offsets = {"significant_figures": (12, 4), "lowest_trackable_value": (16, 8)}
    for name, value in fields.items():
        at, size = offsets[name]
        payload[at:at + size] = value.to_bytes(size, "big")
    packed = zlib.compress(bytes(payload))
    lines[k] = head + "," + base64.b64encode(raw[:4] + len(packed).to_bytes(4, "big") + packed).decode()
    return "\n".join(lines) + "\n"


def _damage(tmp_path, kind: str):
    good = tmp_path / "good.hlog"
    hdrh_log(good, [sample("lognormal", 200, 1, 0.002)])
    text = good.read_text()
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    path = tmp_path / f"{kind}.hlog"
    if kind == "truncated":
        path.write_text(text[: len(text) - len(last) // 2 - 1])
    elif kind == "flipped":
        at = len(text) - len(last) // 2
        path.write_text(text[:at] + ("A" if text[at] != "A" else "B") + text[at + 1:])
    elif kind == "binary":
        path.write_bytes(os.urandom(4096))
    elif kind == "empty":
        path.write_text("")
    elif kind == "jtl":
        path.write_text("timeStamp,elapsed,label,responseCode\n1767261600000,12,GET /,200\n")
    elif kind == "settings":
        path.write_text(_payload_with(good, significant_figures=9))
    elif kind == "lowest-zero":
        path.write_text(_payload_with(good, lowest_trackable_value=0))
    elif kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "missing":
        pass
    return path


DAMAGE = ["truncated", "flipped", "binary", "empty", "jtl", "settings", "lowest-zero", "directory", "fifo", "missing"]


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_or_foreign_log_is_one_line_naming_it_and_writes_nothing(tmp_path, kind):
    path = _damage(tmp_path, kind)
    results = tmp_path / "results"
    with pytest.raises(ResultsError) as info:
        benchlab.import_hdr(path, server="s", results_dir=results)
    said = str(info.value)
    assert str(path) in said and "\n" not in said and "Traceback" not in said, said
    assert not results.exists()


def test_a_damaged_import_never_takes_the_other_runs_down(tmp_path):
    results = tmp_path / "results"
    for seed in (1, 2, 3):
        hdrh_log(tmp_path / f"{seed}.hlog", [sample("lognormal", 300, seed, 0.002)], start=START + 60 * seed)
        benchlab.import_hdr(tmp_path / f"{seed}.hlog", server=f"s{seed}", results_dir=results)
    with pytest.raises(ResultsError):
        benchlab.import_hdr(_damage(tmp_path, "truncated"), server="s4", results_dir=results)
    folders = sorted(p for p in results.iterdir())
    (folders[0] / "latency.hlog").write_bytes(b"\x00garbage")  # the raw log is kept, never read back
    (folders[1] / "latency.json").write_text("{ not json")
    with pytest.warns(UserWarning, match="latency.json"):
        suite = benchlab.load(results)
        latency = suite.latency()
    assert len(suite) == 3 and sorted(suite.runs["server"]) == ["s1", "s2", "s3"]
    assert len(latency["server"].unique()) == 2 and len(suite.damaged) == 1 and "latency.json" in suite.damaged[0]


# --- out, for people: export_hdr and benchlab show --hdr -------------------------------------------------------

def _stored(results, run_id: str, server: str, histogram: Histogram | None, *, connections: int = 64,
            started: float = START) -> Run:
    import datetime as dt

    when = dt.datetime.fromtimestamp(started, dt.timezone.utc)
    record = Run(id=run_id, params={"server": server, "scenario": "hello", "driver": "wrk", "load": "duration",
                                    "connections": connections, "duration": 10.0},
                 metrics={"rps": 1000.0, "elapsed_s": 10.0}, metadata={}, started_at=when.isoformat(),
                 finished_at=(when + dt.timedelta(seconds=10)).isoformat())
    folder = results / run_id
    folder.mkdir(parents=True)
    if histogram is not None:
        histogram.save(folder)
    save(record, folder)
    return Run(**{**record.__dict__, "directory": str(folder)})


def test_export_writes_a_log_per_cell_whose_intervals_add_up_to_the_merged_latency(tmp_path):
    results = tmp_path / "results"
    for k, (server, connections, seed) in enumerate([(s, c, 10 * i + j) for i, s in enumerate(["tomcat", "jetty"])
                                                      for j, c in enumerate([16, 64, 16, 64])]):
        _stored(results, f"r{k}", server, Histogram.of(sample("lognormal", 2000, seed, 0.001 * (1 + k % 3))),
                connections=connections, started=START + 20 * k)
    _stored(results, "old", "jetty", None, connections=16)  # a run without a histogram: left out
    suite = benchlab.load(results)

    paths = benchlab.export_hdr(suite, tmp_path / "logs")
    assert sorted(p.name for p in paths) == ["jetty-connections=16.hlog", "jetty-connections=64.hlog",
                                             "tomcat-connections=16.hlog", "tomcat-connections=64.hlog"]
    merged = suite.latency(percentiles=(50, 99, 99.9))
    for path in paths:
        server, connections = path.stem.split("-connections=")
        rows = merged[(merged["server"] == server) & (merged["connections"] == int(connections))]
        hdr = decoded(path)
        assert hdr.get_total_count() == rows["count"].iloc[0] == 4000
        assert path.read_text().count("\n1767") == 2, "one interval per run"
        for q, value in zip(rows["percentile"], rows["latency_s"]):
            assert abs(hdr.get_value_at_percentile(q) * 1e-6 - value) <= tolerance(value, "us", 3) + value * BUCKET


def test_show_writes_the_logs_and_a_mistake_is_one_line(tmp_path, capsys):
    from benchlab.cli import main

    results = tmp_path / "results"
    _stored(results, "r1", "spring-tomcat", Histogram.of(sample("pareto", 1000, 3, 0.001)))
    assert main(["show", str(results), "--hdr", str(tmp_path / "logs"), "--hdr-unit", "ns"]) == 0
    assert f"wrote {tmp_path / 'logs' / 'spring-tomcat.hlog'}" in capsys.readouterr().out
    assert "values in ns" in (tmp_path / "logs" / "spring-tomcat.hlog").read_text()
    assert main(["show", str(results), "--hdr", str(tmp_path / "more"), "--hdr-digits", "7"]) == 2
    out, err = capsys.readouterr()
    assert err.strip() == "benchlab: error: digits must be a whole number from 1 to 5 (HdrHistogram's " \
                          "significant digits), not 7" and not out
    assert not (tmp_path / "more").exists()


def test_export_refuses_what_it_cannot_write_before_writing(tmp_path):
    results = tmp_path / "results"
    record = _stored(results, "r1", "s", None)
    with pytest.raises(UsageError, match="none of these runs kept a latency histogram"):
        benchlab.export_hdr([record], tmp_path / "logs")
    (tmp_path / "a-file").write_text("")
    with pytest.raises(UsageError, match="is a file"):
        benchlab.export_hdr(record, tmp_path / "a-file")
    with pytest.raises(UsageError, match="unit must be one of ns, us, ms"):
        benchlab.export_hdr(record, tmp_path / "logs", unit="s")
    assert not (tmp_path / "logs").exists()
    assert json.loads((results / "r1" / "run.json").read_text())["id"] == "r1"


# --- HdrHistogram's own Java tool reads what benchlab writes (integration: a JDK and Maven) --------------------

@pytest.mark.integration
def test_hdrhistograms_java_log_processor_reads_a_benchlab_log(tmp_path):
    import re
    import shutil
    import subprocess
    from pathlib import Path

    if not (shutil.which("mvn") and shutil.which("java")):
        pytest.fail("this test needs mvn and java (apt-get install maven openjdk-17-jdk-headless)")
    jar = Path.home() / ".m2/repository/org/hdrhistogram/HdrHistogram/2.2.2/HdrHistogram-2.2.2.jar"
    if not jar.exists():  # HdrHistogram's own jar, from Maven Central as JMeter's are
        subprocess.run(["mvn", "-B", "-q", "dependency:get", "-Dartifact=org.hdrhistogram:HdrHistogram:2.2.2"],
                       check=True, timeout=300, capture_output=True)
    raw = sample("lognormal", 20_000, 1, 0.002)
    histogram = Histogram.of(raw)
    windows = [hdrlog.Window(histogram, START, 10.0), hdrlog.Window(histogram, START + 10, 10.0)]
    path = hdrlog.write(tmp_path / "x.hlog", windows)
    subprocess.run(["java", "-cp", str(jar), "org.HdrHistogram.HistogramLogProcessor", "-i", str(path),
                    "-outputValueUnitRatio", "1000", "-o", str(tmp_path / "out")], check=True, timeout=120,
                   capture_output=True)
    report = (tmp_path / "out.hgrm").read_text()  # the distribution of both intervals added, in milliseconds
    top = re.search(r"#\[Max\s+=\s+([\d.]+), Total count\s+=\s+(\d+)\]", report)
    assert top and int(top.group(2)) == 2 * len(raw)
    assert abs(float(top.group(1)) / 1e3 - raw.max()) <= raw.max() * hdrlog.resolution(3) + 1e-6
    median = re.search(r"^\s*([\d.]+)\s+0\.500000000000\s", report, re.M)
    exact = hdr_rank_value(np.sort(np.concatenate([raw, raw])), 50)
    assert median and abs(float(median.group(1)) / 1e3 - exact) <= tolerance(exact, "us", 3) + 1e-6
