"""Summaries, confidence intervals, significance, noise flags and per-run tables.

Everything here reads the tidy runs frame (:data:`benchlab.results.COLUMNS`) and nothing else.

Confidence intervals of a mean are Student t intervals below 10 repeats (a bootstrap of 3 values
is too coarse to mean anything) and percentile bootstrap intervals (10 000 resamples, fixed seed) from
10 repeats on; ``ci_method`` says which. Ratios to the baseline use a two-sample percentile bootstrap
of the ratio of means.

A difference is *significant* when a test rejects equality at ``alpha`` **and** the bootstrap interval
of the ratio excludes 1. The test is Mann-Whitney U (scipy) when the repeats allow it to reach
``alpha`` at all; with 3 against 3 its smallest two-sided p is 0.1, so there Welch's t-test is used, and
the verdict names the test.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .schema import CELL as _CELL
from .schema import FLAGS, LATENCY_COLUMNS

#: The columns that, with the server, name a cell of a comparison.
CELL = list(_CELL)

#: Metrics where lower is better (latencies); the rest (rps) are higher-is-better.
LOWER_IS_BETTER = set(LATENCY_COLUMNS)

CV_LIMIT = 0.05
TAIL_SPREAD_LIMIT = 3.0
GENERATOR_BUSY_LIMIT = 0.90
LITTLE_LIMIT = 3.0
RATE_SHORTFALL_LIMIT = 0.95
BOOTSTRAP_RESAMPLES = 10_000
SEED = 20261130



def _finite(values) -> np.ndarray:
    array = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
    return array[np.isfinite(array)]


def mean_ci(values, *, confidence: float = 0.95) -> tuple[float, float, str]:
    """(low, high, method) of the mean: t below 10 values, bootstrap from 10 on.

    >>> low, high, method = mean_ci([10.0, 11.0, 12.0]); round(low, 2), round(high, 2), method
    (8.52, 13.48, 't')
    """
    x = _finite(values)
    n = len(x)
    if n < 2:
        return math.nan, math.nan, "none"
    if np.all(x == x[0]):
        return float(x[0]), float(x[0]), "t" if n < 10 else "bootstrap"
    from scipy import stats

    if n < 10:
        half = stats.t.ppf((1 + confidence) / 2, n - 1) * x.std(ddof=1) / math.sqrt(n)
        return float(x.mean() - half), float(x.mean() + half), "t"
    result = stats.bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=BOOTSTRAP_RESAMPLES,
                             method="percentile", random_state=np.random.default_rng(SEED))
    return float(result.confidence_interval.low), float(result.confidence_interval.high), "bootstrap"


def describe(values) -> dict:
    """n, mean, median, stdev, cv, min, max and the 95% CI of the mean."""
    x = _finite(values)
    n = len(x)
    if n == 0:
        return {"n": 0, "mean": math.nan, "median": math.nan, "stdev": math.nan, "cv": math.nan,
                "min": math.nan, "max": math.nan, "ci_low": math.nan, "ci_high": math.nan, "ci_method": "none"}
    mean = float(x.mean())
    stdev = float(x.std(ddof=1)) if n > 1 else math.nan
    low, high, method = mean_ci(x)
    return {"n": n, "mean": mean, "median": float(np.median(x)), "stdev": stdev,
            "cv": stdev / mean if n > 1 and mean else math.nan, "min": float(x.min()), "max": float(x.max()),
            "ci_low": low, "ci_high": high, "ci_method": method}


def ratio_ci(values, baseline, *, confidence: float = 0.95) -> tuple[float, float, float]:
    """(ratio of means, low, high): a two-sample percentile bootstrap of mean(values)/mean(baseline)."""
    a, b = _finite(values), _finite(baseline)
    if len(a) == 0 or len(b) == 0 or b.mean() == 0:
        return math.nan, math.nan, math.nan
    ratio = float(a.mean() / b.mean())
    if len(a) < 2 or len(b) < 2:
        return ratio, math.nan, math.nan
    if np.all(a == a[0]) and np.all(b == b[0]):
        return ratio, ratio, ratio
    from scipy import stats

    result = stats.bootstrap((a, b), lambda x, y, axis=-1: np.mean(x, axis=axis) / np.mean(y, axis=axis),
                             vectorized=True, paired=False, confidence_level=confidence,
                             n_resamples=BOOTSTRAP_RESAMPLES, method="percentile",
                             random_state=np.random.default_rng(SEED))
    return ratio, float(result.confidence_interval.low), float(result.confidence_interval.high)


def test_difference(values, baseline, *, alpha: float = 0.05) -> tuple[str, float]:
    """(test name, two-sided p): Mann-Whitney U when it can reach ``alpha`` at these sizes, else Welch t."""
    from scipy import stats

    a, b = _finite(values), _finite(baseline)
    if len(a) < 2 or len(b) < 2:
        return "none", math.nan
    smallest_p = 2.0 / math.comb(len(a) + len(b), len(a))
    if smallest_p < alpha:
        return "Mann-Whitney", float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    if np.all(a == a[0]) and np.all(b == b[0]):
        return "Welch t", 0.0 if a[0] != b[0] else 1.0
    return "Welch t", float(stats.ttest_ind(a, b, equal_var=False).pvalue)


# --- the frame-level functions --------------------------------------------------------------------------

def _ok(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == "ok"] if "status" in runs else runs


def _cells(runs: pd.DataFrame):
    keys = [c for c in CELL if c in runs]
    filled = runs.assign(**{c: runs[c].astype(object).where(runs[c].notna(), "-") for c in keys})
    return keys, filled.groupby(keys, sort=False, dropna=False)


def _restore(value):
    return None if value == "-" else value


def pick_baseline(runs: pd.DataFrame, baseline: str | None = None) -> str | None:
    servers = list(dict.fromkeys(runs["server"]))
    if baseline is not None:
        if baseline not in servers:
            from .errors import UsageError

            raise UsageError(f"unknown baseline {baseline!r}: choose one of {', '.join(map(str, servers))}")
        return baseline
    return servers[0] if servers else None


def summary(runs: pd.DataFrame, metrics=("rps", "p50", "p99"), baseline: str | None = None) -> pd.DataFrame:
    """Per cell, server and metric: n, mean, median, stdev, cv, min, max, the 95% CI and the ratio to
    the baseline server with its CI, plus the cell's flags.

    Example
    -------
    >>> import benchlab
    >>> benchlab.load("data/results").summary(["rps", "p99"])  # doctest: +SKIP
    """
    baseline = pick_baseline(runs, baseline)
    cell_flags = flags(runs)
    rows = []
    keys, groups = _cells(_ok(runs))
    for cell, group in groups:
        cell = cell if isinstance(cell, tuple) else (cell,)
        base = group[group["server"] == baseline]
        for server, server_runs in group.groupby("server", sort=False):
            mine = cell_flags[(cell_flags["server"] == server)]
            for c, v in zip(keys, cell):
                mine = mine[mine[c].astype(object).where(mine[c].notna(), "-") == v] if c in mine else mine
            for metric in metrics:
                row = {c: _restore(v) for c, v in zip(keys, cell)}
                row.update(server=server, metric=metric, **describe(server_runs[metric]))
                ratio, low, high = ratio_ci(server_runs[metric], base[metric]) if len(base) else (math.nan,) * 3
                row.update(ratio=ratio, ratio_low=low, ratio_high=high,
                           flags=",".join(sorted(set(mine["flag"]))))
                rows.append(row)
    return pd.DataFrame(rows, columns=[*keys, "server", "metric", "n", "mean", "median", "stdev", "cv", "min",
                                       "max", "ci_low", "ci_high", "ci_method", "ratio", "ratio_low",
                                       "ratio_high", "flags"])


def _format_change(metric: str, ratio: float, low: float, high: float) -> str:
    if math.isnan(ratio):
        return f"{metric} n/a"
    text = f"{ratio - 1:+.0%} {metric}"
    if not math.isnan(low):
        text += f" [{low - 1:+.0%}, {high - 1:+.0%}]"
    return text


def verdicts(runs: pd.DataFrame, metric: str = "rps", baseline: str | None = None, *,
             alpha: float = 0.05, pairs: str = "baseline") -> pd.DataFrame:
    """Pairwise comparisons per cell: each server against the baseline (``pairs="all"``: every pair).

    The ``verdict`` column reads, for example, ``"spring-jetty vs spring-tomcat: +78% rps [+70%, +86%],
    significant (Mann-Whitney p=0.008)"`` or ``"... not distinguishable at 3 repeats (Welch t p=0.31)"``.
    """
    baseline = pick_baseline(runs, baseline)
    rows = []
    keys, groups = _cells(_ok(runs))
    for cell, group in groups:
        cell = cell if isinstance(cell, tuple) else (cell,)
        servers = list(dict.fromkeys(group["server"]))
        if pairs == "all":
            pairings = [(a, b) for i, b in enumerate(servers) for a in servers[i + 1:]]
        else:
            pairings = [(s, baseline) for s in servers if s != baseline and baseline in servers]
        for server, against in pairings:
            a = group.loc[group["server"] == server, metric]
            b = group.loc[group["server"] == against, metric]
            ratio, low, high = ratio_ci(a, b)
            test, p = test_difference(a, b, alpha=alpha)
            excludes_one = not math.isnan(low) and (low > 1 or high < 1)
            significant = bool(not math.isnan(p) and p < alpha and excludes_one)
            n = min(len(_finite(a)), len(_finite(b)))
            change = _format_change(metric, ratio, low, high)
            if significant:
                tail = f"significant ({test} p={p:.3g})"
            elif test == "none":
                tail = f"not distinguishable at {n} repeat{'s' if n != 1 else ''} (at least 2 each are needed)"
            else:
                tail = f"not distinguishable at {n} repeats ({test} p={p:.3g})"
            better = None
            if significant:
                better = (ratio < 1) if metric in LOWER_IS_BETTER else (ratio > 1)
            row = {c: _restore(v) for c, v in zip(keys, cell)}
            row.update(metric=metric, server=server, baseline=against, change=ratio - 1,
                       change_low=low - 1, change_high=high - 1, p_value=p, test=test, significant=significant,
                       better=better, verdict=f"{server} vs {against}: {change}, {tail}")
            rows.append(row)
    return pd.DataFrame(rows, columns=[*keys, "metric", "server", "baseline", "change", "change_low",
                                       "change_high", "p_value", "test", "significant", "better", "verdict"])


def _explain(flag: str, **values) -> str:
    return FLAGS[flag].format(**values)


def run_flags(row) -> list[tuple[str, str]]:
    """The flags of one run (a row of the runs frame): ``[(flag, explanation), ...]``."""
    out: list[tuple[str, str]] = []
    get = lambda name: row.get(name) if hasattr(row, "get") else getattr(row, name, None)  # noqa: E731
    num = lambda name: (float(get(name)) if get(name) is not None and not pd.isna(get(name)) else None)  # noqa: E731
    if get("status") == "failed":
        return [("failed", _explain("failed", error=str(get("error") or "unknown error").splitlines()[0]))]
    errors = num("errors_total")
    if errors:
        out.append(("errors", _explain("errors", errors=errors)))
    load_cpu, cores = num("load_cpu_mean"), num("load_cores") or 1.0
    if load_cpu is not None and load_cpu / (100.0 * cores) > GENERATOR_BUSY_LIMIT:
        out.append(("generator_bound", _explain("generator_bound", busy=load_cpu / (100.0 * cores))))
    rps, p50, conns = num("rps"), num("p50"), num("connections")
    if get("load") in ("duration", "count") and rps and p50 and conns:
        expected = conns / rps
        if not (1 / LITTLE_LIMIT <= p50 / expected <= LITTLE_LIMIT):
            out.append(("littles_law", _explain("littles_law", expected=expected * 1e3, p50=p50 * 1e3)))
    server_cpu = num("server_cpu_mean")
    if p50 is not None and 0.035 <= p50 <= 0.045 and server_cpu is not None and server_cpu < 30:
        out.append(("delayed_ack", _explain("delayed_ack", p50=p50 * 1e3, cpu=server_cpu)))
    target = num("target_rps")
    if target and rps is not None and rps < RATE_SHORTFALL_LIMIT * target:
        out.append(("rate_shortfall", _explain("rate_shortfall", achieved=rps, target=target, share=rps / target)))
    note = get("note")
    if isinstance(note, str) and note:
        out.append(("driver_note", _explain("driver_note", note=note)))
    if get("server_cpus") is not None and get("load_cpus") is not None:
        from .cores import expand

        if set(expand(get("server_cpus"))) & set(expand(get("load_cpus"))):
            out.append(("shared_cores", FLAGS["shared_cores"]))
    return out


def flags(runs: pd.DataFrame) -> pd.DataFrame:
    """Every noise and validity flag, on each run (level "run") and each cell (level "cell")."""
    keys = [c for c in CELL if c in runs]
    rows = []
    for _, row in runs.iterrows():
        for flag, explanation in run_flags(row):
            rows.append({"level": "run", "id": row["id"], **{c: row[c] for c in keys}, "server": row["server"],
                         "flag": flag, "explanation": explanation})
    _, groups = _cells(runs)
    for cell, group in groups:
        cell = cell if isinstance(cell, tuple) else (cell,)
        for server, server_runs in group.groupby("server", sort=False):
            base = {"level": "cell", "id": None, **{c: _restore(v) for c, v in zip(keys, cell)}, "server": server}
            ok = _ok(server_runs)
            if len(ok) == 0:
                rows.append({**base, "flag": "all_failed", "explanation": FLAGS["all_failed"]})
                continue
            rps = describe(ok["rps"])
            if rps["n"] > 1 and rps["cv"] > CV_LIMIT:
                rows.append({**base, "flag": "high_cv", "explanation": _explain("high_cv", cv=rps["cv"])})
            p99 = _finite(ok["p99"])
            if len(p99) > 1 and p99.min() > 0 and p99.max() / p99.min() > TAIL_SPREAD_LIMIT:
                rows.append({**base, "flag": "tail_unstable", "explanation": _explain(
                    "tail_unstable", spread=p99.max() / p99.min(), low=p99.min() * 1e3, high=p99.max() * 1e3)})
            seen = set()
            for _, run in server_runs.iterrows():
                for flag, _text in run_flags(run):
                    if flag not in seen and flag != "failed":
                        seen.add(flag)
                        rows.append({**base, "flag": flag,
                                     "explanation": f"in some repeats: {_text}"})
    return pd.DataFrame(rows, columns=["level", "id", *keys, "server", "flag", "explanation"])


def table(runs: pd.DataFrame, metric: str = "rps") -> pd.DataFrame:
    """The per-run table the published comparison used: one row per server, columns run 1..N, mean, CI.

    Cells other than the server become part of the row index when the runs hold more than one.
    """
    ok = _ok(runs)
    keys = [c for c in CELL if c in ok and ok[c].nunique(dropna=True) > 1]
    rows = []
    for group_key, group in ok.groupby([*keys, "server"], sort=False, dropna=False):
        group_key = group_key if isinstance(group_key, tuple) else (group_key,)
        ordered = group.sort_values(["repeat", "started_at"], na_position="last")
        row = dict(zip([*keys, "server"], group_key))
        for i, value in enumerate(ordered[metric], start=1):
            row[f"run {i}"] = value
        d = describe(ordered[metric])
        row.update(mean=d["mean"], ci_low=d["ci_low"], ci_high=d["ci_high"], cv=d["cv"],
                   ci=_format_ci(d["ci_low"], d["ci_high"]))
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    run_columns = sorted([c for c in frame if c.startswith("run ")], key=lambda c: int(c.split()[1]))
    return frame[[*keys, "server", *run_columns, "mean", "ci", "ci_low", "ci_high", "cv"]].set_index([*keys, "server"])


def _format_ci(low: float, high: float) -> str:
    if math.isnan(low):
        return "-"
    return f"[{low:,.4g}, {high:,.4g}]"
