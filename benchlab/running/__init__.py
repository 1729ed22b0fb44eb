"""What starts things: options and run specs, the load model, servers, builds, backends, load tools, warm-up.

Running writes results through the store and may use analysis's pure methods (change points, drift);
it never imports present (``tests/test_architecture.py``).
"""
