"""Factors of a comparison: server settings crossed with every server, and what they showed.

``compare(servers, factors={"virtual_threads": [False, True], "java": [17, 25]})`` runs every server in
every combination of the factors' values: each combination of the server settings (:mod:`benchlab.running.variants`)
is one more server of the comparison, named after its settings (``spring-tomcat+vt@java25``), and
``server_cpus`` gives each cell once per core set. On the command line a factor is
``--factor virtual_threads=false,true``, once per factor.

>>> parse(["virtual_threads=false,true", "java=17,25"])
{'virtual_threads': [False, True], 'java': ['17', '25']}
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..schema import FACTOR_COLUMNS, base_name  # noqa: F401 - base_name is part of the factors API

if TYPE_CHECKING:
    import pandas as pd

#: The factors that change the server itself (a variant); the others change the run around it.
SERVER_SETTINGS = ("virtual_threads", "max_threads", "gc", "heap", "aot", "java")

_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def _value(name: str, text):
    """A factor's value as the setting takes it: a command line gives text."""
    if not isinstance(text, str):
        return text
    text = text.strip()
    if name in ("virtual_threads", "aot"):
        if text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        raise UsageError(f"{name} is true or false, not {text!r}")
    if name == "max_threads":
        if not text.isdigit():
            raise UsageError(f"max_threads must be a whole number of 1 or more, not {text!r}")
        return int(text)
    return text


def parse(factors) -> dict[str, list]:
    """The factors as ``{name: [values]}``, from a dict or from ``name=a,b`` texts (the command line)."""
    if not factors:
        return {}
    if isinstance(factors, str):
        factors = [factors]
    if not isinstance(factors, dict):
        pairs = {}
        for text in factors:
            name, equals, listed = str(text).partition("=")
            if not equals or not listed:
                raise UsageError(f"bad factor {text!r}: write name=value,value such as virtual_threads=false,true")
            pairs[name.strip()] = listed.split(",")
        factors = pairs
    parsed = {}
    for name, values in factors.items():
        if name not in FACTOR_COLUMNS:
            raise UsageError(f"unknown factor {name!r}: choose one of {', '.join(FACTOR_COLUMNS)}")
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        if not values:
            raise UsageError(f"factor {name} has no value: give one or more, such as {name}=a,b")
        parsed[name] = [_value(name, v) for v in values]
        if len(set(map(str, parsed[name]))) != len(parsed[name]):
            raise UsageError(f"factor {name} lists a value twice: {parsed[name]}")
    return parsed


def cross(servers: list, factors: dict) -> list:
    """Every server in every combination of the server settings among ``factors``, each server's variants
    together, in the order of the factors' values (the first combination is the server's baseline)."""
    from . import servers as server_specs

    names = [n for n in SERVER_SETTINGS if n in factors]
    if not names:
        return [server_specs.get(s) for s in servers]
    crossed = []
    for server in map(server_specs.get, servers):
        already = [n for n in names if getattr(server.settings, n) is not None]
        if already:
            raise UsageError(f"{server.name} already sets {', '.join(already)}, which factors varies: "
                             f"give the plain server, such as spring-{server.flavour}")
        for combination in itertools.product(*(factors[n] for n in names)):
            crossed.append(server.with_settings(**dict(zip(names, combination))))
    return crossed


def run_options(factors: dict, given: dict) -> list[dict]:
    """The per-run options the factors vary (``server_cpus``, ``protocol``, ``streams``), one dict per combination."""
    from .options import RunOptions

    names = [n for n in factors if n not in SERVER_SETTINGS]
    for name in names:
        if given.get(name) not in (None, getattr(RunOptions(), name, None)):  # given, not its default
            raise UsageError(f"{name} is both an option and a factor: give it once, as the factor")
    return [dict(zip(names, combination)) for combination in itertools.product(*(factors[n] for n in names))]


def verdicts(runs: pd.DataFrame, metric: str = "rps", *, alpha: float = 0.05) -> pd.DataFrame:
    """Each variant against the first variant of the same server (the factors' first values), per cell.

    The rows are those of :func:`benchlab.analysis.verdicts.verdicts`; ``baseline`` names the variant compared with.

    Example
    -------
    >>> import benchlab
    >>> suite = benchlab.load("data/results/factors")          # doctest: +SKIP
    >>> verdicts(suite.runs)["verdict"].tolist()               # doctest: +SKIP
    ['spring-tomcat+vt@java25 vs spring-tomcat@java25: +210% rps [+190%, +230%], significant (...)']
    """
    import pandas as pd

    from ..analysis.verdicts import verdicts as judged

    frames = []
    for _, group in runs.groupby(runs["server"].map(base_name), sort=False):
        if group["server"].nunique() > 1:
            frames.append(judged(group, metric=metric, baseline=group["server"].iloc[0], alpha=alpha))
    if not frames:
        return judged(runs.iloc[0:0], metric=metric, alpha=alpha)
    return pd.concat(frames, ignore_index=True)


def verified(records) -> pd.DataFrame:
    """What each variant asked and what its server reported, one row per server and setting.

    ``status`` is ``ok``, ``mismatch`` (the run failed) or ``not verified`` (the server's /info lacks it);
    ``runs`` counts the runs that said so.

    >>> from benchlab.store.results import Run
    >>> run = Run(id="r1", params={"server": "spring-tomcat+vt@java25"}, metrics={"rps": 1.0},
    ...           metadata={"settings": [{"setting": "java", "asked": 25, "got": "25.0.1", "status": "ok"}]})
    >>> verified([run])[["server", "setting", "got", "status", "runs"]].values.tolist()
    [['spring-tomcat+vt@java25', 'java', '25.0.1', 'ok', 1]]
    """
    import pandas as pd

    rows = [{"server": r.params.get("server"), **check,
             "got": "-" if check.get("got") is None else str(check.get("got"))}
            for r in records for check in (r.metadata or {}).get("settings", ())]
    if not rows:
        return pd.DataFrame(columns=["server", "setting", "asked", "got", "status", "runs"])
    frame = pd.DataFrame(rows).astype({"asked": str})
    return (frame.groupby(["server", "setting", "asked", "got", "status"], sort=False).size()
            .rename("runs").reset_index())
