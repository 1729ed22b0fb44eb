"""Variants of a built-in server: its settings, the name they give it, how they launch it, and the proof they took.

A setting changes how a built-in Spring server runs: ``java`` (17, 25 or a path to ``bin/java``),
``virtual_threads`` (Spring's ``spring.threads.virtual.enabled``, Java 21+), ``max_threads`` (the server's
own request pool property), ``gc`` (``g1``, ``parallel``, ``z``), ``heap`` (``-Xmx``) and ``aot`` (Java 25's
AOT cache with method profiles, JEP 483/515, trained with real requests: a warm-up shortcut, never a
default). The variant's name is the server's name with one short mark per setting, in this order::

    spring-tomcat+vt+threads400+parallelgc+heap512m+aot@java25

and :func:`parse_name` reads that name back, so a variant is written the same way in Python, on the command
line and in a notebook. After the server starts, :func:`check` compares what was asked with what the
server's ``GET /info`` reports; a setting that did not take fails the run.

>>> spring = Settings(virtual_threads=True, max_threads=400, gc="parallel", heap="512m")
>>> spring.mark(), spring.jvm_options(), spring.arguments("tomcat")
('+vt+threads400+parallelgc+heap512m', ['-XX:+UseParallelGC', '-Xmx512m'],
 ['--spring.threads.virtual.enabled=true', '--server.tomcat.threads.max=400'])
"""

from __future__ import annotations

import functools
import glob
import os
import re
import subprocess
from dataclasses import dataclass, fields

from ..errors import UsageError

#: Each gc: its JVM option and the start of its GarbageCollectorMXBean names (as /info's ``gc`` lists them).
GCS = {"g1": ("-XX:+UseG1GC", "G1 "), "parallel": ("-XX:+UseParallelGC", "PS "), "z": ("-XX:+UseZGC", "ZGC ")}

#: Each server's request pool maximum, as a Spring property; None: the server has no such pool.
POOL_PROPERTY = {"tomcat": "server.tomcat.threads.max", "jetty": "server.jetty.threads.max",
                 "undertow": "server.undertow.threads.worker", "webflux": None}

#: How far below -Xmx the JVM's Runtime.maxMemory() may be: it leaves one survivor space out (about 3%).
HEAP_TOLERANCE = 0.10

_HEAP = re.compile(r"^(\d+)([kmg]?)$", re.IGNORECASE)
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}
_MARKS = (
    (re.compile(r"^vt$"), lambda m: {"virtual_threads": True}),
    (re.compile(r"^threads(\d+)$"), lambda m: {"max_threads": int(m.group(1))}),
    (re.compile(r"^(g1|parallel|z)gc$"), lambda m: {"gc": m.group(1)}),
    (re.compile(r"^heap(\d+[kmg]?)$", re.IGNORECASE), lambda m: {"heap": m.group(1)}),
    (re.compile(r"^aot$"), lambda m: {"aot": True}),
)
MARKS_HELP = "+vt, +threads<N>, +g1gc, +parallelgc, +zgc, +heap<size>, +aot and @java<version>"
#: The first Java whose AOT cache holds method profiles (JEP 515) and is made in one step (JEP 514).
AOT_JAVA = 25


@dataclass(frozen=True)
class Settings:
    """The checked settings of one variant; None is the server's default. ``java`` is the path of the JVM's
    ``bin/java`` and ``java_major`` its major version, both resolved from what was asked (17, 25, a path)."""

    virtual_threads: bool | None = None
    max_threads: int | None = None
    gc: str | None = None
    heap: str | None = None
    aot: bool | None = None
    java: str | None = None
    java_major: int | None = None

    def asked(self) -> dict:
        """The settings given, by name (``java`` as its major version): what the run records."""
        given = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("java", "java_major")}
        given["java_major"] = self.java_major
        return {k: v for k, v in given.items() if v is not None}

    def mark(self) -> str:
        """What the settings add to the server's name, e.g. ``+vt+threads400@java25``."""
        marks = ["+vt" if self.virtual_threads else "",
                 f"+threads{self.max_threads}" if self.max_threads is not None else "",
                 f"+{self.gc}gc" if self.gc else "", f"+heap{self.heap}" if self.heap else "",
                 "+aot" if self.aot else "", f"@java{self.java_major}" if self.java_major is not None else ""]
        return "".join(marks)

    def jvm_options(self) -> list[str]:
        """The JVM options the settings need, before the user's own ``jvm_opts``."""
        return [*([GCS[self.gc][0]] if self.gc else []), *([f"-Xmx{self.heap}"] if self.heap else [])]

    def arguments(self, flavour: str) -> list[str]:
        """The Spring properties the settings need, as the application's arguments."""
        found = []
        if self.virtual_threads is not None:
            found.append(f"--spring.threads.virtual.enabled={str(self.virtual_threads).lower()}")
        if self.max_threads is not None:
            found.append(f"--{POOL_PROPERTY[flavour]}={self.max_threads}")
        return found


