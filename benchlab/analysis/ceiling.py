"""The machine's ceiling: each server's throughput as a share of the fastest native reference in its cell.

When a comparison holds a reference (nginx or go-nethttp, :data:`benchlab.schema.REFERENCES`), the summary
gives every server's requests/s as a share of the fastest reference measured under the same load, on the
same cores: "spring-undertow served 24% [22%, 26%] of nginx's requests/s on 1 core". The share is a ratio of
fork means with its interval, taken as the summary takes a ratio to the baseline
(:func:`benchlab.analysis.stats.ratio_ci`, paired by round where the forks share rounds enough:
:func:`benchlab.analysis.cells.rounds`). The fastest reference is the one with the highest mean in the cell.
A reference's own share is its ratio to that fastest one (1 for the fastest).
"""

from __future__ import annotations

import math

import pandas as pd

from ..cores import expand
from ..schema import REFERENCES
from . import cells, stats

#: The columns :func:`into_summary` adds to the summary's rps rows (NaN and None on the other metrics' rows).
COLUMNS = ("reference", "share", "share_low", "share_high")
#: The cell's columns that only a JVM has: the ceiling reads a server against the references under the same load.
JVM_ONLY = ("jvm_opts", "java", "cds")


def shares(runs: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """Per cell and server, its rps as a share of the fastest reference's in the cell, with the interval at
    ``1 - alpha``: the cell's columns, ``server``, ``reference``, ``share``, ``share_low``, ``share_high``,
    ``cores`` (the server's) and ``text``. Empty when no cell holds a reference.

    >>> from benchlab.store.results import Run, frame
    >>> rounds = ((1, 1.0), (2, 1.02), (3, 0.97))
    >>> runs = [Run(id=f"{s}{r}", params={"server": s, "scenario": "hello", "connections": 64, "repeat": r,
    ...         "server_cpus": [0]}, metrics={"rps": v * k}, metadata={}, suite="x")
    ...         for r, k in rounds for s, v in (("nginx", 80000.0), ("spring-undertow", 20000.0))]
    >>> print(shares(frame(runs))["text"].iloc[1])
    spring-undertow served 25.0% [23.6%, 26.5%] of nginx's requests/s on 1 core
    """
    rows = []
    # under the same load: a JVM's own settings (jvm_opts, java, cds) do not part a Spring server from the references
    # beside it, which have none
    keys, groups = cells.group(cells.forks(cells.ok(runs)).drop(columns=list(JVM_ONLY), errors="ignore"))
    for cell, group in groups:
        cell = cell if isinstance(cell, tuple) else (cell,)
        means = group.groupby("server", sort=False)["rps"].mean()
        present = [s for s in means.index if s in REFERENCES and means[s] > 0]
        if not present:
            continue
        fastest = max(present, key=lambda s: means[s])
        base = group[group["server"] == fastest]
        for server, own in group.groupby("server", sort=False):
            a, b, paired = cells.rounds(own, base, "rps", alpha=alpha)
            share, low, high = (1.0, 1.0, 1.0) if server == fastest else stats.ratio_ci(a, b, alpha=alpha,
                                                                                        paired=paired)
            row = {c: cells.restore(v) for c, v in zip(keys, cell)}
            cores = _cores(own["server_cpus"].iloc[0]) if "server_cpus" in own else None
            row.update(server=server, reference=fastest, share=share, share_low=low, share_high=high, cores=cores,
                       text=sentence(server, fastest, share, low, high, cores))
            rows.append(row)
    return pd.DataFrame(rows, columns=[*keys, "server", *COLUMNS, "cores", "text"])


def sentence(server: str, reference: str, share: float, low: float, high: float, cores: int | None) -> str:
    """The share in words.

    >>> sentence("spring-undertow", "nginx", 0.241, 0.22, 0.26, 1)
    "spring-undertow served 24.1% [22.0%, 26.0%] of nginx's requests/s on 1 core"
    """
    interval = "" if math.isnan(low) else f" [{low:.1%}, {high:.1%}]"
    where = "" if cores is None else f" on {cores} core{'s' if cores != 1 else ''}"
    if server == reference:
        return f"{server} is the fastest reference{where}: the ceiling the others are read against"
    return f"{server} served {share:.1%}{interval} of {reference}'s requests/s{where}"


def into_summary(summary: pd.DataFrame, runs: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """The summary with :data:`COLUMNS` on its rps rows, when the runs hold a reference (else as it was)."""
    found = shares(runs, alpha=alpha)
    if found.empty or not len(summary):
        return summary
    keys = [c for c in found.columns if c not in ("server", *COLUMNS, "cores", "text") and c in summary.columns]
    by_key = {(tuple(cells.key(r[c]) for c in keys), r["server"]): r for r in found.to_dict("records")}
    summary = summary.copy()
    values: dict[str, list] = {c: [] for c in COLUMNS}
    for row in summary.to_dict("records"):
        mine = by_key.get((tuple(cells.key(row.get(c)) for c in keys), row["server"])) if row["metric"] == "rps" \
            else None
        for column in COLUMNS:
            values[column].append(mine[column] if mine else (None if column == "reference" else math.nan))
    for column in COLUMNS:
        summary[column] = values[column]
    return summary


def _cores(value) -> int | None:
    """How many cores a run's ``server_cpus`` names ("0", "0-3", [0, 1])."""
    if isinstance(value, (list, tuple)):
        return len(value)
    if isinstance(value, str) and value not in ("", "-"):
        try:
            return len(expand(value))
        except ValueError:
            return None
    return None
