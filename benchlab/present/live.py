"""The live view: a chart of the run under way, redrawn in the notebook as each of its rows comes in.

While a JVM warms for one to three minutes a person would otherwise watch a progress bar. compare() in a
notebook (compare.ipynb's run cell) and the panel of explore.ipynb draw, under the bar, each warm-up slice of
the run under way as it ends: requests/s and the JIT's compile time (:func:`benchlab.present.charts.live`).
When the run ends the view is emptied, and the final charts take its place (compare.ipynb's cells below it,
the panel's charts).

The view takes rows through one hook, :meth:`Live.add`: a dict with ``run`` (the run's label), ``t`` (seconds),
``phase`` and ``rps``, and ``compile_s`` when known. Anything that measures per slice or per second can feed it.

Where nobody watches it costs nothing and draws nothing: outside a Jupyter kernel (a terminal, a script), and
in a batch (``benchlab report``, ``benchlab batch``, whose kernels get :data:`BATCH` in their environment),
:meth:`Live.add` returns at once.

Example
-------
>>> view = Live(enabled=False)          # a terminal: nothing is drawn
>>> view.add({"run": "spring-jetty r1", "t": 5.0, "phase": "load", "rps": 9021.0}); view.rows
[]
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .notebook import EMBED_OPTIONS, VEGALITE_MIMETYPE, as_v5

__all__ = ["Live", "watched", "BATCH"]

#: Set (to "1") in the environment of the kernels a batch runs: nobody watches them.
BATCH = "BENCHLAB_BATCH"
#: What the view shows once its run has ended: nothing.
_EMPTY = {"text/plain": ""}


def watched() -> bool:
    """Whether a person may be watching: a Jupyter kernel (JupyterLab, Notebook, VS Code), not a batch.

    >>> watched()            # a doctest runs in no kernel
    False
    """
    if os.environ.get(BATCH):
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class Live:
    """A chart of the rows of the run under way, drawn under the cell that runs it (or in ``handle``, a display
    handle made earlier, as the panel does) and redrawn at each row; :meth:`clear` empties it.

    ``enabled`` is by default :func:`watched`.
    """

    def __init__(self, *, handle: Any = None, enabled: bool | None = None):
        self.enabled = watched() if enabled is None else enabled
        self.rows: list[dict] = []
        self._handle = handle

    def add(self, row: Mapping) -> None:
        """One more row of the run under way: ``{"run", "t", "phase", "rps", "compile_s"...}``; redraws the view."""
        if not self.enabled:
            return
        self.rows.append(dict(row))
        self._show(self._bundle())

    def clear(self) -> None:
        """The run ended: forget its rows and empty the view (the final charts are drawn elsewhere)."""
        if self.rows:
            self.rows.clear()
            self._show(_EMPTY)

    def _bundle(self) -> dict:
        import pandas as pd

        from .charts import live

        spec = as_v5(live(pd.DataFrame(self.rows)).to_dict())
        # no static SVG: the view lives only while its run does, and vl-convert would cost each row ~0.1 s
        return {VEGALITE_MIMETYPE: spec, "text/plain": f"(warming: {len(self.rows)} slices so far)"}

    def _show(self, bundle: dict) -> None:
        from IPython.display import display

        metadata = {VEGALITE_MIMETYPE: {"embed_options": EMBED_OPTIONS}} if VEGALITE_MIMETYPE in bundle else {}
        if self._handle is None:
            self._handle = display(bundle, raw=True, metadata=metadata, display_id=True)
        else:
            self._handle.update(bundle, raw=True, metadata=metadata)
