"""Noise and validity flags: why a run or a cell of the runs frame should not be trusted, one line each.

A run is flagged from its own row (a busy load generator, errors, Little's law, the delayed-ACK signature,
a missed rate, shared cores, a failure); a cell from its repeats (throughput that varies, an unstable tail,
every repeat failed) and from the flags of its runs. The limits are written once, here.
"""

from __future__ import annotations

import pandas as pd

from .schema import FLAGS
from . import cells

CV_LIMIT = 0.05
TAIL_SPREAD_LIMIT = 3.0
GENERATOR_BUSY_LIMIT = 0.90
LITTLE_LIMIT = 3.0
RATE_SHORTFALL_LIMIT = 0.95
SLEEP_DEFAULT_MS = 10.0  # servers.SCENARIOS["sleep"] asks /sleep?ms=10



def _explain(flag: str, **values) -> str:
    return FLAGS[flag].format(**values)


def _sleep_ms(scenario) -> float | None:
    """How long a sleep scenario waits: ``"sleep:40"`` 40 ms, ``"sleep"`` the built-in 10 ms
    (``servers.SCENARIOS``); None for any other scenario."""
    if scenario == "sleep":
        return SLEEP_DEFAULT_MS
    if isinstance(scenario, str) and scenario.startswith("sleep:") and scenario[6:].isdigit():
        return float(scenario[6:])
    return None


def run_flags(row) -> list[tuple[str, str]]:
    """The flags of one run (a row of the runs frame): ``[(flag, explanation), ...]``.

    - ``generator_bound``: the load tool's CPU over the cores it could use, ``min(threads, load_cores)``
      when the run says how many threads it had: one saturated wrk thread on two cores is bound at 50%.
    - ``littles_law``: closed-loop loads obey N = X * R, so connections / rps should be near the *mean*
      latency (not p50, which a skewed distribution leaves far below it); flagged beyond 3x either way.
    - ``delayed_ack``: p50 within 35-45 ms while the server idles (< 30% CPU) is the delayed-ACK
      signature, unless the scenario itself sleeps 30-50 ms, which explains that p50.
    - ``not_warm``: ``warmup="auto"`` reached its limit before throughput settled.

    >>> [flag for flag, _ in run_flags({"load_cpu_mean": 97.0, "threads": 1, "load_cores": 2})]
    ['generator_bound']
    """
    out: list[tuple[str, str]] = []
    get = lambda name: row.get(name) if hasattr(row, "get") else getattr(row, name, None)  # noqa: E731

    def num(name):
        value = pd.to_numeric(get(name), errors="coerce")
        return None if value is None or pd.isna(value) else float(value)

    if get("status") == "failed":
        return [("failed", _explain("failed", error=str(get("error") or "unknown error").splitlines()[0]))]
    errors = num("errors_total")
    if errors:
        out.append(("errors", _explain("errors", errors=errors)))
    load_cpu, cores, threads = num("load_cpu_mean"), num("load_cores") or 1.0, num("threads")
    usable = min(threads, cores) if threads and threads > 0 else cores
    if load_cpu is not None and load_cpu / (100.0 * usable) > GENERATOR_BUSY_LIMIT:
        out.append(("generator_bound", _explain("generator_bound", busy=load_cpu / (100.0 * usable), usable=usable)))
    rps, mean, conns = num("rps"), num("lat_mean"), num("connections")
    if get("load") in ("duration", "count") and rps and mean and conns:
        expected = conns / rps
        if not (1 / LITTLE_LIMIT <= mean / expected <= LITTLE_LIMIT):
            out.append(("littles_law", _explain("littles_law", expected=expected * 1e3, mean=mean * 1e3)))
    p50, server_cpu, sleep = num("p50"), num("server_cpu_mean"), _sleep_ms(get("scenario"))
    if (p50 is not None and 0.035 <= p50 <= 0.045 and server_cpu is not None and server_cpu < 30
            and not (sleep is not None and 30 <= sleep <= 50)):
        out.append(("delayed_ack", _explain("delayed_ack", p50=p50 * 1e3, cpu=server_cpu)))
    target = num("target_rps")
    if target and rps is not None and rps < RATE_SHORTFALL_LIMIT * target:
        out.append(("rate_shortfall", _explain("rate_shortfall", achieved=rps, target=target, share=rps / target)))
    if get("warm") is False:  # warmup="auto" hit its limit; True or None (a fixed warm-up) say nothing
        out.append(("not_warm", _explain("not_warm", limit=num("warmup_s") or 0.0)))
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
    keys, groups = cells.group(runs)
    rows = []
    for _, row in runs.iterrows():
        for flag, explanation in run_flags(row):
            rows.append({"level": "run", "id": row["id"], **{c: row[c] for c in keys}, "server": row["server"],
                         "flag": flag, "explanation": explanation})
    for cell, group in groups:
        cell = cell if isinstance(cell, tuple) else (cell,)
        for server, server_runs in group.groupby("server", sort=False):
            base = {"level": "cell", "id": None, **{c: cells.restore(v) for c, v in zip(keys, cell)}, "server": server}
            ok = cells.ok(server_runs)
            if len(ok) == 0:
                rows.append({**base, "flag": "all_failed", "explanation": FLAGS["all_failed"]})
                continue
            rps = cells.finite(ok["rps"])
            cv = rps.std(ddof=1) / rps.mean() if len(rps) > 1 and rps.mean() else 0.0
            if cv > CV_LIMIT:
                rows.append({**base, "flag": "high_cv", "explanation": _explain("high_cv", cv=cv)})
            p99 = cells.finite(ok["p99"])
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
