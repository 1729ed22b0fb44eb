"""run() and compare(), the public entry points: check every option, then run, store and resume."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from pathlib import Path

from .analysis import precision as precision_rule
from .errors import BenchlabError, LoadError, ResultsError, ServerError, UsageError, VerifyError
from .running import backends, jars, servers
from .running.matrix import load_tag, matrix, run_name, suite_id
from .running.measure import failed, fork, measure, new_run_id, now
from .running.spec import RESTARTS, RunSpec, keywords, prepare, results_home
from .store import locks
from .store.files import slug, under
from .store.results import Run


def _per_run(given: dict) -> dict:
    """The per-run options among a function's arguments: what :func:`prepare` takes."""
    import inspect

    names = set(inspect.signature(prepare).parameters) - {"server", "scenario"}
    return {k: v for k, v in given.items() if k in names}


@keywords
def run(server="spring-tomcat", scenario=None, *, connections=200, threads=None, duration="30s", warmup="auto",
        timeout="10s", load="duration", users=None, loops=None, rate=None, ramp_up=0, plan=None, driver=None,
        backend="local", server_cpus=None, load_cpus=None, jvm_opts=(), java=None, cds=True, memory=None,
        port=None, startup_timeout="90s", allow_remote=False, docker_host=None, base_image=None, load_in_container=False,
        load_docker_host=None, results_dir=None, label=None) -> Run:
    """Measure one server under one load and return the stored :class:`Run`.

    Starts ``server`` on ``server_cpus`` (the first half of the cores by default), checks one response,
    warms it up (``warmup="auto"``: until its throughput stops rising, see :mod:`benchlab.running.warmup`; or a
    fixed time such as ``"30s"``), then offers the load for ``duration`` from ``load_cpus`` while sampling
    both sides' CPU and memory. The result is written to ``results_dir/<run id>/run.json`` with the load
    tool's raw output and the server log beside it. Every option is checked before anything is built,
    started or written; a run that fails leaves nothing behind but the error, which names the cause.

    Parameters
    ----------
    server : "spring-tomcat", "spring-jetty", "spring-undertow", "spring-webflux", or a :class:`Server`
    scenario : "hello", "json", "reflect", "sleep", "sleep:<ms>", "echo" (built-ins) or a path (custom)
    load : "duration" (wrk), "count" (``users`` x ``loops``: h2load or JMeter) or "rate" (``rate``/s: vegeta)
    backend : "local" (a pinned process) or "docker" (a container with a cpuset); ``docker_host``,
        ``base_image``, ``load_in_container`` and ``load_docker_host`` apply to docker only
    startup_timeout : how long the server may take to answer once started

    The command line takes the same options (``benchlab run --help``).

    Example
    -------
    >>> import benchlab
    >>> r = benchlab.run("spring-jetty", "hello", connections=64, duration="5s", warmup="2s")  # doctest: +SKIP
    >>> r.to_frame()[["server", "rps", "p99"]]  # doctest: +SKIP
    """
    spec = prepare(server, scenario, **_per_run(locals()))
    base = results_home(results_dir)
    run_id = slug(new_run_id(spec))
    run_dir = under(base, run_id)
    made = [p for p in (base, *base.parents) if not p.exists()]  # deepest first
    writer = locks.ResultsWriter(base)  # one writer per results_dir: a second is refused, naming this PID
    try:
        run_dir.mkdir(parents=True)  # not exist_ok: the folder is this run's own, so removing it removes only it
        return measure(spec, run_dir, run_id=run_id, label=label)
    except BaseException:
        # A run that did not finish is not a result: leave no directory behind (the error has the log tail).
        # Only this run's folder is removed; a parent made for it goes only while empty, since another
        # process may have stored its own run there meanwhile.
        shutil.rmtree(run_dir, ignore_errors=True)
        for parent in made:
            try:
                parent.rmdir()
            except OSError:
                break
        raise
    finally:
        writer.release()


