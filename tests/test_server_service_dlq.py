"""The operation layer beyond the message path: dead-letter queues, retention, move tasks,
rebuilding a queue for an attribute impl fixes, tags, permissions, and trace recording.

Same harness as ``tests/test_server_service.py``: every request validated by the model, then
the Service, on an ``impl.FakeClock``.
"""

from __future__ import annotations

import json
import pathlib
import re

from service_client import ACCOUNT, BASE, Client, counts, fifo, sqs


def arn(name: str) -> str:
    return f"arn:aws:sqs:us-east-1:{ACCOUNT}:{name}"


def redrive(target: str, count: int) -> str:
    return json.dumps({"deadLetterTargetArn": arn(target), "maxReceiveCount": count})


async def pair(c: Client, count: int = 2, *, vt: str = "10") -> tuple[str, str]:
    dlq = (await c.CreateQueue(QueueName="dlq"))["QueueUrl"]
    src = (
        await c.CreateQueue(
            QueueName="src",
            Attributes={"VisibilityTimeout": vt, "RedrivePolicy": redrive("dlq", count)},
        )
    )["QueueUrl"]
    return src, dlq


@sqs
async def test_dead_lettering_is_eager_and_keeps_the_receive_count(c: Client) -> None:
    src, dlq = await pair(c)
    sent = await c.SendMessage(QueueUrl=src, MessageBody="poison")
    for _ in range(2):
        got = await c.ReceiveMessage(QueueUrl=src)
        assert len(got["Messages"]) == 1
        c.clock.advance(10.0)
    # At the second expiry, not at a later receive: already in the dead-letter queue.
    assert await counts(c, src) == (0, 0, 0)
    assert await counts(c, dlq) == (1, 0, 0)
    [m] = (await c.ReceiveMessage(QueueUrl=dlq, AttributeNames=["All"]))["Messages"]
    assert m["MessageId"] == sent["MessageId"] and m["Body"] == "poison"
    assert m["Attributes"]["ApproximateReceiveCount"] == "3"
    assert m["Attributes"]["DeadLetterQueueSourceArn"] == arn("src")
    listed = await c.ListDeadLetterSourceQueues(QueueUrl=dlq)
    assert listed["queueUrls"] == [f"{BASE}/{ACCOUNT}/src"]
    assert (await c.ListDeadLetterSourceQueues(QueueUrl=src))["queueUrls"] == []


@sqs
async def test_visibility_zero_dead_letters_at_once(c: Client) -> None:
    src, dlq = await pair(c, 1)
    await c.SendMessage(QueueUrl=src, MessageBody="x")
    [m] = (await c.ReceiveMessage(QueueUrl=src))["Messages"]
    await c.ChangeMessageVisibility(
        QueueUrl=src, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
    )
    assert await counts(c, dlq) == (1, 0, 0)
    err = await c.error("DeleteMessage", QueueUrl=src, ReceiptHandle=m["ReceiptHandle"])
    assert err.code == "InvalidParameterValue"


@sqs
async def test_redrive_policy_rules(c: Client) -> None:
    await c.CreateQueue(QueueName="std")
    await fifo(c, "f.fifo")
    cases: list[tuple[str, dict[str, str]]] = [
        ("a", {"RedrivePolicy": redrive("missing", 3)}),
        ("a", {"RedrivePolicy": redrive("f.fifo", 3)}),
        ("a", {"RedrivePolicy": redrive("std", 0)}),
        ("a", {"RedrivePolicy": redrive("std", 1001)}),
        ("b.fifo", {"FifoQueue": "true", "RedrivePolicy": redrive("std", 3)}),
    ]
    for name, attrs in cases:
        err = await c.error("CreateQueue", QueueName=name, Attributes=attrs)
        assert err.code == "InvalidAttributeValue", attrs
    assert c.service.queues() == ["f.fifo", "std"]
    # A target's RedriveAllowPolicy is honoured.
    deny = json.dumps({"redrivePermission": "denyAll"})
    await c.CreateQueue(QueueName="closed", Attributes={"RedriveAllowPolicy": deny})
    err = await c.error(
        "CreateQueue", QueueName="a", Attributes={"RedrivePolicy": redrive("closed", 3)}
    )
    assert err.code == "InvalidAttributeValue"
    by = json.dumps({"redrivePermission": "byQueue", "sourceQueueArns": [arn("ok")]})
    await c.CreateQueue(QueueName="picky", Attributes={"RedriveAllowPolicy": by})
    await c.CreateQueue(QueueName="ok", Attributes={"RedrivePolicy": redrive("picky", 3)})
    err = await c.error(
        "CreateQueue", QueueName="no", Attributes={"RedrivePolicy": redrive("picky", 3)}
    )
    assert err.code == "InvalidAttributeValue"
    got = await c.GetQueueAttributes(
        QueueUrl=f"{BASE}/{ACCOUNT}/ok", AttributeNames=["RedrivePolicy"]
    )
    assert json.loads(got["Attributes"]["RedrivePolicy"]) == {
        "deadLetterTargetArn": arn("picky"),
        "maxReceiveCount": 3,
    }


