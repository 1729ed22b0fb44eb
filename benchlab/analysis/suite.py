"""A comparison's runs as one object: the tidy frame, the samples, and every statistic over them.

:func:`load` reads stored runs into a :class:`Suite`; ``compare()`` returns one. Its methods only read the
records (:mod:`benchlab.store.results`) and hand them to the statistics modules.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import ResultsError
from ..schema import SAMPLE_FIELDS, SPECTRUM
from ..store.results import Run, collector_paused, frame, scan, warn_damaged


class Suite:
    """The runs of a comparison, with the statistics over them.

    Built from the stored ``records`` (:class:`~benchlab.store.results.Run`, also kept as ``records``);
    ``runs`` is their tidy frame (one row per run, :data:`~benchlab.schema.COLUMNS`), ``samples`` the CPU
    and memory samples of every run. ``summary()``, ``verdicts()``, ``table()`` and ``flags()`` read only
    those.

    Example
    -------
    >>> import benchlab
    >>> suite = benchlab.load("data/results")           # doctest: +SKIP
    >>> suite.verdicts()["verdict"].tolist()            # doctest: +SKIP
    """

    #: repeats="auto": {"asked", "reached", "repeats", "widest"} of the precision rule; None otherwise.
    precision: dict | None = None
    #: windows="auto": the windows a fork chosen, with the costs and spreads behind it
    #: (:func:`benchlab.analysis.precision.design`); None otherwise.
    design: dict | None = None
    #: budget=: what the budget bought (:meth:`benchlab.analysis.precision.Rule.spent`): the time asked and spent,
    #: the rounds, the widest rps interval and what more time would buy, with ``text`` saying it; None otherwise.
    budget: dict | None = None
    #: Whether verdicts of fewer rounds than the signed rank needs borrow strength for the fork variance: from the
    #: cell's other servers and this machine's history (:mod:`benchlab.analysis.borrow`). ``compare(borrow=)``.
    borrow: bool = True
    #: Where that history is read: results folders, or None for the results root's comparisons (this suite's own
    #: runs and other machines' are never its history). ``compare(history=)``.
    history: str | Sequence[str] | None = None  # as compare() took it

    def __init__(self, records: Iterable[Run], *, baseline: str | None = None, path: str | None = None,
                 damaged: Iterable[str] = (), strict: bool = False):
        self.records: tuple[Run, ...] = tuple(records)
        self.path = path
        self.strict = strict
        #: One line per damaged file (it names the file and what is wrong): run.json files left out when
        #: loading, and latency.json or samples.json files found damaged when first read (their runs keep
        #: their run.json figures). ``flags()`` shows each as a row, flag "damaged".
        self.damaged: list[str] = list(damaged)
        self._histograms: tuple | None = None
        self._folded: list | None = None  # each profiled window's stacks (None for any other), read once
        self._history = None  # the history.History of this suite's machine, read when first asked for
        self.runs = frame(self.records)
        from .stats import pick_baseline

        self.baseline = pick_baseline(self.runs, baseline)

    @property
    def wall_s(self) -> float | None:
        """What the verdict cost: seconds from the first run's start to the last run's end
        (:func:`benchlab.analysis.wall.span` of the forks), warm-ups, starts and stops included."""
        from .wall import span

        return span(self.records, forks=True)

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        left = f", {len(self.damaged)} damaged file(s) left out" if self.damaged else ""
        return f"<Suite {self.tally()}; servers {', '.join(map(str, self.runs['server'].unique()))}{left}>"

    def tally(self):
        """How many windows were used, left out (and why), retaken and failed: the count every header says
        (:class:`benchlab.analysis.validity.Tally`)."""
        from .validity import Tally

        return Tally.of(self.runs)

    def __str__(self) -> str:
        """The suite in words, for a page: which servers, and how many windows were used, left out (and why),
        retaken and failed (:meth:`tally`, the header's count too).

        >>> print(Suite([Run(id="a", params={"server": "s"}, metrics={"rps": 1.0}, metadata={})]))
        s: 1 window used
        """
        left = f"; {len(self.damaged)} damaged file(s) left out" if self.damaged else ""
        ran = self.hosts()
        said = [f"{h} {r}{' (differs)' if d else ''}"
                for h, r, d in zip(ran["host"], ran["rounds"], ran["host_differs"])]
        on = f"; rounds by host: {', '.join(said)}" if said else ""
        return f"{', '.join(map(str, self.runs['server'].unique()))}: {self.tally()}{left}{on}"

    def __add__(self, other: Suite | Iterable[Run]) -> Suite:
        more = other.records if isinstance(other, Suite) else tuple(other)
        damaged = [*self.damaged, *(other.damaged if isinstance(other, Suite) else ())]
        joined = Suite([*self.records, *more], baseline=self.baseline, damaged=damaged)
        joined.borrow, joined.history = self.borrow, self.history
        return joined

    def _each(self, read) -> list:
        """``read(run)`` for every run; a damaged file gives None, a line in :attr:`damaged` and one warning
        (strict: the ResultsError)."""
        found, new = [], []
        for record in self.records:
            try:
                found.append(read(record))
            except ResultsError as exc:
                if self.strict:
                    raise
                found.append(None)
                new.append(str(exc).splitlines()[0])
        self.damaged.extend(line for line in new if line not in self.damaged)
        warn_damaged(new)
        return found

    @property
    def samples(self):
        import pandas as pd

        frames = [f for f in self._each(lambda r: r.samples_frame() if r.samples else None) if f is not None]
        if not frames:
            return pd.DataFrame(columns=["id", "server", *SAMPLE_FIELDS])
        return pd.concat(frames, ignore_index=True)

    @property
    def histograms(self) -> tuple:
        """Each run's stored latency histogram (None where it kept none), read once per suite."""
        if self._histograms is None:
            from ..store.histogram import read

            with collector_paused():  # as for run.json: the parsed lists would make the collector walk the heap
                self._histograms = tuple(self._each(lambda r: read(r.directory)))
        return self._histograms

    @property
    def series(self):
        """Every measured window second by second, one row per run and second: ``id``, ``server``, ``status``,
        ``standing`` (used, left out and why, retaken: :func:`benchlab.analysis.validity.standing`), ``repeat``,
        ``fork``, ``window``, then :data:`benchlab.analysis.series.COLUMNS` (throughput, the run's own CPU, what
        other processes and the host took of its cores, JIT, GC, and whether the second was disturbed). Runs
        stored before the machine was watched have no machine columns (NaN); a damaged samples file gives none."""
        import pandas as pd

        from . import series
        from .validity import standing

        frames = [f for f in self._each(series.of_run) if f is not None and len(f)]
        columns = ["id", "server", "status", "standing", "repeat", "fork", "window", *series.COLUMNS]
        if not frames:
            return pd.DataFrame(columns=columns)
        found = pd.concat(frames, ignore_index=True)
        said = dict(zip(self.runs["id"], standing(self.runs)))
        repeats = dict(zip(self.runs["id"], self.runs["repeat"] if "repeat" in self.runs else [None] * len(self.runs)))
        return found.assign(standing=found["id"].map(said), repeat=found["id"].map(repeats))[columns]

    @property
    def profiles(self):
        """Where each profiled window's CPU went: a row per fork and folded stack, with its layer, its share of the
        server's CPU and its microseconds per request (:func:`benchlab.analysis.profiles.stacks`); empty, with the
        columns, when no window was profiled. A damaged profile is a line in :attr:`damaged`, its fork left out.

        >>> Suite([]).profiles.empty
        True
        """
        from . import profiles

        if self._folded is None:
            self._folded = self._each(lambda r: profiles.read(r) if profiles.profiled(r) else None)
        return profiles.stacks(self.records, folded=self._folded, runs=self.runs)

    def layers(self, baseline: str | None = None, *, alpha: float = 0.05):
        """Why one server is faster: per server and layer of its CPU (kernel, GC, JIT, server I/O, HTTP parsing,
        servlet dispatch, Spring MVC, controller, the rest), how many more microseconds a request spends there than
        on ``baseline`` (the suite's by default), with a ``1 - alpha`` interval over forks, the layers in the order
        of how much of the difference they explain (:func:`benchlab.analysis.profiles.differences`).

        >>> Suite([]).layers().empty
        True
        """
        from . import profiles

        return profiles.differences(profiles.layers(self.profiles), baseline or self.baseline, alpha=alpha)

    @property
    def warmups(self):
        """The warm-up curves, one row per slice (:func:`benchlab.analysis.steady.curves`)."""
        from .steady import curves

        return curves(self.records)

    def summary(self, metrics=("rps", "p50", "p99"), baseline: str | None = None, *, alpha: float = 0.05):
        """Per-cell statistics at confidence ``1 - alpha``; see :func:`benchlab.analysis.stats.summary`. A latency
        percentile is the merged one where the runs kept histograms (:func:`benchlab.analysis.tails.into_summary`);
        with a reference server among the runs, each rps row gives its share of the fastest reference's
        (:func:`benchlab.analysis.ceiling.into_summary`); with a server benchlab attached to, a ``unit`` column says
        its ``n`` counts windows of one process (:mod:`benchlab.analysis.custom`)."""
        from . import ceiling, custom, stats, tails
        from .validity import fit

        summary = stats.summary(self.runs, metrics=metrics if not isinstance(metrics, str) else (metrics,),
                                baseline=baseline or self.baseline, alpha=alpha)
        keep = fit(self.runs)  # once for the tails and the ceiling
        summary = tails.into_summary(summary, self._fit_histograms(keep), self.runs, baseline or self.baseline,
                                     alpha=alpha)
        summary = ceiling.into_summary(summary, self.runs[keep], alpha=alpha)
        return custom.into_summary(summary, custom.attached(self.records))

    def _fit_runs(self):
        """The runs the one rule lets into a statistic (:func:`benchlab.analysis.validity.fit`)."""
        from .validity import fit

        return self.runs[fit(self.runs)]

    def _fit_histograms(self, keep=None) -> tuple:
        """Each run's histogram where the one rule lets the run into a statistic, else None (left out); ``keep``:
        that rule's mask (:func:`benchlab.analysis.validity.fit`) where the caller has it already."""
        from .validity import fit

        keep = fit(self.runs) if keep is None else keep
        return tuple(h if kept else None for h, kept in zip(self.histograms, keep))

    def ceiling(self, *, alpha: float = 0.05):
        """Each server's requests/s as a share of the fastest reference server's in its cell, with its interval
        and a sentence; empty without a reference (nginx, go-nethttp). See :func:`benchlab.analysis.ceiling.shares`."""
        from . import ceiling

        return ceiling.shares(self._fit_runs(), alpha=alpha)

    def latency(self, percentiles=SPECTRUM, *, alpha: float = 0.05):
        """Each cell's merged latency percentiles with run bootstrap intervals.

        See :func:`benchlab.analysis.tails.latency`.
        """
        from . import tails

        return tails.latency(self._fit_histograms(), self.runs, percentiles=percentiles, alpha=alpha)

    def verdicts(self, metric: str = "rps", baseline: str | None = None, *, alpha: float = 0.05,
                 pairs: str = "baseline", borrow: bool | None = None):
        """Pairwise comparisons at level ``alpha``; see :func:`benchlab.analysis.verdicts.verdicts`. ``borrow``
        (default :attr:`borrow`): a verdict of few rounds borrows strength for its fork variance, and says so.

        >>> Suite([]).verdicts(borrow=False).empty
        True
        """
        from .verdicts import verdicts

        return verdicts(self.runs, metric=metric, baseline=baseline or self.baseline, alpha=alpha, pairs=pairs,
                        borrowing=self._borrowing() if (self.borrow if borrow is None else borrow) else None)

    def _borrowing(self):
        """The :class:`benchlab.analysis.history.History` of this suite's machine, read once (the history
        folders checked first), with this suite's own comparisons left out."""
        from collections import Counter

        from . import history

        paths = history.folders(self.history)
        if self._history is None or self._history.paths != paths:
            named = Counter(m for m in map(history.machine, self.records) if m is not None)
            mine = named.most_common(1)[0][0] if named else None
            self._history = history.History(paths, machine=mine, exclude={history.sitting(r) for r in self.records})
        return self._history

    def table(self, metric: str = "rps", *, alpha: float = 0.05):
        """The per-fork table (fork 1, fork 2, ..., mean, CI); see :func:`benchlab.analysis.stats.table`."""
        from . import stats

        return stats.table(self.runs, metric=metric, alpha=alpha)

    def hosts(self, metric: str = "rps", *, level: float | None = None):
        """Per host of ``compare(hosts=...)``: the rounds it ran, its runs and failures, and whether its runs differ
        from the other hosts' beyond the noise (``host_differs``: Student's t-test of its rounds against theirs, at
        ``level``, 0.05 over all hosts; see :mod:`benchlab.analysis.hosts`); empty when no run names a host.

        >>> Suite([]).hosts().empty
        True
        """
        from . import hosts

        return hosts.hosts(self.runs, metric, level=hosts.LEVEL if level is None else level)

    def flags(self):
        """Noise and validity flags per window and per cell, each window's row with its ``standing`` (used, left
        out, retaken, failed; see :func:`benchlab.analysis.flagframe.flags`), a row per damaged file (level "run",
        flag "damaged", the line that names the file as its explanation), and with :attr:`borrow`, a
        ``noisy_sitting`` row per cell and metric whose fork variance lay far above its prior."""
        import pandas as pd

        from ..schema import FLAGS
        from . import flagframe, hosts, sittings

        found = flagframe.flags(self.runs)
        level = hosts.LEVEL
        odd = [{"level": "host", "flag": "host_differs", "explanation": FLAGS["host_differs"].format(
            host=row.host, shift=row.shift, p=row.p, level=level / (len(ran) if len(ran) > 2 else 1))}
            for ran in [self.hosts()] for row in ran.itertuples() if row.host_differs]
        noisy = sittings.noisy(self.runs, self._borrowing(), self.baseline, alpha=0.05) if self.borrow else []
        if not self.damaged and not odd and not noisy:
            return found
        rows = pd.DataFrame([*({"level": "run", "flag": "damaged", "explanation": FLAGS["damaged"].format(line=line)}
                               for line in self.damaged), *odd, *noisy], columns=found.columns)
        return pd.concat([found, rows], ignore_index=True) if len(found) else rows


def load(*paths: str | Path, baseline: str | None = None, strict: bool = False) -> Suite:
    """Read one or more results directories back into a :class:`Suite`.

    Every good run is read; each damaged one is left out and named, a line each, in one warning and in
    ``flags()`` (flag "damaged"). ``strict=True`` raises the first damage as a ResultsError instead, here
    or when a run's latency.json or samples.json is first read.

    Example
    -------
    >>> import benchlab
    >>> benchlab.load("data/results").summary()   # doctest: +SKIP
    """
    with collector_paused():  # the frame too: 0.3 s less over 10,000 runs than pausing for the reading only
        runs, damaged = scan(*paths, strict=strict)
        suite = Suite(runs, baseline=baseline, path=str(paths[0]) if len(paths) == 1 else None, damaged=damaged,
                      strict=strict)
    warn_damaged(damaged)
    return suite
