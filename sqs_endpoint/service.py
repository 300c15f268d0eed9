"""Every SQS operation over ``impl.AsyncQueue`` / ``impl.AsyncFifoQueue``; no wire format.

:class:`Service` is the seam between the wire (``sqs_endpoint/http.py``: JSON and query requests
parsed and validated by ``sqs_endpoint.model``) and the queues: ``await service.call(op, params,
base_url=...)`` takes the operation's validated request (botocore member names) and returns its
result structure, or raises :class:`sqs_endpoint.errors.SqsError` with SQS's documented code. It
holds
no queue semantics of its own: each message is one impl message (its SQS side, attributes and
digests, is the impl message's body, ``sqs_endpoint.messages.Stored``), so the contract's rules hold
as written, checked by the model and by TLC: a message is in exactly one queue and one state,
a move to a dead-letter queue is one step, a stale receipt never acts.

Run it on one event loop thread (the server's); every operation but ReceiveMessage's long poll
finishes without an ``await`` between its check and its step, so no other request interleaves
with it.

Where this endpoint differs from SQS (each operation's docstring says more):

- **A stale receipt never acts.** ``DeleteMessage`` with a well-formed handle of this queue that
  is not live (its delivery expired, was released, deleted or dead-lettered) answers
  ``InvalidParameterValue`` "The receipt handle has expired" (what SQS answers on FIFO queues);
  the redelivered copy is untouched. ``ChangeMessageVisibility`` answers ``MessageNotInflight``.
  A handle this endpoint never wrote, or one of another queue, is ``ReceiptHandleIsInvalid``.
- **Eager dead-lettering.** A message moves to its dead-letter queue at the release after its
  ``maxReceiveCount``-th delivery (its visibility timeout expiring, or a visibility change to
  0), not at a later receive; its ``ApproximateReceiveCount`` is kept in the dead-letter queue.
- **Strict order.** A standard queue delivers in FIFO order of visibility (SQS: best effort).
- **Exact counts.** The ``ApproximateNumberOf...`` attributes are exact.
- **Fixed at construction.** impl fixes a queue's ``RedrivePolicy`` and
  ``MessageRetentionPeriod`` (and a FIFO queue's ``DelaySeconds``) when it builds the queue.
  ``SetQueueAttributes`` that changes one of them rebuilds the queue, which it does only when
  nothing can be lost by it: the queue holds no message (delayed, visible or in flight), no other
  queue names it as its dead-letter queue, it runs no move task, its dead-letter queue holds no
  message that came from it, and (FIFO) no deduplication window is open. Otherwise it answers
  ``InvalidAttributeValue`` saying so, and changes nothing.
- **Restarts** (a durable endpoint, ``journal``): every answered operation survives; every
  receipt handle handed out before the restart answers as a stale one (docs/contract.md
  section 9).
- **No 60-second rule on re-creation.** A queue's name can be used again at once after
  ``DeleteQueue`` (SQS: ``QueueDeletedRecently`` for 60 s), so test fixtures can recreate it.
  A deleted queue's messages are gone, and so is every message that later dies into it as a
  dead-letter queue (its sources keep their policy, as on SQS).
- **Permissions and encryption are stored, not enforced**: ``AddPermission`` writes a statement
  into the ``Policy`` attribute, ``KmsMasterKeyId`` is echoed; no credentials are checked.
- **Memory**: impl keeps every accepted message id for the queue's life (finished bodies are
  dropped), and so does the Service's map from id to FIFO sequence number.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import itertools
import json
import logging
import pathlib
import re
import sqlite3
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

import impl
from impl.redrive import RedriveStatus, RedriveTask
from sqs_endpoint import attributes as qattrs
from sqs_endpoint import messages
from sqs_endpoint.errors import SqsError
from sqs_endpoint.http import client_gone
from sqs_endpoint.journal import DataFileError, Entry, IdSource, Journal
from sqs_endpoint.md5 import md5_of_message_attributes
from sqs_endpoint.messages import Stored
from sqs_endpoint.receipts import Handle, decode, encode

if TYPE_CHECKING:
    from tla.recorded import Recorder

__all__ = ["Service"]

log = logging.getLogger("sqs_endpoint.service")

#: SQS's visibility limit, seconds: per call, and total from a delivery's receive.
MAX_VISIBILITY: Final = 43_200
MAX_DELAY: Final = 900
MAX_WAIT: Final = 20
MAX_RECEIVE: Final = 10
#: SQS's FIFO deduplication interval, seconds.
DEDUP_INTERVAL: Final = 300.0
#: PurgeQueue: one purge per queue per 60 s.
PURGE_INTERVAL: Final = 60.0
#: The most bytes one SendMessageBatch may carry in all (SendMessageBatch: 1 MiB).
MAX_BATCH_BYTES: Final = 1_048_576
MAX_TAGS: Final = 50
MAX_LIST: Final = 1000
MAX_MOVE_RATE: Final = 500
#: A queue name: 1 to 80 characters in all, letters, digits, '-', '_', '.fifo' at the end.
QUEUE_NAME: Final = re.compile(r"(?=.{1,80}$)[A-Za-z0-9_-]+(\.fifo)?")
#: MessageGroupId / MessageDeduplicationId: 1 to 128 of alphanumerics and punctuation.
_FIFO_TOKEN: Final = re.compile(r"[A-Za-z0-9!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]{1,128}")
#: A group or dedup id impl can take as it is (the contract's id form, without '-').
_PLAIN: Final = re.compile(r"[A-Za-z0-9_]{1,64}")
_LABEL: Final = re.compile(r"[A-Za-z0-9_-]{1,80}")
#: System attribute names a receive may ask for (beside "All").
_STANDARD_SYSTEM: Final = (
    "ApproximateReceiveCount",
    "ApproximateFirstReceiveTimestamp",
    "SentTimestamp",
    "SenderId",
    "AWSTraceHeader",
    "DeadLetterQueueSourceArn",
)
_FIFO_SYSTEM: Final = ("MessageGroupId", "MessageDeduplicationId", "SequenceNumber")
#: The SQS actions a permission may name (AddPermission).
_ACTIONS: Final = frozenset(
    {
        "*",
        "SendMessage",
        "ReceiveMessage",
        "DeleteMessage",
        "ChangeMessageVisibility",
        "GetQueueAttributes",
        "GetQueueUrl",
        "ListDeadLetterSourceQueues",
        "PurgeQueue",
        "ListQueueTags",
    }
)

AnyQueue = impl.AsyncQueue[Stored] | impl.AsyncFifoQueue[Stored]

#: The operations that change nothing: a durable endpoint journals every other one that
#: succeeds (ReceiveMessage only when it delivered, at its step).
_READS: Final = frozenset(
    {
        "GetQueueUrl",
        "ListQueues",
        "GetQueueAttributes",
        "ListQueueTags",
        "ListDeadLetterSourceQueues",
        "ListMessageMoveTasks",
    }
)


def _check(operation: str, result: Mapping[str, Any]) -> Any:
    """What a journal entry keeps of an operation's answer, for its replay to compare: the
    ids a send gave, the entries a batch did, a move task's handle."""
    if operation == "SendMessage":
        return result["MessageId"]
    if operation == "SendMessageBatch":
        return [e["MessageId"] for e in result["Successful"]]
    if operation in ("DeleteMessageBatch", "ChangeMessageVisibilityBatch"):
        return [e["Id"] for e in result["Successful"]]
    if operation == "StartMessageMoveTask":
        return result["TaskHandle"]
    return None


def _hashed(text: str) -> str:
    # A group or dedup id in the form impl takes: plain ones as they are, any other as a hash
    # ("h-" and hex: it has a '-', so it never equals a plain one).
    if _PLAIN.fullmatch(text):
        return text
    return "h-" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _invalid(message: str) -> SqsError:
    return SqsError("InvalidParameterValue", message)


def _out_of_range(name: str, value: object, low: int, high: int) -> SqsError:
    return _invalid(
        f"Value {value} for parameter {name} is invalid. Reason: must be between {low} and {high}."
    )


def _gone() -> SqsError:
    return SqsError("QueueDoesNotExist", "The specified queue does not exist.")


def _expired(handle: str) -> SqsError:
    return _invalid(
        f"Value {handle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has "
        "expired."
    )


def _not_inflight() -> SqsError:
    return SqsError(
        "MessageNotInflight",
        "Message does not exist or is not available for visibility timeout change.",
    )


def _batch_error(entry_id: str, err: SqsError) -> dict[str, Any]:
    return {
        "Id": entry_id,
        "SenderFault": err.sender_fault,
        "Code": err.code,
        "Message": err.message,
    }


