"""Latency histograms as HdrHistogram logs and back: the format HdrHistogram's own tools, wrk2 and Hyperfoil speak.

A log (HdrHistogram's V2 log format) is a few ``#`` comment lines, a legend, then one line per interval:
its start (seconds since the epoch), its length, its maximum, and the interval's histogram, compressed and
base64-encoded. Both ways go through the ``hdrhistogram`` package (``hdrh``: its ``HdrHistogram``,
``HistogramLogWriter`` and ``HistogramLogReader``); nothing here encodes or decodes a histogram by hand.

HdrHistogram records whole numbers of a unit the log does not name. benchlab writes **microseconds**
(``unit="us"``, HdrHistogram's and wrk2's habit; ``"ns"`` and ``"ms"`` too) and says so in a comment,
``#[benchlab: values in us ...]``, with the significant digits. A benchlab bucket becomes its representative
latency (:func:`benchlab.store.histogram.representative`, clamped to the run's exact min and max, which are
written exactly), so what survives is benchlab's precision, 0.5% of each latency, plus HdrHistogram's own:
whole units (1 us: a value is exact below ``2**k`` units, :func:`exact_below`), and above that a relative
:func:`resolution` of 1/1024 (0.1%) at 3 significant digits (the default), 1/128 (0.8%) at 2. Reading a log,
each HdrHistogram bucket enters benchlab at the value HdrHistogram reports for it (its highest equivalent
value, as its percentiles do), so a percentile read back is within that bucket's width and benchlab's 0.5%.

>>> windows = [Window(Histogram.of([0.001, 0.002, 0.050]), start=1.7e9, seconds=10.0)]
>>> text = written(windows)
>>> print(text.splitlines()[3])
#[benchlab: values in us (microseconds), 3 significant digits; from benchlab's 1% buckets, ...]
"""

from __future__ import annotations

import datetime as dt
import io
import math
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..errors import ResultsError, UsageError
from ..schema import SECONDS
from .files import write_atomic
from .histogram import HIGHEST, Histogram, buckets, representative

#: The units a log's whole numbers may count; a second would round a web server's latencies away.
UNITS = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds"}

#: HdrHistogram's significant digits benchlab writes: 3 keeps 0.1%, finer than benchlab's own 1% buckets.
DIGITS = 3

#: The highest latency a written log can hold, one hour (HdrHistogram's own example); benchlab's buckets end
#: at 1000 s (:data:`benchlab.store.histogram.HIGHEST`).
LONGEST_S = 3600.0

#: The most a log may hold: a day of one-second intervals of wrk2 is some 100 MB.
MAX_BYTES = 256 * 2**20

#: The comment that says a log's unit, as :func:`write` puts it and :func:`read` looks for it.
_STATED = re.compile(rb"^#\[benchlab: values in (\w+) ", re.M)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")

#: Before this (September 2001) a log's timestamps are taken as relative, as HdrHistogram's reader does.
_EPOCH_PLAUSIBLE = 1e9


class Window(NamedTuple):
    """One interval of a log: a histogram, when it began (seconds since the epoch) and how long it lasted."""

    histogram: Histogram
    start: float
    seconds: float


@dataclass(frozen=True)
class Log:
    """What :func:`read` found in a log: its intervals added, in benchlab's buckets, and what they cover.

    ``start`` and ``end`` are seconds since the epoch (None where the log's times are relative),
    ``covered`` the seconds in at least one interval, ``digits`` the significant digits of its histograms,
    ``stdev`` HdrHistogram's standard deviation of the latencies (seconds), ``raw`` the file's bytes.
    """

    histogram: Histogram
    intervals: int
    covered: float
    start: float | None
    end: float | None
    digits: int
    stdev: float
    raw: bytes


