"""Benchmarks of this project's SQS endpoint (``sqs_endpoint/``) beside the local endpoints people
run.

    python -m bench.server            # full sizes, about a minute
    python -m bench.server --quick    # small sizes, a smoke run (the test's mode)

Every endpoint runs in a process of its own (``python -c``: ``sqs_endpoint.serve(port=0)`` on the
real clock, moto's ``ThreadedMotoServer``), so the client's work and the endpoint's do not share
one interpreter; each is driven by a boto3 client made the same way (:func:`client`: fixed
credentials, no retries), over HTTP on 127.0.0.1. The rows (:func:`run`, :class:`bench.report.Row`):

- ``server_cycle_vs_moto_server``: send + receive + delete cycles per second, one client, one
  cycle at a time (each call waits for its answer), beside moto's server; target ratio >= 10.
- ``server_cycle_vs_localstack``: the same beside LocalStack when one is running and named by
  ``BENCH_LOCALSTACK_URL`` (e.g. ``http://127.0.0.1:4566``); skipped otherwise, and the note says
  so (LocalStack needs Docker, or Python 3.13 and several workarounds without it).
- ``server_cycle_vs_client_alone``: the same cycles beside the same boto3 client answered in
  process (:func:`client_alone`): the client's own cost bounds every endpoint's rate, so this row
  says how close the endpoint comes to that bound, and its note the ceiling of the moto ratio.
- ``server_cycle_vs_canned_server``: the same cycles beside the same client over a socket to
  :func:`serve_canned`, a process that answers every call with a canned answer and does no
  work: the client's and the socket's cost, so this row says what the endpoint's own work costs
  and its note the ceiling of the moto ratio over a socket.
- ``server_batch_msgs``: messages per second end to end in batches of 10
  (``SendMessageBatch``, ``ReceiveMessage`` of 10, ``DeleteMessageBatch``), :data:`BATCH_THREADS`
  threads sharing the one client, beside moto's server; target >= 2,600 messages/s (ElasticMQ's
  published REST figure).
- ``server_batch_vs_client_alone``, ``server_batch_vs_canned_server``: the same batches beside
  the same client answered in process, and over a socket to :func:`serve_canned`.
- ``server_longpoll_memory``, ``server_longpoll_idle_cpu``, ``server_longpoll_answer_median``:
  :data:`RECEIVERS` receivers long-polling at once (``WaitTimeSeconds`` 20, raw HTTP/1.1
  connections from one asyncio loop, AWS JSON 1.0 requests): the endpoint process's resident
  memory while they wait (beside the same process with none waiting), its CPU time over a
  2-second window while they wait (beside the window with none), and the time from writing a
  ``SendMessage`` to the first receiver's answer, median of :data:`ANSWERS` sends (beside one
  receiver waiting alone); targets: idle CPU < 10 ms per 2 s, median < 5 ms.
- ``server_durable_*``: the durable endpoint (``--data FILE``) beside the in-memory one, the
  journal's commit cost and the replay rate of a start (``bench.durable``).

Memory and CPU are read from ``/proc/<pid>`` (Linux); elsewhere those rows are skipped.
Wall-clock time throughout: this is a benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from bench import durable as bench_durable
from bench.report import Row, ratio, run_command

#: The repository (the endpoint processes import ``sqs_endpoint`` from here).
ROOT: Final = Path(__file__).resolve().parent.parent
#: Threads sharing the one client in the batch rows (sends and receives overlap).
BATCH_THREADS: Final = 4
#: Receivers long-polling at once, and the sends timed against them.
RECEIVERS: Final = 1000
ANSWERS: Final = 50
#: The CPU window while the receivers wait, seconds (figures are ms per 2 s).
IDLE_WINDOW: Final = 2.0
#: ElasticMQ's published REST figure (messages/s), the batch row's target.
ELASTICMQ_MSGS: Final = 2600.0

#: The endpoint processes: each prints its URL, then serves until its standard input closes.
_SERVER_CODE: Final = """
import sys, sqs_endpoint
with sqs_endpoint.serve(host="127.0.0.1", port=0, clock="real") as ep:
    print(ep.url, flush=True)
    sys.stdin.read()
