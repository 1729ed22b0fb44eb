"""The statistics' frames for reading: the notebooks and the report show these, formatted by :mod:`.numbers`.

The frame formatters turn the statistics' frames (:meth:`Suite.summary`, :meth:`Suite.verdicts`,
:meth:`Suite.table`, the runs and their warm-ups) into frames of text for reading, one rounding rule per
column; the raw frames, in seconds and requests/s, stay what the statistics return, for analysis. The
number formatters themselves (``rate``, ``ms``, ``interval``, ``cores``, ``Note`` ...) live in
:mod:`benchlab.present.numbers` and are named here too, as the notebooks call them.

>>> rate(9021.4), ms(0.012345), interval(9021.4, 8812.0, 9234.0)
('9.02k', '12.3 ms', '9.0k [8.8k, 9.2k]')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import LATENCY_COLUMNS
from .numbers import MISSING, UNITS, Note, _number, change, cores, interval, ms, percent, rate, ratio

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MISSING", "Note", "change", "cores", "interval", "ms", "percent", "rate", "ratio", "summary",
           "verdicts", "per_fork", "flags", "runs", "warmups", "unit_kind", "metric_name"]


# --- frames for reading ---------------------------------------------------------------------------------

def unit_kind(metric: str) -> str:
    """How a metric's figures are shown (:func:`interval`'s ``kind``): latencies in ms, CPU per request in µs,
    memory in MiB, the rest as rates."""
    if metric in LATENCY_COLUMNS:
        return "ms"
    return {"cpu_per_request": "us", "server_rss_mean": "MiB", "server_rss_max": "MiB"}.get(metric, "rate")


def metric_name(metric: str) -> str:
    """A metric's name with its unit: ``p99 (ms)``, ``cpu_per_request (µs)``, ``rps (req/s)``."""
    unit = UNITS.get(unit_kind(metric), (1.0, ""))[1].strip() or ("req/s" if metric.endswith("rps") else "")
    return f"{metric} ({unit})" if unit else metric


def _shown(frame: pd.DataFrame) -> list[str]:
    from ..analysis.cells import varying

    return [c for c in varying(frame) if c in frame]


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """:meth:`Suite.summary` for reading: the mean with its interval, the ratio to the baseline with its own.

    Example
    -------
    >>> import pandas as pd
    >>> raw = pd.DataFrame([{"server": "spring-jetty", "metric": "p99", "n": 3, "mean": 0.0123, "ci_low": 0.0119,
    ...                      "ci_high": 0.0128, "cv": 0.021, "ratio": 1.05, "ratio_low": 0.98, "ratio_high": 1.12,
    ...                      "flags": ""}])
    >>> [str(value) for value in summary(raw).reset_index().iloc[0]]
    ['spring-jetty', 'p99 (ms)', '3', '12.3 [11.9, 12.8] ms', '2.1%', '1.05 [0.98, 1.12]', '']
    """
    import pandas as pd

    keep = _shown(frame)
    ceiling = ["share of the fastest reference [95% CI]"] if "share" in frame else []  # benchlab.analysis.ceiling
    # where the one rule left windows out, how many went in and how many not: the header's count, cell by cell
    counted = ["windows used", "left out"] if "left_out" in frame and (frame["left_out"] > 0).any() else []
    rows = []
    for _, row in frame.iterrows():
        metric = row["metric"]
        rows.append({**{c: row[c] for c in keep}, "server": row["server"], "metric": metric_name(metric),
                     "n": int(row["n"]), "mean [95% CI]": interval(row["mean"], row["ci_low"], row["ci_high"],
                                                              kind=unit_kind(metric)),
                     "cv": percent(row["cv"]),
                     "ratio to baseline [95% CI]": interval(row["ratio"], row["ratio_low"], row["ratio_high"],
                                                            kind="ratio"),
                     "flags": row["flags"]})
        if counted:
            rows[-1].update({"windows used": int(row["windows"]), "left out": int(row["left_out"])})
        if ceiling:
            rows[-1][ceiling[0]] = (f"{percent(row['share'])} [{percent(row['share_low'])}, "
                                    f"{percent(row['share_high'])}] of {row['reference']}" if row["reference"] else "")
    return pd.DataFrame(rows, columns=[*keep, "server", "metric", "n", *counted, "mean [95% CI]", "cv",
                                       "ratio to baseline [95% CI]", *ceiling, "flags"]
                        ).set_index([*keep, "server", "metric"])


