"""The build of the built-in servers: the four Spring Boot jars (one Maven call), their CDS archives, and the Go server.

The jars are rebuilt only when ``servers/`` changed, the Go server (:mod:`benchlab.running.natives`) only when
``servers/go`` did. A Class Data Sharing archive holds the classes a
Spring start loads; it is made once per jar and JVM and halves the server's startup on one core.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from .. import home
from ..errors import BenchlabError, BuildError, LoadError, ToolMissing, UsageError, tail
from . import natives, process

#: The built-in servers' embedded servers: three servlet containers, and WebFlux on Reactor Netty.
FLAVOURS = ("tomcat", "jetty", "undertow", "webflux")
#: The servlet ones, which a comparison takes by default: one application, only the container differs.
SERVLET_FLAVOURS = ("tomcat", "jetty", "undertow")


# --- the build ---------------------------------------------------------------------------------------

_STAMP = ".benchlab-build"
#: Seconds the one Maven call may take: a cold build downloads its plugins; an hour would be a hang.
MAVEN_TIMEOUT = 1800.0


def _source_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        # Only what Maven reads: the poms and the sources (a Dockerfile beside them does not change a jar).
        if path.is_file() and "target" not in parts and (path.name == "pom.xml" or "src" in parts):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def jars() -> dict[str, Path]:
    return {f"spring-{f}": home.servers_dir() / f / "target" / f"benchlab-{f}.jar" for f in FLAVOURS}


def build(*, force: bool = False, quiet: bool = True) -> dict:
    """Build the four server jars with one Maven call, and the Go server with the Go toolchain; skip each when
    its sources have not changed. Without a Go toolchain the Go server is skipped, and ``go`` says why.

    Returns ``{"built": bool, "seconds": float, "jars": {...}, "go": {"built", "seconds", "binary"} or
    {"skipped": why}}``.

    Example
    -------
    >>> import benchlab
    >>> benchlab.build()["jars"]["spring-jetty"].name   # doctest: +SKIP
    'benchlab-jetty.jar'
    """
    done = build_jars(force=force, quiet=quiet)
    try:
        done["go"] = natives.build_go(force=force)
    except ToolMissing as missing:  # a machine for the Spring servers only: go-nethttp says so when asked for
        done["go"] = {"skipped": str(missing)}
    return done


def build_jars(*, force: bool = False, quiet: bool = True) -> dict:
    """Build the four server jars with one Maven call; skip it when ``servers/`` has not changed:
    ``{"built": bool, "seconds": float, "jars": {...}}``."""
    root = home.servers_dir()
    if not (root / "pom.xml").exists():
        raise BuildError(f"no servers/pom.xml under {root.parent}: set BENCHLAB_HOME to the benchlab checkout")
    stamp = root / _STAMP
    source = _source_hash(root)
    if (not force and stamp.exists() and stamp.read_text().strip() == source
            and all(p.exists() for p in jars().values())):
        return {"built": False, "seconds": 0.0, "jars": jars()}
    mvn = process.require("mvn", "apt-get install maven (and a JDK 17: apt-get install openjdk-17-jdk-headless)")
    process.require("java", "apt-get install openjdk-17-jdk-headless")
    # clean: a server jar is not repackaged when only the shared app jar changed.
    argv = [mvn, "-B", "-f", str(root / "pom.xml"), "clean", "package", "-DskipTests"]
    if quiet:
        argv.insert(2, "-q")
    began = time.monotonic()
    log = root / "target-build.log"
    try:  # like every command: its own session, killed with benchlab, and a limit
        result = process.run(argv, timeout=MAVEN_TIMEOUT)
    except LoadError:
        raise BuildError(f"the Maven build did not finish within {MAVEN_TIMEOUT:.0f} s and was stopped: "
                         f"{' '.join(argv)}") from None
    log.write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        raise BuildError(f"the Maven build failed (exit {result.returncode}, log {log}):\n{tail(log.read_text(), 25)}")
    missing = [str(p) for p in jars().values() if not p.exists()]
    if missing:
        raise BuildError(f"Maven finished but did not make {', '.join(missing)}; see {log}")
    stamp.write_text(source + "\n")
    return {"built": True, "seconds": time.monotonic() - began, "jars": jars()}


def ensure_built(server, *, java: str | None = None, cds: bool = True) -> None:
    """Build the jars if they are missing or older than ``servers/`` (a no-op when nothing changed); given
    ``java``, also the server's CDS archive for that JVM, so the first start does not make it."""
    if server.jvm:
        build_jars()
        if java is not None and server.settings.aot:
            prepare_aot(server, java)  # trained before the run, so no run's time includes the training
        elif java is not None and cds:
            prepare_cds(server, java)


