"""Where benchlab finds its Java servers and keeps results and reports."""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    """The benchlab checkout: ``$BENCHLAB_HOME``, else the folder above this package if it holds ``servers/``,
    else the current directory."""
    if os.environ.get("BENCHLAB_HOME"):
        return Path(os.environ["BENCHLAB_HOME"]).resolve()
    here = Path(__file__).resolve().parent.parent
    if (here / "servers" / "pom.xml").exists():
        return here
    return Path.cwd()


def servers_dir() -> Path:
    return project_root() / "servers"


def results_dir() -> Path:
    """Default home of run results: ``$BENCHLAB_RESULTS`` or ``data/results`` in the checkout."""
    return Path(os.environ.get("BENCHLAB_RESULTS") or project_root() / "data" / "results")


def reports_dir() -> Path:
    return project_root() / "data" / "reports"


def published_dir() -> Path:
    return project_root() / "data" / "published"


def cache_dir() -> Path:
    """What benchlab can make again but would rather not (built image contexts, the Vega bundle):
    ``$XDG_CACHE_HOME/benchlab``, else ``~/.cache/benchlab``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "benchlab"
