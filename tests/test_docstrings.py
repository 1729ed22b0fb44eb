"""Every docstring example in the package runs (doctest), unless it is marked to skip: those start a server,
a load tool, a docker engine or a kernel, or read results that a run would have written."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import benchlab

MODULES = sorted(m.name for m in pkgutil.walk_packages(benchlab.__path__, "benchlab.") if m.name != "benchlab.__main__")
#: What a skipped example may do, and why it cannot run in a unit test: start or read something real.
STARTS = ("run(", "compare(", "build(", "load(", "connect(", "execute(", "batch(", "prepare_cds(", "Panel(",
          "read_batch(", "doctor(", "image", "suite.", "r.to_frame", "DockerBackend", "benchlab.", "read_csv(",
          "to_html(", "click()")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        skipped_before = False  # a later skipped line may use what an earlier one started
        for example in test.examples:
            if example.options.get(doctest.SKIP):
                assert skipped_before or any(word in example.source for word in STARTS), \
                    f"{test.name}: a skipped example that starts nothing should run: {example.source}"
                skipped_before = True
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} docstring example(s) failed"
