"""What a stored file says, checked before anything uses it: types, finite numbers, counts, names and sizes.

A results folder may come from anyone: a truncated copy, an edit by hand, a hostile archive. Every field a
reader uses is checked here with plain ``type``/``isinstance`` tests (10,000 runs are read in half a
second, and these checks must not change that); anything wrong is a :class:`~benchlab.errors.ResultsError`
that names the file and the field. Only fields benchlab uses are checked; others are carried as they are.
"""

from __future__ import annotations

import math

from ..errors import ResultsError
from ..schema import COUNTER_FIELDS, MACHINE_FIELDS, METRICS, PARAMS, RESOURCES, SAMPLE_FIELDS, STATUSES

_INF = math.inf

#: The metric columns, by how each is read; None is always "not measured". Numbers and counts are finite
#: and >= 0, or NaN for unknown; drift may be negative; note and warmup_class are text, warm true/false.
_SIGNED, _TEXT, _FLAGS = ("drift", "dip"), ("note", "warmup_class", "others"), ("warm", "profiled")
_METRIC_NUMBERS = tuple(m for m in (*METRICS, *RESOURCES) if m not in (*_SIGNED, *_TEXT, *_FLAGS))

#: The params that are numbers >= 0, those that are lists, and the other columns: any scalar.
_PARAM_NUMBERS = ("connections", "threads", "users", "loops", "load_cores", "repeat", "window", "max_threads",
                  "rate", "duration", "timeout", "streams")
_PARAM_LISTS = {"server_cpus": int, "load_cpus": int, "jvm_opts": str}
_PARAM_SCALARS = tuple(p for p in PARAMS if p not in (*_PARAM_NUMBERS, *_PARAM_LISTS, "warmup"))

#: The metadata a reader uses (the frame, the header, the charts): section -> (text keys, number keys).
_METADATA = {
    "server": (("server", "server_version", "java_version", "java_vendor", "spring_boot_version"), ()),
    "java": (("version",), ()),
    "accept_queue": ((), ("value",)),
    "network": ((), ("somaxconn",)),
    "protocol": (("protocol", "negotiated", "tls_version", "cipher", "load_cipher"),
                 ("stream_limit", "max_concurrent_streams")),
    "cpu": (("model",), ("logical_cpus",)),
    "system": (("kernel",), ("memory_bytes",)),
    "warmup": (("class",), ("jit_quiet_s",)),
}
_TEXT_FIELDS = ("error", "suite", "label", "key", "started_at", "finished_at")
_NONE = type(None)
_NUMBER_TYPES, _TEXT_TYPES = frozenset((int, float, _NONE)), frozenset((str, _NONE))
_FLAG_TYPES = frozenset((bool, _NONE))
_SCALAR_TYPES, _CONTAINERS = frozenset((str, int, float, bool, _NONE)), frozenset((dict, list, _NONE))
_INTS, _DICTS, _SECTIONS_TYPES = frozenset((int,)), frozenset((dict,)), frozenset((dict, _NONE))
_LISTS, _STRS = frozenset((list, _NONE)), frozenset((str,))


def damaged(source: str, what: str) -> ResultsError:
    return ResultsError(f"{source}: {what}: the file is damaged")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def problem(value, kind: str) -> str | None:
    """What is wrong with ``value`` as a ``kind`` ("number": finite and >= 0 or NaN, "signed", "text",
    "flag"); None when nothing is (None is always fine: not measured)."""
    t = type(value)
    if value is None:
        return None
    if t is float:
        if kind == "number" and (0.0 <= value < _INF or value != value):
            return None
        if kind == "signed" and -_INF < value < _INF:
            return None
    elif t is int:
        if kind == "signed" or (kind == "number" and value >= 0):
            return None
    elif (t is str and kind == "text") or (t is bool and kind == "flag"):
        return None
    wanted = {"number": "a finite number >= 0", "signed": "a finite number", "text": "text",
              "flag": "true or false"}[kind]
    return f"is {_shown(value)}, not {wanted}"


