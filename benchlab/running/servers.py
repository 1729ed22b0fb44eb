"""The servers under test and what to ask them: the built-in Spring Boot targets, the references and custom ones.

Built in are ``spring-tomcat``, ``spring-jetty`` and ``spring-undertow``: one Spring Boot application
(``servers/app``) packaged three times, so the embedded server is the only difference; and
``spring-webflux``, the same endpoints and bodies on Spring WebFlux and Reactor Netty (``servers/webflux``),
for servlet against reactive. A comparison takes the three servlet servers unless told otherwise (
:data:`DEFAULT_SERVERS`). Two native servers are built in as references, to show the machine's ceiling:
``nginx`` and ``go-nethttp`` (:data:`REFERENCES`, :mod:`benchlab.running.natives`). Any other program
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
from ..schema import REFERENCES
from . import natives, process
from .jars import FLAVOURS, SERVLET_FLAVOURS, Cds, ensure_built, prepare_aot, prepare_cds
from .protocols import HTTP1, Listener
from .scenarios import ECHO_BODY, HELLO_BODY, JSON_BODY, SCENARIOS, Scenario, scenario  # noqa: F401 - re-exported
from .variants import Settings, parse_name, settings


@dataclass(frozen=True)
class Server:
    """A server to measure, of one of four kinds, each knowing how it starts and what it reports:
    :class:`SpringServer` (a built-in jar), :class:`ReferenceServer` (nginx or go-nethttp, the built-in native
    references), :class:`CommandServer` (any program benchlab starts; ``{port}`` in its argv is replaced by a
    free port) and :class:`UrlServer` (already running; benchlab only sends it load). ``kind`` names the kind.
    """

    #: the kind's name: spring, native, command or url
    kind: ClassVar[str] = "server"
    #: benchlab starts it; an attached URL it only loads
    starts: ClassVar[bool] = True
    #: one of benchlab's own servers: it serves the scenarios with their bodies, answers GET /info, is built by
    #: ``benchlab build`` and has a docker image
    builtin: ClassVar[bool] = False
    #: a JVM from a built-in jar: it takes JVM options and settings, and starts from a CDS archive or an AOT cache
    jvm: ClassVar[bool] = False
    #: a native reference of the machine's ceiling (:mod:`benchlab.analysis.ceiling`)
    reference: ClassVar[bool] = False

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
        if not self.jvm:
            raise UsageError(f"settings such as {', '.join(given)} apply to the built-in Spring servers, not to "
                             f"{self.name}; " + ("it is not a JVM" if self.builtin else "set them in its own command"))
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
        address = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
        return UrlServer(name=name or f"{address}:{parsed.port}", url=f"http://{address}:{parsed.port}",
                   port=parsed.port, path=path)

    @property
    def default_scenario(self) -> Scenario:
        return Scenario("custom", self.path)

    def scenario(self, name: str | Scenario | None) -> Scenario:
        if self.builtin and not (isinstance(name, str) and name.startswith("/")):
            return self.served(scenario(name or "hello"))
        if name in (None, "custom"):
            return self.default_scenario
        if isinstance(name, Scenario):
            return name
        if isinstance(name, str) and name.startswith("/"):
            return Scenario(name, name)
        raise UsageError(f"server {self.name} is not a built-in: give scenario as a path such as '/hello'")

    def own(self, name: str) -> Scenario:
        """The scenario ``name`` as this server serves it when a comparison names no scenario: a built-in
        server's own, a custom server's at its own path (the cell keeps the name, the run records the path)."""
        return self.scenario(name) if self.builtin else Scenario(name, self.path)

    def served(self, asked: Scenario) -> Scenario:
        """``asked`` if this built-in server serves it; a reference refuses the Java-only ones."""
        return asked

    def argv(self, port: int, *, jvm_opts=(), java: str = "java", address: str = "127.0.0.1",
             cds: bool = True, folder: str = ".", listener: Listener = HTTP1) -> list[str]:
        """The command that starts this server on ``port``, serving ``listener``'s protocol; ``folder`` holds the
        files of :meth:`files`."""
        raise UsageError(f"server {self.name} is already running at {self.url}: benchlab does not start it")

    def files(self, port: int, *, address: str, cpus: tuple[int, ...], folder: str,
              listener: Listener = HTTP1) -> dict[str, str]:
        """The files its command reads, by name, which the backend writes into ``folder`` first."""
        return {}

    def programs(self, java: str) -> list[tuple[str, str]]:
        """The programs that must be installed to start it locally, each with how to install it."""
        return []

    def require(self, java: str) -> None:
        """Everything it needs to start is installed: a :class:`ToolMissing` naming the install command if not."""
        for program, install in self.programs(java):
            process.require(program, install)

    def build(self, *, java: str | None = None, cds: bool = True) -> None:
        """Build what it starts from, when its sources changed (a no-op for a custom server)."""


@dataclass(frozen=True)
class SpringServer(Server):
    """A built-in Spring Boot server: ``java <settings' and given JVM options> -jar <jar> <its arguments>``."""

    kind: ClassVar[str] = "spring"
    builtin: ClassVar[bool] = True
    jvm: ClassVar[bool] = True

    def argv(self, port: int, *, jvm_opts=(), java: str = "java", address: str = "127.0.0.1",
             cds: bool = True, folder: str = ".", listener: Listener = HTTP1) -> list[str]:
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
        return [java, *share, *self.java_arguments(port, jvm_opts=jvm_opts, jar=start.jar, address=address,
                                                   listener=listener)]

    def java_arguments(self, port: int, *, jvm_opts=(), jar: str, address: str,
                       listener: Listener = HTTP1) -> list[str]:
        """What follows ``java`` (and a sharing archive) on the command line, locally and in a container alike:
        the settings' JVM options, the given ones, the jar and the Spring arguments (the listener's among them)."""
        return [*self.settings.jvm_options(), *jvm_opts, "-jar", jar, *self.settings.arguments(self.spring_flavour),
                *listener.spring_arguments(), f"--server.port={port}", f"--server.address={address}"]

    def container_argv(self, port: int, *, jvm_opts=(), address: str, folder: str, listener=HTTP1) -> list[str]:
        """The command of its container: the image's java with the same arguments as locally."""
        return ["java", *self.java_arguments(port, jvm_opts=jvm_opts, jar=JAR_IN_IMAGE, address=address,
                                             listener=listener)]

    def programs(self, java: str) -> list[tuple[str, str]]:
        return [(java, "apt-get install openjdk-17-jre-headless, or pass java=/path/to/bin/java")]

    def build(self, *, java: str | None = None, cds: bool = True) -> None:
        ensure_built(self, java=java, cds=cds)


