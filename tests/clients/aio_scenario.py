"""aiobotocore's normal work against the SQS endpoint: the shared scenario, then a long poll.

Run by the interpreter of ``.venv-clients`` (aiobotocore pins its botocore, so it has a virtual
environment of its own) as ``python tests/clients/aio_scenario.py BASE_URL``; prints one JSON line
of facts, which tests/test_server_clients_aiobotocore.py compares with the scenario's EXPECTED.
Every request is made by aiobotocore's own client (its aiohttp session, botocore's serializer
and parser) on an asyncio loop: the scenario of tests/sqs_client_scenario.py is written against
boto3's synchronous API, so each call is awaited in turn through a small adapter. Then what only
an asynchronous client does: a long poll waiting on the loop while another task of the same loop
sends the message that answers it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the shared scenario

import sqs_client_scenario as scenario
from aiobotocore.session import get_session  # type: ignore[import-not-found, unused-ignore]

#: Seconds the long poll may wait (the send answers it at once).
WAIT = 10


class Awaited:
    """The boto3-style synchronous view of an aiobotocore client the scenario is written for:
    every method call is run to completion on ``loop`` (the client's own)."""

    def __init__(self, client: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.meta = client.meta
        self.exceptions = client.exceptions
        self._client = client
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)

        def call(**kwargs: Any) -> Any:
            return self._loop.run_until_complete(method(**kwargs))

        return call


async def long_poll(client: Any) -> dict[str, Any]:
    url = (await client.create_queue(QueueName="aio-poll"))["QueueUrl"]

    async def send_soon() -> None:
        await asyncio.sleep(0)  # let the receive go out first (an order, not a wait on time)
        await client.send_message(QueueUrl=url, MessageBody="wake up")

    started = time.monotonic()
    answer, _ = await asyncio.gather(
        client.receive_message(QueueUrl=url, WaitTimeSeconds=WAIT), send_soon()
    )
    return {
        "bodies": [m["Body"] for m in answer.get("Messages", [])],
        "before_the_wait_ended": time.monotonic() - started < WAIT,
    }


def main(argv: list[str]) -> int:
    (base_url,) = argv
    loop = asyncio.new_event_loop()
    session = get_session()
    maker = session.create_client(
        "sqs",
        endpoint_url=base_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client = loop.run_until_complete(maker.__aenter__())
    try:
        facts = scenario.run(Awaited(client, loop), scenario.http_advance(base_url))
        facts["long_poll"] = loop.run_until_complete(long_poll(client))
        facts["client"] = {"protocol": client.meta.service_model.protocol}
    finally:
        loop.run_until_complete(maker.__aexit__(None, None, None))
        loop.close()
    print(json.dumps(facts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