def check(unit: str, digits: int = DIGITS) -> float:
    """The seconds of one ``unit``, after checking ``unit`` and ``digits``; UsageError naming the fix.

    >>> check("us")
    1e-06
    """
    if unit not in UNITS:
        raise UsageError(f"unit must be one of {', '.join(UNITS)} (what the log's whole numbers count), "
                         f"not {unit!r}")
    if type(digits) is not int or not 1 <= digits <= 5:
        raise UsageError(f"digits must be a whole number from 1 to 5 (HdrHistogram's significant digits), "
                         f"not {digits!r}")
    return SECONDS[unit]


def resolution(digits: int) -> float:
    """HdrHistogram's widest bucket, relative to its values, at ``digits`` significant digits.

    >>> resolution(3), resolution(2)
    (0.0009765625, 0.0078125)
    """
    return 2.0 ** -(math.ceil(math.log2(2 * 10**digits)) - 1)


def exact_below(digits: int) -> int:
    """The whole numbers HdrHistogram holds exactly at ``digits`` significant digits: those below this.

    >>> exact_below(3)
    2048
    """
    return 2 * round(1 / resolution(digits))


def to_hdr(histogram: Histogram, *, unit: str = "us", digits: int = DIGITS):
    """``histogram`` as an ``hdrh`` HdrHistogram of whole ``unit``: each bucket at its representative, clamped to
    the exact min and max, and one latency each at the exact min and max themselves."""
    from hdrh.histogram import HdrHistogram

    unit_s = check(unit, digits)
    hdr = HdrHistogram(1, round(LONGEST_S / unit_s), digits)
    index, found = histogram.arrays()
    seconds = np.clip(representative(index), histogram.min, histogram.max) if len(index) else np.zeros(0)
    counts = found.copy()
    extremes = []
    if len(counts) and histogram.zeros == 0:  # with zeros the min is a zero's, already exact
        counts[0] -= 1
        extremes.append(histogram.min)
    if counts.sum() > 0:
        counts[np.flatnonzero(counts)[-1]] -= 1
        extremes.append(histogram.max)
    values = [*zip(seconds.tolist(), counts.tolist()), *((v, 1) for v in extremes), (0.0, histogram.zeros)]
    for value, count in values:
        if count and not hdr.record_value(max(0, round(value / unit_s)), count):
            raise ValueError(f"a latency of {value} s does not fit an HdrHistogram of {LONGEST_S:g} s")
    return hdr


def from_hdr(hdr, *, unit: str = "us", source: str = "") -> Histogram:
    """An ``hdrh`` HdrHistogram of whole ``unit`` in benchlab's buckets: each of its buckets at the value its
    percentiles report (the highest equivalent value); the min its lowest equivalent value, the sum from each
    bucket's median equivalent value, as HdrHistogram's mean takes it."""
    unit_s = check(unit)
    lows, highs, times = _recorded(hdr)
    if not times:
        return Histogram(counts={}, source=source)
    histogram = Histogram.of_counts(np.array(highs, dtype=float) * unit_s, times, source=source)
    total = sum(middle * n for middle, n in zip(_middles(lows, highs), times))
    return replace(histogram, min=lows[0] * unit_s, total=total * unit_s)


def stdev(hdr) -> float:
    """HdrHistogram's standard deviation (each count at its bucket's median equivalent value), in its own unit."""
    lows, highs, times = _recorded(hdr)
    if not times:
        return 0.0
    middles = np.array(_middles(lows, highs), dtype=float)
    weights = np.array(times, dtype=float)
    mean = float((middles * weights).sum() / weights.sum())
    return math.sqrt(float((weights * (middles - mean) ** 2).sum() / weights.sum()))


def _recorded(hdr) -> tuple[list[int], list[int], list[int]]:
    """The lowest and highest equivalent value and the count of each bucket that holds a count. hdrh's own
    iterator, mean and standard deviation walk every bucket up to the largest value in Python: seconds for one
    log of a wide range, where its buckets with a count are a few thousand at most."""
    counts = np.ctypeslib.as_array(hdr.counts)[:hdr.counts_len]
    found = np.flatnonzero(counts)
    lows = [hdr.get_value_from_index(int(i)) for i in found]
    return lows, [hdr.get_highest_equivalent_value(low) for low in lows], counts[found].tolist()