@keywords
def compare(servers=servers.DEFAULT_SERVERS, scenarios=("hello",), connections=(200,), repeats=3, *, iterations=1,
            precision=0.03,
            max_repeats=10, threads=None,
            duration="30s", warmup="auto", timeout="10s", load="duration", users=None, loops=None, rates=None,
            ramp_up=0, plan=None, driver=None, order="interleaved", seed=None, restart="each-run", baseline=None,
            backend="local", server_cpus=None, load_cpus=None, jvm_opts=(), java=None, cds=True, memory=None,
            port=None, startup_timeout="90s", allow_remote=False, docker_host=None, base_image=None, load_in_container=False,
            load_docker_host=None, factors=None, results_dir=None, label=None, progress=True, on_run=None):
    """Run every server in every cell ``repeats`` times, interleaved, and return a :class:`Suite`.

    Every option is checked before anything starts. Each finished run is on disk
    (``results_dir/<run>/run.json``) before the next starts. Calling again with the same parameters and
    ``results_dir`` runs only the missing (or failed) runs, so an interrupted comparison, by Ctrl-C, a
    crash or a killed kernel, resumes where it stopped. A run that fails (the server would not start or
    died under load, a wrong answer, a load tool that failed) is recorded as failed, named in the flags,
    and the others go on.

    Parameters
    ----------
    servers : the servers to compare; the first is the baseline unless ``baseline`` names another
    scenarios, connections : lists; with ``load="count"`` pair ``users`` and ``loops`` lists instead, and
        with ``load="rate"`` give ``rates`` (requests/s) for a rate sweep
    iterations : measured windows per repeat. Each repeat is one fork, a fresh server warmed once by the
        warm-up rule, then ``iterations`` windows of ``duration`` back to back, each stored as its own run
        (``iteration`` 1..m, the same ``fork``). The statistics take fork means as their unit and show the
        fork-to-fork and window-to-window spread apart (:func:`benchlab.analysis.stats.components`). "auto": the
        first two rounds measure 3 windows a fork, then Kalibera and Jones' rule picks the count that buys
        the most precision for the time, from what a fork and a window cost and how much each varies
        (``Suite.design`` says what it chose and why).
    order : "interleaved" (A B C A B C) or "shuffled" (shuffled inside each repeat, with ``seed``)
    repeats : a number, or "auto": interleaved rounds are added until every rps ratio to the baseline (a
        lone server: its mean) has a confidence interval within +/- ``precision`` (3%), or until
        ``max_repeats`` rounds, which the result then says (``Suite.precision``). The rule looks only at
        the width of the intervals, never at significance, so the tests keep their level.
    restart : "each-run" (a fresh server every run, the default) or "never" (each server started once)
    factors : server settings crossed with every server, e.g. ``{"virtual_threads": [False, True],
        "java": [17, 25]}``: each combination is one more server, named after its settings
        (``spring-tomcat+vt@java25``); ``server_cpus`` repeats each cell per core set. See
        :mod:`benchlab.running.factors`.
    on_run : called with each :class:`Run` as it is stored (or found stored), failed ones included, so a
        notebook can redraw while the comparison goes on

    The other options are those of :func:`run`; the command line takes them all (``benchlab compare --help``).

    Example
    -------
    >>> import benchlab
    >>> suite = benchlab.compare(["spring-tomcat", "spring-jetty"], repeats=3,
    ...                          duration="10s", warmup="5s")              # doctest: +SKIP
    >>> suite.verdicts()["verdict"].tolist()                               # doctest: +SKIP
    """
    from .analysis.suite import Suite
    from .running.progress import Progress

    if iterations != precision_rule.AUTO and (isinstance(iterations, bool) or not isinstance(iterations, int)
                                             or iterations < 1):
        raise UsageError(f"iterations must be a whole number of 1 or more, or auto, not {iterations!r}")
    if restart not in RESTARTS:
        raise UsageError(f"unknown restart {restart!r}: choose one of {', '.join(RESTARTS)}")
    by_precision = repeats == precision_rule.AUTO
    if by_precision:
        if isinstance(precision, bool) or not isinstance(precision, (int, float)) or not 0 < precision < 1:
            raise UsageError(f"precision must be a fraction between 0 and 1, such as 0.03 for +/-3%, not {precision!r}")
        if isinstance(max_repeats, bool) or not isinstance(max_repeats, int) or max_repeats < 2:
            raise UsageError(f"max_repeats must be a whole number of 2 or more, not {max_repeats!r}")
    runs = matrix(servers, scenarios, connections, max_repeats if by_precision else repeats, order=order, seed=seed,
                  load=load, users=users, loops=loops, rates=rates, options=_per_run(locals()), factors=factors)
    names = list(dict.fromkeys(spec.server.name for _, spec in runs))
    if baseline is not None:
        baseline = baseline if baseline in names else _server_name(baseline)
        if baseline not in names:
            raise UsageError(f"unknown baseline {baseline!r}: choose one of {', '.join(names)}")
    suite = suite_id(runs)
    base = results_home(results_dir)
    if results_dir is None:
        base = base / f"compare-{suite}"
    per_fork = precision_rule.PILOT_WINDOWS if iterations == precision_rule.AUTO else iterations
    bar = Progress([spec.load.warmup_seconds + per_fork * spec.load.planned_seconds for _, spec in runs],
                   enabled=progress)
    chosen = None  # iterations="auto": the design, chosen once the pilot's two rounds are in
    records: list[Run] = []
    shared: dict[str, object] = {}
    reached = None
    writer = locks.ResultsWriter(base)  # before any unfinished run is cleared: it may be another writer's
    base.mkdir(parents=True, exist_ok=True)  # after: a refused second writer makes nothing
    try:
        for index, (repeat, spec) in enumerate(runs):
            if by_precision and index and repeat != runs[index - 1][0] and repeat > 2:
                reached = precision_rule.enough(records, baseline or names[0], precision)
                if reached:  # a whole round is done and every ratio is known well enough
                    break
            count = iterations
            if iterations == precision_rule.AUTO:  # the pilot's windows for two rounds, then the design's
                if repeat > 2 and chosen is None:
                    chosen = precision_rule.design(records)
                count = chosen["iterations"] if chosen else precision_rule.PILOT_WINDOWS
            windows = _windows(base, run_name(spec, repeat), count)
            previous = [_finished(run_dir / "run.json") for run_dir, _ in windows]
            if all(p is not None for p in previous):
                records.extend(previous)
                if on_run:
                    for p in previous:
                        on_run(p)
                bar.finish(ran=False)
                continue
            # An unfinished or failed fork starts again, clean: its windows must come from one process.
            for run_dir, _ in windows:
                if run_dir.exists():
                    shutil.rmtree(run_dir)
            bar.start(f"{spec.server.name} {spec.scenario.name} {load_tag(spec)} r{repeat}")
            started_at, before = now(), len(records)
            try:
                instance = _shared_instance(shared, spec, base) if restart == "never" else None
                records.extend(fork(spec, windows, repeat=repeat, suite=suite, label=label, key=spec.cell_key(),
                                    on_phase=bar.phase, instance=instance))
            except (ServerError, VerifyError, LoadError) as exc:
                stored = [_finished(run_dir / "run.json") for run_dir, _ in windows]
                records.extend(r for r in stored if r is not None)  # windows the fork finished stay results
                done = sum(r is not None for r in stored)
                run_dir, run_id = windows[done]
                run_dir.mkdir(parents=True, exist_ok=True)
                records.append(failed(spec, run_dir, run_id=run_id, repeat=repeat, suite=suite, iteration=done + 1,
                                      key=spec.cell_key(), error=exc, started_at=started_at, label=label))
                print(f"benchlab: run {run_id} failed: {str(exc).splitlines()[0]}", file=sys.stderr)
                if restart == "never":  # a server that failed is not reused
                    stale = shared.pop(spec.server.name, None)
                    if stale is not None:
                        stale.stop()
            if on_run:
                for record in records[before:]:
                    on_run(record)
            bar.finish()
    finally:
        for instance in shared.values():
            instance.stop()
        bar.close()
        writer.release()
    suite = Suite(records, baseline=baseline or names[0], path=str(base))
    if iterations == precision_rule.AUTO:
        suite.design = chosen or {**precision_rule.design(records), "iterations": precision_rule.PILOT_WINDOWS,
                                  "why": f"{precision_rule.PILOT_WINDOWS} windows a fork: the pilot's, as the "
                                         "comparison ended within its two rounds"}
    if by_precision:
        if reached is None:
            reached = precision_rule.enough(records, baseline or names[0], precision)
        suite.precision = {"asked": precision, "reached": bool(reached), "repeats": max(r.params["repeat"] for r in records),
                           "widest": precision_rule.widest(records, baseline or names[0])}
    return suite


