"""The shared servers of ``restart="never"``: each server started once, kept for all its runs, then stopped.

>>> with Pool(Path("data/results/x"), enabled=False) as pool:
...     pool.started
{}
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..store.files import under
from . import backends
from .backends.base import Instance
from .spec import RunSpec


class Pool:
    """A started server per server name, while the pool is open; none at all when not ``enabled``."""

    def __init__(self, base: Path, *, enabled: bool):
        self.base, self.enabled = base, enabled
        self.started: dict[str, Instance] = {}

    def instance(self, spec: RunSpec) -> Instance | None:
        """The started server for ``spec``'s server, starting it the first time; None when not enabled."""
        if not self.enabled:
            return None
        name = spec.server.name
        if name not in self.started:
            spec.build()
            backend = backends.get(spec.backend, **spec.backend_options)
            launch = spec.launch(f"shared-{name}", under(self.base, f"{name}.server.log"))
            # started outside any run's hold on the cores, so on its own cores only
            self.started[name] = backend.start(spec.server, dataclasses.replace(launch, start_cpus=()))
        return self.started[name]

    def drop(self, name: str) -> None:
        """Stop the server ``name`` after a failed run: a server that failed is not reused."""
        stale = self.started.pop(name, None)
        if stale is not None:
            stale.stop()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        failures = []
        for name in list(self.started):  # every server is stopped, even if stopping one of them fails
            try:
                self.drop(name)
            except Exception as failure:  # noqa: BLE001 - raised below, once all are stopped
                failures.append(failure)
        if failures:
            raise failures[0]
