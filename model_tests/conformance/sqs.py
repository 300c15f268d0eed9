"""An SQS endpoint as a scenario target: every harness op mapped onto SQS calls through boto3.

:class:`SqsTarget` implements :class:`model_tests.targets.Target`, so a scenario runs on SQS
through the same dispatch as on the model (:func:`run_on_sqs` is :func:`run_scenario` with this
target). Endpoints (:func:`open_endpoint`):

- ``"moto"``: moto's in-process ``mock_aws``;
- ``"moto-server"``: a ``moto.server.ThreadedMotoServer`` on 127.0.0.1 (a free port), a real
  HTTP peer, started and stopped with the endpoint;
- ``"server"``: this project's own SQS endpoint (``sqs_endpoint.serve(port=0, clock="fake")``) on
  127.0.0.1 over HTTP, started and stopped with the endpoint; ``advance`` moves the server's
  fake clock (``Endpoint.advance``), so nothing sleeps;
- ``"server-real"``: the same server on the real clock; ``advance`` sleeps (:class:`WallClock`);
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
  time until empty, each round's messages deleted by ``DeleteMessageBatch``; on a FIFO queue
  one at a time, since a FIFO batch comes group by group and one message a round, deleted
  before the next, comes oldest first) and appends the ids it finds, in the order received,
  to the ids it found before; the output is that record. Draining consumes the DLQ's
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
seconds only: the only place the kit sleeps, and never in tests. This project's server on its
fake clock (``"server"``) needs no patching: :class:`ControlledClock` moves it by ``dt`` through
the server's own time control (``Endpoint.advance``); ``"server-real"`` runs on the real clock
and :class:`WallClock` sleeps, as for a URL.

**Running against a real endpoint** (a URL: real SQS, ElasticMQ, LocalStack; never in CI):

1. *Credentials and region*: credentials come from the usual boto3 chain (``AWS_PROFILE`` or
   ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``); the region from ``AWS_REGION``, else
   ``AWS_DEFAULT_REGION`` or the profile's (boto3 reads only these two), else the endpoint's
   AWS host name (:func:`region_of`). Give the region's endpoint, e.g.
   ``https://sqs.eu-west-1.amazonaws.com``. The principal needs ``sqs:CreateQueue``,
   ``GetQueueAttributes``, ``SendMessage``, ``ReceiveMessage``, ``DeleteMessage``,
   ``ChangeMessageVisibility``, ``PurgeQueue`` and ``DeleteQueue`` (the batch calls are
   authorised as these) on queues named ``kit-*``; ``sts:GetCallerIdentity`` (which needs no
   permission) names the account before the run (:func:`caller_identity`).
2. *Costs*: every op is at least one request (a batch is one, ``purge`` two, ``dead`` two or
   more), and each scenario creates and deletes its queues (two more requests per queue, three
   with a dead-letter queue); SQS bills requests, so a scenario costs tens of requests. The
   CLI prints an upper bound before it starts (:mod:`model_tests.conformance.plan`).
   ``advance`` sleeps, so a run of 20 scenarios takes minutes. The judged calls are made once:
   boto3's retries are off for them (:data:`JUDGED_RETRIES`), since a send retried after a
   lost answer is a different scenario; creating and deleting queues is retried.
3. *Queues it creates*: ``kit-<12 hex digits>-<n>`` (``.fifo`` on FIFO queues) and, with
   ``max_receives``, ``kit-<...>-<n>-dlq``; the first 8 digits are the run's
   (:attr:`SqsEndpoint.prefix`), the last 4 count its scenarios. All are deleted when the
   scenario ends, even when it fails, and what is left when the endpoint closes (after an
   error, Ctrl-C, SIGTERM under the CLI) is deleted then (:meth:`SqsEndpoint.sweep`). *If a
   run is killed* (SIGKILL) or a second Ctrl-C stops that sweep, delete what is left: list it
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
from dataclasses import dataclass, field, replace
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
#: SQS's MessageRetentionPeriod limits, seconds (60 s to 14 days).
MIN_RETENTION: Final = 60
MAX_RETENTION: Final = 1_209_600
#: SQS's largest MaxNumberOfMessagesPerSecond of a move task.
MAX_MOVE_RATE: Final = 500
#: The output of a redrive op on an endpoint that does not implement the move-task calls
#: (moto 5.2.5: ``NotImplementedError``, docs/runs/moto-dlq.txt); the model never gives it.
UNSUPPORTED: Final = "unsupported"
#: The index of queue 0's dead-letter target (``"dead_letter"``), as in the harness.
DLQ_INDEX: Final = 1
#: The region used for moto (any region works there).
MOTO_REGION: Final = "us-east-1"
#: Error codes that say a receipt handle does not (or no longer) name an in-flight delivery.
RECEIPT_ERRORS: Final = frozenset({"ReceiptHandleIsInvalid", "MessageNotInflight"})
#: The longest long poll SQS allows (``WaitTimeSeconds``), seconds.
MAX_WAIT_TIME: Final = 20
#: The moto endpoint names (moto's clock is patched; no long polling).
ENDPOINTS: Final = ("moto", "moto-server")
#: This project's own server (``sqs_endpoint/``): on its fake clock, and on the real clock.
SERVER_ENDPOINTS: Final = ("server", "server-real")
#: Every endpoint name other than a URL.
NAMED_ENDPOINTS: Final = (*ENDPOINTS, *SERVER_ENDPOINTS)
#: Error codes that say a queue does not exist (deleted already, or never created).
GONE: Final = frozenset({"QueueDoesNotExist", "NonExistentQueue"})
#: boto3's retries for the judged calls: none (one attempt), since a retried call is another
#: scenario (a send retried after a lost answer is sent twice).
JUDGED_RETRIES: Final = {"total_max_attempts": 1, "mode": "standard"}
#: Retries for creating and deleting queues (idempotent calls): boto3's standard mode.
ADMIN_RETRIES: Final = {"total_max_attempts": 5, "mode": "standard"}


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


class TimeControl(Protocol):
    """What the kit needs of an endpoint whose time it controls: ``sqs_endpoint.serve``'s
    ``Endpoint`` on the fake clock."""

    def advance(self, seconds: float) -> object: ...


class ControlledClock:
    """An endpoint's own fake clock (this project's server): ``advance`` moves it through the
    endpoint's time control, at once; nothing sleeps. A scenario's time 0 needs no alignment:
    the server's timers are relative to its clock, which moves only here."""

    def __init__(self, control: TimeControl) -> None:
        self._control = control

    def restart(self) -> None:
        pass

    def advance(self, dt: float) -> None:
        self._control.advance(dt)


