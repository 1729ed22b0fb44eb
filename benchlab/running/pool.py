"""The shared servers of ``restart="never"``: each server started once, kept for all its forks, then stopped.

A server is shared only with a fork that would have started the same one: the key (:meth:`RunSpec.server_key`) is
everything that makes a server different, its name and settings, its cores, JVM options, java, archive, memory,
port and backend, so a ``server_cpus`` factor gets a server per core set. It is started as a fork starts its own
(:func:`benchlab.running.fork.launch`).

>>> with Pool(Path("data/results/x"), enabled=False) as pool:
...     pool.started
{}
"""

from __future__ import annotations

from pathlib import Path

from ..store.files import under
from .backends.base import Instance
from .fork import launch
from .spec import RunSpec


class Pool:
    """A started server per :meth:`RunSpec.server_key`, while the pool is open; none at all when not ``enabled``."""

    def __init__(self, base: Path, *, enabled: bool):
        self.base, self.enabled = base, enabled
        self.started: dict[str, Instance] = {}

    def instance(self, spec: RunSpec) -> Instance | None:
        """The started server for ``spec``, starting it the first time; None when not enabled."""
        if not self.enabled:
            return None
        key = spec.server_key()
        if key not in self.started:
            name = f"shared-{spec.server.name}-{key[:8]}"
            # started outside any fork's hold on the cores, so on its own cores only
            self.started[key] = launch(spec, name, under(self.base, f"{name}.server.log"), start_cpus=())
        return self.started[key]

    def drop(self, spec: RunSpec) -> None:
        """Stop ``spec``'s server after a failed fork: a server that failed is not reused."""
        stale = self.started.pop(spec.server_key(), None)
        if stale is not None:
            stale.stop()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        failures = []
        for key in list(self.started):  # every server is stopped, even if stopping one of them fails
            try:
                stale = self.started.pop(key)
                stale.stop()
            except Exception as failure:  # raised below, once all are stopped
                failures.append(failure)
        if failures:
            raise failures[0]
