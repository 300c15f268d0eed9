"""The SQS endpoint: the SQS wire protocols (AWS JSON 1.0 and query) over the queues of impl.

``python -m sqs_endpoint`` runs it; from Python, ``with sqs_endpoint.serve(port=0) as ep:`` starts
one on a
free port of 127.0.0.1 and gives its ``ep.url`` and its clock (``ep.advance(seconds)``,
``ep.freeze()``, ``ep.run()``, ``ep.now()``). The parts: ``sqs_endpoint.http`` (HTTP/1.1 on asyncio
streams), ``sqs_endpoint.app`` (both protocols' dispatch and error shapes), ``sqs_endpoint.model``
(requests
checked and answers written from botocore's SQS model), ``sqs_endpoint.service`` (the operations
over
``impl``'s asyncio queues), ``sqs_endpoint.clock`` and ``sqs_endpoint.control`` (time control),
``sqs_endpoint.endpoint`` (the background thread that runs it all).
"""

from sqs_endpoint.endpoint import Endpoint, serve

__all__ = ["Endpoint", "serve"]
