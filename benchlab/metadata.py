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

from . import home
from .version import __version__


@functools.lru_cache(maxsize=None)
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


@functools.lru_cache(maxsize=None)
def collect_system() -> dict:
    import psutil

    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "memory_bytes": psutil.virtual_memory().total,
        "python": platform.python_version(),
    }


@functools.lru_cache(maxsize=None)
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


@functools.lru_cache(maxsize=None)
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


@functools.lru_cache(maxsize=None)
def collect_driver(name: str) -> dict:
    from . import drivers

    return {"name": name, "version": drivers.tool(name).version()}


def collect(*, java: str = "java", driver: str | None = None) -> dict:
    """Everything, as one dict of dicts."""
    meta = {
        "cpu": collect_cpu(),
        "system": collect_system(),
        "java": collect_java(java),
        "benchlab": collect_benchlab(),
    }
    if driver:
        meta["driver"] = collect_driver(driver)
    return meta