# -- endpoints -----------------------------------------------------------------------------------


@dataclass
class SqsEndpoint:
    """An open SQS endpoint: a boto3 SQS client and the clock that ``advance`` moves.

    ``client`` makes the judged calls (every op's), with boto3's retries off: a retried send
    is a different scenario. ``admin`` (``client`` when not given) creates and deletes the
    queues, where a retry is harmless (both calls are idempotent) and welcome on a throttled
    endpoint. Every queue the run creates is named ``kit-<run_token><4 hex digits>-...`` and
    recorded in ``live`` (with its attributes, before the call that creates it) until it is
    deleted: :meth:`sweep` deletes what is left, even a queue whose creation was interrupted.
    """

    name: str
    client: Any
    clock: Clock
    url: str | None = None
    #: ``WaitTimeSeconds`` of every receive: 0 short-polls, 1..20 long-polls (URL endpoints).
    wait_time: int = 0
    admin: Any = None
    #: The first 8 hex digits of every queue name of this run (``kit-<run_token>``).
    run_token: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    #: Queues created and not yet deleted: name -> (URL, ``None`` while the create is under
    #: way; the attributes it is created with).
    live: dict[str, tuple[str | None, dict[str, str]]] = field(default_factory=dict)
    #: Scenarios (targets) opened so far: the last 4 hex digits of their queues' token.
    opened: int = 0
    region: str | None = None

    @property
    def queues(self) -> Any:
        """The client that creates and deletes queues."""
        return self.client if self.admin is None else self.admin

    @property
    def prefix(self) -> str:
        """The name prefix of every queue of this run."""
        return f"kit-{self.run_token}"

    def next_token(self) -> str:
        """The 12 hex digits of the next scenario's queue names."""
        self.opened += 1
        return f"{self.run_token}{self.opened % 0x10000:04x}"

    def sweep(self) -> list[str]:
        """Delete every queue of the run still recorded in :attr:`live`; the names of those it
        could not delete. A queue whose URL is unknown (its creation was interrupted) is
        created again first, with the same attributes: ``CreateQueue`` of an existing queue
        returns its URL, and no listing has to catch up (SQS's lags a creation). A second
        Ctrl-C stops the sweep; what is left is returned."""
        left: list[str] = []
        try:
            # Newest first: a queue before the dead-letter queue its redrive policy names.
            for name in reversed(list(self.live)):
                if not self._delete(name):
                    left.append(name)
        except KeyboardInterrupt:
            left += [n for n in self.live if n not in left]
        return left

    def _delete(self, name: str) -> bool:
        url, attributes = self.live[name]
        try:
            if url is None:
                try:
                    got = self.queues.create_queue(QueueName=name, Attributes=attributes)
                except Exception:  # e.g. its dead-letter queue is gone: ask for the URL
                    got = self.queues.get_queue_url(QueueName=name)
                url = got["QueueUrl"]
            self.queues.delete_queue(QueueUrl=url)
        except Exception as e:  # ClientError or a connection's error: botocore is optional here
            if _code(e)[0] not in GONE:
                return False
        del self.live[name]
        return True