def verdicts(frame: pd.DataFrame) -> pd.DataFrame:
    """:meth:`Suite.verdicts` for reading: the change with its interval, the p-value, the test, the answer.

    Example
    -------
    >>> import pandas as pd
    >>> raw = pd.DataFrame([{"metric": "rps", "server": "spring-jetty", "baseline": "spring-tomcat", "change": 0.12,
    ...                      "change_low": 0.08, "change_high": 0.15, "p_value": 0.008, "test": "Mann-Whitney",
    ...                      "significant": True}])
    >>> verdicts(raw).reset_index().iloc[0].tolist()
    ['spring-jetty', 'spring-tomcat', 'rps', '+12% [+8%, +15%]', '0.008', 'Mann-Whitney', 'yes']
    """
    import pandas as pd

    keep = [c for c in _shown(frame) if c not in ("server", "baseline", "metric")]
    rows = [{**{c: row[c] for c in keep}, "server": row["server"], "against": row["baseline"],
             "metric": row["metric"],
             "change [95% CI]": interval(1 + row["change"], 1 + row["change_low"], 1 + row["change_high"],
                                         kind="change"),
             "p": MISSING if _number(row["p_value"]) is None else f"{row['p_value']:.2g}",
             "test": row["test"], "significant": "yes" if row["significant"] else "no"}
            for _, row in frame.iterrows()]
    return pd.DataFrame(rows, columns=[*keep, "server", "against", "metric", "change [95% CI]", "p", "test",
                                       "significant"]).set_index([*keep, "server"])


def per_fork(frame: pd.DataFrame, metric: str = "rps") -> pd.DataFrame:
    """:meth:`Suite.table` for reading: each fork's figure (a run of one window is a fork of one), then the mean
    and its interval; how many windows and how far one fork's windows lay apart where a fork had several.

    Example
    -------
    >>> import pandas as pd
    >>> raw = pd.DataFrame([{"server": "spring-jetty", "fork 1": 9021.4, "fork 2": 9120.0, "mean": 9070.7,
    ...                      "ci_low": 8800.0, "ci_high": 9350.0, "cv": 0.008, "windows": 2,
    ...                      "within_cv": float("nan")}]).set_index("server")
    >>> per_fork(raw).iloc[0].tolist()
    ['9.02k', '9.12k', '9.1k [8.8k, 9.4k]', '0.8%']
    """
    kind = unit_kind(metric)
    one = rate if kind == "rate" else ms
    shown = frame[[c for c in frame if c.startswith("fork ")]].apply(lambda column: column.map(one))
    shown["mean [95% CI]"] = [interval(m, lo, hi, kind=kind) for m, lo, hi in
                              zip(frame["mean"], frame["ci_low"], frame["ci_high"])]
    shown["cv"] = frame["cv"].map(percent)
    if "within_cv" in frame and frame["within_cv"].notna().any():  # forks of several windows
        shown["windows"] = frame["windows"]
        shown["cv within a fork"] = frame["within_cv"].map(percent)
    if "left out" in frame and frame["left out"].astype(bool).any():  # the one rule's, as the summary's mean
        shown["windows used"] = frame["windows"]
        shown["left out of the mean"] = frame["left out"]
    return shown


def flags(frame: pd.DataFrame) -> pd.DataFrame | str:
    """:meth:`Suite.flags` for reading: the setup only where it varies, then whose flag it is and why, one
    row each; a sentence when there is none.

    Example
    -------
    >>> import pandas as pd
    >>> raw = pd.DataFrame([{"level": "run", "id": "r1", "scenario": "hello", "cds": True, "server": "spring-jetty",
    ...                      "flag": "drifting", "explanation": "throughput moved -9.2%"}])
    >>> flags(raw).reset_index().columns.tolist()
    ['server', 'run', 'window', 'flag', 'explanation']
    >>> flags(raw.iloc[:0])
    no flags: no run or cell tripped a noise or validity check
    """
    import pandas as pd

    if not len(frame):
        return Note("no flags: no run or cell tripped a noise or validity check")
    keep = [c for c in _shown(frame) if c not in ("server", "label")]
    shown = pd.DataFrame({**{c: frame[c] for c in keep}, "server": frame["server"],
                          "run": frame["id"].map(lambda v: "(the cell)" if v is None or v != v else v),
                          # which window the flag is of: used, left out, retaken (analysis.validity.standing)
                          "window": frame.get("standing", pd.Series(None, index=frame.index)).map(
                              lambda v: "" if v is None or v != v else v),
                          "flag": frame["flag"], "explanation": frame["explanation"]})
    return shown.set_index([*keep, "server"])


