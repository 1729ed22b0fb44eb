"""The ipywidgets control panel of explore.ipynb: pick servers and load, press Run, watch the charts fill in.

A press runs every chosen server ``repeats`` times, interleaved (A B A B), each on a fresh server through
:func:`benchlab.compare`, and stores each run under ``results_dir`` as it finishes. The status line says one
state at a time: ready, running (which run of how many, and its phase), done or failed. While a server warms
up in slices, a live chart draws each slice (:mod:`benchlab.present.live`). After every run the progress bar
moves and the charts and the table of runs under the panel are drawn again from all runs so far, so the first
figures show while the rest run. Each press is its own comparison: its runs are drawn apart from another
press's, each in its own facet with its own mean, never pooled, and the table names the press of each run.
For figures to publish, use :func:`benchlab.compare` (compare.ipynb): it adds the statistics.

Example
-------
>>> from benchlab.widgets import Panel
>>> panel = Panel(servers=["spring-tomcat", "spring-jetty"], duration="5s", warmup="2s")
>>> panel.servers.value
('spring-tomcat', 'spring-jetty')
>>> panel.button.click()      # in JupyterLab: press the Run button        # doctest: +SKIP
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import BenchlabError, UsageError
from .present.live import Live

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

    from .store.results import Run

__all__ = ["Panel"]

#: Where nothing is drawn yet: the status line alone says what the panel is doing.
_NOTHING = {"text/plain": ""}
#: What the panel draws under itself, in this order: the live view of the run under way, the charts, the table.
_SHOWN = ("live", "throughput", "latency", "runs")
#: The status line's states, and their colours.
_STATES = {"ready": "inherit", "running": "#1565c0", "done": "#2e7d32", "failed": "#b00020"}


class Panel:
    """Servers, scenario, connections, duration, warm-up and repeats; a Run button, a progress bar, charts.

    Parameters
    ----------
    servers : the servers chosen at first (any of the built-ins)
    scenario, connections, duration, warmup, repeats : the load chosen at first
    results_dir : where the runs are stored (default ``data/results/explore``)

    Example
    -------
    >>> Panel(connections=32).connections.value
    32
    """

    def __init__(self, *, servers: Sequence[str] = ("spring-tomcat", "spring-jetty"), scenario: str = "hello",
                 connections: int = 64, duration: str = "10s", warmup: str = "5s", repeats: int = 1,
                 results_dir: str | Path | None = None):
        import ipywidgets as w

        from . import home
        from .running.servers import BUILTINS, SCENARIOS

        unknown = [s for s in servers if s not in BUILTINS]
        if unknown:
            raise UsageError(f"the panel offers the built-in servers only, not {', '.join(unknown)}: "
                             f"choose from {', '.join(BUILTINS)}")
        scenarios = list(SCENARIOS)
        if scenario not in scenarios:
            scenarios.append(scenario)  # sleep:<ms> and the like: offered as given
        self.results_dir = Path(results_dir) if results_dir else home.results_dir() / "explore"
        self.records: list[Run] = []
        self.presses: dict[str, int] = {}  # a press's folder -> its number, in the order shown
        self._live = Live(enabled=False)  # drawn once the panel is displayed

        self.servers = w.SelectMultiple(options=list(BUILTINS), value=tuple(servers), description="servers",
                                        rows=len(BUILTINS))
        self.scenario = w.Dropdown(options=scenarios, value=scenario, description="scenario")
        self.connections = w.BoundedIntText(value=connections, min=1, max=100_000, description="connections")
        self.duration = w.Text(value=str(duration), description="duration", placeholder="e.g. 10s, 2m")
        self.warmup = w.Text(value=str(warmup), description="warm-up", placeholder="e.g. 5s")
        self.repeats = w.BoundedIntText(value=repeats, min=1, max=50, description="repeats")
        self.button = w.Button(description="Run", button_style="primary", icon="play",
                               tooltip="run every chosen server, repeats times, interleaved")
        self.clear = w.Button(description="Clear", tooltip="forget the runs shown (they stay on disk)")
        self.progress = w.IntProgress(value=0, min=0, max=1, description="progress", bar_style="info")
        self.status = w.HTML()
        self._say("ready", "choose the servers and the load, then press Run")
        # The charts and the table are display handles under the panel, not an Output widget: an update then
        # lands in the notebook's own outputs, so it is kept when the notebook is saved or executed by
        # papermill (which also stalls on large Output-widget messages).
        self._handles: dict = {}
        self.button.on_click(lambda _button: self._pressed())
        self.clear.on_click(lambda _button: self.reset())
        form = w.VBox([self.servers, self.scenario, self.connections, self.duration, self.warmup, self.repeats,
                       w.HBox([self.button, self.clear])])
        self.widget = w.VBox([form, self.progress, self.status])

    # -- what Jupyter shows --------------------------------------------------------------------------
    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
        self._handles = {name: display(_NOTHING, raw=True, display_id=True) for name in _SHOWN}
        self._live = Live(handle=self._handles["live"])
        self._draw()

    # -- running -------------------------------------------------------------------------------------
    def _say(self, state: str, text: str) -> None:
        """The status line: one state (ready, running, done, failed) and what it is about."""
        self.state = state
        self.status.value = (f'<span style="color:{_STATES[state]}"><b>{state}</b>: {html.escape(text)}</span>')

    def _running(self, progress) -> None:
        total = len(progress.planned)
        said = progress.line().split("] ", 1)[-1]  # the bar's own words (a wait, its ETA), without its "[n/m]"
        self._say("running", f"{min(progress.done + 1, total)} of {total}: {said}")

    def _pressed(self) -> None:
        try:
            self.run()
        except BenchlabError:
            pass  # already shown in the status line; a button has nowhere else to report

    def run(self) -> list[Run]:
        """Run what the panel shows (as a press of Run does) and return the runs of this press (the windows it
        kept: a disturbed window measured again stays on disk, beside them, as ``retaken``).

        Raises
        ------
        BenchlabError
            shown in the panel's status line first, e.g. a bad duration or a server that would not start.
        """
        import datetime as dt

        from .api import compare
        from .running.load import parse_duration
        chosen = list(self.servers.value)
        try:
            if not chosen:
                raise UsageError("no server chosen: pick at least one in the list")
            duration, warmup = parse_duration(self.duration.value), parse_duration(self.warmup.value, what="warmup")
        except BenchlabError as exc:
            self._say("failed", str(exc))
            raise
        self.button.disabled = True
        self.progress.max, self.progress.value, self.progress.bar_style = len(chosen) * self.repeats.value, 0, "info"
        done: list[Run] = []
        stored: list[Run] = []  # every window the press stored, retaken ones too: what its last line counts

        def ran(record: Run) -> None:
            stored.append(record)
            if record.status == "retaken":  # a disturbed window measured again: shown as such, not a run of the press
                self.records.append(record)
                return
            done.append(record)
            self._live.clear()  # the run ended: its charts replace the live view
            self.progress.value = len(done)
            if record.status == "ok":
                self.records.append(record)
                self._draw()

        # Each press is a comparison of its own: compare() gives it the interleaved order, the storage and
        # the failure handling; a directory per press keeps it from resuming an earlier press's runs.
        press = self.results_dir / dt.datetime.now(dt.timezone.utc).strftime("press-%Y%m%dT%H%M%S%f")
        try:
            compare(chosen, [self.scenario.value], [self.connections.value], repeats=self.repeats.value,
                    duration=duration, warmup=warmup, results_dir=press, progress=False, label="explore",
                    on_run=ran, on_progress=self._running, on_slice=self._live.add)
        except BenchlabError as exc:
            self.progress.bar_style = "danger"
            self._say("failed", str(exc).splitlines()[0])
            raise
        finally:
            self._live.clear()
            self.button.disabled = False
        self.progress.bar_style = "danger" if any(r.status != "ok" for r in done) else "success"
        self._say(*self.said(stored, press))
        return done

    @staticmethod
    def said(stored: Sequence[Run], where: Path | str) -> tuple[str, str]:
        """The panel's last line after a press: its state, and how many windows it stored, used, left out (and
        why), retaken and failed (:class:`benchlab.analysis.validity.Tally`, the header's count), and where.

        >>> from benchlab.store.results import Run
        >>> state, text = Panel.said([Run(id="a", params={"server": "s"}, metrics={"rps": 9e3, "jit_share": 0.2},
        ...                                metadata={})], "x")
        >>> print(state, text, sep=": ")
        done: the one window cannot be used: 1 left out (measured while their JIT was still compiling); stored under x
        """
        from .analysis.validity import Tally
        from .store.results import frame

        failures = [r for r in stored if r.status == "failed"]
        counted = f"{Tally.of(frame(list(stored)))}; stored under {where}"
        return ("failed", f"{counted}; the first failure: {failures[0].error}") if failures else ("done", counted)

    def reset(self) -> None:
        """Forget the runs shown (they stay on disk) and empty the charts."""
        self.records.clear()
        self.presses.clear()
        self.progress.value = 0
        for handle in self._handles.values():
            handle.update(_NOTHING, raw=True)
        self._say("ready", "nothing shown; the runs stay on disk. Press Run")

    def show(self, records: Iterable[Run]) -> None:
        """Show stored runs (e.g. ``benchlab.load(path).records``) as if this panel had run them."""
        from .analysis.validity import Tally
        from .store.results import frame

        self.records.extend(records)
        self.progress.max = self.progress.value = max(1, len(self.records))
        self._say("ready", f"shown: {Tally.of(frame(self.records))}; press Run to add to them")
        self._draw()

    def show_stored(self) -> None:
        """Show the runs already stored under ``results_dir`` (every press's), if there are any."""
        from .store.results import load_runs

        if self.results_dir.is_dir():
            stored = load_runs(self.results_dir) if any(self.results_dir.rglob("run.json")) else []
            if stored:
                self.show(stored)

    # -- what it shows ---------------------------------------------------------------------------------
    def press(self, record: Run) -> int:
        """The number of the press that made ``record`` (1, 2 ...; stored runs shown count as one press a folder)."""
        folder = str(Path(record.directory).parent) if record.directory else ""
        return self.presses.setdefault(folder, len(self.presses) + 1)

    @property
    def runs(self) -> pd.DataFrame:
        """The tidy frame of every run shown; with runs of several presses, its ``label`` names each run's press
        ("press 2"), so no statistic or chart pools two presses."""
        from .store.results import frame

        runs = frame(self.records)
        presses = [self.press(r) for r in self.records]
        if len(set(presses)) > 1:
            runs["label"] = [f"press {n}" for n in presses]
        return runs

    def _note(self) -> str:
        from .present import charts

        return charts.describe(self.runs, machine=charts.machine_of(self.records))

    def throughput(self) -> alt.TopLevelMixin:
        """The throughput chart of the runs shown (see :func:`benchlab.present.charts.throughput`)."""
        from .present import charts

        return charts.throughput(self.runs, note=self._note())

    def latency(self) -> alt.TopLevelMixin:
        """The latency percentile chart of the runs shown (see :func:`benchlab.present.charts.latency`)."""
        from .present import charts

        return charts.latency(self.runs, note=self._note())

    def table(self) -> pd.DataFrame:
        """The runs shown, for reading (:func:`benchlab.present.formatting.runs`): the setup where it varies, rps, p50,
        p99 in ms, errors, CPU, and the press of each run where there were several. The raw frame, in seconds, is
        :attr:`runs`."""
        from .present.formatting import runs

        shown = runs(self.runs)
        presses = [self.press(r) for r in self.records]
        if len(set(presses)) > 1:
            shown.insert(0, "press", presses)
        return shown

    def _draw(self) -> None:
        if not self._handles:
            return
        if self.records:
            self._handles["runs"].update(self.table())
        if any(r.status == "ok" for r in self.records):
            self._handles["throughput"].update(self.throughput())
            self._handles["latency"].update(self.latency())
