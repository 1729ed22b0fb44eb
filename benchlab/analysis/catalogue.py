"""The published claims table read and checked: its columns, and each claim's wire and streams.

``data/published/claims.csv`` holds one published claim a row (docs/claims-sources.md: what each column holds and
where each claim is from); :mod:`benchlab.analysis.claims` judges them. A claim's **wire** is what its requests
spoke (``http1``, ``h2c``, ``h2``, ``https``: the run option ``protocol``'s values), its **streams** the requests
in flight on each HTTP/2 connection; a claim's **procedure** is how its runs were taken (the source's warm-up, runs
and sequence: the ``procedure_*`` columns).
"""

from __future__ import annotations

import math

import pandas as pd

from ..errors import ResultsError
from ..schema import PROTOCOLS as WIRES

#: The columns of ``claims.csv``, in order (docs/claims-sources.md says what each holds); :func:`read` checks them.
TABLE = ("claim", "source", "url", "experiment", "tool", "connections", "threads", "duration_s", "users", "loops",
         "rate", "pipelining", "scenario", "metric", "server", "baseline", "order", "published", "figures", "unit",
         "statement", "stack", "java", "jvm_opts", "machine", "warmup", "runs", "run_order", "untestable", "replay",
         "procedure_warmup_s", "procedure_runs", "procedure_sequence", "keepalive", "wire", "streams")


def read(path=None) -> pd.DataFrame:
    """The claims table, ``data/published/claims.csv`` by default, its columns and wires checked: a ResultsError
    naming the file when a column of :data:`TABLE` is missing, a wire is none of :data:`benchlab.schema.PROTOCOLS`,
    or one experiment holds claims over two wires (or two stream counts), which one comparison cannot replay.

    >>> read()["claim"].iloc[0]
    'wrk-undertow-rps'
    """
    from .. import home

    where = path or home.published_dir() / "claims.csv"
    table = pd.read_csv(where)
    missing = [c for c in TABLE if c not in table.columns]
    if missing:
        raise ResultsError(f"{where}: no column {', '.join(missing)} (the columns are {', '.join(TABLE)})")
    said = {(row["experiment"], wire(row), streams(row)) for row in table.to_dict("records")}
    unknown = sorted({w for _, w, _ in said if w not in WIRES})
    if unknown:
        raise ResultsError(f"{where}: wire {', '.join(unknown)}: give one of {', '.join(WIRES)} (empty: http1)")
    mixed = sorted({e for e, _, _ in said if sum(x == e for x, _, _ in said) > 1})
    if mixed:
        raise ResultsError(f"{where}: experiment {', '.join(mixed)} holds claims over more than one wire or stream "
                           "count: give each its own experiment")
    return table


def wire(claim) -> str:
    """What a claim's requests spoke (``wire``): http1 where the table leaves it empty.

    >>> wire({"wire": "h2c"}), wire({"wire": float("nan")}), wire({})
    ('h2c', 'http1', 'http1')
    """
    return str(claim.get("wire")).strip() if given(claim.get("wire")) else "http1"


def streams(claim) -> int:
    """The requests a claim's source kept in flight on each HTTP/2 connection (``streams``): one where empty.

    >>> streams({"streams": 100.0}), streams({"streams": float("nan")})
    (100, 1)
    """
    return int(float(claim["streams"])) if given(claim.get("streams")) else 1


def given(value) -> bool:  # a table cell that holds something: not None, NaN or empty
    return value is not None and not (isinstance(value, float) and math.isnan(value)) and value != ""
