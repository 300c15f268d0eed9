"""The operation layer (``sqs_endpoint/service.py``): the core message path, called as the wire
calls it.

Every request goes through ``sqs_endpoint.model.load().validate_input`` first (what the HTTP side
does), then ``await service.call(op, params, base_url=...)``, on an ``impl.FakeClock``: time moves
only by ``clock.advance``, which fires the queues' loop timers at once. No test sleeps on wall
time; the long-poll tests bound a real-time wait with generous margins and decide nothing by
timing except that a poll with no message ends.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import pytest
from service_client import ACCOUNT, BASE, Client, counts, fifo, settle, sqs

from sqs_endpoint.md5 import md5_of_body, md5_of_message_attributes

# -- queues ----------------------------------------------------------------------------------


@sqs
async def test_create_get_list_delete_queues(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="orders"))["QueueUrl"]
    assert url == f"{BASE}/{ACCOUNT}/orders"
    # Idempotent with the same attributes (or none given).
    assert (await c.CreateQueue(QueueName="orders"))["QueueUrl"] == url
    assert (await c.CreateQueue(QueueName="orders", Attributes={"VisibilityTimeout": "30"}))[
        "QueueUrl"
    ] == url
    err = await c.error("CreateQueue", QueueName="orders", Attributes={"VisibilityTimeout": "31"})
    assert err.code == "QueueNameExists" and err.query_code == "QueueAlreadyExists"
    await c.CreateQueue(QueueName="other")
    assert (await c.GetQueueUrl(QueueName="orders"))["QueueUrl"] == url
    assert (await c.ListQueues())["QueueUrls"] == [url, f"{BASE}/{ACCOUNT}/other"]
    assert (await c.ListQueues(QueueNamePrefix="ot"))["QueueUrls"] == [f"{BASE}/{ACCOUNT}/other"]
    page = await c.ListQueues(MaxResults=1)
    assert page["QueueUrls"] == [url]
    rest = await c.ListQueues(MaxResults=1, NextToken=page["NextToken"])
    assert rest["QueueUrls"] == [f"{BASE}/{ACCOUNT}/other"] and "NextToken" not in {
        k for k, v in rest.items() if v is not None
    }
    assert c.service.queues() == ["orders", "other"]
    await c.DeleteQueue(QueueUrl=url)
    err = await c.error("GetQueueUrl", QueueName="orders")
    assert err.code == "QueueDoesNotExist"
    assert err.query_code == "AWS.SimpleQueueService.NonExistentQueue"
    assert (await c.error("SendMessage", QueueUrl=url, MessageBody="x")).code == "QueueDoesNotExist"
    assert (await c.ListQueues(QueueNamePrefix="zz")).get("QueueUrls") is None


@sqs
async def test_any_host_names_the_queue_but_not_another_account(c: Client) -> None:
    await c.CreateQueue(QueueName="q")
    await c.SendMessage(QueueUrl=f"http://localhost:4566/{ACCOUNT}/q", MessageBody="x")
    err = await c.error("SendMessage", QueueUrl=f"{BASE}/123456789012/q", MessageBody="x")
    assert err.code == "QueueDoesNotExist"


@sqs
async def test_queue_names_and_fifo_suffix(c: Client) -> None:
    for bad in ("", "a" * 81, "has space", "dot.name"):
        if bad == "":
            continue
        err = await c.error("CreateQueue", QueueName=bad)
        assert err.code == "InvalidParameterValue", bad
    assert (await c.error("CreateQueue", QueueName="f.fifo")).code == "InvalidParameterValue"
    err = await c.error("CreateQueue", QueueName="f", Attributes={"FifoQueue": "true"})
    assert err.code == "InvalidParameterValue"
    await c.CreateQueue(QueueName="f.fifo", Attributes={"FifoQueue": "true"})
    assert c.service.queues() == ["f.fifo"]
    # FifoQueue=false on a standard queue says what it is: no error, no attribute, idempotent.
    url = (await c.CreateQueue(QueueName="s", Attributes={"FifoQueue": "false"}))["QueueUrl"]
    await c.CreateQueue(QueueName="s", Attributes={"FifoQueue": "false"})
    attrs = (await c.GetQueueAttributes(QueueUrl=url, AttributeNames=["All"]))["Attributes"]
    assert "FifoQueue" not in attrs


@sqs
async def test_bad_attributes_are_refused_and_change_nothing(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    cases = {
        "VisibilityTimeout": "43201",
        "DelaySeconds": "-1",
        "MaximumMessageSize": "1023",
        "MessageRetentionPeriod": "59",
        "ReceiveMessageWaitTimeSeconds": "21",
        "SqsManagedSseEnabled": "yes",
        "RedrivePolicy": '{"maxReceiveCount": 3}',
        "RedriveAllowPolicy": '{"redrivePermission": "some"}',
        "Policy": "not json",
    }
    for name, value in cases.items():
        err = await c.error("SetQueueAttributes", QueueUrl=url, Attributes={name: value})
        assert err.code == "InvalidAttributeValue", name
    for name in ("Nope", "QueueArn", "ApproximateNumberOfMessages", "ContentBasedDeduplication"):
        err = await c.error("SetQueueAttributes", QueueUrl=url, Attributes={name: "1"})
        assert err.code == "InvalidAttributeName", name
    # One bad attribute among good ones: none applies.
    await c.error(
        "SetQueueAttributes",
        QueueUrl=url,
        Attributes={"DelaySeconds": "5", "VisibilityTimeout": "x"},
    )
    attrs = (await c.GetQueueAttributes(QueueUrl=url, AttributeNames=["All"]))["Attributes"]
    assert attrs["DelaySeconds"] == "0" and attrs["VisibilityTimeout"] == "30"
    err = await c.error("GetQueueAttributes", QueueUrl=url, AttributeNames=["Bogus"])
    assert err.code == "InvalidAttributeName"


@sqs
async def test_get_queue_attributes_all_and_by_name(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q", Attributes={"DelaySeconds": "0"}))["QueueUrl"]
    assert await c.GetQueueAttributes(QueueUrl=url) == {}
    attrs = (await c.GetQueueAttributes(QueueUrl=url, AttributeNames=["All"]))["Attributes"]
    assert attrs["QueueArn"] == f"arn:aws:sqs:us-east-1:{ACCOUNT}:q"
    assert attrs["VisibilityTimeout"] == "30"
    assert attrs["MaximumMessageSize"] == "1048576"
    assert attrs["MessageRetentionPeriod"] == "345600"
    assert attrs["ReceiveMessageWaitTimeSeconds"] == "0"
    assert attrs["ApproximateNumberOfMessages"] == "0"
    assert int(attrs["CreatedTimestamp"]) > 1_600_000_000
    assert "RedrivePolicy" not in attrs and "FifoQueue" not in attrs
    one = await c.GetQueueAttributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])
    assert one == {"Attributes": {"VisibilityTimeout": "30"}}
    await c.SetQueueAttributes(QueueUrl=url, Attributes={"VisibilityTimeout": "5"})
    one = await c.GetQueueAttributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])
    assert one == {"Attributes": {"VisibilityTimeout": "5"}}


# -- the message path ------------------------------------------------------------------------


@sqs
async def test_send_receive_delete_with_digests(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    attrs: dict[str, dict[str, Any]] = {
        "color": {"DataType": "String", "StringValue": "red"},
        "n": {"DataType": "Number", "StringValue": "42"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
    }
    sent = await c.SendMessage(QueueUrl=url, MessageBody="héllo", MessageAttributes=attrs)
    assert sent["MD5OfMessageBody"] == md5_of_body("héllo")
    assert sent["MD5OfMessageAttributes"] == md5_of_message_attributes(attrs)
    assert await counts(c, url) == (1, 0, 0)
    got = await c.ReceiveMessage(
        QueueUrl=url, MessageAttributeNames=["All"], MessageSystemAttributeNames=["All"]
    )
    [m] = got["Messages"]
    assert m["MessageId"] == sent["MessageId"] and m["Body"] == "héllo"
    assert m["MD5OfBody"] == md5_of_body("héllo")
    assert m["MessageAttributes"] == attrs
    assert m["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"]
    assert m["Attributes"]["ApproximateReceiveCount"] == "1"
    assert m["Attributes"]["SentTimestamp"] == m["Attributes"]["ApproximateFirstReceiveTimestamp"]
    assert m["Attributes"]["SenderId"] == ACCOUNT
    assert await counts(c, url) == (0, 1, 0)
    await c.DeleteMessage(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert await counts(c, url) == (0, 0, 0)
    assert await c.ReceiveMessage(QueueUrl=url) == {}


@sqs
async def test_message_attribute_selection_and_its_digest(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    attrs = {
        "a.x": {"DataType": "String", "StringValue": "1"},
        "a.y": {"DataType": "String", "StringValue": "2"},
        "b": {"DataType": "String", "StringValue": "3"},
    }
    await c.SendMessage(QueueUrl=url, MessageBody="x", MessageAttributes=attrs)
    [m] = (
        await c.ReceiveMessage(QueueUrl=url, MessageAttributeNames=["a.*"], VisibilityTimeout=0)
    )["Messages"]
    assert set(m["MessageAttributes"]) == {"a.x", "a.y"}
    assert m["MD5OfMessageAttributes"] == md5_of_message_attributes(m["MessageAttributes"])
    assert "Attributes" not in m


@sqs
async def test_visibility_timeout_redelivery_and_stale_receipts(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q", Attributes={"VisibilityTimeout": "5"}))["QueueUrl"]
    await c.SendMessage(QueueUrl=url, MessageBody="x")
    [first] = (await c.ReceiveMessage(QueueUrl=url, AttributeNames=["ApproximateReceiveCount"]))[
        "Messages"
    ]
    assert await c.ReceiveMessage(QueueUrl=url) == {}
    c.clock.advance(5.0)
    [again] = (await c.ReceiveMessage(QueueUrl=url, AttributeNames=["ApproximateReceiveCount"]))[
        "Messages"
    ]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"
    assert again["ReceiptHandle"] != first["ReceiptHandle"]
    # The stale receipt never acts: its delete and its visibility change are refused...
    err = await c.error("DeleteMessage", QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])
    assert err.code == "InvalidParameterValue" and "expired" in err.message
    err = await c.error(
        "ChangeMessageVisibility",
        QueueUrl=url,
        ReceiptHandle=first["ReceiptHandle"],
        VisibilityTimeout=0,
    )
    assert err.code == "MessageNotInflight"
    # ...and the redelivered copy is untouched: still in flight, deletable by its own receipt.
    assert await counts(c, url) == (0, 1, 0)
    await c.DeleteMessage(QueueUrl=url, ReceiptHandle=again["ReceiptHandle"])
    assert await counts(c, url) == (0, 0, 0)


@sqs
async def test_malformed_and_foreign_receipts(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    other = (await c.CreateQueue(QueueName="other"))["QueueUrl"]
    await c.SendMessage(QueueUrl=other, MessageBody="x")
    [m] = (await c.ReceiveMessage(QueueUrl=other))["Messages"]
    for handle in ("nope", "!!!", m["ReceiptHandle"]):
        err = await c.error("DeleteMessage", QueueUrl=url, ReceiptHandle=handle)
        assert err.code == "ReceiptHandleIsInvalid", handle
    assert await counts(c, other) == (0, 1, 0)


@sqs
async def test_change_visibility_extends_releases_and_caps_at_twelve_hours(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q", Attributes={"VisibilityTimeout": "10"}))["QueueUrl"]
    await c.SendMessage(QueueUrl=url, MessageBody="x")
    [m] = (await c.ReceiveMessage(QueueUrl=url))["Messages"]
    h = m["ReceiptHandle"]
    await c.ChangeMessageVisibility(QueueUrl=url, ReceiptHandle=h, VisibilityTimeout=100)
    c.clock.advance(50.0)
    assert await c.ReceiveMessage(QueueUrl=url) == {}  # counted from the change, not the receive
    err = await c.error(
        "ChangeMessageVisibility", QueueUrl=url, ReceiptHandle=h, VisibilityTimeout=43_200
    )
    assert err.code == "InvalidParameterValue" and "43200" in err.message
    err = await c.error(
        "ChangeMessageVisibility", QueueUrl=url, ReceiptHandle=h, VisibilityTimeout=43_201
    )
    assert err.code == "InvalidParameterValue"
    await c.ChangeMessageVisibility(QueueUrl=url, ReceiptHandle=h, VisibilityTimeout=43_150)
    await c.ChangeMessageVisibility(QueueUrl=url, ReceiptHandle=h, VisibilityTimeout=0)
    [again] = (await c.ReceiveMessage(QueueUrl=url))["Messages"]
    assert again["MessageId"] == m["MessageId"]


@sqs
async def test_delays_queue_default_and_per_message(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q", Attributes={"DelaySeconds": "10"}))["QueueUrl"]
    await c.SendMessage(QueueUrl=url, MessageBody="default")
    await c.SendMessage(QueueUrl=url, MessageBody="now", DelaySeconds=0)
    await c.SendMessage(QueueUrl=url, MessageBody="later", DelaySeconds=20)
    assert await counts(c, url) == (1, 0, 2)
    err = await c.error("SendMessage", QueueUrl=url, MessageBody="x", DelaySeconds=901)
    assert err.code == "InvalidParameterValue"
    got = await c.ReceiveMessage(QueueUrl=url, MaxNumberOfMessages=10)
    assert [m["Body"] for m in got["Messages"]] == ["now"]
    c.clock.advance(10.0)
    got = await c.ReceiveMessage(QueueUrl=url, MaxNumberOfMessages=10)
    assert [m["Body"] for m in got["Messages"]] == ["default"]
    c.clock.advance(10.0)
    got = await c.ReceiveMessage(QueueUrl=url, MaxNumberOfMessages=10)
    assert [m["Body"] for m in got["Messages"]] == ["later"]


@sqs
async def test_bad_sends_are_refused_and_change_nothing(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q", Attributes={"MaximumMessageSize": "1024"}))[
        "QueueUrl"
    ]
    cases: list[tuple[dict[str, Any], str]] = [
        ({"MessageBody": ""}, "MissingParameter"),
        ({"MessageBody": "bad \x00 char"}, "InvalidMessageContents"),
        ({"MessageBody": "\ufffe"}, "InvalidMessageContents"),
        ({"MessageBody": "x" * 1025}, "InvalidParameterValue"),
        (
            {
                "MessageBody": "x" * 1000,
                "MessageAttributes": {"k": {"DataType": "String", "StringValue": "y" * 30}},
            },
            "InvalidParameterValue",
        ),
        (
            {
                "MessageBody": "x",
                "MessageAttributes": {
                    f"a{i}": {"DataType": "String", "StringValue": "v"} for i in range(11)
                },
            },
            "InvalidParameterValue",
        ),
        (
            {
                "MessageBody": "x",
                "MessageAttributes": {"AWS.x": {"DataType": "String", "StringValue": "v"}},
            },
            "InvalidParameterValue",
        ),
        (
            {
                "MessageBody": "x",
                "MessageAttributes": {"k": {"DataType": "Number", "StringValue": "abc"}},
            },
            "InvalidParameterValue",
        ),
        (
            {
                "MessageBody": "x",
                "MessageAttributes": {"k": {"DataType": "Float", "StringValue": "1"}},
            },
            "InvalidParameterValue",
        ),
        (
            {
                "MessageBody": "x",
                "MessageAttributes": {"k": {"DataType": "Binary", "StringValue": "1"}},
            },
            "InvalidParameterValue",
        ),
        ({"MessageBody": "x", "MessageDeduplicationId": "d"}, "InvalidParameterValue"),
        (
            {
                "MessageBody": "x",
                "MessageSystemAttributes": {"Other": {"DataType": "String", "StringValue": "v"}},
            },
            "InvalidParameterValue",
        ),
    ]
    for raw, code in cases:
        err = await c.error("SendMessage", QueueUrl=url, **raw)
        assert err.code == code, (raw, err)
    assert await counts(c, url) == (0, 0, 0)
    # The largest message that fits: body plus attribute name, type and value.
    ok = {"k": {"DataType": "String", "StringValue": "y" * 17}}
    await c.SendMessage(QueueUrl=url, MessageBody="x" * 1000, MessageAttributes=ok)
    assert await counts(c, url) == (1, 0, 0)


@sqs
async def test_trace_header_system_attribute(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    system = {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-abc"}}
    sent = await c.SendMessage(QueueUrl=url, MessageBody="x", MessageSystemAttributes=system)
    assert sent["MD5OfMessageSystemAttributes"] == md5_of_message_attributes(system)
    [m] = (await c.ReceiveMessage(QueueUrl=url, MessageSystemAttributeNames=["AWSTraceHeader"]))[
        "Messages"
    ]
    assert m["Attributes"] == {"AWSTraceHeader": "Root=1-abc"}


@sqs
async def test_receive_arguments_out_of_range(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    for raw in (
        {"MaxNumberOfMessages": 0},
        {"MaxNumberOfMessages": 11},
        {"WaitTimeSeconds": 21},
        {"VisibilityTimeout": 43_201},
    ):
        err = await c.error("ReceiveMessage", QueueUrl=url, **raw)
        assert err.code == "InvalidParameterValue", raw
    err = await c.error("ReceiveMessage", QueueUrl=url, AttributeNames=["Nope"])
    assert err.code == "InvalidAttributeName"


# -- long polling ----------------------------------------------------------------------------


@sqs
async def test_long_poll_returns_as_soon_as_a_message_is_sent(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    poll = asyncio.create_task(c.ReceiveMessage(QueueUrl=url, WaitTimeSeconds=20))
    await settle()
    assert not poll.done()
    await c.SendMessage(QueueUrl=url, MessageBody="x")
    got = await asyncio.wait_for(poll, 5.0)  # a safety bound: the send woke it
    assert [m["Body"] for m in got["Messages"]] == ["x"]


@sqs
async def test_long_poll_wakes_on_redelivery_while_the_clock_moves(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q", Attributes={"VisibilityTimeout": "30"}))["QueueUrl"]
    await c.SendMessage(QueueUrl=url, MessageBody="x")
    await c.ReceiveMessage(QueueUrl=url)
    poll = asyncio.create_task(c.ReceiveMessage(QueueUrl=url, WaitTimeSeconds=20))
    await settle()
    assert not poll.done()
    c.clock.advance(30.0)
    got = await asyncio.wait_for(poll, 5.0)
    assert len(got["Messages"]) == 1


@sqs
async def test_queue_wait_time_attribute_makes_a_long_poll(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q", Attributes={"ReceiveMessageWaitTimeSeconds": "20"}))[
        "QueueUrl"
    ]
    poll = asyncio.create_task(c.ReceiveMessage(QueueUrl=url))
    await settle()
    assert not poll.done()
    await c.SendMessage(QueueUrl=url, MessageBody="x")
    assert len((await asyncio.wait_for(poll, 5.0))["Messages"]) == 1
    # WaitTimeSeconds=0 overrides it: a short poll.
    assert await c.ReceiveMessage(QueueUrl=url, WaitTimeSeconds=0) == {}


@sqs
async def test_long_poll_ends_in_real_time_with_the_clock_frozen(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    loop = asyncio.get_running_loop()
    start = loop.time()
    got = await asyncio.wait_for(c.ReceiveMessage(QueueUrl=url, WaitTimeSeconds=1), 10.0)
    assert got == {} and loop.time() - start >= 0.9
    assert c.clock.now() == 0.0


@sqs
async def test_a_cancelled_long_poll_takes_nothing(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    poll = asyncio.create_task(c.ReceiveMessage(QueueUrl=url, WaitTimeSeconds=20))
    await settle()
    poll.cancel()
    with pytest.raises(asyncio.CancelledError):
        await poll
    await c.SendMessage(QueueUrl=url, MessageBody="x")
    assert await counts(c, url) == (1, 0, 0)


@sqs
async def test_deleting_a_queue_ends_its_long_polls_empty(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    poll = asyncio.create_task(c.ReceiveMessage(QueueUrl=url, WaitTimeSeconds=20))
    await settle()
    await c.DeleteQueue(QueueUrl=url)
    assert await asyncio.wait_for(poll, 5.0) == {}


# -- batches ---------------------------------------------------------------------------------


@sqs
async def test_send_batch_per_entry_results(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    result = await c.SendMessageBatch(
        QueueUrl=url,
        Entries=[
            {"Id": "a", "MessageBody": "one"},
            {"Id": "b", "MessageBody": ""},
            {"Id": "c", "MessageBody": "three", "DelaySeconds": 5},
            {"Id": "d", "MessageBody": "four", "DelaySeconds": 1000},
        ],
    )
    assert [e["Id"] for e in result["Successful"]] == ["a", "c"]
    assert result["Successful"][0]["MD5OfMessageBody"] == md5_of_body("one")
    assert {e["Id"]: e["Code"] for e in result["Failed"]} == {
        "b": "MissingParameter",
        "d": "InvalidParameterValue",
    }
    assert all(e["SenderFault"] for e in result["Failed"])
    assert await counts(c, url) == (1, 0, 1)


@sqs
async def test_batch_request_errors(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    err = await c.error("SendMessageBatch", QueueUrl=url, Entries=[])
    assert err.code == "EmptyBatchRequest"
    many = [{"Id": f"e{i}", "MessageBody": "x"} for i in range(11)]
    assert (await c.error("SendMessageBatch", QueueUrl=url, Entries=many)).code == (
        "TooManyEntriesInBatchRequest"
    )
    twice = [{"Id": "e", "MessageBody": "x"}, {"Id": "e", "MessageBody": "y"}]
    assert (await c.error("SendMessageBatch", QueueUrl=url, Entries=twice)).code == (
        "BatchEntryIdsNotDistinct"
    )
    bad_id = [{"Id": "e!", "MessageBody": "x"}]
    assert (await c.error("SendMessageBatch", QueueUrl=url, Entries=bad_id)).code == (
        "InvalidBatchEntryId"
    )
    big = [{"Id": f"e{i}", "MessageBody": "x" * 110_000} for i in range(10)]
    assert (await c.error("SendMessageBatch", QueueUrl=url, Entries=big)).code == (
        "BatchRequestTooLong"
    )
    assert await counts(c, url) == (0, 0, 0)


@sqs
async def test_receive_batch_then_delete_and_change_visibility_batches(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    await c.SendMessageBatch(
        QueueUrl=url, Entries=[{"Id": f"e{i}", "MessageBody": str(i)} for i in range(5)]
    )
    got = (await c.ReceiveMessage(QueueUrl=url, MaxNumberOfMessages=10))["Messages"]
    assert [m["Body"] for m in got] == ["0", "1", "2", "3", "4"]  # strict FIFO here
    result = await c.DeleteMessageBatch(
        QueueUrl=url,
        Entries=[
            {"Id": "a", "ReceiptHandle": got[0]["ReceiptHandle"]},
            {"Id": "b", "ReceiptHandle": "garbage"},
            {"Id": "c", "ReceiptHandle": got[1]["ReceiptHandle"]},
        ],
    )
    assert [e["Id"] for e in result["Successful"]] == ["a", "c"]
    assert [(e["Id"], e["Code"]) for e in result["Failed"]] == [("b", "ReceiptHandleIsInvalid")]
    result = await c.ChangeMessageVisibilityBatch(
        QueueUrl=url,
        Entries=[
            {"Id": "a", "ReceiptHandle": got[2]["ReceiptHandle"], "VisibilityTimeout": 0},
            {"Id": "b", "ReceiptHandle": got[0]["ReceiptHandle"], "VisibilityTimeout": 0},
            {"Id": "c", "ReceiptHandle": got[3]["ReceiptHandle"], "VisibilityTimeout": 50_000},
        ],
    )
    assert [e["Id"] for e in result["Successful"]] == ["a"]
    assert {e["Id"]: e["Code"] for e in result["Failed"]} == {
        "b": "MessageNotInflight",
        "c": "InvalidParameterValue",
    }
    # Deleting already-deleted receipts in a batch: per-entry failures.
    result = await c.DeleteMessageBatch(
        QueueUrl=url, Entries=[{"Id": "a", "ReceiptHandle": got[0]["ReceiptHandle"]}]
    )
    assert result["Successful"] == [] and result["Failed"][0]["Code"] == "InvalidParameterValue"
    assert await counts(c, url) == (1, 2, 0)


# -- FIFO ------------------------------------------------------------------------------------


@sqs
async def test_fifo_groups_order_and_lock(c: Client) -> None:
    url = await fifo(c)
    for body, group in (("a1", "A"), ("a2", "A"), ("b1", "B")):
        sent = await c.SendMessage(
            QueueUrl=url, MessageBody=body, MessageGroupId=group, MessageDeduplicationId=body
        )
        assert sent["SequenceNumber"]
    [m] = (await c.ReceiveMessage(QueueUrl=url, AttributeNames=["All"]))["Messages"]
    assert m["Body"] == "a1" and m["Attributes"]["MessageGroupId"] == "A"
    assert m["Attributes"]["MessageDeduplicationId"] == "a1"
    assert m["Attributes"]["SequenceNumber"]
    [n] = (await c.ReceiveMessage(QueueUrl=url))["Messages"]
    assert n["Body"] == "b1"  # group A is locked while a1 is in flight
    await c.ChangeMessageVisibility(
        QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
    )
    got = (await c.ReceiveMessage(QueueUrl=url, MaxNumberOfMessages=10))["Messages"]
    assert [x["Body"] for x in got] == ["a1", "a2"]


@sqs
async def test_fifo_deduplication_explicit_and_content_based(c: Client) -> None:
    url = await fifo(c)
    first = await c.SendMessage(
        QueueUrl=url, MessageBody="x", MessageGroupId="g", MessageDeduplicationId="d"
    )
    dup = await c.SendMessage(
        QueueUrl=url, MessageBody="y", MessageGroupId="g", MessageDeduplicationId="d"
    )
    assert dup["MessageId"] == first["MessageId"]
    assert dup["SequenceNumber"] == first["SequenceNumber"]
    assert await counts(c, url) == (1, 0, 0)
    c.clock.advance(300.0)
    again = await c.SendMessage(
        QueueUrl=url, MessageBody="y", MessageGroupId="g", MessageDeduplicationId="d"
    )
    assert again["MessageId"] != first["MessageId"]
    assert int(again["SequenceNumber"]) > int(first["SequenceNumber"])
    err = await c.error("SendMessage", QueueUrl=url, MessageBody="x", MessageGroupId="g")
    assert err.code == "InvalidParameterValue"
    err = await c.error("SendMessage", QueueUrl=url, MessageBody="x", MessageDeduplicationId="z")
    assert err.code == "MissingParameter"
    err = await c.error(
        "SendMessage",
        QueueUrl=url,
        MessageBody="x",
        MessageGroupId="g",
        MessageDeduplicationId="q",
        DelaySeconds=5,
    )
    assert err.code == "InvalidParameterValue"
    cbd = await fifo(c, "cbd.fifo", ContentBasedDeduplication="true")
    one = await c.SendMessage(QueueUrl=cbd, MessageBody="same", MessageGroupId="g:1")
    two = await c.SendMessage(QueueUrl=cbd, MessageBody="same", MessageGroupId="g:1")
    assert one["MessageId"] == two["MessageId"]
    [m] = (await c.ReceiveMessage(QueueUrl=cbd, AttributeNames=["All"]))["Messages"]
    assert m["Attributes"]["MessageDeduplicationId"] == hashlib.sha256(b"same").hexdigest()
    assert m["Attributes"]["MessageGroupId"] == "g:1"


@sqs
async def test_fifo_batch_with_a_repeated_dedup_id(c: Client) -> None:
    url = await fifo(c)
    result = await c.SendMessageBatch(
        QueueUrl=url,
        Entries=[
            {"Id": "a", "MessageBody": "1", "MessageGroupId": "g", "MessageDeduplicationId": "d"},
            {"Id": "b", "MessageBody": "2", "MessageGroupId": "g", "MessageDeduplicationId": "d"},
            {"Id": "c", "MessageBody": "3", "MessageGroupId": "g", "MessageDeduplicationId": "e"},
            {"Id": "z", "MessageBody": "4", "MessageDeduplicationId": "f"},
        ],
    )
    ok = {e["Id"]: e for e in result["Successful"]}
    assert list(ok) == ["a", "b", "c"]
    assert ok["a"]["MessageId"] == ok["b"]["MessageId"] != ok["c"]["MessageId"]
    assert [e["Code"] for e in result["Failed"]] == ["MissingParameter"]
    assert await counts(c, url) == (2, 0, 0)


@sqs
async def test_fifo_dedup_scope_message_group(c: Client) -> None:
    url = await fifo(c, DeduplicationScope="messageGroup", FifoThroughputLimit="perMessageGroupId")
    a = await c.SendMessage(
        QueueUrl=url, MessageBody="x", MessageGroupId="A", MessageDeduplicationId="d"
    )
    b = await c.SendMessage(
        QueueUrl=url, MessageBody="x", MessageGroupId="B", MessageDeduplicationId="d"
    )
    assert a["MessageId"] != b["MessageId"]
    err = await c.error(
        "CreateQueue",
        QueueName="bad.fifo",
        Attributes={"FifoQueue": "true", "FifoThroughputLimit": "perMessageGroupId"},
    )
    assert err.code == "InvalidAttributeValue"


# -- purge -----------------------------------------------------------------------------------


@sqs
async def test_purge_and_its_sixty_second_rule(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    await c.SendMessage(QueueUrl=url, MessageBody="a")
    await c.SendMessage(QueueUrl=url, MessageBody="b", DelaySeconds=10)
    await c.SendMessage(QueueUrl=url, MessageBody="c")
    [m] = (await c.ReceiveMessage(QueueUrl=url))["Messages"]
    await c.PurgeQueue(QueueUrl=url)
    assert await counts(c, url) == (0, 0, 0)
    err = await c.error("DeleteMessage", QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert err.code == "InvalidParameterValue"
    assert (await c.error("PurgeQueue", QueueUrl=url)).code == "PurgeQueueInProgress"
    c.clock.advance(59.0)
    assert (await c.error("PurgeQueue", QueueUrl=url)).code == "PurgeQueueInProgress"
    c.clock.advance(1.0)
    await c.PurgeQueue(QueueUrl=url)


@sqs
async def test_a_zero_visibility_timeout_shows_the_message_again_at_once(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    await c.SendMessage(QueueUrl=url, MessageBody="a")
    [m] = (await c.ReceiveMessage(QueueUrl=url, VisibilityTimeout=0))["Messages"]
    await c.SendMessage(QueueUrl=url, MessageBody="b")
    got = await c.ReceiveMessage(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])
    # Released before "b" was sent: back at the tail then, so first now, its second delivery.
    assert [(x["Body"], x["Attributes"]["ApproximateReceiveCount"]) for x in got["Messages"]] == [
        ("a", "2"),
        ("b", "1"),
    ]
    err = await c.error("DeleteMessage", QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert err.code == "InvalidParameterValue"


@sqs
async def test_fifo_receive_request_attempt_id_answers_a_retry_alike(c: Client) -> None:
    url = await fifo(c, ContentBasedDeduplication="true")
    for body in ("a", "b"):
        await c.SendMessage(QueueUrl=url, MessageBody=body, MessageGroupId="g")
    first = await c.ReceiveMessage(
        QueueUrl=url, MaxNumberOfMessages=1, ReceiveRequestAttemptId="r1"
    )
    c.clock.advance(20.0)
    retry = await c.ReceiveMessage(
        QueueUrl=url, MaxNumberOfMessages=1, ReceiveRequestAttemptId="r1"
    )
    assert retry == first
    # The retry restarted the visibility timeout (30 s): still hidden 20 s later.
    c.clock.advance(20.0)
    assert await c.ReceiveMessage(QueueUrl=url) == {}
    # Once the delivery is deleted, the same attempt id is a new receive.
    [m] = first["Messages"]
    await c.DeleteMessage(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    again = await c.ReceiveMessage(QueueUrl=url, ReceiveRequestAttemptId="r1")
    assert [x["Body"] for x in again["Messages"]] == ["b"]


@sqs
async def test_a_long_poll_goes_on_across_a_rebuild(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    poll = asyncio.create_task(c.ReceiveMessage(QueueUrl=url, WaitTimeSeconds=20))
    await settle()
    # The queue is empty: a retention change rebuilds its impl queue under the waiting poll.
    await c.SetQueueAttributes(QueueUrl=url, Attributes={"MessageRetentionPeriod": "600"})
    await settle()
    assert not poll.done()
    await c.SendMessage(QueueUrl=url, MessageBody="x")
    got = await asyncio.wait_for(poll, 5.0)
    assert [m["Body"] for m in got["Messages"]] == ["x"]
    # Its receipt is of the new impl queue: it deletes.
    await c.DeleteMessage(QueueUrl=url, ReceiptHandle=got["Messages"][0]["ReceiptHandle"])


@sqs
async def test_the_default_size_limit_is_one_mebibyte(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    await c.SendMessage(QueueUrl=url, MessageBody="x" * 1_048_576)
    err = await c.error("SendMessage", QueueUrl=url, MessageBody="x" * 1_048_577)
    assert err.code == "InvalidParameterValue" and "1048576" in err.message
    err = await c.error(
        "SetQueueAttributes", QueueUrl=url, Attributes={"MaximumMessageSize": "1048577"}
    )
    assert err.code == "InvalidAttributeValue"
    assert await counts(c, url) == (1, 0, 0)
