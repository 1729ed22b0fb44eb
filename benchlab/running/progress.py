"""compare()'s progress: a tqdm bar (a widget in a notebook, a bar in a terminal) with benchlab's own ETA.

The ETA comes from the planned durations (warm-up plus measure of every run left) plus the
start/verify/stop overhead observed so far (15 s a run is assumed until one has finished), not from
tqdm's rate: runs differ in length, so the rate of the runs so far says little about the ones left.
Where stderr is neither a terminal nor a notebook (a log file, CI) it writes one plain line per run.
"""

from __future__ import annotations

import sys
import time

FIRST_GUESS_OVERHEAD = 15.0

#: The bar without tqdm's own rate and remaining time: the description carries benchlab's line and ETA.
BAR_FORMAT = "|{bar:20}| {desc}"


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython

        shell = get_ipython()
        return shell is not None and shell.__class__.__name__ == "ZMQInteractiveShell"
    except ImportError:
        return False


def _clock(seconds: float) -> str:
    """``3725`` -> ``'1h02m'``, ``65`` -> ``'1m05s'``, ``9`` -> ``'9s'``.

    >>> _clock(65)
    '1m05s'
    """
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
    """Tracks ``planned`` seconds of load per run (a list, in run order).

    Example
    -------
    >>> bar = Progress([10.0, 10.0], enabled=False)
    >>> bar.start("spring-jetty r1"); bar.phase("measure"); bar.line()
    '[1/2] spring-jetty r1 - measure - ETA 50s'
    """

    def __init__(self, planned: list[float], *, enabled: bool = True):
        self.planned = planned
        self.done = 0
        self.overheads: list[float] = []
        self.enabled = enabled
        self._label = ""
        self._phase = ""
        self._run_began = time.monotonic()
        self._bar = None
        if enabled and (_in_notebook() or sys.stderr.isatty()):
            from tqdm.auto import tqdm

            self._bar = tqdm(total=len(planned), unit="run", file=sys.stderr, bar_format=BAR_FORMAT, leave=True)

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

    def finish(self, *, ran: bool = True, count: int = 1) -> None:
        """``count`` planned forks are done (a round of forks that ran together ends them at once)."""
        if ran:
            wall = time.monotonic() - self._run_began
            planned = sum(self.planned[self.done:self.done + count])
            self.overheads.extend([max(0.0, wall - planned) / count] * count)
        self.done += count
        self._run_began = time.monotonic()
        self._show()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def line(self) -> str:
        return (f"[{min(self.done + 1, len(self.planned))}/{len(self.planned)}] {self._label} - {self._phase}"
                f" - ETA {_clock(self.eta())}")

    def _show(self, new_run: bool = False) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.n = self.done
            self._bar.set_description_str(self.line(), refresh=False)
            self._bar.refresh()
        elif new_run:  # not a terminal (a log file, CI): one line a run, no carriage returns
            sys.stderr.write(self.line() + "\n")
            sys.stderr.flush()
