"""Numbers for people, in one place: the terminal, the notebooks and the report format them here.

Requests/s get three significant figures (``9.02k``), latencies milliseconds (``12.3 ms``), an interval
is printed to the precision its own width allows (``9.0k [8.8k, 9.2k]``: a digit finer than the interval
is noise). The frame formatters turn the statistics' frames (:meth:`Suite.summary`, :meth:`Suite.verdicts`,
:meth:`Suite.table`) into frames of text for reading; the raw frames, in seconds and requests/s, stay what
the statistics return, for analysis.

>>> rate(9021.4), ms(0.012345), interval(9021.4, 8812.0, 9234.0)
('9.02k', '12.3 ms', '9.0k [8.8k, 9.2k]')
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..schema import LATENCY_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

#: Suffixes of large counts: 9,021 is 9.02k.
_SUFFIXES = ((1e9, "G"), (1e6, "M"), (1e3, "k"))
MISSING = "-"


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else number


def _place(value: float, figures: int) -> int:
    """The decimal place of the last of ``figures`` significant figures of ``value`` (0: units, -2: hundredths)."""
    return math.floor(math.log10(abs(value))) - figures + 1 if value else 0


def _rounded_place(value: float, figures: int) -> int:
    """:func:`_place` of ``value`` once rounded: 999.6 to 3 figures is 1,000, whose last figure is the tens."""
    place = _place(value, figures)
    rounded = round(value, -place)
    return _place(rounded, figures) if rounded else place


def _scaled(value: float, place: int, scale: float, suffix: str) -> str:
    decimals = max(0, round(math.log10(scale)) - place)
    text = f"{round(value, -place) / scale:,.{decimals}f}"
    return f"{'0' if text.strip('-0.,') == '' else text}{suffix}"


def _scale(value: float) -> tuple[float, str]:
    return next(((s, x) for s, x in _SUFFIXES if abs(value) >= s * 0.9995), (1.0, ""))


def rate(value, figures: int = 3) -> str:
    """Requests (or anything counted) per second, to ``figures`` significant figures, with k, M, G.

    >>> rate(9021.4), rate(18_112), rate(312.4), rate(12.345), rate(1_500_000), rate(999.6), rate(None)
    ('9.02k', '18.1k', '312', '12.3', '1.50M', '1.00k', '-')
    """
    number = _number(value)
    if number is None:
        return MISSING
    place = _rounded_place(number, figures)
    scale, suffix = _scale(round(number, -place))
    return _scaled(number, place, scale, suffix)


def ms(seconds, figures: int = 3, *, unit: bool = True) -> str:
    """A latency in seconds, shown in milliseconds to ``figures`` significant figures.

    >>> ms(0.012345), ms(0.000853), ms(0.3162), ms(1.2345), ms(None)
    ('12.3 ms', '0.853 ms', '316 ms', '1,230 ms', '-')
    """
    number = _number(seconds)
    if number is None:
        return MISSING
    text = _scaled(number * 1000.0, _rounded_place(number * 1000.0, figures), 1.0, "")
    return f"{text} ms" if unit else text


def percent(value, decimals: int = 1) -> str:
    """A fraction as a percentage: ``0.0213`` is ``2.1%``.

    >>> percent(0.0213), percent(None)
    ('2.1%', '-')
    """
    number = _number(value)
    return MISSING if number is None else f"{number:.{decimals}%}"


def change(ratio) -> str:
    """A ratio as a signed change: ``1.12`` is ``+12%``, ``0.95`` is ``-5%``.

    >>> change(1.12), change(0.95)
    ('+12%', '-5%')
    """
    number = _number(ratio)
    return MISSING if number is None else f"{number - 1:+.0%}"


def interval(mean, low, high, *, kind: str = "rate") -> str:
    """A mean and its interval, each to the precision the interval's width allows (at least 2 figures).

    ``kind`` is ``"rate"`` (requests/s, with k and M), ``"ms"`` (a latency in seconds, shown in ms),
    ``"ratio"`` (plain, ``1.05 [0.98, 1.12]``) or ``"change"`` (a ratio as ``+5% [-2%, +12%]``).

    >>> interval(9021.4, 8812.0, 9234.0), interval(0.0123, 0.0119, 0.0128, kind="ms")
    ('9.0k [8.8k, 9.2k]', '12.3 [11.9, 12.8] ms')
    >>> interval(1.052, 0.981, 1.121, kind="ratio"), interval(1.052, 0.981, 1.121, kind="change")
    ('1.05 [0.98, 1.12]', '+5% [-2%, +12%]')
    >>> interval(9021.4, None, None), interval(1800, 100, 35_400)
    ('9.02k', '1.8k [100, 35k]')
    """
    number, lo, hi = _number(mean), _number(low), _number(high)
    if number is None:
        return MISSING
    if kind == "change":
        return change(number) + (f" [{change(lo)}, {change(hi)}]" if lo is not None and hi is not None else "")
    factor = 1000.0 if kind == "ms" else 1.0
    number = number * factor
    scale, suffix = _scale(number) if kind == "rate" else (1.0, "")
    if lo is None or hi is None:
        single = {"rate": rate, "ms": lambda v: ms(v, unit=False)}.get(kind, lambda v: f"{v:.3g}")
        return single(mean) + (" ms" if kind == "ms" else "")
    lo, hi = lo * factor, hi * factor
    if lo <= 0 or hi > 10 * lo:
        # An interval over a factor of ten says only the order of magnitude: 2 figures each, no common place.
        show: Callable[[float], str] = lambda v: _scaled(v, _rounded_place(v, 2) if v else 0,  # noqa: E731
                                                         *(_scale(v) if kind == "rate" else (1.0, "")))
    else:
        # Round to the first significant digit of the half-width: finer digits are within the noise.
        width = (hi - lo) / 2
        place = min(_place(width, 1) if width > 0 else _place(number, 3), _place(number, 2))
        show = lambda v: _scaled(v, place, scale, suffix)  # noqa: E731
    return f"{show(number)} [{show(lo)}, {show(hi)}]" + (" ms" if kind == "ms" else "")


# --- frames for reading ---------------------------------------------------------------------------------

def _kind(metric: str) -> str:
    return "ms" if metric in LATENCY_COLUMNS else "rate"


def _metric_name(metric: str) -> str:
    return f"{metric} (ms)" if _kind(metric) == "ms" else f"{metric} (req/s)" if metric.endswith("rps") else metric


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
    rows = []
    for _, row in frame.iterrows():
        metric = row["metric"]
        rows.append({**{c: row[c] for c in keep}, "server": row["server"], "metric": _metric_name(metric),
                     "n": int(row["n"]), "mean [95% CI]": interval(row["mean"], row["ci_low"], row["ci_high"],
                                                              kind=_kind(metric)),
                     "cv": percent(row["cv"]),
                     "ratio to baseline [95% CI]": interval(row["ratio"], row["ratio_low"], row["ratio_high"],
                                                            kind="ratio"),
                     "flags": row["flags"]})
        if ceiling:
            rows[-1][ceiling[0]] = (f"{percent(row['share'])} [{percent(row['share_low'])}, "
                                    f"{percent(row['share_high'])}] of {row['reference']}" if row["reference"] else "")
    return pd.DataFrame(rows, columns=[*keep, "server", "metric", "n", "mean [95% CI]", "cv",
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


def per_run(frame: pd.DataFrame, metric: str = "rps") -> pd.DataFrame:
    """:meth:`Suite.table` for reading: each fork's figure (a run of one window is a fork of one), then the mean
    and its interval; how many windows and how far one fork's windows lay apart where a fork had several.

    Example
    -------
    >>> import pandas as pd
    >>> raw = pd.DataFrame([{"server": "spring-jetty", "fork 1": 9021.4, "fork 2": 9120.0, "mean": 9070.7,
    ...                      "ci_low": 8800.0, "ci_high": 9350.0, "cv": 0.008, "windows": 2,
    ...                      "within_cv": float("nan")}]).set_index("server")
    >>> per_run(raw).iloc[0].tolist()
    ['9.02k', '9.12k', '9.1k [8.8k, 9.4k]', '0.8%']
    """
    kind = _kind(metric)
    one = rate if kind == "rate" else ms
    shown = frame[[c for c in frame if c.startswith("fork ")]].apply(lambda column: column.map(one))
    shown["mean [95% CI]"] = [interval(m, lo, hi, kind=kind) for m, lo, hi in
                              zip(frame["mean"], frame["ci_low"], frame["ci_high"])]
    shown["cv"] = frame["cv"].map(percent)
    if "within_cv" in frame and frame["within_cv"].notna().any():  # forks of several windows
        shown["windows"] = frame["windows"]
        shown["cv within a fork"] = frame["within_cv"].map(percent)
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
    ['server', 'run', 'flag', 'explanation']
    >>> flags(raw.iloc[:0])
    'no flags: no run or cell tripped a noise or validity check'
    """
    import pandas as pd

    if not len(frame):
        return "no flags: no run or cell tripped a noise or validity check"
    keep = [c for c in _shown(frame) if c not in ("server", "label")]
    shown = pd.DataFrame({**{c: frame[c] for c in keep}, "server": frame["server"],
                          "run": frame["id"].map(lambda v: "(the cell)" if v is None or v != v else v),
                          "flag": frame["flag"], "explanation": frame["explanation"]})
    return shown.set_index([*keep, "server"])


