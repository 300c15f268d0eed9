"""The harness of the operation layer's tests (``tests/test_server_service*.py``).

``Client`` sends each request the way the wire does: ``sqs_endpoint.model.load().validate_input``
first, then ``await service.call(op, params, base_url=...)``, and checks that the result is
something both wire formats can write. ``sqs`` runs a test on a fresh Client on its own event
loop, on an ``impl.FakeClock``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest

from impl import FakeClock
from sqs_endpoint import model
from sqs_endpoint.errors import SqsError
from sqs_endpoint.service import Service

R = TypeVar("R")
BASE = "http://127.0.0.1:9324"
ACCOUNT = "000000000000"


def run(coro: Coroutine[Any, Any, R]) -> R:
    return asyncio.run(coro)


class Client:
    """``client.Op(**raw)``: the request validated by the model, then the Service's answer."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.clock = clock if clock is not None else FakeClock()
        self.service = Service(self.clock)
        self.model = model.load()

    def __getattr__(self, op: str) -> Callable[..., Coroutine[Any, Any, dict[str, Any]]]:
        async def call(**raw: Any) -> dict[str, Any]:
            params = self.model.validate_input(op, raw)
            result = await self.service.call(op, params, base_url=BASE)
            # Every result must be something both wire formats can write.
            self.model.serialize_json(op, result)
            self.model.serialize_query(op, result, "req-1")
            return result

        return call

    async def error(self, op: str, **raw: Any) -> SqsError:
        with pytest.raises(SqsError) as info:
            await getattr(self, op)(**raw)
        return info.value


def sqs(test: Callable[[Client], Coroutine[Any, Any, None]]) -> Callable[[], None]:
    """Run ``test`` on a fresh Client on its own event loop, closing the Service after."""

    def wrapper() -> None:
        async def main() -> None:
            c = Client()
            try:
                await test(c)
            finally:
                await c.service.aclose()

        run(main())

    wrapper.__name__ = test.__name__
    wrapper.__doc__ = test.__doc__
    return wrapper


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def counts(c: Client, url: str) -> tuple[int, int, int]:
    a = (await c.GetQueueAttributes(QueueUrl=url, AttributeNames=["All"]))["Attributes"]
    return (
        int(a["ApproximateNumberOfMessages"]),
        int(a["ApproximateNumberOfMessagesNotVisible"]),
        int(a["ApproximateNumberOfMessagesDelayed"]),
    )


async def fifo(c: Client, name: str = "f.fifo", **attrs: str) -> str:
    a = {"FifoQueue": "true", **attrs}
    url: str = (await c.CreateQueue(QueueName=name, Attributes=a))["QueueUrl"]
    return url
