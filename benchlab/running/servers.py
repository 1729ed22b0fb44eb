"""The servers under test and what to ask them: the built-in Spring Boot targets and custom ones.

Built in are ``spring-tomcat``, ``spring-jetty`` and ``spring-undertow``: one Spring Boot application
(``servers/app``) packaged three times, so the embedded server is the only difference; and
``spring-webflux``, the same endpoints and bodies on Spring WebFlux and Reactor Netty (``servers/webflux``),
for servlet against reactive. A comparison takes the three servlet servers unless told otherwise (
:data:`DEFAULT_SERVERS`). Any other program
can be measured through :meth:`Server.from_command` (benchlab starts it) or :meth:`Server.from_url`
(it is already running).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import shlex
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from .. import home
from ..errors import UsageError
from .jars import FLAVOURS, SERVLET_FLAVOURS, Cds, prepare_aot, prepare_cds
from .variants import Settings, parse_name, settings


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

#: The endpoints of the built-in servers (servers/app/.../BenchController.java and, alike, the reactive
#: servers/webflux/.../ReactiveController.java, whose sleep waits on a timer, not on a blocked thread).
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
    """A server to measure, of one of three kinds, each knowing how it starts and what it reports:
    :class:`SpringServer` (a built-in jar), :class:`CommandServer` (any program benchlab starts; ``{port}``
    in its argv is replaced by a free port) and :class:`UrlServer` (already running; benchlab only sends it
    load). ``kind`` names the kind.
    """

    #: the kind's name: spring, command or url
    kind: ClassVar[str] = "server"
    #: benchlab starts it; an attached URL it only loads
    starts: ClassVar[bool] = True
    #: a built-in Spring Boot jar: it takes JVM options and settings, answers GET /info, starts from a CDS
    #: archive or an AOT cache, and has a docker image
    builtin: ClassVar[bool] = False

    name: str
    jar: str | None = None
    command: tuple[str, ...] = ()
    url: str | None = None
    port: int | None = None
    path: str = "/"
    ready_path: str | None = None
    image: str | None = None
    flavour: str | None = None
    env: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    settings: Settings = Settings()

    @classmethod
    def spring(cls, flavour: str, *, java=None, virtual_threads=None, max_threads=None, gc=None,
               heap=None, aot=None) -> Server:
        """A built-in server, with settings: a variant named after them (:mod:`benchlab.running.variants`).

        ``java`` is 17, 25 or a JDK's path; ``virtual_threads`` needs Java 21+; ``max_threads`` is the
        server's request pool maximum; ``gc`` is g1, parallel or z; ``heap`` the -Xmx size; ``aot`` starts
        from Java 25's AOT cache trained with real requests (:func:`benchlab.running.jars.prepare_aot`). None
        leaves the server's default.

        Example
        -------
        >>> Server.spring("tomcat", java=25, virtual_threads=True).name
        'spring-tomcat+vt@java25'
        """
        flavour = flavour.removeprefix("spring-")
        if flavour not in FLAVOURS:
            raise UsageError(f"unknown server {flavour!r}: choose one of {', '.join(FLAVOURS)}")
        return _spring(flavour).with_settings(java=java, virtual_threads=virtual_threads,
                                              max_threads=max_threads, gc=gc, heap=heap, aot=aot)

    @property
    def spring_jar(self) -> str:
        """A built-in server's jar; any other server has none (a UsageError)."""
        if self.jar is None:
            raise UsageError(f"{self.name} has no jar: only the built-in Spring servers start from one")
        return self.jar

    @property
    def spring_flavour(self) -> str:
        """A built-in server's engine (tomcat, jetty, undertow, webflux); any other server has none."""
        if self.flavour is None:
            raise UsageError(f"{self.name} has no flavour: only the built-in Spring servers have one")
        return self.flavour

    def with_settings(self, **given) -> Server:
        """This built-in server with more settings (None keeps a setting as it is); its name says them all."""
        if not self.builtin:
            raise UsageError(f"settings such as {', '.join(given)} apply to the built-in Spring servers, not to "
                             f"{self.name}; set them in its own command")
        current = self.settings
        now = {"java": current.java, "virtual_threads": current.virtual_threads,
               "max_threads": current.max_threads, "gc": current.gc, "heap": current.heap, "aot": current.aot}
        now.update({k: v for k, v in given.items() if v is not None})
        checked = settings(self.spring_flavour, **now)
        base = f"spring-{self.spring_flavour}"
        return dataclasses.replace(self, name=base + checked.mark(), settings=checked)

    @classmethod
    def from_command(cls, argv: list[str] | str, *, port: int | None = None, path: str = "/",
                     name: str | None = None, ready_path: str | None = None,
                     env: dict | None = None) -> Server:
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
        return CommandServer(name=name or Path(argv[0]).name, command=tuple(argv), port=port,
                   path=path, ready_path=ready_path, env=tuple((env or {}).items()))

    @classmethod
    def from_url(cls, url: str, *, name: str | None = None) -> Server:
        """A server that is already running, such as ``http://127.0.0.1:8080/hello``."""
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme != "http" or not parsed.hostname or not parsed.port:
            raise UsageError(f"bad url {url!r}: give http://HOST:PORT/PATH, such as http://127.0.0.1:8080/hello")
        path = parsed.path or "/"
        if parsed.query:
            path += "?" + parsed.query
        # An IPv6 address keeps its brackets in the url (http://[::1]:8080), or the port reads as part of it.
        host = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
        return UrlServer(name=name or f"{host}:{parsed.port}", url=f"http://{host}:{parsed.port}",
                   port=parsed.port, path=path)

    @property
    def default_scenario(self) -> Scenario:
        return Scenario("custom", self.path)

    def scenario(self, name: str | Scenario | None) -> Scenario:
        if self.builtin and not (isinstance(name, str) and name.startswith("/")):
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
        """The command that starts this server on ``port``."""
        raise UsageError(f"server {self.name} is already running at {self.url}: benchlab does not start it")

    def programs(self, java: str) -> list[tuple[str, str]]:
        """The programs that must be installed to start it locally, each with how to install it."""
        return []


