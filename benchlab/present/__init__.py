"""How results are shown to people: numbers, headers, terminal text, charts, notebook output and HTML.

Present reads analysis and the store; it never starts a run (``tests/test_architecture.py``).
"""
