"""A comparison's round of forks: one after another (:func:`forks_in_turn`, ``interleave="forks"``) or alive together,
their windows interleaved (:func:`windows_in_turn`, ``compare(interleave="windows")``), which this page is about.

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

from ..store import locks
from . import stored
from .fork import FAILURES, Fork, whole
from .matrix import load_tag
from .pool import Pool


def passes(forks: int, windows: int) -> list[list[int]]:
    """The order of a round's windows: each pass measures every fork once, alternately forwards and backwards,
    so no fork always comes first after another's load.

    >>> passes(3, 3)
    [[0, 1, 2], [2, 1, 0], [0, 1, 2]]
    """
    return [list(range(forks)) if k % 2 == 0 else list(range(forks))[::-1] for k in range(windows)]


def measure(forks: list[Fork], *, deadline: float | None = None, echo=None) -> list[Fork]:
    """Start and warm every fork, resume the ones that waited, measure their windows in :func:`passes` order, stop
    them; each fork is its own outcome (:meth:`Fork.stored`).

    The round holds the cores of all its forks (:func:`benchlab.store.locks.cores`) from the first start to the
    last stop. Every fork is stopped however the round ends; a failure (:data:`benchlab.running.fork.FAILURES`)
    ends only its own fork. No pass starts after ``deadline`` (a monotonic time: a budget's end). ``echo`` is
    called with the line that says the round waits for its cores.
    """
    with together(forks, echo=echo):
        take(forks, deadline=deadline)
    return forks


@contextmanager
def together(forks: list[Fork], *, echo=None) -> Iterator[list[Fork]]:
    """The forks started and warmed in turn and the ones that waited resumed, holding the round's cores; every
    fork is stopped when the block ends, however it ends."""
    with locks.cores(sorted({c for f in forks for c in f.pinned}), echo=echo) as waited:
        try:
            for fork in forks:
                fork.waited = waited
                if fork.step(fork.start):
                    fork.step(fork.warm)
            going = [f for f in forks if f.error is None]
            for fork in going[:-1]:  # the last one warmed has had its load until now
                fork.step(fork.resume)
            yield forks
        finally:
            for fork in forks:
                fork.stop()


def take(forks: list[Fork], windows: int | None = None, *, deadline: float | None = None) -> None:
    """Measure ``windows`` more windows of every live fork (all it has left, by default), one a fork a pass;
    none after ``deadline``."""
    done = max((len(f.records) for f in forks if f.error is None), default=0)  # passes so far
    left = max((len(f.windows) - len(f.records) for f in forks if f.error is None), default=0)
    count = left if windows is None else min(left, windows)
    for order in passes(len(forks), done + count)[done:]:
        if deadline is not None and time.monotonic() >= deadline:
            return
        for i in order:
            if forks[i].alive():
                forks[i].step(forks[i].window)


def _labelled(on_slice, label: str):
    """``on_slice`` with each row naming its run, or None."""
    return None if on_slice is None else lambda row: on_slice({"run": label, **row})


def forks_in_turn(planned, *, repeat: int, stamp: dict, pool: Pool, bar, deadline=None, on_slice=None):
    """A round as ``interleave="forks"`` runs it: each fork whole, one after another; yields each fork's runs (a
    fork that failed: the windows it finished, then its next window recorded as failed). No fork starts after
    the ``deadline`` (a budget's)."""
    for spec, windows in planned:
        if deadline is not None and time.monotonic() >= deadline:
            return
        done = stored.found(windows)
        if done is not None:
            bar.finish(ran=False)
            yield done
            continue
        name = f"{spec.server.name} {spec.scenario.name} {load_tag(spec)} r{repeat}"
        bar.start(name)
        try:
            shared = pool.instance(spec)
        except FAILURES as exc:  # the shared server would not start: this fork fails, the others go on
            one = Fork(spec, windows, repeat=repeat, echo=bar.waiting, **stamp)
            one.error = exc
        else:
            one = whole(Fork(spec, windows, repeat=repeat, on_phase=bar.phase, on_slice=_labelled(on_slice, name),
                             instance=shared, echo=bar.waiting, **stamp))
        if one.error is not None:
            pool.drop(spec)  # a server that failed is not reused
        bar.finish()
        yield one.stored()


def windows_in_turn(planned, *, repeat: int, stamp: dict, pool: Pool, bar, deadline=None, on_slice=None):
    """A round as ``interleave="windows"`` runs it: its unfinished forks alive together, their windows in turn
    (:func:`measure`); a fork that failed keeps its windows and records the next as failed."""
    todo = []
    for spec, windows in planned:
        done = stored.found(windows)
        if done is not None:
            bar.finish(ran=False)
            yield done
        else:
            name = f"{spec.server.name} {spec.scenario.name} {load_tag(spec)} r{repeat}"
            todo.append(Fork(spec, windows, repeat=repeat, **stamp,
                             on_phase=lambda step, server=spec.server.name: bar.phase(f"{server} {step}"),
                             on_slice=_labelled(on_slice, name), echo=bar.waiting))
    if not todo:
        return
    bar.start(f"round {repeat}: {len(todo)} forks together, their windows in turn")
    forks = measure(todo, deadline=deadline, echo=bar.waiting)
    bar.finish(count=len(forks))
    for one in forks:
        yield one.stored()