_SECTIONS = tuple(_METADATA)
_TEXT_LEAVES = tuple((i, key) for i, (texts, _) in enumerate(_METADATA.values()) for key in texts)
_NUMBER_LEAVES = tuple((i, key) for i, (_, numbers) in enumerate(_METADATA.values()) for key in numbers)
_SERVER_TEXT = _METADATA["server"][0]
_EMPTY: dict = {}


def run_doc(doc: dict, source: str) -> None:
    """Check the fields of a ``run.json`` document that reading, the frame and the header use.

    :func:`_fine` answers for a whole run at once with builtins that loop in C (per-field Python made
    reading 10,000 runs a third slower); only when it says no does :func:`_explain` go field by field to
    say which field is wrong, and how."""
    if not _fine(doc):
        _explain(doc, source)


def _fine(doc: dict) -> bool:
    """Whether every field reading uses is right, as fast as Python can tell: the values are gathered into a
    few lists whose types and extremes builtins check in C. Stricter, never looser, than :func:`_explain`
    (a NaN first among the numbers makes min and max NaN, so it says no)."""
    run_id, status, params, metrics, metadata = map(doc.get, ("id", "status", "params", "metrics", "metadata"))
    if not (type(run_id) is str and run_id and type(status) is str and status in STATUSES
            and type(params) is dict and type(metrics) is dict and type(metadata) is dict):
        return False
    parts = list(map(metadata.get, _SECTIONS))
    containers = [*map(params.get, _PARAM_LISTS), doc.get("files", [])]
    if not (_SECTIONS_TYPES.issuperset(map(type, parts)) and _CONTAINERS.issuperset(map(type, containers))):
        return False  # a section given as a list would fail on .get below
    server, java, queue, network, protocol, cpu, system, warmup = (part or _EMPTY for part in parts)
    cores = [*_listed(params.get("server_cpus")), *_listed(params.get("load_cpus"))]
    numbers = list(map(metrics.get, _METRIC_NUMBERS))
    numbers += map(params.get, _PARAM_NUMBERS)
    numbers += (queue.get("value"), network.get("somaxconn"), cpu.get("logical_cpus"), system.get("memory_bytes"),
                warmup.get("jit_quiet_s"), protocol.get("stream_limit"), protocol.get("max_concurrent_streams"),
                *cores)
    texts = list(map(metrics.get, _TEXT))
    texts += map(doc.get, _TEXT_FIELDS)
    texts += map(server.get, _SERVER_TEXT)
    texts += (java.get("version"), cpu.get("model"), system.get("kernel"), warmup.get("class"),
              *map(protocol.get, _METADATA["protocol"][0]))
    names = [*_listed(params.get("jvm_opts")), *_listed(doc.get("files"))]  # text, never None
    objects = [*_listed(warmup.get("slices")), *_listed(metadata.get("settings"))]
    present = list(filter(None, numbers))  # drops None and zeros, which are fine
    rps, drift, pause = metrics.get("rps"), metrics.get("drift"), params.get("warmup")
    return (_NUMBER_TYPES.issuperset(map(type, numbers)) and _TEXT_TYPES.issuperset(map(type, texts))
            and _STRS.issuperset(map(type, names))
            and (not present or (0 <= min(present) and max(present) < _INF))
            and _SCALAR_TYPES.issuperset(map(type, map(params.get, _PARAM_SCALARS)))
            and _INTS.issuperset(map(type, cores)) and _DICTS.issuperset(map(type, objects))
            and type(warmup.get("slices", [])) is list and type(metadata.get("settings", [])) is list
            and type(params.get("jvm_opts", [])) is list
            and _LISTS.issuperset(map(type, (params.get("server_cpus"), params.get("load_cpus"), doc.get("files"))))
            and (status == "failed" or type(rps) in (int, float) and rps == rps)  # and >= 0, finite: above
            and (drift is None or type(drift) in (int, float) and -_INF < drift < _INF)
            and _FLAG_TYPES.issuperset(type(metrics.get(name)) for name in _FLAGS)
            and type(warmup.get("steady")) in (bool, _NONE)
            and (pause == "auto" or type(pause) in _NUMBER_TYPES and (pause is None or 0 <= pause < _INF)))


