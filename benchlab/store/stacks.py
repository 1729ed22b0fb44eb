"""Folded stacks (Brendan Gregg's collapsed format), as a profiled window stores them: a line per stack, its frames
root first joined by ``;``, then a space and its sample count. The profiler writes them
(:mod:`benchlab.running.profiler`), the analysis reads them (:mod:`benchlab.analysis.profiles`).
"""

from __future__ import annotations


def parse(text: str) -> dict[str, int]:
    """Folded stacks from collapsed text: a line per stack, its count after the last space; a stack written twice
    is added up (async-profiler writes one twice where its frames differ only in a type the names do not show,
    interpreted or compiled). ValueError, naming the line, for one that is not a stack and a whole count.

    >>> parse("a;b 3\\na;c 1\\na;b 2\\n")
    {'a;b': 5, 'a;c': 1}
    """
    found: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            raise ValueError(f"line {number} is not a stack and its sample count")
        found[stack] = found.get(stack, 0) + int(count)
    return found
