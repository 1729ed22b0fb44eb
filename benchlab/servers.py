"""The servers under test and what to ask them: built-in Spring Boot targets, custom ones, the build step.

Built in are ``spring-tomcat``, ``spring-jetty`` and ``spring-undertow``: one Spring Boot application
(``servers/app``) packaged three times, so the embedded server is the only difference. Any other program
can be measured through :meth:`Server.from_command` (benchlab starts it) or :meth:`Server.from_url`
(it is already running).
"""

from __future__ import annotations

import fcntl
import hashlib
import ipaddress
import shlex
import shutil
import subprocess
import time
import urllib.parse
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from . import home, process
from .errors import BenchlabError, BuildError, UsageError, tail


@dataclass(frozen=True)
class Scenario:
    """One request and what a correct answer to it looks like."""

    name: str
    path: str
    method: str = "GET"
    body: bytes | None = None
    content_type: str | None = None
    expect_status: int = 200
    expect_body: bytes | None = None
    expect_contains: bytes | None = None

    def check(self, status: int, body: bytes) -> str | None:
        """None when the answer is right, else what is wrong with it."""
        if status != self.expect_status:
            return f"status {status}, expected {self.expect_status}"
        if self.expect_body is not None and body != self.expect_body:
            return f"body differs from the expected {len(self.expect_body)} bytes"
        if self.expect_contains is not None and self.expect_contains not in body:
            return f"body lacks {self.expect_contains!r}"
        return None


HELLO_BODY = b"Hello from benchlab: one fixed body, served alike by all three servers"
ECHO_BODY = b'{"id":1,"name":"benchlab","payload":"' + b"x" * 64 + b'"}'

#: The endpoints of the built-in servers (servers/app/.../BenchController.java).
SCENARIOS: dict[str, Scenario] = {
    "hello": Scenario("hello", "/hello", expect_body=HELLO_BODY),
    "json": Scenario("json", "/json", expect_contains=b'"school"'),
    "reflect": Scenario("reflect", "/reflect", expect_contains=b"User{id=1"),
    "sleep": Scenario("sleep", "/sleep?ms=10", expect_contains=b"slept 10 ms"),
    "echo": Scenario("echo", "/echo", method="POST", body=ECHO_BODY,
                     content_type="application/octet-stream", expect_body=ECHO_BODY),
}


def scenario(name: str | Scenario) -> Scenario:
    """The scenario called ``name``; ``sleep:50`` is the sleep endpoint with 50 ms."""
    if isinstance(name, Scenario):
        return name
    if isinstance(name, str) and name.startswith("sleep:"):
        ms = name.split(":", 1)[1]
        if not ms.isdigit():
            raise UsageError(f"bad scenario {name!r}: write sleep:<milliseconds>, such as sleep:50")
        return Scenario(name, f"/sleep?ms={ms}", expect_contains=f"slept {ms} ms".encode())
    if name not in SCENARIOS:
        raise UsageError(f"unknown scenario {name!r}: choose one of {', '.join(SCENARIOS)} (or sleep:<ms>)")
    return SCENARIOS[name]


