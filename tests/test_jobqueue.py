"""``impl.JobQueue``: the second seed's job-queue API, its four examples and its rejections.

The examples are run straight from ``tests/data/seed_examples.jsonl`` (the seed's own inputs and
expected outputs) against ``JobQueue``; the ``new``/``use`` ops create and select queues.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from impl import Job, JobQueue

EXAMPLES = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "seed_examples.jsonl").read_text().splitlines()
    if line.strip()
]


def run(capacity: int, ops: list[list[Any]]) -> list[Any]:
    """Run the seed's op notation against JobQueue instances; one output per op."""
    queues = [JobQueue(capacity)]
    current = 0
    out: list[Any] = []
    for op, *args in ops:
        q = queues[current]
        if op == "enqueue":
            out.append(q.enqueue(args[0], args[1]))
        elif op == "reserve":
            job = q.reserve()
            out.append(None if job is None else [job.id, job.payload, job.attempt])
        elif op == "ack":
            out.append(q.ack(args[0], args[1]))
        elif op == "retry":
            out.append(q.retry(args[0], args[1]))
        elif op == "cancel":
            out.append(q.cancel(args[0]))
        elif op == "new":
            queues.append(JobQueue(capacity))
            current = len(queues) - 1
            out.append(None)
        elif op == "use":
            current = args[0]
            out.append(None)
        else:
            raise AssertionError(f"unknown op {op!r}")
    return out


def test_the_data_file_holds_the_four_seed_examples() -> None:
    assert [e["name"] for e in EXAMPLES] == [
        "fifo",
        "retry fences old attempt",
        "in flight capacity",
        "cancel keeps id reserved",
    ]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["name"] for e in EXAMPLES])
def test_seed_example(example: dict[str, Any]) -> None:
    given = example["input"]
    assert run(given["capacity"], given["ops"]) == example["expected"]


def test_reserve_returns_a_frozen_job_and_none_when_nothing_waits() -> None:
    q = JobQueue(2)
    assert q.reserve() is None
    assert q.enqueue("a", "")  # empty payloads are fine
    job = q.reserve()
    assert job == Job("a", "", 1)
    with pytest.raises(AttributeError):
        job.attempt = 2  # type: ignore[misc]
    assert q.reserve() is None  # "a" is in flight, nothing waits


def test_attempt_zero_stale_future_and_unknown_are_false_and_change_nothing() -> None:
    q = JobQueue(2)
    q.enqueue("a", "A")
    q.reserve()
    assert q.retry("a", 1)
    q.reserve()  # attempt 2
    for attempt in (0, 1, 3, 64):
        assert q.ack("a", attempt) is False
        assert q.retry("a", attempt) is False
    assert q.ack("b", 1) is False and q.retry("b", 1) is False and q.cancel("b") is False
    assert q.reserve() is None  # nothing changed: "a" still in flight with attempt 2
    assert q.ack("a", 2) is True


def test_repeated_operations_are_false() -> None:
    q = JobQueue(2)
    q.enqueue("a", "A")
    q.enqueue("b", "B")
    q.reserve()
    assert q.ack("a", 1) is True
    assert q.ack("a", 1) is False
    assert q.retry("a", 1) is False
    assert q.cancel("a") is False
    q.reserve()
    assert q.retry("b", 1) is True
    assert q.retry("b", 1) is False  # now waiting: no live reservation
    assert q.ack("b", 1) is False
    assert q.cancel("b") is True
    assert q.cancel("b") is False
    assert q.enqueue("a", "again") is False and q.enqueue("b", "again") is False


def test_operations_on_a_waiting_job_other_than_cancel_are_false() -> None:
    q = JobQueue(1)
    q.enqueue("a", "A")
    assert q.ack("a", 1) is False and q.retry("a", 1) is False
    assert q.reserve() == Job("a", "A", 1)


def test_retry_appends_to_the_tail_and_cancel_keeps_fifo_order() -> None:
    q = JobQueue(4)
    for i in "abcd":
        q.enqueue(i, i.upper())
    q.reserve()  # a
    assert q.cancel("c")
    assert q.retry("a", 1)
    got = [q.reserve() for _ in range(4)]
    assert got == [Job("b", "B", 1), Job("d", "D", 1), Job("a", "A", 2), None]


def test_a_full_queue_rejects_without_reserving_the_id() -> None:
    q = JobQueue(1)
    assert q.enqueue("a", "A")
    assert q.enqueue("b", "B") is False
    assert q.cancel("a")
    assert q.enqueue("b", "B") is True


def test_capacity_zero_accepts_nothing() -> None:
    q = JobQueue(0)
    assert q.enqueue("a", "A") is False
    assert q.reserve() is None


def test_separate_queues_share_nothing() -> None:
    out = run(
        1,
        [
            ["enqueue", "a", "A"],
            ["reserve"],
            ["new"],
            ["enqueue", "a", "other"],  # same id, other queue: accepted
            ["ack", "a", 1],  # queue 1's "a" is only waiting
            ["reserve"],
            ["use", 0],
            ["ack", "a", 1],
            ["use", 1],
            ["ack", "a", 1],
        ],
    )
    assert out == [
        True,
        ["a", "A", 1],
        None,
        True,
        False,
        ["a", "other", 1],
        None,
        True,
        None,
        True,
    ]


def test_a_job_queue_never_starts_a_thread() -> None:
    before = threading.active_count()
    q = JobQueue(3)
    q.enqueue("a", "A")
    job = q.reserve()
    assert job is not None and q.retry(job.id, job.attempt)
    assert threading.active_count() == before


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda q: q.enqueue(1, "A"), TypeError, "id"),
        (lambda q: q.enqueue("a", 1), TypeError, "payload"),
        (lambda q: q.enqueue("", "A"), ValueError, "id"),
        (lambda q: q.ack(None, 1), TypeError, "id"),
        (lambda q: q.ack("a", "1"), TypeError, "attempt"),
        (lambda q: q.retry("a", 1.5), TypeError, "attempt"),
        (lambda q: q.retry("a", -1), ValueError, "attempt"),
        (lambda q: q.cancel(7), TypeError, "id"),
    ],
)
def test_bad_argument_types_raise_naming_the_argument(
    call: Any, error: type[Exception], name: str
) -> None:
    q = JobQueue(2)
    q.enqueue("a", "A")
    with pytest.raises(error, match=name):
        call(q)
    assert q.reserve() == Job("a", "A", 1)  # unchanged


@pytest.mark.parametrize("capacity", [-1, "2", None, 1.0])
def test_bad_capacity(capacity: object) -> None:
    with pytest.raises((TypeError, ValueError), match="capacity"):
        JobQueue(capacity)  # type: ignore[arg-type]
