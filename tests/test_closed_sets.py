"""The closed sets (a run's status, the backend, the load model, the order, restart, interleave, a warm-up's
class, a claim's verdict) are Literals written once in benchlab.schema, their tuples derived from them, and
mypy refuses a typo where they are used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from benchlab import schema

ROOT = Path(__file__).resolve().parent.parent

SETS = {"Status": "STATUSES", "BackendName": "BACKENDS", "LoadModel": "LOAD_MODELS", "Order": "ORDERS",
        "Restart": "RESTARTS", "Interleave": "INTERLEAVES", "WarmupClass": "WARMUP_CLASSES"}


@pytest.mark.parametrize("alias, values", SETS.items())
def test_each_tuple_of_values_is_its_literals(alias, values):
    assert getattr(schema, values) == get_args(getattr(schema, alias))


def test_the_claim_verdicts_explained_are_the_literals_words():
    assert tuple(schema.CLAIM_VERDICTS) == get_args(schema.ClaimVerdict)
    assert tuple(schema.PROCEDURE_SENSITIVE) == get_args(schema.Sensitive)


def test_the_modules_that_check_a_closed_set_take_schemas_values():
    from benchlab.analysis import changepoints
    from benchlab.running import backends, load, options

    assert backends.NAMES is schema.BACKENDS and load.MODELS is schema.LOAD_MODELS
    assert changepoints.CLASSES is schema.WARMUP_CLASSES
    choices = {o.name: o.choices for o in options.OPTIONS}
    assert (choices["backend"], choices["load"], choices["order"], choices["restart"], choices["interleave"]) == (
        schema.BACKENDS, schema.LOAD_MODELS, schema.ORDERS, schema.RESTARTS, schema.INTERLEAVES)


def test_the_command_line_reads_every_kind_of_option_and_each_option_has_one():
    from benchlab import cli
    from benchlab.running import options

    kinds = set(get_args(options.OptionKind))
    assert {*cli._LISTS, *cli._SCALARS, "bool", "repeat"} == kinds, "cli reads each kind, and no other"
    assert {o.kind for o in options.OPTIONS} <= kinds and {o.where for o in options.OPTIONS} == set(
        get_args(options.Where))


TYPOS = '''
from benchlab.analysis.precision import Rule
from benchlab.running.load import Load
from benchlab.running.options import Comparison, Option
from benchlab.schema import ClaimVerdict, WarmupClass
from benchlab.store.results import Run

Run(id="a", params={}, metrics={}, metadata={}, status="okk")
Load(model="duraton")
Comparison(order="interleave")
Rule(repeats=3, windows=1, precision=0.05, baseline="a", interleave="fork")
verdict: ClaimVerdict = "hold"
kind: WarmupClass = "warmup"
Option("x", "txt", "run", "help")
Option("x", "text", "all", "help")
'''


#: The libraries' own types play no part in a closed set, nor do the benchlab modules the typos do not import:
#: skipped, mypy checks the typos in 1.8 s from a cold cache, where following numpy's and pandas' stubs took 15 s
#: and the whole package 3.1 s (a fresh clone's fast tier waited on it). A class moved out of the modules named
#: here becomes Any, and its typo goes unreported: this test then fails, never passes by it.
SKIPPED = """[mypy]
python_version = 3.11
ignore_missing_imports = true
[mypy-numpy.*,pandas.*,scipy.*,altair.*,psutil.*,docker.*,IPython.*,ipywidgets.*,nbformat.*,papermill.*]
follow_imports = skip
[mypy-benchlab.*]
follow_imports = skip
[mypy-benchlab.schema,benchlab.analysis.precision,benchlab.running.load,benchlab.running.options,benchlab.store.results]
follow_imports = normal
"""


def test_mypy_refuses_a_typo_in_a_closed_set(tmp_path):
    source = tmp_path / "typos.py"
    source.write_text(TYPOS)
    (tmp_path / "mypy.ini").write_text(SKIPPED)
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(tmp_path / "mypy.ini"), "--cache-dir",
                           str(tmp_path / "cache"), str(source)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    lines = [line.split("typos.py:", 1)[1] for line in done.stdout.splitlines() if "typos.py:" in line]
    found = sorted(int(line.split(":")[0]) for line in lines)
    assert found == [8, 9, 10, 11, 12, 13, 14, 15], done.stdout + done.stderr