"""
_CANNED_CODE: Final = "from bench.server import serve_canned; serve_canned()"
_MOTO_CODE: Final = """
import logging, sys
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.ERROR)
s = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
s.start()
host, port = s.get_host_and_port()
print(f"http://{host}:{port}", flush=True)
sys.stdin.read()
s.stop()
"""
#: The Authorization header of the raw requests: the shape of a SigV4 one, signing nothing.
_AUTHORIZATION: Final = (
    "AWS4-HMAC-SHA256 Credential=bench/20260101/us-east-1/sqs/aws4_request, "
    "SignedHeaders=host, Signature=0"
)
SERVER: Final = "this server"
MOTO: Final = "moto ThreadedMotoServer"
LOCALSTACK: Final = "LocalStack"
ALONE: Final = "boto3 alone, answered in process"
CANNED: Final = "a canned-answer server (no queue)"


@dataclass(frozen=True)
class Sizes:
    """How much work each row does."""

    cycles: int  # send+receive+delete cycles on this server, per window
    baseline_cycles: int  # ... on moto's server and LocalStack (tens per second)
    batch_rounds: int  # rounds of 10 messages per thread on this server
    baseline_batch_rounds: int
    receivers: int
    answers: int
    repeat: int  # windows per figure, median reported


FULL: Final = Sizes(
    cycles=2000,
    baseline_cycles=100,
    batch_rounds=150,
    baseline_batch_rounds=10,
    receivers=RECEIVERS,
    answers=ANSWERS,
    repeat=3,
)
QUICK: Final = replace(
    FULL,
    cycles=200,
    baseline_cycles=10,
    batch_rounds=20,
    baseline_batch_rounds=2,
    receivers=100,
    answers=10,
    repeat=1,
)


def progress(message: str) -> None:
    print(f"[bench.server] {message}", file=sys.stderr, flush=True)


# -- endpoints ------------------------------------------------------------------------------------


@dataclass
class Process:
    """An endpoint running in a process of its own."""

    url: str
    popen: subprocess.Popen[str]

    @property
    def pid(self) -> int:
        return self.popen.pid


@contextlib.contextmanager
def spawn(code: str, what: str) -> Iterator[Process]:
    """Run ``code`` in a fresh interpreter (the repository on its path) until the block ends;
    ``RuntimeError`` with its standard error if it does not print its URL."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    popen = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        assert popen.stdout is not None
        url = popen.stdout.readline().strip()
        if not url.startswith("http://"):
            popen.kill()
            _, err = popen.communicate(timeout=10)
            raise RuntimeError(f"{what} did not start: {err.strip()[-2000:]}")
        yield Process(url, popen)
    finally:
        if popen.poll() is None:
            assert popen.stdin is not None
            popen.stdin.close()
            try:
                popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()


def client(url: str, pool: int = 10) -> Any:
    """A boto3 SQS client for ``url``: fixed credentials (local endpoints check none), no
    retries (a retried call would be counted twice), ``pool`` connections."""
    import boto3  # type: ignore[import-untyped]
    from botocore.config import Config  # type: ignore[import-untyped]

    return boto3.client(
        "sqs",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        config=Config(retries={"total_max_attempts": 1}, max_pool_connections=pool),
    )


#: The MD5 of the body ``"x"`` (what the stand-in's messages carry).
_MD5_X: Final = "9dd4e461268c8034f5c8564e155c67a6"


def _canned(target: str, params: dict[str, Any]) -> dict[str, Any]:
    """What the in-process stand-in of :func:`client_alone` answers: SQS's shapes, the least
    each call's parser and the benchmark's checks read (a receive gets as many messages as it
    asks for, a batch's every entry succeeds)."""
    if target == "CreateQueue":
        return {"QueueUrl": "http://127.0.0.1:9/000000000000/bench"}
    if target == "SendMessage":
        return {"MessageId": "m", "MD5OfMessageBody": _MD5_X}
    if target == "ReceiveMessage":
        n = int(params.get("MaxNumberOfMessages", 1))
        m = {"MessageId": "m", "ReceiptHandle": "r", "MD5OfBody": _MD5_X, "Body": "x"}
        return {"Messages": [m] * n}
    if target == "SendMessageBatch":
        ok = [
            {"Id": e["Id"], "MessageId": "m", "MD5OfMessageBody": _MD5_X} for e in params["Entries"]
        ]
        return {"Successful": ok, "Failed": []}
    if target == "DeleteMessageBatch":
        return {"Successful": [{"Id": e["Id"]} for e in params["Entries"]], "Failed": []}
    return {}  # DeleteQueue, DeleteMessage


