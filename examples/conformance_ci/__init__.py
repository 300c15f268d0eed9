"""The conformance kit in a test suite: a ``conftest.py`` and a test file a user copies.

Run it on the project's own queue (fast, nothing to start)::

    python -m pytest examples/conformance_ci --sqs-endpoint impl

or on an endpoint of yours (ElasticMQ, LocalStack: local, so no ``--sqs-yes``)::

    AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x \\
        python -m pytest examples/conformance_ci --sqs-endpoint http://localhost:9324

``docs/conformance-ci.md`` explains each line; ``model_tests/tests/test_conformance_cli.py``
runs this directory with ``--sqs-endpoint impl``.
"""
