"""The options of run() and compare(), declared once: each one's name, type, default, help and command-line form.

Two frozen dataclasses are the declaration. :class:`RunOptions` holds what every run takes (its load, its cores, its
server's launch, its retakes); :class:`Comparison` what only a comparison takes (its servers and load points, its
design and budget) with the run options its runs share. Each field says how the command line reads it and its help;
:data:`OPTIONS` lists them, with the few options that are neither (the server of a run, where results go), in the
form the command line (:mod:`benchlab.cli`) and the notebooks' parameters cells (:func:`parameters_cell`) are made
from. :func:`benchlab.run` and :func:`benchlab.compare` name every option in their signatures with these defaults
(``tests/test_options.py`` holds them together) and build the object at the door; everything below takes it, so
``warmup`` is followed by its name from ``compare()`` to the warm-up rule.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Union

from ..errors import UsageError
from ..schema import (
    AUTO,
    BACKENDS,
    INTERLEAVES,
    LOAD_MODELS,
    ORDERS,
    PROTOCOLS,
    RESTARTS,
    WARMINGS,
    BackendName,
    Interleave,
    LoadModel,
    Order,
    Restart,
    Warming,
    Wire,
)

if TYPE_CHECKING:
    from .servers import Server

#: How the command line reads an option's value (:class:`Option`): text, int, float, bool (--x / --no-x), texts/ints/
#: floats (comma-separated lists), repeat (the flag once per value) or count (a whole number or auto); whose it is.
OptionKind = Literal["text", "int", "float", "bool", "texts", "ints", "floats", "repeat", "count"]
Where = Literal["run", "compare", "both"]

#: The options that take one value or several (a list in Python, comma-separated or repeated at the command line):
#: cores are a core, a text such as "0-3" or "0,2", or a list of cores; None leaves the default.
Cores = int | str | Sequence[int] | None
Texts = str | Sequence[str] | None
Counts = int | Sequence[int] | None
Rates = float | Sequence[float] | str | None
#: A server is a name (a built-in, a variant, a URL) or a :class:`~benchlab.running.servers.Server` of your own
#: (imported for the type checker only: servers is a heavy import, and "str | 'Server'" fails when it runs).
ServerList = Union[str, "Server", Sequence[Union[str, "Server"]]]  # noqa: UP007
#: ``{"java": [17, 25]}``, or the command line's ``"java=17,25"`` texts.
Factors = Mapping[str, Sequence[str | int | float | bool]] | str | Sequence[str] | None

#: The most times a disturbed window is measured again in its fork: a machine that disturbs every window needs quiet.
MAX_RETAKES = 5

#: Options only the docker backend reads; given with backend="local" they are a mistake, said at once.
DOCKER_OPTIONS = ("docker_host", "base_image", "load_in_container", "load_docker_host")

#: Options' old names and values, still read: ``iterations=3`` is ``windows=3``, ``restart="each-run"`` "each-fork".
OLD_NAMES, OLD_VALUES = {"iterations": "windows"}, {"restart": {"each-run": "each-fork"}}

#: The servers a comparison takes when none are named: the servlet servers, one application on three containers.
DEFAULT_SERVERS = ("spring-tomcat", "spring-jetty", "spring-undertow")


@dataclass(frozen=True)
class Option:
    """One option: its name in Python and the notebooks, how the command line reads it (``kind``), whose it is
    (``where``), its default and help."""

    name: str
    kind: OptionKind
    where: Where
    help: str
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # other flags for it, e.g. --factor for --factors
    default: object = None
    #: the types a notebook's parameters cell allows for it, as papermill reads them: ``Union[str, float]``
    annotation: str = "Union[str, int, float, list, dict, bool, None]"

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def option(default, kind: OptionKind, help: str, *, choices: tuple = (), aliases: tuple = ()) -> Any:
    """A field of an options dataclass, with what the command line and the notebooks need to know of it."""
    return field(default=default, metadata={"kind": kind, "help": help, "choices": tuple(choices),
                                            "aliases": tuple(aliases)})


@dataclass(frozen=True)
class RunOptions:
    """Every option of one run: :func:`benchlab.run`'s, and those a comparison's runs share; checked, with the
    server and its scenario, by :func:`benchlab.running.spec.prepare` into a ``RunSpec``.

    >>> RunOptions.of(duration="5s", warmup="2s").warmup
    '2s'
    """

    connections: int = option(200, "int", "concurrent connections of the load generator")
    threads: int | None = option(None, "int", "load threads (default: one per load core)")
    duration: str | float = option("30s", "text", "measured time, e.g. 30s or 2m")
    warmup: str | float = option("auto", "text", "warm-up before each measurement: auto (until the JIT is quiet and "
                                 "throughput steady) or a time such as 30s")
    warming: Warming = option("jit-first", "text", "how warmup=auto makes room for a JVM's compiler on the server's "
                              "core: jit-first (its compiler threads run first while it warms), pauses (the load "
                              "pauses while it compiles) or shared (docs/warm-up.md)", choices=WARMINGS)
    timeout: str | float = option("10s", "text", "per-request timeout, e.g. 10s")
    load: LoadModel = option("duration", "text", "the load model", choices=LOAD_MODELS)
    users: int | None = option(None, "int", "count model: parallel users")
    loops: int | None = option(None, "int", "count model: requests per user")
    rate: float | None = option(None, "float", "rate model: requests per second")
    slo: str | None = option(None, "text", "rate model: each window a search for the fork's capacity, the highest "
                             "paced rate whose percentile stays under a limit, e.g. p99<5ms, from rate up "
                             "(docs/cost.md)")
    ramp_up: str | float = option(0, "text", "jmeter: the time over which its users start, e.g. 5s")
    plan: str | None = option(None, "text", "jmeter: a .jmx test plan of your own")
    driver: str | None = option(None, "text", "wrk, h2load, jmeter or vegeta (default: the load model's own; h2load "
                                "for a closed loop over HTTP/2)")
    protocol: Wire = option("http1", "text", "what the requests speak: http1, h2c (HTTP/2 in clear text, prior "
                                "knowledge), h2 (HTTP/2 over TLS) or https (HTTP/1.1 over TLS); the servers are "
                                "started for it and checked on the wire (docs/http2.md)", choices=PROTOCOLS)
    streams: int = option(1, "int", "HTTP/2: requests in flight on each connection (h2load -m)")
    pipeline: int = option(1, "int", "requests a connection sends together (HTTP/1.1 pipelining; wrk, "
                           "load=duration; TechEmpower's pipelined test sends 16); wrk records one latency a batch")
    keepalive: bool = option(True, "bool", "requests reuse connections; --no-keepalive opens one per request of a "
                             "rate load (vegeta -keepalive=false, as a new Gatling user per request does) or a "
                             "duration load (wrk sends Connection: close), and its warm-up too")
    backend: BackendName = option("local", "text", "where the server runs", choices=BACKENDS)
    server_cpus: Cores = option(None, "text", "cores for the server, e.g. 0 or 0-3 (default: the first half)")
    load_cpus: Cores = option(None, "text", "cores for the load generator, e.g. 1 or 4-7 (default: the rest)")
    jvm_opts: Texts = option((), "repeat", "a JVM option for the Spring servers (others beside them run as they are), "
                                         "once per option, e.g. --jvm-opts=-Xmx512m")
    java: str | None = option(None, "text", "the java binary of the server (default: java on PATH)")
    cds: bool = option(True, "bool", "start the built-in servers from a Class Data Sharing archive (half the startup)")
    memory: str | None = option(None, "text", "docker: the server container's memory limit, e.g. 1g")
    port: int | None = option(None, "int", "the server's port (default: a free one)")
    startup_timeout: str | float = option("90s", "text", "how long a server may take to answer after its start, "
                                          "e.g. 90s")
    allow_remote: bool = option(False, "bool", "allow load to an address that is not loopback (a machine you own)")
    docker_host: str | None = option(None, "text", "docker: the server's engine (a DOCKER_HOST url)")
    base_image: str | None = option(None, "text", "docker: a registry base image for the servers, e.g. "
                                    "eclipse-temurin:17-jre")
    load_in_container: bool = option(False, "bool", "docker: run wrk in its own container")
    load_docker_host: str | None = option(None, "text", "docker: the engine of wrk's container")
    load_hosts: Texts = option(None, "texts", "several load generators for one load, comma separated: each local (a "
                             "process on its share of load_cpus) or a docker engine url (wrk in a container there); "
                             "wrk's connections or vegeta's rate split across them, started together, their counts "
                             "and latency histograms merged (docs/generators.md)")
    profile: bool = option(False, "bool", "CPU profiles of the server (async-profiler): each fork measures one more "
                           "window under the profiler, which enters no statistic (docs/why.md)")
    retakes: int = option(2, "int", "a window disturbed by other processes on its cores, steal or a dip is measured "
                          "again in its fork, at most this many times (0: never); the disturbed one is kept, shown "
                          "as retaken, and enters no statistic")

    @classmethod
    def of(cls, **given) -> RunOptions:
        """The options given by name; an unknown name is refused, naming the nearest."""
        return cls(**_known(cls, given, "run options"))


@dataclass(frozen=True)
class Comparison:
    """Every option of :func:`benchlab.compare`: its servers, scenarios and load points, how its forks and windows
    are laid out and when it stops, and (``run``) the options its runs share. ``repeats``, ``windows`` and
    ``interleave`` left None are chosen: 3, 1 and "forks", or with a ``budget`` "auto", "auto" and "windows"
    (:meth:`design`)."""

    servers: ServerList = option(DEFAULT_SERVERS, "texts", "the servers to compare, comma separated; the first is the "
                          "baseline; nginx and go-nethttp beside Spring servers show the machine's ceiling")
    scenarios: Texts = option(None, "texts", "one or more scenarios, comma separated (default: hello, and a custom "
                            "server at its own path)")
    connections: Counts = option((200,), "ints", "one or more connection counts, comma separated")
    users: Counts = option(None, "ints", "count model: users per cell, comma separated (pairs with --loops)")
    loops: Counts = option(None, "ints", "count model: loops per cell, comma separated (pairs with --users)")
    rates: Rates = option(None, "floats", "rate model: requests per second per cell, comma separated, or auto: 60% of "
                          "the slowest server's closed-loop rate, lowered to what the load tool keeps (docs/cost.md)")
    repeats: int | str | None = option(None, "count", "forks per server and cell, interleaved; auto: until "
                                       "precision is reached (default: 3, or auto with --budget)")
    windows: int | str | None = option(None, "count", "measured windows per fork (a server process warmed once; "
                                       "see --interleave); auto: chosen from what forks and windows cost and how "
                                       "much each varies (default: 1, or auto with --budget)",
                                       aliases=("--iterations",))
    interleave: Interleave | None = option(None, "text", "forks: each fork's windows back to back; windows: a "
                                           "round's forks kept running and their windows taken in turn, spread over "
                                           "the round (default: forks, or windows with --budget)",
                                           choices=INTERLEAVES)
    precision: float = option(0.03, "float", "repeats=auto: add rounds until every rps ratio is within +/- this")
    max_repeats: int = option(10, "int", "repeats=auto: the most rounds; short of precision then, it is said")
    budget: str | float | None = option(None, "text", "the most wall time the comparison may take, e.g. 10m: it "
                                        "chooses its forks, windows and interleaving, stops before a round that "
                                        "would not fit, and says what more time would buy")
    order: Order = option("interleaved", "text", "the order of the runs in each repeat", choices=ORDERS)
    seed: int | None = option(None, "int", "the seed of order=shuffled")
    restart: Restart = option("each-fork", "text", "each-fork: a fresh server for each fork; never: one per server, "
                              "kept for all its forks (each-run, the old spelling, is read as each-fork)",
                              choices=RESTARTS)
    baseline: str | None = option(None, "text", "the server the others are compared with (default: the first)")
    factors: Factors = option(None, "repeat", "a factor crossed with every server, once per factor, e.g. --factor "
                          "virtual_threads=false,true --factor java=17,25 (java, virtual_threads, max_threads, gc, "
                          "heap, aot, server_cpus)", aliases=("--factor",))
    hosts: Texts = option(None, "texts", "machines to run whole rounds on at once, each a docker engine url or a pair "
                        "server-engine+load-engine, comma separated; implies the docker backend (docs/scale-out.md)")
    borrow: bool = option(True, "bool", "a verdict of fewer rounds than the signed rank needs (6 at alpha 0.05) "
                          "borrows strength for its fork variance: from the cell's other servers and this machine's "
                          "stored comparisons, and says so (docs/statistics.md); --no-borrow judges each pair on its "
                          "own forks")
    history: Texts = option(None, "texts", "results folders whose comparisons are the history borrow reads, comma "
                          "separated (default: the results root's); only runs measured on this machine are read")
    run: RunOptions = field(default_factory=RunOptions)

    @classmethod
    def of(cls, **given) -> Comparison:
        """A comparison from compare()'s keywords: its own and its runs' (the matrix sets each run's load point)."""
        return cls().changed(**given)

    def changed(self, **given) -> Comparison:
        """This comparison with the options ``given`` by name, read as :meth:`of` reads them (a template's)."""
        own = {f.name for f in dataclasses.fields(self) if f.name != "run"}
        shared = _known(RunOptions, {k: v for k, v in given.items() if k not in own}, "run options")
        return dataclasses.replace(self, **{k: v for k, v in given.items() if k in own},
                                   run=dataclasses.replace(self.run, **shared))

    def __post_init__(self) -> None:
        for name, old in OLD_VALUES.items():  # an old spelling read as the new
            if getattr(self, name) in old:
                object.__setattr__(self, name, old[getattr(self, name)])

    def design(self) -> tuple[int | str, int | str, Interleave]:
        """``(repeats, windows, interleave)`` as this comparison runs them: given, else chosen for it."""
        budgeted = self.budget is not None
        return (self.repeats if self.repeats is not None else (AUTO if budgeted else 3),
                self.windows if self.windows is not None else (AUTO if budgeted else 1),
                self.interleave if self.interleave is not None else ("windows" if budgeted else "forks"))


def _known(cls, given: dict, what: str) -> dict:
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = [k for k in given if k not in names]
    if unknown:
        near = difflib.get_close_matches(unknown[0], names, n=1)
        raise UsageError(f"no {what} {', '.join(unknown)}{f' (did you mean {near[0]}?)' if near else ''}")
    return given


#: The types a parameters cell gives an option of one value or several (typed by one of the aliases above), by how
#: the command line reads it: papermill and the notebook's check read these, not the aliases.
_LOOSE = {"text": "Union[str, int, list, None]", "texts": "Optional[list]", "ints": "Union[int, list, None]",
          "floats": "Union[float, int, list, str, None]", "repeat": "Union[list, dict, str, None]"}
_WORDS = dict.fromkeys(("LoadModel", "BackendName", "Interleave", "Order", "Restart", "Warming", "Wire"), "str")  # text
_SEVERAL = ("Cores", "Texts", "Counts", "Rates", "ServerList", "Factors")


def _annotation(typed: str, kind: OptionKind) -> str:
    """``"int | str | None"`` as a notebook writes it: ``"Union[int, str, None]"``.

    >>> _annotation("str | float", "text"), _annotation("int", "int"), _annotation("Counts", "ints")
    ('Union[str, float, int]', 'int', 'Union[int, list, None]')
    """
    if typed in _SEVERAL:
        return _LOOSE[kind]
    parts = [_WORDS.get(part.strip(), part.strip()) for part in str(typed).split("|")]
    if "float" in parts and "int" not in parts:  # a whole number is a number of seconds too
        parts.insert(parts.index("float") + 1, "int")
    return parts[0] if len(parts) == 1 else f"Union[{', '.join(parts)}]"


def _declared(cls, where: Where, shadowed=frozenset()) -> list[Option]:
    return [Option(f.name, f.metadata["kind"], "run" if f.name in shadowed else where, f.metadata["help"],
                   f.metadata["choices"], f.metadata["aliases"],
                   f.default if f.default is not dataclasses.MISSING else None,
                   _annotation(str(f.type), f.metadata["kind"]))
            for f in dataclasses.fields(cls) if f.metadata]


_COMPARED = frozenset(f.name for f in dataclasses.fields(Comparison)) | {"rate"}  # a comparison takes rates
_TARGET = (
    Option("server", "text", "run", "the server: spring-tomcat, spring-jetty, spring-undertow, spring-webflux, a "
           "variant such as spring-tomcat+vt@java25, the references nginx and go-nethttp, or "
           "http://127.0.0.1:PORT/PATH", default="spring-tomcat", annotation="str"),
    Option("scenario", "text", "run", "hello, json, reflect, sleep, sleep:<ms>, echo (or a path for your own server)",
           annotation="Optional[str]"),
)
_STORAGE = (
    Option("results_dir", "text", "both", "where results are stored (default data/results)",
           annotation="Optional[str]"),
    Option("label", "text", "both", "a label stored with every run, e.g. the machine or the change measured",
           annotation="Optional[str]"),
    Option("progress", "bool", "compare", "show a progress bar with an ETA", default=True, annotation="bool"),
)

#: Every option, as the command line and the notebooks show them: ``where`` says whose it is.
OPTIONS: tuple[Option, ...] = (*_TARGET, *_declared(Comparison, "compare"),
                               *_declared(RunOptions, "both", shadowed=_COMPARED), *_STORAGE)

#: Options of the Python functions that a command line cannot carry: a callback.
PYTHON_ONLY = {"compare": ("on_run", "on_progress", "on_slice"), "run": ()}


def options(where: str) -> list[Option]:
    """The options of ``run`` or ``compare``, in the order of :data:`OPTIONS`."""
    return [o for o in OPTIONS if o.where in (where, "both")]


def keywords(function):
    """Refuse an unknown keyword with a :class:`UsageError` that names it and the valid ones."""
    names = list(inspect.signature(function).parameters)

    @functools.wraps(function)
    def checked(*args, **kwargs):
        for old, new in OLD_NAMES.items():  # the old spelling of an option, still read
            if old in kwargs and old not in names and new in names and new not in kwargs:
                kwargs[new] = kwargs.pop(old)
        unknown = [k for k in kwargs if k not in names]
        if unknown:
            hint = "".join(f" (did you mean {n}?)" for n in difflib.get_close_matches(unknown[0], names, n=1))
            raise UsageError(f"{function.__name__}() has no option {', '.join(unknown)}{hint}; "
                             f"its options are {', '.join(names)}")
        return function(*args, **kwargs)

    return checked


def parameters_cell(where: str = "compare", skip=("progress",)) -> list[str]:
    """A notebook's parameters cell for ``where``'s options, made from :data:`OPTIONS` (``tests/test_options.py``):
    each help as a comment above ``name: type = default`` (papermill skips a line holding a second "=").

    >>> print("\\n".join(parameters_cell()[:3]))
    # the servers to compare, comma separated; the first is the baseline; nginx and go-nethttp beside Spring servers
    # show the machine's ceiling
    servers: Optional[list] = ['spring-tomcat', 'spring-jetty', 'spring-undertow']
    """
    import textwrap

    lines = []
    for o in (o for o in options(where) if o.name not in skip):
        default = list(o.default) if isinstance(o.default, tuple) else o.default
        lines += textwrap.wrap(o.help, 116, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False)
        lines.append(f"{o.name}: {o.annotation} = {default!r}")
    return lines