def _listed(value) -> list | tuple:
    """``value`` when it is a list, else nothing to unpack: the type checks of :func:`_fine` say no to it."""
    return value if type(value) is list else ()


def _explain(doc: dict, source: str) -> None:
    """Raise the ResultsError that says which field of ``doc`` is wrong, and how; return if none is."""
    run_id, status = doc.get("id"), doc.get("status")
    if type(run_id) is not str or not run_id:
        raise damaged(source, f"its id is {_shown(run_id)}, not a name")
    if type(status) is not str or status not in STATUSES:
        raise damaged(source, f"its status is {_shown(status)}, not one of {', '.join(STATUSES)}")
    for name in ("params", "metrics", "metadata"):
        if type(doc.get(name)) is not dict:
            raise damaged(source, f"its {name} is {_shown(doc.get(name))}, not an object")
    for name in _TEXT_FIELDS:
        _check(doc.get(name), "text", f"its {name}", source)
    files = doc.get("files") or []  # None: no files, as an absent key
    if type(files) is not list or not all(type(f) is str for f in files):
        raise damaged(source, f"its files are {_shown(files)}, not a list of names")
    metrics, params, metadata = doc["metrics"], doc["params"], doc["metadata"]
    for names, kind in ((_METRIC_NUMBERS, "number"), (_SIGNED, "signed"), (_TEXT, "text"), (_FLAGS, "flag")):
        for name in names:
            _check(metrics.get(name), kind, f"metric {name}", source)
    rps = metrics.get("rps")
    if status != "failed" and (type(rps) not in (int, float) or not 0 <= rps < _INF):
        raise damaged(source, f"a finished run needs rps, a finite number >= 0, not {_shown(rps)}")
    _explain_params(params, source)
    _explain_metadata(metadata, source)


def _check(value, kind: str, what: str, source: str) -> None:
    wrong = problem(value, kind)
    if wrong:
        raise damaged(source, f"{what} {wrong}")


def _explain_params(params: dict, source: str) -> None:
    for name in _PARAM_NUMBERS:
        _check(params.get(name), "number", f"param {name}", source)
    for name in _PARAM_SCALARS:
        if type(params.get(name)) not in _SCALAR_TYPES:
            raise damaged(source, f"param {name} is {_shown(params.get(name))}, not text, a number or true/false")
    for name, kind in _PARAM_LISTS.items():
        value = params.get(name)
        if value is not None and type(value) is not str and (type(value) is not list or not all(
                (type(v) is int and v >= 0) if kind is int else type(v) is str for v in value)):
            raise damaged(source, f"param {name} is {_shown(value)}, not a list of "
                                  f"{'cores' if kind is int else 'options'}")
    warmup = params.get("warmup")
    if warmup != "auto":
        _check(warmup, "number", "param warmup", source)


def _explain_metadata(metadata: dict, source: str) -> None:
    for section in _SECTIONS:
        part = metadata.get(section)
        if part is not None and type(part) is not dict:
            raise damaged(source, f"metadata {section} is {_shown(part)}, not an object")
    for leaves, kind in ((_TEXT_LEAVES, "text"), (_NUMBER_LEAVES, "number")):
        for i, key in leaves:
            part = metadata.get(_SECTIONS[i])
            if part is not None:
                _check(part.get(key), kind, f"metadata {_SECTIONS[i]}.{key}", source)
    warmup = metadata.get("warmup") or {}
    for where, value in (("warmup.slices", warmup.get("slices")), ("settings", metadata.get("settings"))):
        if value is not None and (type(value) is not list or not all(type(v) is dict for v in value)):
            raise damaged(source, f"metadata {where} is {_shown(value)}, not a list of objects")
    _check(warmup.get("steady"), "flag", "metadata warmup.steady", source)


def file_name(value, source: str) -> str:
    """``value`` as the name of a file in the run's own folder: no path, no hidden or special name."""
    if (type(value) is not str or not value or value.startswith(".") or "/" in value or "\\" in value
            or "\0" in value or len(value) > 255):
        raise damaged(source, f"it names its samples {_shown(value)}, not a file beside it")
    return value