def client_alone(pool: int = 10) -> Any:
    """A client made as :func:`client` makes one, whose every call is answered in process
    before it reaches a socket (botocore's ``before-send`` event returns a canned response,
    :func:`_canned`): what boto3 itself costs per call, the bound on any endpoint's rate
    through it."""
    from botocore.awsrequest import AWSResponse  # type: ignore[import-untyped]

    sqs = client("http://127.0.0.1:9", pool)

    class _Raw:
        def __init__(self, body: bytes) -> None:
            self._body = body

        def stream(self, **_: object) -> Iterator[bytes]:
            yield self._body

    def answer(request: Any, **_: object) -> Any:
        target = request.headers["X-Amz-Target"].decode().rpartition(".")[2]
        body = json.dumps(_canned(target, json.loads(request.body or b"{}"))).encode()
        headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "b"}
        return AWSResponse(request.url, 200, headers, _Raw(body))

    sqs.meta.events.register("before-send.sqs", answer)
    return sqs


def serve_canned() -> None:
    """The least HTTP endpoint an SQS client can use: on asyncio streams (as
    ``sqs_endpoint/http.py``),
    every request answered with :func:`_canned`'s answer, no queue, no validation, no model. Run
    in a process of its own (:data:`_CANNED_CODE`): it prints its URL, then serves until its
    standard input closes. Beside it, a figure measures what the endpoint's own work costs;
    through it, a client's rate is the bound of any endpoint's over a socket on this machine."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                fields = {}
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    fields[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(fields.get(b"content-length", b"0")))
                target = fields[b"x-amz-target"].decode().rpartition(".")[2]
                out = json.dumps(_canned(target, json.loads(body or b"{}"))).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\n"
                    b"x-amzn-RequestId: b\r\nContent-Length: %d\r\n\r\n%s" % (len(out), out)
                )
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        listening = await asyncio.start_server(connection, "127.0.0.1", 0, backlog=1024)
        print(f"http://127.0.0.1:{listening.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

    asyncio.run(main())


def _queue(sqs: Any, prefix: str) -> str:
    url: str = sqs.create_queue(QueueName=f"{prefix}-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    return url


# -- throughput -----------------------------------------------------------------------------------


def cycles_per_second(sqs: Any, n: int) -> float:
    """Send, receive and delete one message, ``n`` times in a row, on a fresh queue."""
    url = _queue(sqs, "bench-cycle")
    try:
        for _ in range(3):  # the connection and the code paths warm
            _cycle(sqs, url)
        start = time.perf_counter()
        for _ in range(n):
            _cycle(sqs, url)
        return n / (time.perf_counter() - start)
    finally:
        sqs.delete_queue(QueueUrl=url)


def _cycle(sqs: Any, url: str) -> None:
    sqs.send_message(QueueUrl=url, MessageBody="x")
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=0)
    messages = got.get("Messages", [])
    if len(messages) != 1:
        raise RuntimeError(f"a cycle received {len(messages)} messages, not 1")
    sqs.delete_message(QueueUrl=url, ReceiptHandle=messages[0]["ReceiptHandle"])


def batch_messages_per_second(sqs: Any, rounds: int, threads: int = BATCH_THREADS) -> float:
    """Messages per second through ``threads`` threads sharing ``sqs``, each doing ``rounds``
    rounds of: send 10 in a batch, receive up to 10, delete what it received in a batch, until
    every message it sent came out (a thread may receive another's messages: all are counted
    once, when deleted)."""
    url = _queue(sqs, "bench-batch")
    total = rounds * threads * 10
    deleted = [0]
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for r in range(rounds):
                entries = [{"Id": str(i), "MessageBody": f"m{r}-{i}"} for i in range(10)]
                sent = sqs.send_message_batch(QueueUrl=url, Entries=entries)
                if len(sent.get("Successful", [])) != 10:
                    raise RuntimeError(f"a batch send failed: {sent.get('Failed')}")
                _drain_some(sqs, url, deleted, lock)
        except BaseException as e:
            errors.append(e)

    start = time.perf_counter()
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    while not errors and deleted[0] < total:  # what the threads' receives left behind
        if not _drain_some(sqs, url, deleted, lock):
            raise RuntimeError(f"batch run: {total - deleted[0]} messages did not come out")
    elapsed = time.perf_counter() - start
    sqs.delete_queue(QueueUrl=url)
    if errors:
        raise errors[0]
    return total / elapsed


def _drain_some(sqs: Any, url: str, deleted: list[int], lock: threading.Lock) -> int:
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
    messages = got.get("Messages", [])
    if messages:
        entries = [
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
        ]
        done = sqs.delete_message_batch(QueueUrl=url, Entries=entries)
        with lock:
            deleted[0] += len(done.get("Successful", []))
    return len(messages)


# -- long polls -----------------------------------------------------------------------------------


def _proc_rss(pid: int) -> float | None:
    """Resident memory of ``pid`` in MiB (``/proc``), ``None`` where there is no ``/proc``."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _proc_cpu(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` so far (``/proc``), ``None`` without ``/proc``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # utime and stime are the 14th and 15th fields; the split starts at the 3rd.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _request(host: str, target: str, params: dict[str, Any]) -> bytes:
    """One AWS JSON 1.0 request, as botocore writes it, with a signature's header that signs
    nothing (local endpoints check none; moto reads the service from its scope)."""
    body = json.dumps(params).encode()
    head = (
        f"POST / HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-amz-json-1.0\r\n"
        f"X-Amz-Target: AmazonSQS.{target}\r\nContent-Length: {len(body)}\r\n"
        f"Authorization: {_AUTHORIZATION}\r\n\r\n"
    )
    return head.encode() + body


