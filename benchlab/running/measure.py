"""One run or one fork, as run() and the tools that measure without a comparison take them: held cores, a fresh
server, its windows, stopped however it ends; a failure raises after the windows it finished are stored.

A run counts only when everything in it went right: a server that died during the load, or a load tool that was
killed, raises an error naming what happened, so the caller records a failed run rather than numbers from a broken
one. A comparison takes its forks through :mod:`benchlab.running.fork` directly, keeping each fork's outcome.
"""

from __future__ import annotations

import datetime as _dt
import secrets
from pathlib import Path

from ..store.results import Run
from .fork import Fork, whole
from .spec import RunSpec
from .window import now

__all__ = ["measure", "fork", "new_run_id", "now"]


def new_run_id(spec: RunSpec) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{spec.server.name}-{spec.scenario.name}-c{spec.load.connections}-{secrets.token_hex(2)}"


def measure(spec: RunSpec, run_dir: Path, *, run_id: str, repeat: int = 1, suite: str | None = None,
            label: str | None = None, on_phase=None, instance=None) -> Run:
    """Start the server, verify, warm up, measure, stop; store and return the :class:`Run`.

    The server is stopped however this ends. A :class:`BenchlabError` propagates after cleanup; the
    caller decides whether to record a failed run. A given ``instance`` (an already started server) is
    used as it is and left running. The run holds its cores, the server's and the load tool's, against
    every other benchlab process on this machine (:func:`benchlab.store.locks.cores`: it waits for them).
    """
    return fork(spec, [(Path(run_dir), run_id)], repeat=repeat, suite=suite, label=label, on_phase=on_phase,
                instance=instance)[0]


def fork(spec: RunSpec, windows: list[tuple[Path, str]], *, repeat: int = 1, suite: str | None = None,
         label: str | None = None, on_phase=None, instance=None, on_slice=None, echo=None) -> list[Run]:
    """One fork (:func:`benchlab.running.fork.whole`): start the server, verify and warm it once, then measure one
    window per ``(folder, run id)`` of ``windows``, back to back in the same process, each stored as its own
    :class:`Run` as soon as it ends. The runs share a ``fork`` name; the first holds the warm-up's curve. A server
    that dies in window k raises after windows 1..k-1 are stored."""
    done = whole(Fork(spec, windows, repeat=repeat, suite=suite, label=label, on_phase=on_phase, on_slice=on_slice,
                      instance=instance, echo=echo))
    if done.error is not None:
        raise done.error
    return done.records
