"""One run: start the server, verify its answer, warm it up, measure, stop it, and store the record.

A run counts only when everything in it went right: a server that died during the load, or a load tool
that was killed, raises an error naming what happened, so the caller records a failed run rather than
numbers from a broken one.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import http.client
import json
import secrets
import shutil
import sys
import time
import urllib.parse
from pathlib import Path

from ..errors import LoadError, ServerError, VerifyError, tail
from ..store import locks
from ..store.results import Run, save
from . import backends, drivers, jars, metadata, servers, variants, window
from .backends.base import http_get
from .spec import RunSpec
from .warmup import warm_up


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def verify(url: str, scenario: servers.Scenario, *, timeout: float = 10.0) -> tuple[int, dict, bytes]:
    """Send the scenario's request once; raise :class:`VerifyError` showing what came back if it is wrong."""
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:  # Server.from_url and the backends make none such
        raise VerifyError(f"verify {url}: the url names no host; give http://HOST:PORT/PATH")
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    headers = {"Content-Type": scenario.content_type} if scenario.content_type else {}
    try:
        conn.request(scenario.method, scenario.path, body=scenario.body, headers=headers)
        response = conn.getresponse()
        body = response.read()
        status, response_headers = response.status, dict(response.getheaders())
    except OSError as exc:
        raise VerifyError(f"verify {scenario.method} {url}{scenario.path}: no answer ({exc})") from None
    finally:
        conn.close()
    problem = scenario.check(status, body)
    if problem:
        shown = body[:200].decode(errors="replace")
        raise VerifyError(
            f"verify {scenario.method} {url}{scenario.path}: {problem}; got {status} with body {shown!r} "
            "- check the scenario and the server's log"
        )
    return status, response_headers, body


def _server_info(url: str, server: servers.Server) -> dict:
    """What a built-in server says of itself (``GET /info``, a JSON object), read straight from it with a
    size limit; an answer that is not a JSON object is ``{}`` with a note, never an error of the run."""
    if not server.builtin:
        return {"server": server.name, "server_version": None}
    try:
        status, body = http_get(url, "/info", timeout=10)
        info = json.loads(body) if status == 200 else None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return {"server": server.flavour or server.name, "server_version": None, "note": f"GET /info failed: {exc}"}
    if not isinstance(info, dict):
        shown = f"status {status}" if status != 200 else f"a JSON {type(info).__name__}"
        return {"note": f"GET /info answered {shown}, not a JSON object: nothing read from it"}
    return info


class _Attached:
    """A server benchlab did not start (Server.from_url): nothing to sample or stop."""

    def __init__(self, server: servers.Server):
        self.url = server.url
        self.startup_ms = None
        self.metadata = {"attached": True}

    def probe(self):
        return (None, None)

    def alive(self) -> bool:
        return True

    def stop(self) -> None:
        pass


def _died(spec: RunSpec, instance, log_path: Path) -> ServerError:
    code = instance.metadata.get("exit_code")
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    return ServerError(
        f"{spec.server.name} died during the load (exit {code if code is not None else 'unknown'}): this run "
        f"does not count\n  last lines of {log_path}:\n{tail(log, 12)}"
    )


def new_run_id(spec: RunSpec) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{spec.server.name}-{spec.scenario.name}-c{spec.load.connections}-{secrets.token_hex(2)}"


def measure(spec: RunSpec, run_dir: Path, *, run_id: str, repeat: int = 1, suite: str | None = None,
            label: str | None = None, key: str | None = None, on_phase=None, instance=None) -> Run:
    """Start the server, verify, warm up, measure, stop; store and return the :class:`Run`.

    The server is stopped however this ends. A :class:`BenchlabError` propagates after cleanup; the
    caller decides whether to record a failed run. A given ``instance`` (an already started server) is
    used as it is and left running. The run holds its cores, the server's and the load tool's, against
    every other benchlab process on this machine (:func:`benchlab.store.locks.cores`: it waits for them).
    """
    return fork(spec, [(Path(run_dir), run_id)], repeat=repeat, suite=suite, label=label, key=key,
                on_phase=on_phase, instance=instance)[0]


