"""Small programs to read and run, each showing one thing about the queue (not installed).

    python -m examples.consumer      # a worker loop: receive, process, delete; shutdown drains
    python -m examples.redelivery    # at-least-once: a slow consumer loses its message
    python -m examples.idempotent    # two consumers, one message, its effect applied once
    python -m examples.dead_letters  # a poison message set aside after max_receives
    python -m examples.effect_once   # the effect once: key recorded with the effect, not after
    python -m examples.demo          # the live demo, on the real clock (--help for options)

``examples/conformance_ci/`` is a user's test suite in miniature: the conformance kit's pytest
fixture run against an endpoint (``docs/conformance-ci.md``; ``model_tests/tests/
test_conformance_cli.py`` runs it on ``impl``).

Each small example runs on a :class:`impl.FakeClock`, so it takes no time and does the same
thing every run; ``tests/test_examples.py`` checks that each does what its docstring says.
"""
