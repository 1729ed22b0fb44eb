"""run() and compare(), the public entry points: check every option, then run, store and resume."""

from __future__ import annotations

import functools
import shutil
import time
from pathlib import Path

from .analysis.budget import Budget
from .analysis.precision import Rule
from .running import common, stored
from .running import hosts as hosts_
from .running.matrix import (
    baseline_of,
    budget_seconds,
    check_design,
    matrix,
    rounds,
    run_name,
    suite_id,
)
from .running.measure import measure, new_run_id
from .running.options import DEFAULT_SERVERS, Comparison, RunOptions, keywords
from .running.pool import Pool
from .running.rounds import forks_in_turn, windows_in_turn
from .running.spec import RunSpec, check_tools, prepare
from .store import locks
from .store.files import results_home, slug, under
from .store.results import Run


@keywords
def run(server="spring-tomcat", scenario=None, *, connections=200, threads=None, duration="30s", warmup="auto",
        warming="jit-first", timeout="10s", load="duration", users=None, loops=None, rate=None, slo=None, ramp_up=0,
        plan=None, driver=None, protocol="http1", streams=1, pipeline=1, keepalive=True, backend="local",
        server_cpus=None, load_cpus=None, jvm_opts=(), java=None, cds=True, memory=None, port=None,
        startup_timeout="90s", allow_remote=False, docker_host=None, base_image=None, load_in_container=False,
        load_docker_host=None, load_hosts=None, retakes=2, profile=False, results_dir=None, label=None) -> Run:
    """Measure one server under one load and return the stored :class:`Run`.

    Starts ``server`` on ``server_cpus`` (the first half of the cores by default), checks one response, warms it
    up (``warmup="auto"``: until it is warm, see :mod:`benchlab.running.warmup`; or a fixed time such as ``"30s"``),
    then offers the load for ``duration`` from ``load_cpus`` while sampling both sides' CPU and memory. The
    result is written to ``results_dir/<run id>/run.json`` with the load tool's raw output and the server log
    beside it. Every option is checked before anything is built, started or written; a run that fails leaves
    nothing behind but the error, which names the cause.

    Parameters
    ----------
    server : "spring-tomcat", "spring-jetty", "spring-undertow", "spring-webflux", or a :class:`Server`
    scenario : "hello", "json", "reflect", "sleep", "sleep:<ms>", "echo" (built-ins) or a path (custom)
    load : "duration" (wrk), "count" (``users`` x ``loops``: h2load or JMeter) or "rate" (``rate``/s: vegeta)
    slo : with ``load="rate"``, e.g. "p99<5ms": the window is a search for the highest paced rate whose p99 stays
        under 5 ms, from ``rate`` up, held and measured; its ``capacity_rps`` is the rate found (docs/cost.md)
    protocol, streams : "http1", "h2c", "h2" or "https", the server started for it and checked on the wire; HTTP/2's
        requests in flight a connection (docs/http2.md)
    pipeline, keepalive : a "duration" load's requests a connection sends together (HTTP/1.1 pipelining); a
        "rate" or "duration" load's connection a request (``keepalive=False``)
    backend : "local" (a pinned process) or "docker" (a container with a cpuset); ``docker_host``,
        ``base_image``, ``load_in_container`` and ``load_docker_host`` apply to docker only
    profile : the window taken under async-profiler (a Spring server's CPU stacks), in no statistic (docs/why.md)
    startup_timeout : how long the server may take to answer once started; ``benchlab run --help`` for the rest

    Example
    -------
    >>> import benchlab
    >>> r = benchlab.run("spring-jetty", "hello", connections=64, duration="5s", warmup="2s")  # doctest: +SKIP
    >>> r.to_frame()[["server", "rps", "p99"]]  # doctest: +SKIP
    """
    given = {k: v for k, v in locals().items() if k not in ("server", "scenario", "results_dir", "label")}
    spec = prepare(server, scenario, RunOptions.of(**given), tools=False)  # the options, as one object, below here
    base = results_home(results_dir)
    check_tools(spec)  # after every option and the results folder, so each mistake is named first
    run_id = slug(new_run_id(spec))
    run_dir = under(base, run_id)
    made = [p for p in (base, *base.parents) if not p.exists()]  # deepest first
    writer = locks.ResultsWriter(base)  # one writer per results_dir: a second is refused, naming this PID
    try:
        run_dir.mkdir(parents=True)  # not exist_ok: the folder is this run's own, so removing it removes only it
        return measure(spec, run_dir, run_id=run_id, label=label)
    except BaseException:
        _unmake(run_dir, made)  # a run that did not finish is not a result (the error has the log tail)
        raise
    finally:
        writer.release()


