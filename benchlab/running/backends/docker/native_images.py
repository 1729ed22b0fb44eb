"""The reference servers' images, FROM scratch and offline: the static Go binary alone, and this machine's nginx
with its libraries and echo module, as the Java base carries the JDK's glibc.

    benchlab/go-nethttp:<hash>   servers/go's binary (CGO_ENABLED=0: nothing else)
    benchlab/nginx:<hash>        /usr/sbin/nginx, its echo module, the libraries ldd names, and the two lines of
                                 /etc/passwd and /etc/group its workers switch to (nobody, nogroup)

Each is tagged by a hash of its inputs, so it is built only when they change; :func:`build` and
:func:`build_all` give any built-in server its image, a Spring one through :mod:`.images`.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ....errors import ToolMissing
from ... import natives, process, servers
from . import images
from .containers import FOLDER_IN_IMAGE

#: What nginx's workers need to switch to the user and group nginx is built with, and root for the master.
PASSWD = "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
GROUP = "root:x:0:\nnogroup:x:65534:\nnobody:x:65534:\n"


def _rootfs(files: dict[str, Path | str], libraries: list[Path], context: Path) -> None:
    """``context/rootfs`` with ``files`` (a path in the image: a host file or a text), the libraries at their
    paths, a /tmp and the folder a container's files go to."""
    rootfs = context / "rootfs"
    for inside, source in files.items():
        target = rootfs / inside.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, Path):
            shutil.copy2(source.resolve(), target)
        else:
            target.write_text(source)
    images._rootfs_libraries(rootfs, libraries)
    images._tmp_dir(rootfs)
    (rootfs / FOLDER_IN_IMAGE.lstrip("/")).mkdir(parents=True, exist_ok=True)


def _contents(server: servers.Server) -> tuple[dict[str, Path | str], list[Path], str]:
    """What the reference's image holds: its files, the host libraries they load, and its PATH."""
    if server.name == "nginx":
        nginx = Path(process.require("nginx", natives.NGINX_INSTALL))
        module = Path(natives.echo_module())
        files: dict[str, Path | str] = {"/usr/sbin/nginx": nginx, str(module): module, "/etc/passwd": PASSWD,
                                        "/etc/group": GROUP}
        return files, images.shared_libraries([nginx, module]), "/usr/sbin"
    server.build()
    return {natives.GO_IN_IMAGE: natives.go_binary()}, [], "/"


def _native(server: servers.Server) -> tuple[str, dict[str, Path | str], list[Path], str]:
    """A reference's image tag (a hash of its inputs), its files, libraries and Dockerfile."""
    files, libraries, path = _contents(server)
    dockerfile = images.SCRATCH_DOCKERFILE.format(path=path)
    parts = [f"{k}={v if isinstance(v, str) else ''}" for k, v in sorted(files.items())]
    tag = f"{server.image}:" + images._digest(dockerfile, *parts, *(v for v in files.values() if isinstance(v, Path)),
                                             *(str(lib) for lib in libraries), *(lib.resolve() for lib in libraries))
    return tag, files, libraries, dockerfile


def lacking(client, server: servers.Server | str, *, base_image: str | None = None, wrk: bool = False) -> list[str]:
    """The image tags a run of ``server`` needs that ``client``'s engine lacks (with ``wrk``, wrk's too); builds
    nothing: ``compare(hosts=...)`` asks each host before a round starts.

    Example
    -------
    >>> from benchlab.running.backends.docker import connect
    >>> lacking(connect(), "spring-jetty")   # doctest: +SKIP
    []
    """
    server = servers.get(server)
    tags = [images.server_tag_on(client, server, base_image=base_image) if server.jvm else _native(server)[0]]
    tags += [images._wrk()[0]] if wrk else []
    return [tag for tag in tags if images._find(client, tag) is None]


def build_native(client, server: servers.Server | str, *, force: bool = False) -> images.Image:
    """The image of a reference server (nginx or go-nethttp), built if missing.

    Example
    -------
    >>> from benchlab.running.backends.docker import connect
    >>> build_native(connect(), "go-nethttp").tag   # doctest: +SKIP
    'benchlab/go-nethttp:5c1d0e9a7b3f2a41'
    """
    server = servers.get(server)
    tag, files, libraries, dockerfile = _native(server)
    found = None if force else images._find(client, tag)
    if found is not None:
        return images._existing(found, tag)
    with tempfile.TemporaryDirectory(prefix=f"benchlab-{server.name}-") as scratch:
        context = Path(scratch)
        _rootfs(files, libraries, context)
        (context / images.DOCKERFILE).write_text(dockerfile)
        return images._build(client, context, tag, labels={"benchlab.image": "server", "benchlab.server": server.name})


def build(client, server: servers.Server | str, *, base_image: str | None = None, force: bool = False) -> images.Image:
    """The image of any built-in server: a Spring one on ``base_image`` (:func:`.images.build_server`), a
    reference FROM scratch (:func:`build_native`)."""
    server = servers.get(server)
    if server.jvm:
        return images.build_server(client, server, base_image=base_image, force=force)
    return build_native(client, server, force=force)


def build_all(client, *, base_image: str | None = None, force: bool = False) -> dict[str, images.Image | str]:
    """Every built-in server's image, each built only if its inputs changed; a reference whose program is not
    installed here (nginx, the Go toolchain) is skipped, with the line that says how to install it."""
    built: dict[str, images.Image | str] = {}
    for name in servers.BUILTINS:
        try:
            built[name] = build(client, name, base_image=base_image, force=force)
        except ToolMissing as missing:
            if name not in servers.REFERENCES:
                raise
            built[name] = f"skipped: {missing}"
    return built
