"""What serving costs: the figures of cost a comparison judges, and where they mean something.

Each window stores the server's CPU seconds over its load and those per answer (``cpu_per_request``, measured in
:func:`benchlab.running.window.cost`) and the resident memory the monitor sampled (``server_rss_mean``, steady;
``server_rss_max``, peak). They are judged like requests/s, fork means under the one validity rule, where the load
was a fixed rate (``load="rate"``): every server then did the same work, so a lower figure is a cheaper server. In a
closed loop each server is driven to its own throughput and CPU per request is one over it; nothing new.
docs/cost.md says how and its limits.
"""

from __future__ import annotations

from ..schema import COST_COLUMNS


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
