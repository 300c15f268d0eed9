"""The endpoint as a Python API: ``with sqs_endpoint.serve(port=0) as ep:`` and point a client at
``ep.url``.

:func:`serve` starts an event loop in a background thread and, on it, the server's clock
(``sqs_endpoint.clock.ServerClock``), the operation layer (``sqs_endpoint.service.Service``) on that
clock,
the wire side (``sqs_endpoint.app.App`` over ``sqs_endpoint.http.HttpServer``) and the queues of a
config
file; it returns once the endpoint answers requests, or raises what stopped it (a port in use,
a bad config). The :class:`Endpoint` moves the clock from the caller's thread (``advance``,
``freeze``, ``run``, ``now``): each runs on the loop and returns once done, so the timers an
advance reaches have fired before it returns, and a client's next request sees their effect.
:meth:`Endpoint.close` closes every connection (cancelling any long poll), closes the
service's queues and joins the thread: no thread of the endpoint outlives it.

A config file (TOML) names queues to create at start, in order (a dead-letter queue before
the queue whose ``RedrivePolicy`` names it)::

    [[queue]]
    name = "jobs"
    attributes = { VisibilityTimeout = "30" }   # a number or a boolean is taken as its text
    tags = { team = "payments" }

Each is the ``CreateQueue`` request it reads as, checked like one from a client.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import pathlib
import signal
import threading
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from impl.validate import is_number, to_finite
from sqs_endpoint import model as sqs_model
from sqs_endpoint.app import App
from sqs_endpoint.clock import Mode, ServerClock
from sqs_endpoint.control import Control
from sqs_endpoint.errors import SqsError
from sqs_endpoint.http import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_CONNECTIONS,
    HttpServer,
    check_limits,
)
from sqs_endpoint.journal import Journal, Sync
from sqs_endpoint.service import Service

__all__ = [
    "QUEUE_KEYS",
    "ConfigError",
    "Endpoint",
    "QueueSpec",
    "ServiceFactory",
    "load_config",
    "serve",
]

log = logging.getLogger("sqs_endpoint.endpoint")

T = TypeVar("T")


class EndpointService(Protocol):
    """What the endpoint needs of the operation layer (``sqs_endpoint.service.Service``)."""

    async def call(
        self, operation: str, params: dict[str, Any], *, base_url: str
    ) -> dict[str, Any]: ...

    def queues(self) -> list[str]: ...

    async def aclose(self) -> None: ...


#: Builds the operation layer on the endpoint's clock (called on the endpoint's loop). The
#: default is ``sqs_endpoint.service.Service(clock, record=record)``.
ServiceFactory = Callable[[ServerClock], EndpointService]


class ConfigError(ValueError):
    """A config file that cannot be read or names a queue that cannot be created."""


@dataclass(frozen=True)
class QueueSpec:
    """One ``[[queue]]`` of a config file: the ``CreateQueue`` it stands for."""

    name: str
    attributes: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    #: Where it was read (``"queues.toml: queue 2"``), for the error that stops a start.
    origin: str = field(default="config", compare=False)

    def request(self) -> dict[str, Any]:
        """The ``CreateQueue`` request, in the model's member names."""
        params: dict[str, Any] = {"QueueName": self.name}
        if self.attributes:
            params["Attributes"] = dict(self.attributes)
        if self.tags:
            params["tags"] = dict(self.tags)
        return params


def _text(where: str, value: object) -> str:
    # SQS attribute and tag values are strings; TOML users write numbers and booleans bare.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    raise ConfigError(f"{where} must be a string, got {type(value).__name__}")


