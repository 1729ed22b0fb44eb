"""The shape of the code: no import cycle, small modules that say their one job, the vocabulary written once.

These read the source with ``ast``; nothing is imported, so they are fast and need no tool.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from benchlab import schema

PACKAGE = Path(__file__).resolve().parent.parent / "benchlab"
MAX_LINES = 350


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A module's tree, parsed once for all the checks (each walk of the whole package cost 0.2 s)."""
    return ast.parse(path.read_text())


@functools.cache
def walked(tree: ast.AST) -> tuple[ast.AST, ...]:
    """Every node of ``tree``, as ``ast.walk`` gives them, walked once for all the checks (six walks of the whole
    package cost 2.4 s of the fast tier)."""
    return tuple(ast.walk(tree))


def imports(name: str) -> set[str]:
    """The benchlab modules ``name`` imports, at any level (function-level imports included)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in walked(parsed(path)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # "from . import images" imports the module benchlab.x.images, not the package benchlab.x
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # "import benchlab.running.drivers.wrk.x" -> the module it names
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path that returns to its start) per strongly connected group of modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    found = []
    for group in groups:
        start, members = min(group), set(group)
        path, seen = [start], {start}
        while True:  # walk inside the group until a module repeats: that closes a cycle
            nxt = min(n for n in graph[path[-1]] if n in members)
            if nxt in seen:
                found.append(path[path.index(nxt):] + [nxt])
                break
            path.append(nxt)
            seen.add(nxt)
    return found


def test_the_import_graph_has_no_cycle():
    graph = {name: imports(name) for name in MODULES}
    # the scan sees imports
    assert "benchlab.running.backends.docker.images" in graph["benchlab.running.backends.docker.backend"]
    found = cycles(graph)
    assert not found, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in found)


#: What each package may import. The base is the vocabulary every package shares; the entry points (the public
#: face, the command line, the notebook panel, the report and the replay that reproduce.ipynb runs) may import
#: anything.
BASE = {"benchlab.errors", "benchlab.schema", "benchlab.home", "benchlab.version", "benchlab.cores"}
ENTRY = {"benchlab", "benchlab.__main__", "benchlab.api", "benchlab.cli", "benchlab.report", "benchlab.widgets",
         "benchlab.reproduce"}
MAY_IMPORT = {
    "base": {"base"},
    "store": {"base", "store"},
    "analysis": {"base", "store", "analysis"},
    "present": {"base", "store", "analysis", "present"},
    "running": {"base", "store", "analysis", "running"},
}


def package(name: str) -> str:
    """The part of the code ``name`` is in: a package of benchlab's, the base or the entry points."""
    if name in BASE:
        return "base"
    if name in ENTRY:
        return "entry"
    parts = name.split(".")
    assert len(parts) >= 2 and parts[1] in MAY_IMPORT, f"{name} belongs to no package: move it into one"
    return parts[1]


def test_every_module_has_a_package():
    assert {package(name) for name in MODULES} == {"base", "entry", *MAY_IMPORT}


def test_each_package_imports_only_the_packages_below_it():
    wrong = []
    for name in sorted(MODULES):
        own = package(name)
        if own == "entry":
            continue
        for target in sorted(imports(name)):
            if package(target) not in MAY_IMPORT[own]:
                wrong.append(f"{name} ({own}) imports {target} ({package(target)})")
    assert not wrong, "imports against the packages' direction: " + "; ".join(wrong)


def test_a_cycle_is_named():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_module_is_small_and_says_its_one_job(name):
    path = MODULES[name]
    source = path.read_text()
    lines = len(source.splitlines())
    where = path.relative_to(PACKAGE.parent)
    assert lines <= MAX_LINES, f"{where} has {lines} lines: split it by job (at most {MAX_LINES})"
    if path.name == "__main__.py":
        return
    docstring = ast.get_docstring(ast.parse(source))
    assert docstring, f"{name} has no docstring: its first line should say its one job"
    first = docstring.splitlines()[0].strip()
    assert len(first.split()) >= 4, f"{name}'s docstring opens with {first!r}: say the module's one job there"


MAX_FUNCTION_LINES = 60
#: Functions allowed over the limit, with why; an entry no longer needed fails the test.
EXCEPTIONS = {
    "benchlab.api:compare": "its numpydoc documents 40 options for the function, the command line and the "
                            "notebook alike; its code is under the limit",
}


