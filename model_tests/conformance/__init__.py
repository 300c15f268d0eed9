"""The conformance kit: the project's scenarios run against a real SQS endpoint, through boto3.

:mod:`model_tests.conformance.sqs` is a :class:`model_tests.targets.Target` that maps every
harness op onto SQS calls (moto in-process, moto's threaded HTTP server, or any endpoint URL);
:mod:`model_tests.conformance.profile` generates and checks the scenarios SQS can express. The
model's outputs for the same scenario are what the endpoint's are compared with.
"""
