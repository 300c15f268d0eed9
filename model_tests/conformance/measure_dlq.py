"""Measure what moto's SQS does with dead-letter queues, retention and move tasks (contract section
7).

``python -m model_tests.conformance.measure_dlq`` runs a fixed set of probes on moto's
in-process ``mock_aws`` with the kit's fake clock (:class:`model_tests.conformance.sqs.MotoClock`:
moto's SQS reads time only through ``moto.core.utils.utcnow``, so no probe sleeps) and prints
one line per observation, ``probe: what was seen``. Its output is recorded in
``docs/runs/moto-dlq.txt`` (first line: the command); every claim the docs make about moto's
dead-letter queues, ``MessageRetentionPeriod``, ``RedriveAllowPolicy`` and the move-task calls
is a line of that file.

The probes only observe: nothing here is judged against the model (the conformance kit does
that, :mod:`model_tests.conformance.oracle`). Each probe makes fresh queues.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from model_tests.conformance.sqs import MOTO_REGION, MotoClock


class Probe:
    """One moto backend, a client on it and the patched clock; :meth:`say` prints a line."""

    def __init__(self, client: Any, clock: MotoClock, out: TextIO) -> None:
        self.client = client
        self.clock = clock
        self.out = out
        self._made = 0

    def say(self, probe: str, text: str) -> None:
        print(f"{probe}: {text}", file=self.out, flush=True)

    def queue(self, name: str, fifo: bool = False, **attributes: str) -> tuple[str, str]:
        """Create a queue (its name made unique); its ``(url, arn)``."""
        self._made += 1
        full = f"{name}-{self._made}" + (".fifo" if fifo else "")
        attrs = {"FifoQueue": "true", **attributes} if fifo else dict(attributes)
        url = str(self.client.create_queue(QueueName=full, Attributes=attrs)["QueueUrl"])
        return url, self.attribute(url, "QueueArn")

    def attribute(self, url: str, name: str) -> str:
        """One attribute as ``GetQueueAttributes All`` returns it (``<absent>`` if it does not)."""
        got = self.client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
        return str(got["Attributes"].get(name, "<absent>"))

    def counts(self, url: str) -> str:
        """``visible/not_visible/delayed`` from ``GetQueueAttributes``."""
        a = self.client.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        return (
            f"visible={a['ApproximateNumberOfMessages']} "
            f"not_visible={a['ApproximateNumberOfMessagesNotVisible']} "
            f"delayed={a['ApproximateNumberOfMessagesDelayed']}"
        )

    def send(self, url: str, body: str, group: str | None = None) -> str:
        params: dict[str, Any] = {"QueueUrl": url, "MessageBody": body}
        if group is not None:
            params |= {"MessageGroupId": group, "MessageDeduplicationId": f"{body}-dedup"}
        return str(self.client.send_message(**params)["MessageId"])

    def receive(self, url: str, n: int = 1) -> list[dict[str, Any]]:
        got = self.client.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=n,
            WaitTimeSeconds=0,
            AttributeNames=["All"],
        )
        return list(got.get("Messages", []))


def show(messages: list[dict[str, Any]]) -> str:
    """Received messages as ``body(count=N, sent=T[, group=G])``; ``nothing`` if none."""
    if not messages:
        return "nothing"
    parts = []
    for m in messages:
        a = m["Attributes"]
        group = f", group={a['MessageGroupId']}" if "MessageGroupId" in a else ""
        parts.append(f"{m['Body']}(count={a['ApproximateReceiveCount']}{group})")
    return ", ".join(parts)


def outcome(call: Callable[[], object]) -> str:
    """What a call did: ``accepted (...)``, a botocore error's code and message, or the
    exception's type and text."""
    try:
        result = call()
    except Exception as e:  # the probe records whatever moto raises
        info = getattr(e, "response", {}).get("Error", {})
        if info:
            return f"error {info.get('Code')!s}: {info.get('Message')!s}"
        return f"raises {type(e).__name__}: {e}"
    if isinstance(result, dict):
        result = {k: v for k, v in result.items() if k != "ResponseMetadata"}
    return f"accepted {json.dumps(result, sort_keys=True, default=str)[:200]}"


def redrive_policy(arn: str, max_receives: int) -> str:
    return json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": max_receives})


