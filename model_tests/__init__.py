"""Model-based tests: the threaded ``impl.Queue`` checked against the pure-function ``spec``.

Also home of the scenario harness (``python -m model_tests.harness``), so it is importable.
"""
