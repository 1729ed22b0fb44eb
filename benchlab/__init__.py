"""benchlab: compare web servers under load, with results a reviewer would accept.

>>> import benchlab
>>> r = benchlab.run("spring-undertow", "hello", duration="5s", warmup="2s")   # doctest: +SKIP
"""

from __future__ import annotations

from . import errors  # noqa: E402
from .analysis.suite import Suite, load  # noqa: E402
from .api import compare, run  # noqa: E402
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
from .running import factors  # noqa: E402,F401 - the factor verdicts, as the README shows them
from .running.importers import import_jtl, import_wrk  # noqa: E402
from .running.jars import build  # noqa: E402
from .running.load import Load  # noqa: E402
from .running.servers import Scenario, Server  # noqa: E402
from .store.results import Run  # noqa: E402
from .version import __version__  # noqa: E402

__all__ = ["run", "compare", "load", "import_wrk", "import_jtl", "build", "Server", "Scenario", "Load", "Run",
           "Suite", *errors.__all__, "__version__"]
