"""Load the conformance kit's pytest plugin: the ``sqs_conformance`` fixture, ``--sqs-endpoint``."""

pytest_plugins = ["model_tests.conformance.pytest_plugin"]