@dataclass(eq=False)
class _Task:
    """A message move task as SQS names it: the impl task and what ListMessageMoveTasks says."""

    id: str
    handle: str
    task: RedriveTask[Stored]
    source_arn: str
    destination_arn: str | None
    rate: int | None
    started: int  # epoch ms


@dataclass(eq=False)
class _Attempt:
    """A FIFO receive made with a ReceiveRequestAttemptId: when, its deliveries (id, attempt,
    deadline) and its answer."""

    at: float
    incarnation: int
    deliveries: list[tuple[str, int, float | None]]
    result: dict[str, Any]


@dataclass(eq=False)
class _Queue:
    """One SQS queue: its impl queue and what SQS says about it besides its messages."""

    name: str
    fifo: bool
    arn: str
    attrs: dict[str, str]
    tags: dict[str, str]
    created: int  # epoch seconds
    modified: int
    q: AnyQueue
    incarnation: int
    last_purge: float | None = None
    #: message id -> (attempt, received_at on the clock) of its latest delivery: the 12-hour cap.
    delivered: dict[str, tuple[int, float]] = field(default_factory=dict)
    sequence: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    #: FIFO: message id -> its sequence number (what a deduplicated send answers).
    sequence_of: dict[str, str] = field(default_factory=dict)
    tasks: list[_Task] = field(default_factory=list)
    #: FIFO: the receives made with a ReceiveRequestAttemptId in the last 5 minutes.
    attempts: dict[str, _Attempt] = field(default_factory=dict)

    def attr_int(self, name: str) -> int:
        return int(self.attrs[name])

    @property
    def redrive(self) -> qattrs.RedrivePolicy | None:
        text = self.attrs.get("RedrivePolicy", "")
        return qattrs.parse_redrive_policy(text) if text else None


@dataclass(eq=False)
class _Prepared:
    """A send checked and ready for impl: the stored message and how impl takes it."""

    stored: Stored
    id: str
    delay: float | None
    group: str | None
    dedup: str | None


@dataclass(eq=False)
class _Received:
    """What a ReceiveMessage does with its deliveries once its step is taken."""

    state: _Queue
    q: AnyQueue
    vt: float
    system: set[str]
    wanted: Sequence[str]
    attempt_id: str | None
    params: dict[str, Any]
    base: str


