"""The options of run() and compare(), written once: each one's name, how the command line reads it, its help.

:data:`OPTIONS` is the one list of what :func:`benchlab.run` and :func:`benchlab.compare` take. The
functions name every option in their signatures (a test checks them against this list), the command line
is generated from it, and :func:`benchlab.running.spec.prepare` checks every per-run option in one place, so an
option cannot reach a backend unchecked, or exist in one front end and not another.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from dataclasses import dataclass

from ..errors import UsageError
from ..schema import INTERLEAVES, LOAD_MODELS, ORDERS, RESTARTS
from . import backends


@dataclass(frozen=True)
class Option:
    """One option: its name in Python and the notebooks, how the command line reads it, and its help.

    ``kind`` is how a command-line value becomes a Python one: ``text``, ``int``, ``float``, ``bool``
    (``--x`` / ``--no-x``), ``texts``/``ints``/``floats`` (comma-separated lists) or ``repeat`` (the flag
    given once per value) or ``count`` (a whole number or ``auto``). ``where`` is ``run``, ``compare`` or
    ``both``.
    """

    name: str
    kind: str
    where: str
    help: str
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # other flags for it, e.g. --factor for --factors

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


#: The most times a disturbed window is measured again in its fork: a machine that disturbs every window needs a
#: quieter machine, not more retakes.
MAX_RETAKES = 5

#: Options only the docker backend reads; given with backend="local" they are a mistake, said at once.
DOCKER_OPTIONS = ("docker_host", "base_image", "load_in_container", "load_docker_host")

OPTIONS: tuple[Option, ...] = (
    Option("server", "text", "run", "the server: spring-tomcat, spring-jetty, spring-undertow, spring-webflux, a "
           "variant such as spring-tomcat+vt@java25, the references nginx and go-nethttp, or "
           "http://127.0.0.1:PORT/PATH"),
    Option("servers", "texts", "compare", "the servers to compare, comma separated; the first is the baseline; "
           "nginx and go-nethttp beside Spring servers show the machine's ceiling"),
    Option("scenario", "text", "run", "hello, json, reflect, sleep, sleep:<ms>, echo (or a path for your own server)"),
    Option("scenarios", "texts", "compare", "one or more scenarios, comma separated (default: hello, and a custom "
           "server at its own path)"),
    Option("connections", "int", "run", "concurrent connections of the load generator"),
    Option("connections", "ints", "compare", "one or more connection counts, comma separated"),
    Option("repeats", "count", "compare", "runs per server and cell, interleaved; auto: until precision is reached"),
    Option("iterations", "count", "compare", "measured windows per repeat: each repeat is one server process (a "
           "fork), warmed once, then this many windows (see --interleave); auto: chosen from what forks and windows "
           "cost and how much each varies"),
    Option("interleave", "text", "compare", "forks: each fork's windows back to back; windows: a round's forks "
           "kept running and their windows taken in turn, spread over the round", INTERLEAVES),
    Option("precision", "float", "compare", "repeats=auto: add rounds until every rps ratio is within +/- this"),
    Option("max_repeats", "int", "compare", "repeats=auto: the most rounds; short of precision then, it is said"),
    Option("threads", "int", "both", "load threads (default: one per load core)"),
    Option("duration", "text", "both", "measured time, e.g. 30s or 2m"),
    Option("warmup", "text", "both", "warm-up before each measurement: auto (until the JIT is quiet and throughput "
           "steady) or a time such as 30s"),
    Option("timeout", "text", "both", "per-request timeout, e.g. 10s"),
    Option("load", "text", "both", "the load model", LOAD_MODELS),
    Option("users", "int", "run", "count model: parallel users"),
    Option("users", "ints", "compare", "count model: users per cell, comma separated (pairs with --loops)"),
    Option("loops", "int", "run", "count model: requests per user"),
    Option("loops", "ints", "compare", "count model: loops per cell, comma separated (pairs with --users)"),
    Option("rate", "float", "run", "rate model: requests per second"),
    Option("rates", "floats", "compare", "rate model: requests per second per cell, comma separated"),
    Option("ramp_up", "text", "both", "jmeter: the time over which its users start, e.g. 5s"),
    Option("plan", "text", "both", "jmeter: a .jmx test plan of your own"),
    Option("driver", "text", "both", "wrk, h2load, jmeter or vegeta (default: the load model's own)"),
    Option("pipeline", "int", "both", "requests a connection sends together (HTTP/1.1 pipelining; wrk, "
           "load=duration; TechEmpower's pipelined test sends 16); wrk records one latency a batch"),
    Option("keepalive", "bool", "both", "requests reuse connections; --no-keepalive opens one per request of a "
           "rate load (vegeta -keepalive=false, as a new Gatling user per request does) or a duration load (wrk "
           "sends Connection: close), and its warm-up too"),
    Option("order", "text", "compare", "the order of the runs in each repeat", ORDERS),
    Option("seed", "int", "compare", "the seed of order=shuffled"),
    Option("restart", "text", "compare", "a fresh server for each run, or one per server kept for all", RESTARTS),
    Option("baseline", "text", "compare", "the server the others are compared with (default: the first)"),
    Option("backend", "text", "both", "where the server runs", backends.NAMES),
    Option("server_cpus", "text", "both", "cores for the server, e.g. 0 or 0-3 (default: the first half)"),
    Option("load_cpus", "text", "both", "cores for the load generator, e.g. 1 or 4-7 (default: the rest)"),
    Option("jvm_opts", "repeat", "both", "a JVM option for the server, once per option, e.g. --jvm-opts=-Xmx512m"),
    Option("java", "text", "both", "the java binary of the server (default: java on PATH)"),
    Option("cds", "bool", "both", "start the built-in servers from a Class Data Sharing archive (half the startup)"),
    Option("memory", "text", "both", "docker: the server container's memory limit, e.g. 1g"),
    Option("port", "int", "both", "the server's port (default: a free one)"),
    Option("startup_timeout", "text", "both", "how long a server may take to answer after its start, e.g. 90s"),
    Option("allow_remote", "bool", "both", "allow load to an address that is not loopback (a machine you own)"),
    Option("docker_host", "text", "both", "docker: the server's engine (a DOCKER_HOST url)"),
    Option("base_image", "text", "both", "docker: a registry base image for the servers, e.g. eclipse-temurin:17-jre"),
    Option("load_in_container", "bool", "both", "docker: run wrk in its own container"),
    Option("load_docker_host", "text", "both", "docker: the engine of wrk's container"),
    Option("factors", "repeat", "compare", "a factor crossed with every server, once per factor, e.g. --factor "
           "virtual_threads=false,true --factor java=17,25 (java, virtual_threads, max_threads, gc, heap, aot, "
           "server_cpus)", aliases=("--factor",)),
    Option("retakes", "int", "both", "a window disturbed by other processes on its cores, steal or a dip is "
           "measured again in its fork, at most this many times (0: never); the disturbed one is kept, shown as "
           "retaken, and enters no statistic"),
    Option("results_dir", "text", "both", "where results are stored (default data/results)"),
    Option("label", "text", "both", "a label stored with every run, e.g. the machine or the change measured"),
    Option("progress", "bool", "compare", "show a progress bar with an ETA"),
)

#: Options of the Python functions that a command line cannot carry: a callback.
PYTHON_ONLY = {"compare": ("on_run",), "run": ()}


def options(where: str) -> list[Option]:
    """The options of ``run`` or ``compare``, in the order of :data:`OPTIONS`."""
    return [o for o in OPTIONS if o.where in (where, "both")]


def keywords(function):
    """Refuse an unknown keyword with a :class:`UsageError` that names it and the valid ones."""
    names = list(inspect.signature(function).parameters)

    @functools.wraps(function)
    def checked(*args, **kwargs):
        unknown = [k for k in kwargs if k not in names]
        if unknown:
            near = difflib.get_close_matches(unknown[0], names, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise UsageError(f"{function.__name__}() has no option {', '.join(unknown)}{hint}; "
                             f"its options are {', '.join(names)}")
        return function(*args, **kwargs)

    return checked
