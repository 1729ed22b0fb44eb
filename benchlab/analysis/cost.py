"""What serving costs: the figures of cost a comparison judges, and where they mean something.

Each window stores the server's CPU seconds over its load and those per answer (``cpu_per_request``, measured in
:func:`benchlab.running.cost.spent`) and the resident memory the monitor sampled (``server_rss_mean``, steady;
``server_rss_max``, peak). They are judged like requests/s, fork means under the one validity rule, where the load
was a fixed rate (``load="rate"``): every server then did the same work, so a lower figure is a cheaper server. In a
closed loop each server is driven to its own throughput and CPU per request is one over it; nothing new.

A capacity search (``slo=``, :func:`benchlab.running.cost.search`) stores each window's ``capacity_rps``, judged
like requests/s (:func:`searched`), and its steps, read back as a frame by :func:`steps`. docs/cost.md says how
and its limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import COST_COLUMNS

if TYPE_CHECKING:
    import pandas as pd


def judged(runs) -> tuple[str, ...]:
    """The figures of cost (:data:`COST_COLUMNS`) worth a verdict in ``runs``: those measured, where a load was a
    fixed rate.

    >>> import pandas as pd
    >>> judged(pd.DataFrame({"load": ["rate"], "cpu_per_request": [3e-5], "server_rss_mean": [2e8],
    ...                      "server_rss_max": [None]}))
    ('cpu_per_request', 'server_rss_mean')
    >>> judged(pd.DataFrame({"load": ["duration"], "cpu_per_request": [3e-5]}))
    ()
    """
    if not len(runs) or "load" not in runs or not (runs["load"] == "rate").any():
        return ()
    return tuple(c for c in COST_COLUMNS if c in runs and runs[c].notna().any())


def searched(runs) -> bool:
    """Whether ``runs`` hold capacity searches (``slo=``): then ``capacity_rps`` gets a summary and verdicts."""
    return bool(len(runs)) and "capacity_rps" in runs and runs["capacity_rps"].notna().any()


#: The columns of :func:`steps`' frame.
STEP_COLUMNS = ("id", "server", "fork", "slo", "percentile", "step", "rate", "latency_s", "passed", "why",
                "held", "capacity_rps", "capacity_by", "kept")


def steps(records) -> pd.DataFrame:
    """Every step of every capacity search in ``records``, one row each: the window's ``id``, ``server`` and
    ``fork``, its ``slo``, the ``percentile`` judged and its ``latency_s`` at the step's offered ``rate``, whether
    it ``passed`` and ``why`` not, whether it was a whole window that ``held`` the rate found, the window's
    ``capacity_rps`` and ``capacity_by``, and whether the one validity rule ``kept`` the window
    (:func:`benchlab.analysis.validity.fit`).

    >>> steps([]).columns.tolist()[:6]
    ['id', 'server', 'fork', 'slo', 'percentile', 'step']
    """
    import pandas as pd

    from ..store.results import frame
    from .validity import fit

    searches = [r for r in records if r.status == "ok" and isinstance(r.metadata.get("search"), dict)]
    kept = dict(zip((r.id for r in searches), fit(frame(searches)))) if searches else {}
    rows = []
    for record in searches:
        found = record.metadata["search"]
        column = str(found.get("slo", "p99<")).split("<")[0]
        for number, step in enumerate(found.get("steps") or [], start=1):
            rows.append({"id": record.id, "server": record.params.get("server"), "fork": record.params.get("fork"),
                         "slo": found.get("slo"), "percentile": column, "step": number, "rate": step.get("rate"),
                         "latency_s": step.get(column), "passed": bool(step.get("passed")), "why": step.get("why"),
                         "held": bool(step.get("held")),
                         "capacity_rps": found.get("capacity_rps"), "capacity_by": found.get("capacity_by"),
                         "kept": bool(kept.get(record.id))})
    return pd.DataFrame(rows, columns=list(STEP_COLUMNS))


def offered(records) -> str | None:
    """The common rate every window of ``records`` was offered, in words, where ``rates="auto"`` found it (each
    window's ``metadata["common_rate"]``); None otherwise."""
    found = next((r.metadata["common_rate"] for r in records if r.metadata.get("common_rate")), None)
    return offered_text(found) if found else None


def offered_text(common: dict) -> str:
    """The common rate of ``rates="auto"`` (:mod:`benchlab.running.common`) in words, as the header says it.

    >>> print(offered_text({"rate": 12000.0, "by": "closed loop", "share": 0.6, "slowest": "spring-tomcat",
    ...                     "closed": {"spring-tomcat": 20000.0, "spring-jetty": 25000.0}, "connections": 64}))
    12,000 req/s offered to every server: 60% of spring-tomcat's 20,000 req/s in a closed loop at 64 connections
    >>> import textwrap
    >>> print(textwrap.fill(offered_text({"rate": 9000.0, "by": "load tool", "share": 0.6, "slowest": "nginx",
    ...     "closed": {"nginx": 2e4}, "connections": 64, "tries": [{"rate": 12000.0, "why": "nginx load tool busy 95%"},
    ...     {"rate": 9000.0, "why": "", "servers": {"nginx": {"busy": 0.41}}}]}), 100))
    9,000 req/s offered to every server: lowered (load tool) from 60% of nginx's 20,000 req/s in a
    closed loop at 64 connections (12,000 req/s: nginx load tool busy 95%); the servers 41% busy at it
    """
    slowest = common["slowest"]
    basis = (f"{common['share']:.0%} of {slowest}'s {common['closed'][slowest]:,.0f} req/s in a closed loop at "
             f"{common['connections']} connections")
    busy = [s["busy"] for s in (common.get("tries") or [{}])[-1].get("servers", {}).values() if s.get("busy")]
    low, high = (f"{min(busy):.0%}", f"{max(busy):.0%}") if busy else ("", "")
    held = f"; the servers {low if low == high else f'{low}-{high}'} busy at it" if busy else ""
    if common["by"] == "closed loop":
        return f"{common['rate']:,.0f} req/s offered to every server: {basis}{held}"
    short = "; ".join(f"{t['rate']:,.0f} req/s: {t['why']}" for t in common.get("tries", []) if t.get("why"))
    return f"{common['rate']:,.0f} req/s offered to every server: lowered ({common['by']}) from {basis} ({short}){held}"