@sqs
async def test_set_redrive_policy_rebuilds_an_empty_queue_only(c: Client) -> None:
    dlq = (await c.CreateQueue(QueueName="dlq"))["QueueUrl"]
    src = (await c.CreateQueue(QueueName="src", Attributes={"VisibilityTimeout": "5"}))["QueueUrl"]
    await c.SetQueueAttributes(QueueUrl=src, Attributes={"RedrivePolicy": redrive("dlq", 1)})
    await c.SendMessage(QueueUrl=src, MessageBody="x")
    # Holding a message now: changing what impl fixes is refused, and nothing changes.
    err = await c.error(
        "SetQueueAttributes", QueueUrl=src, Attributes={"MessageRetentionPeriod": "60"}
    )
    assert err.code == "InvalidAttributeValue" and "holds messages" in err.message
    # The dead-letter queue is a target now: it cannot be rebuilt either.
    err = await c.error(
        "SetQueueAttributes", QueueUrl=dlq, Attributes={"MessageRetentionPeriod": "60"}
    )
    assert err.code == "InvalidAttributeValue" and "dead-letter queue of another" in err.message
    # Attributes the Service passes per call change at once.
    await c.SetQueueAttributes(QueueUrl=src, Attributes={"VisibilityTimeout": "7"})
    await c.ReceiveMessage(QueueUrl=src)
    c.clock.advance(7.0)
    assert await counts(c, dlq) == (1, 0, 0)
    # Its dead-letter queue now holds a message that came from it: still refused.
    err = await c.error("SetQueueAttributes", QueueUrl=src, Attributes={"RedrivePolicy": ""})
    assert "came from it" in err.message
    [m] = (await c.ReceiveMessage(QueueUrl=dlq))["Messages"]
    await c.DeleteMessage(QueueUrl=dlq, ReceiptHandle=m["ReceiptHandle"])
    await c.SetQueueAttributes(QueueUrl=src, Attributes={"RedrivePolicy": ""})
    assert (await c.ListDeadLetterSourceQueues(QueueUrl=dlq))["queueUrls"] == []
    attrs = (await c.GetQueueAttributes(QueueUrl=src, AttributeNames=["All"]))["Attributes"]
    assert "RedrivePolicy" not in attrs


@sqs
async def test_retention_ages_messages_out(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q", Attributes={"MessageRetentionPeriod": "60"}))[
        "QueueUrl"
    ]
    await c.SendMessage(QueueUrl=url, MessageBody="old")
    c.clock.advance(30.0)
    await c.SendMessage(QueueUrl=url, MessageBody="new")
    c.clock.advance(30.0)
    got = await c.ReceiveMessage(QueueUrl=url, MaxNumberOfMessages=10)
    assert [m["Body"] for m in got["Messages"]] == ["new"]
    # Changing the retention of an empty queue rebuilds it.
    c.clock.advance(30.0)
    assert await counts(c, url) == (0, 0, 0)
    await c.SetQueueAttributes(QueueUrl=url, Attributes={"MessageRetentionPeriod": "120"})
    await c.SendMessage(QueueUrl=url, MessageBody="kept")
    c.clock.advance(100.0)
    assert await counts(c, url) == (1, 0, 0)