def _windows(base: Path, name: str, iterations: int) -> list[tuple[Path, str]]:
    """The (folder, run id) of each window of the fork ``name``: the name itself for a single window, as
    before forks had iterations, else ``name-i1`` .. ``name-im``."""
    ids = [name] if iterations == 1 else [f"{name}-i{k}" for k in range(1, iterations + 1)]
    return [(under(base, run_id), run_id) for run_id in ids]


def _finished(done: Path) -> Run | None:
    """The finished run stored at ``done``, or None: not there, failed, or damaged (all three run again)."""
    from .store.results import read

    if not done.exists():
        return None
    try:
        previous = read(done)
    except ResultsError:
        return None
    return previous if previous.status == "ok" else None


def _server_name(name) -> str:
    try:
        return servers.get(name).name
    except BenchlabError:
        return str(name)


def _shared_instance(shared: dict, spec: RunSpec, base: Path):
    """restart="never": each server is started once, on its cores, and kept for all its runs."""
    name = spec.server.name
    if name not in shared:
        jars.ensure_built(spec.server, java=spec.server_java, cds=spec.cds)
        backend = backends.get(spec.backend, **spec.backend_options)
        launch = spec.launch(f"shared-{name}", under(base, f"{name}.server.log"))
        # started outside any run's hold on the cores, so on its own cores only
        shared[name] = backend.start(spec.server, dataclasses.replace(launch, start_cpus=()))
    return shared[name]