def settings(flavour: str, *, java=None, virtual_threads=None, max_threads=None, gc=None, heap=None,
             aot=None) -> Settings:
    """Check each setting for ``flavour`` (tomcat, jetty, ...) and resolve ``java``; a bad one is a UsageError.

    >>> settings("jetty", max_threads=64, gc="G1").mark()
    '+threads64+g1gc'
    """
    if virtual_threads is not None and not isinstance(virtual_threads, bool):
        raise UsageError(f"virtual_threads is True or False, not {virtual_threads!r}")
    if max_threads is not None:
        if isinstance(max_threads, bool) or not isinstance(max_threads, int) or max_threads <= 0:
            raise UsageError(f"max_threads must be a whole number of 1 or more, not {max_threads!r}")
        if POOL_PROPERTY.get(flavour) is None:
            raise UsageError(f"max_threads does not apply to spring-{flavour}: Reactor Netty serves requests on its "
                             "event loops, one per core, not from a request pool; leave max_threads out")
    if gc is not None:
        gc = str(gc).lower().removesuffix("gc") if isinstance(gc, str) else gc
        if gc not in GCS:
            raise UsageError(f"unknown gc {gc!r}: choose one of {', '.join(GCS)}")
    if heap is not None:
        heap = str(heap)
        if not _HEAP.match(heap) or heap_bytes(heap) < 8 * 2**20:
            raise UsageError(f"bad heap {heap!r}: give the -Xmx size such as '512m' or '2g' (8m or more)")
    if aot is not None and not isinstance(aot, bool):
        raise UsageError(f"aot is True or False, not {aot!r}")
    path, major = find_java(java) if java is not None else (None, None)
    if virtual_threads and major is not None and major < 21:
        raise UsageError(f"virtual threads need Java 21+: give java=25 (or a JDK of 21 or later), not java={java}")
    if aot and major is not None and major < AOT_JAVA:
        raise UsageError(f"aot needs Java {AOT_JAVA}+ (its AOT cache with method profiles): give java=25, "
                         f"not java={java}")
    return Settings(virtual_threads=virtual_threads, max_threads=max_threads, gc=gc, heap=heap, aot=aot or None,
                    java=path, java_major=major)


def heap_bytes(heap: str) -> int:
    """``"512m"`` -> 536870912, as -Xmx reads it.

    >>> heap_bytes("2g")
    2147483648
    """
    match = _HEAP.match(heap)
    if match is None:
        raise UsageError(f"bad heap {heap!r}: give the -Xmx size such as '512m' or '2g'")
    number, unit = match.groups()
    return int(number) * _UNITS[unit.lower()]


def parse_name(name: str) -> tuple[str, dict]:
    """A variant's name as ``(server, settings)``: the inverse of :meth:`Settings.mark`.

    >>> parse_name("spring-tomcat+vt+threads400@java25")
    ('spring-tomcat', {'virtual_threads': True, 'max_threads': 400, 'java': '25'})
    """
    base, _, java = name.partition("@")
    server, *marks = base.split("+")
    given: dict = {}
    for mark in marks:
        found = next(((match, make) for pattern, make in _MARKS if (match := pattern.match(mark))), None)
        if found is None:
            raise UsageError(f"unknown setting '+{mark}' in {name!r}: a variant is written with {MARKS_HELP}")
        given.update(found[1](found[0]))
    if java:
        if not re.fullmatch(r"java\d+", java):
            raise UsageError(f"bad '@{java}' in {name!r}: write the JDK as @java<major version>, such as @java25")
        given["java"] = java.removeprefix("java")
    return server, given


# --- java -------------------------------------------------------------------------------------------

def major(version: str | None) -> int | None:
    """The major version of a ``java.version``: ``"25.0.1"`` -> 25, ``"1.8.0_412"`` -> 8.

    >>> major("17.0.15"), major("1.8.0_412"), major("25")
    (17, 8, 25)
    """
    found = re.match(r"(\d+)(?:\.(\d+))?", str(version or ""))
    if not found:
        return None
    first = int(found.group(1))
    return int(found.group(2)) if first == 1 and found.group(2) else first


@functools.cache
def java_major(java: str) -> int | None:
    """The major version of the JVM ``java`` (a path or a command), from ``java -version``; None if it fails."""
    from .metadata import collect_java

    return major(collect_java(java)["version"])


@functools.cache
def installed() -> dict[str, int]:
    """Every JDK this machine lists (``update-alternatives --list java`` and ``/usr/lib/jvm/*``): path -> major."""
    try:
        listed = subprocess.run(["update-alternatives", "--list", "java"], capture_output=True, text=True,
                                timeout=10).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        listed = []
    found: dict[str, int] = {}
    seen = set()
    for path in [*listed, *sorted(glob.glob("/usr/lib/jvm/*/bin/java"))]:
        real = os.path.realpath(path)
        if real in seen or not os.access(real, os.X_OK):
            continue
        seen.add(real)
        version = java_major(path)
        if version is not None:
            found[path] = version
    return found


