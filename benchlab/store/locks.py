"""Locks between benchlab processes, and the busy seconds of a run's cores.

One writer per results directory
    a file named after the resolved ``results_dir`` in the machine's lock folder (:func:`results_lock`, so
    the results_dir itself gets no file of benchlab's), held with ``flock`` (non-blocking) by the process
    that writes runs there, its PID written in it. A second ``compare()``/``run()`` into the same directory
    is refused at once, naming that PID: two writers deleted each other's unfinished runs and ran the same
    cells twice.
    Readers (``load``, ``show``) take no lock and never wait. The file stays when the writer ends (removing
    it would let a third writer lock a new file while a second still holds the old one); the kernel drops
    the lock when the process ends, however it ends.

One run per pinned core, machine-wide
    ``/run/lock/benchlab/core-<n>.lock`` (or the same under the temporary folder where /run/lock cannot be
    written), one per core. A run holds every core it pins, the server's and the load tool's, from its
    server's start to its stop. A second benchlab process that wants any of them *waits*, saying so in one
    line (``benchlab: waiting for cores 0,1 held by PID n``), rather than refusing: a queued comparison
    then runs as soon as the cores are free, and never beside another on the same cores. The cores are
    taken all at once or not at all, so two processes cannot each hold half of what the other needs.

The busy seconds of the cores
    :func:`cpu_seconds` reads the kernel's per-core counters (``/proc/stat``): the busy CPU seconds of a run's
    cores over its window, beside which the window (:mod:`benchlab.running.window`) records what the run's own
    processes and the others took, from its series.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from ..errors import UsageError

RESULTS_LOCK = "results-{key}.lock"  # in the machine's lock folder: a results_dir gets no file of benchlab's own
_TICKS = os.sysconf("SC_CLK_TCK")
log = logging.getLogger(__name__)


def _holder(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, 64).decode(errors="replace").strip() or "unknown"


def _claim(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


class ResultsWriter:
    """``directory``'s writer lock, held from creation to :meth:`release` (or the end of a ``with``); a
    :class:`UsageError` naming the PID that holds it when another process does."""

    def __init__(self, directory: Path):
        self.path = results_lock(directory)
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(self._fd)
            self.release()
            raise UsageError(f"results_dir {directory} is being written by benchlab PID {holder}: wait for it "
                             "to finish, or give another results_dir") from None
        _claim(self._fd)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def results_lock(directory: Path) -> Path:
    """The lock file of ``directory``: named by its resolved path, kept beside the core locks, so a run that
    fails leaves nothing in a results_dir and the lock does not travel with a copied folder."""
    import hashlib

    key = hashlib.sha256(str(Path(directory).resolve()).encode()).hexdigest()[:24]
    return _cores_folder() / RESULTS_LOCK.format(key=key)


def _cores_folder() -> Path:
    for base in (Path("/run/lock"), Path(tempfile.gettempdir())):
        folder = base / "benchlab"
        try:
            if not folder.exists():
                folder.mkdir(exist_ok=True)
                folder.chmod(0o1777)  # every user's benchlab locks the same cores, as /tmp is shared
            if os.access(folder, os.W_OK):
                return folder
        except OSError:
            continue
    raise UsageError("no folder for the core locks: /run/lock and the temporary folder cannot be written")


@contextmanager
def cores(cpus, *, poll: float = 0.2, echo=None):
    """Hold the machine-wide lock of every core in ``cpus`` for the block, waiting while another benchlab
    process holds any of them (said once, through ``echo``: the ``benchlab`` log's warnings by default). Yields
    the seconds waited."""
    wanted = sorted(set(cpus or ()))
    say = echo or log.warning
    folder = _cores_folder() if wanted else None  # None: no core to lock
    held: list[int] = []
    began, said = time.monotonic(), False
    try:
        while folder is not None:
            busy = []
            for core in wanted:
                fd = os.open(folder / f"core-{core}.lock", os.O_RDWR | os.O_CREAT, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    busy.append((core, _holder(fd)))
                    os.close(fd)
                    continue
                held.append(fd)
            if not busy:
                for fd in held:
                    _claim(fd)
                break
            for fd in held:  # all or none: holding some while waiting for others could deadlock two runs
                os.close(fd)
            held.clear()
            if not said:
                pids = ", ".join(sorted({pid for _, pid in busy}))
                say(f"benchlab: waiting for cores {','.join(str(c) for c, _ in busy)} held by PID {pids}")
                said = True
            time.sleep(poll)
        yield time.monotonic() - began
    finally:
        for fd in held:
            os.close(fd)


def cpu_seconds(cpus) -> float:
    """The CPU seconds the kernel counts as busy (all but idle and iowait) on ``cpus`` since boot."""
    wanted = {f"cpu{c}" for c in cpus}
    busy = 0
    with open("/proc/stat") as stat:
        for line in stat:
            name, *fields = line.split()
            if name in wanted:
                ticks = [int(f) for f in fields[:8]]  # user nice system idle iowait irq softirq steal
                busy += sum(ticks) - ticks[3] - ticks[4]
    return busy / _TICKS
