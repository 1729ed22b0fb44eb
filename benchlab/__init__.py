"""benchlab: compare web servers under load, with results a reviewer would accept.

>>> import benchlab
>>> r = benchlab.run("spring-undertow", "hello", duration="5s", warmup="2s")   # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from . import errors
from .errors import (
           BenchlabError,
           BuildError,
           LoadError,
           ResultsError,
           ServerError,
           ToolMissing,
           UsageError,
           VerifyError,
)
from .version import __version__

if TYPE_CHECKING:
    from .analysis.suite import Suite, load
    from .api import compare, run
    from .present.export import export_hdr, export_profile
    from .running import factors
    from .running.importers import import_hdr, import_jtl, import_wrk
    from .running.jars import build
    from .running.load import Load
    from .running.servers import Scenario, Server
    from .store.results import Run

#: Each public name and the module that holds it, imported when first used: ``import benchlab.store.files``
#: (a lock, a file write, a child process) does not pay for pandas and the whole API (0.8 s).
_LAZY = {"Suite": "analysis.suite", "load": "analysis.suite", "compare": "api", "run": "api",
         "factors": "running.factors", "import_jtl": "running.importers", "import_wrk": "running.importers",
         "import_hdr": "running.importers", "export_hdr": "present.export", "export_profile": "present.export",
         "build": "running.jars", "Load": "running.load", "Scenario": "running.servers",
         "Server": "running.servers", "Run": "store.results"}

__all__ = ["run", "compare", "load", "import_wrk", "import_jtl", "import_hdr", "export_hdr", "export_profile", "build",
           "Server", "Scenario", "Load", "Run", "Suite", *errors.__all__, "__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        value = module if module.__name__.endswith(f".{name}") else getattr(module, name)
    else:
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError:
            raise AttributeError(f"module 'benchlab' has no attribute {name!r}") from None
        if hasattr(value, "__path__"):  # a subpackage: ``benchlab.running.spec`` is reachable, as it was when
            for loaded in dict.fromkeys(_LAZY.values()):  # this module imported the whole API at once
                importlib.import_module(f".{loaded}", __name__)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
