"""What a result needs to be believed later: machine, kernel, Java, tools, benchlab itself.

Each ``collect_*()`` fills one dict. The slow ones (they start a process) are cached per process, as
a compare calls them for every run.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from pathlib import Path

from .. import home
from ..version import __version__


@functools.cache
def collect_cpu() -> dict:
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    governor = None
    gov = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    if gov.exists():
        governor = gov.read_text().strip()
    return {
        "model": model,
        "logical_cpus": os.cpu_count(),
        "usable_cpus": sorted(os.sched_getaffinity(0)),
        "governor": governor,
    }


@functools.cache
def collect_system() -> dict:
    import psutil

    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "memory_bytes": psutil.virtual_memory().total,
        "python": platform.python_version(),
    }


@functools.cache
def collect_java(java: str = "java") -> dict:
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return {"path": java, "version": None, "banner": None}
    banner = done.stderr.strip()
    version = None
    first = banner.splitlines()[0] if banner else ""
    if '"' in first:
        version = first.split('"')[1]
    return {"path": java, "version": version, "banner": banner}


@functools.cache
def collect_benchlab() -> dict:
    commit = dirty = None
    root = home.project_root()
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {"version": __version__, "commit": commit, "dirty": dirty}


@functools.cache
def collect_driver(name: str) -> dict:
    from . import drivers

    return {"name": name, "version": drivers.tool(name).version()}


def _proc_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def collect_network() -> dict:
    """The kernel's queues for connections being opened: ``somaxconn`` caps every listen backlog (the
    accept queue), ``tcp_max_syn_backlog`` the half-open ones; None where /proc does not say.

    >>> sorted(collect_network())
    ['somaxconn', 'tcp_max_syn_backlog']
    """
    return {"somaxconn": _proc_int("/proc/sys/net/core/somaxconn"),
            "tcp_max_syn_backlog": _proc_int("/proc/sys/net/ipv4/tcp_max_syn_backlog")}


#: Each built-in server's accept-queue (listen backlog) default, with the setting that changes it.
ACCEPT_QUEUE_DEFAULTS = {
    "tomcat": ("server.tomcat.accept-count", 100),
    # Jetty's ServerConnector acceptQueueSize is 0 by default, which the JDK's bind() turns into 50.
    "jetty": ("Jetty ServerConnector acceptQueueSize (0: the JDK's 50)", 50),
    "undertow": ("Undertow socket option BACKLOG", 1000),
}


def collect_accept_queue(info: dict, jvm_opts=()) -> dict:
    """The server's accept queue: ``{"setting", "value", "source"}``. ``source`` says where the value comes
    from: ``"/info"`` (the server reported it), ``"jvm_opts"`` (``-Dserver.tomcat.accept-count=N``) or
    ``"default"`` (the server's known default, not read from it); ``{}`` for a server of unknown kind.

    >>> collect_accept_queue({"server": "tomcat"}, ["-Dserver.tomcat.accept-count=500"])["value"]
    500
    >>> collect_accept_queue({"server": "jetty"})["source"]
    'default'
    """
    flavour = str(info.get("server") or "").lower() if isinstance(info, dict) else ""
    if flavour not in ACCEPT_QUEUE_DEFAULTS:
        return {}
    setting, value = ACCEPT_QUEUE_DEFAULTS[flavour]
    said = info.get("accept_queue")
    if isinstance(said, int) and not isinstance(said, bool) or isinstance(said, str) and said.isdigit():
        return {"setting": setting, "value": int(said), "source": "/info"}
    prefix = f"-D{setting}="
    for opt in jvm_opts or ():
        if flavour == "tomcat" and str(opt).startswith(prefix) and str(opt)[len(prefix):].isdigit():
            return {"setting": setting, "value": int(str(opt)[len(prefix):]), "source": "jvm_opts"}
    return {"setting": setting, "value": value, "source": "default"}


def collect(*, java: str = "java", driver: str | None = None) -> dict:
    """Everything, as one dict of dicts."""
    meta = {
        "cpu": collect_cpu(),
        "system": collect_system(),
        "network": collect_network(),
        "java": collect_java(java),
        "benchlab": collect_benchlab(),
    }
    if driver:
        meta["driver"] = collect_driver(driver)
    return meta