def fork(spec: RunSpec, windows: list[tuple[Path, str]], *, repeat: int = 1, suite: str | None = None,
         label: str | None = None, key: str | None = None, on_phase=None, instance=None, on_slice=None,
         echo=None) -> list[Run]:
    """One fork: start the server, verify and warm it once, then measure one window per ``(folder, run
    id)`` of ``windows``, back to back in the same process, each stored as its own :class:`Run` (its
    metrics, histogram and samples) as soon as it ends. The runs share a ``fork`` name; the first holds
    the warm-up's curve. A server that dies in window k raises after windows 1..k-1 are stored. ``on_slice`` is
    called with each warm-up slice as it ends, ``echo`` with the line that says it waits for the cores."""
    pinned = () if spec.backend_options.get("docker_host") else (*spec.server_cpus, *spec.load_cpus)
    with locks.cores(pinned, echo=echo) as waited:
        one = Fork(spec, windows, repeat=repeat, suite=suite, label=label, key=key, on_phase=on_phase,
                   instance=instance, waited=waited, on_slice=on_slice)
        with one:
            one.open()
            return [one.window() for _ in windows]


class Fork:
    """One server process, warmed once, and its measured windows: :meth:`open` starts, verifies and warms it,
    each :meth:`window` measures and stores the next of ``windows``, and leaving the ``with`` block stops
    it (an ``instance`` given is used as it is and left running). Windows may come back to back
    (:func:`fork`) or between other forks' windows (:mod:`benchlab.running.rounds`)."""

    def __init__(self, spec: RunSpec, windows: list[tuple[Path, str]], *, repeat: int = 1, suite=None, label=None,
                 key=None, on_phase=None, instance=None, waited: float = 0.0, on_slice=None):
        self.spec, self.windows = spec, [(Path(d), i) for d, i in windows]
        self.repeat, self.suite, self.label, self.key = repeat, suite, label, key
        self.phase = on_phase or (lambda name: None)
        self.on_slice = on_slice  # each warm-up slice as it ends, e.g. for a live chart
        self.instance, self.owned, self.waited = instance, instance is None, waited
        self.records: list[Run] = []
        self.jvm = None
        self.name = ""  # the fork's name: its first run id and when it started
        self.started_at = now()

    def open(self) -> None:
        """Start (unless given), verify and warm the server."""
        spec = self.spec
        for run_dir, _ in self.windows:
            run_dir.mkdir(parents=True, exist_ok=True)
        first_dir, first_id = self.windows[0]
        self.driver = drivers.get(spec.driver, spec.load.model)
        spec.build()
        self.started_at = now()
        self.name = f"{first_id}@{self.started_at}"  # unique even where two folders hold the same run ids
        self.backend = backends.get(spec.backend, **spec.backend_options)
        self.log_path = first_dir / "server.log"
        began = time.monotonic()
        self.phase("start")
        if self.instance is None:
            self.instance = _start(spec, self.backend, first_id, self.log_path)
        servers.check_loopback(self.instance.url, allow_remote=spec.allow_remote)
        self.phase("verify")
        self.meta = _verified(spec, self.instance, self.driver)
        self.runner = self.backend.load_runner()  # docker may run the load tool in its own container
        self.phase("warmup")
        self.jvm = self.instance.counters() if hasattr(self.instance, "counters") else None  # None: not a JVM
        self.warm_began = time.monotonic()
        self.warmed = _warm(spec, self.instance, self.runner, self.jvm, first_dir, on_slice=self.on_slice)
        self.meta["jvm"] = ({"collectors": self.jvm.collectors, "policy": self.jvm.policy, "perfdata": self.jvm.path}
                            if self.jvm is not None else None)
        self.fork_s = time.monotonic() - began  # what the fork cost before it could measure

    def window(self) -> Run:
        """Measure and store the next window. A window that was disturbed (:data:`window.DISTURBED`: other
        processes on its cores, steal, a dip) is set aside as ``retaken`` and measured again in this fork, at most
        ``spec.retakes`` times; a server that died meanwhile raises :class:`ServerError`."""
        iteration = len(self.records) + 1
        run_dir, run_id = self.windows[iteration - 1]
        step = "measure" if len(self.windows) == 1 else f"measure {iteration}/{len(self.windows)}"
        retaken: list[str] = []
        for attempt in range(self.spec.retakes + 1):
            self.phase(step if attempt == 0 else f"{step} (retake {attempt})")
            record = self._take(run_dir, run_id, iteration)
            why = window.disturbed(record.row())
            if not why or attempt == self.spec.retakes:
                break
            retaken.append(self._set_aside(record, attempt + 1, why))
        if retaken:
            record = dataclasses.replace(record, metadata={**record.metadata, "retook": retaken})
        save(record, run_dir)
        self.records.append(record)
        return record

    def _take(self, run_dir: Path, run_id: str, iteration: int) -> Run:
        """One window measured into ``run_dir``, its record built (not yet stored)."""
        spec = self.spec
        window_started = now()  # the window's own; its fork's start is in its first window's metadata
        try:
            if not self.instance.alive():  # it may have died while other forks had the load
                raise _died(spec, self.instance, self.log_path)
            measured = window.measure(spec, self.driver, self.instance, self.runner, self.jvm, run_dir,
                                      waited=self.waited)
        except LoadError:
            if not self.instance.alive():  # the load tool failed because the server had died: say that
                raise _died(spec, self.instance, self.log_path) from None
            raise
        self.waited = 0.0  # the wait for the cores came before the first window
        if not self.instance.alive():
            raise _died(spec, self.instance, self.log_path)
        metrics = {**measured.metrics, "startup_ms": self.instance.startup_ms, "warmup_s": self.warmed["seconds"],
                   "warm": self.warmed["steady"], "warmup_class": self.warmed.get("class"),
                   "jit_quiet_s": self.warmed.get("jit_quiet_s"), "fork_s": round(self.fork_s, 3)}
        return Run(id=run_id, params={**spec.params(self.repeat), "iteration": iteration, "fork": self.name},
                   metrics=metrics, samples=tuple(measured.samples), counters=tuple(measured.counters),
                   machine=tuple(measured.machine),
                   metadata=_window_metadata(self.meta, self.backend, self.instance, self.warmed, measured.cores,
                                             first=iteration == 1, fork_started_at=self.started_at),
                   suite=self.suite, label=self.label, key=self.key or spec.cell_key(),
                   started_at=window_started, finished_at=now(), files=_files(run_dir), directory=str(run_dir))

    def _set_aside(self, record: Run, attempt: int, why: list[tuple[str, str]]) -> str:
        """Keep a disturbed window beside its fork's windows as ``retaken`` (its folder renamed), so the retake
        has the folder; say so in one line. Returns its id."""
        run_dir = Path(record.directory or "")
        aside_id = f"{record.id}-retaken{attempt}"
        aside = run_dir.with_name(aside_id)
        if aside.exists():
            shutil.rmtree(aside)
        run_dir.rename(aside)
        run_dir.mkdir()
        kept = dataclasses.replace(record, id=aside_id, status="retaken", directory=str(aside),
                                   metadata={**record.metadata, "retaken": {"attempt": attempt, "for": record.id,
                                                                            "flags": [flag for flag, _ in why]}})
        save(kept, aside)
        print(f"benchlab: {record.id} was disturbed ({why[0][1].split(':')[0]}): measuring it again "
              f"(retake {attempt} of at most {self.spec.retakes})", file=sys.stderr, flush=True)
        return aside_id

    def close(self) -> None:
        """Stop the server (if this fork started it) and let go of its counters; again, it does nothing."""
        jvm, self.jvm = self.jvm, None
        if jvm is not None:
            jvm.close()
        if self.owned and self.instance is not None:
            instance, self.instance = self.instance, None
            self.phase("stop")
            instance.stop()

    def __enter__(self) -> Fork:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _start(spec: RunSpec, backend, run_id: str, log_path: Path):
    """The fork's server: attached to when it is a URL benchlab does not own, else started by the backend."""
    if not spec.server.starts:
        return _Attached(spec.server)
    return backend.start(spec.server, spec.launch(run_id, log_path))


