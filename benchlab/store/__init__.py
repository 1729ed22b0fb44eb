"""The records a run leaves: run.json, latency histograms and samples, written atomically, validated on read.

Store imports nothing from running, analysis or present (``tests/test_architecture.py``).
"""