def long_functions() -> dict[str, int]:
    """``{"module:function": lines}`` for every (async) function longer than the limit, counted from its
    ``def`` line to its last line, docstring included; a method is named ``Class.method``."""
    found = {}
    for name, path in MODULES.items():
        tree = parsed(path)
        for parent in walked(tree):
            for node in ast.iter_child_nodes(parent):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        owner = f"{parent.name}." if isinstance(parent, ast.ClassDef) else ""
                        found[f"{name}:{owner}{node.name}"] = lines
    return found


def test_no_function_is_over_60_lines():
    found = long_functions()
    over = {where: lines for where, lines in found.items() if where not in EXCEPTIONS}
    listed = ", ".join(f"{where} ({lines})" for where, lines in sorted(over.items()))
    assert not over, f"over {MAX_FUNCTION_LINES} lines: {listed}; split each into helpers that do one job"
    tree = parsed(MODULES["benchlab.api"])
    compare = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "compare")
    assert compare.end_lineno - compare.body[0].end_lineno <= MAX_FUNCTION_LINES, "compare's code, past its docstring"
    stale = set(EXCEPTIONS) - set(found)
    assert not stale, f"no longer over {MAX_FUNCTION_LINES} lines: remove {', '.join(sorted(stale))} from EXCEPTIONS"


#: The vocabulary lists that exist once, in benchlab/schema.py.
VOCABULARY = {
    "error kinds": schema.ERROR_KINDS,
    "error columns": schema.ERROR_COLUMNS,
    "percentile columns": tuple(schema.PERCENTILE_COLUMNS),
    "percentiles": tuple(schema.PERCENTILE_COLUMNS.values()),
    "cell": schema.CELL,
    "server and cell": ("server", *schema.CELL),
    "latency columns": schema.LATENCY_COLUMNS,
    "flags": tuple(schema.FLAGS),
    "time units": tuple(schema.SECONDS),
    "statuses": schema.STATUSES,
    "warm-up classes": schema.WARMUP_CLASSES,
    "claim verdicts": tuple(schema.CLAIM_VERDICTS),
}


