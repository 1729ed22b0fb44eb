"""Borrowed strength, at a larger size than its test: coverage and false positives of the ratio's interval with the
fork variance borrowed (benchlab.analysis.borrow), per case and rounds, with their 95% intervals beside the goals,
and the same sittings judged without borrowing.

    python3 benchmarks/borrow.py [--trials 20000]

The model and the cases are those of tests/test_borrow.py (its ``simulate``): 3 servers a sitting, paired by
round, a history of 12 stored sittings of this machine; "width" is the median width of the log ratio's interval
(0.10 is about +/-5%), "power" the share of a true +30% called significant.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' simulation, from a checkout

from tests.test_borrow import CASES, simulate  # noqa: E402


def wilson(share: float, n: int) -> str:
    """The 95% Wilson interval of a share of n trials."""
    z = 1.96
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"[{centre - half:.3f}, {centre + half:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000)
    trials = parser.parse_args().trials
    began = time.monotonic()
    print(f"{trials} sittings a row, alpha 0.05; goals: coverage >= 0.94, false positives <= 0.05")
    print(f"{'case':18} {'rounds':>6} {'coverage at 1':>22} {'coverage at 1.3':>22} {'false positives':>22} "
          f"{'borrowed':>8} {'noisy':>6} {'width':>6} {'power':>6} | {'without: width':>14} {'power':>6} {'fp':>6}")
    for case in CASES:
        for rounds in (2, 3, 5):
            null = simulate(case, rounds, trials, seed=1000 + rounds)
            shifted = simulate(case, rounds, trials, seed=2000 + rounds, ratio=1.3)
            alone = simulate(case, rounds, trials, seed=1000 + rounds, borrowing=False)
            alone_shifted = simulate(case, rounds, trials, seed=2000 + rounds, ratio=1.3, borrowing=False)
            print(f"{case:18} {rounds:>6} {null['coverage']:.3f} {wilson(null['coverage'], trials):>16} "
                  f"{shifted['coverage']:.3f} {wilson(shifted['coverage'], trials):>16} "
                  f"{null['significant']:.3f} {wilson(null['significant'], trials):>16} {null['borrowed']:>8.2f} "
                  f"{null['noisy']:>6.2f} {null['width']:>6.3f} {shifted['significant']:>6.2f} | "
                  f"{alone['width']:>14.3f} {alone_shifted['significant']:>6.2f} {alone['significant']:>6.3f}")
    flagged = [simulate("noisy sitting", rounds, trials, seed=1000 + rounds) for rounds in (2, 3, 5)]
    print("noisy sitting, the ones flagged noisy_sitting (judged on the sitting alone): coverage at 2, 3, 5 rounds "
          + ", ".join(f"{f['noisy_coverage']:.3f} of {f['noisy']:.2f}" for f in flagged))
    uncapped = [simulate("noisy sitting", rounds, trials, seed=1000 + rounds, share=math.inf) for rounds in (2, 3, 5)]
    print("noisy sitting with the history weighed as fitted (d0 not capped by the sitting's own df): coverage at 2, "
          "3, 5 rounds " + ", ".join(f"{u['coverage']:.3f} {wilson(u['coverage'], trials)}" for u in uncapped))
    wrong = simulate("varied rps", 3, trials, seed=7, wrong=True)
    print(f"wrong method (a prior 5x too small, no noisy guard), varied rps at 3 rounds: coverage "
          f"{wrong['coverage']:.3f} {wilson(wrong['coverage'], trials)}")
    print(f"{time.monotonic() - began:.0f} s")


if __name__ == "__main__":
    main()