@dataclass(frozen=True)
class SpringServer(Server):
    """A built-in Spring Boot server: ``java <settings' and given JVM options> -jar <jar> <its arguments>``."""

    kind: ClassVar[str] = "spring"
    builtin: ClassVar[bool] = True

    def argv(self, port: int, *, jvm_opts=(), java: str = "java", host: str = "127.0.0.1",
             cds: bool = True) -> list[str]:
        """The command that starts this server on ``port``.

        It starts from its Class Data Sharing archive for this ``java`` when ``cds`` is true, making the
        archive first if there is none (:func:`prepare_cds`); from the plain jar otherwise, or when no
        archive can be made.
        """
        if self.settings.aot:  # the AOT cache holds what a CDS archive would, and more: one or the other
            cache = prepare_aot(self, java)
            start, share = Cds(jar=cache.jar), [f"-XX:AOTCache={cache.archive}", "-XX:AOTMode=on"]
        else:
            start = prepare_cds(self, java) if cds else Cds(jar=self.spring_jar)
            share = [f"-XX:SharedArchiveFile={start.archive}"] if start.archive else []
        # The archive's option goes first, so a -Xshare:off among jvm_opts still wins.
        return [java, *share, *self.java_arguments(port, jvm_opts=jvm_opts, jar=start.jar, host=host)]

    def java_arguments(self, port: int, *, jvm_opts=(), jar: str, host: str) -> list[str]:
        """What follows ``java`` (and a sharing archive) on the command line, locally and in a container alike:
        the settings' JVM options, the given ones, the jar and the Spring arguments."""
        return [*self.settings.jvm_options(), *jvm_opts, "-jar", jar, *self.settings.arguments(self.spring_flavour),
                f"--server.port={port}", f"--server.address={host}"]

    def programs(self, java: str) -> list[tuple[str, str]]:
        return [(java, "apt-get install openjdk-17-jre-headless, or pass java=/path/to/bin/java")]


@dataclass(frozen=True)
class CommandServer(Server):
    """A program benchlab starts, in any language (:meth:`Server.from_command`)."""

    kind: ClassVar[str] = "command"

    def argv(self, port: int, *, jvm_opts=(), java: str = "java", host: str = "127.0.0.1",
             cds: bool = True) -> list[str]:
        return [a.replace("{port}", str(port)) for a in self.command]

    def programs(self, java: str) -> list[tuple[str, str]]:
        return [(self.command[0], f"install {self.command[0]} or give its full path")]


@dataclass(frozen=True)
class UrlServer(Server):
    """A server that is already running (:meth:`Server.from_url`): benchlab only sends it load."""

    kind: ClassVar[str] = "url"
    starts: ClassVar[bool] = False


def _spring(flavour: str) -> Server:
    jar = home.servers_dir() / flavour / "target" / f"benchlab-{flavour}.jar"
    return SpringServer(name=f"spring-{flavour}", jar=str(jar), path="/hello", ready_path="/info",
                  flavour=flavour, image=f"benchlab/spring-{flavour}")


BUILTINS = tuple(f"spring-{f}" for f in FLAVOURS)
#: What a comparison runs when no servers are named: the servlet servers, one application on three containers.
DEFAULT_SERVERS = tuple(f"spring-{f}" for f in SERVLET_FLAVOURS)


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
    if isinstance(server, str) and ("+" in server or "@" in server):
        base, given = parse_name(server)
        if base in BUILTINS or base in FLAVOURS:
            return Server.spring(base, **given)
    raise UsageError(
        f"unknown server {server!r}: choose one of {', '.join(BUILTINS)}, or use "
        "Server.from_command([...]) / Server.from_url('http://127.0.0.1:PORT/PATH')"
    )


def check_loopback(url: str, *, allow_remote: bool = False) -> None:
    """Refuse to send load anywhere but this machine's loopback unless ``allow_remote`` is set."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or parts.netloc  # an IPv6 address is bracketed in a url: http://[::1]:8080
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
