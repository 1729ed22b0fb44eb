"""Put compare.ipynb (and sweep.ipynb's header) in the order a reader wants; re-runnable after a merge.

    python3 notebooks/report_order.py

compare.ipynb reads: what was measured (the header), the verdicts, the charts, then the detailed tables
(summary, flags, every run), with the numbers formatted for people (benchlab.present.formatting). The script
works on sections (a markdown cell opening with "## " and the code cells after it), found by their
headings, not by position: a section it does not know (one a merge added) keeps its place after the
section it followed. Running it twice changes nothing.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent

#: The order of compare.ipynb's known sections; the cells before the first "## " heading stay first.
COMPARE_ORDER = ["The runs", "Verdicts", "Throughput", "Latency percentiles", "CPU and memory over the measured phase",
                 "Summary per server", "Flags", "Every run"]

SETUP_IMPORT = "from benchlab import charts, notebook\n"
SETUP_IMPORT_NEW = "from benchlab import charts, formatting, header, notebook\n"

COMPARE_RUNS_PRINT = 'print(f"{suite!r}\\nstored in {suite.path}\\n{note}")'
COMPARE_RUNS_SHOW = ('print(f"{suite!r}, stored in {suite.path}")\n'
                     "header.measured(suite)  # what was measured: servers and versions, load, cores, warm-up, repeats")

INTRO_OLD = "how sure we can be.\n"
INTRO_NEW = ("how sure we can be. The report opens with what was measured and the verdicts, then the charts, then\n"
             "the detailed tables; numbers are formatted for reading (9.02k req/s, latencies in ms, `mean [95% CI]`),\n"
             "and the raw frames, in seconds, are `suite.summary()`, `suite.table()` and `suite.runs`.\n")

VERDICT_CODE = {
    "rps": ('verdicts = suite.verdicts(metric="rps")\n'
            'print("\\n".join(verdicts["verdict"]))  # the headline, one line per server\n'
            "formatting.verdicts(verdicts)"),
    "p99": ('verdicts = suite.verdicts(metric="p99")\n'
            'print("\\n".join(verdicts["verdict"]))  # the headline, one line per server\n'
            "formatting.verdicts(verdicts)"),
}

SUMMARY_MD = """## Summary per server

One row per server and metric: the mean over the repeats with its 95% confidence interval (`ci_method` of
the raw frame says how it was computed), the coefficient of variation (`cv`), and the ratio to the baseline
server with its own interval. Requests/s are shown to three figures (9.02k), latencies in milliseconds.
`flags` lists anything that makes a figure less trustworthy; they are explained below. The raw frame, in
seconds and with every column, is `suite.summary()`."""

SUMMARY_CODE = 'formatting.summary(suite.summary(metrics=("rps", "p50", "p99")))'

EVERY_RUN_MD = """## Every run

The layout of the published comparisons: one row per server, one column per run, then the mean and its
confidence interval. Requests per second first, then p99 in milliseconds. The raw tables are
`suite.table("rps")` and `suite.table("p99")` (seconds)."""

EVERY_RUN_CODE = {'suite.table("rps")': 'formatting.per_run(suite.table("rps"))',
                  'suite.table("p99")': 'formatting.per_run(suite.table("p99"), "p99")'}

SWEEP_RUNS_PRINT = COMPARE_RUNS_PRINT
SWEEP_SUMMARY = {'suite.summary(metrics=("rps", "p99")).dropna(axis=1, how="all")  # leave out the load columns '
                 'this cell does not use': 'formatting.summary(suite.summary(metrics=("rps", "p99")))'}
SWEEP_STATS_MD_OLD = "The full summary (latencies in seconds) and the flags"
SWEEP_STATS_MD_NEW = "The summary (latencies in ms; the raw frame is `suite.summary()`) and the flags"


def sections(nb) -> tuple[list, list[tuple[str, list]]]:
    """(the cells before the first section, [(heading, cells), ...]) in the notebook's order."""
    head, found = [], []
    for cell in nb.cells:
        first = cell.source.splitlines()[0] if cell.source else ""
        if cell.cell_type == "markdown" and first.startswith("## "):
            found.append((first[3:].strip(), [cell]))
        elif found:
            found[-1][1].append(cell)
        else:
            head.append(cell)
    return head, found


def ordered(found: list[tuple[str, list]], order: list[str]) -> list[tuple[str, list]]:
    """``found`` in ``order``; an unknown section follows the section it followed before."""
    known = [s for s in found if s[0] in order]
    known.sort(key=lambda s: order.index(s[0]))
    result = list(known)
    for i, section in enumerate(found):
        if section[0] in order:
            continue
        before = next((found[j][0] for j in range(i - 1, -1, -1)), None)
        at = next((k + 1 for k, s in enumerate(result) if s[0] == before), len(result))
        # after the last unknown already placed behind that section, so merged sections keep their order
        while at < len(result) and result[at][0] not in order:
            at += 1
        result.insert(at, section)
    return result


def replace_source(cells, old: str, new: str) -> None:
    for cell in cells:
        if old in cell.source and new not in cell.source:
            cell.source = cell.source.replace(old, new)


def compare(path: Path = HERE / "compare.ipynb") -> None:
    nb = nbformat.read(str(path), as_version=4)
    head, found = sections(nb)
    replace_source(head, SETUP_IMPORT, SETUP_IMPORT_NEW)
    replace_source(head, INTRO_OLD, INTRO_NEW)
    named = dict(found)
    replace_source(named["The runs"], COMPARE_RUNS_PRINT, COMPARE_RUNS_SHOW)
    verdict_cells = [c for c in named["Verdicts"] if c.cell_type == "code"]
    for cell in verdict_cells:
        metric = "p99" if 'metric="p99"' in cell.source else "rps"
        cell.source = VERDICT_CODE[metric]
    summary_md, *summary_code = named["Summary per server"]
    summary_md.source = SUMMARY_MD
    for cell in summary_code:
        if "suite.summary(" in cell.source:
            cell.source = SUMMARY_CODE
    every_md, *every_code = named["Every run"]
    every_md.source = EVERY_RUN_MD
    for cell in every_code:
        cell.source = EVERY_RUN_CODE.get(cell.source.strip(), cell.source)
    nb.cells = head + [cell for _, cells in ordered(found, COMPARE_ORDER) for cell in cells]
    nbformat.write(nb, str(path))


def sweep(path: Path = HERE / "sweep.ipynb") -> None:
    nb = nbformat.read(str(path), as_version=4)
    replace_source(nb.cells, SETUP_IMPORT, SETUP_IMPORT_NEW)
    replace_source(nb.cells, SWEEP_RUNS_PRINT, COMPARE_RUNS_SHOW)
    replace_source(nb.cells, SWEEP_STATS_MD_OLD, SWEEP_STATS_MD_NEW)
    for old, new in SWEEP_SUMMARY.items():
        replace_source(nb.cells, old, new)
    nbformat.write(nb, str(path))


if __name__ == "__main__":
    compare()
    sweep()
