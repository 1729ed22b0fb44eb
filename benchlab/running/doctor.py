"""``benchlab doctor``: which load tools and runtimes are installed, their versions, and how to install the rest."""

from __future__ import annotations

import re
import shutil

from ..errors import ToolMissing
from . import drivers

#: Runtimes benchlab starts besides the drivers: the command that prints a version, how to install it.
RUNTIMES = {
    "java": (["java", "-version"], "version", "apt-get install openjdk-17-jdk-headless (the Spring servers, JMeter)"),
    "mvn": (["mvn", "-v"], "Apache Maven", "apt-get install maven (builds the server jars)"),
    "docker": (["docker", "--version"], "version", "apt-get install docker.io (only for backend='docker')"),
    "nginx": (["nginx", "-v"], "version", "apt-get install nginx libnginx-mod-http-echo (the nginx reference)"),
    "go": (["go", "version"], "version", "apt-get install golang-go (builds the go-nethttp reference)"),
}


def _driver(name: str) -> dict:
    driver = drivers.tool(name)
    try:
        path = driver.executable()
    except ToolMissing:
        return {"tool": name, "kind": "driver", "installed": False, "version": None, "path": None,
                "models": list(driver.models), "install": driver.install}
    return {"tool": name, "kind": "driver", "installed": True, "version": driver.version(), "path": path,
            "models": list(driver.models), "install": driver.install}


def _runtime(name: str) -> dict:
    argv, pattern, install = RUNTIMES[name]
    path = shutil.which(argv[0])
    version = drivers.version_of([path, *argv[1:]], pattern) if path else None
    if version:
        version = re.sub(r"\x1b\[[0-9;]*m", "", version)  # mvn colours its banner
    return {"tool": name, "kind": "runtime", "installed": bool(path), "version": version, "path": path,
            "models": [], "install": install}


def _profiler() -> dict:
    """async-profiler's library, which ``profile=True`` loads into a server's JVM (:mod:`.profiler`)."""
    from . import profiler

    try:
        path = str(profiler.library())
    except ToolMissing:
        path = None
    return {"tool": "async-profiler", "kind": "profiler", "installed": path is not None,
            "version": profiler.VERSION if path else None, "path": path, "models": [], "install": profiler.INSTALL}


def doctor() -> list[dict]:
    """One row per load tool and runtime: tool, kind, installed, version, path, models, install.

    Example
    -------
    >>> from benchlab.running.doctor import doctor
    >>> [row["tool"] for row in doctor()]  # doctest: +SKIP
    ['wrk', 'h2load', 'jmeter', 'vegeta', 'java', 'mvn', 'docker', 'nginx', 'go', 'async-profiler']
    """
    return [*(_driver(name) for name in drivers.NAMES), *(_runtime(name) for name in RUNTIMES), _profiler()]


def format_doctor(rows: list[dict]) -> str:
    lines = [f"{'tool':14} {'installed':9}  {'version':40}  load models / how to install"]
    for row in rows:
        version = (row["version"] or "-")[:40]
        how = ", ".join(row["models"]) if row["installed"] and row["models"] else (
            "" if row["installed"] else f"install: {row['install']}")
        lines.append(f"{row['tool']:14} {'yes' if row['installed'] else 'NO':9}  {version:40}  {how}")
    return "\n".join(lines)