def _table(where: str, value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table, got {type(value).__name__}")
    return {str(k): _text(f"{where}.{k}", v) for k, v in value.items()}


#: The keys of a config's ``[[queue]]`` table (docs/server.md, "Running it as a service").
QUEUE_KEYS: tuple[str, ...] = ("name", "attributes", "tags")


def load_config(source: str | pathlib.Path | Mapping[str, Any]) -> list[QueueSpec]:
    """The queues of a config: a TOML file's path, or its already parsed content.

    ``ConfigError`` naming the file and the field for what is not a config: an unreadable file,
    invalid TOML, a key other than ``queue``, a queue without a string ``name``, a queue key
    other than ``name``, ``attributes`` and ``tags``, a value that is not text.
    """
    where = "config"
    if isinstance(source, Mapping):
        data: Mapping[str, Any] = source
    else:
        path = pathlib.Path(source)
        where = str(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(f"{where}: cannot read it: {e.strerror or e}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{where}: not TOML: {e}") from None
    unknown = sorted(set(data) - {"queue"})
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (a config has [[queue]] tables)")
    queues = data.get("queue", [])
    if not isinstance(queues, list):
        raise ConfigError(f"{where}: queue must be an array of tables ([[queue]])")
    specs: list[QueueSpec] = []
    for i, entry in enumerate(queues, 1):
        at = f"{where}: queue {i}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{at} must be a table, got {type(entry).__name__}")
        extra = sorted(set(entry) - set(QUEUE_KEYS))
        if extra:
            raise ConfigError(f"{at}: unknown key {extra[0]!r} ({', '.join(QUEUE_KEYS)})")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{at}: name must be a non-empty string, got {name!r}")
        specs.append(
            QueueSpec(
                name,
                _table(f"{at}.attributes", entry.get("attributes", {})),
                _table(f"{at}.tags", entry.get("tags", {})),
                at,
            )
        )
    return specs


def _default_service(
    record: pathlib.Path | None, data: pathlib.Path | None = None, sync: Sync = "full"
) -> ServiceFactory:
    def build(clock: ServerClock) -> EndpointService:
        # The data file is opened here, on the loop, so a start that fails on it fails serve().
        journal = None if data is None else Journal(data, sync=sync)
        service: EndpointService = Service(clock, record=record, journal=journal)
        return service

    return build


@dataclass(frozen=True)
class Limits:
    """The connection limits an endpoint's HTTP server keeps (``sqs_endpoint.http``)."""

    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS


class Endpoint:
    """A running endpoint (made by :func:`serve`): its URL, its clock, and :meth:`close`."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        clock: Mode,
        config: list[QueueSpec],
        service: ServiceFactory,
        max_body: int,
        limits: Limits | None = None,
        durable: bool = False,
    ) -> None:
        # A durable endpoint's clock starts frozen at 0, for the replay of its journal, and is
        # pinned (one reading per turn of the loop: an operation's entry has one time).
        self.clock = ServerClock("fake" if durable else clock, pinned=durable)
        self._mode = clock
        self._durable = durable
        self._bind = (host, port)
        self._config = config
        self._factory = service
        self._max_body = max_body
        self._limits = limits if limits is not None else Limits()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._thread_id: int | None = None
        self._http: HttpServer | None = None
        self._service: EndpointService | None = None
        self._closed = False
        #: How many journal entries a durable endpoint's start replayed (0: a new data file).
        self.recovered = 0
        self._lock = threading.Lock()
        self.host = host
        self.port = port

    # -- the URL and the service ------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://host:port``: the endpoint_url of a client."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def service(self) -> EndpointService:
        """The operation layer (use it on the endpoint's loop only, e.g. through :meth:`call`)."""
        if self._service is None:
            raise RuntimeError("the endpoint is not started")
        return self._service

    def call(self, operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Run one SQS operation from Python, as a client's request would (validated by the
        model, on the loop); raises ``SqsError``."""
        checked = sqs_model.load().validate_input(operation, params)
        service = self.service
        coro = service.call(operation, checked, base_url=self.url)
        result: dict[str, Any] = self._run_coroutine(coro)
        return result

    def queues(self) -> list[str]:
        """The names of the queues now."""
        return self._on_loop(self.service.queues)

    # -- the clock --------------------------------------------------------------------------------

    def now(self) -> float:
        """The clock's reading in seconds."""
        return self.clock.now()

    @property
    def frozen(self) -> bool:
        """True while the clock stands still."""
        return self.clock.frozen

    def advance(self, seconds: float) -> None:
        """Move the clock on by ``seconds >= 0`` and fire every timer it reaches before
        returning. ``TypeError``/``ValueError`` naming ``seconds`` for anything else."""
        if not is_number(seconds):
            raise TypeError(f"seconds must be a number, got {type(seconds).__name__}")
        step = to_finite("seconds", seconds)
        if step < 0:
            raise ValueError(f"seconds must be a finite number >= 0, got {seconds!r}")
        self._on_loop(lambda: self.clock.advance(step))

    def freeze(self) -> None:
        """Stop the clock where it is (until :meth:`run`)."""
        self._on_loop(self.clock.freeze)

    def run(self) -> None:
        """Let the clock run at the real rate again, from where it stands."""
        self._on_loop(self.clock.run)

    # -- running on the loop ----------------------------------------------------------------------

    def _on_loop(self, fn: Callable[[], T]) -> T:
        # Run fn on the endpoint's loop and wait for it (at once if called on the loop).
        loop = self._loop
        if loop is None or self._closed:
            raise RuntimeError("the endpoint is closed" if self._closed else "not started")
        if threading.get_ident() == self._thread_id:
            return fn()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn())
            except BaseException as e:
                future.set_exception(e)

        loop.call_soon_threadsafe(run)
        return future.result()

    def _run_coroutine(self, coro: Any) -> Any:
        loop = self._loop
        if loop is None or self._closed:
            coro.close()
            raise RuntimeError("the endpoint is closed" if self._closed else "not started")
        if threading.get_ident() == self._thread_id:
            coro.close()
            raise RuntimeError("Endpoint.call waits for the loop: call it from another thread")
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    # -- start and stop ---------------------------------------------------------------------------

    def _start(self) -> None:
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._main, args=(started,), name="sqs_endpoint.endpoint", daemon=True
        )
        self._thread.start()
        try:
            started.result()
        except BaseException:
            self._thread.join()
            self._closed = True
            raise

    def _main(self, started: concurrent.futures.Future[None]) -> None:
        if hasattr(signal, "pthread_sigmask"):
            # A process-directed signal goes to any thread that does not block it; delivered
            # here, a Ctrl-C would never wake the main thread blocked in a wait (and Python
            # runs signal handlers in the main thread only).
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            try:
                loop.run_until_complete(self._startup(loop))
            except BaseException as e:
                loop.run_until_complete(self._shutdown())
                started.set_exception(e)
                return
            started.set_result(None)
            loop.run_forever()
            # close() ran _shutdown before stopping the loop; a restart that crashed did not:
            # what still runs is cancelled, so that no caller of call() waits for ever.
            _cancel_all(loop)
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                self.clock.detach()
                loop.close()

    async def _startup(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._thread_id = threading.get_ident()
        self.clock.attach(loop)
        service = self._factory(self.clock)
        self._service = service
        if self._durable:
            assert isinstance(service, Service)
            await self._recover(service)
        app = App(service, control=Control(self.clock, service.queues))
        self._http = HttpServer(
            app.handle,
            on_error=app.http_error,
            max_body=self._max_body,
            idle_timeout=self._limits.idle_timeout,
            header_timeout=self._limits.header_timeout,
            max_connections=self._limits.max_connections,
        )
        self.host, self.port = await self._http.start(*self._bind)
        for spec in self._config:
            try:
                params = app.model.validate_input("CreateQueue", spec.request())
                await service.call("CreateQueue", params, base_url=self.url)
            except SqsError as e:
                raise ConfigError(f"{spec.origin} ({spec.name!r}): {e.code}: {e.message}") from None

    async def _recover(self, service: Service) -> None:
        """A durable start: replay the data file's journal on the frozen clock, resume the
        clock where the journal ends (the real clock: plus the wall time the endpoint was
        down, as if the world's clock ran on), journal the restart, then let the clock run as
        asked and fire what it has reached (docs/contract.md section 9)."""
        journal = service.journal
        assert journal is not None
        last = journal.last()
        self.recovered = await service.replay()
        if last is not None:
            resume = last.now
            if self._mode == "real":
                resume += max(0.0, time.time() - last.wall)
            self.clock.replay_to(resume)
            service.recover()
        self.clock.mode = self._mode
        if self._mode == "real":
            self.clock.run()
        self.clock.advance(0.0)

    async def _shutdown(self, crash: bool = False) -> None:
        if self._http is not None:
            await self._http.close()
        if self._service is not None:
            if crash:
                # As a killed process leaves it: what was not committed is gone, nothing is
                # closed in order (the queues go with the loop).
                journal = getattr(self._service, "journal", None)
                if journal is not None:
                    journal.abandon()
            else:
                try:
                    await self._service.aclose()
                except Exception:
                    log.exception("closing the service failed")
        self.clock.detach()

    def restart(self, *, crash: bool = True) -> None:
        """Stop a durable endpoint and start it again on its data file, at the same address:
        with ``crash`` (the default) as a killed process would leave it (nothing closed, what
        was not committed lost), else after a clean :meth:`close`. Its clients carry on (a long
        poll is cut off, as by any restart). ``RuntimeError`` for an endpoint without a data
        file, or a closed one; what a start raises otherwise (the port taken meanwhile)."""
        if not self._durable:
            raise RuntimeError("restart needs a durable endpoint (serve(data=...))")
        with self._lock:
            if self._closed:
                raise RuntimeError("the endpoint is closed")
            self._closed = True
        loop, thread = self._loop, self._thread
        assert loop is not None and thread is not None
        if threading.get_ident() == self._thread_id:
            raise RuntimeError("Endpoint.restart joins the loop's thread: call it from another")
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(crash), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
        self.clock = ServerClock("fake", pinned=True)
        self._bind = (self._bind[0], self.port)
        self._loop = self._thread = self._thread_id = None
        self._http = self._service = None
        self._closed = False
        self._start()

    def close(self) -> None:
        """Close every connection and the service's queues, stop the loop and join its thread.
        Idempotent; not from the endpoint's own loop."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if threading.get_ident() == self._thread_id:
            raise RuntimeError("Endpoint.close joins the loop's thread: call it from another")
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()

    def __enter__(self) -> Endpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Endpoint {self.url} {state}>"


def serve(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    clock: Mode = "real",
    config: str | pathlib.Path | Mapping[str, Any] | None = None,
    record: str | pathlib.Path | None = None,
    data: str | pathlib.Path | None = None,
    data_sync: Sync = "full",
    service: ServiceFactory | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> Endpoint:
    """Start an endpoint on ``host``:``port`` (0: a free port) and return it once it answers.

    ``clock``: ``"real"`` (the time runs) or ``"fake"`` (frozen until advanced). ``config``: a
    TOML file (or its parsed content) of queues to create (:func:`load_config`). ``record``: a
    directory the service records every queue's trace in. ``data``: a file (SQLite) the
    endpoint keeps its queues in, written before each answer and replayed at the next start
    (``sqs_endpoint/journal.py``; ``None``, the default: in memory only); ``data_sync``:
    ``"full"`` (an answered operation survives a power cut) or ``"normal"`` (a crash of the
    process; faster). A data file that cannot be used raises
    ``sqs_endpoint.journal.DataFileError``. ``service``: the operation layer's
    factory (default ``sqs_endpoint.service.Service``). ``idle_timeout``, ``header_timeout``
    (real seconds) and ``max_connections``: the connection limits (``sqs_endpoint.http``'s
    ``DEFAULT_*``; docs/server.md "Connection limits"). Raises ``OSError`` if it cannot listen,
    ``ConfigError`` for a bad config, ``TypeError``/``ValueError`` naming a bad argument.
    """
    if not isinstance(host, str) or not host:
        raise TypeError(f"host must be a non-empty string, got {host!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an int in 0..65535, got {port!r}")
    if clock not in ("real", "fake"):
        raise ValueError(f"clock must be 'real' or 'fake', got {clock!r}")
    specs = load_config(config) if config is not None else []
    record_dir = pathlib.Path(record) if record is not None else None
    if data is not None and not isinstance(data, str | pathlib.Path):
        raise TypeError(f"data must be a path, got {type(data).__name__}")
    if data_sync not in ("full", "normal"):
        raise ValueError(f"data_sync must be 'full' or 'normal', got {data_sync!r}")
    if data is not None and service is not None:
        raise ValueError("data needs the endpoint's own service: give data or service, not both")
    data_path = pathlib.Path(data) if data is not None else None
    factory = service if service is not None else _default_service(record_dir, data_path, data_sync)
    if not callable(factory):
        raise TypeError(f"service must be a callable (clock -> service), got {factory!r}")
    check_limits(idle_timeout, header_timeout, max_connections)
    limits = Limits(float(idle_timeout), float(header_timeout), max_connections)
    endpoint = Endpoint(
        host,
        port,
        clock=clock,
        config=specs,
        service=factory,
        max_body=max_body,
        limits=limits,
        durable=data_path is not None,
    )
    endpoint._start()
    return endpoint


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel the tasks left on a stopped ``loop`` and let them finish (as ``asyncio.run``)."""
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in tasks:
        t.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
