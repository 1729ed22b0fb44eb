"""The disturbances of a measured window, as flags: other processes on its cores, the host's steal, a dip.

Each rule reads the runs frame's columns that :mod:`benchlab.analysis.series` stored with the run as it was
measured, and gives (which runs, the explanation of run i), as every rule of :mod:`benchlab.analysis.flags`
does; that module's table lists them with the others. A window that carries one of :data:`DISTURBED` is measured
again in its fork (``retakes``) and never enters a statistic (:mod:`benchlab.analysis.validity`).
"""

from __future__ import annotations

import numpy as np

from ..schema import FLAGS

#: The flags that say a window was disturbed by something outside the run: a retake may measure it cleanly.
DISTURBED = ("interference", "steal", "dip")

#: The disturbances of a measured window (benchlab.analysis.series): other processes above their limit of the
#: server's or the load's cores, or the host stealing above its own, for at least this many seconds; a dip in the
#: window's own throughput deeper than DIP_LIMIT lasting at least DIP_S seconds. Derived from clean windows
#: measured here, with their false-flag rate (docs/machine.md, benchmarks/disturbance.py).
INTERFERENCE_S = 1.0
STEAL_S = 1.0
DIP_LIMIT = 0.15
DIP_S = 2.0


def _numbers(runs, name: str) -> np.ndarray:
    import pandas as pd

    if name not in runs:
        return np.full(len(runs), np.nan)
    return np.asarray(pd.to_numeric(runs[name], errors="coerce"), dtype=float)


def _values(runs, name: str) -> np.ndarray:
    return runs[name].astype(object).to_numpy() if name in runs else np.full(len(runs), None, dtype=object)


def _explain(flag: str, **values) -> str:
    return FLAGS[flag].format(**values)


def interference_rule(runs):
    seconds = {g: _numbers(runs, f"other_{g}_s") for g in ("server", "load")}
    cpu = {g: _numbers(runs, f"other_{g}_cpu") for g in ("server", "load")}
    cores = {g: _values(runs, f"{g}_cpus") for g in ("server", "load")}
    window, others = _numbers(runs, "elapsed_s"), _values(runs, "others")

    def explain(i: int) -> str:
        what = " and ".join(f"{cpu[g][i]:.2f} of the {g}'s core{_plural(cores[g][i])} {_cores(cores[g][i])} for "
                            f"{seconds[g][i]:.0f} s" for g in ("server", "load") if seconds[g][i] >= INTERFERENCE_S)
        who = f" (busiest: {others[i]})" if isinstance(others[i], str) and others[i] else ""
        return _explain("interference", what=what, window=0.0 if np.isnan(window[i]) else float(window[i]), who=who)

    return (seconds["server"] >= INTERFERENCE_S) | (seconds["load"] >= INTERFERENCE_S), explain


def _cores(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _plural(value) -> str:
    text = _cores(value)
    return "s" if ("," in text or "-" in text) else ""


def steal_rule(runs):
    seconds, cpu = _numbers(runs, "steal_s"), _numbers(runs, "steal_cpu")
    return seconds >= STEAL_S, lambda i: _explain("steal", cpu=float(cpu[i]), seconds=float(seconds[i]))


def dip_rule(runs):
    dip, seconds = _numbers(runs, "dip"), _numbers(runs, "dip_s")
    return (dip < -DIP_LIMIT) & (seconds >= DIP_S), lambda i: _explain("dip", dip=-float(dip[i]),
                                                                        seconds=float(seconds[i]))