def _moto_client(endpoint_url: str | None = None) -> Any:
    import boto3  # type: ignore[import-untyped]
    from botocore.config import Config  # type: ignore[import-untyped]

    # moto (and this project's server) accepts any credentials; fixed ones keep the user's
    # real ones out of the run, and no retries keep a refused call from being made twice.
    return boto3.client(
        "sqs",
        region_name=MOTO_REGION,
        endpoint_url=endpoint_url,
        aws_access_key_id="kit",
        aws_secret_access_key="kit",
        config=Config(retries=JUDGED_RETRIES),
    )


def region_of(url: str, environ: Mapping[str, str] | None = None) -> str:
    """The region to sign requests to ``url`` for: ``AWS_REGION``, else ``AWS_DEFAULT_REGION``
    or the profile's region (boto3's own chain, which ignores ``AWS_REGION``), else the region
    in an AWS host name (``sqs.<region>.amazonaws.com``). A ``ValueError`` names both variables
    when there is none, and when the host's region is not the one the environment gives (the
    signature would be refused)."""
    import os

    import boto3

    env = os.environ if environ is None else environ
    from_url = _host_region(url)
    given = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if not given and environ is None:
        given = boto3.session.Session().region_name
    if given and from_url and given != from_url:
        raise ValueError(
            f"region: the endpoint {url} is in {from_url}, but the environment (AWS_REGION / "
            f"AWS_DEFAULT_REGION / the profile) says {given}"
        )
    region = given or from_url
    if not region:
        raise ValueError(
            f"region: none for {url}; set AWS_DEFAULT_REGION or AWS_REGION (e.g. us-east-1)"
        )
    return region


def _host_region(url: str) -> str | None:
    """The region named by an AWS SQS host (``sqs.eu-west-1.amazonaws.com``,
    ``eu-west-1.queue.amazonaws.com``), else ``None``."""
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    parts = host.split(".")
    if "amazonaws" not in parts:
        return None
    if parts[0] in ("sqs", "sqs-fips") and len(parts) >= 4:
        return parts[1]
    if len(parts) >= 4 and parts[1] == "queue":
        return parts[0]
    return None


def _url_clients(url: str, region: str) -> tuple[Any, Any]:
    """``(judged, admin)`` SQS clients for ``url``: credentials from the boto3 chain; the
    judged one without retries (:data:`JUDGED_RETRIES`)."""
    import boto3
    from botocore.config import Config

    def make(retries: Mapping[str, Any]) -> Any:
        return boto3.client(
            "sqs", endpoint_url=url, region_name=region, config=Config(retries=dict(retries))
        )

    return make(JUDGED_RETRIES), make(ADMIN_RETRIES)


