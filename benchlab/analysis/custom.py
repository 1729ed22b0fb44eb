"""What a comparison says of the user's own servers: where each was measured, and which were already running.

Without ``scenarios`` a custom server is measured at its own path beside the built-in ones' scenario
(:func:`paths` says which path each was measured at).

Servers benchlab attached to rather than started (``Server.from_url``): their repeats are windows of one
process. A fork is a server process benchlab started and warmed; forks of one server differ by what a start leaves to
chance (the JIT's choices, the heap's layout), which is why fork means are the unit of every interval. A server
that was already running cannot be started again: each of its "forks" is a window of the same process, so
their spread is the process's drift from window to window, not the spread between starts, and an interval over
them says nothing of another start. The summary says so in a ``unit`` column, the design and the report in a
note (:func:`note`), instead of calling them independent forks.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

#: What a summary row's ``n`` counts: forks of a server benchlab started, or windows of one running process.
UNITS = {"started": "forks", "attached": "windows of one process"}


def attached(records: Iterable) -> list[str]:
    """The servers whose runs attached to a running server instead of starting one, in the order first seen.

    >>> from benchlab.store.results import Run
    >>> attached([Run(id="a", params={"server": "127.0.0.1:8080"}, metrics={"rps": 1.0},
    ...               metadata={"backend": {"backend": "local", "attached": True}}),
    ...           Run(id="b", params={"server": "nginx"}, metrics={"rps": 1.0}, metadata={"backend": {"pid": 7}})])
    ['127.0.0.1:8080']
    """
    found: dict[str, None] = {}
    for record in records:
        backend = (record.metadata or {}).get("backend")
        if isinstance(backend, dict) and backend.get("attached") is True:
            found[str(record.params.get("server"))] = None
    return list(found)


def note(servers: list[str]) -> str:
    """The sentence a design or a report says of attached servers ("" when there is none).

    >>> note(["127.0.0.1:8080"])[:72]
    '127.0.0.1:8080 was already running (Server.from_url): its repeats are wi'
    """
    if not servers:
        return ""
    names = ", ".join(servers)
    one = len(servers) == 1
    return (f"{names} {'was' if one else 'were'} already running (Server.from_url): {'its' if one else 'their'} "
            "repeats are windows of one process, which benchlab cannot restart, not independent forks; an interval "
            "over them shows its drift from window to window, not what another start would serve")


def into_summary(summary: pd.DataFrame, servers: list[str]) -> pd.DataFrame:
    """The summary with a ``unit`` column saying what each row's ``n`` counts, when some server was attached
    (else as it was)."""
    if not servers or not len(summary):
        return summary
    attached_ = set(servers)
    return summary.assign(unit=[UNITS["attached"] if s in attached_ else UNITS["started"] for s in summary["server"]])


def paths(records: Iterable) -> str | None:
    """Where each server was measured, when the servers of a scenario were not all measured at one path (a
    custom server at its own path beside built-in ones); None when they were.

    >>> from benchlab.store.results import Run
    >>> paths([Run(id=s, params={"server": s, "scenario": "hello", "path": p}, metrics={"rps": 1.0}, metadata={})
    ...        for s, p in (("spring-undertow", "/hello"), ("my-nginx", "/"))])
    'spring-undertow at /hello, my-nginx at /'
    """
    found: dict[str, dict[str, str]] = {}
    for record in records:
        params = record.params
        if record.status == "ok" and params.get("path"):
            found.setdefault(str(params.get("scenario")), {})[str(params["server"])] = params["path"]
    if all(len(set(at.values())) < 2 for at in found.values()):
        return None
    several = len(found) > 1
    return "; ".join((f"{scenario}: " if several else "") + ", ".join(f"{s} at {p}" for s, p in at.items())
                     for scenario, at in found.items())
