"""Every public option is reachable from the function, the command line and the notebook alike: checked here,
in one place, against the one list benchlab.running.options.OPTIONS (unit tests, nothing starts)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import benchlab
from benchlab import api, cli
from benchlab.errors import UsageError
from benchlab.running import options as declared
from benchlab.running import spec

ROOT = Path(__file__).resolve().parent.parent


def _cli_dests(command: str) -> set[str]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return {a.dest for a in sub.choices[command]._actions if a.dest != "help"}


@pytest.mark.parametrize("where", ["run", "compare"])
def test_function_command_line_and_list_agree(where):
    function = getattr(api, where)
    listed = [o.name for o in declared.options(where)]
    assert len(listed) == len(set(listed)), "an option is listed twice"
    parameters = inspect.signature(function).parameters
    in_python = set(parameters) - set(declared.PYTHON_ONLY[where])
    assert in_python == set(listed), f"{where}(): {in_python ^ set(listed)}"
    assert _cli_dests(where) == set(listed), f"benchlab {where}: {_cli_dests(where) ^ set(listed)}"
    stale = {o.name: (parameters[o.name].default, o.default) for o in declared.options(where)
             if parameters[o.name].default != o.default}
    assert not stale, f"{where}()'s defaults differ from the declaration's: {stale}"


def test_prepare_checks_every_per_run_option_from_one_object():
    """prepare() is the one place per-run options are checked, and takes them as one object: RunOptions holds
    every option of run() but its server, scenario and storage, and prepare() few parameters besides."""
    import dataclasses

    per_run = {o.name for o in declared.options("run")} - {"server", "scenario", "results_dir", "label"}
    assert {f.name for f in dataclasses.fields(declared.RunOptions)} == per_run
    assert len(inspect.signature(spec.prepare).parameters) <= 8
    compare_only = {o.name for o in declared.options("compare")} - {o.name for o in declared.options("run")}
    assert compare_only == {"servers", "scenarios", "repeats", "windows", "interleave", "precision", "max_repeats",
                            "budget", "rates", "order", "seed", "restart", "baseline", "factors", "hosts", "borrow",
                            "history", "progress"}


def test_no_keyword_dict_carries_options_from_api_into_running():
    """compare() builds one Comparison at the door; nothing below it takes **options (issue: a reader lost
    warmup at the first **common dict)."""
    import ast

    for path in [ROOT / "benchlab" / "api.py", *sorted((ROOT / "benchlab" / "running").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.args.kwarg and node.name in ("prepare", "matrix", "fork",
                                                                                      "measure", "compare", "run"):
                raise AssertionError(f"{path.name}: {node.name}() takes **{node.args.kwarg.arg}")


def test_the_notebook_takes_every_compare_option():
    import papermill

    taken = set(papermill.inspect_notebook(str(ROOT / "notebooks" / "compare.ipynb")))
    missing = {o.name for o in declared.options("compare")} - taken - {"progress"}
    assert not missing, f"compare.ipynb lacks parameters {sorted(missing)}"


def test_the_notebooks_parameters_cell_is_the_declarations():
    """A stale default or help text in compare.ipynb's parameters cell fails here: each option's line is made from
    the declaration (benchlab.running.options.parameters_cell)."""
    import json

    notebook = json.loads((ROOT / "notebooks" / "compare.ipynb").read_text())
    cell = next(c for c in notebook["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    text = "".join(cell["source"])
    made = "\n".join(declared.parameters_cell("compare"))
    assert made in text, "compare.ipynb's parameters cell differs from benchlab.running.options.parameters_cell()"


def test_the_command_line_hands_every_value_over_as_python():
    parser = cli.build_parser()
    args = parser.parse_args(["compare", "--servers", "spring-tomcat,spring-jetty", "--connections", "16,64",
                              "--rates", "100,200.5", "--jvm-opts=-Xmx64m", "--jvm-opts=-Xss512k", "--no-progress",
                              "--load-in-container", "--port", "8081", "--warmup", "5s"])
    assert cli._given(args, "compare") == {
        "servers": ["spring-tomcat", "spring-jetty"], "connections": [16, 64], "rates": [100.0, 200.5],
        "jvm_opts": ["-Xmx64m", "-Xss512k"], "progress": False, "load_in_container": True, "port": 8081,
        "warmup": "5s"}
    assert cli._given(parser.parse_args(["run"]), "run") == {}, "defaults come from the function, not the parser"


def test_the_help_shows_the_function_defaults():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    text = sub.choices["compare"].format_help()
    assert "(default: spring-tomcat,spring-jetty,spring-undertow)" in text.replace("\n", "").replace(" " * 24, "")
    flat = " ".join(text.split())
    assert "(default: 3, or auto with --budget)" in flat and "(default: 0.03)" in flat


@pytest.mark.parametrize("call, message", [
    (lambda: benchlab.run(duraton="1s"), "run() has no option duraton (did you mean duration?); its options are "),
    (lambda: benchlab.compare(plans="x.jmx"), "compare() has no option plans (did you mean plan?)"),
    (lambda: benchlab.compare(zzz=1), "compare() has no option zzz; its options are servers, scenarios,"),
])
def test_an_unknown_keyword_is_named_with_the_valid_ones(call, message):
    with pytest.raises(UsageError) as info:
        call()
    assert str(info.value).startswith(message)


def test_options_once_refused_deep_down_now_work_from_compare(tmp_path):
    """plan, ramp_up and port reach every run of a matrix (they fell into **backend_options before)."""
    from benchlab.running.matrix import matrix

    jmx = tmp_path / "mine.jmx"
    jmx.write_text('<?xml version="1.0"?><jmeterTestPlan version="1.2">'
                   '<hashTree><ThreadGroup testclass="ThreadGroup"/></hashTree></jmeterTestPlan>')
    runs = matrix(declared.Comparison.of(servers=["spring-tomcat", "spring-jetty"], scenarios=["hello"], repeats=1,
                                         load="count", users=[2], loops=[3], driver="jmeter", plan=str(jmx),
                                         ramp_up="2s", port=18765))
    assert {spec_.load.plan for _, spec_ in runs} == {str(jmx)}
    assert {spec_.load.ramp_up for _, spec_ in runs} == {2.0}
    assert {spec_.port for _, spec_ in runs} == {18765}


def test_docker_options_need_the_docker_backend():
    with pytest.raises(UsageError, match="load_in_container applies to backend='docker'"):
        spec.prepare("spring-jetty", None, declared.RunOptions(load_in_container=True))


def test_only_the_command_line_parses_arguments():
    """Every subcommand is in cli.py; no other module of the package builds a parser."""
    users = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "benchlab").rglob("*.py")
                   if "argparse" in path.read_text() and path.name != "cli.py")
    assert users == []
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) == {"build", "run", "image", "compare", "show", "doctor", "report", "batch"}


def test_the_old_spellings_are_still_read():
    """"iteration" became "window" and restart "each-run" became "each-fork": code and stored runs that say the old
    words still work."""
    from benchlab.running.matrix import check_design

    checked = api.compare.__wrapped__  # the function under @keywords: the aliases are the decorator's
    parameters = inspect.signature(checked).parameters
    assert "windows" in parameters and "iterations" not in parameters
    comparison = declared.Comparison.of(windows=3, restart="each-run")
    assert comparison.restart == "each-fork" and comparison.design()[1] == 3
    check_design(comparison)
    args = cli.build_parser().parse_args(["compare", "--iterations", "2", "--restart", "each-run"])
    assert cli._given(args, "compare") == {"windows": 2, "restart": "each-fork"}
    with pytest.raises(UsageError, match="windows must be a whole number"):
        benchlab.compare(["spring-tomcat"], iterations=0)


def test_a_shared_server_is_keyed_by_everything_that_makes_it_another():
    """restart="never" with server_cpus as a factor: one shared server per core set, not the first core set's."""
    from benchlab.running.matrix import matrix

    runs = matrix(declared.Comparison.of(servers=["spring-tomcat"], scenarios=["hello"], repeats=1, restart="never",
                                         factors={"server_cpus": ["0", "1"]}, load_cpus="1"))
    keys = {spec_.server_key() for _, spec_ in runs}
    assert len(runs) == 2 and len(keys) == 2
