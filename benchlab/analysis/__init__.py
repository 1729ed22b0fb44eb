"""What the runs say: cells, intervals, tests, verdicts, flags, merged tails, precision and claims.

Analysis reads the runs frame and the stored records only; it never starts a process
(``tests/test_architecture.py``).
"""
