"""An SQS endpoint as a scenario target: every harness op mapped onto SQS calls through boto3.

:class:`SqsTarget` implements :class:`model_tests.targets.Target`, so a scenario runs on SQS
through the same dispatch as on the model (:func:`run_on_sqs` is :func:`run_scenario` with this
target). Endpoints (:func:`open_endpoint`):

- ``"moto"``: moto's in-process ``mock_aws``;
- ``"moto-server"``: a ``moto.server.ThreadedMotoServer`` on 127.0.0.1 (a free port), a real
  HTTP peer, started and stopped with the endpoint;
- an ``http://`` or ``https://`` URL (real SQS, ElasticMQ, LocalStack...): region and
  credentials from the usual boto3 chain; real time.

**Queues.** Each harness queue is an SQS queue named ``kit-<run token>-<index>`` (``.fifo`` and
``FifoQueue=true``, ``ContentBasedDeduplication=false`` for a FIFO scenario), with the
scenario's ``VisibilityTimeout`` and ``DelaySeconds``; with ``max_receives`` it has its own
dead-letter queue (``...-<index>-dlq``) and ``RedrivePolicy`` ``maxReceiveCount``. The run
deletes all of them when it ends. The configuration must be expressible: ``capacity`` null, a
``visibility_timeout`` in whole seconds 0..43200, a ``delay`` in whole seconds 0..900,
``max_receives`` 1..1000 or null, ``dedup_interval`` 300 (SQS's fixed five minutes); anything
else is a ``ValueError`` naming the setting (see :mod:`model_tests.conformance.profile`).

**Messages.** The harness id travels in the message attribute ``kit_id`` (a ``String``); the
body is the payload JSON-encoded (``json.dumps``, ASCII), because SQS refuses an empty body and
characters outside XML's, and a JSON string is never empty and only ASCII. An id may be sent
once per queue (SQS has no sender-chosen ids to reject a second send): a second send of an id is
a ``ValueError``, as is ``cancel`` (SQS cannot cancel a message by id).

**Receipts.** Every delivery's ``ReceiptHandle`` is kept under ``(queue, id, attempt)``, the
attempt being the message's ``ApproximateReceiveCount``. ``ack``/``retry``/``extend`` (and
their batches) with a receipt the kit never saw (unknown id or attempt, attempt 0) give
``False`` without any call: SQS cannot even express such a receipt.

**The op mapping.**

- ``enqueue`` -> ``SendMessage`` (``DelaySeconds`` when the op gives a delay, else the queue's;
  on FIFO ``MessageGroupId`` and ``MessageDeduplicationId``: the op's dedup id, or ``<id>.kit``
  without one, since SQS requires a dedup id when content-based deduplication is off and ``.`` is
  not in the id alphabet, so it never equals a scenario's dedup id). ``true`` when SQS accepts it.
  **Duplicates:** SQS accepts a deduplicated send "successfully" and does not deliver it. The kit
  says ``"duplicate"`` when the returned ``MessageId`` is one this queue already returned for an
  earlier send (the original's id). Measured on moto 5.2.5: a deduplicated send gets a *fresh*
  ``MessageId`` (and a fresh ``SequenceNumber``), so on moto it comes out ``true`` although the
  message is never delivered.
- ``enqueue_batch`` -> ``SendMessageBatch`` (entry ids ``e0``, ``e1``...). A standard queue:
  ``true`` if every entry succeeded, ``false`` if every entry failed, else the per-entry list
  (SQS batches are not atomic; the model has no such output, so it shows as a divergence). A
  FIFO queue: the per-entry list, ``"duplicate"`` as for a single send.
- ``reserve`` / ``reserve_batch`` -> ``ReceiveMessage`` with ``WaitTimeSeconds=0`` and
  ``MaxNumberOfMessages`` 1 / n, with ``VisibilityTimeout`` when the op gives one (else the
  queue's attribute applies). A ``null`` vt (never expire) is a ``ValueError``.
- ``ack`` / ``ack_batch`` -> ``DeleteMessage`` / ``DeleteMessageBatch``; ``retry`` ->
  ``ChangeMessageVisibility`` 0; ``extend`` / ``extend_batch`` -> ``ChangeMessageVisibility``
  (``Batch``). A receipt repeated inside one batch is a ``ValueError`` (moto refuses the whole
  request, ``BatchEntryIdsNotDistinct``). Results: success is ``true``; the errors
  ``ReceiptHandleIsInvalid``, ``MessageNotInflight`` and ``InvalidParameterValue`` naming the
  receipt handle (AWS's answer for a message that no longer exists) are ``false``, whether they
  come as the call's error or as a batch's ``Failed`` entry; any other error is raised
  (:class:`SqsError`): it means the kit or the scenario asked for something SQS refuses.
- ``purge`` -> ``GetQueueAttributes`` (``ApproximateNumberOfMessages`` + ``...NotVisible`` +
  ``...Delayed``, read just before) then ``PurgeQueue``; the count is that sum. It is exact on
  moto and approximate on a real endpoint. SQS allows one purge per queue every 60 seconds.
- ``dead`` -> the kit drains the queue's dead-letter queue (``ReceiveMessage`` up to 10 at a
  time until empty, then ``DeleteMessageBatch``) and appends the ids it finds, in the order
  received, to the ids it found before; the output is that record. Draining consumes the DLQ's
  copies, but the record keeps them, so ``dead`` is repeatable. No DLQ: ``[]``, no call.
- ``advance`` -> the endpoint's clock (below); ``new`` -> another queue (and DLQ); ``use`` ->
  switch the current queue; the sweep after each op does nothing (SQS runs its own timers).

**Time.** moto's SQS reads time only through ``moto.core.utils.utcnow()`` (``unix_time`` looks
it up there; ``moto.sqs.models`` imports ``unix_time``, not ``utcnow``, so patching
``moto.sqs.models`` is impossible and patching ``moto.core.utils.utcnow`` is enough: measured,
a message received with visibility 5 is received again, ``ApproximateReceiveCount`` 2, after
``advance(6)`` with no sleep). :class:`MotoClock` patches it for the endpoint's lifetime (both
``mock_aws`` and ``ThreadedMotoServer`` run in this process) with a clock that starts at the real
time, moves by ``dt`` on ``advance`` and ticks 1 microsecond per read: a frozen clock would never
show again a message released with visibility 0 (moto needs ``now > visible_at``). For a URL
endpoint :class:`WallClock` sleeps until the scenario's time (its start plus every ``dt``), whole
seconds only: the only place the kit sleeps, and never in tests.

**Running against a real endpoint** (a URL: real SQS, ElasticMQ, LocalStack; never in CI):

1. *Credentials and region* come from the usual boto3 chain (``AWS_PROFILE`` or
   ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``); give the region's endpoint,
   e.g. ``https://sqs.eu-west-1.amazonaws.com``. The principal needs ``sqs:CreateQueue``,
   ``GetQueueAttributes``, ``SendMessage``, ``ReceiveMessage``, ``DeleteMessage``,
   ``ChangeMessageVisibility``, ``PurgeQueue`` and ``DeleteQueue`` (the batch calls are
   authorised as these) on queues named ``kit-*``.
2. *Costs*: every op is at least one request (a batch is one, ``purge`` two, ``dead`` two or
   more), and each scenario creates and deletes its queues (two more requests per queue, three
   with a dead-letter queue); SQS bills requests, so a scenario costs tens of requests.
   ``advance`` sleeps, so a run of 20 scenarios takes minutes.
3. *Queues it creates*: ``kit-<12 hex digits>-<n>`` (``.fifo`` on FIFO queues) and, with
   ``max_receives``, ``kit-<...>-<n>-dlq``; all are deleted when the scenario ends, even when it
   fails. *If a run is killed* (Ctrl-C, a timeout) its current scenario's queues stay: list them
   with ``aws sqs list-queues --queue-name-prefix kit-`` and delete each with
   ``aws sqs delete-queue --queue-url URL`` (make sure no queue of yours starts with ``kit-``).
4. *Purge's 60 s rule*: SQS allows one ``PurgeQueue`` per queue every 60 seconds, and the
   deletion itself "takes up to 60 seconds": the profile keeps two purges of a queue 60 s of
   scenario time apart, but no relaxation covers a message sent (or received) within the
   minute after a purge on a real endpoint, so a divergence right after a purge may be that.
5. *Time*: the scenario's time is real time; ``advance`` sleeps until it (the calls' latency is
   taken off), and the profile keeps every ``advance`` one second away from a timer, so the ops
   between two ``advance`` must take well under a second in all (a near region).
6. *Polling*: by default every receive short-polls (``WaitTimeSeconds=0``), and SQS samples a
   subset of its servers: a receive may come back short or empty, which the relaxation
   ``SHORT_POLL_SAMPLES`` (in both SQS profiles) explains; it also hides a message that
   stayed away for another reason. ``--wait-time SECONDS`` (1..20) long-polls: every server is
   queried, so false empties go away (a response still holds "at least one" message "up to" the
   maximum, so the relaxation stays in the profiles). Its cost: a receive that finds nothing
   waits those seconds of real time the scenario does not count, so a timer that falls due
   within them shows a message earlier than the model; use 1. The ``dead`` drain short-polls
   always: a dead letter it misses is found later, which ``DEAD_LETTER_LAGS`` explains.
   moto endpoints refuse a wait time (:func:`check_wait_time`).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol
from unittest import mock

from model_tests.scenario_format import (
    DEDUP_INTERVAL,
    QUEUE_DEFAULT,
    QueueConfig,
    QueueDefault,
    Scenario,
)
from model_tests.targets import (
    DUPLICATE,
    BatchEntry,
    Delay,
    Delivered,
    Output,
    Sent,
    run_scenario,
)

#: The message attribute that carries the harness id.
ID_ATTRIBUTE: Final = "kit_id"
#: SQS's limits (seconds, counts) that a scenario must respect.
MAX_VISIBILITY: Final = 43200
MAX_DELAY: Final = 900
MAX_RECEIVE_COUNT: Final = 1000
#: The region used for moto (any region works there).
MOTO_REGION: Final = "us-east-1"
#: Error codes that say a receipt handle does not (or no longer) name an in-flight delivery.
RECEIPT_ERRORS: Final = frozenset({"ReceiptHandleIsInvalid", "MessageNotInflight"})
#: The longest long poll SQS allows (``WaitTimeSeconds``), seconds.
MAX_WAIT_TIME: Final = 20
#: The endpoint names other than URLs.
ENDPOINTS: Final = ("moto", "moto-server")


class SqsError(RuntimeError):
    """SQS refused a call the kit made in a way no harness output expresses (the call, its code
    and message are in the text)."""


def _code(error: BaseException) -> tuple[str, str]:
    """``(code, message)`` of a botocore ``ClientError``, the legacy query prefix removed."""
    info = getattr(error, "response", {}).get("Error", {})
    code = str(info.get("Code", ""))
    return code.removeprefix("AWS.SimpleQueueService."), str(info.get("Message", ""))


def _is_receipt_error(code: str, message: str) -> bool:
    return code in RECEIPT_ERRORS or (
        code == "InvalidParameterValue" and "receipthandle" in message.replace(" ", "").lower()
    )


# -- clocks --------------------------------------------------------------------------------------


class Clock(Protocol):
    """What ``advance`` moves: the endpoint's notion of time."""

    def restart(self) -> None:
        """A scenario starts now (its time 0)."""

    def advance(self, dt: float) -> None: ...


