"""The time-control API: the endpoint's clock read and moved over HTTP, under ``/_control``.

A test in another process (or another language) moves the endpoint's time with plain HTTP,
JSON in and out:

====================================  =================================================
``GET  /_control/clock``              ``{"now": 12.5, "frozen": true, "mode": "fake"}``
``POST /_control/clock/advance``      body ``{"seconds": 31}`` (or ``?seconds=31``):
                                      the time moves on 31 s; answers the clock's state
``POST /_control/clock/freeze``       the time stands still; answers the clock's state
``POST /_control/clock/run``          the time runs at the real rate again; the state
``GET  /_control/health``             ``{"ok": true, "queues": ["jobs", ...]}``
====================================  =================================================

``now`` is the clock's reading in seconds (the queues' time, not the epoch), ``frozen`` whether
it stands still, ``mode`` the state it started in (``"real"``: running, ``"fake"``: frozen).
An advance runs, before it answers, every timer it reaches (a message whose visibility timeout
it crosses is visible to the next receive). Bad input is a 400 whose JSON names the field
(``{"error": "InvalidParameter", "field": "seconds", "message": ...}``); an unknown path is 404,
a known path with the wrong method 405.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from sqs_endpoint.clock import ServerClock
from sqs_endpoint.http import Request, Response
from sqs_endpoint.query import parse_form

__all__ = ["Control"]

_JSON = {"Content-Type": "application/json"}


class _BadInput(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _answer(status: int, value: object, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps(value, separators=(",", ":")).encode("utf-8")
    return Response(status, {**_JSON, **(headers or {})}, body)


def _error(status: int, code: str, message: str, field: str | None = None) -> Response:
    value: dict[str, Any] = {"error": code, "message": message}
    if field is not None:
        value["field"] = field
    return _answer(status, value)


class Control:
    """Answer the ``/_control`` paths over ``clock``; ``queues`` lists the queues' names (for
    the health answer)."""

    def __init__(self, clock: ServerClock, queues: Callable[[], list[str]] | None = None) -> None:
        self.clock = clock
        self._queues = queues
        self._routes: dict[str, tuple[str, Callable[[Request], Response]]] = {
            "/_control/clock": ("GET", self._state),
            "/_control/clock/advance": ("POST", self._advance),
            "/_control/clock/freeze": ("POST", self._freeze),
            "/_control/clock/run": ("POST", self._run),
            "/_control/health": ("GET", self._health),
        }

    async def __call__(self, request: Request) -> Response:
        route = self._routes.get(request.path.rstrip("/") or "/")
        if route is None:
            known = ", ".join(sorted(self._routes))
            return _error(404, "NotFound", f"No control path {request.path}; there are {known}.")
        method, action = route
        if request.method != method and not (method == "GET" and request.method == "HEAD"):
            return Response(
                405,
                {**_JSON, "Allow": method},
                json.dumps(
                    {
                        "error": "MethodNotAllowed",
                        "message": f"{request.path} takes {method}, not {request.method}.",
                    }
                ).encode("utf-8"),
            )
        try:
            return action(request)
        except _BadInput as e:
            return _error(400, "InvalidParameter", e.message, e.field)

    def _state(self, request: Request) -> Response:
        return _answer(200, self.clock.state())

    def _advance(self, request: Request) -> Response:
        seconds = _seconds(request)
        try:
            self.clock.advance(seconds)
        except (TypeError, ValueError) as e:  # e.g. a time that would not be finite
            raise _BadInput("seconds", f"seconds: {e}") from None
        return _answer(200, self.clock.state())

    def _freeze(self, request: Request) -> Response:
        self.clock.freeze()
        return _answer(200, self.clock.state())

    def _run(self, request: Request) -> Response:
        self.clock.run()
        return _answer(200, self.clock.state())

    def _health(self, request: Request) -> Response:
        queues = sorted(self._queues()) if self._queues is not None else []
        return _answer(200, {"ok": True, "queues": queues})


def _seconds(request: Request) -> float:
    """The ``seconds`` of an advance: a JSON body's member, or the query string's field."""
    raw: object
    if request.body.strip():
        try:
            value = json.loads(request.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise _BadInput(
                "body", 'The body must be a JSON object like {"seconds": 31}.'
            ) from None
        if not isinstance(value, dict):
            raise _BadInput("body", 'The body must be a JSON object like {"seconds": 31}.')
        if "seconds" not in value:
            raise _BadInput("seconds", "The body must have a member seconds.")
        raw = value["seconds"]
    else:
        try:
            fields = parse_form(request.query)
        except Exception:
            raise _BadInput("seconds", "The query string is malformed.") from None
        values = fields.get("seconds")
        if not values or len(values) != 1:
            raise _BadInput("seconds", 'Give seconds once: {"seconds": 31} or ?seconds=31.')
        try:
            raw = float(values[0])
        except ValueError:
            raise _BadInput("seconds", f"seconds must be a number, got {values[0]!r}.") from None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise _BadInput("seconds", f"seconds must be a number, got {json.dumps(raw)[:60]}.")
    try:
        seconds = float(raw)
    except OverflowError:  # an integer too large for a float
        seconds = math.inf
    if not math.isfinite(seconds) or seconds < 0:
        raise _BadInput("seconds", f"seconds must be a finite number >= 0, got {raw!r:.60}.")
    return seconds