def dead_letter(p: Probe, fifo: bool) -> None:
    """When a message moves into the RedrivePolicy target, and what it keeps."""
    tag = f"dead-letter {'fifo' if fifo else 'standard'}"
    dlq, dlq_arn = p.queue("dlq", fifo)
    src, _ = p.queue("src", fifo, VisibilityTimeout="5", RedrivePolicy=redrive_policy(dlq_arn, 2))
    sent_id = p.send(src, "m", "g" if fifo else None)
    sent_at = ""
    for i in (1, 2):
        got = p.receive(src)
        p.say(tag, f"receive {i} from source (maxReceiveCount 2, visibility 5 s): {show(got)}")
        if got:
            sent_at = got[0]["Attributes"]["SentTimestamp"]
        p.clock.advance(6)
    p.say(tag, f"6 s after the 2nd delivery, before any receive: source {p.counts(src)}")
    p.say(tag, f"6 s after the 2nd delivery, before any receive: dlq {p.counts(dlq)}")
    p.clock.advance(100)
    p.say(tag, f"100 s more with no receive: source {p.counts(src)}; dlq {p.counts(dlq)}")
    got = p.receive(src)
    p.say(tag, f"receive 3 from source: {show(got)}")
    p.say(tag, f"after receive 3: source {p.counts(src)}; dlq {p.counts(dlq)}")
    p.clock.advance(10)
    got = p.receive(dlq)
    if not got:
        p.say(tag, "receive from dlq: nothing")
        return
    a = got[0]["Attributes"]
    p.say(tag, f"receive from dlq 10 s later: {show(got)}")
    p.say(tag, f"MessageId kept on the move: {got[0]['MessageId'] == sent_id}")
    p.say(
        tag,
        f"receive count kept on the move: the dlq's first delivery has count "
        f"{a['ApproximateReceiveCount']} (2 receives in the source, then this one)",
    )
    p.say(tag, f"SentTimestamp kept on the move: {a['SentTimestamp'] == sent_at}")


def retention(p: Probe) -> None:
    """Whether MessageRetentionPeriod deletes a message, when, and what a receive does."""
    tag = "retention"
    q, _ = p.queue("ret", MessageRetentionPeriod="60", VisibilityTimeout="5")
    p.say(tag, f"MessageRetentionPeriod read back: {p.attribute(q, 'MessageRetentionPeriod')}")
    p.say(
        tag,
        "MessageRetentionPeriod=59 (SQS's minimum is 60): "
        + outcome(lambda: p.queue("low", MessageRetentionPeriod="59")),
    )
    p.send(q, "early")
    p.clock.advance(59.9)
    p.say(tag, f"receive 59.9 s after the send (period 60): {show(p.receive(q))}")
    p.send(q, "a")
    p.send(q, "b")
    p.clock.advance(60)
    p.say(tag, f"60 s after sending a, b (period 60), before any receive: {p.counts(q)}")
    p.clock.advance(1000)
    p.say(tag, f"1000 s more, still no receive: {p.counts(q)}")
    got = p.receive(q, 10)
    p.say(tag, f"receive up to 10: {show(got)}")
    p.say(tag, f"after that receive: {p.counts(q)}")
    got = p.receive(q, 10)
    p.say(tag, f"receive up to 10 again: {show(got)}")
    p.say(tag, f"after it: {p.counts(q)}")
    p.client.set_queue_attributes(QueueUrl=q, Attributes={"MessageRetentionPeriod": "1209600"})
    p.clock.advance(6)
    got = p.receive(q, 10)
    p.say(tag, f"retention raised to 1209600, 6 s later, receive up to 10: {show(got)}")
    # Exactly at the period (moto's SentTimestamp is whole milliseconds).
    q2, _ = p.queue("edge", MessageRetentionPeriod="60")
    p.send(q2, "c")
    p.clock.advance(60)
    p.say(tag, f"receive exactly 60 s after the send (period 60): {show(p.receive(q2))}")


def retention_dlq(p: Probe, fifo: bool) -> None:
    """A dead-lettered message and the dlq's retention: from the original send, or the move?"""
    tag = f"retention in dlq {'fifo' if fifo else 'standard'}"
    dlq, dlq_arn = p.queue("rdlq", fifo, MessageRetentionPeriod="120")
    src, _ = p.queue("rsrc", fifo, VisibilityTimeout="50", RedrivePolicy=redrive_policy(dlq_arn, 1))
    p.send(src, "m", "g" if fifo else None)
    p.receive(src)
    p.clock.advance(100)
    got = p.receive(src)
    p.say(
        tag,
        f"sent at 0, received once, receive at 100 s moves it: {show(got)}; dlq {p.counts(dlq)}",
    )
    p.clock.advance(10)
    got = p.receive(dlq)
    p.say(tag, f"dlq retention 120 s, receive from dlq at 110 s (10 s after the move): {show(got)}")
    p.clock.advance(60)
    p.say(tag, f"dlq at 170 s, before a receive: {p.counts(dlq)}")
    got = p.receive(dlq)
    p.say(
        tag, f"receive from dlq at 170 s (70 s after the move, 170 s after the send): {show(got)}"
    )