def _middles(lows: list[int], highs: list[int]) -> list[int]:
    """Each bucket's median equivalent value, as HdrHistogram takes it: its lowest plus half its width."""
    return [low + ((high - low + 1) >> 1) for low, high in zip(lows, highs)]


def written(windows: Sequence[Window], *, unit: str = "us", digits: int = DIGITS, notes: Iterable[str] = ()) -> str:
    """The text of a log of ``windows``, one interval each in order of start, written by ``hdrh``'s
    HistogramLogWriter; ``notes`` become comment lines (one line each, control characters dropped)."""
    from hdrh.log import HistogramLogWriter

    unit_s = check(unit, digits)
    text = io.StringIO()
    writer = HistogramLogWriter(text)
    writer.output_log_format_version()
    first = min((w.start for w in windows), default=0.0)
    when = dt.datetime.fromtimestamp(first, dt.timezone.utc).isoformat(timespec="milliseconds")
    # hdrh's output_start_time is broken in 0.10.8 (it calls a datetime method that does not exist): the line
    # Java's writer writes, through the writer's comment
    writer.output_comment(f"[StartTime: {first:.3f} (seconds since epoch), {when}]")
    writer.output_base_time(0)
    writer.output_comment(f"[benchlab: values in {unit} ({UNITS[unit]}), {digits} significant digits; from "
                          f"benchlab's 1% buckets, each latency within 0.5% plus HdrHistogram's "
                          f"{resolution(digits):.2%} (exact below {exact_below(digits)} {unit})]")
    for note in notes:
        writer.output_comment(f"[benchlab: {_CONTROL.sub(' ', str(note))}]")
    writer.output_legend()
    for window in sorted(windows, key=lambda w: w.start):
        hdr = to_hdr(window.histogram, unit=unit, digits=digits)
        hdr.set_start_time_stamp(window.start * 1000)
        hdr.set_end_time_stamp((window.start + window.seconds) * 1000)
        # the legend's Interval_Max in milliseconds, as HdrHistogram's tools print it
        writer.output_interval_histogram(hdr, window.start, window.start + window.seconds,
                                         max_value_unit_ratio=SECONDS["ms"] / unit_s)
    return text.getvalue()


def write(path: str | Path, windows: Sequence[Window], *, unit: str = "us", digits: int = DIGITS,
          notes: Iterable[str] = ()) -> Path:
    """Write :func:`written` atomically at ``path``; return the path.

    Example
    -------
    >>> import tempfile
    >>> path = write(Path(tempfile.mkdtemp()) / "tomcat.hlog", [Window(Histogram.of([0.001]), 1.7e9, 30.0)])
    >>> read(path).histogram.count
    1
    """
    path = Path(path)
    write_atomic(path, written(windows, unit=unit, digits=digits, notes=notes))
    return path


def read(path: str | Path, *, unit: str = "us", tag: str | None = None) -> Log:
    """The intervals of the HdrHistogram log at ``path``, added (HdrHistogram's add), in benchlab's buckets.

    ``unit`` is what the log's whole numbers count (a log benchlab wrote says; another tool's does not: wrk2
    writes microseconds, Hyperfoil and HdrHistogram's Java tools nanoseconds). With several tags in the log,
    ``tag`` picks one. A damaged or foreign file is a ResultsError naming it, a mistake a UsageError.
    """
    unit_s = check(unit)
    raw = _raw(path)
    stated = _STATED.search(raw)
    if stated and stated.group(1).decode() != unit:
        said = stated.group(1).decode()
        raise UsageError(f"{path} says its values are in {said}, not {unit}: pass unit={said!r}")
    intervals = _tagged(path, _intervals(path), tag)
    merged = _added(path, intervals)
    histogram = from_hdr(merged, unit=unit, source=f"HdrHistogram log {Path(path).name}")
    if not histogram.count:
        raise ResultsError(f"{path} records no latency (its {len(intervals)} interval(s) are empty)")
    if int(buckets([histogram.max])[0]) > HIGHEST:
        raise UsageError(f"{path} holds latencies up to {histogram.max:.4g} s at unit={unit!r}, beyond benchlab's "
                         f"1000 s: give the unit its values count, e.g. unit='ns'")
    spans = sorted((h.get_start_time_stamp() / 1000, h.get_end_time_stamp() / 1000) for h in intervals)
    start, end = spans[0][0], max(e for _, e in spans)
    absolute = start >= _EPOCH_PLAUSIBLE
    return Log(histogram=histogram, intervals=len(intervals), covered=_union(spans),
               start=start if absolute else None, end=end if absolute else None,
               digits=int(merged.significant_figures), stdev=stdev(merged) * unit_s, raw=raw)


