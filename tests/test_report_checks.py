"""Report parameters that are compare()/run() options are checked by the options' own rules before a kernel
starts; the kernel's start-up log says nothing on a normal report (one real kernel, a two-cell notebook)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from benchlab import report
from benchlab.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("given, says", [
    ({"repeats": "abc"}, "repeats must be a whole number of 1 or more or 'auto', not 'abc'"),
    ({"repeats": 0}, "repeats must be a whole number of 1 or more or 'auto', not 0"),
    ({"duration": "10x"}, "bad duration '10x'"),
    ({"warmup": "warm"}, "bad warmup 'warm'"),
    ({"connections": "16,x"}, "connections must be a whole number of 1 or more, not 'x'"),
    ({"connections": [16, 0]}, "connections must be a whole number of 1 or more, not 0"),
    ({"load": "burst"}, "unknown load 'burst'"),
    ({"order": "random"}, "unknown order 'random'"),
    ({"server_cpus": "0-x"}, "bad server_cpus '0-x'"),
    ({"rates": [100, -1]}, "rate must be more than 0"),
    ({"servers": "spring-tomcat,spring-tomcot"}, "unknown server 'spring-tomcot'"),
    ({"startup_timeout": "soon"}, "bad startup_timeout 'soon'"),
])
def test_a_bad_option_value_is_refused_by_its_own_rule(given, says):
    with pytest.raises(UsageError, match="^" + __import__("re").escape(says)):
        report.check_options(given)


@pytest.mark.parametrize("given", [
    {"repeats": "auto", "duration": "2s", "warmup": "auto", "connections": "16,64", "servers": ["spring-jetty"]},
    {"repeats": 3, "duration": 5, "timeout": "1s", "load_cpus": None, "rates": None, "threads": None},
    {"measure": False, "repeats": "abc", "results_dir": "anything"},   # a re-render uses no option
    {"scenario": "whatever", "title": "not an option"},            # a notebook's own parameters are its own
])
def test_good_values_and_other_parameters_pass(given):
    report.check_options(given)


def test_a_batch_is_checked_by_the_same_rules_before_its_first_report(tmp_path):
    entries = [{"notebook": str(ROOT / "notebooks" / "compare.ipynb"), "parameters": {"repeats": 2}},
               {"notebook": str(ROOT / "notebooks" / "compare.ipynb"), "parameters": {"repeats": "abc"}}]
    with pytest.raises(UsageError, match=r"^report 2 \(.*compare.ipynb\): repeats must be"):
        report.batch(entries, echo=lambda *a: pytest.fail("nothing runs"))


@pytest.mark.integration  # one real kernel
def test_a_report_that_fails_says_so_in_one_line_without_the_kernels_tcp_warning(tmp_path):
    notebook = tmp_path / "tiny.ipynb"
    parameters = nbformat.v4.new_code_cell("x: int = 1")
    parameters.metadata["tags"] = ["parameters"]
    failing = nbformat.v4.new_code_cell("raise ValueError('the cell failed')")
    tiny = nbformat.v4.new_notebook(cells=[parameters, failing])
    tiny.metadata.update(kernelspec={"name": "python3", "display_name": "Python 3", "language": "python"},
                         language_info={"name": "python"})
    nbformat.write(tiny, str(notebook))
    done = subprocess.run([sys.executable, "-m", "benchlab", "report", str(notebook), "-p", "x", "2",
                           "-o", str(tmp_path / "out.ipynb")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1 and "without encryption" not in done.stderr, done.stderr
    assert len(lines) == 1 and "ValueError: the cell failed" in lines[0], done.stderr
    assert (tmp_path / "out.ipynb").exists()


def test_a_notebooks_own_parameter_under_an_options_name_is_left_to_the_notebook(tmp_path):
    # a user's notebook whose "protocol" is how its runs are taken (its default "controlled" is no value of the run
    # option protocol, what the requests speak): the report leaves it to the notebook's own check
    mine, compare = tmp_path / "mine.ipynb", ROOT / "notebooks" / "compare.ipynb"
    parameters = nbformat.v4.new_code_cell('protocol: str = "controlled"\nrepeats = 3',
                                           metadata={"tags": ["parameters"]})
    nbformat.write(nbformat.v4.new_notebook(cells=[parameters]), str(mine))
    report.check_options({"protocol": "both"}, mine)
    with pytest.raises(UsageError, match="unknown protocol 'both'"):
        report.check_options({"protocol": "both"}, compare)
    with pytest.raises(UsageError, match="repeats must be"):
        report.check_options({"protocol": "both", "repeats": "abc"}, mine)
