"""compare()'s progress: one tqdm bar (a widget in a notebook, a bar in a terminal) with benchlab's own ETA.

The ETA comes from the planned durations (warm-up plus measure of every run left) plus the
start/verify/stop overhead observed so far (15 s a run is assumed until one has finished), not from
tqdm's rate: runs differ in length, so the rate of the runs so far says little about the ones left.
The description says the run and its phase (start, verify, warm-up, window n of m, stop). Where stderr is
neither a terminal nor a notebook (a log file, CI) it writes one plain line per run.
"""

from __future__ import annotations

import logging
import sys
import time

FIRST_GUESS_OVERHEAD = 15.0
log = logging.getLogger(__name__)

#: The bar without tqdm's own rate and remaining time: the description carries benchlab's line and ETA.
BAR_FORMAT = "|{bar:20}| {desc}"
#: In a notebook: the widget's bar, then the description. tqdm's notebook bar puts its widget only where a plain
#: ``{bar}`` stands; ``{bar:20}`` would be drawn a second time, as text, inside the description.
NOTEBOOK_FORMAT = "{bar} {desc}"

#: How a fork's phases (:class:`benchlab.running.fork.Fork`) read in the bar.
_PHASES = {"warmup": "warm-up", "measure": "window"}


def said(phase: str) -> str:
    """A fork's phase as the bar says it: ``"measure 2/3"`` is ``"window 2 of 3"``.

    >>> said("warmup"), said("measure"), said("measure 2/3"), said("spring-jetty measure 1/2")
    ('warm-up', 'window', 'window 2 of 3', 'spring-jetty window 1 of 2')
    """
    words = phase.split(" ")
    if len(words) >= 2 and words[-2] == "measure" and "/" in words[-1]:
        done, of = words[-1].split("/", 1)
        return " ".join([*words[:-2], f"window {done} of {of}"])
    return " ".join([*words[:-1], _PHASES.get(words[-1], words[-1])])


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython

        shell = get_ipython()
        return shell is not None and shell.__class__.__name__ == "ZMQInteractiveShell"
    except ImportError:
        return False


def clock(seconds: float) -> str:
    """``3725`` -> ``'1h02m'``, ``65`` -> ``'1m05s'``, ``9`` -> ``'9s'``.

    >>> clock(65)
    '1m05s'
    """
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
    """Tracks ``planned`` seconds of load per run (a list, in run order).

    ``listener``, if given, is called with this object whenever what it says changes (the panel of explore.ipynb
    shows it in its status line); it is called whether or not a bar is shown.

    Example
    -------
    >>> bar = Progress([10.0, 10.0], enabled=False)
    >>> bar.start("spring-jetty r1"); bar.phase("measure"); bar.line()
    '[1/2] spring-jetty r1 - window - ETA 50s'
    """

    def __init__(self, planned: list[float], *, enabled: bool = True, listener=None):
        self.planned = planned
        self.done = 0
        self.overheads: list[float] = []
        self.enabled = enabled
        self.listener = listener
        self.label = ""  # the run (or round) under way
        self.stage = ""  # its phase, as the bar says it
        self._run_began = time.monotonic()
        self._bar = None
        if enabled and (_in_notebook() or sys.stderr.isatty()):
            from tqdm.auto import tqdm

            form = NOTEBOOK_FORMAT if _in_notebook() else BAR_FORMAT
            self._bar = tqdm(total=len(planned), unit="run", file=sys.stderr, bar_format=form, leave=True)

    def eta(self) -> float:
        left = self.planned[self.done:]
        overhead = sum(self.overheads) / len(self.overheads) if self.overheads else FIRST_GUESS_OVERHEAD
        running = time.monotonic() - self._run_began if self.done < len(self.planned) else 0.0
        return max(0.0, sum(left) + overhead * len(left) - running)

    def start(self, label: str) -> None:
        self.label = label
        self.stage = "start"
        self._run_began = time.monotonic()
        self._show(new_run=True)

    def phase(self, name: str) -> None:
        self.stage = said(name)
        self._show()

    def waiting(self, line: str) -> None:
        """A fork's one-line note (another benchlab holds the cores, others are busy on them, a window is
        retaken, the fork failed): in the bar's description where there is a bar or a listener, else in the
        ``benchlab`` log, as the fork says it without a bar. Above a terminal's bar the line also stays, as it
        does in a log file: a failed fork was said there, and its flag says it again only at the end."""
        if self._bar is None and self.listener is None:
            log.warning(line)
            return
        if self._bar is not None and not _in_notebook():  # in a notebook, the widget's description is the place
            self._bar.write(line, file=sys.stderr)
        self.stage = line.removeprefix("benchlab: ")
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

    def complete(self) -> None:
        """Every run that was to run has: a comparison stopped early by its precision rule is a full bar,
        not a red one (tqdm marks a bar closed short of its total as failed)."""
        self.planned = self.planned[:self.done]
        if self._bar is not None:
            self._bar.total = self.done
        self._show()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def line(self) -> str:
        return (f"[{min(self.done + 1, len(self.planned))}/{len(self.planned)}] {self.label} - {self.stage}"
                f" - ETA {clock(self.eta())}")

    def _show(self, new_run: bool = False) -> None:
        if self.listener is not None:
            self.listener(self)
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.n = self.done
            self._bar.set_description_str(self.line(), refresh=False)
            self._bar.refresh()
        elif new_run:  # not a terminal (a log file, CI): one line a run, no carriage returns
            sys.stderr.write(self.line() + "\n")
            sys.stderr.flush()