def move_tasks(p: Probe) -> None:
    """StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask."""
    tag = "move tasks"
    dlq, dlq_arn = p.queue("mdlq")
    src, src_arn = p.queue("msrc", RedrivePolicy=redrive_policy(dlq_arn, 1))
    p.say(
        tag,
        "StartMessageMoveTask: "
        + outcome(lambda: p.client.start_message_move_task(SourceArn=dlq_arn)),
    )
    p.say(
        tag,
        "StartMessageMoveTask with DestinationArn and MaxNumberOfMessagesPerSecond: "
        + outcome(
            lambda: p.client.start_message_move_task(
                SourceArn=dlq_arn, DestinationArn=src_arn, MaxNumberOfMessagesPerSecond=10
            )
        ),
    )
    p.say(
        tag,
        "ListMessageMoveTasks: "
        + outcome(lambda: p.client.list_message_move_tasks(SourceArn=dlq_arn)),
    )
    p.say(
        tag,
        "CancelMessageMoveTask: "
        + outcome(lambda: p.client.cancel_message_move_task(TaskHandle="not-a-task")),
    )
    p.say(
        tag,
        "ListDeadLetterSourceQueues: "
        + outcome(lambda: p.client.list_dead_letter_source_queues(QueueUrl=dlq)),
    )
    del src


def allow_policy(p: Probe) -> None:
    """RedriveAllowPolicy: stored? enforced at SetQueueAttributes? at the move?"""
    tag = "redrive allow policy"
    deny = json.dumps({"redrivePermission": "denyAll"})
    dlq, dlq_arn = p.queue("adlq", RedriveAllowPolicy=deny)
    p.say(tag, f"CreateQueue with RedriveAllowPolicy denyAll: accepted, {dlq.rsplit('/', 1)[1]}")
    p.say(
        tag,
        f"RedriveAllowPolicy in GetQueueAttributes All: {p.attribute(dlq, 'RedriveAllowPolicy')}",
    )
    named = outcome(
        lambda: p.client.get_queue_attributes(QueueUrl=dlq, AttributeNames=["RedriveAllowPolicy"])
    )
    p.say(tag, f"GetQueueAttributes RedriveAllowPolicy by name: {named}")
    set_ = outcome(
        lambda: p.client.set_queue_attributes(QueueUrl=dlq, Attributes={"RedriveAllowPolicy": deny})
    )
    p.say(tag, f"SetQueueAttributes RedriveAllowPolicy: {set_}")
    made = outcome(
        lambda: p.queue("asrc", VisibilityTimeout="5", RedrivePolicy=redrive_policy(dlq_arn, 1))
    )
    p.say(tag, f"a source whose RedrivePolicy names a denyAll dlq: {made}")
    src = (
        p.client.get_queue_url(QueueName=f"asrc-{p._made}")["QueueUrl"]
        if "accepted" in made
        else None
    )
    if src is None:
        return
    p.send(src, "m")
    p.receive(src)
    p.clock.advance(6)
    p.receive(src)
    p.say(tag, f"after maxReceiveCount on that source: dlq {p.counts(dlq)}")


def kinds(p: Probe) -> None:
    """RedrivePolicy across kinds and to a queue that does not exist."""
    tag = "redrive policy checks"
    std, std_arn = p.queue("kstd")
    fifo, fifo_arn = p.queue("kfifo", True)
    p.say(
        tag,
        "standard source, FIFO dlq: "
        + outcome(lambda: p.queue("k1", RedrivePolicy=redrive_policy(fifo_arn, 1))),
    )
    p.say(
        tag,
        "FIFO source, standard dlq: "
        + outcome(lambda: p.queue("k2", True, RedrivePolicy=redrive_policy(std_arn, 1))),
    )
    gone = std_arn + "-gone"
    p.say(
        tag,
        "dlq that does not exist: "
        + outcome(lambda: p.queue("k3", RedrivePolicy=redrive_policy(gone, 1))),
    )
    del std, fifo


PROBES: tuple[Callable[[Probe], None], ...] = (
    lambda p: dead_letter(p, fifo=False),
    lambda p: dead_letter(p, fifo=True),
    retention,
    lambda p: retention_dlq(p, fifo=False),
    lambda p: retention_dlq(p, fifo=True),
    move_tasks,
    allow_policy,
    kinds,
)


def measure(out: TextIO) -> None:
    """Run every probe on a fresh moto backend, each line written to ``out``."""
    import boto3  # type: ignore[import-untyped]
    import moto
    from moto import mock_aws

    print(f"moto {moto.__version__}, boto3 {boto3.__version__}", file=out)
    for probe in PROBES:
        clock = MotoClock()
        with mock_aws(), clock.patched():
            client = boto3.client(
                "sqs",
                region_name=MOTO_REGION,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
            probe(Probe(client, clock, out))


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(
        prog="python -m model_tests.conformance.measure_dlq",
        description="Probe moto's dead-letter queues, retention and move tasks on a fake clock "
        "and print one line per observation (recorded in docs/runs/moto-dlq.txt).",
    ).parse_args(argv)
    measure(sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
