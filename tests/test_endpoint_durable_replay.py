"""A restart of the durable endpoint brings back every queue exactly as it was: random
programs of every operation that changes something (sends and batches with delays, receives
with every visibility timeout, deletes, visibility changes, purges, tags, attribute changes,
dead-letter moves, move tasks, clock advances), with restarts (crash or clean) at random
points. After each restart, each queue's impl snapshot (every message, its state, attempt,
deadline and SQS side), its attributes and tags and the move tasks are what they were before;
only the receipt handles are dead (docs/contract.md section 9).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path
from typing import Any, cast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqs_endpoint
from sqs_endpoint.endpoint import Endpoint
from sqs_endpoint.errors import SqsError
from sqs_endpoint.service import Service

Op = tuple[str, Any]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.sampled_from([0, 0, 5])),
        st.tuples(st.just("send_batch"), st.integers(1, 3)),
        st.tuples(st.just("receive"), st.tuples(st.integers(1, 3), st.sampled_from([0, 4, 30]))),
        st.tuples(st.just("receive"), st.tuples(st.integers(1, 3), st.sampled_from([4, 10]))),
        st.tuples(st.just("delete"), st.integers(0, 9)),
        st.tuples(st.just("delete_batch"), st.integers(1, 3)),
        st.tuples(st.just("change"), st.tuples(st.integers(0, 9), st.sampled_from([0, 3, 50]))),
        st.tuples(st.just("advance"), st.sampled_from([1, 4, 31])),
        st.tuples(st.just("advance"), st.sampled_from([4, 11])),
        st.tuples(st.just("purge"), st.just(None)),
        st.tuples(st.just("tag"), st.integers(0, 3)),
        st.tuples(st.just("set_vt"), st.sampled_from([5, 30])),
        st.tuples(st.just("move"), st.sampled_from([None, 1])),
        st.tuples(st.just("restart"), st.booleans()),
    ),
    min_size=5,
    max_size=40,
)


def _state(ep: Endpoint) -> Any:
    """What a restart must keep: the snapshots (bodies as all their SQS fields), the queues'
    attributes and tags, the move tasks."""
    service = cast(Service, ep.service)

    def project(snap: Any) -> Any:
        def msg(m: Any) -> Any:
            return (m.id, dataclasses.astuple(m.body), m.attempt, m.deadline, m.visible_at)

        return (
            tuple(map(msg, snap.visible)),
            tuple(map(msg, snap.in_flight)),
            tuple(map(msg, snap.dead)),
            tuple(map(msg, snap.delayed)),
            snap.done,
            snap.dedup,
            snap.aged_out,
            snap.moved,
        )

    snaps = ep._on_loop(service.snapshots)  # the service is the loop's
    out: dict[str, Any] = {name: project(s) for name, s in snaps.items()}
    for name in ep.queues():
        url = f"{ep.url}/000000000000/{name}"
        attrs = ep.call("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})
        out[name + " attrs"] = attrs
        out[name + " tags"] = ep.call("ListQueueTags", {"QueueUrl": url})
    dead = next(name for name in ep.queues() if name.startswith("dead"))
    arn = out[dead + " attrs"]["Attributes"]["QueueArn"]
    tasks = ep.call("ListMessageMoveTasks", {"SourceArn": arn})["Results"]
    out["tasks"] = tasks
    return out


class _Program:
    def __init__(self, ep: Endpoint, fifo: bool) -> None:
        self.ep = ep
        self.fifo = fifo
        self.handles: list[str] = []
        self.sent = 0
        suffix, attrs = (".fifo", {"FifoQueue": "true"}) if fifo else ("", {})
        self.names = ("dead" + suffix, "jobs" + suffix)
        dlq = ep.call("CreateQueue", {"QueueName": self.names[0], "Attributes": attrs})["QueueUrl"]
        arn = ep.call("GetQueueAttributes", {"QueueUrl": dlq, "AttributeNames": ["QueueArn"]})[
            "Attributes"
        ]["QueueArn"]
        self.arn = arn
        policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 2})
        self.url = ep.call(
            "CreateQueue",
            {
                "QueueName": self.names[1],
                "Attributes": {**attrs, "VisibilityTimeout": "10", "RedrivePolicy": policy},
            },
        )["QueueUrl"]

    def body(self) -> str:
        self.sent += 1
        return f"m{self.sent}"

    def message(self, delay: int = 0) -> dict[str, Any]:
        """A message to send: on a FIFO queue in one of two groups, with a deduplication id
        that repeats now and then (no delay of its own: a FIFO queue takes none)."""
        body = self.body()
        if self.fifo:
            return {
                "MessageBody": body,
                "MessageGroupId": f"g{self.sent % 2}",
                "MessageDeduplicationId": f"d{self.sent // 3}",
            }
        return {"MessageBody": body, "DelaySeconds": delay}

    def run(self, op: Op) -> None:
        name, arg = op
        ep, url = self.ep, self.url
        if name == "restart":
            before = _state(ep)
            ep.restart(crash=arg)
            assert _state(ep) == before
            self.handles.clear()  # dead now: a program of after the restart never uses them
        elif name == "send":
            ep.call("SendMessage", {"QueueUrl": url, **self.message(arg)})
        elif name == "send_batch":
            entries = [{"Id": f"e{i}", **self.message()} for i in range(arg)]
            ep.call("SendMessageBatch", {"QueueUrl": url, "Entries": entries})
        elif name == "receive":
            n, vt = arg
            got = ep.call(
                "ReceiveMessage",
                {"QueueUrl": url, "MaxNumberOfMessages": n, "VisibilityTimeout": vt},
            )
            self.handles += [m["ReceiptHandle"] for m in got.get("Messages", [])]
        elif name == "delete" and self.handles:
            handle = self.handles[arg % len(self.handles)]
            ep.call("DeleteMessage", {"QueueUrl": url, "ReceiptHandle": handle})
        elif name == "delete_batch" and self.handles:
            entries = [
                {"Id": f"e{i}", "ReceiptHandle": h} for i, h in enumerate(self.handles[-arg:])
            ]
            ep.call("DeleteMessageBatch", {"QueueUrl": url, "Entries": entries})
        elif name == "change" and self.handles:
            i, vt = arg
            handle = self.handles[i % len(self.handles)]
            ep.call(
                "ChangeMessageVisibility",
                {"QueueUrl": url, "ReceiptHandle": handle, "VisibilityTimeout": vt},
            )
        elif name == "advance":
            ep.advance(arg)
        elif name == "purge":
            ep.call("PurgeQueue", {"QueueUrl": url})
        elif name == "tag":
            ep.call("TagQueue", {"QueueUrl": url, "Tags": {f"k{arg}": f"v{self.sent}"}})
        elif name == "set_vt":
            ep.call(
                "SetQueueAttributes",
                {"QueueUrl": url, "Attributes": {"VisibilityTimeout": str(arg)}},
            )
        elif name == "move":
            params: dict[str, Any] = {"SourceArn": self.arn}
            if arg is not None:
                params["MaxNumberOfMessagesPerSecond"] = arg
            ep.call("StartMessageMoveTask", params)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=ops, fifo=st.booleans())
def test_a_restart_brings_every_queue_back_as_it_was(
    tmp_path: Path, program: list[Op], fifo: bool
) -> None:
    data = tmp_path / f"replay-{len(list(tmp_path.iterdir()))}.sqlite3"
    with sqs_endpoint.serve(port=0, clock="fake", data=data) as ep:
        p = _Program(ep, fifo)
        for op in [*program, ("restart", True)]:
            # A refused operation changes nothing (a stale handle, a purge too soon).
            with contextlib.suppress(SqsError):
                p.run(op)