def _verified(spec: RunSpec, instance, driver) -> dict:
    """Verify the server's answer and its settings; return the fork's metadata, shared by all its windows.

    A server that runs other settings than the spec asks for fails the run, recorded with what it said it runs.
    """
    status, headers, body = verify(instance.url, spec.scenario)
    info = _server_info(instance.url, spec.server)
    checks = variants.check(spec.server.settings, info)
    wrong = variants.mismatch(spec.server.name, checks)
    if wrong:
        raise ServerError(wrong, metadata={"server": info, "settings": checks})
    meta = metadata.collect(java=spec.server_java if spec.server.jvm else "java", driver=spec.driver)
    meta.update(
        server=info,
        accept_queue=(metadata.collect_accept_queue(info, spec.jvm_opts) if spec.server.jvm
                      else {}),
        settings=checks,
        launch=_launch_metadata(spec),
        verify={"status": status, "bytes": len(body), "content_type": headers.get("Content-Type")},
        shared_cores=bool(set(spec.server_cpus) & set(spec.load_cpus)),
        latency_corrected=driver.corrected,
    )
    return meta


def _warm(spec: RunSpec, instance, runner, jvm, workdir: Path, *, on_slice=None) -> dict:
    """Warm the server up once for the whole fork; a server that died meanwhile fails the run."""
    warmed = warm_up(instance.url, spec.scenario, spec.load, cpus=spec.load_cpus, workdir=workdir,
                     runner=runner, perfdata=jvm, on_slice=on_slice)
    if not instance.alive():
        raise ServerError(f"{spec.server.name} died during the warm-up")
    return warmed