# --- class data sharing: the classes a Spring start loads, archived once per jar and JVM ---------------

@dataclass(frozen=True)
class Cds:
    """How a built-in server starts: ``jar`` with the CDS ``archive``, or the plain jar (``archive`` None;
    ``warning`` says why when an archive was wanted but could not be made)."""

    jar: str
    archive: str | None = None
    warning: str | None = None

    def metadata(self) -> dict:
        """What a run records: ``{"launch": "cds" | "jar", "cds_archive": ..., "cds_warning": ...}``."""
        return {"launch": "cds" if self.archive else "jar", "cds_archive": self.archive,
                "cds_warning": self.warning}


_PREPARED: dict[tuple, Cds] = {}


def launch_mode(argv: list[str]) -> str:
    """``"aot"`` when ``argv`` starts the JVM from an AOT cache, ``"cds"`` from a CDS archive, else ``"jar"``."""
    if any(a.startswith("-XX:AOTCache=") for a in argv):
        return "aot"
    return "cds" if any(a.startswith("-XX:SharedArchiveFile=") for a in argv) else "jar"


def _java_version(java: str) -> str:
    found = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    if found.returncode != 0:
        raise BuildError(f"{java} -version failed (exit {found.returncode}): {tail(found.stderr, 3)}")
    return found.stderr + found.stdout


def _make_cds(jar: Path, directory: Path, java: str) -> None:
    """Extract ``jar`` into ``directory`` and train an archive there (Spring Boot's own recipe: the context
    refreshes, then the JVM exits and writes the classes it loaded). Training runs at the final path: the
    archive records the classpath, so it cannot be built elsewhere and moved."""
    shutil.rmtree(directory, ignore_errors=True)
    for step, argv in (
        ("extract", [java, "-Djarmode=tools", "-jar", str(jar), "extract", "--destination", str(directory)]),
        # Port 0: the training run must not collide with a server that is already listening.
        ("training", [java, f"-XX:ArchiveClassesAtExit={directory / 'app.jsa'}", "-Dspring.context.exit=onRefresh",
                      "-jar", str(directory / jar.name), "--server.port=0", "--server.address=127.0.0.1"]),
    ):
        done = process.run(argv, timeout=300)
        if directory.is_dir():
            with open(directory / "training.log", "a") as log:
                log.write(f"$ {' '.join(argv)}\n{done.stdout}{done.stderr}\n")
        if done.returncode != 0:
            raise BuildError(f"the CDS {step} run failed (exit {done.returncode}): "
                             f"{tail(done.stderr or done.stdout, 3)}")
    if not (directory / "app.jsa").exists():
        raise BuildError(f"the CDS training run wrote no archive; see {directory / 'training.log'}")


