"""The SQS endpoint's HTTP layer beside the alternatives: one app, three HTTP stacks.

    python -m bench.http_stacks            # full sizes, about two minutes on 2 cores
    python -m bench.http_stacks --quick    # small sizes, a smoke run (the test's mode)

The same SQS app (``sqs_endpoint.app.App`` over ``sqs_endpoint.service.Service`` on a real
``sqs_endpoint.clock.ServerClock``, built as ``sqs_endpoint.endpoint`` builds it: :func:`build_app`)
is
served by three HTTP stacks, each in a process of its own (``bench.server.spawn``):

- **this project's** ``sqs_endpoint/http.py`` (``sqs_endpoint.serve``): HTTP/1.1 on asyncio streams,
one
  task per connection, no dependency;
- **the stdlib's** ``http.server.ThreadingHTTPServer`` (:func:`serve_threading`): a thread per
  connection, what moto-style servers do (werkzeug's is one), with ``protocol_version``
  HTTP/1.1 (keep-alive), ``disable_nagle_algorithm`` and the same listen backlog (``BACKLOG``);
  its handler turns the request into a ``sqs_endpoint.http.Request`` and runs the app's coroutine on
  the one asyncio loop thread the queues live on (``asyncio.run_coroutine_threadsafe``), so a
  waiting long poll holds a thread blocked on a future;
- **aiohttp.web** (:func:`serve_aiohttp`): an ``Application`` with one catch-all route on
  aiohttp's own loop (its C parser where the wheel has it), the handler converting to and
  from ``Request``/``Response``. aiohttp is not a dependency of this project: the process runs
  on the first interpreter that imports it, this one's or the ``.venv-clients`` one
  ``scripts/setup`` makes (aiobotocore brings aiohttp there; the same CPython build), and the
  rows are skipped with a note when there is none. (That interpreter's botocore, pinned by
  aiobotocore, is where its app's SQS model comes from: it has every operation and member
  the benchmark sends.)

The adapters of the two alternatives carry what the benchmark's requests need (bodies framed
by ``Content-Length``); the strictness ``sqs_endpoint/http.py`` adds (limits, chunked bodies, the
refusals and their SQS-shaped errors) is not reproduced, which can only flatter them.

What is measured, the same client for every stack, the stacks interleaved (each repeat spawns
fresh processes of all three and visits them in a rotated order), medians of the repeats:

- send + receive + delete cycles per second through one kept-alive ``http.client`` connection
  with ``TCP_NODELAY`` and pre-built AWS JSON 1.0 bodies (:func:`cycles_per_second`): boto3
  would cost more than any of these servers (``bench.server``'s client-alone row), so a raw
  client is what isolates the server; in windows of :attr:`Sizes.cycles` the stacks take in
  turn, so a burst of load from elsewhere falls on all of them alike;
- :data:`RECEIVERS` long polls (``ReceiveMessage`` with ``WaitTimeSeconds`` 20) held at once,
  through one asyncio client loop (:func:`hold`, ``bench.server.long_polls`` but waiting until
  the server process holds every connection): how long that took, the server process's
  resident memory growth per waiter, its CPU time over a 2-second window while they wait, and
  the time from a ``SendMessage`` to the first waiter's answer; and the process's resident
  memory before any waiter (what the stack costs standing still: its imports).

Every row has this project's stack as the figure and an alternative as the baseline
(``ratio = figure / baseline``, whichever way is better), and no target: this measures a
choice, it does not gate one. Memory and sockets are read from ``/proc`` and CPU time from
the server process's CPU-time clock (Linux). Wall-clock time
throughout: this is a benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import http.server
import importlib
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Final
from urllib.parse import urlsplit

from bench.report import Row, ratio, run_command
from bench.server import (
    ROOT,
    Connection,
    Process,
    _proc_cpu,
    _proc_rss,
    _request,
    spawn,
)

#: Long polls held at once (quick: 100), and the sends timed against them.
RECEIVERS: Final = 1000
ANSWERS: Final = 50
#: The listen backlog every stack gets: ``sqs_endpoint.http.LISTEN_BACKLOG``, the endpoint's own
#: (the stdlib's default of 5, asyncio's 100 or aiohttp's 128 would make a thousand
#: connections opened at once wait on SYN retries, which would measure the backlog, not the
#: stack).
BACKLOG: Final = 1024

OURS: Final = "sqs_endpoint/http.py"
THREADING: Final = "ThreadingHTTPServer"
AIOHTTP: Final = "aiohttp.web"

#: The Authorization header of the raw requests: the shape of a SigV4 one, signing nothing.
_AUTHORIZATION: Final = (
    "AWS4-HMAC-SHA256 Credential=bench/20260101/us-east-1/sqs/aws4_request, "
    "SignedHeaders=host, Signature=0"
)


@dataclass(frozen=True)
class Sizes:
    """How much work each row does."""

    cycles: int  # send+receive+delete cycles per stack, per window
    windows: int  # cycle windows per round, the stacks taking turns window by window
    receivers: int
    answers: int
    repeat: int  # fresh processes of every stack, median reported


FULL: Final = Sizes(cycles=500, windows=4, receivers=RECEIVERS, answers=ANSWERS, repeat=3)
QUICK: Final = replace(FULL, cycles=200, windows=1, receivers=100, answers=10, repeat=1)


def progress(message: str) -> None:
    print(f"[bench.http_stacks] {message}", file=sys.stderr, flush=True)


# -- the app, as sqs_endpoint.endpoint builds it
# --------------------------------------------------------


@dataclass
class Built:
    """The SQS app and what it runs on (one event loop)."""

    app: Any  # sqs_endpoint.app.App
    service: Any  # sqs_endpoint.service.Service
    clock: Any  # sqs_endpoint.clock.ServerClock


def build_app(loop: asyncio.AbstractEventLoop) -> Built:
    """The app ``sqs_endpoint.endpoint.Endpoint._startup`` builds: a real ``ServerClock`` attached
    to
    ``loop``, ``Service`` on it, ``App`` with the time-control API. Call on ``loop``'s thread."""
    from sqs_endpoint.app import App
    from sqs_endpoint.clock import ServerClock
    from sqs_endpoint.control import Control
    from sqs_endpoint.service import Service

    clock = ServerClock("real")
    clock.attach(loop)
    service = Service(clock)
    app = App(service, control=Control(clock, service.queues))
    return Built(app, service, clock)


