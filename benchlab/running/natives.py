"""The native reference servers' parts: nginx's configuration and version, and the Go server's build.

Two servers that are not JVMs are built in beside the Spring ones, to show how much of the machine a Spring
server uses (:mod:`benchlab.analysis.ceiling`): ``nginx``, Debian's package, whose configuration benchlab
writes for each fork, and ``go-nethttp``, ``servers/go/``, one module on Go's standard library that
``benchlab build`` compiles (skipped when unchanged, as the jars are). Both serve the scenarios of
:mod:`benchlab.running.scenarios` with the same bodies.

nginx answers ``echo`` and ``sleep`` through the echo module Debian ships (``libnginx-mod-http-echo``):
``echo_read_request_body`` and ``echo_request_body`` send a POST's body back, and ``echo_sleep`` waits on one
of nginx's timers, as WebFlux does, without holding a worker. Plain nginx can do neither (a ``return`` never
reads the body; nothing in it waits).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from .. import home
from ..errors import BuildError, LoadError, ToolMissing, tail
from . import process
from .protocols import HTTP1, Listener
from .scenarios import HELLO_BODY, JSON_BODY, SLEEP_MS

NGINX_INSTALL = "apt-get install nginx libnginx-mod-http-echo"
GO_INSTALL = "apt-get install golang-go (or put Go's bin/ on PATH, or set GO=/path/to/go)"
#: Where Go's official tarball puts the toolchain: looked at when ``go`` is not on PATH.
GO_FALLBACK = "/usr/local/go/bin/go"
GO_BINARY = "go-nethttp"
#: Seconds ``go build`` may take: a first build compiles the standard library's net/http.
GO_TIMEOUT = 600.0
_STAMP = ".benchlab-build"

# --- nginx ---------------------------------------------------------------------------------------------------

#: nginx's configuration for one fork. Its folder holds the pid file and the temporary paths; the error log goes
#: to stderr, which the backend keeps as the run's server.log. One worker per server core (nginx's own advice);
#: no access log, which would cost a write per request; keep-alive connections are never closed by a count, as
#: wrk's never are by the Go server.
NGINX_CONF = """\
# written by benchlab for one fork: nginx -p {folder}/ -c {folder}/nginx.conf -e stderr
load_module "{echo_module}";
worker_processes {workers};
worker_rlimit_nofile 8192;
daemon off;
pid "{folder}/nginx.pid";
error_log stderr notice;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path "{folder}/body";
    proxy_temp_path "{folder}/proxy";
    fastcgi_temp_path "{folder}/fastcgi";
    uwsgi_temp_path "{folder}/uwsgi";
    scgi_temp_path "{folder}/scgi";
    keepalive_requests 1000000;
    # /sleep?ms=N: N milliseconds as the seconds echo_sleep takes (10 -> 0.010, 1234 -> 1.234)
    map $arg_ms $benchlab_ms {{ "" {sleep_ms}; default $arg_ms; }}
    map $benchlab_ms $benchlab_sleep_s {{
        ~^(\\d)$ 0.00$1; ~^(\\d\\d)$ 0.0$1; ~^(\\d\\d\\d)$ 0.$1; ~^(\\d+)(\\d\\d\\d)$ $1.$2;
    }}
    server {{
        listen {address}:{port}{listen};{tls}
        location = /hello {{ default_type "text/plain;charset=UTF-8"; return 200 "{hello}"; }}
        location = /json {{ default_type application/json; return 200 '{json}'; }}
        location = /sleep {{ default_type "text/plain;charset=UTF-8"; echo_sleep $benchlab_sleep_s;
                             echo -n "slept $benchlab_ms ms"; }}
        location = /echo {{ default_type application/octet-stream; echo_read_request_body; echo_request_body; }}
        location = /info {{
            default_type application/json;
            return 200 '{{"server":"nginx","server_version":"$nginx_version","worker_processes":{workers}}}';
        }}
    }}
}}
"""


def nginx_config(*, port: int, address: str, workers: int, folder: str, echo_module: str,
                 listener: Listener = HTTP1) -> str:
    """nginx's configuration for one fork listening on ``address:port`` with ``workers`` worker processes, its pid
    file and temporary paths in ``folder``, serving ``listener``'s protocol (before nginx 1.25 a listener with
    ``http2`` in clear text speaks HTTP/2 only, with prior knowledge).

    >>> text = nginx_config(port=8080, address="127.0.0.1", workers=2, folder="/run/x", echo_module="/m/echo.so")
    >>> "listen 127.0.0.1:8080;" in text and "worker_processes 2;" in text and 'pid "/run/x/nginx.pid";' in text
    True
    >>> "listen 127.0.0.1:8080 http2;" in nginx_config(port=8080, address="127.0.0.1", workers=1, folder="/x",
    ...                                                echo_module="/m", listener=Listener("h2c"))
    True
    """
    listen = (" ssl" if listener.tls else "") + (" http2" if listener.http2 else "")
    tls = (f'\n        ssl_certificate "{listener.cert}"; ssl_certificate_key "{listener.key}";'
           "\n        ssl_protocols TLSv1.3;" if listener.tls else "")
    return NGINX_CONF.format(port=port, address=address, workers=max(1, workers), folder=folder.rstrip("/"),
                             echo_module=echo_module, hello=HELLO_BODY.decode(), json=JSON_BODY.decode(),
                             sleep_ms=SLEEP_MS, listen=listen, tls=tls)


def nginx_argv(folder: str) -> list[str]:
    """nginx in the foreground with the configuration in ``folder``; ``-e stderr`` before the configuration is
    read, so it never opens the package's /var/log/nginx/error.log."""
    folder = folder.rstrip("/")
    return ["nginx", "-p", f"{folder}/", "-c", f"{folder}/nginx.conf", "-e", "stderr"]