async def _response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """Status, body and whether the connection stays open, of one HTTP response
    (``Content-Length`` framed; an HTTP/1.0 server such as werkzeug's closes it)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    version, status = lines[0].split()[:2]
    length, keep = 0, version == "HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "connection":
            keep = value == "keep-alive" or (keep and value != "close")
    return int(status), await reader.readexactly(length), keep


class Connection:
    """One client connection that opens again when the server closed it after an answer."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def send(self, request: bytes) -> None:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
        self._streams[1].write(request)

    async def answer(self) -> tuple[int, bytes]:
        assert self._streams is not None
        status, body, keep = await _response(self._streams[0])
        if not keep:
            self.close()
        return status, body

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


@dataclass
class LongPolls:
    """What :func:`long_polls` measured."""

    receivers: int
    rss_mib: float | None
    rss_idle_mib: float | None
    cpu_ms: float | None
    cpu_idle_ms: float | None
    answers_ms: list[float]


async def _long_polls(url: str, pid: int, receivers: int, answers: int) -> LongPolls:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    netloc = f"{host}:{port}"
    sqs_queue = await _json_call(
        host, port, "CreateQueue", {"QueueName": f"bench-poll-{uuid.uuid4().hex[:12]}"}
    )
    queue_url = str(sqs_queue["QueueUrl"])
    rss_idle = _proc_rss(pid)
    cpu_idle = await _cpu_over(pid, IDLE_WINDOW)
    poll = _request(
        netloc,
        "ReceiveMessage",
        {
            "QueueUrl": queue_url,
            "MaxNumberOfMessages": 1,
            "WaitTimeSeconds": 20,
            "VisibilityTimeout": 600,
        },
    )
    arrived: asyncio.Queue[float] = asyncio.Queue()
    stop = asyncio.Event()
    connections: list[Connection] = []

    async def receiver() -> None:
        connection = Connection(host, port)
        connections.append(connection)
        while not stop.is_set():
            await connection.send(poll)
            status, body = await connection.answer()
            if status != 200:
                raise RuntimeError(f"a long poll answered {status}: {body[:200]!r}")
            if json.loads(body).get("Messages"):
                arrived.put_nowait(time.perf_counter())

    tasks = [asyncio.create_task(receiver()) for _ in range(receivers)]
    try:
        await asyncio.sleep(1.0 + receivers / 1000)  # every poll written and parked
        for t in tasks:
            if t.done():
                t.result()
        rss = _proc_rss(pid)
        cpu = await _cpu_over(pid, IDLE_WINDOW)
        sender = Connection(host, port)
        connections.append(sender)
        times = []
        for k in range(answers):
            send = _request(netloc, "SendMessage", {"QueueUrl": queue_url, "MessageBody": f"a{k}"})
            started = time.perf_counter()
            await sender.send(send)
            first = await asyncio.wait_for(arrived.get(), 10)
            status, body = await sender.answer()
            if status != 200:
                raise RuntimeError(f"a send answered {status}: {body[:200]!r}")
            times.append((first - started) * 1000)
            await asyncio.sleep(0.01)  # the answered receiver polls again
        return LongPolls(receivers, rss, rss_idle, cpu, cpu_idle, times)
    finally:
        stop.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for c in connections:
            c.close()
        await _json_call(host, port, "DeleteQueue", {"QueueUrl": queue_url})