def caller_identity(endpoint: SqsEndpoint) -> tuple[str | None, str]:
    """``(account, what was found)`` of ``endpoint``'s credentials, by STS
    ``GetCallerIdentity`` (one request that changes nothing): at the AWS regional STS for an
    AWS host, else at the endpoint's own URL (LocalStack and moto answer it, ElasticMQ does
    not). When STS does not answer, the account is ``None`` and the text says why."""
    import boto3
    from botocore.config import Config

    config = Config(retries=dict(JUDGED_RETRIES), connect_timeout=5, read_timeout=10)
    params: dict[str, Any] = {"region_name": endpoint.region or MOTO_REGION, "config": config}
    if endpoint.name in NAMED_ENDPOINTS:
        params.update(aws_access_key_id="kit", aws_secret_access_key="kit")
    if endpoint.url is not None and _host_region(endpoint.url) is None:
        params["endpoint_url"] = endpoint.url
    try:
        got = boto3.client("sts", **params).get_caller_identity()
    except Exception as e:  # any failure only means "unknown"
        where = params.get("endpoint_url", "AWS STS")
        return None, f"STS is not available at {where} ({type(e).__name__}: {e})"
    return str(got.get("Account")), str(got.get("Arn"))


def check_wait_time(endpoint: str, wait_time: int) -> None:
    """Raise ``TypeError``/``ValueError`` naming ``wait_time`` unless ``endpoint`` can long-poll
    for that long (whole seconds 0..20; 0 everywhere, more on any endpoint but moto's)."""
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
    """Open ``endpoint`` (``"moto"``, ``"moto-server"``, ``"server"``, ``"server-real"`` or an
    http(s) URL) for the ``with`` block; a moto endpoint's clock is patched in for that long, a
    server stopped after it. ``wait_time`` > 0 (not on moto) makes every receive a long poll of
    that many seconds (:func:`check_wait_time`)."""
    if endpoint in NAMED_ENDPOINTS or endpoint.startswith(("http://", "https://")):
        check_wait_time(endpoint, wait_time)
    if endpoint == "moto":
        import moto

        clock = MotoClock()
        with clock.patched(), moto.mock_aws():
            yield from _swept(SqsEndpoint(endpoint, _moto_client(), clock, region=MOTO_REGION))
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
                    opened = SqsEndpoint(endpoint, _moto_client(url), clock, url)
                    opened.region = MOTO_REGION
                    yield from _swept(opened)
                finally:
                    server.stop()
        finally:
            log.setLevel(level)
    elif endpoint in SERVER_ENDPOINTS:
        yield from _server_endpoint(endpoint, wait_time)
    elif endpoint.startswith(("http://", "https://")):
        region = region_of(endpoint)
        client, admin = _url_clients(endpoint, region)
        yield from _swept(
            SqsEndpoint(
                endpoint, client, WallClock(), endpoint, wait_time, admin=admin, region=region
            )
        )
    else:
        raise ValueError(
            f"endpoint must be one of {', '.join(NAMED_ENDPOINTS)} or an http(s) URL, "
            f"got {endpoint!r}"
        )


def _server_endpoint(endpoint: str, wait_time: int) -> Iterator[SqsEndpoint]:
    """This project's server on 127.0.0.1 (a free port) for the endpoint's lifetime: on its
    fake clock (``"server"``, ``advance`` moves it) or the real one (``"server-real"``)."""
    import importlib

    # sqs_endpoint/ stays in the repository (the wheel ships model_tests without it): imported by
    # name, so the kit has no static dependency on it.
    try:
        serve: Callable[..., Any] = importlib.import_module("sqs_endpoint").serve
    except (ImportError, AttributeError) as e:
        raise ValueError(
            f"endpoint {endpoint!r} needs the sqs_endpoint package and its 'server' extra: {e}"
        ) from e
    fake = endpoint == "server"
    with serve(host="127.0.0.1", port=0, clock="fake" if fake else "real") as ep:
        url = str(ep.url)
        clock: Clock = ControlledClock(ep) if fake else WallClock()
        opened = SqsEndpoint(endpoint, _moto_client(url), clock, url, wait_time)
        opened.region = MOTO_REGION
        yield from _swept(opened)


