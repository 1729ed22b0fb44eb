"""A progress bar for compare(): a widget in a notebook, a line on stderr in a terminal.

The ETA comes from the planned durations (warm-up plus measure of every run left) plus the
start/verify/stop overhead observed so far (15 s a run is assumed until one has finished).
"""

from __future__ import annotations

import sys
import time

FIRST_GUESS_OVERHEAD = 15.0


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython

        shell = get_ipython()
        return shell is not None and shell.__class__.__name__ == "ZMQInteractiveShell"
    except ImportError:
        return False


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
    """Tracks ``planned`` seconds of load per run (a list, in run order)."""

    def __init__(self, planned: list[float], *, enabled: bool = True):
        self.planned = planned
        self.done = 0
        self.overheads: list[float] = []
        self.enabled = enabled
        self._label = ""
        self._phase = ""
        self._run_began = time.monotonic()
        self._widget = self._text = None
        if enabled and _in_notebook():
            import ipywidgets
            from IPython.display import display

            self._widget = ipywidgets.IntProgress(min=0, max=len(planned), value=0, description="runs")
            self._text = ipywidgets.HTML()
            display(ipywidgets.HBox([self._widget, self._text]))

    def eta(self) -> float:
        left = self.planned[self.done:]
        overhead = sum(self.overheads) / len(self.overheads) if self.overheads else FIRST_GUESS_OVERHEAD
        running = time.monotonic() - self._run_began if self.done < len(self.planned) else 0.0
        return max(0.0, sum(left) + overhead * len(left) - running)

    def start(self, label: str) -> None:
        self._label = label
        self._phase = "start"
        self._run_began = time.monotonic()
        self._show(new_run=True)

    def phase(self, name: str) -> None:
        self._phase = name
        self._show()

    def finish(self, *, ran: bool = True) -> None:
        if ran:
            wall = time.monotonic() - self._run_began
            self.overheads.append(max(0.0, wall - self.planned[self.done]))
        self.done += 1
        self._run_began = time.monotonic()
        self._show()

    def close(self) -> None:
        if self.enabled and self._widget is None:
            sys.stderr.write("\n" if sys.stderr.isatty() else "")
            sys.stderr.flush()

    def line(self) -> str:
        return (f"[{min(self.done + 1, len(self.planned))}/{len(self.planned)}] {self._label} - {self._phase}"
                f" - ETA {_clock(self.eta())}")

    def _show(self, new_run: bool = False) -> None:
        if not self.enabled:
            return
        if self._widget is not None:
            self._widget.value = self.done
            self._text.value = self.line()
            return
        if sys.stderr.isatty():
            sys.stderr.write("\r\033[K" + self.line())
        elif new_run:  # not a terminal (a log file, CI): one line a run, no carriage returns
            sys.stderr.write(self.line() + "\n")
        sys.stderr.flush()
