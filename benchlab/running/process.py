"""Starting external commands: argv lists, pinned to cores, always killed on the way out.

Every child is started in its own session (so a Ctrl-C in a terminal reaches benchlab, which then stops
it in order) and with a parent-death signal, so even a killed kernel leaves no orphan JVM behind.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import ToolMissing, tail

_PR_SET_PDEATHSIG = 1
_SIGKILL = int(signal.SIGKILL)
# Loaded once, here: loading a library between fork and exec takes the loader's lock, which a monitor
# thread of the parent may have held at the fork, and the child would then hang before its exec.
_prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl


def _die_with_parent() -> None:
    # Runs in the child between fork and exec (only a call, nothing loaded or allocated); taskset then
    # execs the real program, which keeps the signal.
    _prctl(_PR_SET_PDEATHSIG, _SIGKILL)


def require(tool: str, install: str) -> str:
    """The path of ``tool``, or :class:`ToolMissing` naming how to install it."""
    path = shutil.which(tool) if os.sep not in tool else (tool if os.access(tool, os.X_OK) else None)
    if not path:
        raise ToolMissing(f"{tool} is not installed or not on PATH: {install}")
    return path


def pinned(argv: list[str], cpus: tuple[int, ...] | None) -> list[str]:
    """``argv`` run under ``taskset -c`` on ``cpus`` (unchanged when cpus is None)."""
    if not cpus:
        return list(argv)
    from ..cores import format_cpus

    taskset = require("taskset", "apt-get install util-linux")
    return [taskset, "-c", format_cpus(cpus), *argv]


def start(argv: list[str], *, cpus=None, stdout=None, stderr=None, stdin=subprocess.DEVNULL,
          cwd: str | Path | None = None, env: dict | None = None) -> subprocess.Popen:
    """Start ``argv`` pinned to ``cpus``; the caller must :func:`stop` it (:func:`run` does both)."""
    return subprocess.Popen(
        pinned(argv, cpus),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        cwd=cwd,
        env=env,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )


def stop(process: subprocess.Popen, *, grace: float = 10.0) -> int | None:
    """SIGTERM, then SIGKILL after ``grace`` seconds, to the whole process group, by its id, until none of it
    is left: a server's workers (nginx's) or a wrapper's children may outlive the process itself, and the next
    server on the same port must not find them listening. Returns the process's exit code."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if process.poll() is not None and not group(process.pid):
            break
        _signal_group(process.pid, sig)
        deadline = time.monotonic() + wait
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        if _group_gone(process.pid, deadline - time.monotonic()):
            break
    return process.poll()


def group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid`` (zombies, already dead, left out), read from /proc."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()  # after the command, which may hold spaces
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            found.append(int(entry.name))
    return found


def _group_gone(pgid: int, wait: float) -> bool:
    """Wait up to ``wait`` seconds for the group to be empty; whether it is."""
    deadline = time.monotonic() + wait
    while group(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass(frozen=True)
class Finished:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def run(argv: list[str], *, cpus=None, timeout: float, cwd=None, env=None, on_start=None,
        input_text: str | None = None) -> Finished:
    """Run ``argv`` to the end (or kill it at ``timeout``) and return its output.

    ``on_start(pid)`` is called once the process exists, so a monitor can watch it.
    """
    began = time.monotonic()
    process = start(argv, cpus=cpus, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
                    stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL)
    try:
        if on_start is not None:
            on_start(process.pid)
        try:
            out, err = process.communicate(input=input_text.encode() if input_text is not None else None,
                                           timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(process, grace=2.0)
            out, err = process.communicate()
            from ..errors import LoadError

            raise LoadError(
                f"{Path(argv[0]).name} did not finish within {timeout:.0f} s and was stopped: "
                f"{' '.join(argv)}\n{tail(err.decode(errors='replace'))}"
            ) from None
    finally:
        stop(process, grace=2.0)
    return Finished(tuple(argv), process.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                    time.monotonic() - began)