def histogram_doc(doc, source: str, lowest: int, highest: int) -> tuple[list, list, int, float, float, float]:
    """``(index, counts, zeros, sum, min, max)`` of a ``latency.json`` document, each checked: indexes whole
    numbers in ``[lowest, highest]``, ascending; counts whole numbers >= 0 below 2**53, adding up to its
    ``count``; the sum, min and max finite and >= 0 (min and max None when there is no latency)."""
    if "index" in doc:
        index, counts = doc.get("index"), doc.get("counts")
    elif type(doc.get("buckets")) is dict:
        try:
            pairs = sorted((int(i), c) for i, c in doc["buckets"].items())
        except (TypeError, ValueError):
            raise damaged(source, "a bucket is not a whole number, or is given twice") from None
        index, counts = [i for i, _ in pairs], [c for _, c in pairs]
    else:
        raise damaged(source, "it has no buckets")
    if type(index) is not list or type(counts) is not list or len(index) != len(counts):
        raise damaged(source, "its bucket indexes and counts are not two lists of one length")
    if len(index) > highest - lowest + 1:
        raise damaged(source, f"{len(index)} buckets, more than the {highest - lowest + 1} there are")
    previous = lowest - 1
    for i in index:
        if type(i) is not int or not previous < i <= highest:
            raise damaged(source, f"bucket index {_shown(i)} is not a whole number in {lowest}..{highest}, "
                                  "ascending (1 ns to 1000 s)")
        previous = i
    zeros = doc.get("zero", 0)
    for c in (*counts, zeros):
        if type(c) is not int or not 0 <= c < 2**53:
            raise damaged(source, f"a bucket count is {_shown(c)}, not a whole number >= 0")
    held = sum(counts) + zeros
    if held != doc.get("count") or held >= 2**53:
        raise damaged(source, f"its buckets hold {held} latencies, not the {_shown(doc.get('count'))} it says")
    total, low, high = doc.get("sum"), doc.get("min"), doc.get("max")
    for name, value in (("sum", total), ("min", low), ("max", high)):
        if (value is None and name == "sum") or problem(value, "number") or value != value:
            raise damaged(source, f"its {name} is {_shown(value)}, not a finite number >= 0")
    if type(doc.get("source", "")) is not str:
        raise damaged(source, "its source is not text")
    return (index, counts, zeros, float(total), math.nan if low is None else float(low),
            math.nan if high is None else float(high))


def sample_rows(rows, counters, source: str) -> tuple[tuple, tuple]:
    """A ``samples.json``'s rows as tuples, checked: ``(t, role, cpu, rss[, io])`` with t a finite number, role
    text, the rest numbers >= 0 or None; counter rows ``(t, *COUNTER_FIELDS)`` of finite numbers or None."""
    width = len(SAMPLE_FIELDS)
    for row in rows:
        if type(row) is not list or not width - 1 <= len(row) <= width or type(row[1]) is not str \
                or type(row[0]) not in (int, float) or problem(row[0], "signed") \
                or any(problem(v, "number") for v in row[2:]):
            raise damaged(source, f"a sample is {_shown(row)}, not (t, role, cpu, rss, io)")
    for row in counters:
        if type(row) is not list or len(row) > 1 + len(COUNTER_FIELDS) or any(problem(v, "signed") for v in row):
            raise damaged(source, f"a JVM counter row is {_shown(row)}, not (t, {', '.join(COUNTER_FIELDS)})")
    return tuple(map(tuple, rows)), tuple(map(tuple, counters))


def machine_rows(rows, source: str) -> tuple:
    """A ``samples.json``'s machine rows as tuples, checked: ``(t, group, busy, irq, steal)`` with t a finite
    number, group text and the rest numbers >= 0 or None."""
    if not isinstance(rows, list):
        raise damaged(source, f"its machine rows are {_shown(rows)}, not a list")
    for row in rows:
        if type(row) is not list or len(row) != len(MACHINE_FIELDS) or type(row[1]) is not str \
                or type(row[0]) not in (int, float) or problem(row[0], "signed") \
                or any(problem(v, "number") for v in row[2:]):
            raise damaged(source, f"a machine row is {_shown(row)}, not ({', '.join(MACHINE_FIELDS)})")
    return tuple(map(tuple, rows))
