"""The SQS endpoint: the SQS wire protocols (AWS JSON 1.0 and query) over the queues of impl.

``python -m server`` runs it; from Python, ``with server.serve(port=0) as ep:`` starts one on a
free port of 127.0.0.1 and gives its ``ep.url`` and its clock (``ep.advance(seconds)``,
``ep.freeze()``, ``ep.run()``, ``ep.now()``). The parts: ``server.http`` (HTTP/1.1 on asyncio
streams), ``server.app`` (both protocols' dispatch and error shapes), ``server.model`` (requests
checked and answers written from botocore's SQS model), ``server.service`` (the operations over
``impl``'s asyncio queues), ``server.clock`` and ``server.control`` (time control),
``server.endpoint`` (the background thread that runs it all).
"""

from server.endpoint import Endpoint, serve

__all__ = ["Endpoint", "serve"]