def literal(node: ast.AST):
    """The value of a tuple, list, set or dict literal of constants (its keys for a dict), else None."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = node.elts
    elif isinstance(node, ast.Dict):
        items = node.keys
    else:
        return None
    if not items or not all(isinstance(i, ast.Constant) for i in items):
        return None
    values = tuple(i.value for i in items)
    return tuple(float(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in values)


def test_the_vocabulary_is_written_once():
    wanted = {tuple(float(v) if isinstance(v, int) else v for v in values): what
              for what, values in VOCABULARY.items()}
    copies = []
    for name, path in MODULES.items():
        if name == "benchlab.schema":
            continue
        for node in walked(parsed(path)):
            value = literal(node)
            if value is None:
                continue
            for size in range(len(value), 2, -1):  # a copy may sit inside a longer literal
                for start in range(len(value) - size + 1):
                    what = wanted.get(value[start:start + size])
                    if what:
                        copies.append(f"{name}:{node.lineno} repeats schema's {what}")
    assert not copies, "import these from benchlab.schema instead: " + "; ".join(copies)


def test_the_vocabulary_scan_finds_a_copy():
    tree = ast.parse('KINDS = ("connect", "read", "write", "status", "timeout")')
    assert literal(tree.body[0].value) == schema.ERROR_KINDS


def test_the_flags_explained_are_schemas():
    from benchlab.analysis import flags

    assert flags.FLAGS is schema.FLAGS


def test_the_package_loads_its_api_when_first_used():
    # `import benchlab.store.files` (a lock, a file write, a child process) does not pay for pandas and the API;
    # every name and subpackage the package showed when it imported them at once is still reachable.
    import subprocess
    import sys

    code = ("import sys, benchlab.store.files; light = 'pandas' not in sys.modules; import benchlab; "
            "from benchlab.api import compare; from benchlab.analysis.suite import Suite; "
            "from benchlab.running import factors; "
            "same = benchlab.compare is compare and benchlab.Suite is Suite and benchlab.factors is factors; "
            "benchlab.running.options.options; print(light, same, 'pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True", "True", "True"], done.stdout + done.stderr



def test_a_module_asked_of_the_package_is_imported_alone():
    # `from benchlab.running.spec import prepare` in a fresh process raised a circular ImportError: spec's
    # `from .. import cores` asked the lazy package for `cores`, which loaded the whole API, which imports spec.
    import subprocess
    import sys

    plain = sorted(n.split(".")[1] for n in BASE)
    code = ("import sys, benchlab\n"
            f"for name in {plain!r}: getattr(benchlab, name)\n"
            "print('benchlab.api' in sys.modules)\n"
            "from benchlab.running.spec import prepare; print(prepare.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "prepare"], done.stdout + done.stderr


#: The modules that write to a person: the command line and its terminal, the notebook and its panel. The library
#: speaks through them: its notes go to the ``benchlab`` log (``logging.getLogger(__name__)``) or to an ``echo``
#: its caller gives.
WRITERS = {"benchlab.cli", "benchlab.present.terminal", "benchlab.present.notebook", "benchlab.present.live",
           "benchlab.widgets"}
#: Library modules allowed a ``print(`` anyway, with why; an entry no longer needed fails the test.
PRINTS: dict[str, str] = {}


def prints(tree: ast.AST) -> list[int]:
    """The lines of every call of the built-in ``print`` (a doctest's ``>>> print(`` is text, not a call)."""
    return [node.lineno for node in walked(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"]


def test_the_library_speaks_through_its_caller():
    found = {name: prints(parsed(path)) for name, path in MODULES.items() if name not in WRITERS}
    found = {name: lines for name, lines in found.items() if lines}
    wrong = [f"{name}:{line}" for name, lines in sorted(found.items()) if name not in PRINTS for line in lines]
    assert not wrong, ("print() in library code: " + ", ".join(wrong) + "; log it (logging.getLogger(__name__)) "
                       "or say it through the caller's echo")
    stale = set(PRINTS) - set(found)
    assert not stale, f"no print() left in {', '.join(sorted(stale))}: remove it from PRINTS"
    assert WRITERS <= set(MODULES), f"no such writer: {', '.join(sorted(WRITERS - set(MODULES)))}"


def test_the_print_scan_finds_a_print_and_not_a_doctest():
    tree = ast.parse('def f():\n    """>>> print(1)"""\n    print("x", file=sys.stderr)\n    echo = print\n')
    assert prints(tree) == [3]


BROAD = {"Exception", "BaseException"}


@functools.cache
def comments(source: str) -> dict[int, str]:
    """``{line: comment}`` of every comment in ``source`` (a ``#`` inside a string is not one); tokenized once a
    module, for the two checks that read comments."""
    import io
    import tokenize

    return {token.start[0]: token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type == tokenize.COMMENT}


def silent_broad_excepts(source: str) -> list[int]:
    """The lines of every ``except:``, ``except Exception`` or ``except BaseException`` (alone or in a tuple) that
    neither says why in a comment on its line nor re-raises what it caught (a bare ``raise`` in its body)."""
    said = comments(source)
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ExceptHandler):
            continue
        caught = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
        broad = node.type is None or any(isinstance(t, ast.Name) and t.id in BROAD for t in caught)
        reraised = any(isinstance(n, ast.Raise) and n.exc is None for s in node.body for n in ast.walk(s))
        if broad and not reraised and node.lineno not in said:
            found.append(node.lineno)
    return found


def test_every_broad_except_says_why():
    found = [f"{name}:{line}" for name, path in sorted(MODULES.items())
             for line in silent_broad_excepts(path.read_text())]
    assert not found, ("an except that catches everything and keeps it: " + ", ".join(found) + "; catch what you "
                       "mean, or say why in a comment on the except line")


def test_the_except_scan_sees_a_silent_one_and_not_a_cleanup_or_a_reason():
    source = ("try:\n    f()\nexcept Exception:\n    pass\n"
              "try:\n    f()\nexcept (OSError, BaseException):\n    g()\n    raise\n"
              "try:\n    f()\nexcept Exception:  # the caller's callback: reported below\n    pass\n"
              "try:\n    f()\nexcept OSError:\n    pass\n"
              "try:\n    f()\nexcept:\n    s = '# not a comment'\n")
    assert silent_broad_excepts(source) == [3, 20]


def enabled_rules() -> tuple[list[str], list[str]]:
    """ruff's selected and ignored rule codes (prefixes), as pyproject.toml says them."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    lint = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    return lint.get("select", []), lint.get("ignore", [])


def covers(prefixes: list[str], code: str) -> bool:
    """Whether a ruff code is among ``prefixes``, as ruff reads a prefix: its linter's letters whole ("B" is
    bugbear's B001, not BLE001, blind except's), then the start of the number."""
    import re

    letters, digits = re.fullmatch(r"([A-Z]+)([0-9]*)", code).groups()
    for prefix in prefixes:
        own, start = re.fullmatch(r"([A-Z]+)([0-9]*)", prefix).groups()
        if own == letters and digits.startswith(start):
            return True
    return False


def disabled_noqa(source: str, select: list[str], ignore: list[str]) -> list[str]:
    """Each ``# noqa: CODE`` in ``source`` whose CODE ruff does not check (not selected, or ignored), as
    ``"line: CODE"``: such a comment silences nothing and reads as if a rule held there."""
    import re

    found = []
    for line, comment in comments(source).items():
        match = re.search(r"noqa:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)", comment)
        for code in re.split(r"\s*,\s*", match.group(1)) if match else ():
            if not (covers(select, code) and not covers(ignore, code)):
                found.append(f"{line}: {code}")
    return found


def test_no_noqa_names_a_rule_ruff_does_not_check():
    select, ignore = enabled_rules()
    assert "F" in select, "pyproject.toml's ruff select is read"
    sources = {**{name: path for name, path in MODULES.items()},
               **{f"tests.{p.stem}": p for p in sorted((PACKAGE.parent / "tests").glob("*.py"))}}
    found = [f"{name}:{where}" for name, path in sorted(sources.items())
             for where in disabled_noqa(path.read_text(), select, ignore)]
    assert not found, ("noqa for a rule ruff does not check: " + ", ".join(found) + "; say why in words, or enable "
                       "the rule in pyproject.toml")


def test_the_noqa_scan_knows_an_enabled_rule_from_a_disabled_one():
    source = ("x = 1  # noqa: E731\ny = 2  # noqa: BLE001 - why\nz = 3  # noqa: F401, S307\nw = '# noqa: S1'\n"
              "v = 4  # noqa: B018\n")
    assert disabled_noqa(source, ["F", "E", "B"], ["E731"]) == ["1: E731", "2: BLE001", "3: S307"]


#: The option names a flat keyword of run() or compare() may carry: the fields of the objects built from them.
def option_names() -> set[str]:
    import dataclasses

    from benchlab.running.options import Comparison, RunOptions

    return {f.name for cls in (Comparison, RunOptions) for f in dataclasses.fields(cls)} - {"run"}


#: The calls that build the options object at the door.
BUILDERS = {"Comparison.of", "RunOptions.of"}


def flat_reads_after_the_object(function: ast.FunctionDef, names: set[str]) -> tuple[int | None, list[str]]:
    """``(line of the statement that builds the options object, ["line: name", ...])``: every read of a flat
    option argument of ``function`` after that statement (in nested functions and lambdas too), and any
    ``locals()`` there, which reads them all. Past the object, only the object holds the options: a rewrite of
    it (``hosts.prepare``'s) is seen by every later read."""
    flat = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)} & names
    built = None
    for statement in function.body:
        if any(isinstance(n, ast.Call) and ast.unparse(n.func) in BUILDERS for n in ast.walk(statement)):
            built = statement
            break
    if built is None:
        return None, []
    wrong = []
    for statement in function.body[function.body.index(built) + 1:]:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id in flat:
                wrong.append(f"{node.lineno}: {node.id}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "locals":
                wrong.append(f"{node.lineno}: locals()")
    return built.lineno, wrong


def test_past_the_options_object_no_flat_option_is_read():
    names = option_names()
    checked = {}
    for name in ENTRY & set(MODULES):
        for node in walked(parsed(MODULES[name])):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                line, wrong = flat_reads_after_the_object(node, names)
                if line is not None:
                    checked[f"{name}:{node.name}"] = wrong
    assert {"benchlab.api:run", "benchlab.api:compare"} <= set(checked), f"the object is built in {sorted(checked)}"
    wrong = [f"{where} line {read}" for where, reads in sorted(checked.items()) for read in reads]
    assert not wrong, ("a flat option read after its options object is built: " + "; ".join(wrong) + "; read it "
                       "from the object (comparison.budget, spec...), which hosts.prepare may have rewritten")


def test_the_flat_read_scan_sees_a_read_past_the_object():
    tree = ast.parse("def compare(servers, *, budget=None, label=None):\n"
                     "    given = dict(locals())\n"
                     "    comparison = prepare(Comparison.of(**given))\n"
                     "    limit = comparison.budget or label\n"
                     "    check = lambda: budget\n"
                     "    return [s for s in servers], locals()\n")
    line, reads = flat_reads_after_the_object(tree.body[0], {"servers", "budget"})
    assert (line, sorted(reads)) == (3, ["5: budget", "6: locals()", "6: servers"])


#: Glossary words (docs/architecture.md, "Words") that have been given a second meaning in the code before.
GLOSSARY = ("run", "window", "fork", "cell", "host", "protocol", "procedure", "layer")
#: Each function or class named by a glossary word, and each parameter so named (``module:function(word=)``), with
#: the meaning it has there. A new one fails until it is listed: name it after what it is, or say here why the
#: word fits. An entry no longer found fails too. A notebook's parameters are scanned as well
#: (``notebooks/<name>.ipynb(word=)``), since a parameter is as public as a function's.
MEANINGS = {
    "benchlab.schema:cell": "the glossary's cell: the one function that names it",
    "benchlab.running.fork:window": "Fork.window measures the fork's next window",
    "benchlab.running.measure:fork": "one fork of run()",
    "benchlab.running.fork:whole(fork=)": "a Fork",
    "benchlab.running.window:take(fork=)": "a Fork",
    "benchlab.running.window:_record(fork=)": "a Fork",
    "benchlab.running.window:_live(fork=)": "a Fork",
    "benchlab.running.window:_measured(fork=)": "a Fork",
    "benchlab.analysis.cells:fork_key(fork=)": "a fork's number in its run's parameters",
    "benchlab.analysis.series:of_run(run=)": "a Run",
    "benchlab.present.terminal:format_run(run=)": "a Run",
    "benchlab.store.results:save(run=)": "a Run",
    "benchlab.api:run": "the verb: the public run() the README shows, kept",
    "notebooks/compare.ipynb(protocol=)": "the protocol requests speak, as compare(protocol=)",
    "notebooks/reproduce.ipynb(procedure=)": "the procedure a claim is replayed by (controlled, theirs, both)",
    "benchlab.running.process:run": "the verb, as STYLE names it: start a command, wait for it",
    "benchlab.widgets:run": "the verb of the panel's Run button",
    "benchlab.api:compare(protocol=)": "what the requests speak on the wire",
    "benchlab.api:run(protocol=)": "what the requests speak on the wire",
    "benchlab.running.backends.base:http_get(protocol=)": "what the requests speak on the wire",
    "benchlab.running.backends.base:wait_ready(protocol=)": "what the requests speak on the wire",
    "benchlab.running.drivers.h2load:negotiated(protocol=)": "what the requests speak on the wire",
    "benchlab.running.drivers:get(protocol=)": "what the requests speak on the wire",
    "benchlab.running.protocols:_answer(protocol=)": "what the requests speak on the wire",
    "benchlab.running.protocols:_client_context(protocol=)": "what the requests speak on the wire",
    "benchlab.running.protocols:_http2(protocol=)": "what the requests speak on the wire",
    "benchlab.running.protocols:check(protocol=)": "what the requests speak on the wire",
    "benchlab.running.protocols:listener(protocol=)": "what the requests speak on the wire",
    "benchlab.running.protocols:request(protocol=)": "what the requests speak on the wire",
    "benchlab.running.spec:_check_protocol(protocol=)": "what the requests speak on the wire",
    "benchlab.running.verify:_server_info(protocol=)": "what the requests speak on the wire",
    "benchlab.running.verify:verify(protocol=)": "what the requests speak on the wire",
    "benchlab.analysis.claims:_clean(procedure=)": "how a claim's runs are taken",
    "benchlab.analysis.claims:_judge_one(procedure=)": "how a claim's runs are taken",
    "benchlab.analysis.claims:_untestable(procedure=)": "how a claim's runs are taken",
    "benchlab.analysis.claims:judge(procedure=)": "how a claim's runs are taken",
    "benchlab.present.replay:check(procedure=)": "how a claim's runs are taken",
    "benchlab.reproduce:experiments(procedure=)": "how a claim's runs are taken",
    "benchlab.analysis.profiles:layer": "the layer a stack's frames claim",
}


def glossary_names(module: str, tree: ast.AST) -> set[str]:
    """``module:name`` for each function or class named by a glossary word, ``module:function(word=)`` for each
    parameter so named (methods by their own name: a class's methods of one name are one entry)."""
    found = set()
    for node in walked(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in GLOSSARY:
            found.add(f"{module}:{node.name}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args
            for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
                if argument.arg in GLOSSARY:
                    found.add(f"{module}:{getattr(node, 'name', 'lambda')}({argument.arg}=)")
    return found


def notebook_names() -> set[str]:
    """Each notebook's parameter named by a glossary word, as ``notebooks/<name>.ipynb(word=)``."""
    from benchlab.present.notebook import assignments, parameters_source

    return {f"notebooks/{path.name}({name}=)" for path in sorted((PACKAGE.parent / "notebooks").glob("*.ipynb"))
            for name, _, _ in assignments(parameters_source(path)) if name in GLOSSARY}


def test_a_glossary_word_names_only_what_the_glossary_says_or_is_listed():
    found = set().union(*(glossary_names(name, parsed(path)) for name, path in MODULES.items()), notebook_names())
    new = sorted(found - set(MEANINGS))
    assert not new, (f"named by a glossary word ({', '.join(GLOSSARY)}): {', '.join(new)}; if it means what "
                     "docs/architecture.md's Words say, list it in MEANINGS; if not, name it after what it is")
    stale = sorted(set(MEANINGS) - found)
    assert not stale, f"no longer found: remove {', '.join(stale)} from MEANINGS"


def test_the_glossary_scan_finds_a_function_and_a_parameter():
    tree = ast.parse("def cell(source):\n    pass\nclass A:\n    def f(self, *, window=1.0):\n        pass\n")
    assert glossary_names("m", tree) == {"m:cell", "m:f(window=)"}


#: Below the entry points (and the options module, which declares them) a function takes the options object, or the
#: object a step made of it (``RunSpec``, ``Load``, ``Launch``, ``DockerOptions``), not the options one by one: a
#: function that takes more than this many option names by name re-reads the flat options, one step down.
MAX_OPTION_PARAMETERS = 3
#: The modules that take options by name: the doors (run(), compare(), the command line, the notebook panel and the
#: replay) and the declaration itself.
DOORS = ENTRY | {"benchlab.running.options"}
#: Functions allowed more, with why (``module:function``, a method by its own name as in MEANINGS); an entry no
#: longer needed fails the test.
OPTION_PARAMETERS = {
    "benchlab.analysis.precision:__init__": "Rule: analysis may not import running's Comparison; api._rule builds "
                                            "it once from the comparison's design, already chosen (auto resolved)",
    "benchlab.analysis.precision:enough": "the Rule's own fields handed to its stopping test, in the analysis package",
    "benchlab.running.servers:argv": "a server's command line from its Launch's resolved values (a free port, the "
                                     "java found), not from the options",
    "benchlab.running.backends.docker.backend:__init__": "DockerBackend's public constructor (tests and the image "
                                                         "commands build one by engine); backends.get hands it "
                                                         "DockerOptions' fields once",
    "benchlab.running.importers:import_hdr": "a door of its own (benchlab.import_hdr): the user says how the imported "
                                             "log was measured, stored as its run's parameters",
}


def option_parameters(module: str, tree: ast.AST, names: set[str]) -> dict[str, list[str]]:
    """``{"module:function": [option names among its parameters]}`` for each function (a method by its own name)
    whose signature names more than :data:`MAX_OPTION_PARAMETERS` options."""
    found: dict[str, list[str]] = {}
    for node in walked(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            taken = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs) if a.arg in names]
            if len(taken) > MAX_OPTION_PARAMETERS:
                found.setdefault(f"{module}:{node.name}", taken)
    return found


def test_below_the_doors_options_travel_as_one_object():
    names = option_names()
    found: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        if name not in DOORS:
            found.update(option_parameters(name, parsed(path), names))
    wrong = [f"{where}({', '.join(taken)})" for where, taken in sorted(found.items()) if where not in OPTION_PARAMETERS]
    assert not wrong, (f"options taken one by one below the doors (more than {MAX_OPTION_PARAMETERS}): "
                       + "; ".join(wrong) + "; take the Comparison, RunOptions or RunSpec that holds them, or list "
                       "the function in OPTION_PARAMETERS with why")
    stale = sorted(set(OPTION_PARAMETERS) - set(found))
    assert not stale, f"no longer taking options one by one: remove {', '.join(stale)} from OPTION_PARAMETERS"
    assert DOORS <= set(MODULES), f"no such door: {', '.join(sorted(DOORS - set(MODULES)))}"


def test_the_option_parameter_scan_sees_a_flat_signature_and_not_an_object():
    tree = ast.parse("def points(load, connections, users, loops, rates=None):\n    pass\n"
                     "class Rule:\n    def check(self, c, *, precision=0.03, baseline=None, borrow=True):\n"
                     "        pass\n"
                     "def prepare(server, scenario, options, *, tools=True):\n    pass\n")
    names = {"load", "connections", "users", "loops", "rates", "precision", "baseline", "borrow"}
    assert option_parameters("m", tree, names) == {"m:points": ["load", "connections", "users", "loops", "rates"]}
