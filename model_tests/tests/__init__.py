"""The model tests: one layer checked against another (see CONTRIBUTING.md, "Where a test lives").

Not shipped in the wheel: the ``model_tests`` package ships its library (the harness, the
linearizability checker, the mutant catalogue, the scenario generators, the test support), and
these are its tests.
"""
