"""What a set of runs cost in wall time: from the first start to the last end, every start and warm-up included."""

from __future__ import annotations


def span(records, *, forks: bool = False) -> float | None:
    """Seconds from the first run's start to the last run's end (None when no run says when it ran): a run's
    ``started_at`` is its window's. ``forks``: from a fork's start too (its first window's
    ``metadata["fork_started_at"]``), so the runs' wall time with every start and warm-up, also where a round's
    forks warmed before any window began (``interleave="windows"``).

    >>> from benchlab.store.results import Run
    >>> run = Run(id="a", params={}, metrics={"rps": 1.0}, metadata={"fork_started_at": "2026-12-01T09:58:00Z"},
    ...           started_at="2026-12-01T10:00:00Z", finished_at="2026-12-01T10:02:30Z")
    >>> span([run]), span([run], forks=True)
    (150.0, 270.0)
    """
    import datetime as dt

    def when(text):  # an ISO time, or None
        try:
            return dt.datetime.fromisoformat(text) if isinstance(text, str) else None
        except ValueError:
            return None

    texts = [r.started_at for r in records] + [r.metadata.get("fork_started_at") for r in records if forks]
    starts = [t for t in map(when, texts) if t is not None]
    ends = [t for t in (when(r.finished_at) for r in records) if t is not None]
    if not starts or not ends:
        return None
    try:
        return max(0.0, (max(ends) - min(starts)).total_seconds())
    except TypeError:  # a time with a zone beside one without: no honest difference
        return None