@dataclass(frozen=True)
class Server:
    """A server to measure.

    ``kind`` is ``spring`` (a built-in jar), ``command`` (any program benchlab starts; ``{port}`` in its
    argv is replaced by a free port) or ``url`` (already running; benchlab only sends it load).
    """

    name: str
    kind: str
    jar: str | None = None
    command: tuple[str, ...] = ()
    url: str | None = None
    port: int | None = None
    path: str = "/"
    ready_path: str | None = None
    image: str | None = None
    flavour: str | None = None
    env: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    @classmethod
    def from_command(cls, argv: list[str] | str, *, port: int | None = None, path: str = "/",
                     name: str | None = None, ready_path: str | None = None,
                     env: dict | None = None) -> "Server":
        """A program benchlab starts, in any language.

        Example
        -------
        >>> Server.from_command(["python3", "-m", "http.server", "{port}", "--bind", "127.0.0.1"],
        ...                     path="/", name="python-http").kind
        'command'
        """
        argv = shlex.split(argv) if isinstance(argv, str) else list(argv)
        if not argv:
            raise UsageError("from_command needs a command, such as ['./my-server', '--port', '{port}']")
        if port is None and not any("{port}" in a for a in argv):
            raise UsageError("give port=... or put {port} in the command, so benchlab knows where it listens")
        if not path.startswith("/"):
            raise UsageError(f"path must start with '/', not {path!r}")
        return cls(name=name or Path(argv[0]).name, kind="command", command=tuple(argv), port=port,
                   path=path, ready_path=ready_path, env=tuple((env or {}).items()))

    @classmethod
    def from_url(cls, url: str, *, name: str | None = None) -> "Server":
        """A server that is already running, such as ``http://127.0.0.1:8080/hello``."""
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme != "http" or not parsed.hostname or not parsed.port:
            raise UsageError(f"bad url {url!r}: give http://HOST:PORT/PATH, such as http://127.0.0.1:8080/hello")
        path = parsed.path or "/"
        if parsed.query:
            path += "?" + parsed.query
        return cls(name=name or f"{parsed.hostname}:{parsed.port}", kind="url",
                   url=f"http://{parsed.hostname}:{parsed.port}", port=parsed.port, path=path)

    @property
    def default_scenario(self) -> Scenario:
        return Scenario("custom", self.path)

    def scenario(self, name: str | Scenario | None) -> Scenario:
        if self.kind == "spring" and not (isinstance(name, str) and name.startswith("/")):
            return scenario(name or "hello")
        if name in (None, "custom"):
            return self.default_scenario
        if isinstance(name, Scenario):
            return name
        if isinstance(name, str) and name.startswith("/"):
            return Scenario(name, name)
        raise UsageError(f"server {self.name} is not a built-in: give scenario as a path such as '/hello'")

    def argv(self, port: int, *, jvm_opts=(), java: str = "java", host: str = "127.0.0.1",
             cds: bool = True) -> list[str]:
        """The command that starts this server on ``port``.

        A built-in server starts from its Class Data Sharing archive for this ``java`` when ``cds`` is true,
        making the archive first if there is none (:func:`prepare_cds`); from the plain jar otherwise, or
        when no archive can be made.
        """
        if self.kind == "spring":
            start = prepare_cds(self, java) if cds else Cds(jar=self.jar)
            share = [f"-XX:SharedArchiveFile={start.archive}"] if start.archive else []
            # The archive's option goes first, so a -Xshare:off among jvm_opts still wins.
            return [java, *share, *jvm_opts, "-jar", start.jar, f"--server.port={port}", f"--server.address={host}"]
        if self.kind == "command":
            return [a.replace("{port}", str(port)) for a in self.command]
        raise UsageError(f"server {self.name} is already running at {self.url}: benchlab does not start it")


def _spring(flavour: str) -> Server:
    jar = home.servers_dir() / flavour / "target" / f"benchlab-{flavour}.jar"
    return Server(name=f"spring-{flavour}", kind="spring", jar=str(jar), path="/hello", ready_path="/info",
                  flavour=flavour, image=f"benchlab/spring-{flavour}")


FLAVOURS = ("tomcat", "jetty", "undertow")
BUILTINS = tuple(f"spring-{f}" for f in FLAVOURS)


def get(server: str | Server) -> Server:
    """The server named ``server`` (or ``server`` itself)."""
    if isinstance(server, Server):
        return server
    if isinstance(server, str) and server.startswith(("http://", "https://")):
        return Server.from_url(server)
    if isinstance(server, str) and server in BUILTINS:
        return _spring(server.removeprefix("spring-"))
    if isinstance(server, str) and server in FLAVOURS:
        return _spring(server)
    raise UsageError(
        f"unknown server {server!r}: choose one of {', '.join(BUILTINS)}, or use "
        "Server.from_command([...]) / Server.from_url('http://127.0.0.1:PORT/PATH')"
    )