async def _cpu_over(pid: int, seconds: float) -> float | None:
    """CPU milliseconds ``pid`` used over ``seconds`` of wall time, scaled to 2 s."""
    before = _proc_cpu(pid)
    await asyncio.sleep(seconds)
    after = _proc_cpu(pid)
    if before is None or after is None:
        return None
    return (after - before) * 1000 * (2.0 / seconds)


async def _json_call(host: str, port: int, target: str, params: dict[str, Any]) -> dict[str, Any]:
    connection = Connection(host, port)
    try:
        await connection.send(_request(f"{host}:{port}", target, params))
        status, body = await connection.answer()
    finally:
        connection.close()
    if status != 200:
        raise RuntimeError(f"{target} answered {status}: {body[:300]!r}")
    got: dict[str, Any] = json.loads(body or b"{}")
    return got


def long_polls(url: str, pid: int, receivers: int, answers: int) -> LongPolls:
    """``receivers`` long polls held open on the endpoint at ``url`` (process ``pid``): its
    memory and CPU while they wait, and ``answers`` sends' time to the first answer."""
    return asyncio.run(_long_polls(url, pid, receivers, answers))


# -- the rows -------------------------------------------------------------------------------------


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def _judged(row: Row, op: str, limit: float, text: str, what: str = "ratio") -> Row:
    x = row.ratio if what == "ratio" else row.value
    passed = None if x is None else (x >= limit if op == ">=" else x <= limit)
    return replace(row, target=text, passed=passed)


def _skipped(key: str, name: str, unit: str, baseline: str, note: str, target: str = "") -> Row:
    return Row(key, name, unit, None, baseline, None, None, target=target, note=note)


#: What the rows need beyond the project (the ``sqs_endpoint`` and ``conformance`` extras, which
#: ``scripts/setup`` installs): boto3 drives every endpoint, moto's server is the baseline.
NEEDS: Final = ("boto3", "moto", "flask", "werkzeug")
#: Every row :func:`run` reports, by key, with its name (for the rows of a skipped run).
KEYS: Final = (
    "server_cycle_vs_moto_server",
    "server_cycle_vs_localstack",
    "server_cycle_vs_client_alone",
    "server_cycle_vs_canned_server",
    "server_batch_msgs",
    "server_batch_vs_client_alone",
    "server_batch_vs_canned_server",
    "server_longpoll_memory",
    "server_longpoll_idle_cpu",
    "server_longpoll_answer_median",
    *bench_durable.KEYS,
)


def missing() -> list[str]:
    """The packages of :data:`NEEDS` that are not installed."""
    return [name for name in NEEDS if importlib.util.find_spec(name) is None]