def _joined(items: Iterator[tuple[str, str]]) -> dict[str, str]:
    # Lower-case names, a repeated field joined with ", " (what sqs_endpoint.http.Request holds).
    headers: dict[str, str] = {}
    for name, value in items:
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


# -- the stdlib's threaded server -----------------------------------------------------------------


def threading_server(built: Built, loop: asyncio.AbstractEventLoop) -> http.server.HTTPServer:
    """A ``ThreadingHTTPServer`` on a free port of 127.0.0.1 answering with ``built.app``,
    whose coroutines run on ``loop`` (running in another thread); not yet serving."""
    from sqs_endpoint.http import Request

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as SQS clients use
        disable_nagle_algorithm = True  # a response's head and body go out at once

        def _serve(self) -> None:
            length_text = self.headers.get("Content-Length", "0").strip()
            if not length_text.isdigit():
                self.send_error(400, "Content-Length is not a number")
                return
            length = int(length_text)
            body = self.rfile.read(length) if length else b""
            path, _, query = self.path.partition("?")
            request = Request(
                self.command,
                self.path,
                self.request_version,
                _joined(iter(self.headers.items())),
                body,
                path,
                query.partition("#")[0],
                local,
            )
            # The queues are asyncio queues on one loop: the thread waits for its answer there.
            response = asyncio.run_coroutine_threadsafe(built.app.handle(request), loop).result()
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            if response.close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # no access log (the asyncio stacks write none either)

    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = BACKLOG

        def handle_error(self, request: Any, client_address: Any) -> None:
            # A client that closed its connection while its long poll waited (the benchmark
            # does, a thousand at once) is no error, as werkzeug treats it; socketserver would
            # print each traceback to a standard error nobody reads until its pipe is full.
            if isinstance(sys.exc_info()[1], ConnectionError):
                return
            super().handle_error(request, client_address)

    httpd = Server(("127.0.0.1", 0), Handler)
    address = httpd.socket.getsockname()
    local = (str(address[0]), int(address[1]))  # the Request's local, as sqs_endpoint.http gives it
    return httpd