def _window_metadata(meta: dict, backend, instance, warmed: dict, on_cores: dict, *, first: bool,
                     fork_started_at: str) -> dict:
    """One window's metadata: the fork's, the backend's and the instance's, and what shared its cores; the
    fork's first window says when the fork started (its wall time: :func:`benchlab.analysis.wall.span`)."""
    return {
        **meta,
        "backend": {**backend.metadata(), **{k: v for k, v in instance.metadata.items() if k != "argv"},
                    "argv": instance.metadata.get("argv")},
        "cores": on_cores,  # what else was busy on the run's cores while it measured (benchlab.store.locks)
        # the fork's warm-up; its curve is kept once, in the fork's first window
        "warmup": warmed if first else {k: v for k, v in warmed.items() if k != "slices"},
        "server_alive_after_load": True,
        **({"fork_started_at": fork_started_at} if first else {}),
    }


def _launch_metadata(spec: RunSpec) -> dict | None:
    """How a built-in server was launched locally: from its AOT cache, its CDS archive or the plain jar."""
    if not spec.server.jvm or spec.backend != "local":
        return None
    if spec.server.settings.aot:
        return _aot_metadata(spec)
    return jars.prepare_cds(spec.server, spec.server_java).metadata() if spec.cds else {"launch": "jar"}


def _aot_metadata(spec: RunSpec) -> dict:
    """What a run from an AOT cache records; ``-XX:AOTMode=on`` made its start prove the cache was used."""
    cache = jars.prepare_aot(spec.server, spec.server_java)
    return {"launch": "aot", "aot_cache": cache.archive, "aot_verified": "-XX:AOTMode=on: the JVM refuses to "
            "start from a cache it cannot use", "cds_archive": None, "cds_warning": None}


def _files(run_dir: Path) -> tuple[str, ...]:
    return tuple(sorted(p.name for p in run_dir.iterdir() if p.is_file() and p.name != "run.json"))


def failed(spec: RunSpec, run_dir: Path, *, run_id: str, repeat: int, suite: str, key: str, error: BaseException,
           started_at: str, label, iteration: int = 1) -> Run:
    """Store and return the record of a run that failed: no metrics, the error, the files it left."""
    record = Run(id=run_id, params={**spec.params(repeat), "iteration": iteration}, metrics={},
                 metadata=getattr(error, "metadata", {}), status="failed",
                 error=f"{type(error).__name__}: {error}", suite=suite, label=label, key=key,
                 started_at=started_at, finished_at=now(), files=_files(run_dir), directory=str(run_dir))
    save(record, run_dir)
    return record