def rows(quick: bool) -> list[Row]:
    """:func:`run`'s rows measured by ``python -m bench.server`` in a fresh process, or, when a
    package it needs is missing, each row skipped with a note naming the packages (``python
    -m bench`` calls this).

    A process of its own for the client too: the suite's process has by then built and dropped
    a million messages (the garbage collector's full passes cost more in a larger heap) and
    imported moto's in-process mock (whose botocore hooks every client's calls run through),
    which together made the same boto3 client less than half as fast there."""
    absent = missing()
    if absent:
        note = (
            f"skipped: {', '.join(absent)} not installed (pip install -e '.[server,conformance]')"
        )
        return [_skipped(key, key, "", "-", note) for key in KEYS]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        command = [sys.executable, "-m", "bench.server", "--json", str(out)]
        flags = ["--quick"] if quick else []
        subprocess.run([*command, *flags], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        got = json.loads(out.read_text())
    return [Row(**{k: v for k, v in r.items() if k != "skipped"}) for r in got]


def run(quick: bool) -> list[Row]:
    """Every row of this module, measured now (see the module docstring)."""
    sizes = QUICK if quick else FULL
    rows: list[Row] = []
    with (
        spawn(_SERVER_CODE, SERVER) as ours,
        spawn(_MOTO_CODE, MOTO) as moto,
        spawn(_CANNED_CODE, CANNED) as canned,
    ):
        mine, theirs, least = client(ours.url), client(moto.url), client(canned.url)
        progress("send + receive + delete cycles")
        alone = client_alone()
        c_ours, c_moto, c_alone, c_least = [], [], [], []
        for _ in range(sizes.repeat):  # interleaved: background load hits all four
            c_ours.append(cycles_per_second(mine, sizes.cycles))
            c_moto.append(cycles_per_second(theirs, sizes.baseline_cycles))
            c_alone.append(cycles_per_second(alone, sizes.cycles))
            c_least.append(cycles_per_second(least, sizes.cycles))
        a, b, ceiling = _median(c_ours), _median(c_moto), _median(c_alone)
        least_rate = _median(c_least)
        note = (
            f"{sizes.cycles} cycles here, {sizes.baseline_cycles} on moto, median of "
            f"{sizes.repeat}; one boto3 client each, each call waiting for its answer"
        )
        row = Row(
            "server_cycle_vs_moto_server",
            "SQS cycle (send+receive+delete), one client",
            "cycles/s",
            a,
            MOTO,
            b,
            ratio(a, b),
            note=note,
        )
        rows.append(_judged(row, ">=", 10.0, "ratio >= 10"))
        rows.append(_localstack_row(a, sizes))
        rows.append(
            Row(
                "server_cycle_vs_client_alone",
                "SQS cycle, this endpoint beside boto3 alone",
                "cycles/s",
                a,
                ALONE,
                ceiling,
                ratio(a, ceiling),
                note=(
                    f"the same client, every call answered in process (no socket, no endpoint): "
                    f"no endpoint's rate through boto3 passes it, so beside moto the ratio's "
                    f"ceiling is {ratio(ceiling, b):.1f}x here"
                ),
            )
        )
        rows.append(
            Row(
                "server_cycle_vs_canned_server",
                "SQS cycle, this endpoint beside a server that does nothing",
                "cycles/s",
                a,
                CANNED,
                least_rate,
                ratio(a, least_rate),
                note=(
                    "the same client over a socket to a process answering every call with a "
                    "canned answer (bench.server.serve_canned): the client's and the socket's "
                    "cost with no endpoint work, so beside moto the ratio's ceiling over a "
                    f"socket is {ratio(least_rate, b):.1f}x here"
                ),
            )
        )
        progress("batches of 10")
        mine_pool, theirs_pool = (
            client(ours.url, BATCH_THREADS * 2),
            client(moto.url, BATCH_THREADS * 2),
        )
        alone_pool = client_alone(BATCH_THREADS * 2)
        least_pool = client(canned.url, BATCH_THREADS * 2)
        b_ours, b_moto, b_alone, b_least = [], [], [], []
        for _ in range(sizes.repeat):
            b_ours.append(batch_messages_per_second(mine_pool, sizes.batch_rounds))
            b_moto.append(batch_messages_per_second(theirs_pool, sizes.baseline_batch_rounds))
            b_alone.append(batch_messages_per_second(alone_pool, sizes.batch_rounds))
            b_least.append(batch_messages_per_second(least_pool, sizes.batch_rounds))
        a, b, ceiling = _median(b_ours), _median(b_moto), _median(b_alone)
        least_rate = _median(b_least)
        note = (
            f"{BATCH_THREADS} threads on one client, {sizes.batch_rounds} rounds of 10 each here "
            f"({sizes.baseline_batch_rounds} on moto): send batch, receive 10, delete batch"
        )
        row = Row(
            "server_batch_msgs",
            "SQS batches of 10, end to end",
            "msgs/s",
            a,
            MOTO,
            b,
            ratio(a, b),
            note=note,
        )
        rows.append(_judged(row, ">=", ELASTICMQ_MSGS, f">= {ELASTICMQ_MSGS:,.0f} msgs/s", "value"))
        rows.append(
            Row(
                "server_batch_vs_client_alone",
                "SQS batches of 10, this endpoint beside boto3 alone",
                "msgs/s",
                a,
                ALONE,
                ceiling,
                ratio(a, ceiling),
                note=f"the same {BATCH_THREADS} threads on one client, every call answered in "
                "process: no endpoint's rate through this client passes it",
            )
        )
        rows.append(
            Row(
                "server_batch_vs_canned_server",
                "SQS batches of 10, this endpoint beside a server that does nothing",
                "msgs/s",
                a,
                CANNED,
                least_rate,
                ratio(a, least_rate),
                note=f"the same {BATCH_THREADS} threads on one client over a socket to "
                "bench.server.serve_canned: the bound of any endpoint's rate over a socket here",
            )
        )
        progress(f"{sizes.receivers} receivers long-polling")
        alone = long_polls(ours.url, ours.pid, 1, sizes.answers)
        crowd = long_polls(ours.url, ours.pid, sizes.receivers, sizes.answers)
        rows += _long_poll_rows(alone, crowd)
        rows += bench_durable.rows(mine, sizes, _median)
    return rows


def _localstack_row(ours: float, sizes: Sizes) -> Row:
    key, name = "server_cycle_vs_localstack", "SQS cycle (send+receive+delete), one client"
    url = os.environ.get("BENCH_LOCALSTACK_URL")
    if not url:
        return _skipped(
            key,
            name,
            "cycles/s",
            LOCALSTACK,
            "skipped: no LocalStack running (set BENCH_LOCALSTACK_URL=http://127.0.0.1:4566 to "
            "one; it is not installed here)",
            "ratio >= 10",
        )
    theirs = _median(
        [cycles_per_second(client(url), sizes.baseline_cycles) for _ in range(sizes.repeat)]
    )
    row = Row(
        key,
        name,
        "cycles/s",
        ours,
        LOCALSTACK,
        theirs,
        ratio(ours, theirs),
        note=f"LocalStack at {url}",
    )
    return _judged(row, ">=", 10.0, "ratio >= 10")


def _long_poll_rows(alone: LongPolls, crowd: LongPolls) -> list[Row]:
    n = crowd.receivers
    rows = []
    if crowd.rss_mib is None or crowd.rss_idle_mib is None:
        rows.append(
            _skipped(
                "server_longpoll_memory",
                f"{n} long polls waiting: memory",
                "MiB",
                "none waiting",
                "skipped: no /proc",
            )
        )
    else:
        per = (crowd.rss_mib - crowd.rss_idle_mib) * 1024 / n
        rows.append(
            Row(
                "server_longpoll_memory",
                f"{n} long polls waiting: resident memory",
                "MiB",
                crowd.rss_mib,
                "none waiting",
                crowd.rss_idle_mib,
                ratio(crowd.rss_mib, crowd.rss_idle_mib),
                note=f"{per:.1f} KiB per waiting receiver (the endpoint process)",
            )
        )
    if crowd.cpu_ms is None or crowd.cpu_idle_ms is None:
        rows.append(
            _skipped(
                "server_longpoll_idle_cpu",
                f"{n} long polls waiting: CPU",
                "ms per 2 s",
                "none waiting",
                "skipped: no /proc",
                "< 10 ms per 2 s",
            )
        )
    else:
        row = Row(
            "server_longpoll_idle_cpu",
            f"{n} long polls waiting: CPU",
            "ms per 2 s",
            crowd.cpu_ms,
            "none waiting",
            crowd.cpu_idle_ms,
            ratio(crowd.cpu_ms, crowd.cpu_idle_ms),
            note=f"the endpoint process over {IDLE_WINDOW:g} s (clock ticks of 10 ms)",
        )
        rows.append(_judged(row, "<=", 10.0, "< 10 ms per 2 s", "value"))
    a, b = _median(crowd.answers_ms), _median(alone.answers_ms)
    p90 = statistics.quantiles(crowd.answers_ms, n=10)[-1] if len(crowd.answers_ms) >= 2 else a
    row = Row(
        "server_longpoll_answer_median",
        f"send to first answer, {n} waiting",
        "ms",
        a,
        "one waiting",
        b,
        ratio(a, b),
        note=f"median of {len(crowd.answers_ms)} sends (p90 {p90:.2f} ms); raw HTTP/1.1 "
        "from one asyncio loop",
    )
    rows.append(_judged(row, "<=", 5.0, "median < 5 ms", "value"))
    return rows


def main(argv: list[str] | None = None) -> int:
    return run_command("python -m bench.server", __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
