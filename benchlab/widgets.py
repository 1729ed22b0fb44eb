"""The ipywidgets control panel of explore.ipynb: pick servers and load, press Run, watch the charts fill in.

A press is a comparison of its own, through :func:`benchlab.compare`: every chosen server ``repeats`` times,
interleaved (A B A B), each on a fresh server, each run stored as it finishes in a folder of the press under
``results_dir``. After every run the progress bar moves and the charts and the table of runs under the panel
are drawn again from all runs so far, so the first figures show while the rest run. Runs of presses with
other settings (a 3 s run after a 10 s one) are drawn apart, each setting in its own panel, never pooled
into one mean. For figures to publish, use compare.ipynb: it adds the statistics, the verdicts and the flags.

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

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

    from .store.results import Run

__all__ = ["Panel"]

#: Shown where the charts and the table will be until the first run finishes.
_PLACEHOLDER = {"text/plain": "(the charts appear here when the first run finishes)"}
_NO_RUNS = {"text/plain": "(no runs shown: press Run)", "text/html": "<p><em>(no runs shown: press Run)</em></p>"}
#: What the panel draws under itself, in this order.
_SHOWN = ("throughput", "latency", "runs")


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
        self.status = w.HTML(value="press Run")
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
        self._handles = {name: display(_NO_RUNS if name == "runs" else _PLACEHOLDER, raw=True, display_id=True)
                         for name in _SHOWN}
        self._draw()

    # -- running -------------------------------------------------------------------------------------
    def _say(self, text: str, *, error: bool = False) -> None:
        color = "#b00020" if error else "inherit"
        self.status.value = f'<span style="color:{color}">{html.escape(text)}</span>'

    def _pressed(self) -> None:
        try:
            self.run()
        except BenchlabError:
            pass  # already shown in the status line; a button has nowhere else to report

    def run(self) -> list[Run]:
        """Run what the panel shows (as a press of Run does) and return the runs of this press.

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
            self._say(f"error: {exc}", error=True)
            raise
        total = len(chosen) * self.repeats.value
        self.button.disabled = True
        self.progress.max, self.progress.value, self.progress.bar_style = total, 0, "info"
        self._say(f"running {total} run(s), interleaved: {', '.join(chosen)}")
        done: list[Run] = []

        def ran(record: Run) -> None:
            done.append(record)
            self.progress.value = len(done)
            if record.status == "ok":
                self.records.append(record)
                self._draw()
            self._say(f"run {len(done)}/{total}: {record.params['server']} (repeat {record.params['repeat']}) "
                      + ("done" if record.status == "ok" else f"failed: {record.error}"),
                      error=record.status != "ok")

        # Each press is a comparison of its own: compare() gives it the interleaved order, the storage and
        # the failure handling; a directory per press keeps it from resuming an earlier press's runs.
        press = self.results_dir / dt.datetime.now(dt.timezone.utc).strftime("press-%Y%m%dT%H%M%S%f")
        try:
            compare(chosen, [self.scenario.value], [self.connections.value], repeats=self.repeats.value,
                    duration=duration, warmup=warmup, results_dir=press, progress=False, label="explore",
                    on_run=ran)
        except BenchlabError as exc:
            self.progress.bar_style = "danger"
            self._say(f"error: {str(exc).splitlines()[0]}", error=True)
            raise
        finally:
            self.button.disabled = False
        failed = sum(r.status != "ok" for r in done)
        self.progress.bar_style = "danger" if failed else "success"
        self._say(f"{len(done) - failed} run(s) stored under {press}" + (f", {failed} failed" if failed else ""),
                  error=bool(failed))
        return done

    def reset(self) -> None:
        """Forget the runs shown (they stay on disk) and empty the charts."""
        self.records.clear()
        self.progress.value = 0
        for name, handle in self._handles.items():
            handle.update(_NO_RUNS if name == "runs" else _PLACEHOLDER, raw=True)
        self._say("press Run")

    def show(self, records: Iterable[Run]) -> None:
        """Show stored runs (e.g. ``benchlab.load(path).records``) as if this panel had run them."""
        self.records.extend(records)
        self.progress.max = self.progress.value = max(1, len(self.records))
        self._say(f"{len(self.records)} stored run(s)")
        self._draw()

    # -- what it shows ---------------------------------------------------------------------------------
    @property
    def runs(self) -> pd.DataFrame:
        """The tidy frame of every run shown."""
        from .store.results import frame

        return frame(self.records)

    def _note(self) -> str:
        from .present import charts

        metadata = next((r.metadata for r in self.records if r.status == "ok"), {})
        return charts.describe(self.runs, machine=charts.machine(metadata))

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
        p99 in ms, errors, CPU. The raw frame, in seconds, is :attr:`runs`."""
        from .present.formatting import runs

        return runs(self.runs)

    def _draw(self) -> None:
        if not self._handles:
            return
        if self.records:
            self._handles["runs"].update(self.table())
        if any(r.status == "ok" for r in self.records):
            self._handles["throughput"].update(self.throughput())
            self._handles["latency"].update(self.latency())