class LeftQueues(RuntimeError):
    """Queues of the run that the kit could not delete (their names or URLs are in the text)."""


def _swept(opened: SqsEndpoint) -> Iterator[SqsEndpoint]:
    """Yield ``opened``; afterwards, whatever happened in between (an error, Ctrl-C), delete
    every queue of the run left (:meth:`SqsEndpoint.sweep`). What could not be deleted is
    printed on standard error with the commands that delete it, and raised as
    :class:`LeftQueues` if nothing else is being raised."""
    import sys

    failed = True
    try:
        yield opened
        failed = False
    finally:
        left = opened.sweep()
        if left:
            names = "\n".join(f"  {n}" for n in left)
            message = (
                f"the kit could not delete these queues of its run (if they exist):\n{names}\n"
                f"list them with: aws sqs list-queues --queue-name-prefix {opened.prefix}\n"
                "delete each with: aws sqs delete-queue --queue-url URL"
            )
            print(message, file=sys.stderr)
            if not failed:
                raise LeftQueues(message)


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
    _check_retention("retention", config.retention)
    if config.dead_letter is not None:
        dl = config.dead_letter
        if dl.visibility_timeout is None:
            raise ValueError("dead_letter visibility_timeout must be a number on SQS")
        _seconds("dead_letter visibility_timeout", dl.visibility_timeout, MAX_VISIBILITY)
        _check_retention("dead_letter retention", dl.retention)


def _check_retention(name: str, retention: float | None) -> None:
    """A retention SQS can express: ``None`` (the kit sets SQS's maximum, 14 days) or whole
    seconds in ``MIN_RETENTION..MAX_RETENTION``."""
    if retention is not None and _seconds(name, retention, MAX_RETENTION) < MIN_RETENTION:
        raise ValueError(f"{name} must be >= {MIN_RETENTION} s on SQS, got {retention!r}")


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
    #: Its QueueArn, once asked for (a dead-letter target's, a redrive's destination's).
    arn: str | None = None
    #: Whether its dead letters move to queue 1 (``"dead_letter"``): ``dead`` cannot see them.
    has_target: bool = False


