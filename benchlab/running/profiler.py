"""CPU profiles of a JVM server's measured window: async-profiler, loaded into the running server when the window
begins and stopped when it ends.

Why async-profiler, and how (docs/why.md): its ``cpu`` event samples every thread of the server on CPU (request
threads, GC, the JIT's compilers) with its kernel frames, from the kernel's cpu-clock every millisecond, where JDK
Flight Recorder samples only threads running Java code and sees neither the kernel nor the JVM's own threads. Its
library comes from Maven Central (``tools.profiler:async-profiler``, ``bash .ci/install-drivers.sh``) and is loaded
through the JVM's attach mechanism (:func:`attach`, the protocol of OpenJDK's ``jcmd`` and of ``jattach``, spoken
here in a few lines so no second JVM starts on the machine while it measures): ``start`` just before the load tool
starts, ``stop`` just after it ends, the window's stacks written in the folded format beside the run
(:data:`FILE`). Nothing is loaded into a server that is not profiled.
"""

from __future__ import annotations

import gzip
import os
import platform
import signal
import socket
import time
from pathlib import Path

from .. import home
from ..errors import ServerError, ToolMissing, UsageError
from ..store.stacks import parse

#: The stacks of a profiled window, beside its run.json: folded (Brendan Gregg's collapsed format), gzip'd.
FILE = "profile.collapsed.gz"
#: What the profiler said, beside them.
LOG = "profile.log"
#: One sample a millisecond of CPU: about 1,000 samples a second of a busy core, where a frame's share is then
#: known to about 1% in a 5 s window.
INTERVAL_NS = 1_000_000
VERSION = "4.2"
#: The version of the profile's record (``metadata["profile"]``).
FORMAT = 1
INSTALL = (f"bash .ci/install-drivers.sh (puts async-profiler {VERSION} from Maven Central under "
           ".tools/async-profiler), or set BENCHLAB_ASYNC_PROFILER to a libasyncProfiler.so")
#: How long the JVM may take to open its attach socket when first asked.
ATTACH_TIMEOUT = 10.0


def library() -> Path:
    """async-profiler's library for this machine: ``$BENCHLAB_ASYNC_PROFILER``, else ``.tools/async-profiler``."""
    given = os.environ.get("BENCHLAB_ASYNC_PROFILER")
    tools = home.project_root() / ".tools" / "async-profiler"
    found = Path(given) if given else tools / _arch() / "libasyncProfiler.so"
    if not found.is_file():
        raise ToolMissing(f"async-profiler is not installed ({found} is missing): {INSTALL}")
    return found


def _arch() -> str:
    return {"x86_64": "linux-x64", "aarch64": "linux-arm64"}.get(platform.machine(), platform.machine())


def check(profile, server, backend: str) -> None:
    """``profile`` is a bool, and where it is on, the server is a JVM benchlab starts here (the profiler is loaded
    into its process)."""
    if not isinstance(profile, bool):
        raise UsageError(f"profile is True or False, not {profile!r}")
    if not profile:
        return
    if server.kind == "url":
        raise UsageError(f"profile samples a server benchlab starts: {server.url} is a url, its process is not "
                         "benchlab's; drop profile or give a built-in Spring server")
    if not server.jvm:
        raise UsageError(f"profile samples a JVM (async-profiler): {server.name} is not one; drop profile for it, "
                         "or compare it without profile")
    if backend != "local":
        raise UsageError("profile loads async-profiler into the server's JVM, which runs locally only for now: use "
                         "backend='local'")


def attach(pid: int, command: str, *arguments: str, timeout: float = ATTACH_TIMEOUT) -> tuple[int, str]:
    """``(code, output)`` of ``command`` run inside the JVM ``pid`` through its attach listener: the socket
    ``.java_pid<pid>`` in its /tmp, opened by the JVM when it finds ``.attach_pid<pid>`` and gets SIGQUIT."""
    sock = Path(f"/proc/{pid}/root/tmp/.java_pid{pid}")
    if not sock.exists():
        _wake(pid, sock, timeout)
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(str(sock))
        words = [command, *arguments, *[""] * (3 - len(arguments))]
        s.sendall(b"1\0" + b"".join(w.encode() + b"\0" for w in words))
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    first, _, rest = answer.decode(errors="replace").partition("\n")
    return int(first.strip() or -1), rest


def _wake(pid: int, sock: Path, timeout: float) -> None:
    """Ask the JVM to open its attach socket; the trigger file goes where the JVM looks: its working folder, or
    its /tmp."""
    for place in (Path(f"/proc/{pid}/cwd"), Path(f"/proc/{pid}/root/tmp")):
        trigger = place / f".attach_pid{pid}"
        try:
            trigger.touch()
            break
        except OSError:
            continue
    else:
        raise ServerError(f"cannot ask JVM {pid} to attach: neither its working folder nor its /tmp is writable")
    try:
        os.kill(pid, signal.SIGQUIT)
        ends = time.monotonic() + timeout
        while not sock.exists():
            if time.monotonic() > ends:
                raise ServerError(f"JVM {pid} did not open its attach socket in {timeout:.0f} s "
                                  "(-XX:+DisableAttachMechanism?)")
            time.sleep(0.02)
    finally:
        trigger.unlink(missing_ok=True)


class Profiler:
    """async-profiler in the JVM ``pid`` for one window, its stacks and log written into ``folder``."""

    def __init__(self, pid: int, folder: Path):
        self.pid, self.folder, self.lib = pid, Path(folder), str(library())
        self.began = self.seconds = 0.0

    def _ask(self, action: str) -> None:
        code, said = attach(self.pid, "load", self.lib, "true", f"{action},log={self.folder / LOG}")
        if code != 0:
            log = (self.folder / LOG).read_text(errors="replace").strip() if (self.folder / LOG).exists() else ""
            raise ServerError(f"async-profiler {action.split(',')[0]} failed in JVM {self.pid} (code {code}): "
                              f"{(log or said).splitlines()[-1] if (log or said).strip() else 'no word'}")

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._ask(f"start,event=cpu,interval={INTERVAL_NS}")
        self.began = time.monotonic()

    def stop(self) -> dict:
        """Stop it and store its stacks (:data:`FILE`); what the run records of the profile."""
        plain = self.folder / "profile.collapsed"
        self._ask(f"stop,collapsed,file={plain}")
        self.seconds = time.monotonic() - self.began
        text = plain.read_bytes() if plain.exists() else b""
        with gzip.open(self.folder / FILE, "wb") as out:
            out.write(text)
        plain.unlink(missing_ok=True)
        samples = sum(parse(text.decode(errors="replace")).values())
        return {"tool": "async-profiler", "version": VERSION, "event": "cpu", "interval_ns": INTERVAL_NS,
                "file": FILE, "format": FORMAT, "seconds": round(self.seconds, 3), "samples": samples}
