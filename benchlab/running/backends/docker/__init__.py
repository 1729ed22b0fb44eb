"""The docker backend: the server (and, if asked, wrk) in a container with a cpuset and a memory limit.

Everything goes through the docker SDK. Containers use the host's network, so the server binds
127.0.0.1 as it does locally and no port is published. Each container is named ``benchlab-<run id>``
and labelled ``benchlab.run=<run id>`` plus ``benchlab.owner=<hostname>:<pid>:<process start time>``;
a backend that starts removes the labelled containers whose owner process is gone (a killed kernel,
a SIGKILL), and every container it starts itself is removed however the run ends.

The engine is ``docker_host`` (a ``unix://``, ``tcp://`` or ``ssh://`` url), else ``$DOCKER_HOST``,
else the default socket. An engine on another machine runs the server there: the server then binds
that machine's address and the load goes to it, which needs ``allow_remote=True``.
"""

from __future__ import annotations

from .backend import DockerBackend
from .engine import connect

__all__ = ["DockerBackend", "connect"]