def serve_threading() -> None:
    """Serve the app with ``ThreadingHTTPServer`` until standard input closes (the process
    :func:`launch` starts); prints the URL once it listens."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="asyncio", daemon=True)
    thread.start()

    async def build() -> Built:
        return build_app(asyncio.get_running_loop())

    built = asyncio.run_coroutine_threadsafe(build(), loop).result()
    httpd = threading_server(built, loop)
    serving = threading.Thread(target=httpd.serve_forever, name="http", daemon=True)
    serving.start()
    host, port = httpd.socket.getsockname()[:2]
    print(f"http://{host}:{port}", flush=True)
    sys.stdin.read()
    httpd.shutdown()
    httpd.server_close()
    asyncio.run_coroutine_threadsafe(built.service.aclose(), loop).result(timeout=10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)


# -- aiohttp.web ----------------------------------------------------------------------------------


def aiohttp_application(built: Built) -> Any:
    """An ``aiohttp.web.Application`` answering every path with ``built.app`` (on the loop
    that runs it, which must be the one ``built`` was made on)."""
    from sqs_endpoint.http import DEFAULT_MAX_BODY, Request

    # Imported by name: aiohttp is no dependency of this project (nor typed here).
    web: Any = importlib.import_module("aiohttp.web")

    async def handle(incoming: Any) -> Any:
        body = await incoming.read()
        target = str(incoming.raw_path)
        path, _, query = target.partition("?")
        transport = incoming.transport
        local = transport.get_extra_info("sockname") if transport is not None else None
        request = Request(
            incoming.method,
            target,
            f"HTTP/{incoming.version.major}.{incoming.version.minor}",
            _joined(iter(incoming.headers.items())),
            body,
            path,
            query.partition("#")[0],
            (str(local[0]), int(local[1])) if local else ("127.0.0.1", 0),
        )
        response = await built.app.handle(request)
        out = web.Response(status=response.status, headers=response.headers, body=response.body)
        if response.close:
            out.force_close()
        return out

    application = web.Application(client_max_size=DEFAULT_MAX_BODY)
    application.router.add_route("*", "/{tail:.*}", handle)
    return application


def serve_aiohttp() -> None:
    """Serve the app with aiohttp.web until standard input closes (the process :func:`launch`
    starts); prints the URL once it listens."""
    web: Any = importlib.import_module("aiohttp.web")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        built = build_app(loop)
        runner = web.AppRunner(aiohttp_application(built), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=BACKLOG)
        await site.start()
        host, port = runner.addresses[0][:2]
        print(f"http://{host}:{port}", flush=True)
        await loop.run_in_executor(None, sys.stdin.read)
        await runner.cleanup()
        await built.service.aclose()
        built.clock.detach()

    asyncio.run(main())


# -- the stacks as processes ----------------------------------------------------------------------


@dataclass(frozen=True)
class Stack:
    """One HTTP stack: its name, the code its process runs and the interpreter it runs on
    (``None``: this one); ``missing`` says why it cannot run here (then it is skipped)."""

    name: str
    code: str
    python: str | None = None
    missing: str = ""
    version: str = ""


_OURS_CODE: Final = """
import sys, sqs_endpoint
with sqs_endpoint.serve(host="127.0.0.1", port=0, clock="real") as ep:
    print(ep.url, flush=True)
    sys.stdin.read()
