"""The SQS wire protocols over the operation layer: one request in, one SQS-shaped answer out.

Every request is dispatched on what it carries, never on its path alone:

- **AWS JSON 1.0** (current botocore, aws-cli v2, the JavaScript SDK, kombu, dramatiq): a
  ``POST`` with ``X-Amz-Target: AmazonSQS.<Operation>`` and a JSON body. The operation comes
  from ``ServiceModel.operation_from_target``, the body is checked by ``validate_input``, the
  result written by ``serialize_json``; an error is ``json_error``'s ``__type`` body with the
  legacy code in ``x-amzn-query-error``.
- **the query protocol** (botocore before 1.31 and between 1.33 and 1.34.9x, the old SDKs):
  form fields ``Action=<Operation>&...`` in a ``POST`` body or a ``GET``'s query string (both
  are read, a field given in both is refused as given twice), read by ``parse_query`` and then
  the same ``validate_input``; the result is ``serialize_query``'s XML, an error its
  ``<ErrorResponse>``. A query client may post to the queue's own URL and leave ``QueueUrl``
  out: the request's path ``/<account>/<name>`` then stands for it, for the operations that
  take one.
- ``/_control/...``: the time-control API (``sqs_endpoint.control``), when the app has one.

The answers are SQS's: the request id (a uuid4) in ``x-amzn-RequestId`` and in the XML, the
status and code each error has in ``sqs_endpoint/data/query.json``. Bad input of any kind (a body
that is not JSON or not a form, an unknown target or action, a member of the wrong type, an
oversize or malformed HTTP request) is a documented 4xx error naming what is wrong; a request
that fails inside the server for a reason of its own (a bug) is logged and answered with AWS's
common ``InternalFailure`` (500), the only 500 there is. Signatures and credentials are not
checked: any ``Authorization`` header, or none, is accepted, as SQS's local emulators do.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from sqs_endpoint import model as sqs_model
from sqs_endpoint.errors import SqsError
from sqs_endpoint.http import HttpError, Request, Response
from sqs_endpoint.query import parse_form

__all__ = ["CONTROL_PREFIX", "App", "Operations"]

log = logging.getLogger("sqs_endpoint.app")

#: The path prefix of the time-control API. No queue URL can start with it: a queue's path
#: starts with its account, twelve digits.
CONTROL_PREFIX = "/_control"

#: Host header values taken into the queue URLs the service writes: a name or an IPv4 address,
#: or a bracketed IPv6 address, with an optional port. Anything else falls back to the address
#: the connection came in on (a queue URL never carries what a client put in a header).
_HOST = re.compile(r"(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
#: A queue URL's path: /<account>/<queue name>.
_QUEUE_PATH = re.compile(r"/([^/]+)/([^/]+)/?")


class Operations(Protocol):
    """What the app needs of the operation layer (``sqs_endpoint.service.Service``)."""

    async def call(
        self, operation: str, params: dict[str, Any], *, base_url: str
    ) -> dict[str, Any]: ...


ControlHandler = Callable[[Request], Awaitable[Response]]


def _request_id() -> str:
    return str(uuid.uuid4())


def _is_json(request: Request) -> bool:
    # A target header names the JSON protocol; so does its content type (a JSON request that
    # lost its target is then told so in JSON, rather than read as a form).
    if request.header("x-amz-target") is not None:
        return True
    content_type = (request.header("content-type") or "").lower()
    return content_type.startswith("application/x-amz-json")


def _http_error_code(error: HttpError) -> SqsError:
    """The AWS common error for a request refused at the HTTP level (AWS's Common Errors:
    RequestEntityTooLargeException is 413, MalformedHttpRequestException is 400). A 4xx the
    HTTP layer names more precisely (414, 417, 431) keeps its status; what HTTP answers with a
    5xx for the client's request (501 for a transfer coding, 505 for a version) is the
    client's fault too, so 400: bad input is never a 5xx. Only the handler's own failure (500)
    is ``InternalFailure``, and the connection cap's refusal (503) ``ServiceUnavailable``."""
    if error.status == 413:
        return SqsError("RequestEntityTooLargeException", error.message, status=413)
    if error.status == 500:
        return SqsError("InternalFailure", error.message, status=500, sender_fault=False)
    if error.status == 503:
        # The connection cap (sqs_endpoint.http.DEFAULT_MAX_CONNECTIONS): AWS's common
        # ServiceUnavailable, which SQS clients retry.
        return SqsError("ServiceUnavailable", error.message, status=503, sender_fault=False)
    status = error.status if 400 <= error.status < 500 else 400
    return SqsError("MalformedHttpRequestException", error.message, status=status)