def runs(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs frame for reading: one row per run, its setup where it varies, whether the window was used (or left
    out and why, retaken, failed), throughput, latency, errors, CPU.

    Example
    -------
    >>> import pandas as pd
    >>> raw = pd.DataFrame([{"id": "r1", "server": "spring-jetty", "status": "ok", "rps": 9021.4, "p50": 0.0021,
    ...                      "p99": 0.0123, "errors_total": 0, "server_cpu_mean": 97.5}])
    >>> [str(value) for value in runs(raw).reset_index().iloc[0]]
    ['r1', 'spring-jetty', 'used', '9.02k', '2.10 ms', '12.3 ms', '0', '0.97 cores']
    """
    import pandas as pd

    from ..analysis.validity import standing

    keep = [c for c in _shown(frame) if c not in ("server", "label")]
    shown = pd.DataFrame({"id": frame["id"], "server": frame["server"], **{c: frame[c] for c in keep}})
    shown["window"] = standing(frame)  # used, left out (its flags), retaken, failed: what the charts draw
    shown["rps"] = frame["rps"].map(rate)
    for column in ("p50", "p99"):
        shown[column] = frame[column].map(ms)
    shown["errors"] = frame["errors_total"].map(lambda v: MISSING if _number(v) is None else int(v))
    # the monitor's per cent of one core, said in cores as the warm-up table says the JIT's
    shown["server CPU"] = frame["server_cpu_mean"].map(lambda v: cores(None if _number(v) is None else v / 100))
    return shown.set_index("id")


def warmups(frame: pd.DataFrame) -> pd.DataFrame:
    """How each run was warmed, for reading: the warm-up's time, its class (Barrett et al.: flat, warm-up,
    slowdown, no steady state), when the JIT went quiet, whether the run was called warm and by which rule,
    and what the JVM's counters say of the measured window: the JIT's compile time and its compiler threads' CPU,
    each per second of the window, in cores (two compiler threads can compile 1.8 s a second: "1.80 cores"), and
    the share of the window the GC paused.

    Example
    -------
    >>> import pandas as pd
    >>> raw = pd.DataFrame([{"id": "r1", "server": "spring-jetty", "repeat": 1, "status": "ok", "warmup": "auto",
    ...                      "warmup_s": 96.2, "warmup_class": "warm-up", "jit_quiet_s": 85.0, "warm": True,
    ...                      "jit_share": 1.794, "jit_cpu_share": 0.21, "gc_share": 0.012}])
    >>> [str(value) for value in warmups(raw).iloc[0]]
    ['spring-jetty', '1', '96 s', 'warm-up', '85 s', 'yes', '1.79 cores', '0.21 cores', '1.2%']
    """
    import pandas as pd

    def seconds(value) -> str:
        number = _number(value)
        return MISSING if number is None else f"{number:.0f} s"

    def called(row) -> str:
        if row.get("warmup") != "auto":
            return "fixed, not judged"
        return {True: "yes", False: "no: limit reached"}.get(row.get("warm"), MISSING)

    from ..analysis.cells import ok as finished

    ok = finished(frame)
    get = lambda column: ok[column] if column in ok else pd.Series([None] * len(ok), index=ok.index)  # noqa: E731
    shown = pd.DataFrame({
        "server": get("server"), "repeat": get("repeat"), "warm-up": get("warmup_s").map(seconds),
        "class": get("warmup_class").map(lambda v: v if isinstance(v, str) else MISSING),
        "JIT quiet at": get("jit_quiet_s").map(seconds),
        "warm": [called(row) for row in ok.to_dict("records")],
        "JIT compiling in window": get("jit_share").map(cores),
        "JIT CPU in window": get("jit_cpu_share").map(cores), "GC in window": get("gc_share").map(percent),
    })
    shown.index = get("id")
    return shown