def find_java(java) -> tuple[str, int]:
    """``(path of bin/java, major version)`` for ``java``: a major version (17, "25") or a JDK's path."""
    if isinstance(java, bool):
        raise UsageError(f"java is a version such as 17 or 25, or the path of a JDK, not {java!r}")
    if isinstance(java, int) or (isinstance(java, str) and java.isdigit()):
        wanted = int(java)
        for path, version in installed().items():
            if version == wanted:
                return path, version
        have = ", ".join(f"{v} ({p})" for p, v in installed().items()) or "none"
        raise UsageError(f"no Java {wanted} on this machine (found: {have}): install it, or give java= the "
                         "path of a JDK's bin/java")
    path = str(java)
    if os.path.isdir(path):
        path = os.path.join(path, "bin", "java")
    major = java_major(path) if os.access(path, os.X_OK) and os.path.isfile(path) else None
    if major is None:
        raise UsageError(f"java {java!r} does not exist or does not run: give 17, 25 or the path of a JDK "
                         "(its home or its bin/java)")
    return path, major


# --- the proof ----------------------------------------------------------------------------------------

def check(asked: Settings, info: dict) -> list[dict]:
    """Each asked setting against what the running server reports in ``info`` (its ``GET /info``).

    One row per setting: ``{"setting", "asked", "got", "status"}`` with status ``ok``, ``mismatch`` or
    ``not verified`` (``info`` lacks the key: a custom server or an older jar).

    >>> [r["status"] for r in check(Settings(virtual_threads=True, heap="512m"), {"virtual": False})]
    ['mismatch', 'not verified']
    """
    rows = []

    def row(setting, wanted, key, got, ok):
        present = key in info and info[key] is not None
        status = "ok" if present and ok(got) else "mismatch" if present else "not verified"
        rows.append({"setting": setting, "asked": wanted, "got": got if present else None, "status": status})

    if asked.java_major is not None:
        row("java", asked.java_major, "java_version", info.get("java_version"),
            lambda got: major(got) == asked.java_major)
    if asked.virtual_threads is not None:
        row("virtual_threads", asked.virtual_threads, "virtual", info.get("virtual"),
            lambda got: got is asked.virtual_threads or str(got).lower() == str(asked.virtual_threads).lower())
    if asked.max_threads is not None:
        row("max_threads", asked.max_threads, "pool_max", info.get("pool_max"),
            lambda got: str(got) == str(asked.max_threads))
    if asked.gc is not None:
        prefix = GCS[asked.gc][1]
        row("gc", asked.gc, "gc", info.get("gc"),
            lambda got: bool(got) and all(name.strip().startswith(prefix)
                                          for name in (got.split(",") if isinstance(got, str) else map(str, got))))
    if asked.heap is not None:
        wanted = heap_bytes(asked.heap)
        row("heap", asked.heap, "heap_max_bytes", info.get("heap_max_bytes"),
            lambda got: wanted * (1 - HEAP_TOLERANCE) <= float(got) <= wanted * 1.01)
    return rows


def mismatch(server: str, rows: list[dict]) -> str | None:
    """The one-line failure for the rows that did not take, naming asked against got; None if none."""
    wrong = [r for r in rows if r["status"] == "mismatch"]
    if not wrong:
        return None
    said = "; ".join(f"{r['setting']} asked {r['asked']!r}, got {r['got']!r}" for r in wrong)
    return (f"{server} did not take its settings ({said}): the run does not count (what it runs is what its "
            "GET /info reports)")


def check_launch(asked: Settings, *, java: str, jvm_opts=(), backend: str = "local") -> None:
    """Refuse, before anything starts, settings the run's JVM, options or backend cannot take."""
    if not asked.asked():
        return
    if asked.java and backend != "local":
        raise UsageError("a java setting applies to backend='local': a container runs its image's JDK "
                         "(base_image='eclipse-temurin:25-jre' for Java 25)")
    if asked.virtual_threads and asked.java_major is None:
        version = java_major(java)
        if version is not None and version < 21:
            raise UsageError(f"virtual threads need Java 21+: give java=25 (or a JDK of 21 or later); {java} is "
                             f"Java {version}")
    if asked.aot:
        if backend != "local":
            raise UsageError("aot applies to backend='local': its cache is trained beside the jar on this machine")
        version = asked.java_major if asked.java_major is not None else java_major(java)
        if version is not None and version < AOT_JAVA:
            raise UsageError(f"aot needs Java {AOT_JAVA}+ (its AOT cache with method profiles): give java=25; "
                             f"{java} is Java {version}")
    clash = [o for o in jvm_opts if (asked.gc and re.match(r"-XX:[+-]Use\w+GC$", o))
             or (asked.heap and o.startswith("-Xmx"))]
    if clash:
        raise UsageError(f"jvm_opts {' '.join(clash)} would contradict the server's gc or heap setting: "
                         "give it once, as the setting")