class App:
    """Answer SQS requests of both protocols with ``service``; ``control`` (optional) answers
    the ``/_control`` paths. ``model`` defaults to ``sqs_endpoint.model.load()``."""

    def __init__(
        self,
        service: Operations,
        *,
        model: sqs_model.ServiceModel | None = None,
        control: ControlHandler | None = None,
    ) -> None:
        self.service = service
        self.model = model if model is not None else sqs_model.load()
        self.control = control
        # The operations whose input has a QueueUrl member: the ones a queue's path stands in
        # for when a query request leaves it out.
        shapes = self.model.description["shapes"]
        self._takes_queue_url = frozenset(
            name
            for name, spec in self.model.description["operations"].items()
            if "input" in spec and "QueueUrl" in shapes[spec["input"]["shape"]].get("members", {})
        )

    # -- the handler ------------------------------------------------------------------------------

    async def handle(self, request: Request) -> Response:
        """The response to ``request`` (``sqs_endpoint.http.Handler``)."""
        control = request.path == CONTROL_PREFIX or request.path.startswith(CONTROL_PREFIX + "/")
        if control and self.control is not None:
            return await self.control(request)
        if _is_json(request):
            return await self._json(request)
        return await self._query(request)

    def http_error(self, request: Request | None, error: HttpError) -> Response:
        """The SQS-shaped answer to a request refused at the HTTP level or failed in the
        handler (``sqs_endpoint.http.ErrorHook``): JSON if its head names JSON, else query XML."""
        err = _http_error_code(error)
        request_id = _request_id()
        if request is not None and _is_json(request):
            status, headers, body = self.model.json_error(_printable(err))
        else:
            status, headers, body = self.model.query_error(_printable(err), request_id)
        headers["x-amzn-RequestId"] = request_id
        return Response(status, headers, body, close=error.close)

    def base_url(self, request: Request) -> str:
        """``http://host:port`` of the request: its Host header if that is a plain host, else
        the address the connection came in on."""
        host = request.header("host")
        if host is None or not _HOST.fullmatch(host):
            address, port = request.local
            host = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        return f"http://{host}"

    # -- AWS JSON 1.0 -----------------------------------------------------------------------------

    async def _json(self, request: Request) -> Response:
        request_id = _request_id()
        op = "?"
        try:
            op = self.model.operation_from_target(request.header("x-amz-target"))
            params = self.model.validate_input(op, _json_body(request.body))
            result = await self.service.call(op, params, base_url=self.base_url(request))
            body = self.model.serialize_json(op, result)
        except SqsError as err:
            status, headers, body = self.model.json_error(_printable(err))
        except Exception:
            log.exception("JSON %s failed inside the server", op)
            status, headers, body = self.model.json_error(_internal())
        else:
            status, headers = 200, {"Content-Type": sqs_model.JSON_CONTENT_TYPE}
        headers["x-amzn-RequestId"] = request_id
        return Response(status, headers, body)

    # -- the query protocol -----------------------------------------------------------------------

    async def _query(self, request: Request) -> Response:
        request_id = _request_id()
        op = "?"
        try:
            if request.method not in ("GET", "POST"):
                raise SqsError(
                    "MalformedHttpRequestException",
                    f"The HTTP method {request.method} is not supported: an SQS request is a "
                    "POST, or a GET in the query protocol.",
                )
            fields = parse_form(request.query) if request.query else {}
            if request.body:
                for name, values in parse_form(request.body).items():
                    fields.setdefault(name, []).extend(values)
            op, params = self.model.parse_query(fields)
            on_queue_path = _QUEUE_PATH.fullmatch(request.path) is not None
            if on_queue_path and "QueueUrl" not in params and op in self._takes_queue_url:
                params["QueueUrl"] = self.base_url(request) + request.path.rstrip("/")
            params = self.model.validate_input(op, params)
            result = await self.service.call(op, params, base_url=self.base_url(request))
            body = self.model.serialize_query(op, result, request_id)
        except SqsError as err:
            status, headers, body = self.model.query_error(_printable(err), request_id)
        except Exception:
            log.exception("query %s failed inside the server", op)
            status, headers, body = self.model.query_error(_internal(), request_id)
        else:
            status, headers = 200, {"Content-Type": sqs_model.XML_CONTENT_TYPE}
        headers["x-amzn-RequestId"] = request_id
        return Response(status, headers, body)


#: What XML 1.0 cannot carry, even as a character reference (the C0 controls but tab, LF and
#: CR; U+FFFE, U+FFFF), and what UTF-8 cannot encode (a lone surrogate).
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _printable(err: SqsError) -> SqsError:
    """``err`` with a message either protocol can carry: an error message often quotes the
    request (a queue name, an attribute), and a control character or a lone surrogate there
    would make the XML unreadable or the UTF-8 unwritable. Each is written as ``\\xNN`` or
    ``\\uNNNN`` instead."""
    if not _UNPRINTABLE.search(err.message):
        return err
    message = _UNPRINTABLE.sub(lambda m: ascii(m.group())[1:-1], err.message)
    return SqsError(
        err.code,
        message,
        status=err.status,
        sender_fault=err.sender_fault,
        query_code=err.query_code,
    )


def _json_body(body: bytes) -> Any:
    """The JSON value of a request body (an empty body is ``{}``: an operation without
    members). What is not UTF-8 JSON is ``InvalidParameterValue`` naming the request body."""
    if not body.strip():
        return {}
    try:
        value = json.loads(body.decode("utf-8"))
        # A \ud800 escape decodes to a lone surrogate, which no UTF-8 answer could echo.
        _check_text(value)
        return value
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        # RecursionError: a body nested deeper than the parser's stack (one more bad body).
        reason = str(e) if not isinstance(e, RecursionError) else "nested too deeply"
        raise SqsError(
            "InvalidParameterValue",
            f"The request body is not valid JSON: {reason[:200]}",
        ) from None


def _check_text(value: Any) -> None:
    # ValueError for a string (or key) holding a lone surrogate.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise ValueError("a string holds a lone surrogate (a \\uD800-\\uDFFF escape)")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _internal() -> SqsError:
    return SqsError(
        "InternalFailure",
        "The request processing has failed because of an unknown error, exception or failure.",
    )
