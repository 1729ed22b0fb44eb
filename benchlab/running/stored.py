"""What an earlier call of compare() stored: a fork's windows found whole, or cleared so the fork runs again.

A comparison stores each window as it ends, so a second call with the same ``results_dir`` runs only what is
missing; a fork runs whole or not at all, since its windows must come from one process.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import ResultsError
from ..store.files import under
from ..store.results import Run


def found(windows: list[tuple[Path, str]]) -> list[Run] | None:
    """The fork's windows as stored by an earlier call, if every one finished; else None, and the fork runs
    again from a clean start (its windows must come from one process)."""
    previous = [finished(run_dir / "run.json") for run_dir, _ in windows]
    done = [p for p in previous if p is not None]
    if len(done) == len(previous):
        retaken = [finished(folder / "run.json", status="retaken")
                   for run_dir, _ in windows for folder in aside(run_dir)]
        return [*done, *(r for r in retaken if r is not None)]
    for run_dir, _ in windows:
        for folder in (run_dir, *aside(run_dir)):
            if folder.exists():
                shutil.rmtree(folder)
    return None


def aside(run_dir: Path) -> list[Path]:
    """The disturbed windows a window's retakes kept beside it (``<run id>-retaken<k>``)."""
    return sorted(run_dir.parent.glob(f"{run_dir.name}-retaken*")) if run_dir.parent.exists() else []


def folders(base: Path, name: str, count: int, *, profile: bool = False) -> list[tuple[Path, str]]:
    """The (folder, run id) of each window of the fork ``name``: the name itself for a single window, as
    before forks had several windows, else ``name-i1`` .. ``name-im``; with ``profile``, one more, ``name-profile``,
    the fork's last window, taken under the profiler (:mod:`benchlab.running.profiler`).

    >>> [run_id for _, run_id in folders(Path("/tmp"), "r", 2, profile=True)]
    ['r-i1', 'r-i2', 'r-profile']
    """
    ids = [name] if count == 1 else [f"{name}-i{k}" for k in range(1, count + 1)]
    ids += [f"{name}-profile"] if profile else []
    return [(under(base, run_id), run_id) for run_id in ids]


def finished(done: Path, status: str = "ok") -> Run | None:
    """The finished run stored at ``done`` (a retaken one, with ``status="retaken"``), or None: not there, failed, or
    damaged (all three run again)."""
    from ..store.results import read

    if not done.exists():
        return None
    try:
        previous = read(done)
    except ResultsError:
        return None
    return previous if previous.status == status else None