class MotoClock:
    """moto's time while :meth:`patched` is active: the real time at creation, plus every
    ``advance``, plus one microsecond per read (see the module docstring)."""

    def __init__(self) -> None:
        self._base = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        self._micros = 0
        self._lock = threading.Lock()

    def now(self) -> datetime.datetime:
        """The current time, naive UTC as moto's ``utcnow``; one tick later than the last read."""
        with self._lock:
            self._micros += 1
            return self._base + datetime.timedelta(microseconds=self._micros)

    def restart(self) -> None:
        # A scenario's times are relative to its queues' creation: nothing to align.
        pass

    def advance(self, dt: float) -> None:
        with self._lock:
            self._micros += round(dt * 1_000_000)

    @contextlib.contextmanager
    def patched(self) -> Iterator[None]:
        """Make this clock moto's only time source (``moto.core.utils.utcnow``)."""
        with mock.patch("moto.core.utils.utcnow", self.now):
            yield


class WallClock:
    """Real time: ``advance`` sleeps (the only place the kit sleeps).

    It sleeps until the scenario's time on the wall clock (its start, :meth:`restart`, plus
    every ``dt`` so far), not ``dt`` from now: the calls' latency since the last ``advance`` is
    taken off, so it does not add up over a scenario and push a timer past the scenario's time
    (the profile keeps every ``advance`` at least one second away from a timer). ``sleep`` and
    ``monotonic`` are parameters so that a test can drive it without waiting.
    """

    def __init__(
        self,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sleep = sleep
        self._monotonic = monotonic
        self._start = monotonic()
        self._elapsed = 0.0

    def restart(self) -> None:
        self._start = self._monotonic()
        self._elapsed = 0.0

    def advance(self, dt: float) -> None:
        self._elapsed += dt
        self._sleep(max(0.0, self._start + self._elapsed - self._monotonic()))


# -- endpoints -----------------------------------------------------------------------------------


@dataclass
class SqsEndpoint:
    """An open SQS endpoint: a boto3 SQS client and the clock that ``advance`` moves."""

    name: str
    client: Any
    clock: Clock
    url: str | None = None
    #: ``WaitTimeSeconds`` of every receive: 0 short-polls, 1..20 long-polls (URL endpoints).
    wait_time: int = 0


def _moto_client(endpoint_url: str | None = None) -> Any:
    import boto3  # type: ignore[import-untyped]
    from botocore.config import Config  # type: ignore[import-untyped]

    # moto accepts any credentials; fixed ones keep the user's real ones out of the run, and no
    # retries keep a refused call from being made twice.
    return boto3.client(
        "sqs",
        region_name=MOTO_REGION,
        endpoint_url=endpoint_url,
        aws_access_key_id="kit",
        aws_secret_access_key="kit",
        config=Config(retries={"total_max_attempts": 1}),
    )


def check_wait_time(endpoint: str, wait_time: int) -> None:
    """Raise ``TypeError``/``ValueError`` naming ``wait_time`` unless ``endpoint`` can long-poll
    for that long (whole seconds 0..20; 0 everywhere, more only on a URL endpoint)."""
    if isinstance(wait_time, bool) or not isinstance(wait_time, int):
        raise TypeError(f"wait_time must be whole seconds, got {type(wait_time).__name__}")
    if not 0 <= wait_time <= MAX_WAIT_TIME:
        raise ValueError(f"wait_time must be 0..{MAX_WAIT_TIME} seconds, got {wait_time}")
    if wait_time and endpoint in ENDPOINTS:
        # moto's long poll loops until its clock passes the end of the wait, waiting one real
        # second per round for a message; the kit's clock ticks a microsecond per read, so a
        # long poll of an empty queue would not return for days. moto never samples anyway.
        raise ValueError(
            f"wait_time must be 0 on {endpoint}: moto's long poll of an empty queue would block "
            "on the kit's patched clock, and moto does not sample servers (long polling is for "
            "URL endpoints)"
        )


@contextlib.contextmanager
def open_endpoint(endpoint: str, *, wait_time: int = 0) -> Iterator[SqsEndpoint]:
    """Open ``endpoint`` (``"moto"``, ``"moto-server"`` or an http(s) URL) for the ``with``
    block; a moto endpoint's clock is patched in for that long, a server stopped after it.
    ``wait_time`` > 0 (URL endpoints only) makes every receive a long poll of that many
    seconds (:func:`check_wait_time`)."""
    if endpoint in ENDPOINTS or endpoint.startswith(("http://", "https://")):
        check_wait_time(endpoint, wait_time)
    if endpoint == "moto":
        import moto

        clock = MotoClock()
        with clock.patched(), moto.mock_aws():
            yield SqsEndpoint(endpoint, _moto_client(), clock)
    elif endpoint == "moto-server":
        from moto.server import ThreadedMotoServer

        clock = MotoClock()
        # werkzeug logs every request to stderr; the run's output is the outputs, not a log.
        log = logging.getLogger("werkzeug")
        level = log.level
        log.setLevel(logging.ERROR)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        try:
            with clock.patched():
                server.start()
                try:
                    host, port = server.get_host_and_port()
                    url = f"http://{host}:{port}"
                    yield SqsEndpoint(endpoint, _moto_client(url), clock, url)
                finally:
                    server.stop()
        finally:
            log.setLevel(level)
    elif endpoint.startswith(("http://", "https://")):
        import boto3

        client = boto3.client("sqs", endpoint_url=endpoint)
        yield SqsEndpoint(endpoint, client, WallClock(), endpoint, wait_time)
    else:
        raise ValueError(
            f"endpoint must be one of {', '.join(ENDPOINTS)} or an http(s) URL, got {endpoint!r}"
        )


# -- the target ----------------------------------------------------------------------------------


def _seconds(name: str, value: float, maximum: int) -> int:
    """A time as SQS takes it: whole seconds in ``0..maximum``, else a ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if not math.isfinite(value) or not float(value).is_integer() or not 0 <= value <= maximum:
        raise ValueError(f"{name} must be whole seconds in 0..{maximum} on SQS, got {value!r}")
    return int(value)


def check_config(config: QueueConfig) -> None:
    """Raise ``ValueError`` naming the first setting of ``config`` that SQS cannot express."""
    if config.capacity is not None:
        raise ValueError(f"capacity must be null on SQS (no bound), got {config.capacity}")
    if config.visibility_timeout is None:
        raise ValueError("visibility_timeout must be a number on SQS (no 'never expires')")
    _seconds("visibility_timeout", config.visibility_timeout, MAX_VISIBILITY)
    _seconds("delay", config.delay, MAX_DELAY)
    k = config.max_receives
    if k is not None and not 1 <= k <= MAX_RECEIVE_COUNT:
        raise ValueError(f"max_receives must be 1..{MAX_RECEIVE_COUNT} or null on SQS, got {k}")
    if config.fifo and config.dedup_interval != DEDUP_INTERVAL:
        raise ValueError(
            f"dedup_interval must be {DEDUP_INTERVAL:g} on SQS (fixed), got {config.dedup_interval}"
        )


@dataclass
class _Queue:
    """One harness queue on SQS and the kit's record of it."""

    url: str
    dlq_url: str | None
    #: Harness ids sent to it (each may be sent once).
    sent: set[str] = field(default_factory=set)
    #: MessageIds SQS returned for its sends: how a deduplicated send is recognised.
    message_ids: set[str] = field(default_factory=set)
    #: ReceiptHandle of each delivery, by (id, attempt).
    handles: dict[tuple[str, int], str] = field(default_factory=dict)
    #: Ids found in its dead-letter queue, in the order found.
    dead: list[str] = field(default_factory=list)


class SqsTarget:
    """A scenario's queues on an SQS endpoint (see the module docstring for the mapping)."""

    def __init__(self, config: QueueConfig, endpoint: SqsEndpoint) -> None:
        check_config(config)
        self._config = config
        self._endpoint = endpoint
        self._sqs = endpoint.client
        self._token = uuid.uuid4().hex[:12]
        self.queues: list[_Queue] = []
        self._current = 0
        self.new_queue()
        # The scenario's time 0 is now, once its first queue exists.
        endpoint.clock.restart()

    @property
    def _q(self) -> _Queue:
        return self.queues[self._current]

    def _call(self, operation: str, **params: Any) -> Any:
        """One SQS call; an error becomes :class:`SqsError` unless the caller catches it."""
        from botocore.exceptions import ClientError  # type: ignore[import-untyped]

        try:
            return getattr(self._sqs, operation)(**params)
        except ClientError as e:
            code, message = _code(e)
            raise SqsError(f"{operation}: {code}: {message}") from e

    def _receipt_call(self, operation: str, **params: Any) -> bool:
        """A delete or visibility change: ``True``, or ``False`` for a receipt error."""
        try:
            self._call(operation, **params)
        except SqsError as e:
            code, message = _code(e.__cause__ or e)
            if _is_receipt_error(code, message):
                return False
            raise
        return True

    # -- queues ---------------------------------------------------------------------------------

    def _create(self, name: str, attributes: dict[str, str]) -> str:
        if self._config.fifo:
            name += ".fifo"
            attributes = {**attributes, "FifoQueue": "true", "ContentBasedDeduplication": "false"}
        url: str = self._call("create_queue", QueueName=name, Attributes=attributes)["QueueUrl"]
        return url

    def new_queue(self) -> None:
        c = self._config
        name = f"kit-{self._token}-{len(self.queues)}"
        vt = c.visibility_timeout or 0  # check_config refused None
        attributes = {
            "VisibilityTimeout": str(_seconds("visibility_timeout", vt, MAX_VISIBILITY)),
            "DelaySeconds": str(_seconds("delay", c.delay, MAX_DELAY)),
        }
        dlq_url = None
        if c.max_receives is not None:
            dlq_url = self._create(f"{name}-dlq", {})
            arn = self._call("get_queue_attributes", QueueUrl=dlq_url, AttributeNames=["QueueArn"])
            policy = {
                "deadLetterTargetArn": arn["Attributes"]["QueueArn"],
                "maxReceiveCount": c.max_receives,
            }
            attributes["RedrivePolicy"] = json.dumps(policy)
        self.queues.append(_Queue(self._create(name, attributes), dlq_url))
        self._current = len(self.queues) - 1

    def use(self, index: int) -> None:
        self._current = index

    def close(self) -> None:
        """Delete every queue of the run (and its DLQ); the first error is raised after all
        deletions were tried."""
        errors: list[SqsError] = []
        for q in self.queues:
            for url in (q.url, q.dlq_url):
                if url is not None:
                    try:
                        self._call("delete_queue", QueueUrl=url)
                    except SqsError as e:
                        errors.append(e)
        if errors:
            raise errors[0]

    # -- sends ----------------------------------------------------------------------------------

    def _message(
        self, id: str, body: str, delay: Delay, group: str | None, dedup: str | None
    ) -> dict[str, Any]:
        """The SendMessage parameters (less QueueUrl) of one message."""
        params: dict[str, Any] = {
            "MessageBody": json.dumps(body),
            "MessageAttributes": {ID_ATTRIBUTE: {"DataType": "String", "StringValue": id}},
        }
        if delay is not QUEUE_DEFAULT:
            params["DelaySeconds"] = _seconds("delay", delay, MAX_DELAY)
        if group is not None:
            params["MessageGroupId"] = group
            params["MessageDeduplicationId"] = dedup if dedup is not None else f"{id}.kit"
        return params

    def _fresh(self, ids: Sequence[str]) -> None:
        """Refuse an id sent before to this queue, or repeated among ``ids``."""
        for i, id in enumerate(ids):
            if id in self._q.sent or id in ids[:i]:
                raise ValueError(
                    f"id {id!r} is sent twice to one queue: SQS has no sender-chosen ids, so the "
                    "kit needs unique ids"
                )

    def _accepted(self, id: str, message_id: str) -> Sent:
        """Record a successful send; :data:`DUPLICATE` if SQS returned an earlier MessageId."""
        q = self._q
        q.sent.add(id)
        if message_id in q.message_ids:
            return DUPLICATE
        q.message_ids.add(message_id)
        return True

    def send(
        self, id: str, body: str, delay: Delay, group: str | None = None, dedup: str | None = None
    ) -> Sent:
        self._fresh([id])
        params = self._message(id, body, delay, group, dedup)
        got = self._call("send_message", QueueUrl=self._q.url, **params)
        return self._accepted(id, got["MessageId"])

    def send_batch(self, entries: Sequence[BatchEntry]) -> bool | list[Sent]:
        self._fresh([e[0] for e in entries])
        batch = []
        for i, e in enumerate(entries):
            group, dedup = (e[3], e[4]) if len(e) == 5 else (None, None)
            batch.append({"Id": f"e{i}", **self._message(e[0], e[1], e[2], group, dedup)})
        got = self._call("send_message_batch", QueueUrl=self._q.url, Entries=batch)
        ok = {s["Id"]: s["MessageId"] for s in got.get("Successful", [])}
        results: list[Sent] = []
        for i, e in enumerate(entries):
            message_id = ok.get(f"e{i}")
            results.append(False if message_id is None else self._accepted(e[0], message_id))
        if self._config.fifo:
            return results
        if all(r is True for r in results):
            return True
        return False if not any(results) else results

    # -- receives -------------------------------------------------------------------------------

    def _receive(self, n: int, vt: float | QueueDefault | None) -> list[Delivered]:
        params: dict[str, Any] = {
            "QueueUrl": self._q.url,
            "MaxNumberOfMessages": n,
            "WaitTimeSeconds": self._endpoint.wait_time,
            "MessageAttributeNames": [ID_ATTRIBUTE],
            "MessageSystemAttributeNames": ["ApproximateReceiveCount"],
        }
        if vt is None:
            raise ValueError("vt must be a number on SQS (no 'never expires')")
        if vt is not QUEUE_DEFAULT:
            params["VisibilityTimeout"] = _seconds("vt", vt, MAX_VISIBILITY)
        got = self._call("receive_message", **params)
        out: list[Delivered] = []
        for m in got.get("Messages", []):
            id, payload = _identify(m)
            attempt = int(m["Attributes"]["ApproximateReceiveCount"])
            self._q.handles[(id, attempt)] = m["ReceiptHandle"]
            out.append((id, payload, attempt))
        return out

    def receive(self, vt: float | QueueDefault | None) -> Delivered | None:
        got = self._receive(1, vt)
        return got[0] if got else None

    def receive_batch(self, n: int, vt: float | QueueDefault | None) -> list[Delivered]:
        return self._receive(n, vt)

    # -- receipts -------------------------------------------------------------------------------

    def _handle(self, id: str, attempt: int) -> str | None:
        return self._q.handles.get((id, attempt))

    def delete(self, id: str, attempt: int) -> bool:
        handle = self._handle(id, attempt)
        if handle is None:
            return False
        return self._receipt_call("delete_message", QueueUrl=self._q.url, ReceiptHandle=handle)

    def retry(self, id: str, attempt: int) -> bool:
        return self.change_visibility(id, attempt, 0)

    def change_visibility(self, id: str, attempt: int, t: float) -> bool:
        seconds = _seconds("t", t, MAX_VISIBILITY)
        handle = self._handle(id, attempt)
        if handle is None:
            return False
        return self._receipt_call(
            "change_message_visibility",
            QueueUrl=self._q.url,
            ReceiptHandle=handle,
            VisibilityTimeout=seconds,
        )

    def _receipt_batch(
        self,
        operation: str,
        receipts: Sequence[tuple[str, int]],
        extra: Callable[[int], Mapping[str, Any]],
    ) -> list[bool]:
        """A batch of deletes or visibility changes: unknown receipts ``False`` without a call,
        the others in one call (entry ``e<i>`` for the i-th), each ``Failed`` entry ``False``
        if its code is a receipt error (else :class:`SqsError`)."""
        if len(set(receipts)) < len(receipts):
            raise ValueError(
                "receipts: a receipt repeated inside one batch (SQS refuses the whole request)"
            )
        entries = []
        for i, (id, attempt) in enumerate(receipts):
            handle = self._handle(id, attempt)
            if handle is not None:
                entries.append({"Id": f"e{i}", "ReceiptHandle": handle, **extra(i)})
        results = [False] * len(receipts)
        if not entries:
            return results
        got = self._call(operation, QueueUrl=self._q.url, Entries=entries)
        for s in got.get("Successful", []):
            results[int(s["Id"][1:])] = True
        for f in got.get("Failed", []):
            code = str(f.get("Code", "")).removeprefix("AWS.SimpleQueueService.")
            if not _is_receipt_error(code, str(f.get("Message", ""))):
                raise SqsError(f"{operation}: entry {f['Id']}: {code}: {f.get('Message', '')}")
        return results

    def delete_batch(self, receipts: Sequence[tuple[str, int]]) -> list[bool]:
        return self._receipt_batch("delete_message_batch", receipts, lambda i: {})

    def change_visibility_batch(self, changes: Sequence[tuple[str, int, float]]) -> list[bool]:
        seconds = [_seconds("t", t, MAX_VISIBILITY) for _, _, t in changes]
        return self._receipt_batch(
            "change_message_visibility_batch",
            [(id, attempt) for id, attempt, _ in changes],
            lambda i: {"VisibilityTimeout": seconds[i]},
        )

    def cancel(self, id: str) -> bool:
        raise ValueError("cancel: SQS cannot cancel a message by id (outside the SQS profile)")

    # -- the rest -------------------------------------------------------------------------------

    def purge(self) -> int:
        names = [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ]
        got = self._call("get_queue_attributes", QueueUrl=self._q.url, AttributeNames=names)
        count = sum(int(got["Attributes"].get(name, 0)) for name in names)
        self._call("purge_queue", QueueUrl=self._q.url)
        return count

    def dead_letters(self) -> list[str]:
        q = self._q
        if q.dlq_url is None:
            return []
        while True:
            got = self._call(
                "receive_message",
                QueueUrl=q.dlq_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=0,
                VisibilityTimeout=MAX_VISIBILITY,
                MessageAttributeNames=[ID_ATTRIBUTE],
            )
            messages = got.get("Messages", [])
            if not messages:
                return list(q.dead)
            q.dead.extend(_identify(m)[0] for m in messages)
            entries = [
                {"Id": f"e{i}", "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ]
            self._call("delete_message_batch", QueueUrl=q.dlq_url, Entries=entries)

    def advance(self, dt: float) -> None:
        self._endpoint.clock.advance(_seconds("dt", dt, MAX_VISIBILITY))

    def sweep_all(self) -> None:
        # SQS runs its own timers (moto evaluates visibility on every read): nothing to do.
        pass


def _identify(message: Mapping[str, Any]) -> tuple[str, str]:
    """``(harness id, payload)`` of a received message."""
    id = message.get("MessageAttributes", {}).get(ID_ATTRIBUTE, {}).get("StringValue")
    payload = json.loads(message["Body"])
    if not isinstance(id, str) or not isinstance(payload, str):
        raise SqsError(f"a message the kit did not send: {message.get('MessageId')}")
    return id, payload


def run_on_sqs(scenario: Scenario | Mapping[str, Any], endpoint: str | SqsEndpoint) -> list[Output]:
    """Run one scenario on fresh SQS queues of ``endpoint`` (a name or URL, opened and closed
    for this call, or an endpoint already open) and return each op's output, as
    :func:`model_tests.targets.run_scenario` does; the queues are deleted afterwards.

    It does not check the SQS profile (:func:`model_tests.conformance.profile.check_profile`
    does): what SQS cannot express at all raises ``ValueError`` when reached.
    """
    if isinstance(endpoint, str):
        with open_endpoint(endpoint) as opened:
            return run_on_sqs(scenario, opened)
    return run_scenario(scenario, lambda config: SqsTarget(config, endpoint))
