"""Bad input never changes a queue: Hypothesis throws requests at the Service, most of them
wrong (values out of range, bad names and characters, foreign and stale receipts, attributes a
queue type does not take), on queues that hold messages in every state.

Each request is first validated by the model (``validate_input``), as the wire does; what the
model refuses never reaches the Service. Whatever reaches it either succeeds or raises
``SqsError`` (never another exception: that would be a 500), and a refused request leaves every
queue exactly as it was: the same impl snapshot (each message's state, order, attempt and
deadline), attributes, tags and incarnation.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from service_client import BASE, Client

from sqs_endpoint.errors import SqsError

ACCOUNT = "000000000000"
STD = f"{BASE}/{ACCOUNT}/std"
FIFO = f"{BASE}/{ACCOUNT}/f.fifo"

texts = st.one_of(
    st.sampled_from(["", "x", "\x00", "\ufffe", "a" * 300, "AWS.x", "1e5", "NaN", "-", "ok.fifo"]),
    st.text(max_size=20),
)
numbers = st.one_of(
    st.sampled_from([-1, 0, 1, 10, 11, 20, 21, 900, 901, 43_200, 43_201, 2**31 - 1]),
    st.integers(-5, 50),
)
attribute_names = st.sampled_from(
    [
        "VisibilityTimeout",
        "DelaySeconds",
        "MaximumMessageSize",
        "MessageRetentionPeriod",
        "ReceiveMessageWaitTimeSeconds",
        "RedrivePolicy",
        "RedriveAllowPolicy",
        "Policy",
        "ContentBasedDeduplication",
        "DeduplicationScope",
        "FifoThroughputLimit",
        "FifoQueue",
        "QueueArn",
        "ApproximateNumberOfMessages",
        "SqsManagedSseEnabled",
        "Bogus",
    ]
)
attribute_values = st.one_of(
    texts,
    numbers.map(str),
    st.sampled_from(
        [
            "true",
            "false",
            "queue",
            "perMessageGroupId",
            '{"deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:nope", '
            '"maxReceiveCount": 2}',
            '{"deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:f.fifo", '
            '"maxReceiveCount": 2}',
            '{"redrivePermission": "byQueue"}',
        ]
    ),
)
message_attributes = st.dictionaries(
    st.one_of(texts, st.sampled_from(["k", "a.b", ".a", "a..b"])),
    st.fixed_dictionaries(
        {"DataType": st.sampled_from(["String", "Number", "Binary", "Number.x", "Float", ""])},
        optional={
            "StringValue": texts,
            "BinaryValue": st.binary(max_size=4),
        },
    ),
    max_size=12,
)
# Mostly the two queues: a wrong URL is refused before anything else is looked at.
urls = st.sampled_from([STD, FIFO] * 4 + [f"{BASE}/{ACCOUNT}/missing", f"{BASE}/1/std", "std"])


def send_fields() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"MessageBody": texts},
        optional={
            "DelaySeconds": numbers,
            "MessageAttributes": message_attributes,
            "MessageGroupId": texts,
            "MessageDeduplicationId": texts,
            "MessageSystemAttributes": st.sampled_from(
                [
                    {"Other": {"DataType": "String", "StringValue": "x"}},
                    {"AWSTraceHeader": {"DataType": "Number", "StringValue": "1"}},
                ]
            ),
        },
    )


def requests(handles: list[str]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    receipts = st.one_of(st.sampled_from(handles), texts)
    return st.one_of(
        send_fields().map(lambda f: ("SendMessage", f)),
        st.lists(send_fields(), max_size=11).map(
            lambda es: (
                "SendMessageBatch",
                {"Entries": [{"Id": f"e{i}", **e} for i, e in enumerate(es)]},
            )
        ),
        st.dictionaries(attribute_names, attribute_values, min_size=1, max_size=3).map(
            lambda a: ("SetQueueAttributes", {"Attributes": a})
        ),
        st.tuples(receipts, numbers).map(
            lambda t: (
                "ChangeMessageVisibility",
                {"ReceiptHandle": t[0], "VisibilityTimeout": t[1]},
            )
        ),
        receipts.map(lambda r: ("DeleteMessage", {"ReceiptHandle": r})),
        st.fixed_dictionaries(
            {},
            optional={
                "MaxNumberOfMessages": numbers,
                "VisibilityTimeout": numbers,
                "WaitTimeSeconds": st.sampled_from([0, 21, -1]),
                "AttributeNames": st.lists(st.sampled_from(["All", "Nope", "SequenceNumber"])),
            },
        ).map(lambda f: ("ReceiveMessage", f)),
        st.lists(st.tuples(receipts, numbers), min_size=1, max_size=3).map(
            lambda es: (
                "ChangeMessageVisibilityBatch",
                {
                    "Entries": [
                        {"Id": f"e{i}", "ReceiptHandle": r, "VisibilityTimeout": t}
                        for i, (r, t) in enumerate(es)
                    ]
                },
            )
        ),
        st.dictionaries(texts, texts, max_size=3).map(lambda t: ("TagQueue", {"Tags": t})),
        st.dictionaries(attribute_names, attribute_values, max_size=2).map(
            lambda a: ("CreateQueue", {"QueueName": "std", "Attributes": a})
        ),
    )


async def populated() -> tuple[Client, list[str]]:
    """A standard and a FIFO queue with messages delayed, visible, in flight and deleted, and
    the receipt handles seen (live and stale)."""
    c = Client()
    await c.CreateQueue(QueueName="std", tags={"t": "1"})
    await c.CreateQueue(QueueName="f.fifo", Attributes={"FifoQueue": "true"})
    handles: list[str] = []
    for i in range(4):
        await c.SendMessage(QueueUrl=STD, MessageBody=f"m{i}", DelaySeconds=5 if i == 3 else 0)
        await c.SendMessage(
            QueueUrl=FIFO,
            MessageBody=f"f{i}",
            MessageGroupId=f"g{i % 2}",
            MessageDeduplicationId=f"d{i}",
        )
    for url in (STD, FIFO):
        got = await c.ReceiveMessage(QueueUrl=url, MaxNumberOfMessages=2, VisibilityTimeout=10)
        handles += [m["ReceiptHandle"] for m in got["Messages"]]
    await c.DeleteMessage(QueueUrl=STD, ReceiptHandle=handles[0])  # stale from now on
    return c, handles


def observe(c: Client) -> list[tuple[Any, ...]]:
    out = []
    for name in c.service.queues():
        state = c.service._queues[name]
        out.append(
            (name, state.q.snapshot(), dict(state.attrs), dict(state.tags), state.incarnation)
        )
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_refused_request_changes_nothing(data: st.DataObject) -> None:
    async def main() -> None:
        c, handles = await populated()
        try:
            url = data.draw(urls)
            op, fields = data.draw(requests(handles))
            raw = fields if op == "CreateQueue" else {"QueueUrl": url, **fields}
            try:
                params = c.model.validate_input(op, raw)
            except SqsError:
                return  # the wire refuses it: it never reaches the Service
            before = observe(c)
            try:
                result = await c.service.call(op, params, base_url=BASE)
            except SqsError:
                assert observe(c) == before, (op, raw)
                return
            # Accepted: what it answers, both wire formats can write.
            c.model.serialize_json(op, result)
            c.model.serialize_query(op, result, "r")
        finally:
            await c.service.aclose()

    asyncio.run(main())
