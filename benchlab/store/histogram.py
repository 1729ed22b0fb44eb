"""A run's whole latency distribution: log buckets of 1% width, merged by adding counts, kept beside run.json.

Bucket ``i`` holds the latencies ``x`` with ``round(log(x / 1 us) / log(1.01)) == i``, so every value is
within 0.5% of its bucket's representative ``1 us * 1.01**i`` (HdrHistogram's idea, with a relative
instead of a decimal precision). Latencies of exactly 0 (JMeter's whole milliseconds) get a bucket of
their own. The count, the sum, the lowest and the highest value are kept exactly, so the mean, the
minimum and the maximum are exact; a percentile is the nearest rank's bucket, within 0.5% of the exact
nearest-rank percentile of the raw latencies. Two runs' histograms merge by adding their counts.

The file, ``latency.json``, is versioned like ``run.json``: sparse ``{"bucket": count}``, latencies in seconds.

>>> h = Histogram.of([0.001, 0.002, 0.003, 0.004])
>>> h.count, h.percentile(50), h.max          # p50 within 0.5% of 0.002; the max exact
(4, 0.002002..., 0.004)
>>> merged = h + Histogram.of([0.010])
>>> merged.count, merged.percentile(100)
(5, 0.01)
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np

from ..errors import ResultsError
from . import validate
from .files import parse_json, why, write_atomic

FORMAT = "benchlab-latency"
FORMAT_VERSION = 1

#: The file beside run.json that holds a run's histogram.
FILE = "latency.json"

#: The latency of bucket 0, in seconds, and the ratio between neighbouring buckets.
UNIT = 1e-6
RATIO = 1.01

#: The bucket of latencies of exactly 0 (or below: a clock that stepped back).
ZERO = "zero"

_LOG_RATIO = math.log(RATIO)

#: The bucket indexes a stored histogram may use: those of 1 ns to 1000 s (-694 to 2083). Any other is
#: damage, and refusing it keeps a merge's dense matrix of buckets small (tails._matrix).
LOWEST, HIGHEST = (round(math.log(s / UNIT) / _LOG_RATIO) for s in (1e-9, 1e3))

#: The most a latency.json may hold: 2,778 buckets at most are some 60 kB.
MAX_BYTES = 4 * 2**20


def buckets(seconds) -> np.ndarray:
    """The bucket index of each latency in seconds (positive ones; see :data:`ZERO` for the rest).

    >>> buckets([1e-6, 1.01e-6, 1e-3]).tolist()
    [0, 1, 694]
    """
    return np.rint(np.log(np.asarray(seconds, dtype=float) / UNIT) / _LOG_RATIO).astype(np.int64)


def representative(index) -> np.ndarray:
    """The latency, in seconds, that stands for bucket ``index``.

    >>> float(representative(694))             # 1 ms falls in bucket 694, 0.2% away
    0.000997776...
    """
    return UNIT * np.power(RATIO, np.asarray(index, dtype=float))


class Buckets(Mapping):
    """A histogram's ``{bucket index: count}``, held as two arrays: the sorted indexes and their positive counts.

    It reads as a mapping; merging and percentiles use the arrays. (As Python dicts, 10,000 runs' buckets
    were millions of objects: seconds to build and to walk in every garbage collection.)
    """

    __slots__ = ("index", "found")

    def __init__(self, index: np.ndarray, found: np.ndarray):
        self.index, self.found = index, found

    @classmethod
    def of(cls, counts) -> Buckets:
        """Any ``{index: count}`` (or a Buckets), sorted, without empty buckets; negative counts refused."""
        if isinstance(counts, Buckets):  # made by of_arrays, or by a builder that sorted its own
            return counts
        n = len(counts)
        return cls.of_arrays(np.fromiter((int(i) for i in counts), dtype=np.int64, count=n),
                             np.fromiter((int(c) for c in counts.values()), dtype=np.int64, count=n))

    @classmethod
    def of_arrays(cls, index, found) -> Buckets:
        index, found = np.asarray(index, dtype=np.int64), np.asarray(found, dtype=np.int64)
        if index.shape != found.shape or index.ndim != 1:
            raise ValueError(f"{index.size} bucket indexes but {found.size} counts")
        if len(found) and found.min() <= 0:
            if found.min() < 0:
                raise ValueError("a histogram's counts cannot be negative")
            index, found = index[found > 0], found[found > 0]
        if (np.diff(index) <= 0).any():  # unsorted or repeated: add the counts of each index
            index, inverse = np.unique(index, return_inverse=True)
            found = np.bincount(inverse, weights=found, minlength=len(index)).astype(np.int64)
        return cls(index, found)

    def __getitem__(self, key) -> int:
        at = int(np.searchsorted(self.index, key))
        if at < len(self.index) and self.index[at] == key:
            return int(self.found[at])
        raise KeyError(key)

    def __iter__(self):
        return iter(self.index.tolist())

    def __len__(self) -> int:
        return len(self.index)

    def __eq__(self, other) -> bool:
        if isinstance(other, Buckets):
            return np.array_equal(self.index, other.index) and np.array_equal(self.found, other.found)
        return Mapping.__eq__(self, other)

    def __repr__(self) -> str:
        return f"Buckets({dict(zip(self.index.tolist(), self.found.tolist()))})"


@dataclass(frozen=True)
class Histogram:
    """Counts per log bucket (``{index: count}``, held as :class:`Buckets`), the zeros, and the exact count,
    sum, min and max.

    Build it with :meth:`of` (raw latencies) or :meth:`of_counts` (value, count pairs); ``a + b`` merges.
    ``source`` says where the latencies came from, and what the tool did to them (wrk's correction).
    """

    counts: Mapping[int, int]
    zeros: int = 0
    total: float = 0.0
    min: float = math.nan
    max: float = math.nan
    source: str = ""

    def __post_init__(self) -> None:
        if self.zeros < 0:
            raise ValueError("a histogram's counts cannot be negative")
        object.__setattr__(self, "counts", Buckets.of(self.counts))

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(bucket indexes, counts)`` as arrays, in bucket order."""
        buckets = cast(Buckets, self.counts)  # __post_init__ holds any Mapping given as Buckets
        return buckets.index, buckets.found

    # -- building ----------------------------------------------------------------------------------------
    @classmethod
    def of(cls, seconds: Iterable[float], *, source: str = "") -> Histogram:
        """The histogram of raw latencies in seconds."""
        values = np.asarray(seconds if isinstance(seconds, np.ndarray) else list(seconds), dtype=float)
        return cls.of_counts(values, np.ones(len(values), dtype=np.int64), source=source)

    @classmethod
    def of_counts(cls, seconds, counts, *, source: str = "") -> Histogram:
        """The histogram of latencies in seconds, each seen ``counts`` times (wrk's value, count pairs)."""
        values = np.asarray(seconds, dtype=float)
        weights = np.asarray(counts, dtype=np.int64)
        if values.shape != weights.shape:
            raise ValueError(f"{len(values)} latencies but {len(weights)} counts")
        if np.isnan(values).any():
            raise ValueError("a latency is NaN")
        keep = weights > 0
        values, weights = values[keep], weights[keep]
        positive = values > 0
        index, inverse = np.unique(buckets(values[positive]), return_inverse=True)
        summed = np.bincount(inverse, weights=weights[positive], minlength=len(index)).astype(np.int64)
        return cls(counts=Buckets(index.astype(np.int64), summed), zeros=int(weights[~positive].sum()),
                   total=float(np.dot(np.clip(values, 0, None), weights)) if len(values) else 0.0,
                   min=float(values.min()) if len(values) else math.nan,
                   max=float(values.max()) if len(values) else math.nan, source=source)

    def __add__(self, other: Histogram) -> Histogram:
        (index, found), (other_index, other_found) = self.arrays(), other.arrays()
        merged = Buckets.of_arrays(np.concatenate([index, other_index]), np.concatenate([found, other_found]))
        sources = " + ".join(dict.fromkeys(s for s in (self.source, other.source) if s))
        return Histogram(counts=merged, zeros=self.zeros + other.zeros, total=self.total + other.total,
                         min=float(np.nanmin([self.min, other.min])) if self.count + other.count else math.nan,
                         max=float(np.nanmax([self.max, other.max])) if self.count + other.count else math.nan,
                         source=sources)

    @staticmethod
    def merge(histograms: Iterable[Histogram]) -> Histogram:
        """All ``histograms`` as one (an empty one when there are none)."""
        merged = Histogram(counts={})
        for histogram in histograms:
            merged = merged + histogram
        return merged

    # -- reading -----------------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        return self.zeros + int(self.arrays()[1].sum())

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan

    def percentile(self, q: float) -> float:
        """The nearest-rank ``q``-th percentile (0 < q <= 100), in seconds; 100 is the exact maximum."""
        if not 0 <= q <= 100:
            raise ValueError(f"a percentile is between 0 and 100, not {q}")
        if not self.count:
            return math.nan
        return float(self.percentiles([q])[0])

    def percentiles(self, qs: Iterable[float]) -> np.ndarray:
        """:meth:`percentile` of each of ``qs`` at once."""
        index, counts = self.arrays()
        return quantiles(index, np.concatenate([[self.zeros], counts])[None, :], qs, self.min, self.max)[0]

    # -- storage -----------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        index, found = self.arrays()
        return {"format": FORMAT, "version": FORMAT_VERSION, "unit": UNIT, "ratio": RATIO, "source": self.source,
                "count": self.count, "sum": self.total, "min": _number(self.min), "max": _number(self.max),
                ZERO: self.zeros, "index": index.tolist(), "counts": found.tolist()}

    @classmethod
    def from_json(cls, doc: dict, *, source: str = "") -> Histogram:
        """The histogram a ``latency.json`` document holds, every field checked (bucket indexes within
        :data:`LOWEST`..:data:`HIGHEST`); damage is a :class:`ResultsError` naming ``source``."""
        if type(doc) is not dict or doc.get("format") != FORMAT:
            raise ResultsError(f"{source} is not a benchlab latency histogram (no format {FORMAT!r})")
        version = doc.get("version")
        if type(version) is not int or version > FORMAT_VERSION:
            raise ResultsError(f"{source} was written by a newer benchlab (latency format version {version}): "
                               "upgrade benchlab (pip install -U benchlab) to read it")
        if doc.get("unit") != UNIT or doc.get("ratio") != RATIO:
            raise ResultsError(f"{source} has buckets of another size (unit {doc.get('unit')}, ratio "
                               f"{doc.get('ratio')}): it cannot be merged with this benchlab's")
        # "index" and "counts": two lists, checked, then arrays at once; a {bucket: count} object ("buckets") too
        index, counts, zeros, total, low, high = validate.histogram_doc(doc, source, LOWEST, HIGHEST)
        return cls(counts=Buckets.of_arrays(index, counts), zeros=zeros, total=total, min=low, max=high,
                   source=doc.get("source", ""))

    def save(self, directory: Path) -> Path:
        """Write ``directory/latency.json`` atomically (a temporary file, then a rename); return its path."""
        path = Path(directory) / FILE
        write_atomic(path, json.dumps(self.to_json(), separators=(",", ":")) + "\n")
        return path


def read(directory: str | Path | None) -> Histogram | None:
    """The histogram stored in a run's directory, or None when it has none (an imported or older run)."""
    if directory is None:
        return None
    path = os.path.join(directory, FILE)
    try:
        doc = parse_json(path, limit=MAX_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ResultsError(f"cannot read {path}: {why(exc)}") from None
    return Histogram.from_json(doc, source=path)


def quantiles(index: np.ndarray, counts: np.ndarray, qs: Iterable[float], low, high) -> np.ndarray:
    """Nearest-rank percentiles of many histograms over the same buckets at once.

    ``index`` is the sorted bucket indexes (K), ``counts`` a (rows, 1 + K) array whose first column counts
    the zeros; the result is (rows, len(qs)) in seconds, clamped to ``[low, high]`` (each row's exact
    extremes: numbers, or arrays of one per row), NaN for an empty row.

    >>> quantiles(np.array([0, 694]), np.array([[1, 1, 2]]), [50, 100], 0.0, 0.002).round(6).tolist()
    [[1e-06, 0.002]]
    """
    qs = np.asarray(list(qs), dtype=float)
    cumulative = np.cumsum(counts, axis=1)
    totals = cumulative[:, -1]
    rank = ranks(qs, totals)
    found = np.array([np.searchsorted(row, r, side="left") for row, r in zip(cumulative, rank)]).reshape(rank.shape)
    return read_off(index, found, totals, qs, low, high)


def ranks(qs: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """The nearest rank of each percentile ``qs`` in histograms of ``totals`` latencies: (rows, len(qs))."""
    # round() first: 99.9 / 100 * 1000 is 999.0000000000001 in floating point, whose ceiling is 1000.
    return np.maximum(1, np.ceil(np.round(qs[None, :] * np.reshape(totals, (-1, 1)) / 100.0, 9)))


def read_off(index: np.ndarray, found: np.ndarray, totals: np.ndarray, qs: np.ndarray, low, high) -> np.ndarray:
    """The latencies at the bucket positions ``found`` (0 for the zeros, then ``index``'s), clamped to each
    row's ``[low, high]``; NaN where a row is empty, and the exact ``high`` for the 100th percentile."""
    low = np.reshape(np.asarray(low, dtype=float), (-1, 1))
    high = np.reshape(np.asarray(high, dtype=float), (-1, 1))
    values = np.concatenate([[0.0], representative(index)])
    result = np.clip(values[np.minimum(found, len(values) - 1)], low, high)
    result[np.reshape(totals, -1) == 0] = np.nan
    return np.where(qs[None, :] >= 100, high, result)


def _number(value: float):
    return None if math.isnan(value) else value