@sqs
async def test_fifo_delay_is_fixed_by_a_rebuild(c: Client) -> None:
    url = await fifo(c)
    await c.SetQueueAttributes(QueueUrl=url, Attributes={"DelaySeconds": "5"})
    await c.SendMessage(
        QueueUrl=url, MessageBody="x", MessageGroupId="g", MessageDeduplicationId="d"
    )
    assert await counts(c, url) == (0, 0, 1)
    c.clock.advance(5.0)
    assert await counts(c, url) == (1, 0, 0)
    err = await c.error("SetQueueAttributes", QueueUrl=url, Attributes={"DelaySeconds": "0"})
    assert err.code == "InvalidAttributeValue"


@sqs
async def test_fifo_rebuild_waits_for_the_dedup_window(c: Client) -> None:
    url = await fifo(c)
    await c.SendMessage(
        QueueUrl=url, MessageBody="x", MessageGroupId="g", MessageDeduplicationId="d"
    )
    [m] = (await c.ReceiveMessage(QueueUrl=url))["Messages"]
    await c.DeleteMessage(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    err = await c.error("SetQueueAttributes", QueueUrl=url, Attributes={"DelaySeconds": "3"})
    assert "deduplication" in err.message
    c.clock.advance(300.0)
    await c.SetQueueAttributes(QueueUrl=url, Attributes={"DelaySeconds": "3"})


async def dead_letters(c: Client, src: str, n: int) -> list[str]:
    ids = []
    for i in range(n):
        ids.append((await c.SendMessage(QueueUrl=src, MessageBody=f"m{i}"))["MessageId"])
    got = await c.ReceiveMessage(QueueUrl=src, MaxNumberOfMessages=10)
    for m in got["Messages"]:
        await c.ChangeMessageVisibility(
            QueueUrl=src, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
        )
    return ids


@sqs
async def test_message_move_task_back_to_the_source(c: Client) -> None:
    src, dlq = await pair(c, 1)
    ids = await dead_letters(c, src, 3)
    assert await counts(c, dlq) == (3, 0, 0)
    err = await c.error("StartMessageMoveTask", SourceArn=arn("src"))
    assert err.code == "InvalidParameterValue"  # not a dead-letter queue
    err = await c.error("StartMessageMoveTask", SourceArn=arn("nope"))
    assert err.code == "ResourceNotFoundException"
    handle = (await c.StartMessageMoveTask(SourceArn=arn("dlq")))["TaskHandle"]
    assert await counts(c, dlq) == (0, 0, 0)
    got = (await c.ReceiveMessage(QueueUrl=src, MaxNumberOfMessages=10, AttributeNames=["All"]))[
        "Messages"
    ]
    assert [m["Body"] for m in got] == ["m0", "m1", "m2"]
    assert all(m["MessageId"] not in ids for m in got)  # new messages
    assert all(m["Attributes"]["ApproximateReceiveCount"] == "1" for m in got)
    [task] = (await c.ListMessageMoveTasks(SourceArn=arn("dlq")))["Results"]
    assert task["Status"] == "COMPLETED" and task["ApproximateNumberOfMessagesMoved"] == 3
    assert "TaskHandle" not in {k for k, v in task.items() if v is not None}
    err = await c.error("CancelMessageMoveTask", TaskHandle=handle)
    assert err.code == "UnsupportedOperation"
    err = await c.error("CancelMessageMoveTask", TaskHandle="bm9wZQ==")
    assert err.code == "ResourceNotFoundException"


@sqs
async def test_rated_move_task_to_a_destination_and_cancel(c: Client) -> None:
    src, dlq = await pair(c, 1)
    other = (await c.CreateQueue(QueueName="other"))["QueueUrl"]
    await dead_letters(c, src, 3)
    handle = (
        await c.StartMessageMoveTask(
            SourceArn=arn("dlq"), DestinationArn=arn("other"), MaxNumberOfMessagesPerSecond=1
        )
    )["TaskHandle"]
    err = await c.error("StartMessageMoveTask", SourceArn=arn("dlq"))
    assert err.code == "UnsupportedOperation"
    assert await counts(c, other) == (1, 0, 0)  # the first tick is due at once
    c.clock.advance(1.0)
    assert await counts(c, other) == (2, 0, 0)
    [task] = (await c.ListMessageMoveTasks(SourceArn=arn("dlq"), MaxResults=10))["Results"]
    assert task["Status"] == "RUNNING" and task["TaskHandle"] == handle
    assert task["ApproximateNumberOfMessagesToMove"] == 3
    assert task["DestinationArn"] == arn("other") and task["MaxNumberOfMessagesPerSecond"] == 1
    moved = await c.CancelMessageMoveTask(TaskHandle=handle)
    assert moved == {"ApproximateNumberOfMessagesMoved": 2}
    c.clock.advance(5.0)
    assert await counts(c, other) == (2, 0, 0) and await counts(c, dlq) == (1, 0, 0)
    err = await c.error(
        "StartMessageMoveTask", SourceArn=arn("dlq"), MaxNumberOfMessagesPerSecond=501
    )
    assert err.code == "InvalidParameterValue"


@sqs
async def test_move_task_refuses_a_deleted_source(c: Client) -> None:
    src, dlq = await pair(c, 1)
    await dead_letters(c, src, 1)
    # Another source keeps dlq a dead-letter queue after src is deleted.
    await c.CreateQueue(QueueName="src2", Attributes={"RedrivePolicy": redrive("dlq", 1)})
    await c.DeleteQueue(QueueUrl=src)
    err = await c.error("StartMessageMoveTask", SourceArn=arn("dlq"))
    assert err.code == "InvalidParameterValue" and "deleted" in err.message
    assert await counts(c, dlq) == (1, 0, 0)
    await c.StartMessageMoveTask(SourceArn=arn("dlq"), DestinationArn=arn("src2"))
    assert await counts(c, f"{BASE}/{ACCOUNT}/src2") == (1, 0, 0)


@sqs
async def test_tags(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q", tags={"team": "a"}))["QueueUrl"]
    assert await c.ListQueueTags(QueueUrl=url) == {"Tags": {"team": "a"}}
    await c.TagQueue(QueueUrl=url, Tags={"env": "test", "team": "b"})
    assert (await c.ListQueueTags(QueueUrl=url))["Tags"] == {"team": "b", "env": "test"}
    await c.UntagQueue(QueueUrl=url, TagKeys=["team", "absent"])
    assert (await c.ListQueueTags(QueueUrl=url))["Tags"] == {"env": "test"}
    many = {f"k{i}": "v" for i in range(50)}
    err = await c.error("TagQueue", QueueUrl=url, Tags=many)
    assert err.code == "InvalidParameterValue"
    assert (await c.ListQueueTags(QueueUrl=url))["Tags"] == {"env": "test"}
    await c.UntagQueue(QueueUrl=url, TagKeys=["env"])
    assert await c.ListQueueTags(QueueUrl=url) == {}


@sqs
async def test_permissions_are_stored_in_the_policy(c: Client) -> None:
    url = (await c.CreateQueue(QueueName="q"))["QueueUrl"]
    await c.AddPermission(
        QueueUrl=url, Label="send", AWSAccountIds=["111122223333"], Actions=["SendMessage"]
    )
    err = await c.error(
        "AddPermission", QueueUrl=url, Label="send", AWSAccountIds=["1"], Actions=["SendMessage"]
    )
    assert err.code == "InvalidParameterValue"
    err = await c.error(
        "AddPermission", QueueUrl=url, Label="x", AWSAccountIds=["1"], Actions=["Fly"]
    )
    assert err.code == "InvalidParameterValue"
    policy = json.loads(
        (await c.GetQueueAttributes(QueueUrl=url, AttributeNames=["Policy"]))["Attributes"][
            "Policy"
        ]
    )
    [statement] = policy["Statement"]
    assert statement["Sid"] == "send" and statement["Action"] == ["SQS:SendMessage"]
    assert statement["Principal"] == {"AWS": ["arn:aws:iam::111122223333:root"]}
    await c.RemovePermission(QueueUrl=url, Label="send")
    assert await c.GetQueueAttributes(QueueUrl=url, AttributeNames=["Policy"]) == {}
    err = await c.error("RemovePermission", QueueUrl=url, Label="send")
    assert err.code == "InvalidParameterValue"


@sqs
async def test_kms_and_sse_attributes_are_echoed(c: Client) -> None:
    url = (
        await c.CreateQueue(
            QueueName="q",
            Attributes={"KmsMasterKeyId": "alias/aws/sqs", "KmsDataKeyReusePeriodSeconds": "300"},
        )
    )["QueueUrl"]
    a = (await c.GetQueueAttributes(QueueUrl=url, AttributeNames=["All"]))["Attributes"]
    assert a["KmsMasterKeyId"] == "alias/aws/sqs" and a["SqsManagedSseEnabled"] == "false"
    assert a["KmsDataKeyReusePeriodSeconds"] == "300"


def test_the_run_is_recorded_for_tla(tmp_path: pathlib.Path) -> None:
    import asyncio

    from impl import FakeClock
    from sqs_endpoint.service import Service
    from tla.recorded import read_run

    async def main() -> None:
        c = Client(FakeClock())
        c.service = Service(c.clock, record=tmp_path)
        dlq = (await c.CreateQueue(QueueName="dlq"))["QueueUrl"]
        url = (await c.CreateQueue(QueueName="q", Attributes={"RedrivePolicy": redrive("dlq", 1)}))[
            "QueueUrl"
        ]
        await c.SendMessage(QueueUrl=url, MessageBody="x")
        [m] = (await c.ReceiveMessage(QueueUrl=url))["Messages"]
        await c.DeleteMessage(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        await c.DeleteQueue(QueueUrl=url)
        await c.CreateQueue(QueueName="q")
        await c.DeleteQueue(QueueUrl=dlq)
        await c.service.aclose()

    asyncio.run(main())
    [path] = tmp_path.iterdir()
    run = read_run(path)
    assert run.ended and set(run.queues) == {"dlq.1", "q.1", "q.2"}
    q1 = run.queues["q.1"]
    assert (q1.dead_letter, q1.max_receives, q1.retention) == ("dlq.1", 1, 345600.0)
    assert [s[0] for s in q1.steps] == ["send", "receive_batch", "delete"]
    assert q1.steps[2][2] is True


@sqs
async def test_a_fifo_dead_letter_names_its_source_and_its_id_as_dedup_id(c: Client) -> None:
    await fifo(c, "dlq.fifo")
    src = await fifo(c, "src.fifo", RedrivePolicy=redrive("dlq.fifo", 1))
    sent = await c.SendMessage(
        QueueUrl=src, MessageBody="x", MessageGroupId="g", MessageDeduplicationId="d"
    )
    [m] = (await c.ReceiveMessage(QueueUrl=src))["Messages"]
    await c.ChangeMessageVisibility(
        QueueUrl=src, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
    )
    dlq = f"{BASE}/{ACCOUNT}/dlq.fifo"
    [d] = (await c.ReceiveMessage(QueueUrl=dlq, AttributeNames=["All"]))["Messages"]
    assert d["MessageId"] == sent["MessageId"]
    assert d["Attributes"]["MessageDeduplicationId"] == sent["MessageId"]
    assert d["Attributes"]["DeadLetterQueueSourceArn"] == arn("src.fifo")
    assert d["Attributes"]["MessageGroupId"] == "g"


@sqs
async def test_deleting_a_queue_cancels_the_move_tasks_into_it(c: Client) -> None:
    src, dlq = await pair(c, 1)
    other = (await c.CreateQueue(QueueName="other"))["QueueUrl"]
    await dead_letters(c, src, 3)
    await c.StartMessageMoveTask(
        SourceArn=arn("dlq"), DestinationArn=arn("other"), MaxNumberOfMessagesPerSecond=1
    )
    assert await counts(c, dlq) == (2, 0, 0)
    await c.DeleteQueue(QueueUrl=other)
    c.clock.advance(10.0)
    assert await counts(c, dlq) == (2, 0, 0)  # nothing more moved into the deleted queue
    [task] = (await c.ListMessageMoveTasks(SourceArn=arn("dlq")))["Results"]
    assert (task["Status"], task["ApproximateNumberOfMessagesMoved"]) == ("CANCELLED", 1)
    # Back to the sources: deleting the source cancels it too.
    await c.StartMessageMoveTask(SourceArn=arn("dlq"), MaxNumberOfMessagesPerSecond=1)
    assert await counts(c, src) == (1, 0, 0)
    await c.DeleteQueue(QueueUrl=src)
    c.clock.advance(10.0)
    assert await counts(c, dlq) == (1, 0, 0)


@sqs
async def test_a_queue_a_move_task_fills_is_not_rebuilt(c: Client) -> None:
    src, _ = await pair(c, 1)
    other = (await c.CreateQueue(QueueName="other"))["QueueUrl"]
    await dead_letters(c, src, 2)
    await c.StartMessageMoveTask(
        SourceArn=arn("dlq"), DestinationArn=arn("other"), MaxNumberOfMessagesPerSecond=1
    )
    [m] = (await c.ReceiveMessage(QueueUrl=other))["Messages"]
    await c.DeleteMessage(QueueUrl=other, ReceiptHandle=m["ReceiptHandle"])
    err = await c.error(
        "SetQueueAttributes", QueueUrl=other, Attributes={"MessageRetentionPeriod": "600"}
    )
    assert "move task" in err.message
    c.clock.advance(1.0)
    assert await counts(c, other) == (1, 0, 0)


@sqs
async def test_dead_letter_sources_are_paged(c: Client) -> None:
    dlq = (await c.CreateQueue(QueueName="dlq"))["QueueUrl"]
    for name in ("c", "a", "b"):
        await c.CreateQueue(QueueName=name, Attributes={"RedrivePolicy": redrive("dlq", 3)})
    page = await c.ListDeadLetterSourceQueues(QueueUrl=dlq, MaxResults=2)
    assert page["queueUrls"] == [f"{BASE}/{ACCOUNT}/a", f"{BASE}/{ACCOUNT}/b"]
    rest = await c.ListDeadLetterSourceQueues(
        QueueUrl=dlq, MaxResults=2, NextToken=page["NextToken"]
    )
    assert rest["queueUrls"] == [f"{BASE}/{ACCOUNT}/c"] and rest.get("NextToken") is None
    err = await c.error("ListDeadLetterSourceQueues", QueueUrl=dlq, MaxResults=1001)
    assert err.code == "InvalidParameterValue"
    assert (await c.GetQueueUrl(QueueName="a", QueueOwnerAWSAccountId=ACCOUNT))["QueueUrl"]
    err = await c.error("GetQueueUrl", QueueName="a", QueueOwnerAWSAccountId="111122223333")
    assert err.code == "QueueDoesNotExist"


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@sqs
async def test_moved_messages_get_uuid_ids_unique_across_destinations(c: Client) -> None:
    # Two sources of one dead-letter queue, and a move task back to each source: every moved
    # message has a new UUID MessageId, as a sent one has, none repeated across the two
    # destinations (before, each got msg-1, msg-2, ... of its own).
    dlq = (await c.CreateQueue(QueueName="dlq"))["QueueUrl"]
    sources = [
        (
            await c.CreateQueue(
                QueueName=name,
                Attributes={"VisibilityTimeout": "10", "RedrivePolicy": redrive("dlq", 1)},
            )
        )["QueueUrl"]
        for name in ("src", "src2")
    ]
    sent = [await dead_letters(c, src, 2) for src in sources]
    assert await counts(c, dlq) == (4, 0, 0)
    await c.StartMessageMoveTask(SourceArn=arn("dlq"))
    moved = []
    for src in sources:
        got = (await c.ReceiveMessage(QueueUrl=src, MaxNumberOfMessages=10))["Messages"]
        assert len(got) == 2
        moved += [m["MessageId"] for m in got]
    assert all(UUID.fullmatch(id) for id in moved), moved
    assert len(set(moved)) == 4 and not set(moved) & {id for ids in sent for id in ids}


@sqs
async def test_a_rated_move_to_a_destination_gives_uuid_ids_too(c: Client) -> None:
    # The other path of a move task: one message per tick of the endpoint's clock, into a
    # queue named by DestinationArn; each moved message's MessageId is a new UUID.
    src, _ = await pair(c, 1)
    other = (await c.CreateQueue(QueueName="other"))["QueueUrl"]
    sent = await dead_letters(c, src, 3)
    await c.StartMessageMoveTask(
        SourceArn=arn("dlq"), DestinationArn=arn("other"), MaxNumberOfMessagesPerSecond=1
    )
    c.clock.advance(2.0)  # the first tick was due at once; two more
    got = (await c.ReceiveMessage(QueueUrl=other, MaxNumberOfMessages=10))["Messages"]
    moved = [m["MessageId"] for m in got]
    assert len(moved) == 3 and all(UUID.fullmatch(id) for id in moved), moved
    assert len(set(moved)) == 3 and not set(moved) & set(sent)
