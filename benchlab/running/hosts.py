"""Rounds on several machines at once: ``compare(hosts=[...])``, each host a docker engine (or a pair of them).

A round's forks share the machine's moment, which is why the statistics pair two servers by round. A round that
ran whole on another machine of the same kind is the same kind of block, so each host takes the next round from
one queue, in its own thread, and runs it whole: a round never spans two hosts, and its number stays the one the
schedule gave it, unique across hosts. Every run records its ``host`` (a run parameter, ``Suite.runs["host"]``).

Before any round starts every host must answer and hold the server images (:func:`check`); a host whose engine
stops answering mid-way has the round it was running cleared and put back in the queue, and the other hosts run
it (:func:`distribute`); the rounds it finished are kept. See docs/scale-out.md.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from ..errors import BenchlabError, ServerError, UsageError
from . import stored
from .options import Comparison
from .spec import RunSpec

log = logging.getLogger(__name__)

#: What a host's engine may be: a socket, TCP (with TLS: DOCKER_TLS_VERIFY and DOCKER_CERT_PATH) or ssh.
SCHEMES = ("unix://", "tcp://", "ssh://", "npipe://")
#: How long a host may take to answer a ping before it counts as stopped.
PING_TIMEOUT = 10.0


@dataclass(frozen=True)
class Host:
    """A machine: its name as given, the engine its servers run on, and its load engine (a pair), if any."""

    name: str
    server: str
    load: str | None = None

    @property
    def engines(self) -> tuple[str, ...]:
        return (self.server,) if self.load is None else (self.server, self.load)


def parse(hosts) -> list[Host]:
    """The hosts as given: engine urls, or pairs ``server-engine+load-engine``; all pairs or none.

    >>> parse(["unix:///a.sock", "ssh://me@b+ssh://me@c"][:1])
    [Host(name='unix:///a.sock', server='unix:///a.sock', load=None)]
    """
    given = [hosts] if isinstance(hosts, str) else list(hosts)
    if not given or not all(isinstance(h, str) for h in given):
        raise UsageError(f"hosts is a list of docker engine urls, e.g. hosts=['unix:///run/benchlab-docker/"
                         f"benchlab.sock', 'ssh://me@bench2'], not {hosts!r}")
    found = []
    for name in given:
        server, plus, load = name.partition("+")
        for url in (server, load) if plus else (server,):
            if not url.startswith(SCHEMES):
                raise UsageError(f"host {name!r}: {url!r} is not a docker engine url; write unix://, tcp:// or "
                                 "ssh://, or a pair server-engine+load-engine")
        found.append(Host(name, server, load if plus else None))
    if len({h.name for h in found}) != len(found):
        raise UsageError("hosts names one host twice: each host is a machine, named once")
    if len({h.load is None for h in found}) > 1:
        raise UsageError("hosts mixes pairs (server-engine+load-engine) and single engines: give every host as a "
                         "pair or none (a load in a container is another cell)")
    return found


def prepare(comparison: Comparison) -> tuple[Comparison, list[Host]]:
    """``(comparison, hosts)``: the hosts checked (their form, each answers) and the comparison's runs set on the
    docker backend at the first host; without hosts, the comparison as it is and no host."""
    if comparison.hosts is None:
        return comparison, []
    machines = parse(comparison.hosts)
    run = comparison.run
    if run.docker_host or run.load_docker_host:
        raise UsageError("hosts name the docker engines: drop docker_host and load_docker_host, or drop hosts")
    for machine in machines:
        for url in machine.engines:
            answers(machine, url, allow_remote=run.allow_remote)
    first = machines[0]
    run = dataclasses.replace(run, backend="docker", docker_host=first.server, load_docker_host=first.load,
                              load_in_container=run.load_in_container or first.load is not None)
    return dataclasses.replace(comparison, run=run), machines


def answers(machine: Host, url: str, *, allow_remote: bool) -> None:
    """The engine ``url`` of ``machine`` is one it may use, and answers a ping; else a one-line UsageError."""
    from .backends.docker import engine

    engine.check_engine(url, allow_remote=allow_remote)
    try:
        engine.connect(url, timeout=PING_TIMEOUT).close()
    except BenchlabError as exc:
        reason = str(exc).partition("(")[2].partition(")")[0] or str(exc)
        raise UsageError(f"host {machine.name} does not answer ({reason}): start its docker engine (docs/"
                         "scale-out.md), or leave it out of hosts") from None


def check(machines: list[Host], schedule: list[tuple[int, RunSpec]]) -> None:
    """Every host holds the image of every server of the ``schedule`` (and wrk's, for a load in a container), so no
    round starts on a host that would build or pull: a one-line UsageError naming the host and the fix."""
    from .backends.docker import engine, native_images

    specs = {spec.server.name: spec for _, spec in schedule}
    for machine in machines:
        client = engine.connect(machine.server, timeout=PING_TIMEOUT)
        try:
            for name, spec in specs.items():
                missing = native_images.lacking(client, spec.server, base_image=spec.docker.base_image,
                                                wrk=bool(spec.docker.load_in_container) and machine.load is None)
                if missing:
                    raise UsageError(f"host {machine.name} lacks the image {missing[0]} of {name}: build it there "
                                     f"(benchlab image all --docker-host {machine.server}) or copy it (docker save "
                                     f"{missing[0]} | docker -H {machine.server} load)")
        finally:
            client.close()
        if machine.load is not None and any(spec.docker.load_in_container for spec in specs.values()):
            _wrk_on(machine)


def _wrk_on(machine: Host) -> None:
    from .backends.docker import engine, images

    client = engine.connect(machine.load, timeout=PING_TIMEOUT)
    try:
        tag = images._wrk()[0]
        if images._find(client, tag) is None:
            raise UsageError(f"host {machine.name} lacks the image {tag} on its load engine: build it there "
                             f"(benchlab image wrk --docker-host {machine.load})")
    finally:
        client.close()


def on(spec: RunSpec, machine: Host) -> RunSpec:
    """``spec`` run on ``machine``: its engines, and the host it records."""
    load = spec.docker.load_docker_host if machine.load is None else machine.load
    docker = dataclasses.replace(spec.docker, docker_host=machine.server, load_docker_host=load)
    return dataclasses.replace(spec, docker=docker, host=machine.name)


def alive(machine: Host) -> bool:
    """Whether every engine of ``machine`` still answers."""
    try:
        for url in machine.engines:
            answers(machine, url, allow_remote=True)
    except UsageError:
        return False
    return True


class _Queue:
    """The rounds left, shared by the hosts' threads; a round taken is ``running`` until kept or put back."""

    def __init__(self, rounds):
        self.left = deque(rounds)
        self.running = 0
        self.lock = threading.Condition()
        self.stop = False
        self.errors: list[BaseException] = []
        self.lost: list[Host] = []

    def take(self, machine: Host, plan):
        """The next round for ``machine`` as ``(repeat, specs, planned)``, waiting while the rounds under way on
        other hosts may come back; None when there is none left (or the comparison stops)."""
        with self.lock:
            while not self.stop and not self.left and self.running:
                self.lock.wait()
            if self.stop or not self.left:
                return None
            repeat, specs = self.left.popleft()
            planned = plan(repeat, [on(spec, machine) for spec in specs])
            if planned is None:  # the precision rule has what it asked for: no round after this one
                self.left.clear()
                return None
            self.running += 1
            return repeat, specs, planned

    def done(self, *, back=None, error: BaseException | None = None, lost: Host | None = None) -> None:
        with self.lock:
            self.running -= 1
            if back is not None:
                self.left.appendleft(back)
            if lost is not None:
                self.lost.append(lost)
            if error is not None:
                self.errors.append(error)
                self.stop = True
            self.lock.notify_all()


class _Locked:
    """The progress bar, told by one host's thread at a time."""

    def __init__(self, bar, lock):
        self.bar, self.lock = bar, lock

    def __getattr__(self, name):
        method = getattr(self.bar, name)

        def guarded(*args, **kwargs):
            with self.lock:
                return method(*args, **kwargs)

        return guarded


def distribute(machines: list[Host], rounds, *, plan, play, keep, pool, bar) -> None:
    """Run ``rounds`` (``[(repeat, specs), ...]``) on ``machines``, a thread each, every round whole on one host.

    ``plan(repeat, specs)`` gives a round's ``[(spec, windows), ...]`` or None to stop (called one host at a time);
    ``play(planned, repeat=, pool=, bar=)`` runs it, yielding each fork's runs; ``keep(runs)`` takes a finished
    round's runs (one host at a time); ``pool()`` is a host's :class:`~benchlab.running.pool.Pool`. A host that
    stops answering has its round cleared and run on the others; when none is left, a ServerError says which
    rounds were not run (the finished ones are stored, and a second call resumes).
    """
    queue = _Queue(rounds)
    guarded = _Locked(bar, threading.Lock())
    threads = [threading.Thread(target=_work, args=(m, queue, plan, play, keep, pool, guarded),
                                name=f"benchlab-host-{i}") for i, m in enumerate(machines)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException:
        log.warning(f"benchlab: stopping after the rounds under way on {len(machines)} hosts")
        with queue.lock:
            queue.stop = True  # the rounds under way end; none starts after them
            queue.lock.notify_all()
        for thread in threads:
            thread.join()
        raise
    if queue.errors:
        raise queue.errors[0]
    if queue.left:
        raise ServerError(f"every host stopped answering ({', '.join(h.name for h in queue.lost)}): rounds "
                          f"{', '.join(str(r) for r, _ in queue.left)} were not run; the finished rounds are "
                          "stored, and compare() again with the same results_dir resumes")


def _work(machine: Host, queue: _Queue, plan, play, keep, pool, bar) -> None:
    """One host's thread: :func:`_rounds_on`; whatever else goes wrong in it stops the comparison, and is raised by
    :func:`distribute` (a thread's own exception would be lost, and the other hosts would wait for its round)."""
    try:
        _rounds_on(machine, queue, plan, play, keep, pool, bar)
    except BaseException as exc:  # raised by run(), in the caller's thread
        with queue.lock:
            queue.errors.append(exc)
            queue.stop = True
            queue.lock.notify_all()


def _rounds_on(machine: Host, queue: _Queue, plan, play, keep, pool, bar) -> None:
    """The next round, whole, until none is left or the host stops answering."""
    with pool() as shared:
        while (taken := queue.take(machine, plan)) is not None:
            repeat, specs, planned = taken
            _claim(planned, machine)
            runs, failure = [], None
            try:
                for done in play(planned, repeat=repeat, pool=shared, bar=bar):
                    runs.extend(done)
            except Exception as exc:  # an engine that stopped fails in the SDK's words, not benchlab's
                failure = exc
            if (failure is not None or any(r.status == "failed" for r in runs)) and not alive(machine):
                clear(planned)
                log.warning(f"benchlab: host {machine.name} stopped answering during round {repeat}: the round runs "
                            "again on the other hosts")
                queue.done(back=(repeat, specs), lost=machine)
                return
            if failure is None:
                try:
                    with queue.lock:
                        keep(runs)
                except Exception as exc:  # on_run's, say: the comparison stops, as it would on one machine
                    failure = exc
            queue.done(error=failure)
            if failure is not None:
                return


def clear(planned) -> None:
    """Remove every window a round stored (and the windows its retakes set aside): it runs again whole."""
    for _, windows in planned:
        for run_dir, _ in windows:
            for folder in (Path(run_dir), *stored.aside(Path(run_dir))):
                shutil.rmtree(folder, ignore_errors=True)


def _claim(planned, machine: Host) -> None:
    """A round stored in part by another host (an earlier call's, interrupted) runs again whole here; a round
    stored whole is kept, whichever host ran it."""
    found = []
    for _, windows in planned:
        for run_dir, _ in windows:
            done = stored.finished(Path(run_dir) / "run.json")
            found.append(None if done is None else done.params.get("host", ""))
    hosts = {h for h in found if h is not None}
    if None in found and hosts - {machine.name}:
        clear(planned)