def _unmake(run_dir: Path, made: list[Path]) -> None:
    """Remove a failed run's folder, and the parents made for it (deepest first) while they are empty: another
    process may have stored its own run there meanwhile."""
    for folder in (run_dir, *stored.aside(run_dir)):
        shutil.rmtree(folder, ignore_errors=True)
    for parent in made:
        try:
            parent.rmdir()
        except OSError:
            break


@keywords
def compare(servers=DEFAULT_SERVERS, scenarios=None, connections=(200,), repeats=None, *, windows=None,
            interleave=None, precision=0.03, max_repeats=10, budget=None, threads=None, duration="30s",
            warmup="auto", warming="jit-first", timeout="10s", load="duration", users=None, loops=None, rates=None,
            slo=None, ramp_up=0, plan=None, driver=None, protocol="http1", streams=1, pipeline=1, keepalive=True,
            order="interleaved", seed=None, restart="each-fork",
            baseline=None, backend="local", server_cpus=None, load_cpus=None, jvm_opts=(), java=None, cds=True,
            memory=None, port=None, startup_timeout="90s", allow_remote=False, docker_host=None, base_image=None,
            load_in_container=False, load_docker_host=None, load_hosts=None, retakes=2, profile=False, factors=None,
            hosts=None, borrow=True, history=None, results_dir=None, label=None, progress=True, on_run=None,
            on_progress=None, on_slice=None):
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
        with ``load="rate"`` give ``rates`` (requests/s) for a rate sweep, or "auto": one rate every server carries
        (:mod:`benchlab.running.common`, measured first; docs/cost.md). Without ``scenarios`` the built-in
        servers answer "hello" and a custom server is measured at its own path, in one cell (the report says
        which path each was measured at)
    repeats, windows, interleave : left None, they are 3, 1 and "forks"; with a ``budget``, "auto", "auto" and
        "windows": benchlab chooses the forks, the windows a fork and their order within the time.
    budget : the most wall time the comparison may take ("10m"): a round is started only if it fits in what is
        left, judged from what the comparison's own forks and windows cost; the result says the interval it
        reached and what more time would buy (``Suite.budget``).
    windows : measured windows per fork. Each repeat is one fork, a fresh server warmed once by the
        warm-up rule, then ``windows`` windows of ``duration`` (see ``interleave``), each stored as its own run
        (``window`` 1..m, the same ``fork``). The statistics take fork means as their unit and show the
        fork-to-fork and window-to-window spread apart (:func:`benchlab.analysis.stats.components`). "auto": the
        first two rounds measure 3 windows a fork, then Kalibera and Jones' rule picks the count that buys
        the most precision for the time, from what a fork and a window cost and how much each varies
        (``Suite.design`` says what it chose and why).
    interleave : "forks" (each fork's windows back to back, the forks interleaved) or "windows": every fork
        of a round (one repeat of every server and cell) is started, warmed and kept running, and their
        windows are taken in turn, so each fork's windows are spread over the round (see
        :mod:`benchlab.running.rounds`: back-to-back windows share a fork's drift, spread ones do not).
    order : "interleaved" (A B C A B C) or "shuffled" (shuffled inside each repeat, with ``seed``)
    repeats : a number, or "auto": interleaved rounds are added until every rps ratio to the baseline (a
        lone server: its mean) has a confidence interval within +/- ``precision`` (3%), or until
        ``max_repeats`` rounds, which the result then says (``Suite.precision``). The rule looks only at
        the width of the intervals, never at significance, so the tests keep their level.
    restart : "each-fork" (a fresh server for every fork, the default) or "never" (one server kept for all its forks)
    profile : each fork measures one more window, its last, under async-profiler: ``Suite.profiles`` (docs/why.md)
    factors : server settings crossed with every server, e.g. ``{"virtual_threads": [False, True],
        "java": [17, 25]}``: each combination is one more server, named after its settings
        (``spring-tomcat+vt@java25``); ``server_cpus`` repeats each cell per core set. See
        :mod:`benchlab.running.factors`.
    hosts : machines, each a docker engine url or a pair ``"server-engine+load-engine"`` (the docker backend): each
        runs whole rounds, one at a time, all at once; every run records its ``host``, the statistics pair by
        round as before, and a host that stops answering has its round run on the others (docs/scale-out.md;
        ``Suite.hosts()``). Each must answer and hold the server images before any round starts.
    borrow, history : a verdict of fewer rounds than the signed rank needs borrows strength for its fork variance
        from the cell's other servers and this machine's comparisons stored in ``history`` (results folders;
        None: the results root's), and says what it borrowed (``Suite.borrow``, ``Suite.history``; see
        :mod:`benchlab.analysis.borrow`)
    on_run : called with each :class:`Run` as it is stored (or found stored), failed ones included
    on_progress : called with the :class:`~benchlab.running.progress.Progress` whenever the run under way or its
        phase changes (its ``line()``: ``[1/4] spring-jetty hello c200 r1 - warm-up - ETA 3m10s``), bar or not
    on_slice : called with each warm-up slice as it ends, ``{"run", "t", "phase", "rps", "compile_s"...}``. By
        default, in a notebook a person watches, with ``progress``, a live chart under the bar draws them
        (:class:`benchlab.present.live.Live`); it is emptied when each run ends

    The other options are those of :func:`run`; the command line takes them all (``benchlab compare --help``).

    Example
    -------
    >>> import benchlab
    >>> suite = benchlab.compare(["spring-tomcat", "spring-jetty"], repeats=3,
    ...                          duration="10s", warmup="5s")              # doctest: +SKIP
    >>> suite.verdicts()["verdict"].tolist()                               # doctest: +SKIP
    """
    given = {k: v for k, v in locals().items()
             if k not in ("results_dir", "label", "progress", "on_run", "on_progress", "on_slice")}
    return carry_out(Comparison.of(**given), results_dir=results_dir, label=label, progress=progress, on_run=on_run,
                     on_progress=on_progress, on_slice=on_slice)


def carry_out(comparison: Comparison, *, results_dir=None, label=None, progress=True, on_run=None, on_progress=None,
              on_slice=None):
    """:func:`compare` of the options as one object (:meth:`Comparison.of`), the other arguments compare()'s: the one
    path below compare() and the replay of the published experiments (:func:`benchlab.reproduce.experiments`)."""
    comparison, machines = hosts_.prepare(comparison)  # every option, as one object, from here down
    from .analysis.suite import Suite
    from .running.progress import Progress

    check_design(comparison)
    began = time.monotonic()  # a budget pays for the common rate's pilot too
    comparison, base, notes = common.prepare(comparison, results_dir, remote=bool(machines), progress=progress)
    chosen_repeats, chosen_windows, chosen_interleave = comparison.design()  # given, else chosen for it
    schedule = matrix(comparison, chosen_repeats if isinstance(chosen_repeats, int) else comparison.max_repeats)
    hosts_.check(machines, schedule)
    rule = _rule(comparison, schedule, began=began)
    suite = suite_id(schedule)  # the id every run of this comparison stores as its "suite"
    if base is None:  # the one the common rate was found in, else this comparison's
        base = results_home(results_dir) / (f"compare-{suite}" if results_dir is None else "")
    bar = Progress([spec.load.warmup_seconds + rule.first_windows * spec.load.planned_seconds for _, spec in schedule],
                   enabled=progress, listener=on_progress, deadline=rule.budget.deadline if rule.budget else None)
    live = _live(progress and not machines, on_slice)
    shown = on_slice if live is None else live.add
    records: list[Run] = []
    writer = locks.ResultsWriter(base)  # before any unfinished run is cleared: it may be another writer's
    try:
        for spec in {spec.cell_key(): spec for _, spec in schedule}.values():
            check_tools(spec)
        base.mkdir(parents=True, exist_ok=True)  # after: a refused second writer, or a missing tool, makes nothing
        play = functools.partial(windows_in_turn if chosen_interleave == "windows" else forks_in_turn, on_slice=shown,
                                 stamp={"suite": suite, "label": label, "notes": notes},
                                 deadline=rule.budget.deadline if rule.budget else None)
        planning, keep = _plan(rule, records, base, first=schedule[0][0]), _keep(records, live, on_run)
        pool = functools.partial(Pool, base, enabled=comparison.restart == "never")
        in_rounds = functools.partial(hosts_.distribute, machines) if machines else _in_turn  # on hosts, or here
        in_rounds(rounds(schedule), plan=planning, play=play, keep=keep, pool=pool, bar=bar)
        bar.complete(stored=_stored(records))
    finally:
        bar.close()
        if live is not None:
            live.clear()
        writer.release()
    result = Suite(records, baseline=rule.baseline, path=str(base))
    result.borrow, result.history = comparison.borrow, comparison.history  # how its verdicts are judged
    rule.describe(result, records)
    return result


def _rule(comparison: Comparison, schedule: list[tuple[int, RunSpec]], *, began: float | None = None) -> Rule:
    """When the comparison stops: its design, its precision against its baseline, its budget (spent from ``began``)."""
    repeats, windows, interleave = comparison.design()
    limit = budget_seconds(comparison.budget) if comparison.budget is not None else None
    return Rule(repeats=repeats, windows=windows, precision=comparison.precision, interleave=interleave,
                baseline=baseline_of(comparison.baseline, list(dict.fromkeys(s.server.name for _, s in schedule))),
                budget=Budget(limit, began=began) if limit else None, borrow=comparison.borrow,
                history=comparison.history, most_rounds=comparison.max_repeats)


def _live(progress: bool, on_slice):
    """compare()'s own live view (a notebook a person watches, a bar shown, no ``on_slice`` of the caller's)."""
    if on_slice is not None or not progress:
        return None
    from .present.live import Live, watched

    return Live() if watched() else None


def _stored(records: list[Run]) -> str:
    """What the bar says when every run is done: the windows stored, and how many were used, left out (and why),
    retaken and failed, as the header counts them (:class:`benchlab.analysis.validity.Tally`)."""
    from .analysis.validity import Tally
    from .store.results import frame

    return f"{len(records)} window{'s' if len(records) != 1 else ''} stored; {Tally.of(frame(records))}"


def _plan(rule: Rule, records: list[Run], base: Path, *, first: int):
    """``plan(repeat, specs)``: the round's forks with their windows' folders, or None when the rule stops before it
    (every ratio known well enough, or a budget that cannot pay for it)."""
    def plan(repeat: int, specs: list[RunSpec]):
        if rule.stop(records, repeat=repeat, new_round=repeat != first, forks=len(specs)):
            return None
        m = rule.windows(records, repeat=repeat, forks=len(specs))
        return [(spec, stored.folders(base, run_name(spec, repeat), m, profile=spec.profile)) for spec in specs]
    return plan


def _in_turn(rounds, *, plan, play, keep, pool, bar) -> None:
    """The rounds on this machine, one after another, until the rule stops (on several hosts at once:
    :func:`benchlab.running.hosts.distribute`, which takes the same callables)."""
    with pool() as shared:
        for repeat, specs in rounds:
            if (planned := plan(repeat, specs)) is None:
                return  # every ratio is known well enough, or the budget cannot pay for this round
            for done in play(planned, repeat=repeat, pool=shared, bar=bar):
                keep(done)


def _keep(records: list[Run], live, on_run):
    """``keep(runs)``: a fork's (or a host's round's) runs kept, the live view emptied, ``on_run`` told."""
    def keep(done: list[Run]) -> None:
        if live is not None:
            live.clear()  # the run ended: the final charts take the live view's place
        records.extend(done)
        for record in done if on_run else ():
            on_run(record)
    return keep