def check_loopback(url: str, *, allow_remote: bool = False) -> None:
    """Refuse to send load anywhere but this machine's loopback unless ``allow_remote`` is set."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if allow_remote:
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise UsageError(
            f"refusing to send load to {host}: benchlab only loads 127.0.0.0/8 and ::1 unless you pass "
            "allow_remote=True for a machine you own"
        )


# --- the build ---------------------------------------------------------------------------------------

_STAMP = ".benchlab-build"


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
    """Build the three server jars with one Maven call; skip it when ``servers/`` has not changed.

    Returns ``{"built": bool, "seconds": float, "jars": {...}}``.

    Example
    -------
    >>> import benchlab
    >>> benchlab.build()["jars"]["spring-jetty"].name   # doctest: +SKIP
    'benchlab-jetty.jar'
    """
    import time

    root = home.servers_dir()
    if not (root / "pom.xml").exists():
        raise BuildError(f"no servers/pom.xml under {root.parent}: set BENCHLAB_HOME to the benchlab checkout")
    stamp = root / _STAMP
    source = _source_hash(root)
    if not force and stamp.exists() and stamp.read_text().strip() == source and all(p.exists() for p in jars().values()):
        return {"built": False, "seconds": 0.0, "jars": jars()}
    mvn = process.require("mvn", "apt-get install maven (and a JDK 17: apt-get install openjdk-17-jdk-headless)")
    process.require("java", "apt-get install openjdk-17-jdk-headless")
    # clean: a server jar is not repackaged when only the shared app jar changed.
    argv = [mvn, "-B", "-f", str(root / "pom.xml"), "clean", "package", "-DskipTests"]
    if quiet:
        argv.insert(2, "-q")
    began = time.monotonic()
    log = root / "target-build.log"
    with open(log, "w") as out:
        result = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise BuildError(f"the Maven build failed (exit {result.returncode}, log {log}):\n{tail(log.read_text(), 25)}")
    missing = [str(p) for p in jars().values() if not p.exists()]
    if missing:
        raise BuildError(f"Maven finished but did not make {', '.join(missing)}; see {log}")
    stamp.write_text(source + "\n")
    return {"built": True, "seconds": time.monotonic() - began, "jars": jars()}


def ensure_built(server: Server, *, java: str | None = None, cds: bool = True) -> None:
    """Build the jars if they are missing or older than ``servers/`` (a no-op when nothing changed); given
    ``java``, also the server's CDS archive for that JVM, so the first start does not make it."""
    if server.kind == "spring":
        build()
        if java is not None and cds:
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
    """``"cds"`` when ``argv`` starts the JVM from a CDS archive, else ``"jar"``."""
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


def prepare_cds(server: Server, java: str = "java") -> Cds:
    """The CDS archive of a built-in server's jar for this ``java``, made on first use and then reused.

    It lives beside the jar in ``target/cds-<key>/``, keyed by a hash of the jar's bytes and the output of
    ``java -version``: a new jar or another JDK gets its own archive. When none can be made (an old JDK, a
    failed training run) the result is the plain jar with a ``warning``, which is also issued once as a
    Python warning; a run never fails for want of an archive.

    Example
    -------
    >>> prepare_cds(get("spring-jetty")).metadata()["launch"]   # doctest: +SKIP
    'cds'
    """
    if server.kind != "spring":
        raise UsageError(f"CDS applies to the built-in Spring servers, not to {server.name}")
    jar = Path(server.jar)
    java_path = shutil.which(java) or java
    stat = jar.stat() if jar.exists() else None
    memo = (str(jar), stat and (stat.st_mtime_ns, stat.st_size), str(Path(java_path).resolve()))
    if memo in _PREPARED and (_PREPARED[memo].archive is None or Path(_PREPARED[memo].archive).exists()):
        return _PREPARED[memo]
    try:
        digest = hashlib.sha256(jar.read_bytes())
        digest.update(_java_version(java_path).encode())
        directory = jar.parent / f"cds-{digest.hexdigest()[:16]}"
        done = directory / ".complete"
        with open(jar.parent / f"{directory.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be making the same archive
            if not done.exists():
                began = time.monotonic()
                _make_cds(jar, directory, java_path)
                done.write_text(f"{time.monotonic() - began:.1f} s to make\n")
        prepared = Cds(jar=str(directory / jar.name), archive=str(directory / "app.jsa"))
    except (OSError, subprocess.SubprocessError, BenchlabError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        prepared = Cds(jar=str(jar), warning=f"no CDS archive for {server.name} with {java}, starting the plain "
                                             f"jar: {reason}")
        warnings.warn(prepared.warning, RuntimeWarning, stacklevel=2)
    _PREPARED[memo] = prepared
    return prepared