#: Where a Spring server's image holds its jar (servers/Dockerfile).
JAR_IN_IMAGE = "/app/server.jar"


@dataclass(frozen=True)
class ReferenceServer(Server):
    """A native built-in server, a reference of what the machine can serve: ``nginx`` (Debian's, configured by
    benchlab for each fork) or ``go-nethttp`` (``servers/go``); :mod:`benchlab.running.natives` knows each."""

    kind: ClassVar[str] = "native"
    builtin: ClassVar[bool] = True
    reference: ClassVar[bool] = True

    def served(self, asked: Scenario) -> Scenario:
        if asked.name == "reflect":
            raise UsageError(f"reflect is Java-only (a reflective call): {self.name} serves hello, json, sleep, "
                             "sleep:<ms> and echo")
        return asked

    def argv(self, port: int, *, jvm_opts=(), java: str = "java", address: str = "127.0.0.1",
             cds: bool = True, folder: str = ".", listener: Listener = HTTP1) -> list[str]:
        return natives.argv(self.name, port, address=address, folder=folder, listener=listener)

    def container_argv(self, port: int, *, jvm_opts=(), address: str, folder: str, listener=HTTP1) -> list[str]:
        return natives.argv(self.name, port, address=address, folder=folder, container=True, listener=listener)

    def files(self, port: int, *, address: str, cpus: tuple[int, ...], folder: str,
              listener: Listener = HTTP1) -> dict[str, str]:
        return natives.files(self.name, port, address=address, cpus=cpus, folder=folder, listener=listener)

    def require(self, java: str) -> None:
        natives.require(self.name)

    def build(self, *, java: str | None = None, cds: bool = True) -> None:
        natives.build(self.name)


@dataclass(frozen=True)
class CommandServer(Server):
    """A program benchlab starts, in any language (:meth:`Server.from_command`)."""

    kind: ClassVar[str] = "command"

    def argv(self, port: int, *, jvm_opts=(), java: str = "java", address: str = "127.0.0.1",
             cds: bool = True, folder: str = ".", listener: Listener = HTTP1) -> list[str]:
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


BUILTINS = (*(f"spring-{f}" for f in FLAVOURS), *REFERENCES)
#: What a comparison runs when no servers are named: the servlet servers, one application on three containers.
DEFAULT_SERVERS = tuple(f"spring-{f}" for f in SERVLET_FLAVOURS)


def get(server: str | Server) -> Server:
    """The server named ``server`` (or ``server`` itself)."""
    if isinstance(server, Server):
        return server
    if isinstance(server, str) and server.startswith(("http://", "https://")):
        return Server.from_url(server)
    if isinstance(server, str) and server in REFERENCES:
        return ReferenceServer(name=server, path="/hello", ready_path="/info", image=f"benchlab/{server}")
    if isinstance(server, str) and (server in BUILTINS or server in FLAVOURS):
        return _spring(server.removeprefix("spring-"))
    if isinstance(server, str) and ("+" in server or "@" in server):
        base, given = parse_name(server)
        if base in REFERENCES:
            raise UsageError(f"{base} is not a JVM: settings such as {server.partition(base)[2]} apply to the built-in "
                             "Spring servers only")
        if base in BUILTINS or base in FLAVOURS:
            return Server.spring(base, **given)
    raise UsageError(
        f"unknown server {server!r}: choose one of {', '.join(BUILTINS)}, or use "
        "Server.from_command([...]) / Server.from_url('http://127.0.0.1:PORT/PATH')"
    )


def check_loopback(url: str, *, allow_remote: bool = False) -> None:
    """Refuse to send load anywhere but this machine's loopback unless ``allow_remote`` is set."""
    parts = urllib.parse.urlsplit(url)
    address = parts.hostname or parts.netloc  # an IPv6 address is bracketed in a url: http://[::1]:8080
    if allow_remote:
        return
    try:
        loopback = ipaddress.ip_address(address).is_loopback
    except ValueError:
        loopback = address == "localhost"
    if not loopback:
        raise UsageError(
            f"refusing to send load to {address}: benchlab only loads 127.0.0.0/8 and ::1 unless you pass "
            "allow_remote=True for a machine you own"
        )
