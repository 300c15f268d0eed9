"""The durable endpoint (``serve(data=FILE)``): the restart rules of docs/contract.md section 9,
each on a fake clock, through ``Endpoint.restart`` (a crash: nothing closed, the uncommitted
lost) and a clean close; the data file's errors; and a journal that does not replay.

The rules: queues, attributes, tags, dead-letter links and running move tasks come back; a
message in flight at the crash comes back at its deadline with its attempt kept, its receipt
handle dead; delays, retention and the deduplication window keep their times on the clock the
journal recorded, and the clock resumes there (the real clock: plus the time it was down).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sqs_endpoint
from sqs_endpoint import endpoint as endpoint_module
from sqs_endpoint.endpoint import Endpoint
from sqs_endpoint.errors import SqsError
from sqs_endpoint.journal import APPLICATION_ID, DataFileError, Journal

BASE = "http://test"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "sqs.sqlite3"


@pytest.fixture
def ep(data: Path) -> Iterator[Endpoint]:
    with sqs_endpoint.serve(port=0, clock="fake", data=data) as endpoint:
        yield endpoint


def create(ep: Endpoint, name: str, **attrs: str) -> str:
    params: dict[str, Any] = {"QueueName": name}
    if attrs:
        params["Attributes"] = attrs
    url: str = ep.call("CreateQueue", params)["QueueUrl"]
    return url


def receive(ep: Endpoint, url: str, n: int = 10, **more: Any) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = ep.call(
        "ReceiveMessage",
        {"QueueUrl": url, "MaxNumberOfMessages": n, "AttributeNames": ["All"], **more},
    ).get("Messages", [])
    return got


def counts(ep: Endpoint, url: str) -> tuple[int, int, int]:
    a = ep.call("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})["Attributes"]
    return (
        int(a["ApproximateNumberOfMessages"]),
        int(a["ApproximateNumberOfMessagesNotVisible"]),
        int(a["ApproximateNumberOfMessagesDelayed"]),
    )


# -- what comes back ----------------------------------------------------------------------------


@pytest.mark.parametrize("crash", [True, False], ids=["crash", "clean"])
def test_queues_attributes_tags_and_dead_letter_links_come_back(ep: Endpoint, crash: bool) -> None:
    dlq = create(ep, "dead")
    dlq_arn = ep.call("GetQueueAttributes", {"QueueUrl": dlq, "AttributeNames": ["QueueArn"]})[
        "Attributes"
    ]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2})
    url = create(ep, "jobs", VisibilityTimeout="7", RedrivePolicy=policy)
    ep.call("TagQueue", {"QueueUrl": url, "Tags": {"team": "payments"}})
    before = ep.call("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})
    ep.restart(crash=crash)
    assert ep.recovered > 0
    assert ep.call("ListQueues", {})["QueueUrls"] == [
        ep.url + "/000000000000/dead",
        ep.url + "/000000000000/jobs",
    ]
    after = ep.call("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})
    assert after == before
    assert ep.call("ListQueueTags", {"QueueUrl": url})["Tags"] == {"team": "payments"}
    assert ep.call("ListDeadLetterSourceQueues", {"QueueUrl": dlq})["queueUrls"] == [
        ep.url + "/000000000000/jobs"
    ]


def test_an_answered_send_and_delete_survive_and_messages_keep_what_they_said(
    ep: Endpoint,
) -> None:
    url = create(ep, "jobs")
    attrs = {"blob": {"DataType": "Binary", "BinaryValue": b"\x00\xff"}}
    sent = ep.call("SendMessage", {"QueueUrl": url, "MessageBody": "a", "MessageAttributes": attrs})
    gone = ep.call("SendMessage", {"QueueUrl": url, "MessageBody": "b"})
    handle = receive(ep, url)[1]["ReceiptHandle"]  # "b"'s: "a" first, then "b"
    ep.call("DeleteMessage", {"QueueUrl": url, "ReceiptHandle": handle})
    ep.advance(31)  # "a"'s delivery expires
    first = receive(ep, url, MessageAttributeNames=["All"])
    ep.restart()
    ep.advance(31)
    again = receive(ep, url, MessageAttributeNames=["All"])
    assert [m["MessageId"] for m in again] == [sent["MessageId"]]
    assert gone["MessageId"] not in {m["MessageId"] for m in again}
    for key in ("Body", "MD5OfBody", "MessageAttributes", "MD5OfMessageAttributes"):
        assert again[0][key] == first[0][key]
    for key in ("SentTimestamp", "ApproximateFirstReceiveTimestamp"):
        assert again[0]["Attributes"][key] == first[0]["Attributes"][key]
    assert again[0]["Attributes"]["ApproximateReceiveCount"] == "3"


def test_a_delivery_in_flight_comes_back_at_its_deadline_its_receipt_dead(ep: Endpoint) -> None:
    url = create(ep, "jobs", VisibilityTimeout="30")
    ep.call("SendMessage", {"QueueUrl": url, "MessageBody": "a"})
    ep.advance(10)
    (m,) = receive(ep, url)
    ep.restart()
    assert ep.now() == 10.0  # the clock resumes where the journal ends
    with pytest.raises(SqsError) as e:
        ep.call("DeleteMessage", {"QueueUrl": url, "ReceiptHandle": m["ReceiptHandle"]})
    assert e.value.code == "InvalidParameterValue" and "expired" in e.value.message
    with pytest.raises(SqsError) as e:
        ep.call(
            "ChangeMessageVisibility",
            {"QueueUrl": url, "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0},
        )
    assert e.value.code == "MessageNotInflight"
    assert counts(ep, url) == (0, 1, 0)  # still in flight: not before its deadline
    ep.advance(29.5)
    assert receive(ep, url) == []
    ep.advance(0.5)  # its deadline, 10 + 30
    (back,) = receive(ep, url)
    assert back["MessageId"] == m["MessageId"]
    assert back["Attributes"]["ApproximateReceiveCount"] == "2"  # that receive counted
    ep.call("DeleteMessage", {"QueueUrl": url, "ReceiptHandle": back["ReceiptHandle"]})
    assert counts(ep, url) == (0, 0, 0)


def test_delays_and_retention_keep_their_times(ep: Endpoint) -> None:
    url = create(ep, "jobs", MessageRetentionPeriod="60")
    ep.call("SendMessage", {"QueueUrl": url, "MessageBody": "late", "DelaySeconds": 10})
    ep.call("SendMessage", {"QueueUrl": url, "MessageBody": "old"})
    ep.advance(4)
    ep.restart()
    assert counts(ep, url) == (1, 0, 1)
    ep.advance(5.5)
    assert counts(ep, url) == (1, 0, 1)  # 9.5 s after its send: still delayed
    ep.advance(0.5)
    assert counts(ep, url) == (2, 0, 0)
    ep.restart()
    ep.advance(50)  # 60 s after the sends: both age out
    assert counts(ep, url) == (0, 0, 0)


def test_the_fifo_deduplication_window_and_sequence_numbers_go_on(ep: Endpoint) -> None:
    url = create(ep, "jobs.fifo", FifoQueue="true")
    fifo = {"QueueUrl": url, "MessageGroupId": "g", "MessageDeduplicationId": "d"}
    first = ep.call(
        "SendMessage",
        {**fifo, "MessageBody": "a"},
    )
    ep.advance(100)
    ep.restart()
    again = ep.call(
        "SendMessage",
        {**fifo, "MessageBody": "a2"},
    )
    assert again["MessageId"] == first["MessageId"]  # within 5 minutes: a duplicate
    ep.advance(200)  # 300 s after the first send: the window closed
    later = ep.call(
        "SendMessage",
        {**fifo, "MessageBody": "a3"},
    )
    assert later["MessageId"] != first["MessageId"]
    assert int(later["SequenceNumber"]) > int(first["SequenceNumber"])
    assert [m["Body"] for m in receive(ep, url)] == ["a", "a3"]  # the group, in order


def test_a_running_move_task_comes_back_and_goes_on(ep: Endpoint) -> None:
    dlq = create(ep, "dead")
    arn = ep.call("GetQueueAttributes", {"QueueUrl": dlq, "AttributeNames": ["QueueArn"]})[
        "Attributes"
    ]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 1})
    src = create(ep, "jobs", VisibilityTimeout="5", RedrivePolicy=policy)
    for body in "abc":
        ep.call("SendMessage", {"QueueUrl": src, "MessageBody": body})
    assert len(receive(ep, src)) == 3
    ep.advance(5)  # released after their one receive: dead-lettered
    assert counts(ep, dlq) == (3, 0, 0)
    ep.call("StartMessageMoveTask", {"SourceArn": arn, "MaxNumberOfMessagesPerSecond": 1})
    assert counts(ep, src) == (1, 0, 0)  # the first tick is due at once
    ep.restart()
    (task,) = ep.call("ListMessageMoveTasks", {"SourceArn": arn})["Results"]
    assert task["Status"] == "RUNNING"
    ep.advance(2)
    assert counts(ep, src) == (3, 0, 0) and counts(ep, dlq) == (0, 0, 0)
    (task,) = ep.call("ListMessageMoveTasks", {"SourceArn": arn})["Results"]
    assert task["Status"] == "COMPLETED"


def test_the_real_clock_resumes_with_the_time_it_was_down(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sqs_endpoint.serve(port=0, clock="real", data=data) as ep:
        url = create(ep, "jobs", VisibilityTimeout="3600")
        ep.call("SendMessage", {"QueueUrl": url, "MessageBody": "a"})
        assert len(receive(ep, url)) == 1
        left = ep.now()
    # Two hours pass while it is down: the endpoint reads the wall time once at its start.
    down = time.time() + 7200
    monkeypatch.setattr(endpoint_module, "time", _Wall(down))
    with sqs_endpoint.serve(port=0, clock="real", data=data) as ep:
        assert ep.now() >= left + 7200
        # The delivery's hour passed while the endpoint was down: visible at once.
        (m,) = receive(ep, url)
        assert m["Attributes"]["ApproximateReceiveCount"] == "2"


class _Wall:
    """A stand-in for the ``time`` module as the endpoint reads it at a start: its wall time."""

    def __init__(self, at: float) -> None:
        self.at = at

    def time(self) -> float:
        return self.at


def test_the_in_memory_endpoint_is_unchanged(tmp_path: Path) -> None:
    with sqs_endpoint.serve(port=0, clock="fake") as ep:
        assert ep.recovered == 0
        with pytest.raises(RuntimeError, match="durable"):
            ep.restart()
    assert list(tmp_path.iterdir()) == []


# -- the data file ------------------------------------------------------------------------------


def _unchanged_after_refusal(path: Path, match: str) -> None:
    before = path.read_bytes()
    with pytest.raises(DataFileError, match=match) as e:
        sqs_endpoint.serve(port=0, clock="fake", data=path)
    assert str(path) in str(e.value)
    assert path.read_bytes() == before


def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(data: Path) -> None:
    data.write_text("queues: none\n")
    _unchanged_after_refusal(data, "not an SQLite database")


def test_another_applications_database_is_refused_and_left_alone(data: Path) -> None:
    conn = sqlite3.connect(data)
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.commit()
    conn.close()
    _unchanged_after_refusal(data, "another application's")


def test_a_newer_version_is_refused(data: Path) -> None:
    conn = sqlite3.connect(data)
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute("PRAGMA user_version=99")
    conn.execute("CREATE TABLE meta (key TEXT)")
    conn.commit()
    conn.close()
    _unchanged_after_refusal(data, "version 99")


def test_a_torn_file_is_refused_and_left_alone(ep: Endpoint, data: Path) -> None:
    url = create(ep, "jobs")
    for i in range(200):
        ep.call("SendMessage", {"QueueUrl": url, "MessageBody": f"m{i}" * 50})
    ep.close()
    raw = data.read_bytes()
    data.write_bytes(raw[: len(raw) // 2])  # a copy cut short
    _unchanged_after_refusal(data, "damaged|malformed")


def test_a_file_in_use_by_another_endpoint_is_refused(ep: Endpoint, data: Path) -> None:
    with pytest.raises(DataFileError, match="in use"):
        sqs_endpoint.serve(port=0, clock="fake", data=data)
    create(ep, "still-mine")  # the first endpoint goes on


def test_a_journal_that_does_not_replay_is_refused_and_left_alone(ep: Endpoint, data: Path) -> None:
    url = create(ep, "jobs")
    ep.call("SendMessage", {"QueueUrl": url, "MessageBody": "a"})
    ep.close()
    conn = sqlite3.connect(data)
    conn.execute("UPDATE journal SET \"check\" = '\"not-the-id\"' WHERE name = 'SendMessage'")
    conn.commit()
    conn.close()
    _unchanged_after_refusal(data, r"journal entry \d+ \(SendMessage at 0.0\) does not replay")


def test_bad_arguments_name_themselves(data: Path) -> None:
    with pytest.raises(ValueError, match="data_sync"):
        sqs_endpoint.serve(port=0, data=data, data_sync="sometimes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="data"):
        sqs_endpoint.serve(port=0, data=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="data or service"):
        sqs_endpoint.serve(port=0, data=data, service=lambda clock: None)  # type: ignore[arg-type,return-value]
    assert not data.exists()


def test_the_journal_holds_each_answered_operation_once(ep: Endpoint, data: Path) -> None:
    url = create(ep, "jobs")
    ep.call("SendMessage", {"QueueUrl": url, "MessageBody": "a"})
    receive(ep, url)
    receive(ep, url)  # nothing delivered: nothing journaled
    ep.call("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})
    ep.close()
    j = Journal(data)
    try:
        ops = [(e.kind, e.name) for e in j.entries() if e.kind == "op"]
    finally:
        j.close()
    assert ops == [("op", "CreateQueue"), ("op", "SendMessage"), ("op", "ReceiveMessage")]
