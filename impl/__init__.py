"""The threaded implementation of the queue contract (``docs/contract.md``, section 3).

    >>> from impl import FakeClock, Queue
    >>> with Queue[str](capacity=2, visibility_timeout=30.0, clock=FakeClock()) as q:
    ...     q.send("hello", id="a")
    ...     m = q.receive()
    ...     (m.id, m.body, m.attempt, q.delete(m.receipt))
    'a'
    ('a', 'hello', 1, True)

``Queue`` is the SQS-style queue; ``FifoQueue`` is the SQS FIFO queue (message groups,
deduplication; contract section 2b); both are the one threaded driver (``BaseQueue``,
``impl/threaded.py``) of a queue machine with no lock, no clock and no waiting
(``impl/machine.py``, ``impl/fifo_machine.py``; ``impl.AsyncQueue`` drives the same machine
on an event loop). ``JobQueue`` is the single-owner job-queue API of the second seed, a
thin adapter over ``Queue``. A queue's ``dead_letter=`` names another queue as its dead-letter
queue (a move, one step across the two); ``retention=`` ages messages out; ``start_redrive``
on a dead-letter queue starts a :class:`RedriveTask` (``impl/redrive.py``).
"""

from impl.aio import AsyncFifoQueue, AsyncQueue
from impl.clock import Clock, FakeClock, MonotonicClock
from impl.errors import DuplicateIdError, Empty, Full, RedriveRunning, ShutDown
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
from impl.queue import Queue
from impl.redrive import RedriveStatus, RedriveTask
from impl.threaded import BaseQueue, TraceStep

__all__ = [
    "AsyncFifoQueue",
    "AsyncQueue",
    "BaseQueue",
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
    "RedriveRunning",
    "RedriveStatus",
    "RedriveTask",
    "ShutDown",
    "Snapshot",
    "SnapshotMessage",
    "Stats",
    "TraceStep",
]
