"""The SQS errors the endpoint answers with, for both wire protocols.

An operation, the request parser or the validator refuses a request by raising ``SqsError``
with the error's code as botocore's JSON-era model names it (``QueueDoesNotExist``,
``TooManyEntriesInBatchRequest``) or, for the errors common to every AWS API, its documented
name (``InvalidAction``, ``MissingParameter``, ``InvalidParameterValue``,
``MalformedQueryString``). What the wire needs beside the code - the legacy query code a
query-era client matches on (``AWS.SimpleQueueService.NonExistentQueue``), the HTTP status and
whether the sender is at fault - is looked up in ``sqs_endpoint/data/query.json``, written there
once;
an argument given to ``SqsError`` overrides it. ``sqs_endpoint.model`` turns an ``SqsError`` into
either
protocol's response (``json_error``, ``query_error``).

This module needs no botocore: the table is this package's own data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["ErrorInfo", "SqsError", "error_info", "known_codes"]


@dataclass(frozen=True)
class ErrorInfo:
    """What the wire carries for one error code besides its message."""

    query_code: str  # the legacy code: XML <Code>, and the JSON x-amzn-query-error header
    status: int  # HTTP status
    sender_fault: bool  # <Type>Sender</Type> (True) or Receiver


def load_query_data() -> dict[str, Any]:
    """``sqs_endpoint/data/query.json``: the query protocol's additions to botocore's model."""
    return _query_data()


@cache
def _query_data() -> dict[str, Any]:
    text = (
        resources.files("sqs_endpoint").joinpath("data", "query.json").read_text(encoding="utf-8")
    )
    data: dict[str, Any] = json.loads(text)
    return data


@cache
def _table() -> dict[str, ErrorInfo]:
    data = _query_data()
    table: dict[str, ErrorInfo] = {}
    for code, entry in data["errors"].items():
        table[code] = ErrorInfo(entry["code"], entry["httpStatusCode"], entry["senderFault"])
    for code, entry in data["commonErrors"].items():
        # A common error's query code is its own name (the Common Errors page lists no other).
        table[code] = ErrorInfo(code, entry["httpStatusCode"], entry["senderFault"])
    return table


def known_codes() -> frozenset[str]:
    """Every code the table of ``sqs_endpoint/data/query.json`` knows."""
    return frozenset(_table())


def error_info(code: str) -> ErrorInfo | None:
    """The query code, status and fault of ``code``, or None for a code the table lacks."""
    return _table().get(code)


class SqsError(Exception):
    """A refused request: the SQS error ``code`` with a human-readable ``message``.

    ``status``, ``sender_fault`` and ``query_code`` default to the table of
    ``sqs_endpoint/data/query.json`` for ``code``; a code the table lacks gets 400, sender fault and
    its
    own name as the query code (so an operation can raise a code no table lists yet and both
    protocols still answer with it).
    """

    code: str
    message: str
    status: int
    sender_fault: bool
    query_code: str

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        sender_fault: bool | None = None,
        query_code: str | None = None,
    ) -> None:
        if not isinstance(code, str) or not code:
            raise ValueError(f"SqsError: code must be a non-empty string, got {code!r}")
        super().__init__(f"{code}: {message}")
        info = error_info(code)
        self.code = code
        self.message = message
        self.status = status if status is not None else (info.status if info else 400)
        self.sender_fault = (
            sender_fault if sender_fault is not None else (info.sender_fault if info else True)
        )
        self.query_code = (
            query_code if query_code is not None else (info.query_code if info else code)
        )

    @property
    def fault(self) -> str:
        """``Sender`` or ``Receiver``: the query ``<Type>`` and the header's second field."""
        return "Sender" if self.sender_fault else "Receiver"

    def __repr__(self) -> str:
        return f"SqsError({self.code!r}, {self.message!r}, status={self.status})"
