"""Which cores the server and the load generator get.

Sharing a core makes both numbers mean little, so benchlab pins each side with taskset (or a docker
cpuset). The default splits the cores this process may use in two halves: on 2 cores the server gets
core 0 and the load generator core 1.
"""

from __future__ import annotations

import os

from .errors import UsageError


def available() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def format_cpus(cpus: list[int] | tuple[int, ...]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``, the form taskset and docker take."""
    ranges: list[list[int]] = []  # [first, last] of each run of consecutive cores
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(first) if first == last else f"{first}-{last}" for first, last in ranges)


def expand(text: str) -> list[int]:
    """``"0-2,5"`` -> ``[0, 1, 2, 5]``, without checking that the cores exist (a ValueError if malformed)."""
    cpus: list[int] = []
    for part in str(text).replace(" ", "").split(","):
        if "-" in part:
            low, high = part.split("-")
            cpus.extend(range(int(low), int(high) + 1))
        elif part:
            cpus.append(int(part))
    return cpus


def parse_cpus(value, *, role: str = "server") -> tuple[int, ...]:
    """Cores from ``"0"``, ``"0-3"``, ``"0,2"``, an int or a list of ints; each must exist here."""
    if isinstance(value, bool):
        raise UsageError(f"bad {role}_cpus {value!r}: give cores such as '0', '0-3' or [0, 2]")
    if isinstance(value, int):
        cpus = [value]
    elif isinstance(value, (list, tuple)):
        cpus = list(value)
    else:
        try:
            cpus = expand(value)
        except ValueError:
            raise UsageError(f"bad {role}_cpus {value!r}: give cores such as '0', '0-3' or '0,2'") from None
    if not cpus or any(isinstance(c, bool) or not isinstance(c, int) for c in cpus):
        raise UsageError(f"bad {role}_cpus {value!r}: give cores such as '0', '0-3' or [0, 2]")
    usable = available()
    missing = sorted(set(cpus) - set(usable))
    if missing:
        raise UsageError(
            f"{role}_cpus asks for core {format_cpus(missing)}, which this machine does not have "
            f"(usable cores: {format_cpus(usable)})"
        )
    return tuple(sorted(set(cpus)))


def default_split() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(server cores, load cores): the first half for the server, the rest for the load generator."""
    usable = available()
    if len(usable) == 1:
        return tuple(usable), tuple(usable)
    half = len(usable) // 2
    return tuple(usable[:half]), tuple(usable[half:])


def resolve(server_cpus=None, load_cpus=None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    server_default, load_default = default_split()
    server = parse_cpus(server_cpus, role="server") if server_cpus is not None else server_default
    if load_cpus is not None:
        load = parse_cpus(load_cpus, role="load")
    elif server_cpus is not None:
        rest = tuple(c for c in available() if c not in server)
        load = rest or server
    else:
        load = load_default
    return server, load
