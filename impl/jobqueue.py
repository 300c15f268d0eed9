"""The single-owner job-queue API of the second seed, as a thin adapter over ``impl.Queue``.

``JobQueue(capacity)`` is an ``impl.Queue`` whose deliveries never expire
(``visibility_timeout=None``), driven only by non-blocking calls, with receipts named by
``(id, attempt)``. So one engine, tested once against the spec, serves both APIs, and the job
queue never starts a thread. Results are booleans and ``None`` instead of exceptions, exactly as
the seed asks; only arguments of the wrong type or form raise.
"""

from __future__ import annotations

from dataclasses import dataclass

from impl.errors import DuplicateIdError, Empty, Full
from impl.queue import Queue
from impl.validate import check_id, check_int


@dataclass(frozen=True, slots=True)
class Job:
    """One reservation of a job: its id, original payload, and attempt number (1 for the first)."""

    id: str
    payload: str
    attempt: int


class JobQueue:
    """A FIFO of jobs that a worker reserves, then acknowledges or returns for retry.

    Capacity counts active jobs (waiting and in flight). Acks and retries act only with the
    exact current attempt of an in-flight job; everything else returns ``False`` and changes
    nothing. Not meant to be shared between threads by its callers (single owner), though every
    call is atomic because the engine underneath is thread-safe.
    """

    def __init__(self, capacity: int) -> None:
        check_int("capacity", capacity, 0)
        self._queue: Queue[str] = Queue(capacity, visibility_timeout=None)

    def enqueue(self, id: str, payload: str) -> bool:
        """Append a new job to the waiting tail: ``True``; or ``False`` and no change when the
        id was ever accepted here or the queue is full (a rejected id stays unreserved)."""
        check_id("id", id)
        if not isinstance(payload, str):
            raise TypeError(f"payload must be a str, got {type(payload).__name__}")
        try:
            self._queue.send(payload, id=id, block=False)
        except (DuplicateIdError, Full):
            return False
        return True

    def reserve(self) -> Job | None:
        """Take the oldest waiting job and mark it in flight; ``None`` if no job is waiting."""
        try:
            m = self._queue.receive(block=False)
        except Empty:
            return None
        return Job(m.id, m.body, m.attempt)

    def ack(self, id: str, attempt: int) -> bool:
        """Complete the in-flight job ``id`` if ``attempt`` is its current one; else ``False``."""
        return self._queue.delete(self._queue.receipt(id, attempt))

    def retry(self, id: str, attempt: int) -> bool:
        """Return the in-flight job ``id`` (current ``attempt`` only) to the waiting tail."""
        return self._queue.retry(self._queue.receipt(id, attempt))

    def cancel(self, id: str) -> bool:
        """Remove a waiting or in-flight job, killing its reservation; ``False`` otherwise."""
        return self._queue.cancel(id)

    def __repr__(self) -> str:
        return f"JobQueue(capacity={self._queue.capacity!r})"