"""
_THREADING_CODE: Final = "from bench.http_stacks import serve_threading; serve_threading()"
_AIOHTTP_CODE: Final = "from bench.http_stacks import serve_aiohttp; serve_aiohttp()"


def importable(name: str) -> bool:
    """Whether this interpreter has module ``name``."""
    return importlib.util.find_spec(name) is not None


def aiohttp_stack() -> Stack:
    """The aiohttp stack on the first interpreter that imports aiohttp (this one, then
    ``.venv-clients``'s), with aiohttp's version there; ``missing`` set when none does."""
    if importable("aiohttp"):
        version = importlib.import_module("aiohttp").__version__
        return Stack(AIOHTTP, _AIOHTTP_CODE, version=str(version))
    other = ROOT / ".venv-clients" / "bin" / "python"
    if other.exists():
        try:
            got = subprocess.run(
                [str(other), "-c", "import aiohttp; print(aiohttp.__version__)"],
                capture_output=True,
                text=True,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            got = None
        if got is not None and got.returncode == 0:
            return Stack(AIOHTTP, _AIOHTTP_CODE, str(other), version=got.stdout.strip())
    return Stack(
        AIOHTTP,
        _AIOHTTP_CODE,
        missing="aiohttp is not installed (here, nor in .venv-clients, which scripts/setup "
        "makes with aiobotocore)",
    )


def stacks() -> list[Stack]:
    """The three stacks; the aiohttp one with ``missing`` set when no interpreter has it."""
    return [Stack(OURS, _OURS_CODE), Stack(THREADING, _THREADING_CODE), aiohttp_stack()]


@contextlib.contextmanager
def launch(stack: Stack) -> Iterator[Process]:
    """``stack``'s process until the block ends (``bench.server.spawn``). On another
    interpreter the spawned process execs it in place: the same pid, the same pipes."""
    if stack.missing:
        raise RuntimeError(f"{stack.name} cannot run here: {stack.missing}")
    code = stack.code
    if stack.python is not None:
        argv = [stack.python, "-c", code]
        code = f"import os; os.execv({stack.python!r}, {argv!r})"
    with spawn(code, stack.name) as process:
        yield process


# -- the client -----------------------------------------------------------------------------------


class Client:
    """One kept-alive ``http.client`` connection with ``TCP_NODELAY``, speaking AWS JSON 1.0
    with pre-built headers."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
        self.connection.connect()
        assert self.connection.sock is not None
        self.connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._headers = {
            target: {
                "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Target": f"AmazonSQS.{target}",
                "Authorization": _AUTHORIZATION,
            }
            for target in (
                "CreateQueue",
                "DeleteQueue",
                "SendMessage",
                "ReceiveMessage",
                "DeleteMessage",
                "GetQueueAttributes",
            )
        }

    def raw(self, target: str, body: bytes) -> tuple[int, bytes]:
        """One request; its status and body."""
        self.connection.request("POST", "/", body=body, headers=self._headers[target])
        response = self.connection.getresponse()
        return response.status, response.read()

    def call(self, target: str, params: dict[str, Any]) -> dict[str, Any]:
        """One operation; its result, ``RuntimeError`` with the body for a non-200."""
        status, body = self.raw(target, json.dumps(params).encode())
        if status != 200:
            raise RuntimeError(f"{target} answered {status}: {body[:300]!r}")
        got: dict[str, Any] = json.loads(body or b"{}")
        return got

    def close(self) -> None:
        self.connection.close()


def cycle(client: Client, send: bytes, receive: bytes, delete_prefix: bytes) -> str:
    """Send, receive and delete one message with pre-built bodies (``delete_prefix`` is the
    DeleteMessage body up to its receipt handle); the body received."""
    status, body = client.raw("SendMessage", send)
    if status != 200:
        raise RuntimeError(f"SendMessage answered {status}: {body[:300]!r}")
    status, body = client.raw("ReceiveMessage", receive)
    if status != 200:
        raise RuntimeError(f"ReceiveMessage answered {status}: {body[:300]!r}")
    messages = json.loads(body).get("Messages", [])
    if len(messages) != 1:
        raise RuntimeError(f"a cycle received {len(messages)} messages, not 1")
    handle = json.dumps(messages[0]["ReceiptHandle"]).encode()
    status, body = client.raw("DeleteMessage", delete_prefix + handle + b"}")
    if status != 200:
        raise RuntimeError(f"DeleteMessage answered {status}: {body[:300]!r}")
    text: str = messages[0]["Body"]
    return text


def cycles_per_second(url: str, n: int) -> float:
    """``n`` send + receive + delete cycles in a row on a fresh queue, one connection."""
    client = Client(url)
    try:
        queue = client.call("CreateQueue", {"QueueName": f"bench-http-{uuid.uuid4().hex[:12]}"})
        queue_url = str(queue["QueueUrl"])
        send = json.dumps({"QueueUrl": queue_url, "MessageBody": "x"}).encode()
        receive = json.dumps(
            {"QueueUrl": queue_url, "MaxNumberOfMessages": 1, "WaitTimeSeconds": 0}
        ).encode()
        delete_prefix = json.dumps({"QueueUrl": queue_url})[:-1].encode() + b', "ReceiptHandle": '
        for _ in range(20):  # the connection and the code paths warm
            cycle(client, send, receive, delete_prefix)
        start = time.perf_counter()
        for _ in range(n):
            cycle(client, send, receive, delete_prefix)
        elapsed = time.perf_counter() - start
        client.call("DeleteQueue", {"QueueUrl": queue_url})
        return n / elapsed
    finally:
        client.close()


# -- long polls -----------------------------------------------------------------------------------


def _sockets(pid: int) -> int | None:
    """How many sockets process ``pid`` holds open (``/proc``), ``None`` without ``/proc``."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    count = 0
    for name in names:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                count += 1
    return count


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (all its threads) so far: its CPU-time
    clock, to the nanosecond, on Linux (the clock id ``clock_getcpuclockid`` gives, which
    Python does not wrap: ``MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)``); else ``/proc``'s
    clock ticks (10 ms), else ``None``."""
    try:
        return time.clock_gettime((~pid << 3) | 2)
    except (OSError, OverflowError, AttributeError):
        return _proc_cpu(pid)


async def _cpu_window(pid: int, seconds: float) -> float | None:
    """CPU milliseconds ``pid`` used over ``seconds`` of wall time, scaled to 2 s."""
    before = _cpu_seconds(pid)
    await asyncio.sleep(seconds)
    after = _cpu_seconds(pid)
    if before is None or after is None:
        return None
    return (after - before) * 1000 * (2.0 / seconds)


@dataclass
class Held:
    """What :func:`hold` measured."""

    receivers: int
    parked_s: float | None  # from the first connect to every poll's connection accepted
    rss_mib: float | None
    rss_idle_mib: float | None
    cpu_ms: float | None
    answers_ms: list[float]


#: How long a crowd of polls may take to be accepted before the run gives up, seconds.
PARK_LIMIT: Final = 30.0
#: Quiet time after the last poll was accepted, before memory and CPU are read, seconds: the
#: last requests read and parked.
SETTLE: Final = 0.5


async def _hold(url: str, pid: int, receivers: int, answers: int) -> Held:
    # bench.server.long_polls, but memory and CPU are read once the server holds every poll's
    # connection (counted in /proc/<pid>/fd), not after a fixed second: a thread-per-connection
    # server accepts a thousand connections at once more slowly than that (a thread started
    # for each), and a window opened earlier
    # would measure its accepting, not its waiting. How long the accepting took is a figure.
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    netloc = f"{host}:{port}"
    # The queue is made over a connection kept open to the end: a closed one could still be
    # open on the server's side when the sockets are first counted.
    control = Connection(host, port)
    name = f"bench-hold-{uuid.uuid4().hex[:12]}"
    await control.send(_request(netloc, "CreateQueue", {"QueueName": name}))
    status, body = await control.answer()
    if status != 200:
        raise RuntimeError(f"CreateQueue answered {status}: {body[:300]!r}")
    queue_url = str(json.loads(body)["QueueUrl"])
    rss_idle = _proc_rss(pid)
    base = _sockets(pid)
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
    connections: list[Connection] = [control]

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

    started = time.perf_counter()
    tasks = [asyncio.create_task(receiver()) for _ in range(receivers)]
    try:
        parked_s: float | None = None
        if base is None:
            await asyncio.sleep(1.0 + receivers / 1000)  # no /proc: bench.server's wait
        else:
            while (_sockets(pid) or 0) < base + receivers:
                if time.perf_counter() - started > PARK_LIMIT:
                    raise RuntimeError(f"{receivers} long polls not accepted in {PARK_LIMIT} s")
                for t in tasks:
                    if t.done():
                        t.result()
                await asyncio.sleep(0.01)
            parked_s = time.perf_counter() - started
        await asyncio.sleep(SETTLE)
        for t in tasks:
            if t.done():
                t.result()
        rss = _proc_rss(pid)
        cpu = await _cpu_window(pid, 2.0)
        sender = Connection(host, port)
        connections.append(sender)
        times = []
        for k in range(answers):
            send = _request(netloc, "SendMessage", {"QueueUrl": queue_url, "MessageBody": f"a{k}"})
            sent = time.perf_counter()
            await sender.send(send)
            first = await asyncio.wait_for(arrived.get(), 10)
            status, body = await sender.answer()
            if status != 200:
                raise RuntimeError(f"a send answered {status}: {body[:200]!r}")
            times.append((first - sent) * 1000)
            await asyncio.sleep(0.01)  # the answered receiver polls again
        return Held(receivers, parked_s, rss, rss_idle, cpu, times)
    finally:
        stop.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for c in connections[1:]:
            c.close()
        await control.send(_request(netloc, "DeleteQueue", {"QueueUrl": queue_url}))
        await control.answer()
        control.close()


def hold(url: str, pid: int, receivers: int, answers: int) -> Held:
    """``receivers`` long polls held open on the stack at ``url`` (process ``pid``): how long
    it took to accept them, its memory and CPU while they wait, and ``answers`` sends' time to
    the first answer."""
    return asyncio.run(_hold(url, pid, receivers, answers))


# -- the run --------------------------------------------------------------------------------------


@dataclass
class Measured:
    """One stack's figures, one list entry per repeat."""

    cycles: list[float]
    idle_rss_mib: list[float]
    kib_per_waiter: list[float]
    cpu_ms: list[float]
    answer_ms: list[float]
    parked_ms: list[float]


def _empty() -> Measured:
    return Measured([], [], [], [], [], [])


def measure(available: list[Stack], sizes: Sizes) -> dict[str, Measured]:
    """Every figure of every available stack: ``sizes.repeat`` rounds, each on fresh processes
    of all of them, visited in an order rotated by one each round."""
    got = {s.name: _empty() for s in available}
    for r in range(sizes.repeat):
        order = available[r % len(available) :] + available[: r % len(available)]
        with contextlib.ExitStack() as running:
            processes = {s.name: running.enter_context(launch(s)) for s in order}
            # Short windows taking turns: a burst of load from elsewhere on the machine falls
            # on every stack's windows alike, rather than on one stack's whole measurement.
            progress(f"round {r + 1}/{sizes.repeat}: {sizes.windows} x {sizes.cycles} cycles each")
            for _ in range(sizes.windows):
                for s in order:
                    rate = cycles_per_second(processes[s.name].url, sizes.cycles)
                    got[s.name].cycles.append(rate)
            for s in order:
                progress(f"round {r + 1}/{sizes.repeat}: {s.name}: {sizes.receivers} long polls")
                p = processes[s.name]
                polls = hold(p.url, p.pid, sizes.receivers, sizes.answers)
                m = got[s.name]
                if polls.rss_mib is not None and polls.rss_idle_mib is not None:
                    m.idle_rss_mib.append(polls.rss_idle_mib)
                    m.kib_per_waiter.append(
                        (polls.rss_mib - polls.rss_idle_mib) * 1024 / sizes.receivers
                    )
                if polls.cpu_ms is not None:
                    m.cpu_ms.append(polls.cpu_ms)
                if polls.parked_s is not None:
                    m.parked_ms.append(polls.parked_s * 1000)
                m.answer_ms.append(statistics.median(polls.answers_ms))
    return got


#: The figures, by key stem: name, unit, the Measured field, and how each is read.
_FIGURES: Final = (
    ("cycle", "SQS cycle (send+receive+delete), raw http.client", "cycles/s", "cycles"),
    ("longpoll_memory", "long polls waiting: memory growth per waiter", "KiB", "kib_per_waiter"),
    ("longpoll_cpu", "long polls waiting: server CPU", "ms per 2 s", "cpu_ms"),
    ("longpoll_answer", "long polls waiting: send to first answer", "ms", "answer_ms"),
    ("longpoll_accept", "long polls opened at once: all accepted", "ms", "parked_ms"),
    ("idle_rss", "server process, nothing waiting: resident memory", "MiB", "idle_rss_mib"),
)
_ALTERNATIVES: Final = (("threading", THREADING), ("aiohttp", AIOHTTP))
#: Every row :func:`run` reports, by key.
KEYS: Final = tuple(
    f"http_{stem}_vs_{alt}" for stem, *_ in _FIGURES for alt, _name in _ALTERNATIVES
)


def _note(stem: str, sizes: Sizes, figure: list[float], baseline: list[float]) -> str:
    each = ", ".join(f"{a:.3g}/{b:.3g}" for a, b in zip(figure, baseline, strict=True))
    how = {
        "cycle": f"windows of {sizes.cycles} cycles, {sizes.windows} per stack per round, the "
        "stacks taking turns; one kept-alive connection, TCP_NODELAY, pre-built AWS JSON 1.0 "
        "bodies",
        "longpoll_memory": f"{sizes.receivers} ReceiveMessage WaitTimeSeconds=20 held at once "
        "(one asyncio client loop); VmRSS with them parked minus before",
        "longpoll_cpu": f"{sizes.receivers} waiting; the server process's CPU time over 2 s "
        "(all threads, its CPU-time clock in ns)",
        "longpoll_answer": f"median of {sizes.answers} SendMessage with {sizes.receivers} "
        "waiting, to the first answer read",
        "longpoll_accept": f"from the first of {sizes.receivers} connects at once to the "
        f"server process holding them all (sockets in /proc/<pid>/fd); listen backlog {BACKLOG} "
        "for every stack",
        "idle_rss": "VmRSS after start and the cycles, before the long polls: the stack's "
        "imports and buffers",
    }[stem]
    if stem == "cycle":
        return f"{how}; median of {len(figure)} windows (figure/baseline each: {each})"
    return f"{how}; median of {sizes.repeat} rounds (figure/baseline each: {each})"


def rows_of(got: dict[str, Measured], all_stacks: list[Stack], sizes: Sizes) -> list[Row]:
    """The rows: for each figure, this project's stack beside each alternative."""
    by_name = {s.name: s for s in all_stacks}
    out: list[Row] = []
    for stem, name, unit, attr in _FIGURES:
        for alt, alt_name in _ALTERNATIVES:
            key = f"http_{stem}_vs_{alt}"
            full_name = name if "long polls" not in name else f"{sizes.receivers} {name}"
            full_name += f", vs {alt_name}"
            stack = by_name[alt_name]
            if stack.missing:
                out.append(
                    Row(
                        key,
                        full_name,
                        unit,
                        None,
                        alt_name,
                        None,
                        None,
                        note=f"skipped: {stack.missing}",
                    )
                )
                continue
            figure: list[float] = getattr(got[OURS], attr)
            baseline: list[float] = getattr(got[alt_name], attr)
            if not figure or not baseline:
                out.append(
                    Row(key, full_name, unit, None, alt_name, None, None, note="skipped: no /proc")
                )
                continue
            a, b = statistics.median(figure), statistics.median(baseline)
            note = _note(stem, sizes, figure, baseline)
            if alt == "aiohttp":
                where = "this interpreter" if stack.python is None else stack.python
                note += f"; aiohttp {stack.version} on {where}"
            out.append(Row(key, full_name, unit, a, alt_name, b, ratio(a, b), note=note))
    return out


def run(quick: bool) -> list[Row]:
    """Every row of this module, measured now (see the module docstring)."""
    sizes = QUICK if quick else FULL
    all_stacks = stacks()
    available = [s for s in all_stacks if not s.missing]
    return rows_of(measure(available, sizes), all_stacks, sizes)


def main(argv: list[str] | None = None) -> int:
    return run_command("python -m bench.http_stacks", __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