class Service:
    """Every SQS operation over impl.AsyncQueue / impl.AsyncFifoQueue; no wire format.

    ``clock``: the queues' time (the server's ``ServerClock``, or an ``impl.FakeClock`` in
    tests); ``account`` and ``region`` make the queue URLs (``{base_url}/{account}/{name}``) and
    ARNs; ``record``: a directory into which the run is recorded (``tla.recorded.Recorder``:
    every queue with its configuration and every step of its trace, a rebuilt queue as one
    deleted and created again), which ``python -m tla.recorded DIR`` checks against the TLA+
    spec. SQS timestamps are epoch milliseconds: the epoch at
    the clock's reading 0 is taken once, here.
    """

    def __init__(
        self,
        clock: impl.Clock,
        *,
        account: str = "000000000000",
        region: str = "us-east-1",
        record: pathlib.Path | None = None,
        journal: Journal | None = None,
    ) -> None:
        self._clock = clock
        self._account = account
        self._region = region
        self._recorder: Recorder | None = None
        if record is not None:
            from tla.recorded import Recorder  # only a recording endpoint needs tla

            self._recorder = Recorder(record, start=clock.now())
        # The only wall-clock reading: where the clock's 0 falls in epoch time (a data file's
        # own, kept from its first run, so timestamps go on across restarts).
        self._epoch0 = time.time() - clock.now() if journal is None else journal.epoch0
        #: The durable endpoint's journal (None: in memory), the ids (seeded by the data file:
        #: a replay draws the same), the entry being replayed and whether its operation was
        #: noted, and whether a sweep is an operation's own (journaled with it, not apart).
        self.journal = journal
        self._ids = IdSource(None if journal is None else journal.secret)
        self._replaying: Entry | None = None
        self._replay_noted = False
        self._inner_sweep = False
        on_change = getattr(clock, "on_change", None)
        if journal is not None and on_change is not None:
            on_change(self._clock_moved)
        self._queues: dict[str, _Queue] = {}
        #: Every impl queue ever built -> its SQS queue (deleted ones too: a dead letter's
        #: DeadLetterQueueSourceArn names its source even after that is gone).
        self._owner: dict[int, _Queue] = {}
        self._incarnations = itertools.count(1)
        self._tasks: dict[str, _Task] = {}
        self._ops: dict[str, Callable[[dict[str, Any], str], Awaitable[dict[str, Any]]]] = {
            name[4:]: getattr(self, name) for name in dir(self) if name.startswith("_op_")
        }

    # -- the seam --------------------------------------------------------------------------------

    async def call(
        self, operation: str, params: dict[str, Any], *, base_url: str
    ) -> dict[str, Any]:
        """Run ``operation`` (an SQS operation name) on ``params`` (``validate_input``'s
        result); its result in botocore member names, or ``SqsError``."""
        handler = self._ops.get(operation)
        if handler is None:
            raise SqsError(
                "InvalidAction", f"The action {operation} is not valid for this endpoint."
            )
        base = base_url.rstrip("/")
        if self.journal is None:
            return await handler(params, base)
        drawn = self._ids.drawn
        try:
            result = await handler(params, base)
        except BaseException:
            self._commit(failing=True)
            raise
        if operation not in _READS and operation != "ReceiveMessage":
            # It ran within this turn of the loop, so the entry's time is its steps' time.
            self._note(operation, params, base, _check(operation, result), drawn)
        self._commit()
        return result

    # -- the journal (a durable endpoint) --------------------------------------------------------

    def _note(
        self, operation: str, params: dict[str, Any], base: str, check: Any, drawn: int
    ) -> None:
        """An operation that changed something: append it to the journal (written by the
        commit before its answer leaves); while replaying, compare it with the entry."""
        journal = self.journal
        if journal is None:
            return
        entry = self._replaying
        if entry is None:
            journal.append("op", operation, self._clock.now(), drawn, params, base, check)
            return
        if entry.name != operation or entry.check != check:
            raise DataFileError(
                f"{journal.path}: journal entry {entry.seq} ({entry.name} at {entry.now}) does "
                f"not replay: it did {check!r}, the journal says {entry.check!r}"
            )
        self._replay_noted = True

    def _swept(self, name: str, now: float) -> None:
        """A queue's sweep sink (``record_sweeps``): journal a sweep of the timers, unless an
        operation runs it (the operation's replay runs it again) or it is a replay's own."""
        journal = self.journal
        if journal is not None and self._replaying is None and not self._inner_sweep:
            journal.append("sweep", name, now, self._ids.drawn)

    def _clock_moved(self) -> None:
        """The clock moved (an advance): journal its time, at once, since the control API's
        answer says where it is now and a restart must resume from there."""
        journal = self.journal
        if journal is not None and self._replaying is None:
            journal.append("clock", "", self._clock.now(), self._ids.drawn)
            self._commit(failing=True)

    def _sweep(self, q: AnyQueue) -> None:
        """An operation's own sweep: part of the operation, not an entry of its own."""
        self._inner_sweep = True
        try:
            q.sweep()
        finally:
            self._inner_sweep = False

    def _commit(self, *, failing: bool = False) -> None:
        """Write what the journal holds, before an answer leaves. A write that fails answers
        ``InternalFailure`` (the entries stay, for the next commit); while another error is
        on its way out it is logged instead."""
        journal = self.journal
        if journal is None or self._replaying is not None or not journal.pending:
            return
        try:
            journal.commit()
        except (sqlite3.Error, DataFileError) as e:
            log.error("the data file %s could not be written: %s", journal.path, e)
            if not failing:
                raise SqsError(
                    "InternalFailure",
                    f"The endpoint could not write its data file: {e}",
                ) from None

    async def replay(self) -> int:
        """Replay the journal (a durable endpoint's start, on a frozen ``ServerClock`` at or
        before the first entry's time): each entry at its time, each operation checked
        against what it did. Returns how many entries were replayed. ``DataFileError`` if an
        entry does not replay (the file was written by other code, or damaged)."""
        journal = self.journal
        if journal is None:
            return 0
        clock = self._clock
        count = 0
        for entry in journal.entries():
            replay_to = getattr(clock, "replay_to", None)
            if replay_to is None:
                raise TypeError("replay needs a clock with replay_to (sqs_endpoint.ServerClock)")
            replay_to(entry.now)
            self._ids.drawn = entry.ids
            self._replaying = entry
            try:
                await self._replay_one(entry)
            except SqsError as e:
                raise DataFileError(
                    f"{journal.path}: journal entry {entry.seq} ({entry.name} at {entry.now}) "
                    f"does not replay: {e.code}: {e.message}"
                ) from None
            finally:
                self._replaying = None
            count += 1
        return count

    async def _replay_one(self, entry: Entry) -> None:
        if entry.kind == "sweep":
            state = self._queues.get(entry.name)
            if state is not None:
                state.q.sweep()
        elif entry.kind == "recover":
            self._recovered()
        elif entry.kind == "clock":
            pass  # the time it moved to, which the replay has set
        else:
            assert entry.params is not None and entry.base is not None
            self._replay_noted = False
            await self.call(entry.name, entry.params, base_url=entry.base)
            if not self._replay_noted:
                raise SqsError("InternalFailure", "it changed nothing on replay")

    def recover(self) -> None:
        """After :meth:`replay`: the restart itself, journaled (so a later replay makes it at
        the same point) and committed. Every queue's receipt handles of before are dead from
        now on: the process that handed them out is gone (docs/contract.md section 9)."""
        journal = self.journal
        if journal is None:
            return
        journal.append("recover", "", self._clock.now(), self._ids.drawn)
        journal.commit()
        self._recovered()

    def _recovered(self) -> None:
        # A new incarnation per queue (the impl queue stays): a handle of an earlier one is
        # not current, as after a rebuild, so it answers "The receipt handle has expired".
        for state in self._queues.values():
            state.incarnation = next(self._incarnations)

    def queues(self) -> list[str]:
        """The names of the queues that exist, sorted."""
        return sorted(self._queues)

    def snapshots(self) -> dict[str, impl.Snapshot[Stored]]:
        """Each queue's impl snapshot, by name (on the loop): what a restart of a durable
        endpoint must bring back as it was (``tests/test_endpoint_durable_replay.py``)."""
        return {name: state.q.snapshot() for name, state in sorted(self._queues.items())}

    async def aclose(self) -> None:
        """Close every queue (their waiting receives return empty)."""
        for state in list(self._queues.values()):
            self._close(state, deleted=False)  # the recording ends with them still there
        self._queues.clear()
        if self._recorder is not None:
            recorder, self._recorder = self._recorder, None
            try:
                recorder.close()
            except ValueError as e:  # tla.recorded.RecordingError: a write failed mid-run
                log.error("the trace recording stopped early: %s", e)
        if self.journal is not None:
            try:
                self.journal.close()
            except sqlite3.Error as e:
                log.error("the data file %s could not be closed: %s", self.journal.path, e)

    # -- helpers ---------------------------------------------------------------------------------

    def _now_ms(self) -> int:
        return int((self._epoch0 + self._clock.now()) * 1000)

    def _now_s(self) -> int:
        return int(self._epoch0 + self._clock.now())

    def _arn(self, name: str) -> str:
        return f"arn:aws:sqs:{self._region}:{self._account}:{name}"

    def _url(self, base_url: str, name: str) -> str:
        return f"{base_url}/{self._account}/{name}"

    def _queue(self, url: str) -> _Queue:
        """The queue a ``QueueUrl`` names (any host: clients differ in how they spell it)."""
        path = urllib.parse.urlsplit(url).path if "://" in url else url
        parts = [p for p in path.split("/") if p]
        if len(parts) < 2 or parts[-2] != self._account:
            raise _gone()
        state = self._queues.get(parts[-1])
        if state is None:
            raise _gone()
        return state

    def _by_arn(self, arn: str) -> _Queue | None:
        prefix = f"arn:aws:sqs:{self._region}:{self._account}:"
        if not arn.startswith(prefix):
            return None
        return self._queues.get(arn[len(prefix) :])

    def _close(self, state: _Queue, *, deleted: bool = True) -> None:
        state.q.close()
        if deleted and self._recorder is not None:
            self._recorder.deleted(state.name)

    def _sources(self, state: _Queue) -> list[_Queue]:
        """The existing queues whose impl queue moves its dead letters into ``state``'s."""
        return [s for s in self._queues.values() if s.q.dead_letter is state.q]

    # -- building impl queues --------------------------------------------------------------------

    def _build(
        self, name: str, fifo: bool, attrs: Mapping[str, str], source_arn: str
    ) -> tuple[AnyQueue, int]:
        """A new impl queue for ``attrs`` and its incarnation; ``SqsError`` (nothing built)
        when the redrive policy names no fitting queue."""
        policy = (
            qattrs.parse_redrive_policy(attrs["RedrivePolicy"])
            if attrs.get("RedrivePolicy")
            else None
        )
        target: AnyQueue | None = None
        max_receives: int | None = None
        if policy is not None:
            target_state = self._by_arn(policy.target_arn)
            why = None
            if target_state is None:
                why = "Dead letter target does not exist."
            elif target_state.name == name:
                why = "Dead letter target can't be the queue itself."
            elif target_state.fifo != fifo:
                why = "Dead letter target must be a queue of the same type (standard or FIFO)."
            else:
                why = self._allow_blocker(target_state, source_arn)
            if why is not None or target_state is None:
                raise SqsError(
                    "InvalidAttributeValue",
                    f"Value {attrs['RedrivePolicy']} for parameter RedrivePolicy is invalid. "
                    f"Reason: {why}",
                )
            target = target_state.q
            max_receives = policy.max_receive_count
        incarnation = next(self._incarnations)
        base = name[: -len(".fifo")] if fifo else name
        # impl names are unique per build (a system refuses a name twice, and a rebuilt or
        # recreated queue may join the system its predecessor was in).
        inner_name = f"q{incarnation}-{base}"[:80]
        retention = float(attrs["MessageRetentionPeriod"])
        try:
            q: AnyQueue
            if fifo:
                q = impl.AsyncFifoQueue[Stored](
                    None,
                    float(attrs["VisibilityTimeout"]),
                    max_receives,
                    float(attrs["DelaySeconds"]),
                    DEDUP_INTERVAL,
                    self._clock,
                    dead_letter=target if isinstance(target, impl.AsyncFifoQueue) else None,
                    retention=retention,
                    name=inner_name,
                )
            else:
                q = impl.AsyncQueue[Stored](
                    None,
                    float(attrs["VisibilityTimeout"]),
                    max_receives,
                    0.0,
                    self._clock,
                    dead_letter=target if isinstance(target, impl.AsyncQueue) else None,
                    retention=retention,
                    name=inner_name,
                )
        except (TypeError, ValueError) as e:  # impl refused the configuration: say why
            raise SqsError(
                "InvalidAttributeValue", f"The queue's attributes do not fit: {e}"
            ) from None
        return q, incarnation

    def _allow_blocker(self, target: _Queue, source_arn: str) -> str | None:
        text = target.attrs.get("RedriveAllowPolicy", "")
        if not text:
            return None
        permission, arns = qattrs.parse_redrive_allow_policy(text)
        if permission == "denyAll" or (permission == "byQueue" and source_arn not in arns):
            return "The dead letter target's RedriveAllowPolicy does not allow this queue."
        return None

    def _start_trace(self, state: _Queue) -> None:
        # Before the queue's first operation: the recording sees every step of it, the
        # journal every sweep.
        if self.journal is not None:
            name = state.name
            state.q.record_sweeps(lambda now: self._swept(name, now))
        if self._recorder is None:
            return
        q = state.q
        target = q.dead_letter
        owner = None if target is None else self._owner.get(id(target))
        sink = self._recorder.queue(
            state.name,
            fifo=state.fifo,
            capacity=q.capacity,
            max_receives=q.max_receives,
            dead_letter=None if owner is None else owner.name,
            retention=q.retention,
            dedup_interval=DEDUP_INTERVAL if state.fifo else None,
        )
        q.record_trace(sink)

    def _rebuild_blocker(self, state: _Queue) -> str | None:
        """Why ``state``'s impl queue cannot be replaced without losing something, or None."""
        stats = state.q.stats()
        if stats.visible or stats.in_flight or stats.delayed:
            return "the queue holds messages"
        if self._sources(state):
            return "it is the dead-letter queue of another queue"
        if any(t.task.status is RedriveStatus.RUNNING for t in state.tasks):
            return "a message move task runs on it"
        if any(self._moves_into(t, state) for t in self._tasks.values()):
            return "a message move task moves messages into it"
        target = state.q.dead_letter
        if target is not None:
            snap = target.snapshot()
            for m in (*snap.visible, *snap.in_flight, *snap.delayed):
                if target.source_of(m.id) is state.q:
                    return "its dead-letter queue holds messages that came from it"
        if state.fifo:
            now = self._clock.now()
            if any(at + DEDUP_INTERVAL > now for _, _, at in state.q.snapshot().dedup):
                return "its deduplication interval is still open"
        return None

    # -- queues ----------------------------------------------------------------------------------

    async def _op_CreateQueue(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """CreateQueue: a new queue, or the URL of an existing one whose attributes equal every
        attribute given (else ``QueueNameExists``, the query code ``QueueAlreadyExists``)."""
        name = p["QueueName"]
        if not QUEUE_NAME.fullmatch(name):
            raise _invalid(
                f"Value {name} for parameter QueueName is invalid. Reason: Can only include "
                "alphanumeric characters, hyphens, or underscores. 1 to 80 in length."
            )
        fifo = name.endswith(".fifo")
        given = p.get("Attributes", {})
        if not fifo and given.get("FifoQueue", "").strip().lower() == "true":
            raise _invalid(
                f"Value {name} for parameter QueueName is invalid. Reason: The name of a FIFO "
                "queue can only include alphanumeric characters, hyphens, or underscores, must "
                "end with .fifo suffix and be 1 to 80 in length."
            )
        if fifo and given.get("FifoQueue", "").strip().lower() != "true":
            raise _invalid(
                f"Value {name} for parameter QueueName is invalid. Reason: a queue whose name "
                "ends with .fifo must set the attribute FifoQueue to true."
            )
        checked = qattrs.check(given, fifo=fifo, creating=True)
        if not fifo:
            checked.pop("FifoQueue", None)  # "false" on a standard queue: what it is anyway
        tags = p.get("tags", {})
        self._check_tags(tags)
        existing = self._queues.get(name)
        if existing is not None:
            for key, value in checked.items():
                if existing.attrs.get(key, "") != value:
                    raise SqsError(
                        "QueueNameExists",
                        f"A queue already exists with the same name and a different value for "
                        f"attribute {key}",
                    )
            return {"QueueUrl": self._url(base, name)}
        attrs = qattrs.defaults(fifo) | checked
        if "KmsMasterKeyId" in checked and "SqsManagedSseEnabled" not in checked:
            attrs["SqsManagedSseEnabled"] = "false"
        self._check_fifo_combination(attrs)
        q, incarnation = self._build(name, fifo, attrs, self._arn(name))
        now = self._now_s()
        state = _Queue(name, fifo, self._arn(name), attrs, dict(tags), now, now, q, incarnation)
        self._queues[name] = state
        self._owner[id(q)] = state
        self._start_trace(state)
        return {"QueueUrl": self._url(base, name)}

    @staticmethod
    def _check_fifo_combination(attrs: Mapping[str, str]) -> None:
        if (
            attrs.get("FifoThroughputLimit") == "perMessageGroupId"
            and attrs.get("DeduplicationScope") != "messageGroup"
        ):
            raise SqsError(
                "InvalidAttributeValue",
                "Invalid value for the parameter FifoThroughputLimit: perMessageGroupId needs "
                "DeduplicationScope messageGroup.",
            )

    async def _op_GetQueueUrl(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """GetQueueUrl: the URL of a queue of this account (another account's: none)."""
        owner = p.get("QueueOwnerAWSAccountId")
        if (owner is not None and owner != self._account) or p["QueueName"] not in self._queues:
            raise _gone()
        return {"QueueUrl": self._url(base, p["QueueName"])}

    @staticmethod
    def _page(names: list[str], p: Mapping[str, Any]) -> tuple[list[str], str | None]:
        # ListQueues / ListDeadLetterSourceQueues: names sorted, MaxResults 1..1000, NextToken
        # the base64 of the last name returned.
        limit = p.get("MaxResults")
        if limit is not None and not 1 <= limit <= MAX_LIST:
            raise _out_of_range("MaxResults", limit, 1, MAX_LIST)
        names = sorted(names)
        token = p.get("NextToken")
        if token is not None:
            try:
                after = base64.urlsafe_b64decode(token.encode("ascii")).decode("utf-8")
            except (binascii.Error, ValueError):
                raise _invalid("Invalid NextToken value.") from None
            names = [n for n in names if n > after]
        if limit is None:
            return names[:MAX_LIST], None
        page = names[:limit]
        more = len(names) > limit
        next_token = (
            base64.urlsafe_b64encode(page[-1].encode("utf-8")).decode("ascii") if more else None
        )
        return page, next_token

    async def _op_ListQueues(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """ListQueues: the queues whose name starts with ``QueueNamePrefix``, sorted by name;
        ``NextToken`` only with ``MaxResults``, as on SQS."""
        prefix = p.get("QueueNamePrefix", "")
        page, token = self._page([n for n in self._queues if n.startswith(prefix)], p)
        out: dict[str, Any] = {"NextToken": token}
        if page:
            out["QueueUrls"] = [self._url(base, n) for n in page]
        return out

    async def _op_DeleteQueue(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """DeleteQueue: at once, with its messages; receives waiting on it return empty. The name
        is free again at once (no ``QueueDeletedRecently``). A running message move task that
        may move into it (its destination, or its dead-letter queue's messages going back to
        their sources, this among them) is cancelled, and so is one running on it: no move
        goes into a deleted queue (SQS would fail the task)."""
        state = self._queue(p["QueueUrl"])
        for record in self._tasks.values():
            if self._moves_into(record, state) or (
                record.source_arn == state.arn and record.task.status is RedriveStatus.RUNNING
            ):
                record.task.cancel()
        del self._queues[state.name]
        self._close(state)
        return {}

    def _moves_into(self, record: _Task, state: _Queue) -> bool:
        """Whether a running move task may move messages into ``state``'s impl queue."""
        if record.task.status is not RedriveStatus.RUNNING:
            return False
        return record.destination_arn == state.arn or (
            record.destination_arn is None and record.source_arn == self._target_arn(state)
        )

    def _target_arn(self, state: _Queue) -> str | None:
        target = state.q.dead_letter
        owner = None if target is None else self._owner.get(id(target))
        return None if owner is None else owner.arn

    async def _op_PurgeQueue(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """PurgeQueue: every delayed, visible and in-flight message is deleted in one step (SQS:
        "up to 60 seconds"); a second purge within 60 s of the server's clock is
        ``PurgeQueueInProgress``."""
        state = self._queue(p["QueueUrl"])
        now = self._clock.now()
        if state.last_purge is not None and now - state.last_purge < PURGE_INTERVAL:
            raise SqsError(
                "PurgeQueueInProgress",
                f"Only one PurgeQueue operation on {state.name} is allowed every 60 seconds.",
            )
        state.q.purge()
        state.last_purge = now
        state.delivered.clear()
        return {}

    # -- attributes ------------------------------------------------------------------------------

    def _all_attributes(self, state: _Queue) -> dict[str, str]:
        stats = state.q.stats()
        out = {
            "ApproximateNumberOfMessages": str(stats.visible),
            "ApproximateNumberOfMessagesNotVisible": str(stats.in_flight),
            "ApproximateNumberOfMessagesDelayed": str(stats.delayed),
            "CreatedTimestamp": str(state.created),
            "LastModifiedTimestamp": str(state.modified),
            "QueueArn": state.arn,
        }
        out |= {k: v for k, v in state.attrs.items() if v != ""}
        return out

    async def _op_GetQueueAttributes(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """GetQueueAttributes: ``All`` or the names asked for (an unknown name is
        ``InvalidAttributeName``); the counts are exact. Attributes never set (``Policy``,
        ``RedrivePolicy``, ``KmsMasterKeyId``...) are left out, as on SQS."""
        state = self._queue(p["QueueUrl"])
        names = p.get("AttributeNames", [])
        known = self._known_queue_attributes(state)
        for n in names:
            if n != "All" and n not in known:
                raise SqsError("InvalidAttributeName", f"Unknown Attribute {n}.")
        if not names:
            return {}
        values = self._all_attributes(state)
        if "All" in names:
            return {"Attributes": values}
        chosen = {n: values[n] for n in names if n in values}
        return {"Attributes": chosen} if chosen else {}

    def _known_queue_attributes(self, state: _Queue) -> frozenset[str]:
        names = {
            *qattrs.READ_ONLY,
            "VisibilityTimeout",
            "DelaySeconds",
            "MaximumMessageSize",
            "MessageRetentionPeriod",
            "ReceiveMessageWaitTimeSeconds",
            "RedrivePolicy",
            "RedriveAllowPolicy",
            "Policy",
            "KmsMasterKeyId",
            "KmsDataKeyReusePeriodSeconds",
            "SqsManagedSseEnabled",
            "FifoQueue",
        }
        if state.fifo:
            names |= {"ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"}
        return frozenset(names)

    async def _op_SetQueueAttributes(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """SetQueueAttributes: every value checked first (``InvalidAttributeName``,
        ``InvalidAttributeValue``), then all applied at once. ``VisibilityTimeout``,
        ``DelaySeconds`` (standard), ``ReceiveMessageWaitTimeSeconds``, ``MaximumMessageSize``
        and the FIFO options apply to the next request. ``RedrivePolicy``,
        ``MessageRetentionPeriod`` and a FIFO queue's ``DelaySeconds`` rebuild the impl queue,
        only when nothing can be lost by it (see the module docstring); else
        ``InvalidAttributeValue`` and nothing changes."""
        state = self._queue(p["QueueUrl"])
        checked = qattrs.check(p["Attributes"], fifo=state.fifo, creating=False)
        new = state.attrs | checked
        self._check_fifo_combination(new)
        fixed = ["RedrivePolicy", "MessageRetentionPeriod"] + (
            ["DelaySeconds"] if state.fifo else []
        )
        changed = [k for k in fixed if new.get(k, "") != state.attrs.get(k, "")]
        if changed:
            why = self._rebuild_blocker(state)
            if why is not None:
                raise SqsError(
                    "InvalidAttributeValue",
                    f"Invalid value for the parameter {changed[0]}: this server fixes it when it "
                    f"builds the queue, and rebuilds {state.name} only when nothing can be lost, "
                    f"but {why}.",
                )
            q, incarnation = self._build(state.name, state.fifo, new, state.arn)
            self._close(state)
            state.q, state.incarnation = q, incarnation
            state.delivered.clear()
            self._owner[id(q)] = state
            self._start_trace(state)
        state.attrs = new
        state.modified = self._now_s()
        return {}

    # -- tags and permissions --------------------------------------------------------------------

    @staticmethod
    def _check_tags(tags: Mapping[str, str], existing: Mapping[str, str] | None = None) -> None:
        for key, value in tags.items():
            if not 1 <= len(key) <= 128:
                raise _invalid(f"Tag key {key!r} is invalid: 1 to 128 characters.")
            if len(value) > 256:
                raise _invalid(f"Tag value of {key!r} is invalid: at most 256 characters.")
        total = len(set(tags) | set(existing or {}))
        if total > MAX_TAGS:
            raise _invalid(
                f"Too many tags: a queue may have at most {MAX_TAGS}, this makes {total}."
            )

    async def _op_TagQueue(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """TagQueue: add or overwrite tags (at most 50 per queue)."""
        state = self._queue(p["QueueUrl"])
        self._check_tags(p["Tags"], state.tags)
        state.tags |= p["Tags"]
        return {}

    async def _op_UntagQueue(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """UntagQueue: remove the keys given (absent ones are ignored)."""
        state = self._queue(p["QueueUrl"])
        for key in p["TagKeys"]:
            state.tags.pop(key, None)
        return {}

    async def _op_ListQueueTags(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """ListQueueTags: the queue's tags (no member when it has none)."""
        state = self._queue(p["QueueUrl"])
        return {"Tags": dict(state.tags)} if state.tags else {}

    def _policy(self, state: _Queue) -> dict[str, Any]:
        text = state.attrs.get("Policy", "")
        if text:
            data: dict[str, Any] = json.loads(text)
            return data
        return {"Version": "2012-10-17", "Id": f"{state.arn}/SQSDefaultPolicy", "Statement": []}

    async def _op_AddPermission(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """AddPermission: a statement ``Sid=Label`` in the queue's ``Policy`` (stored and
        echoed by GetQueueAttributes; this endpoint enforces no policy)."""
        state = self._queue(p["QueueUrl"])
        label = p["Label"]
        if not _LABEL.fullmatch(label):
            raise _invalid(f"Value {label} for parameter Label is invalid.")
        if not p["AWSAccountIds"] or not p["Actions"]:
            raise SqsError("MissingParameter", "AddPermission needs AWSAccountIds and Actions.")
        for action in p["Actions"]:
            if action not in _ACTIONS:
                raise _invalid(f"Value SQS:{action} for parameter ActionName is invalid.")
        policy = self._policy(state)
        statements = policy.setdefault("Statement", [])
        if not isinstance(statements, list):
            statements = policy["Statement"] = [statements]
        if any(isinstance(s, dict) and s.get("Sid") == label for s in statements):
            raise _invalid(f"Value {label} for parameter Label is invalid. Reason: Already exists.")
        statements.append(
            {
                "Sid": label,
                "Effect": "Allow",
                "Principal": {"AWS": [f"arn:aws:iam::{a}:root" for a in p["AWSAccountIds"]]},
                "Action": [f"SQS:{a}" for a in p["Actions"]],
                "Resource": state.arn,
            }
        )
        state.attrs["Policy"] = json.dumps(policy, separators=(",", ":"))
        return {}

    async def _op_RemovePermission(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """RemovePermission: drop the ``Policy`` statement whose ``Sid`` is the label."""
        state = self._queue(p["QueueUrl"])
        policy = self._policy(state)
        statements = policy.get("Statement", [])
        if not isinstance(statements, list):
            statements = [statements]
        kept = [s for s in statements if not (isinstance(s, dict) and s.get("Sid") == p["Label"])]
        if len(kept) == len(statements):
            raise _invalid(
                f"Value {p['Label']} for parameter Label is invalid. Reason: can't find label."
            )
        policy["Statement"] = kept
        state.attrs["Policy"] = json.dumps(policy, separators=(",", ":")) if kept else ""
        return {}

    # -- sending ---------------------------------------------------------------------------------

    def _prepare(self, state: _Queue, entry: Mapping[str, Any], where: str) -> _Prepared:
        """One send checked against SQS's rules, before anything changes; ``SqsError``."""
        body = entry["MessageBody"]
        messages.check_body(body)
        attrs: dict[str, dict[str, Any]] = {
            k: dict(v) for k, v in entry.get("MessageAttributes", {}).items()
        }
        messages.check_message_attributes(attrs, f"{where}MessageAttributes")
        system = {k: dict(v) for k, v in entry.get("MessageSystemAttributes", {}).items()}
        messages.check_system_attributes(system, f"{where}MessageSystemAttributes")
        limit = state.attr_int("MaximumMessageSize")
        if messages.message_size(body, attrs) > limit:
            raise _invalid(
                "One or more parameters are invalid. Reason: Message must be shorter than "
                f"{limit} bytes."
            )
        delay_given = entry.get("DelaySeconds")
        group = entry.get("MessageGroupId")
        dedup = entry.get("MessageDeduplicationId")
        for member, value in (("MessageGroupId", group), ("MessageDeduplicationId", dedup)):
            if value is not None and not _FIFO_TOKEN.fullmatch(value):
                raise _invalid(
                    f"Value {value} for parameter {member} is invalid. Reason: 1 to 128 "
                    "alphanumeric or punctuation characters."
                )
        delay: float | None = None
        if state.fifo:
            if delay_given not in (None, 0):
                raise _invalid(
                    f"Value {delay_given} for parameter DelaySeconds is invalid. Reason: The "
                    "request include parameter that is not valid for this queue type."
                )
            if group is None:
                raise SqsError(
                    "MissingParameter", "The request must contain the parameter MessageGroupId."
                )
            if dedup is None:
                if state.attrs.get("ContentBasedDeduplication") != "true":
                    raise _invalid(
                        "The queue should either have ContentBasedDeduplication enabled or "
                        "MessageDeduplicationId provided explicitly"
                    )
                dedup = hashlib.sha256(body.encode("utf-8")).hexdigest()
        else:
            if dedup is not None:
                raise _invalid(
                    f"Value {dedup} for parameter MessageDeduplicationId is invalid. Reason: The "
                    "request include parameter that is not valid for this queue type."
                )
            if delay_given is not None and not 0 <= delay_given <= MAX_DELAY:
                raise _out_of_range("DelaySeconds", delay_given, 0, MAX_DELAY)
            delay = float(
                delay_given if delay_given is not None else state.attr_int("DelaySeconds")
            )
        md5_body, md5_attrs, md5_system = messages.digests(body, attrs, system)
        stored = Stored(
            body=body,
            attributes=attrs,
            system_attributes=system,
            md5_of_body=md5_body,
            md5_of_attributes=md5_attrs,
            md5_of_system_attributes=md5_system,
            sent_timestamp=self._now_ms(),
            sender_id=self._account,
            group=group,
            dedup_id=dedup,
        )
        impl_group = impl_dedup = None
        if state.fifo:
            assert group is not None and dedup is not None
            impl_group = _hashed(group)
            scoped = state.attrs.get("DeduplicationScope") == "messageGroup"
            # messageGroup scope: a dedup id counts within its group only (always hashed: the
            # pair has no plain form).
            key = f"{group}\x00{dedup}"
            impl_dedup = (
                "h-" + hashlib.sha256(key.encode()).hexdigest() if scoped else _hashed(dedup)
            )
        return _Prepared(stored, self._ids(), delay, impl_group, impl_dedup)

    def _accepted(self, state: _Queue, prepared: _Prepared, got: str) -> dict[str, Any]:
        """The result entry of a send impl answered with id ``got`` (FIFO: the earlier message's
        id for a duplicate, which then keeps its own sequence number)."""
        stored = prepared.stored
        sequence: str | None = None
        if state.fifo:
            if got == prepared.id:
                sequence = f"{next(state.sequence):020d}"
                stored.sequence_number = sequence
                state.sequence_of[got] = sequence
            else:
                sequence = state.sequence_of.get(got)
        return {
            "MessageId": got,
            "MD5OfMessageBody": stored.md5_of_body,
            "MD5OfMessageAttributes": stored.md5_of_attributes,
            "MD5OfMessageSystemAttributes": stored.md5_of_system_attributes,
            "SequenceNumber": sequence,
        }

    async def _op_SendMessage(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """SendMessage: SQS's checks (body characters, attributes, size, FIFO's group and dedup
        id, no per-message delay on FIFO: a ``DelaySeconds`` other than 0 is
        ``InvalidParameterValue``), then one impl send. A standard queue takes a
        ``MessageGroupId`` (SQS's fair queues) and echoes it, but orders as always. A FIFO
        duplicate within 5 minutes is accepted, changes nothing and answers the earlier
        message's id and sequence number."""
        state = self._queue(p["QueueUrl"])
        prepared = self._prepare(state, p, "")
        q = state.q
        if isinstance(q, impl.AsyncFifoQueue):
            assert prepared.group is not None
            got = await q.send(
                prepared.stored,
                group=prepared.group,
                id=prepared.id,
                dedup_id=prepared.dedup,
                block=False,
            )
        else:
            got = await q.send(prepared.stored, id=prepared.id, delay=prepared.delay, block=False)
        return self._accepted(state, prepared, got)

    async def _op_SendMessageBatch(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """SendMessageBatch: each entry checked as SendMessage (a bad one is a ``Failed`` entry,
        the others still go), then the good ones in one atomic impl ``send_batch``. All the
        messages together over 1 MiB: ``BatchRequestTooLong`` and nothing is sent. On FIFO an
        entry repeating an earlier entry's dedup id is its duplicate (the same MessageId)."""
        state = self._queue(p["QueueUrl"])
        entries = p["Entries"]
        total = sum(
            messages.message_size(e["MessageBody"], e.get("MessageAttributes", {})) for e in entries
        )
        if total > MAX_BATCH_BYTES:
            raise SqsError(
                "BatchRequestTooLong",
                f"Batch requests cannot be longer than {MAX_BATCH_BYTES} bytes. You have sent "
                f"{total} bytes.",
            )
        failed: list[dict[str, Any]] = []
        ready: list[tuple[str, _Prepared]] = []
        for i, entry in enumerate(entries, 1):
            try:
                ready.append((entry["Id"], self._prepare(state, entry, f"Entries.{i}.")))
            except SqsError as err:
                failed.append(_batch_error(entry["Id"], err))
        # FIFO: a dedup id repeated in the batch names the first entry's message (impl refuses
        # a repeat inside one batch; SQS accepts it as a duplicate).
        first_of: dict[str, int] = {}
        send: list[tuple[str, _Prepared]] = []
        repeat: list[tuple[str, _Prepared, int]] = []
        for entry_id, prep in ready:
            if prep.dedup is not None and prep.dedup in first_of:
                repeat.append((entry_id, prep, first_of[prep.dedup]))
                continue
            if prep.dedup is not None:
                first_of[prep.dedup] = len(send)
            send.append((entry_id, prep))
        got: list[str] = []
        q = state.q
        if send:
            if isinstance(q, impl.AsyncFifoQueue):
                got = await q.send_batch(
                    [
                        impl.Entry(pr.stored, id=pr.id, group=pr.group, dedup_id=pr.dedup)
                        for _, pr in send
                    ],
                    block=False,
                )
            else:
                got = await q.send_batch(
                    [impl.Entry(pr.stored, id=pr.id, delay=pr.delay) for _, pr in send], block=False
                )
        ok: list[dict[str, Any]] = []
        for (entry_id, prep), mid in zip(send, got, strict=True):
            ok.append({"Id": entry_id, **self._accepted(state, prep, mid)})
        for entry_id, prep, index in repeat:
            ok.append({"Id": entry_id, **self._accepted(state, prep, got[index])})
        order = {e["Id"]: i for i, e in enumerate(entries)}
        ok.sort(key=lambda r: order[r["Id"]])
        return {"Successful": ok, "Failed": failed}

    # -- receiving -------------------------------------------------------------------------------

    @staticmethod
    def _check_int(name: str, value: int | None, low: int, high: int) -> int | None:
        if value is not None and not low <= value <= high:
            raise _out_of_range(name, value, low, high)
        return value

    def _system_names(self, state: _Queue, p: Mapping[str, Any]) -> set[str]:
        asked = [*p.get("AttributeNames", []), *p.get("MessageSystemAttributeNames", [])]
        offered = _STANDARD_SYSTEM + (_FIFO_SYSTEM if state.fifo else ())
        names: set[str] = set()
        for n in asked:
            if n == "All":
                names |= set(offered)
            elif n in offered or n in _FIFO_SYSTEM:
                names.add(n)
            else:
                raise SqsError("InvalidAttributeName", f"Unknown Attribute {n}.")
        return names

    async def _op_ReceiveMessage(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """ReceiveMessage: up to ``MaxNumberOfMessages`` (1..10) in one impl step, in the queue's
        order. ``WaitTimeSeconds`` (0..20; else the queue's ``ReceiveMessageWaitTimeSeconds``)
        > 0 is a long poll bounded in real time (``asyncio.wait_for`` around a blocking impl
        receive): it returns as soon as a message is deliverable, also while the server's clock
        is frozen, and a cancelled poll has taken nothing. A queue deleted during the poll
        answers empty; one rebuilt by SetQueueAttributes is polled on.

        ``ReceiveRequestAttemptId`` (FIFO): a retry with the same id within 5 minutes answers
        the same messages and receipt handles, and restarts their visibility timeout, as long
        as every one of those deliveries is still in flight untouched (not deleted, released or
        changed since); otherwise it is a new receive. On a standard queue it is ignored, as on
        SQS."""
        state = self._queue(p["QueueUrl"])
        n = (
            self._check_int("MaxNumberOfMessages", p.get("MaxNumberOfMessages"), 1, MAX_RECEIVE)
            or 1
        )
        vt_given = self._check_int(
            "VisibilityTimeout", p.get("VisibilityTimeout"), 0, MAX_VISIBILITY
        )
        wait = self._check_int("WaitTimeSeconds", p.get("WaitTimeSeconds"), 0, MAX_WAIT)
        system = self._system_names(state, p)
        wanted = p.get("MessageAttributeNames", [])
        attempt_id = p.get("ReceiveRequestAttemptId")
        if attempt_id is not None and not _FIFO_TOKEN.fullmatch(attempt_id):
            raise _invalid(f"Value {attempt_id} for parameter ReceiveRequestAttemptId is invalid.")
        if wait is None:
            wait = state.attr_int("ReceiveMessageWaitTimeSeconds")
        if self._replaying is not None:
            wait = 0  # the journal says what it delivered, at the time it did: no waiting
        if attempt_id is not None and state.fifo:
            again = self._retried(state, attempt_id, vt_given)
            if again is not None:
                self._note("ReceiveMessage", p, base, "retried", self._ids.drawn)
                return again
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            q = state.q
            vt = float(vt_given if vt_given is not None else state.attr_int("VisibilityTimeout"))
            after = _Received(state, q, vt, system, wanted, attempt_id, p, base)
            try:
                try:
                    # First without waiting (no task, no timer): the common case of a backlog.
                    got = await q.receive_batch(n, block=False, visibility_timeout=vt)
                except impl.Empty:
                    if wait == 0 or loop.time() >= deadline:
                        raise
                    return await _poll(
                        self._take(n, after),
                        max(0.0, deadline - loop.time()),
                    )
                return self._received(after, got)
            except (impl.Empty, TimeoutError, _Gone):
                return {}
            except impl.ShutDown:
                # Deleted (answer empty) or rebuilt (poll the new impl queue for what is left).
                if (
                    self._queues.get(state.name) is not state
                    or state.q is q
                    or loop.time() >= deadline
                ):
                    return {}

    async def _take(self, n: int, after: _Received) -> dict[str, Any]:
        """A long poll's blocking receive of up to ``n`` and, in the same turn of the loop as
        its step, the answer (what ``_poll`` runs as its task: so the journal entry's time is
        the step's, and no other operation comes between them)."""
        got = await after.q.receive_batch(n, block=True, visibility_timeout=after.vt)
        return self._received(after, got)

    def _received(self, r: _Received, got: list[impl.Message[Stored]]) -> dict[str, Any]:
        """Straight after a receive's step, no await: the per-delivery facts, the answer, and
        the journal entry (what it delivered, for the replay to compare)."""
        state, q = r.state, r.q
        now = self._clock.now()
        now_ms = self._now_ms()
        out = []
        for m in got:
            stored = m.body
            if m.attempt == 1 or stored.first_receive is None:
                stored.first_receive = now_ms
            state.delivered[m.id] = (m.attempt, now)
            out.append(self._message(state, q, m, r.system, r.wanted))
        self._note(
            "ReceiveMessage", r.params, r.base, [[m.id, m.attempt] for m in got], self._ids.drawn
        )
        if r.vt == 0:
            # A visibility timeout of 0 ends the delivery at once: its deadline is now, so fire
            # it now (the clock's timer for a time already reached runs only at its next tick,
            # on a frozen fake clock at the next advance), as SQS shows the message again at once.
            self._sweep(q)
        result = {"Messages": out}
        if r.attempt_id is not None and state.fifo and out:
            flying = {(m.id, m.attempt): m.deadline for m in q.snapshot().in_flight}
            state.attempts[r.attempt_id] = _Attempt(
                now,
                state.incarnation,
                [(m.id, m.attempt, flying.get((m.id, m.attempt))) for m in got],
                result,
            )
        return result

    def _retried(
        self, state: _Queue, attempt_id: str, vt_given: int | None
    ) -> dict[str, Any] | None:
        """The answer to a FIFO receive retried with ``attempt_id``, or None: a new receive."""
        now = self._clock.now()
        for key in [k for k, a in state.attempts.items() if a.at + DEDUP_INTERVAL <= now]:
            del state.attempts[key]
        earlier = state.attempts.get(attempt_id)
        if earlier is None or earlier.incarnation != state.incarnation:
            return None
        q = state.q
        flying = {(m.id, m.attempt): m.deadline for m in q.snapshot().in_flight}
        if any(
            deadline is None or flying.get((mid, attempt)) != deadline
            for mid, attempt, deadline in earlier.deliveries
        ):
            del state.attempts[attempt_id]
            return None
        vt = float(vt_given if vt_given is not None else state.attr_int("VisibilityTimeout"))
        q.change_visibility_batch([(q.receipt(mid, a), vt) for mid, a, _ in earlier.deliveries])
        if vt == 0:
            self._sweep(q)
            del state.attempts[attempt_id]
            return earlier.result
        flying = {(m.id, m.attempt): m.deadline for m in q.snapshot().in_flight}
        earlier.deliveries = [(mid, a, flying.get((mid, a))) for mid, a, _ in earlier.deliveries]
        return earlier.result

    def _message(
        self,
        state: _Queue,
        q: AnyQueue,
        m: impl.Message[Stored],
        system: set[str],
        wanted: Sequence[str],
    ) -> dict[str, Any]:
        stored = m.body
        handle = encode(Handle(state.name, state.incarnation, m.id, m.attempt))
        attrs: dict[str, str] = {}
        facts: dict[str, str | None] = {
            "ApproximateReceiveCount": str(m.attempt),
            "ApproximateFirstReceiveTimestamp": str(stored.first_receive),
            "SentTimestamp": str(stored.sent_timestamp),
            "SenderId": stored.sender_id,
            "AWSTraceHeader": (stored.system_attributes.get("AWSTraceHeader") or {}).get(
                "StringValue"
            ),
            "MessageGroupId": stored.group,
            "MessageDeduplicationId": stored.dedup_id if state.fifo else None,
            "SequenceNumber": stored.sequence_number if state.fifo else None,
        }
        if "DeadLetterQueueSourceArn" in system or (
            state.fifo and "MessageDeduplicationId" in system
        ):
            source = q.source_of(m.id)
            owner = None if source is None else self._owner.get(id(source))
            facts["DeadLetterQueueSourceArn"] = None if owner is None else owner.arn
            if state.fifo and source is not None:
                # AWS: in a FIFO dead-letter queue, "the original message's deduplication ID
                # will be replaced with the original message's ID".
                facts["MessageDeduplicationId"] = m.id
        for name in sorted(system):
            value = facts.get(name)
            if value is not None:
                attrs[name] = value
        chosen = messages.select_attributes(stored.attributes, wanted)
        out: dict[str, Any] = {
            "MessageId": m.id,
            "ReceiptHandle": handle,
            "MD5OfBody": stored.md5_of_body,
            "Body": stored.body,
        }
        if attrs:
            out["Attributes"] = attrs
        if chosen:
            out["MessageAttributes"] = chosen
            out["MD5OfMessageAttributes"] = md5_of_message_attributes(chosen)
        return out

    # -- receipts --------------------------------------------------------------------------------

    def _receipt(self, state: _Queue, text: str) -> tuple[Handle, bool]:
        """The handle a ReceiptHandle names, and whether it is of this queue's current impl
        queue (False: a queue rebuilt or created again since: the delivery cannot be live).
        ``ReceiptHandleIsInvalid`` for one not written here or naming another queue."""
        handle = decode(text)
        if handle.queue != state.name:
            raise SqsError(
                "ReceiptHandleIsInvalid",
                f'The input receipt handle "{text}" is not a valid receipt handle for this queue.',
            )
        return handle, handle.incarnation == state.incarnation

    async def _op_DeleteMessage(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """DeleteMessage: deletes the message if the handle is live (its own delivery is in
        flight). A stale handle never acts: ``InvalidParameterValue`` "The receipt handle has
        expired" (SQS says so on FIFO queues and answers success on standard ones, where it
        "might not" delete); the message's current delivery is untouched."""
        state = self._queue(p["QueueUrl"])
        text = p["ReceiptHandle"]
        handle, current = self._receipt(state, text)
        if not current or not state.q.delete(state.q.receipt(handle.id, handle.attempt)):
            raise _expired(text)
        state.delivered.pop(handle.id, None)
        return {}

    async def _op_DeleteMessageBatch(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """DeleteMessageBatch: the good handles in one atomic impl ``delete_batch``; each entry
        answers as DeleteMessage would (a stale or repeated handle is a ``Failed`` entry)."""
        state = self._queue(p["QueueUrl"])
        failed: list[dict[str, Any]] = []
        live: list[tuple[str, Handle, str]] = []
        for entry in p["Entries"]:
            try:
                handle, current = self._receipt(state, entry["ReceiptHandle"])
            except SqsError as err:
                failed.append(_batch_error(entry["Id"], err))
                continue
            if current:
                live.append((entry["Id"], handle, entry["ReceiptHandle"]))
            else:
                failed.append(_batch_error(entry["Id"], _expired(entry["ReceiptHandle"])))
        ok: list[dict[str, Any]] = []
        if live:
            q = state.q
            results = q.delete_batch([q.receipt(h.id, h.attempt) for _, h, _ in live])
            for (entry_id, handle, text), done in zip(live, results, strict=True):
                if done:
                    state.delivered.pop(handle.id, None)
                    ok.append({"Id": entry_id})
                else:
                    failed.append(_batch_error(entry_id, _expired(text)))
        return {"Successful": ok, "Failed": failed}

    def _check_cap(self, state: _Queue, handle: Handle, timeout: int) -> None:
        # SQS: a delivery's visibility may total at most 12 hours from its receive.
        seen = state.delivered.get(handle.id)
        if (
            seen is not None
            and seen[0] == handle.attempt
            and self._clock.now() + timeout - seen[1] > MAX_VISIBILITY
        ):
            raise _invalid(
                f"Value {timeout} for parameter VisibilityTimeout is invalid. Reason: Total "
                "VisibilityTimeout for the message is beyond the limit "
                f"[{MAX_VISIBILITY} seconds]."
            )

    async def _op_ChangeMessageVisibility(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """ChangeMessageVisibility: a live handle's deadline becomes now + VisibilityTimeout
        (0..43200; the delivery's total from its receive at most 12 hours, else
        ``InvalidParameterValue``); 0 releases it at once (and may dead-letter it). A stale
        handle never acts: ``MessageNotInflight``, even when the message is in flight again
        under a newer handle."""
        state = self._queue(p["QueueUrl"])
        timeout = p["VisibilityTimeout"]
        self._check_int("VisibilityTimeout", timeout, 0, MAX_VISIBILITY)
        handle, current = self._receipt(state, p["ReceiptHandle"])
        if not current:
            raise _not_inflight()
        self._check_cap(state, handle, timeout)
        if not state.q.change_visibility(
            state.q.receipt(handle.id, handle.attempt), float(timeout)
        ):
            raise _not_inflight()
        return {}

    async def _op_ChangeMessageVisibilityBatch(
        self, p: dict[str, Any], base: str
    ) -> dict[str, Any]:
        """ChangeMessageVisibilityBatch: each entry checked as ChangeMessageVisibility (a bad
        one is a ``Failed`` entry), the good ones in one atomic impl batch."""
        state = self._queue(p["QueueUrl"])
        failed: list[dict[str, Any]] = []
        live: list[tuple[str, Handle, int]] = []
        for entry in p["Entries"]:
            entry_id = entry["Id"]
            try:
                timeout = entry.get("VisibilityTimeout")
                if timeout is None:
                    raise SqsError(
                        "MissingParameter",
                        "The request must contain the parameter VisibilityTimeout.",
                    )
                self._check_int("VisibilityTimeout", timeout, 0, MAX_VISIBILITY)
                handle, current = self._receipt(state, entry["ReceiptHandle"])
                if not current:
                    raise _not_inflight()
                self._check_cap(state, handle, timeout)
            except SqsError as err:
                failed.append(_batch_error(entry_id, err))
                continue
            live.append((entry_id, handle, timeout))
        ok: list[dict[str, Any]] = []
        if live:
            q = state.q
            results = q.change_visibility_batch(
                [(q.receipt(h.id, h.attempt), float(t)) for _, h, t in live]
            )
            for (entry_id, _, _), done in zip(live, results, strict=True):
                if done:
                    ok.append({"Id": entry_id})
                else:
                    failed.append(_batch_error(entry_id, _not_inflight()))
        return {"Successful": ok, "Failed": failed}

    # -- dead-letter queues and message move tasks -----------------------------------------------

    async def _op_ListDeadLetterSourceQueues(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """ListDeadLetterSourceQueues: the queues that move their dead letters into this one
        (by the impl link, so a source whose policy names a deleted and recreated queue of
        that name is not listed: its dead letters go to the deleted one)."""
        state = self._queue(p["QueueUrl"])
        page, token = self._page([s.name for s in self._sources(state)], p)
        return {"queueUrls": [self._url(base, n) for n in page], "NextToken": token}

    def _task_handle(self, task_id: str, source_arn: str) -> str:
        raw = json.dumps({"taskId": task_id, "sourceArn": source_arn}, separators=(",", ":"))
        return base64.b64encode(raw.encode("utf-8")).decode("ascii")

    def _resource(self, arn: str, member: str) -> _Queue:
        state = self._by_arn(arn)
        if state is None:
            raise SqsError(
                "ResourceNotFoundException",
                f"The resource that you specified for the {member} parameter doesn't exist.",
            )
        return state

    async def _op_StartMessageMoveTask(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """StartMessageMoveTask: an impl redrive of a dead-letter queue (one that is the target
        of an existing queue): the messages visible now, oldest first, each as a new message
        (new MessageId, receive count 0) to ``DestinationArn`` or to the queue it died in, all at
        once or ``MaxNumberOfMessagesPerSecond`` (1..500) on the server's clock. Refused
        (``InvalidParameterValue``) when a message's source queue has been deleted and no
        destination is given: the move would go into the deleted queue. A second task while one
        runs: ``UnsupportedOperation``."""
        source = self._resource(p["SourceArn"], "SourceArn")
        if not self._sources(source):
            raise _invalid("Source queue must be configured as a Dead Letter Queue.")
        rate = self._check_int(
            "MaxNumberOfMessagesPerSecond", p.get("MaxNumberOfMessagesPerSecond"), 1, MAX_MOVE_RATE
        )
        destination: _Queue | None = None
        if p.get("DestinationArn") is not None:
            destination = self._resource(p["DestinationArn"], "DestinationArn")
            if destination is source:
                raise _invalid("The destination queue can't be the source queue.")
            if destination.fifo != source.fifo:
                raise _invalid(
                    "The destination queue must be of the same type as the source queue."
                )
        else:
            live = {id(s.q) for s in self._queues.values()}
            for m in source.q.snapshot().visible:
                origin = source.q.source_of(m.id)
                if origin is not None and id(origin) not in live:
                    raise _invalid(
                        f"The source queue of message {m.id} has been deleted: give a "
                        "DestinationArn."
                    )
        try:
            task = source.q.start_redrive(
                None if destination is None else destination.q,
                rate=None if rate is None else float(rate),
                # A moved message's new MessageId is a UUID, as every other message's.
                ids=self._ids,
            )
        except impl.RedriveRunning:
            raise SqsError(
                "UnsupportedOperation",
                "There is already a task running. Only one active task is allowed for a source "
                "queue arn at a given time.",
            ) from None
        if rate is not None:
            self._sweep(source.q)  # the first tick is due at once: one message moves now
        task_id = self._ids()
        record = _Task(
            task_id,
            self._task_handle(task_id, source.arn),
            task,
            source.arn,
            None if destination is None else destination.arn,
            rate,
            self._now_ms(),
        )
        source.tasks.append(record)
        self._tasks[record.handle] = record
        return {"TaskHandle": record.handle}

    async def _op_CancelMessageMoveTask(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """CancelMessageMoveTask: stops a running task (the moved messages stay moved);
        ``ResourceNotFoundException`` for an unknown handle, ``UnsupportedOperation`` for a task
        that is no longer running (SQS: only a RUNNING task can be cancelled)."""
        record = self._tasks.get(p["TaskHandle"])
        if record is None:
            raise SqsError("ResourceNotFoundException", "The task handle does not name a task.")
        if not record.task.cancel():
            raise SqsError("UnsupportedOperation", "Only a RUNNING task can be cancelled.")
        return {"ApproximateNumberOfMessagesMoved": record.task.moved}

    async def _op_ListMessageMoveTasks(self, p: dict[str, Any], base: str) -> dict[str, Any]:
        """ListMessageMoveTasks: the source's tasks, most recent first, ``MaxResults`` (1..10,
        default 1). Statuses RUNNING, COMPLETED, CANCELLED (never CANCELLING or FAILED: impl's
        cancel is one step and a move cannot fail); the TaskHandle only of a running task."""
        source = self._resource(p["SourceArn"], "SourceArn")
        limit = self._check_int("MaxResults", p.get("MaxResults"), 1, 10) or 1
        results = []
        for record in reversed(source.tasks[-limit:] if limit else []):
            task = record.task
            status = task.status
            results.append(
                {
                    "TaskHandle": record.handle if status is RedriveStatus.RUNNING else None,
                    "Status": status.name,
                    "SourceArn": record.source_arn,
                    "DestinationArn": record.destination_arn,
                    "MaxNumberOfMessagesPerSecond": record.rate,
                    "ApproximateNumberOfMessagesMoved": task.moved,
                    "ApproximateNumberOfMessagesToMove": task.to_move,
                    "StartedTimestamp": record.started,
                }
            )
        return {"Results": results}


class _Gone(Exception):
    """The client of a long poll closed or reset its connection while it waited."""


_R = TypeVar("_R")


async def _poll(receive: Coroutine[Any, Any, _R], timeout: float) -> _R:
    """``receive`` (a blocking impl receive, and its answer) bounded by ``timeout`` real
    seconds, and ended
    when the client leaves (``sqs_endpoint.http.client_gone``). Either end cancels the receive
    through the asyncio shell's cancellation path (contract section 8), TLA+'s ``Cancel`` then
    ``Withdraw``, or ``PassOn`` when a send had woken it, in tla/AsyncQueue.tla: a poll that
    ends this way has taken nothing, and a message a send had meant for it goes to the next
    waiter at once. Raises TimeoutError or _Gone."""
    gone = client_gone()
    if gone is None:
        return await asyncio.wait_for(receive, timeout)
    if gone.is_set():
        receive.close()  # never started: nothing to withdraw
        raise _Gone
    task = asyncio.ensure_future(receive)
    watch = asyncio.ensure_future(gone.wait())
    try:
        await asyncio.wait((task, watch), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        if not task.done():
            # Ended by the timeout, by the client leaving, or by this task's own cancellation
            # (the server closing): the receive is cancelled at its await and takes nothing.
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if task.cancelled():
        raise _Gone if gone.is_set() else TimeoutError()
    # It received, in the step its wakeup ran: what it took is answered, even when the client
    # left in the same loop iteration (that answer is then lost as any unread answer is, and
    # the messages come back after their visibility timeout, as on SQS).
    return task.result()
