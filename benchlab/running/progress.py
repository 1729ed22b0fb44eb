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
    """A fork's phase as the bar says it, one word per state: ``"measure 2/3"`` is ``"window 2 of 3"``, and a
    retake of it ``"window 2 of 3 (retake 1)"``.

    >>> said("warmup"), said("measure"), said("measure 2/3"), said("spring-jetty measure 1/2")
    ('warm-up', 'window', 'window 2 of 3', 'spring-jetty window 1 of 2')
    >>> said("measure (retake 1)"), said("spring-jetty measure 2/3 (retake 2)")
    ('window (retake 1)', 'spring-jetty window 2 of 3 (retake 2)')
    """
    head, retake, tail = phase.partition(" (retake ")
    if retake:
        return f"{said(head)}{retake}{tail}"
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

    def __init__(self, planned: list[float], *, enabled: bool = True, listener=None, deadline: float | None = None):
        self.planned = planned
        #: A budget's end (``time.monotonic()``): the comparison stops there, so no ETA lies beyond it.
        self.deadline = deadline
        self.done = 0
        self.overheads: list[float] = []
        self.enabled = enabled
        self.listener = listener
        self.label = ""  # the run (or round) under way
        self.stage = ""  # its phase, as the bar says it
        self.ended: str | None = None  # what the bar says once every run is done
        self._run_began = time.monotonic()
        self._wait_began: float | None = None  # while the run waits for its cores: since when
        self._bar = None
        if enabled and (_in_notebook() or sys.stderr.isatty()):
            from tqdm.auto import tqdm

            form = NOTEBOOK_FORMAT if _in_notebook() else BAR_FORMAT
            self._bar = tqdm(total=len(planned), unit="run", file=sys.stderr, bar_format=form, leave=True)

    def eta(self) -> float:
        left = self.planned[self.done:]
        overhead = sum(self.overheads) / len(self.overheads) if self.overheads else FIRST_GUESS_OVERHEAD
        now = self._wait_began if self._wait_began is not None else time.monotonic()  # a wait stops the run's clock
        running = now - self._run_began if self.done < len(self.planned) else 0.0
        planned = max(0.0, sum(left) + overhead * len(left) - running)
        if self.deadline is None:
            return planned
        # the runs planned are max_repeats rounds; a budget stops before a round it cannot pay for
        return min(planned, max(0.0, self.deadline - time.monotonic()))

    def start(self, label: str) -> None:
        self.label = label
        self.stage = "start"
        self._run_began = time.monotonic()
        self._wait_began = None
        self._show(new_run=True)

    def phase(self, name: str) -> None:
        self._waited()
        self.stage = said(name)
        self._show()

    def waiting(self, line: str) -> None:
        """A fork's one-line note (another benchlab holds the cores, others are busy on them, a window is
        retaken, the fork failed): in the bar's description where there is a bar or a listener, else in the
        ``benchlab`` log, as the fork says it without a bar. Above a terminal's bar the line also stays, as it
        does in a log file. A wait is said once, so it says since when; the run's clock stops until its next phase
        (the wait is not the run's), and the ETA is said as counting from then."""
        if self._bar is None and self.listener is None:
            log.warning(line)
            return
        self._waited()
        if self._bar is not None and not _in_notebook():  # in a notebook, the widget's description is the place
            self._bar.write(line, file=sys.stderr)
        self.stage = line.removeprefix("benchlab: ")
        if "waiting" in line:  # not a line that only tells (a window set aside to be measured again)
            self._wait_began = time.monotonic()
            self.stage += f", since {time.strftime('%H:%M:%S')}"
        self._show()

    def _waited(self) -> None:
        """A wait that ended: the run's clock starts again where it stopped."""
        if self._wait_began is not None:
            self._run_began += time.monotonic() - self._wait_began
            self._wait_began = None

    def finish(self, *, ran: bool = True, count: int = 1) -> None:
        """``count`` planned forks are done (a round of forks that ran together ends them at once)."""
        self._waited()
        if ran:
            wall = time.monotonic() - self._run_began
            planned = sum(self.planned[self.done:self.done + count])
            self.overheads.extend([max(0.0, wall - planned) / count] * count)
        self.done += count
        self._run_began = time.monotonic()
        self._show()

    def complete(self, stored: str = "") -> None:
        """Every run that was to run has: a comparison stopped early by its precision rule is a full bar,
        not a red one (tqdm marks a bar closed short of its total as failed). The bar then says "done" and
        ``stored``: what was stored, used and left out (the caller's :class:`~benchlab.analysis.validity.Tally`),
        not the last run's phase."""
        self.planned = self.planned[:self.done]
        self._waited()
        self.ended = f"done: {stored}" if stored else "done"
        if self._bar is not None:
            self._bar.total = self.done
        self._show()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def line(self) -> str:
        """The bar's words: the run, its phase, and the ETA (under a budget, what is left of it at most); while it
        waits for cores, that the ETA counts from when they are free; at the end, what was done.

        >>> import time
        >>> bar = Progress([600.0] * 10, enabled=False, deadline=time.monotonic() + 300)
        >>> bar.start("round 1"); bar.line()
        '[1/10] round 1 - start - ETA 5m00s (budget)'
        """
        if self.ended is not None:
            return f"[{self.done}/{len(self.planned)}] {self.ended}"
        budget = self.deadline is not None and self.eta() >= self.deadline - time.monotonic() - 1
        eta = f"ETA {clock(self.eta())}{' (budget)' if budget else ''}"
        eta += " once they are free" if self._wait_began is not None else ""
        return f"[{min(self.done + 1, len(self.planned))}/{len(self.planned)}] {self.label} - {self.stage} - {eta}"

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
