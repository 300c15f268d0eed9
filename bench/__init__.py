"""Benchmarks of ``impl.Queue``, each figure beside a baseline measured in the same run.

Run them with ``python -m bench`` (``--help`` lists the options; ``--quick`` is a smoke run of a
few seconds). Not part of the installed package: the benchmarks measure the library, they are
not the library. ``docs/benchmarks.md`` has a recorded run and says what each figure means.

- :mod:`bench.suite`: the sizes, the targets, the rows of the report and the command line;
- :mod:`bench.cycle`: cycle throughput against ``queue.Queue`` and the optional baselines;
- :mod:`bench.state`: how the cost grows with the queue's state (fake clock, one thread);
- :mod:`bench.realtime`: idle CPU and redelivery lateness on the real clock;
- :mod:`bench.report`: the rows, as a text table and as JSON;
- :mod:`bench.plot`: the figure (needs matplotlib);
- :mod:`bench.icount`: the hot path's cost in instructions against a base git revision
  (``python -m bench.icount --base REV``; needs valgrind);
- :mod:`bench.aio`: the asyncio driver ``impl.AsyncQueue`` beside ``asyncio.Queue`` (also
  ``python -m bench.aio``);
- :mod:`bench.leak`: threads and memory left by 10,000 never-closed queues
  (``python -m bench.leak``);
- :mod:`bench.server`: the SQS endpoint beside moto's server through one boto3 client, batches
  and a thousand long polls (the last rows of ``python -m bench``; also
  ``python -m bench.server``);
- :mod:`bench.http_stacks`: the endpoint's SQS app on ``sqs_endpoint/http.py`` beside the stdlib's
  ``ThreadingHTTPServer`` and ``aiohttp.web`` (``python -m bench.http_stacks``).
"""
