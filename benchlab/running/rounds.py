"""A round's forks alive together, their windows interleaved: ``compare(interleave="windows")``.

Windows measured back to back in one process are not independent: measured here (Jetty and Undertow at
200 connections, one server core), consecutive 5 s windows of one warm JVM correlate at 0.64-0.73, and the
means of six consecutive windows varied by 11-12% where independent windows would give 6%. So a fork's
back-to-back windows share its slow drift, which then reads as fork-to-fork noise: 16% between forks and 11%
within, on which more windows a fork buy nothing. Four Jetty forks kept alive together, their 5 s windows
taken in turn (A B C D, D C B A, ...), gave 2.9% between forks and 14.7% within, and one fork's windows 10 s
apart correlated at 0.2-0.3: spread out in time, the windows average a fork's drift away, and windows, which
cost seconds, buy the precision that forks, which cost minutes of warm-up, used to.

So here every fork of one round (one repeat of every server and cell) is started and warmed in turn and
kept running; the forks that waited while the later ones warmed are brought back to the run's load until
their JIT is quiet again (:func:`benchlab.running.warmup.resume`: an idle JVM recompiled 1-3 s worth when its
load came back); then window 1 of every fork, then window 2 in the reverse order, and so on. Only one fork
has load at a time; the others sit idle on the same cores. A fork that fails is stopped and the others go on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import LoadError, ServerError, VerifyError
from ..store import locks
from .measure import Fork
from .warmup import resume

#: What fails a fork without failing its round: its server, its answer, its load tool.
FAILURES = (ServerError, VerifyError, LoadError)


@dataclass
class Outcome:
    """What became of one fork of a round: the windows it stored and, if it failed, why."""

    fork: Fork
    error: BaseException | None = None
    records: list = field(default_factory=list)


def passes(forks: int, windows: int) -> list[list[int]]:
    """The order of a round's windows: each pass measures every fork once, alternately forwards and backwards,
    so no fork always comes first after another's load.

    >>> passes(3, 3)
    [[0, 1, 2], [2, 1, 0], [0, 1, 2]]
    """
    return [list(range(forks)) if k % 2 == 0 else list(range(forks))[::-1] for k in range(windows)]


def run(forks: list[Fork], *, deadline: float | None = None, echo=None) -> list[Outcome]:
    """Open every fork, resume the ones that waited, measure their windows in :func:`passes` order, close them.

    The round holds the cores of all its forks (:func:`benchlab.store.locks.cores`) from the first start to the
    last stop. Every fork is stopped however the round ends; a :data:`FAILURES` error ends only its own fork. No
    pass starts after ``deadline`` (a monotonic time: a budget's end). ``echo`` is called with the line that says
    the round waits for its cores.
    """
    with together(forks, echo=echo) as outcomes:
        take(outcomes, deadline=deadline)
    return outcomes


@contextmanager
def together(forks: list[Fork], *, echo=None) -> Iterator[list[Outcome]]:
    """The forks opened in turn and the ones that waited resumed, holding the round's cores; every fork is
    stopped when the block ends, however it ends."""
    pinned = sorted({c for f in forks if not f.spec.backend_options.get("docker_host")
                     for c in (*f.spec.server_cpus, *f.spec.load_cpus)})
    outcomes = [Outcome(f) for f in forks]
    with locks.cores(pinned, echo=echo) as waited:
        try:
            for outcome in outcomes:
                outcome.fork.waited = waited
                _step(outcome, outcome.fork.open)
            live = [o for o in outcomes if o.error is None]
            for outcome in live[:-1]:  # the last one warmed has had its load until now
                _step(outcome, lambda f=outcome.fork: _resume(f))
            yield outcomes
        finally:
            for outcome in outcomes:
                outcome.fork.close()


def take(outcomes: list[Outcome], windows: int | None = None, *, deadline: float | None = None) -> None:
    """Measure ``windows`` more windows of every live fork (all it has left, by default), one a fork a pass;
    none after ``deadline``."""
    done = max((len(o.records) for o in outcomes if o.error is None), default=0)  # passes so far
    left = max((len(o.fork.windows) - len(o.records) for o in outcomes if o.error is None), default=0)
    count = left if windows is None else min(left, windows)
    for order in passes(len(outcomes), done + count)[done:]:
        if deadline is not None and time.monotonic() >= deadline:
            return
        for i in order:
            outcome = outcomes[i]
            if outcome.error is None and len(outcome.records) < len(outcome.fork.windows):
                _step(outcome, lambda o=outcome: o.records.append(o.fork.window()))


def _step(outcome: Outcome, action) -> None:
    """Do one step of a fork; a failure ends that fork (stopped at once) and is kept on its outcome."""
    if outcome.error is not None:
        return
    try:
        action()
    except FAILURES as exc:
        outcome.error = exc
        outcome.fork.close()


def _resume(fork: Fork) -> None:
    """Bring a fork that sat idle back to its run's load until its JIT is quiet again; said in its warm-up."""
    offset = time.monotonic() - fork.warm_began  # the resumed slices on the warm-up's own clock
    shown = fork.on_slice
    again = resume(fork.instance.url, fork.spec.scenario, fork.spec.load, cpus=fork.spec.load_cpus,
                   workdir=fork.windows[0][0], runner=fork.runner, perfdata=fork.jvm,
                   on_slice=None if shown is None else lambda row: shown({**row, "t": round(row["t"] + offset, 3)}))
    slices = [{**s, "t": round(s["t"] + offset, 3)} for s in again["slices"]]
    fork.warmed = {**fork.warmed, "resumed_s": again["seconds"], "slices": [*fork.warmed.get("slices", []), *slices]}
    fork.fork_s += again["seconds"]