def runs(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs frame for reading: one row per run, its setup where it varies, throughput, latency, errors, CPU.

    Example
    -------
    >>> import pandas as pd
    >>> raw = pd.DataFrame([{"id": "r1", "server": "spring-jetty", "status": "ok", "rps": 9021.4, "p50": 0.0021,
    ...                      "p99": 0.0123, "errors_total": 0, "server_cpu_mean": 97.5}])
    >>> [str(value) for value in runs(raw).reset_index().iloc[0]]
    ['r1', 'spring-jetty', 'ok', '9.02k', '2.10 ms', '12.3 ms', '0', '98%']
    """
    import pandas as pd

    keep = [c for c in _shown(frame) if c not in ("server", "label")]
    shown = pd.DataFrame({"id": frame["id"], "server": frame["server"], **{c: frame[c] for c in keep}})
    shown["status"] = frame["status"]
    shown["rps"] = frame["rps"].map(rate)
    for column in ("p50", "p99"):
        shown[column] = frame[column].map(ms)
    shown["errors"] = frame["errors_total"].map(lambda v: MISSING if _number(v) is None else int(v))
    shown["server CPU"] = frame["server_cpu_mean"].map(lambda v: MISSING if _number(v) is None else f"{v:.0f}%")
    return shown.set_index("id")


def warmups(frame: pd.DataFrame) -> pd.DataFrame:
    """How each run was warmed, for reading: the warm-up's time, its class (Barrett et al.: flat, warm-up,
    slowdown, no steady state), when the JIT went quiet, whether the run was called warm and by which rule,
    and what the JVM's counters say of the measured window (the share of it the JIT was compiling, the share of
    the server's core its compiler threads took, and the GC's share).

    Example
    -------
    >>> import pandas as pd
    >>> raw = pd.DataFrame([{"id": "r1", "server": "spring-jetty", "repeat": 1, "status": "ok", "warmup": "auto",
    ...                      "warmup_s": 96.2, "warmup_class": "warm-up", "jit_quiet_s": 85.0, "warm": True,
    ...                      "jit_share": 0.004, "jit_cpu_share": 0.001, "gc_share": 0.012}])
    >>> [str(value) for value in warmups(raw).iloc[0]]
    ['spring-jetty', '1', '96 s', 'warm-up', '85 s', 'yes', '0.4%', '0.1%', '1.2%']
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
        "JIT compiling in window": get("jit_share").map(percent),
        "JIT CPU in window": get("jit_cpu_share").map(percent), "GC in window": get("gc_share").map(percent),
    })
    shown.index = get("id")
    return shown