def parse_modules_path(configure: str) -> str:
    """The folder of nginx's dynamic modules from ``nginx -V``'s configure arguments.

    >>> parse_modules_path("configure arguments: --prefix=/usr/share/nginx --modules-path=/usr/lib/nginx/modules")
    '/usr/lib/nginx/modules'
    >>> parse_modules_path("configure arguments: --prefix=/opt/nginx")
    '/opt/nginx/modules'
    """
    found = re.search(r"--modules-path=(\S+)", configure)
    if found:
        return found.group(1)
    prefix = re.search(r"--prefix=(\S+)", configure)
    return f"{prefix.group(1) if prefix else '/usr/local/nginx'}/modules"


def echo_module(nginx: str = "nginx") -> str:
    """The path of the echo module of the ``nginx`` on PATH: a :class:`ToolMissing` naming the package when
    nginx or the module is not installed."""
    binary = process.require(nginx, NGINX_INSTALL)
    done = subprocess.run([binary, "-V"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    module = Path(parse_modules_path(done.stderr + done.stdout)) / "ngx_http_echo_module.so"
    if not module.is_file():
        raise ToolMissing(f"nginx's echo module ({module}) is not installed: {NGINX_INSTALL}")
    return str(module)


# --- the Go server -------------------------------------------------------------------------------------------

def go_source() -> Path:
    return home.servers_dir() / "go"


def go_binary() -> Path:
    """Where ``benchlab build`` puts the Go server: ``servers/go/target/go-nethttp``."""
    return go_source() / "target" / GO_BINARY


def go_toolchain() -> str:
    """The ``go`` command: ``$GO`` when set, else ``go`` on PATH, else :data:`GO_FALLBACK`; a
    :class:`ToolMissing` naming how to install it when none is there."""
    given = os.environ.get("GO")
    if given:
        return process.require(given, GO_INSTALL)
    found = shutil.which("go") or (GO_FALLBACK if os.access(GO_FALLBACK, os.X_OK) else None)
    if not found:
        raise ToolMissing(f"go is not installed or not on PATH: {GO_INSTALL}")
    return found


def _go_hash() -> str:
    """A hash of what the binary is built from: go.mod and the .go files."""
    digest = hashlib.sha256()
    for path in sorted(go_source().glob("*")):
        if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def go_current() -> bool:
    """Whether the binary is there and built from the sources as they are now."""
    stamp = go_binary().parent / _STAMP
    return go_binary().is_file() and stamp.is_file() and stamp.read_text().strip() == _go_hash()


def build_go(*, force: bool = False) -> dict:
    """Build the Go server with the Go toolchain, static (CGO_ENABLED=0: it runs FROM scratch in a container);
    skipped when its sources did not change. Returns ``{"built", "seconds", "binary"}``.

    Example
    -------
    >>> benchlab.running.natives.build_go()["binary"].name   # doctest: +SKIP
    'go-nethttp'
    """
    binary = go_binary()
    if not force and go_current():
        return {"built": False, "seconds": 0.0, "binary": binary}
    go = go_toolchain()
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false", "GOTOOLCHAIN": "local",
           "HOME": os.environ.get("HOME") or "/root"}
    argv = [go, "build", "-trimpath", "-o", str(binary), "."]
    began = time.monotonic()
    try:
        done = process.run(argv, timeout=GO_TIMEOUT, cwd=go_source(), env=env)
    except LoadError:
        raise BuildError(f"the Go build did not finish within {GO_TIMEOUT:.0f} s and was stopped: "
                         f"{' '.join(argv)}") from None
    if done.returncode != 0 or not binary.is_file():
        raise BuildError(f"the Go build failed (exit {done.returncode}): {' '.join(argv)}\n"
                         f"{tail(done.stderr + done.stdout, 20)}")
    (binary.parent / _STAMP).write_text(_go_hash() + "\n")
    return {"built": True, "seconds": time.monotonic() - began, "binary": binary}


# --- each reference by its name (benchlab.running.servers.ReferenceServer) --------------------------------------

#: Where the Go server lives in its image (FROM scratch: the binary alone) and where a container's files go.
GO_IN_IMAGE = f"/{GO_BINARY}"


def argv(name: str, port: int, *, address: str, folder: str, container: bool = False,
         listener: Listener = HTTP1) -> list[str]:
    """The command that starts the reference ``name`` on ``address:port``, locally or (``container``) in its image.

    >>> argv("go-nethttp", 8080, address="127.0.0.1", folder="/bench", container=True, listener=Listener("h2c"))
    ['/go-nethttp', '-addr', '127.0.0.1:8080', '-h2c']
    """
    if name == "nginx":
        return nginx_argv(folder)
    tls = ["-cert", str(listener.cert), "-key", str(listener.key)] if listener.tls else []
    return [GO_IN_IMAGE if container else str(go_binary()), "-addr", f"{address}:{port}",
            *(["-h2c"] if listener.protocol == "h2c" else []), *tls]


def files(name: str, port: int, *, address: str, cpus: tuple[int, ...], folder: str,
          listener: Listener = HTTP1) -> dict[str, str]:
    """The files the reference's command reads: nginx's configuration, one worker per core of ``cpus``."""
    if name != "nginx":
        return {}
    return {"nginx.conf": nginx_config(port=port, address=address, workers=len(cpus) or 1, folder=folder,
                                       echo_module=echo_module(), listener=listener)}


def require(name: str) -> None:
    """What the reference needs to start is installed: nginx and its echo module; the Go server built, or the Go
    toolchain that builds it. A :class:`ToolMissing` names the install command."""
    if name == "nginx":
        echo_module()
    elif not go_current():
        go_toolchain()


def build(name: str) -> None:
    """Build the reference when its sources changed: the Go server (nginx is Debian's)."""
    if name != "nginx":
        build_go()
