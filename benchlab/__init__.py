"""benchlab: compare web servers under load, with results a reviewer would accept.

>>> import benchlab
>>> r = benchlab.run("spring-undertow", "hello", duration="5s", warmup="2s")   # doctest: +SKIP
"""

from __future__ import annotations

from .version import __version__  # noqa: E402

from . import errors  # noqa: E402
from .errors import (BenchlabError, BuildError, LoadError, ResultsError, ServerError, ToolMissing,  # noqa: E402
                     UsageError, VerifyError)
from .load import Load  # noqa: E402
from .results import Run  # noqa: E402
from .suite import Suite, load  # noqa: E402
from .jars import build  # noqa: E402
from .servers import Scenario, Server  # noqa: E402
from .api import compare, run  # noqa: E402
from .importers import import_jtl, import_wrk  # noqa: E402

__all__ = ["run", "compare", "load", "import_wrk", "import_jtl", "build", "Server", "Scenario", "Load", "Run",
           "Suite", *errors.__all__, "__version__"]
