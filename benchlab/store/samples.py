"""A stored run's monitor samples and JVM counters: its ``samples.json``, read the first time they are asked for.

They are the bulk of a run, and no summary needs them (the run's means and maxima are in its metrics):
kept inside ``run.json``, they were three fifths of the time :func:`benchlab.load` spent parsing 10,000
runs. The file holds the monitor's ``(t, role, cpu, rss, io)`` rows, for a JVM server the counters'
``(t, *COUNTER_FIELDS)`` rows, and what the run's cores did, ``(t, *MACHINE_FIELDS[1:])`` rows, on the same
clock. The counters and the machine rows are keys an older benchlab does not read, and a file without them
(an older run) has none.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..errors import ResultsError
from ..schema import COUNTER_FIELDS, MACHINE_FIELDS, SAMPLE_FIELDS
from .files import parse_json, why
from .validate import machine_rows, sample_rows

SAMPLES_FORMAT = "benchlab-samples"
SAMPLES_VERSION = 1
SAMPLES_FILE = "samples.json"


class Counters(Sequence):
    """A stored run's JVM counter rows, ``(t, *perfdata.FIELDS)``, kept in its ``samples.json`` beside the
    monitor's samples and read with them."""

    __slots__ = ("samples",)

    def __init__(self, samples: Samples):
        self.samples = samples

    def rows(self) -> tuple:
        return self.samples.counters()

    def __getitem__(self, i):
        return self.rows()[i]

    def __len__(self) -> int:
        return len(self.rows())

    def __eq__(self, other) -> bool:
        return self.rows() == (other.rows() if isinstance(other, Counters) else tuple(other))


class Machine(Counters):
    """A stored run's machine rows, ``(t, group, busy, irq, steal)``, kept in its ``samples.json``."""

    __slots__ = ()

    def rows(self) -> tuple:
        return self.samples.machine()


class Samples(Sequence):
    """A stored run's monitor samples, the ``(t, role, cpu, rss, io)`` rows of its ``samples.json``, read the
    first time they are asked for (with the JVM counters beside them)."""

    __slots__ = ("path", "_rows", "_counters", "_machine")

    def __init__(self, path: str):
        self.path = path
        self._rows: tuple | None = None
        self._counters: tuple = ()
        self._machine: tuple = ()

    def counters(self) -> tuple:
        self.rows()
        return self._counters

    def machine(self) -> tuple:
        self.rows()
        return self._machine

    def rows(self) -> tuple:
        if self._rows is None:
            try:
                doc = parse_json(self.path)
            except (OSError, ValueError) as exc:
                raise ResultsError(f"cannot read {self.path}: {why(exc)}") from None
            if (not isinstance(doc, dict) or doc.get("format") != SAMPLES_FORMAT
                    or not isinstance(doc.get("rows"), list)):
                raise ResultsError(f"{self.path} is not a benchlab samples file: the run is damaged")
            if not isinstance(doc.get("version"), int) or doc["version"] > SAMPLES_VERSION:
                raise ResultsError(f"{self.path} was written by a newer benchlab (samples format version "
                                   f"{doc.get('version')}): upgrade benchlab (pip install -U benchlab) to read it")
            counters = doc.get("counters", [])
            if not isinstance(counters, list):
                raise ResultsError(f"{self.path}: its JVM counters are not a list of rows: the run is damaged")
            self._rows, self._counters = sample_rows(doc["rows"], counters, self.path)
            self._machine = machine_rows(doc.get("machine", []), self.path)
        return self._rows

    def __getitem__(self, i):
        return self.rows()[i]

    def __len__(self) -> int:
        return len(self.rows())

    def __iter__(self):
        return iter(self.rows())

    def __eq__(self, other) -> bool:
        return self.rows() == (other.rows() if isinstance(other, Samples) else other)

    def __repr__(self) -> str:
        return f"Samples({self.path!r})"


def document(samples, counters, machine=()) -> str:
    """The ``samples.json`` text of these rows: an older benchlab reading it ignores the counters' and the machine's
    keys."""
    doc = {"format": SAMPLES_FORMAT, "version": SAMPLES_VERSION, "fields": list(SAMPLE_FIELDS),
           "rows": [list(s) for s in samples]}
    if counters:
        doc.update(counter_fields=["t", *COUNTER_FIELDS], counters=[list(c) for c in counters])
    if machine:
        doc.update(machine_fields=list(MACHINE_FIELDS), machine=[list(m) for m in machine])
    return json.dumps(doc, separators=(",", ":"), default=str) + "\n"