def _made_once(jar: Path, java_path: str, kind: str, make, *, salt: str = "") -> Path:
    """The folder ``target/<kind>-<key>/`` beside ``jar`` holding what ``make(jar, folder, java)`` makes, keyed
    by the jar's bytes, ``java -version`` and ``salt``; made once, under a lock another process may hold."""
    digest = hashlib.sha256(jar.read_bytes())
    digest.update(_java_version(java_path).encode())
    digest.update(salt.encode())
    directory = jar.parent / f"{kind}-{digest.hexdigest()[:16]}"
    done = directory / ".complete"
    with open(jar.parent / f"{directory.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be making the same one
        if not done.exists():
            began = time.monotonic()
            make(jar, directory, java_path)
            done.write_text(f"{time.monotonic() - began:.1f} s to make\n")
    return directory


def prepare_cds(server, java: str = "java") -> Cds:
    """The CDS archive of a built-in server's jar for this ``java``, made on first use and then reused.

    It lives beside the jar in ``target/cds-<key>/``, keyed by a hash of the jar's bytes and the output of
    ``java -version``: a new jar or another JDK gets its own archive. When none can be made (an old JDK, a
    failed training run) the result is the plain jar with a ``warning``, which is also issued once as a
    Python warning; a run never fails for want of an archive.

    Example
    -------
    >>> prepare_cds(benchlab.running.servers.get("spring-jetty")).metadata()["launch"]   # doctest: +SKIP
    'cds'
    """
    if not server.jvm:
        raise UsageError(f"CDS applies to the built-in Spring servers, not to {server.name}")
    jar = Path(server.spring_jar)
    java_path = shutil.which(java) or java
    stat = jar.stat() if jar.exists() else None
    memo = (str(jar), stat and (stat.st_mtime_ns, stat.st_size), str(Path(java_path).resolve()))
    cached = _PREPARED.get(memo)
    if cached is not None and (cached.archive is None or Path(cached.archive).exists()):
        return cached
    try:
        directory = _made_once(jar, java_path, "cds", _make_cds)
        prepared = Cds(jar=str(directory / jar.name), archive=str(directory / "app.jsa"))
    except (OSError, subprocess.SubprocessError, BenchlabError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        warning = f"no CDS archive for {server.name} with {java}, starting the plain jar: {reason}"
        prepared = Cds(jar=str(jar), warning=warning)
        warnings.warn(warning, RuntimeWarning, stacklevel=2)
    _PREPARED[memo] = prepared
    return prepared


# --- the AOT cache: Java 25's classes loaded and linked, and method profiles, from a training run ---------

#: Seconds of real requests per path in the training run, and the paths: a cache trained only on the
#: context refresh (Spring Boot's recipe) holds no profile of the request path, the part a warm-up waits for.
AOT_TRAINING_SECONDS = 10.0
AOT_TRAINING_PATHS = ("/hello", "/json")
AOT_RECIPE = "1"  # part of the cache's key: a change of the training makes a new cache


def _train_aot(jar: Path, directory: Path, java: str) -> None:
    """Extract ``jar`` into ``directory``, start it with ``-XX:AOTCacheOutput``, send it real requests with
    wrk, stop it: the JVM writes the cache as it exits (JEP 514's one step; JEP 515 adds the profiles)."""
    from .backends.base import free_port, wait_ready

    shutil.rmtree(directory, ignore_errors=True)
    extract = [java, "-Djarmode=tools", "-jar", str(jar), "extract", "--destination", str(directory)]
    done = process.run(extract, timeout=300)
    if done.returncode != 0:
        raise BuildError(f"the AOT extract failed (exit {done.returncode}): {tail(done.stderr or done.stdout, 3)}")
    port = free_port()
    log_path = directory / "training.log"
    argv = [java, f"-XX:AOTCacheOutput={directory / 'app.aot'}", "-jar", str(directory / jar.name),
            f"--server.port={port}", "--server.address=127.0.0.1"]
    wrk = process.require("wrk", "apt-get install wrk")
    with open(log_path, "ab") as log:
        log.write(f"$ {' '.join(argv)}\n".encode())
        log.flush()
        server = process.start(argv, stdout=log, stderr=log)
        try:
            wait_ready(f"http://127.0.0.1:{port}/info", timeout=120, alive=lambda: server.poll() is None,
                       on_exit=lambda: BuildError(f"the AOT training server did not start; see {log_path}"))
            for path in AOT_TRAINING_PATHS:
                trained = process.run([wrk, "-t1", "-c32", f"-d{AOT_TRAINING_SECONDS:g}s",
                                       f"http://127.0.0.1:{port}{path}"], timeout=AOT_TRAINING_SECONDS + 60)
                log.write(f"$ wrk {path}\n{trained.stdout}\n".encode())
        finally:
            code = process.stop(server, grace=300.0)  # the cache is assembled as the JVM exits
    if not (directory / "app.aot").exists():
        raise BuildError(f"the AOT training run wrote no cache (exit {code}); see {log_path}")


def prepare_aot(server, java: str = "java") -> Cds:
    """The AOT cache of a built-in server's jar for this ``java`` (Java 25+), trained once with real
    requests and then reused, beside the jar in ``target/aot-<key>/``: ``Cds(jar=<extracted jar>,
    archive=<app.aot>)``. The server then starts with ``-XX:AOTCache=<app.aot> -XX:AOTMode=on``, so a cache
    the JVM cannot use fails the start rather than being silently ignored.

    Example
    -------
    >>> prepare_aot(benchlab.running.servers.get("spring-jetty+aot@java25"),  # doctest: +SKIP
    ...             "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java")
    """
    if not server.jvm:
        raise UsageError(f"aot applies to the built-in Spring servers, not to {server.name}")
    jar = Path(server.spring_jar)
    java_path = shutil.which(java) or java
    stat = jar.stat()
    memo = ("aot", str(jar), stat.st_mtime_ns, stat.st_size, str(Path(java_path).resolve()))
    cached = _PREPARED.get(memo)  # by the jar's mtime and size: hashing the jar each run cost more
    if cached is None or cached.archive is None or not Path(cached.archive).exists():
        directory = _made_once(jar, java_path, "aot", _train_aot, salt=AOT_RECIPE)
        _PREPARED[memo] = Cds(jar=str(directory / jar.name), archive=str(directory / "app.aot"))
    return _PREPARED[memo]
