"""Reading results from anyone: damaged, truncated or hostile files are a ResultsError naming the file, the good
runs are still read, memory and time stay bounded, and nothing outside a run is written (fast tier: no process).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import pytest
import scipy.stats  # noqa: E402,F401  imported once here, not under tracemalloc, where it took seconds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import benchlab
from benchlab.analysis import tails
from benchlab.errors import ResultsError, UsageError
from benchlab.store import histogram
from benchlab.store.histogram import Histogram
from benchlab.store.results import Run, frame, read, save, scan

GOOD = ("r1", "r2", "r3")
FILES = ("run.json", "latency.json", "samples.json")


def good_run(run_id: str, rps: float = 1000.0, server: str = "spring-tomcat") -> Run:
    return Run(id=run_id, params={"server": server, "scenario": "hello", "driver": "wrk", "load": "duration",
                                  "connections": 10, "threads": 2, "duration": 5, "warmup": 1, "repeat": 1,
                                  "server_cpus": [0], "load_cpus": [1], "jvm_opts": ["-Xmx1g"], "backend": "local"},
               metrics={"rps": rps, "requests": 5000, "p50": 0.001, "p99": 0.004, "errors_connect": 0,
                        "errors_timeout": 0, "server_cpu_mean": 90.0, "drift": -0.01, "warm": True, "note": None},
               metadata={"server": {"server": "tomcat", "server_version": "10.1"}, "network": {"somaxconn": 4096},
                         "warmup": {"steady": True, "slices": [{"t": 1.0, "rps": rps}]}},
               samples=((0.25, "server", 95.0, 1e8, 10), (0.25, "load", 50.0, 1e7, 20)),
               counters=((0.25, 1.0, 10, 0, 1, 0.01, 2, 0.001),), started_at=f"2026-01-01T00:00:0{run_id[-1]}+00:00")


def write_good(root: Path, run_id: str, **kw) -> Path:
    directory = root / run_id
    save(good_run(run_id, **kw), directory)
    Histogram.of([0.001, 0.002, 0.004] * 10).save(directory)
    return directory


def read_all(root: Path, *, strict: bool = False):
    """Everything benchlab reads of a folder, as a notebook would: the runs, their frame, histograms and samples,
    the merged percentiles. Returns (ids, damaged lines)."""
    runs, damaged = scan(root, strict=strict)
    frame(runs)
    found = []
    for run in runs:
        try:
            h = histogram.read(run.directory)
            if h is not None:
                found.append(h)
                h.percentiles([50, 99, 100])
            list(run.samples), list(run.counters)
        except ResultsError as exc:
            if strict:
                raise
            damaged.append(str(exc))
    if found:
        tails.resampled(found, [50, 99], resamples=20)
    return [r.id for r in runs], damaged


@contextlib.contextmanager
def bounded(seconds: float, megabytes: float | None = None):
    """Fail, not hang, past ``seconds`` (a FIFO read would block forever); and with ``megabytes``, bound the
    peak memory reading takes: the kernel's high-water mark of this process, reset as the block starts (free),
    or where the kernel refuses the reset, tracemalloc's peak (which made reading about 5 times slower)."""
    def expired(signum, frame):
        raise TimeoutError(f"reading took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    traced = megabytes is not None and not _reset_peak()
    before = _status_kb("VmRSS") if megabytes is not None and not traced else 0
    if traced:
        tracemalloc.start()
    try:
        yield
        if megabytes is not None:
            peak = tracemalloc.get_traced_memory()[1] if traced else (_status_kb("VmHWM") - before) * 1024
            assert peak < megabytes * 2**20, f"reading allocated {peak / 2**20:.0f} MB at its peak"
    finally:
        if traced:
            tracemalloc.stop()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _reset_peak() -> bool:
    """Reset this process's resident high-water mark (Linux 4.0 on: ``5`` to clear_refs); False where refused."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/self/status has no {field}")


def test_the_memory_bound_fails_a_block_that_takes_more():
    with pytest.raises(AssertionError, match="MB at its peak"):
        with bounded(seconds=20, megabytes=50):
            held = b"\1" * (100 * 2**20)  # written, so resident
            del held


# --- mutations of real stored runs -------------------------------------------------------------------------

WEIRD = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from([10**6, 4 * 10**6, 2**62, -2**62, 2**63, 2**64, -500, 1e6, "running", "../../x", "/etc/passwd",
                     "\x1b]52;c;aGk=\x07"]),
    st.lists(st.integers(min_value=-5, max_value=2**62), max_size=4), st.dictionaries(st.text(max_size=3),
                                                                                        st.integers(), max_size=2),
)


def _paths(doc, prefix=()):
    """Every path into a JSON document: keys of objects, indexes of lists."""
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc[:3]):
            yield from _paths(value, (*prefix, i))


@st.composite
def mutations(draw):
    """(run, file, how, detail): one change to one file of one of the stored runs."""
    how = draw(st.sampled_from(["set", "set", "set", "delete", "truncate", "garbage", "link", "fifo", "directory"]))
    return draw(st.sampled_from(GOOD)), draw(st.sampled_from(FILES)), how, draw(st.integers(0, 10**6)), draw(WEIRD)


def mutate(directory: Path, name: str, how: str, where: int, value) -> None:
    path = directory / name
    if how in ("set", "delete"):
        doc = json.loads(path.read_text())
        paths = [p for p in _paths(doc) if p]
        target = paths[where % len(paths)]
        parent = doc
        for step in target[:-1]:
            parent = parent[step]
        if how == "delete" and isinstance(parent, dict):
            del parent[target[-1]]
        else:
            parent[target[-1]] = value
        path.write_text(json.dumps(doc, default=str))  # NaN and Infinity as json writes them
    elif how == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[:where % max(len(data), 1)])
    elif how == "garbage":
        path.write_bytes(os.urandom(where % 300) + b"[" * (where % 5000))
    else:
        path.unlink()
        if how == "link":
            path.symlink_to(["/dev/zero", "/dev/urandom", str(directory.parent / "r1" / "run.json"), "/nonexistent",
                             "/etc/passwd"][where % 5])
        elif how == "fifo":
            os.mkfifo(path)
        else:
            path.mkdir()


@pytest.fixture(scope="module")
def stored():
    root = Path(tempfile.mkdtemp(prefix="benchlab-reading-"))
    for i, run_id in enumerate(GOOD):
        write_good(root / "runs", run_id, rps=1000.0 + i)
    yield root / "runs"
    shutil.rmtree(root)


@settings(max_examples=120, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(change=mutations())
def test_any_damage_is_a_results_error_and_the_good_runs_are_read(stored, change):
    run_id, name, how, where, value = change
    root, path = stored, stored / run_id / name
    kept = path.read_bytes()  # one file is changed in place and put back: a copy of the folder per example
    try:                      # cost more than the reading
        mutate(root / run_id, name, how, where, value)
        with bounded(seconds=10, megabytes=200):
            try:
                ids, damaged = read_all(root)
            except ResultsError:  # the only run.json made unreadable... is never all of them: not here
                raise AssertionError("two good runs were left, so load() must not fail as a whole") from None
            others = [r for r in GOOD if r != run_id]
            assert set(others) <= set(ids), "a damaged run took a good one down with it"
            assert all(str(root / run_id) in line for line in damaged), damaged
        # strict reading stops at the damage the lenient reading read through, whose memory is measured above
        with bounded(seconds=10), pytest.raises(ResultsError) if damaged else contextlib.nullcontext():
            read_all(root, strict=True)
    finally:
        path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink(missing_ok=True)
        path.write_bytes(kept)


# --- one folder per kind of damage the review found ---------------------------------------------------------

def _set(*path, value):
    def change(directory: Path, name="run.json"):
        doc = json.loads((directory / name).read_text())
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        if value is KeyError:
            del parent[path[-1]]
        else:
            parent[path[-1]] = value
        (directory / name).write_text(json.dumps(doc))
    return change


def _latency(index):
    def change(directory: Path):
        doc = json.loads((directory / "latency.json").read_text())
        doc.update(index=[index], counts=[doc["count"]])
        (directory / "latency.json").write_text(json.dumps(doc))
    return change


def _replace(name, make):
    def change(directory: Path):
        (directory / name).unlink()
        make(directory / name)
    return change


KINDS = {
    "no id": (_set("id", value=KeyError), "its id is None"),
    "metadata a string": (_set("metadata", value="x"), "its metadata is 'x'"),
    "rps a string": (_set("metrics", "rps", value="fast"), "metric rps is 'fast'"),
    "status running": (_set("status", value="running"), "its status is 'running'"),
    "rps NaN": (_set("metrics", "rps", value=math.nan), "not nan"),
    "rps Infinity": (_set("metrics", "rps", value=math.inf), "metric rps is inf"),
    "negative errors": (_set("metrics", "errors_connect", value=-500), "errors_connect is -500"),
    "a JVM option null": (_set("params", "jvm_opts", value=[None]), "param jvm_opts is [None]"),  # hypothesis found it
    "samples a path": (_set("samples", value="../../x"), "'../../x', not a file beside it"),
    "samples absolute": (_set("samples", value="/etc/passwd"), "'/etc/passwd', not a file beside it"),
    "run.json to /dev/zero": (_replace("run.json", lambda p: p.symlink_to("/dev/zero")), "symbolic link"),
    "run.json a FIFO": (_replace("run.json", os.mkfifo), "a FIFO"),
    "bucket 1e6": (_latency(10**6), "bucket index 1000000"),
    "bucket 4e6": (_latency(4 * 10**6), "bucket index 4000000"),
    "bucket 2**62": (_latency(2**62), "bucket index 4611686018427387904"),
    "latency.json to /dev/zero": (_replace("latency.json", lambda p: p.symlink_to("/dev/zero")), "symbolic link"),
    "latency.json a FIFO": (_replace("latency.json", os.mkfifo), "a FIFO"),
    "samples.json to /dev/zero": (_replace("samples.json", lambda p: p.symlink_to("/dev/zero")), "symbolic link"),
    "samples.json a FIFO": (_replace("samples.json", os.mkfifo), "a FIFO"),
}


@pytest.mark.parametrize("kind", KINDS)
def test_three_good_runs_and_one_damaged(tmp_path, kind):
    change, said = KINDS[kind]
    for i, run_id in enumerate(GOOD):
        write_good(tmp_path, run_id, rps=1000.0 + i)
    bad = write_good(tmp_path, "r4", rps=9.0)
    change(bad)
    with bounded(seconds=20, megabytes=500):
        with pytest.warns(benchlab.store.results.ResultsWarning) as caught:
            suite = benchlab.load(tmp_path)
            suite.summary(["rps", "p99"])
            samples = suite.samples  # read as a notebook would: a damaged samples file warns here
        flags = suite.flags()
    ids = suite.runs["id"].tolist()
    assert set(GOOD) <= set(ids) and set(samples["id"]) <= set(ids)
    if kind.startswith(("bucket", "latency", "samples.json")):
        assert "r4" in ids, "a damaged histogram or samples file leaves its run's run.json figures"
    else:
        assert "r4" not in ids
    damaged = flags[flags["flag"] == "damaged"]
    assert len(damaged) == 1 and damaged["level"].tolist() == ["run"]
    line = damaged["explanation"].iloc[0]
    assert str(bad) in line and said in line, line
    assert len(caught) == 1 and line in str(caught[0].message)
    with pytest.raises(ResultsError, match="r4"):
        strict = benchlab.load(tmp_path, strict=True)
        strict.summary(["rps", "p99"])
        _ = strict.samples  # read as a notebook would: a damaged samples file raises here


def test_files_null_is_a_run_without_files(tmp_path):
    # null is "none" everywhere in run.json (hypothesis found that "files" was the exception, a TypeError)
    _set("files", value=None)(write_good(tmp_path, "r1"))
    suite = benchlab.load(tmp_path, strict=True)
    assert suite.runs["id"].tolist() == ["r1"] and suite.records[0].files == ()


def test_nothing_readable_is_one_error_naming_the_first(tmp_path):
    for run_id in ("a", "b"):
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / "run.json").write_text("{ not json")
    with pytest.raises(ResultsError, match=r"a/run.json: .*\(and 1 more damaged runs\)$"):
        benchlab.load(tmp_path)


# --- names become safe folders; a failed run removes only its own ------------------------------------------

def test_names_cannot_write_outside_results_dir(tmp_path, capture):
    results = tmp_path / "results"
    run = benchlab.import_wrk(capture("wrk_text_jetty.txt"), server="/../../x", results_dir=results)
    assert [p.parent for p in tmp_path.rglob("wrk.out")] == [results / run.id]
    assert "/" not in run.id and not run.id.startswith(".")
    (results / "elsewhere").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(UsageError, match="outside results_dir"):
        benchlab.store.files.under(results, "elsewhere")


@pytest.mark.integration  # run() checks that java and wrk are installed before it makes the folder
def test_a_failed_run_removes_only_its_own_folder(tmp_path, monkeypatch):
    results = tmp_path / "new" / "results"
    other = results.parent / "someone-else" / "run.json"

    def fails(spec, run_dir, **kw):
        assert run_dir.parent == results and run_dir.is_dir()
        (run_dir / "server.log").write_text("started")
        other.parent.mkdir(parents=True)  # another process stores a run beside ours meanwhile
        other.write_text("{}")
        raise benchlab.ServerError("died")

    monkeypatch.setattr(benchlab.api, "measure", fails)
    with pytest.raises(benchlab.ServerError):
        benchlab.run(benchlab.Server.from_url("http://127.0.0.1:9/hello"), "/", duration="1s", warmup=0,
                     results_dir=results)
    assert other.exists(), "another process's run was removed"
    assert not results.exists(), "the run's own folder (and its empty parent) stays behind"


# --- what reaches the terminal -------------------------------------------------------------------------------

def test_show_strips_control_characters_from_stored_names(tmp_path, capsys):
    from benchlab.cli import main

    hostile = "tomcat\x1b]52;c;ZWNobyBoaQ==\x07\x1b[2J\x1b[H\x9b31m\r"
    for run_id in GOOD:
        write_good(tmp_path, run_id, server=hostile)
    (tmp_path / "bad\x1b[2J").mkdir()
    (tmp_path / "bad\x1b[2J" / "run.json").write_text("{}")
    assert main(["show", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert "tomcat" in out and "[damaged]" in out and "Traceback" not in err
    assert not any(c in out for c in "\x1b\x07\x9b\r"), repr(out)


def test_show_prints_each_forks_figure_and_the_interval_as_the_notebooks_do(tmp_path, capsys):
    # The terminal's per-fork table printed its interval as a tuple in scientific notation and a cv of 0.9% as 0.0
    import dataclasses

    from benchlab.cli import main

    for repeat, rps in enumerate([33151.7, 32723.7, 33420.0], start=1):
        run = good_run(f"r{repeat}", rps=rps)
        save(dataclasses.replace(run, params={**run.params, "repeat": repeat}), tmp_path / run.id)
    assert main(["show", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    table = out.split("per-fork requests/s:")[1].split("\n\n")[0]
    assert "e+0" not in table and "33.2k" in table and "[" in table, table
    assert "1.1%" in table, table  # the forks' cv (sd 351 of 33,098), in per cent as the notebooks show it


def test_reading_stays_fast(tmp_path):
    for i in range(200):
        save(good_run(f"r{i:03d}"), tmp_path / f"r{i:03d}")
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runs = benchlab.store.results.load_runs(tmp_path)
    assert len(runs) == 200 and time.process_time() - start < 2.0
    assert read(tmp_path / "r000" / "run.json") == runs[0]