def _raw(path) -> bytes:
    """The log's bytes: a regular file (a link to one is fine: it is the user's own file) of MAX_BYTES at most."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "it is not a regular file")
        if info.st_size > MAX_BYTES:
            raise OSError(0, f"{info.st_size} bytes, more than the {MAX_BYTES} a log may hold")
        with open(path, "rb") as file:
            return file.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ResultsError(f"cannot read {path}: {exc.strerror or exc}") from None


def _why(exc: BaseException) -> str:
    said = _CONTROL.sub(" ", str(exc)).strip()[:120]
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def _intervals(path) -> list:
    """Every interval histogram of the log, decoded by ``hdrh``'s HistogramLogReader. Whatever the decoder
    raises on foreign bytes (base64, zlib, its cookies and lengths, its ctypes) is the file's damage."""
    from hdrh.log import HistogramLogReader

    found: list = []
    try:
        reader = HistogramLogReader(str(path), None)
    except (OSError, ValueError) as exc:
        raise ResultsError(f"cannot read {path}: {_why(exc)}") from None
    try:
        while True:
            try:
                interval = reader.get_next_interval_histogram()
            except Exception as exc:  # see the docstring
                raise ResultsError(f"{path}: interval {len(found) + 1} is not an HdrHistogram ({_why(exc)}): the "
                                   "log is damaged, or not an HdrHistogram log") from None
            if interval is None:
                break
            found.append(interval)
    finally:
        reader.close()
    if not found:
        raise ResultsError(f"{path} holds no HdrHistogram interval: give a log written by an HdrHistogram "
                           "HistogramLogWriter (wrk2, Hyperfoil, HdrHistogram's tools, benchlab.export_hdr)")
    return found


def _tagged(path, intervals: list, tag: str | None) -> list:
    tags = sorted({str(h.get_tag() or "") for h in intervals})
    if tag is not None:
        chosen = [h for h in intervals if (h.get_tag() or "") == tag]
        if not chosen:
            raise UsageError(f"{path} has no interval tagged {tag!r}: its tags are {', '.join(map(repr, tags))}")
        return chosen
    if len(tags) > 1:
        raise UsageError(f"{path} holds intervals of {len(tags)} tags ({', '.join(map(repr, tags))}): give tag=... "
                         "to import one")
    return intervals


def _added(path, intervals: list):
    """The intervals added into one HdrHistogram wide and fine enough for every one of them."""
    from hdrh.histogram import HdrHistogram

    try:
        merged = HdrHistogram(min(h.lowest_trackable_value for h in intervals),
                              max(h.highest_trackable_value for h in intervals),
                              max(h.significant_figures for h in intervals))
        for interval in intervals:
            merged.add(interval)
    except Exception as exc:  # settings read from the file: any failure is its damage
        raise ResultsError(f"{path}: its intervals cannot be added ({_why(exc)}): the log is damaged") from None
    return merged


def _union(spans: list[tuple[float, float]]) -> float:
    """The seconds inside at least one of the sorted ``(start, end)`` spans.

    >>> _union([(0.0, 1.0), (0.5, 2.0), (3.0, 4.0)])
    3.0
    """
    covered, reach = 0.0, -math.inf
    for start, end in spans:
        if end > reach:
            covered += end - max(start, reach)
            reach = end
    return covered
