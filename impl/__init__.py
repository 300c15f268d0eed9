"""The threaded implementation of the queue contract (``../shared/contract.md``, section 3).

    >>> from impl import FakeClock, Queue
    >>> with Queue[str](capacity=2, visibility_timeout=30.0, clock=FakeClock()) as q:
    ...     q.send("hello", id="a")
    ...     m = q.receive()
    ...     (m.id, m.body, m.attempt, q.delete(m.receipt))
    'a'
    ('a', 'hello', 1, True)

``Queue`` is the SQS-style queue; ``JobQueue`` is the single-owner job-queue API of the second
seed, a thin adapter over the same engine; ``FifoQueue`` is the SQS FIFO queue (message groups,
deduplication), a subclass of ``Queue`` (contract section 2b).
"""

from impl.clock import Clock, FakeClock, MonotonicClock
from impl.errors import DuplicateIdError, Empty, Full, ShutDown
from impl.fifo import FifoQueue
from impl.jobqueue import Job, JobQueue
from impl.message import (
    Entry,
    FifoMessage,
    Health,
    Message,
    Receipt,
    Snapshot,
    SnapshotMessage,
    Stats,
)
from impl.queue import Queue, TraceStep

__all__ = [
    "Clock",
    "DuplicateIdError",
    "Empty",
    "Entry",
    "FakeClock",
    "FifoMessage",
    "FifoQueue",
    "Full",
    "Health",
    "Job",
    "JobQueue",
    "Message",
    "MonotonicClock",
    "Queue",
    "Receipt",
    "ShutDown",
    "Snapshot",
    "SnapshotMessage",
    "Stats",
    "TraceStep",
]