class SqsTarget:
    """A scenario's queues on an SQS endpoint (see the module docstring for the mapping)."""

    def __init__(self, config: QueueConfig, endpoint: SqsEndpoint) -> None:
        check_config(config)
        self._config = config
        self._endpoint = endpoint
        self._sqs = endpoint.client
        self._token = endpoint.next_token()
        self.queues: list[_Queue] = []
        self._current = 0
        # The MessageId of every message sent, and of every redriven one seen: its harness id.
        self._ids: dict[str, str] = {}
        #: How many redriven messages were seen (each named ``msg-<n>`` as the model names it).
        self._redriven = 0
        #: The handle of queue 1's most recent move task (``StartMessageMoveTask``).
        self._task: str | None = None
        if config.dead_letter is None:
            self.new_queue()
        else:
            # Queue 1 first (queue 0's RedrivePolicy names it), then queue 0 with that policy.
            dl = self._make(f"kit-{self._token}-1", config.dead_letter_config(), None)
            self.queues.append(self._make(f"kit-{self._token}-0", config, self._arn(dl)))
            self.queues.append(dl)
            self._current = 0
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

    def _admin(self, operation: str, **params: Any) -> Any:
        """A call that creates, describes or deletes a queue (retried; see :class:`SqsEndpoint`)."""
        from botocore.exceptions import ClientError

        try:
            return getattr(self._endpoint.queues, operation)(**params)
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
        # Recorded before the call: a create interrupted after SQS made the queue is swept too.
        from botocore.exceptions import EndpointConnectionError

        live = self._endpoint.live
        live[name] = (None, attributes)
        try:
            got = self._admin("create_queue", QueueName=name, Attributes=attributes)
        except (SqsError, EndpointConnectionError):
            # Refused, or never sent (no connection): there is no such queue to delete.
            del live[name]
            raise
        url: str = got["QueueUrl"]
        live[name] = (url, attributes)
        return url

    def _arn(self, q: _Queue) -> str:
        if q.arn is None:
            got = self._admin("get_queue_attributes", QueueUrl=q.url, AttributeNames=["QueueArn"])
            q.arn = str(got["Attributes"]["QueueArn"])
        return q.arn

    def _make(self, name: str, c: QueueConfig, target: str | None) -> _Queue:
        """A queue of configuration ``c``: its dead letters go to ``target`` (an ARN: queue 1)
        or, with ``max_receives`` and no target, to a DLQ of its own (``<name>-dlq``)."""
        vt = c.visibility_timeout or 0  # check_config refused None
        attributes = {
            "VisibilityTimeout": str(_seconds("visibility_timeout", vt, MAX_VISIBILITY)),
            "DelaySeconds": str(_seconds("delay", c.delay, MAX_DELAY)),
        }
        if c.retention is not None:
            attributes["MessageRetentionPeriod"] = str(
                _seconds("retention", c.retention, MAX_RETENTION)
            )
        elif self._config.retention is not None or self._config.dead_letter is not None:
            # A scenario about retention: a queue without one keeps messages as long as SQS can.
            attributes["MessageRetentionPeriod"] = str(MAX_RETENTION)
        dlq_url = None
        if c.max_receives is not None:
            if target is None:
                dlq_url = self._create(f"{name}-dlq", {})
                got = self._admin(
                    "get_queue_attributes", QueueUrl=dlq_url, AttributeNames=["QueueArn"]
                )
                target = str(got["Attributes"]["QueueArn"])
            policy = {"deadLetterTargetArn": target, "maxReceiveCount": c.max_receives}
            attributes["RedrivePolicy"] = json.dumps(policy)
        q = _Queue(self._create(name, attributes), dlq_url)
        q.has_target = dlq_url is None and c.max_receives is not None
        return q

    def new_queue(self) -> None:
        name = f"kit-{self._token}-{len(self.queues)}"
        # A new queue has the scenario's settings but no dead-letter target of the scenario's.
        self.queues.append(self._make(name, replace(self._config, dead_letter=None), None))
        self._current = len(self.queues) - 1

    def use(self, index: int) -> None:
        self._current = index

    def close(self) -> None:
        """Delete every queue of the run (and its DLQ); the first error is raised after all
        deletions were tried."""
        errors: list[SqsError] = []
        live = self._endpoint.live
        for q in self.queues:
            for url in (q.url, q.dlq_url):
                if url is not None:
                    try:
                        self._admin("delete_queue", QueueUrl=url)
                    except SqsError as e:
                        if _code(e.__cause__ or e)[0] not in GONE:
                            errors.append(e)
                            continue
                    for name in [n for n, (u, _) in live.items() if u == url]:
                        del live[name]
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
        self._ids.setdefault(message_id, id)
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
            id = self._harness_id(m["MessageId"], id)
            attempt = int(m["Attributes"]["ApproximateReceiveCount"])
            self._q.handles[(id, attempt)] = m["ReceiptHandle"]
            out.append((id, payload, attempt))
        return out

    def _harness_id(self, message_id: str, kit_id: str) -> str:
        """The harness id of a received message: its ``kit_id``, except for a message a move
        task redrove. SQS gives that one a new MessageId and keeps its attributes (AWS: "All
        redriven messages are treated as new messages: they get a new messageID"); the model
        gives it a fresh id from the system's counter, ``msg-<n>``, so the kit names the n-th
        new MessageId it sees ``msg-<n>`` (in the order received: the model's order when the
        endpoint moves oldest first and delivers in order). Only a scenario with a redrive
        can show one: every other message's MessageId is one a send returned."""
        if message_id in self._ids:
            return self._ids[message_id]
        if self._task is None:
            return kit_id
        self._redriven += 1
        self._ids[message_id] = f"msg-{self._redriven}"
        return self._ids[message_id]

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
        if q.has_target:
            raise ValueError(
                "dead: queue 0's dead letters move to queue 1; SQS cannot list what died in a "
                'queue (receive from queue 1: ["use", 1] then "reserve")'
            )
        if q.dlq_url is None:
            return []
        # A FIFO dead-letter queue delivers a batch group by group, not in the order the
        # messages died: one at a time, each deleted before the next receive (so its group is
        # not locked), it delivers the oldest first, which is the order they died.
        size = 1 if self._config.fifo else 10
        while True:
            got = self._call(
                "receive_message",
                QueueUrl=q.dlq_url,
                MaxNumberOfMessages=size,
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

    # -- redrive and retention (contract section 7) ------------------------------------------------

    def _move_call(self, operation: str, **params: Any) -> Any:
        """A move-task call; ``None`` when the endpoint does not implement it (moto 5.2.5 raises
        ``NotImplementedError`` in-process; moto-server answers it with HTTP 500)."""
        try:
            return self._call(operation, **params)
        except NotImplementedError:
            return None
        except SqsError as e:
            code, message = _code(e.__cause__ or e)
            if "not been implemented" in message:
                return None
            # moto-server answers its NotImplementedError with HTTP 500 and an HTML page.
            if self._endpoint.name == "moto-server" and code == "500":
                return None
            raise

    def _latest_task(self) -> dict[str, Any] | str | None:
        """Queue 1's most recent move task (``ListMessageMoveTasks``), ``None`` if it has
        none, :data:`UNSUPPORTED` if the endpoint does not implement the call."""
        got = self._move_call(
            "list_message_move_tasks", SourceArn=self._arn(self.queues[DLQ_INDEX]), MaxResults=1
        )
        if got is None:
            return UNSUPPORTED
        results = got.get("Results", [])
        return dict(results[0]) if results else None

    def redrive(self, rate: float | None, to: int | None) -> bool | str:
        if self._config.dead_letter is None:
            raise ValueError("redrive: the scenario has no dead-letter target")
        params: dict[str, Any] = {"SourceArn": self._arn(self.queues[DLQ_INDEX])}
        if to is not None:
            params["DestinationArn"] = self._arn(self.queues[to])
        if rate is not None:
            if not float(rate).is_integer() or not 1 <= rate <= MAX_MOVE_RATE:
                raise ValueError(
                    f"rate must be whole messages per second in 1..500 on SQS, got {rate}"
                )
            params["MaxNumberOfMessagesPerSecond"] = int(rate)
        # One running task per queue: the kit asks first rather than read an error's code.
        latest = self._latest_task()
        if latest == UNSUPPORTED:
            return UNSUPPORTED
        if isinstance(latest, dict) and latest.get("Status") == "RUNNING":
            return False
        got = self._move_call("start_message_move_task", **params)
        if got is None:
            return UNSUPPORTED
        self._task = str(got["TaskHandle"])
        return True

    def redrive_cancel(self) -> bool | str:
        latest = self._latest_task()
        if latest == UNSUPPORTED:
            return UNSUPPORTED
        if not isinstance(latest, dict) or latest.get("Status") != "RUNNING":
            return False
        handle = latest.get("TaskHandle", self._task)
        return self._move_call("cancel_message_move_task", TaskHandle=handle) is not None

    def redrive_status(self) -> list[str | int | None] | str | None:
        latest = self._latest_task()
        if latest == UNSUPPORTED or latest is None:
            return latest
        assert isinstance(latest, dict)
        status = str(latest["Status"]).lower()
        # SQS has no count of skipped messages: null, which the judge does not compare.
        moved = int(latest.get("ApproximateNumberOfMessagesMoved", 0))
        return [status, moved, None, int(latest.get("ApproximateNumberOfMessagesToMove", 0))]

    def aged(self) -> list[str]:
        raise ValueError("aged: SQS deletes an aged-out message without a trace (no listing)")

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
