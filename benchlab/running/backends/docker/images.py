"""Docker images for the docker backend: an offline Java base, one image per built-in server, and wrk.

No registry is needed. The offline base is a ``jlink`` runtime made from the local JDK plus the few
glibc libraries it needs (``ldd`` names them), ``FROM scratch``; wrk's image is made the same way from
the local ``wrk``. Server images are ``servers/Dockerfile`` on a base image (the offline one, or any
image with ``java`` on its PATH such as ``eclipse-temurin:17-jre``).

Every image is tagged by a hash of its inputs, so it is built only when they change::

    benchlab/jre:<hash>              the JDK's release file, the module list, the libraries' bytes
    benchlab/spring-<flavour>:<hash> the Dockerfile, the jar, the base image's id
    benchlab/wrk:<hash>              the wrk binary and its libraries
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .... import home
from ....errors import BuildError, ToolMissing, UsageError, tail
from ... import jars, process, servers

BASE_REPOSITORY = "benchlab/jre"
WRK_REPOSITORY = "benchlab/wrk"
REGISTRY_BASE = "eclipse-temurin:17-jre"

#: What Spring Boot 3 with Tomcat, Jetty or Undertow loads (java.desktop for java.beans).
JLINK_MODULES = (
    "java.base", "java.compiler", "java.desktop", "java.instrument", "java.logging", "java.management",
    "java.naming", "java.net.http", "java.prefs", "java.rmi", "java.scripting", "java.security.jgss",
    "java.security.sasl", "java.sql", "java.transaction.xa", "java.xml", "jdk.crypto.ec", "jdk.httpserver",
    "jdk.jfr", "jdk.management", "jdk.naming.dns", "jdk.unsupported", "jdk.zipfs",
)
# No compression: class loading then costs what it costs with the local JDK, which keeps docker and
# local startup times comparable (the image is ~80 MB instead of ~55).
JLINK_OPTIONS = ("--strip-debug", "--no-man-pages", "--no-header-files", "--compress=0")
# The runtime's own native libraries a server loads; the AWT, font and sound ones are never loaded
# headless, so their X11 and freetype dependencies stay out of the image.
JRE_BINARIES = ("bin/java", "lib/server/libjvm.so", "lib/libjli.so", "lib/libjava.so", "lib/libnet.so",
                "lib/libnio.so", "lib/libzip.so", "lib/libjimage.so", "lib/libverify.so",
                "lib/libmanagement.so", "lib/libmanagement_ext.so", "lib/libinstrument.so", "lib/libprefs.so",
                "lib/libj2gss.so", "lib/librmi.so", "lib/libjsig.so")

SCRATCH_DOCKERFILE = """\
FROM scratch
COPY rootfs/ /
ENV PATH={path}
"""
DOCKERFILE = "Dockerfile"


@dataclass(frozen=True)
class Image:
    """A built image: its tag, id, size, and whether this call built it."""

    tag: str
    id: str
    size: int
    built: bool
    seconds: float = 0.0


# --- the pieces: JDK, libraries, content hashes --------------------------------------------------------

def jdk_home() -> Path:
    """The JDK whose jmods make the base: ``$BENCHLAB_JDK``, ``$JAVA_HOME`` or the one ``jlink`` belongs to."""
    candidates = [os.environ.get("BENCHLAB_JDK"), os.environ.get("JAVA_HOME"),
                  "/usr/lib/jvm/java-17-openjdk-amd64"]
    jlink = shutil.which("jlink")
    if jlink:
        candidates.append(str(Path(jlink).resolve().parent.parent))
    for candidate in candidates:
        if candidate and (Path(candidate) / "jmods" / "java.base.jmod").exists() and (
                Path(candidate) / "bin" / "jlink").exists():
            return Path(candidate)
    raise ToolMissing("no JDK with jlink and jmods found: apt-get install openjdk-17-jdk-headless "
                      "(or set BENCHLAB_JDK to a JDK 17 home)")


def shared_libraries(binaries: list[Path], *, runtime: Path | None = None) -> list[Path]:
    """The system libraries ``binaries`` link to, as ``ldd`` resolves them (the loader included).

    Libraries inside ``runtime`` (a Java runtime's own ``lib/``) are left out: they come with it.
    """
    ldd = process.require("ldd", "apt-get install libc-bin")
    found: set[str] = set()
    for binary in binaries:
        done = subprocess.run([ldd, str(binary)], capture_output=True, text=True, timeout=60)
        for line in done.stdout.splitlines():
            parts = line.split()
            if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
                path = parts[2]
            elif parts and parts[0].startswith("/"):
                path = parts[0]
            else:
                continue
            if runtime is None or not Path(path).resolve().is_relative_to(runtime.resolve()):
                found.add(path)
    return sorted(Path(p) for p in found)


def _digest(*parts: bytes | str | Path) -> str:
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            with open(part, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    digest.update(chunk)
        else:
            digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _rootfs_libraries(rootfs: Path, libraries: list[Path]) -> None:
    for library in libraries:
        target = rootfs / str(library).lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(library.resolve(), target)  # the real file, at the path the loader asks for


def _tmp_dir(rootfs: Path) -> None:
    tmp = rootfs / "tmp"  # the JVM's hsperfdata and Tomcat's work directory live here
    tmp.mkdir(parents=True, exist_ok=True)
    tmp.chmod(0o1777)


# --- building through the SDK ---------------------------------------------------------------------------

def _find(client, tag: str):
    import docker

    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def _build(client, context: Path, tag: str, *, buildargs: dict | None = None, labels: dict | None = None,
           dockerfile: str = DOCKERFILE) -> Image:
    """Build ``context`` as ``tag``; a failure is a :class:`BuildError` ending with the build log's tail."""
    import time

    import docker

    began = time.monotonic()
    log: list[str] = []
    try:
        for chunk in client.api.build(path=str(context), tag=tag, dockerfile=dockerfile, buildargs=buildargs,
                                      labels=labels, rm=True, forcerm=True, decode=True):
            if "stream" in chunk:
                log.append(chunk["stream"].rstrip("\n"))
            if "error" in chunk:
                log.append(chunk["error"].rstrip("\n"))
                raise BuildError(f"building image {tag} failed: {chunk['error'].strip()}\n"
                                 f"{tail(chr(10).join(log), 15)}")
    except docker.errors.APIError as exc:
        raise BuildError(f"building image {tag} failed: {exc.explanation or exc}\n"
                         f"{tail(chr(10).join(log), 15)}") from None
    image = client.images.get(tag)
    return Image(tag, image.id, image.attrs.get("Size", 0), True, time.monotonic() - began)


def _existing(image, tag: str) -> Image:
    return Image(tag, image.id, image.attrs.get("Size", 0), False)


# --- the offline base -----------------------------------------------------------------------------------

def base_tag(jdk: Path | None = None) -> str:
    """``benchlab/jre:<hash>``: changes with the JDK, the module list, the options or any library."""
    jdk = jdk or jdk_home()
    libraries = shared_libraries([jdk / b for b in JRE_BINARIES if (jdk / b).exists()], runtime=jdk)
    digest = _digest(SCRATCH_DOCKERFILE, " ".join(JLINK_MODULES), " ".join(JLINK_OPTIONS),
                     jdk / "release", jdk / "lib" / "server" / "libjvm.so",
                     *(f"{lib}" for lib in libraries), *(lib.resolve() for lib in libraries))
    return f"{BASE_REPOSITORY}:{digest}"


def build_base(client, *, force: bool = False) -> Image:
    """Build the offline base image unless an image with the same inputs is already on the engine.

    Example
    -------
    >>> from benchlab.running.backends.docker import connect
    >>> build_base(connect()).tag   # doctest: +SKIP
    'benchlab/jre:3f2a9c0d1e7b4a55'
    """
    jdk = jdk_home()
    tag = base_tag(jdk)
    found = None if force else _find(client, tag)
    if found is not None:
        return _existing(found, tag)
    # kept, so a second engine gets the base without running jlink again
    context = home.cache_dir() / tag.replace("/", "-").replace(":", "-")
    if force or not (context / DOCKERFILE).exists():
        _base_context(jdk, context)
    version = next((line.split("=", 1)[1].strip('"') for line in (jdk / "release").read_text().splitlines()
                    if line.startswith("JAVA_RUNTIME_VERSION=")), "unknown")
    return _build(client, context, tag, labels={"benchlab.image": "base", "benchlab.java": version})


def _base_context(jdk: Path, context: Path) -> None:
    """jlink the runtime and copy its libraries into ``context/rootfs``; the directory appears whole or not at all."""
    context.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".building-", dir=context.parent))
    try:
        rootfs = scratch / "rootfs"
        java_home = rootfs / "opt" / "java"
        java_home.parent.mkdir(parents=True)
        argv = [str(jdk / "bin" / "jlink"), "--add-modules", ",".join(JLINK_MODULES), *JLINK_OPTIONS,
                "--output", str(java_home)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise BuildError(f"jlink failed (exit {done.returncode}): {' '.join(argv)}\n"
                             f"{tail(done.stdout + done.stderr)}")
        binaries = [java_home / b for b in JRE_BINARIES if (java_home / b).exists()]
        _rootfs_libraries(rootfs, shared_libraries(binaries, runtime=java_home))
        _tmp_dir(rootfs)
        (scratch / DOCKERFILE).write_text(SCRATCH_DOCKERFILE.format(path="/opt/java/bin"))
        if context.exists():
            shutil.rmtree(context)
        scratch.rename(context)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --- the server images ----------------------------------------------------------------------------------

def _base_id(client, base: str) -> str:
    import docker

    found = _find(client, base)
    if found is None:
        try:
            found = client.images.pull(base)
        except docker.errors.APIError as exc:
            raise BuildError(
                f"cannot pull the base image {base} ({exc.explanation or exc}): with no registry, build the "
                "offline base with `benchlab image base` and leave base_image unset"
            ) from None
    return found.id


def server_tag(server: servers.Server, base_id: str) -> str:
    jar = Path(server.spring_jar)
    if not jar.exists():
        raise BuildError(f"{jar} is missing: run `benchlab build` first")
    digest = _digest((home.servers_dir() / DOCKERFILE).read_text(), server.spring_flavour, base_id, jar)
    return f"{server.image}:{digest}"


def server_tag_on(client, server: servers.Server, *, base_image: str | None = None) -> str:
    """The tag :func:`build_server` gives ``server`` on ``client``'s engine, building and pulling nothing: the base's
    own tag when the engine lacks the base (a server image is tagged by its base's id there)."""
    jars.ensure_built(server)
    base = base_image or base_tag()
    found = _find(client, base)
    return server_tag(server, found.id) if found is not None else base


def build_server(client, server: servers.Server | str, *, base_image: str | None = None,
                 force: bool = False) -> Image:
    """The image of a built-in Spring server on ``base_image`` (the offline base by default), built if missing;
    the references' images are :mod:`.native_images`'."""
    server = servers.get(server)
    if not server.jvm:
        raise UsageError(f"{server.name} is not a built-in Spring server: its image is built by native_images.build")
    jars.ensure_built(server)
    base = base_image or build_base(client).tag  # as given, or the offline base (built if missing)
    tag = server_tag(server, _base_id(client, base))
    found = None if force else _find(client, tag)
    if found is not None:
        return _existing(found, tag)
    with tempfile.TemporaryDirectory(prefix="benchlab-server-") as scratch:
        context = Path(scratch)
        shutil.copy2(home.servers_dir() / DOCKERFILE, context / DOCKERFILE)
        jar = Path(server.spring_jar)
        try:
            os.link(jar, context / jar.name)
        except OSError:
            shutil.copy2(jar, context / jar.name)
        return _build(client, context, tag, buildargs={"BASE": base, "FLAVOUR": server.flavour},
                      labels={"benchlab.image": "server", "benchlab.server": server.name})


def build_servers(client, *, base_image: str | None = None, force: bool = False) -> dict[str, Image]:
    """The built-in Spring servers' images (each built only if its inputs changed)."""
    return {f"spring-{f}": build_server(client, f"spring-{f}", base_image=base_image, force=force)
            for f in jars.FLAVOURS}


def copy(source, target, tags: list[str]) -> None:
    """The images ``tags`` saved from one engine's client and loaded into another's, as ``docker save TAGS | docker
    -H TARGET load`` does: their ids kept, so both engines run the same bytes (``compare(hosts=...)``). Give a
    server's base before the server: a base with children is not removed, so the order is the one to remove in
    reverse."""
    for tag in tags:
        target.images.load(b"".join(source.images.get(tag).save(named=True)))


# --- wrk, for load in a container -----------------------------------------------------------------------

def _wrk() -> tuple[str, Path, list[Path]]:
    """wrk's image tag, its binary and its libraries."""
    from ...drivers.wrk import Wrk

    wrk = Path(Wrk().executable()).resolve()
    libraries = shared_libraries([wrk])
    tag = f"{WRK_REPOSITORY}:" + _digest(SCRATCH_DOCKERFILE, wrk, *(str(lib) for lib in libraries),
                                          *(lib.resolve() for lib in libraries))
    return tag, wrk, libraries


def build_wrk(client, *, force: bool = False) -> Image:
    """``benchlab/wrk:<hash>``: the local wrk binary and its libraries, FROM scratch."""
    tag, wrk, libraries = _wrk()
    found = None if force else _find(client, tag)
    if found is not None:
        return _existing(found, tag)
    with tempfile.TemporaryDirectory(prefix="benchlab-wrk-") as scratch:
        context = Path(scratch)
        rootfs = context / "rootfs"
        (rootfs / "usr" / "bin").mkdir(parents=True)
        shutil.copy2(wrk, rootfs / "usr" / "bin" / "wrk")
        _rootfs_libraries(rootfs, libraries)
        _tmp_dir(rootfs)
        (rootfs / "bench").mkdir()
        (context / DOCKERFILE).write_text(SCRATCH_DOCKERFILE.format(path="/usr/bin"))
        return _build(client, context, tag, labels={"benchlab.image": "wrk"})


# --- the command line: benchlab image base|servers|wrk ------------------------------------------------------
