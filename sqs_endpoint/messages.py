"""Messages as the endpoint stores them, and SQS's rules for what a sent message may hold.

The Service sends a :class:`Stored` as the body of every impl message, so everything SQS says
about a message besides its place and state (the body text, message attributes, the system
attribute ``AWSTraceHeader``, their digests, the send time, the sender, FIFO's group, dedup id and
sequence number) travels with it through dead-lettering and redrive, in the one step impl makes
of each move. Only ``first_receive`` changes after the send (set by the Service right after a
receive, with no ``await`` between), which is what ``ApproximateFirstReceiveTimestamp`` reads.

The checks follow the SQS API Reference (SendMessage, MessageAttributeValue and "Amazon SQS
message attributes" in the Developer Guide): body characters (``InvalidMessageContents``),
attribute count, names, data types and values, the size counted over body and attributes
(``InvalidParameterValue``). Each raises :class:`sqs_endpoint.errors.SqsError` naming what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from sqs_endpoint.errors import SqsError
from sqs_endpoint.md5 import md5_of_body, md5_of_message_attributes

__all__ = [
    "MAX_ATTRIBUTES",
    "Stored",
    "check_body",
    "check_message_attributes",
    "check_system_attributes",
    "message_size",
    "select_attributes",
]

#: At most 10 message attributes per message (SQS Developer Guide, message attributes).
MAX_ATTRIBUTES: Final = 10
#: The characters SQS accepts in a body and a string attribute value (SendMessage):
#: #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.
_BAD_CHARS: Final = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: A message attribute's name: up to 256 of A-Z a-z 0-9 _ - . (Developer Guide).
_ATTR_NAME: Final = re.compile(r"[A-Za-z0-9_.-]{1,256}")
#: A data type: String, Number or Binary, optionally with a custom ".label" of the same
#: alphabet, 256 characters at most in all.
_DATA_TYPE: Final = re.compile(r"(String|Number|Binary)(\.[A-Za-z0-9_.-]+)?")
#: The system attributes a send may carry (MessageSystemAttributeNameForSends).
SEND_SYSTEM_ATTRIBUTES: Final = frozenset({"AWSTraceHeader"})


@dataclass(slots=True, eq=False)
class Stored:
    """One SQS message as the body of an impl message (see the module docstring)."""

    body: str
    attributes: dict[str, dict[str, Any]]
    system_attributes: dict[str, dict[str, Any]]
    md5_of_body: str
    md5_of_attributes: str | None
    md5_of_system_attributes: str | None
    sent_timestamp: int  # epoch milliseconds
    sender_id: str
    group: str | None = None  # FIFO (and a standard queue's MessageGroupId, echoed)
    dedup_id: str | None = None  # FIFO: the dedup id as the sender gave it (or the body's hash)
    sequence_number: str | None = None  # FIFO
    first_receive: int | None = field(default=None)  # epoch ms of the first delivery


def check_body(body: str, where: str = "MessageBody") -> None:
    """An empty body is ``MissingParameter``; a character SQS refuses ``InvalidMessageContents``."""
    if body == "":
        raise SqsError("MissingParameter", f"The request must contain the parameter {where}.")
    bad = _BAD_CHARS.search(body)
    if bad is not None:
        raise SqsError(
            "InvalidMessageContents",
            f"Invalid characters found in {where}: the character U+{ord(bad.group()):04X} "
            "is not allowed.",
        )


def _invalid(message: str) -> SqsError:
    return SqsError("InvalidParameterValue", message)


def check_message_attributes(attributes: Mapping[str, Mapping[str, Any]], where: str) -> None:
    """SQS's rules for ``MessageAttributes`` (``where`` names the member in errors)."""
    if len(attributes) > MAX_ATTRIBUTES:
        raise _invalid(
            f"Number of message attributes [{len(attributes)}] exceeds the allowed maximum "
            f"[{MAX_ATTRIBUTES}] in {where}."
        )
    for name, value in attributes.items():
        _check_name(name, where)
        _check_value(name, value, f"{where}.{name}")


def _check_name(name: str, where: str) -> None:
    lowered = name.lower()
    if (
        not _ATTR_NAME.fullmatch(name)
        or name.startswith(".")
        or name.endswith(".")
        or ".." in name
        or lowered.startswith(("aws.", "amazon."))
    ):
        raise _invalid(
            f"Message attribute name '{name}' in {where} is invalid: up to 256 letters, digits, "
            "'_', '-' and '.', not starting or ending with '.', no '..', and not starting with "
            "'AWS.' or 'Amazon.'."
        )


def _check_value(name: str, value: Mapping[str, Any], where: str) -> None:
    data_type = value.get("DataType")
    if data_type is None:
        raise SqsError(
            "MissingParameter", f"The message attribute '{name}' must contain a DataType."
        )
    if len(data_type) > 256 or not _DATA_TYPE.fullmatch(data_type):
        raise _invalid(
            f"The message attribute '{name}' has an invalid message attribute type {data_type!r}: "
            "String, Number or Binary, optionally followed by '.' and a custom label."
        )
    if value.get("StringListValues") or value.get("BinaryListValues"):
        raise _invalid(
            f"The message attribute '{name}' uses StringListValues or BinaryListValues, which "
            "SQS reserves and does not implement."
        )
    base = data_type.split(".", 1)[0]
    string, binary = value.get("StringValue"), value.get("BinaryValue")
    if base == "Binary":
        if binary is None or string is not None:
            raise _invalid(
                f"The message attribute '{name}' with type 'Binary' must use BinaryValue."
            )
        if len(binary) == 0:
            raise _invalid(f"The message attribute '{name}' must not have an empty BinaryValue.")
        return
    if string is None or binary is not None:
        raise _invalid(f"The message attribute '{name}' with type '{base}' must use StringValue.")
    if string == "":
        raise _invalid(f"The message attribute '{name}' must not have an empty StringValue.")
    if _BAD_CHARS.search(string):
        raise _invalid(f"The message attribute '{name}' contains characters outside SQS's set.")
    if base == "Number":
        try:
            number = Decimal(string.strip())
        except InvalidOperation:
            raise _invalid(
                f"Can't convert the value of message attribute '{name}' to a number."
            ) from None
        if not number.is_finite() or len(number.as_tuple().digits) > 38:
            raise _invalid(
                f"The value of message attribute '{name}' must be a finite number of at most "
                "38 significant digits."
            )


def check_system_attributes(attributes: Mapping[str, Mapping[str, Any]], where: str) -> None:
    """``MessageSystemAttributes`` of a send: only ``AWSTraceHeader``, a ``String``."""
    for name, value in attributes.items():
        if name not in SEND_SYSTEM_ATTRIBUTES:
            raise _invalid(f"Message system attribute name '{name}' in {where} is invalid.")
        if value.get("DataType") != "String" or not value.get("StringValue"):
            raise _invalid(
                f"The message system attribute '{name}' in {where} must have DataType String "
                "and a StringValue."
            )
        if value.get("BinaryValue") is not None:
            raise _invalid(f"The message system attribute '{name}' takes no BinaryValue.")


def message_size(body: str, attributes: Mapping[str, Mapping[str, Any]]) -> int:
    """The size SQS counts against ``MaximumMessageSize``: the body's UTF-8 bytes plus each
    attribute's name, data type and value (Developer Guide, message attributes)."""
    size = len(body.encode("utf-8"))
    for name, value in attributes.items():
        size += len(name.encode("utf-8")) + len(str(value.get("DataType", "")).encode("utf-8"))
        if value.get("StringValue") is not None:
            size += len(value["StringValue"].encode("utf-8"))
        elif value.get("BinaryValue") is not None:
            size += len(value["BinaryValue"])
    return size


def digests(
    body: str,
    attributes: Mapping[str, Mapping[str, Any]],
    system: Mapping[str, Mapping[str, Any]],
) -> tuple[str, str | None, str | None]:
    """``(MD5OfMessageBody, MD5OfMessageAttributes, MD5OfMessageSystemAttributes)``."""
    return (
        md5_of_body(body),
        md5_of_message_attributes(attributes),
        md5_of_message_attributes(system),
    )


def select_attributes(
    attributes: Mapping[str, Mapping[str, Any]], names: Iterable[str]
) -> dict[str, dict[str, Any]]:
    """The attributes a ReceiveMessage's ``MessageAttributeNames`` asks for: ``All`` or ``.*``
    for every one, ``prefix.*`` for those whose name starts with ``prefix.``, else exact names."""
    wanted = list(names)
    if not wanted:
        return {}
    if "All" in wanted or ".*" in wanted:
        return {k: dict(v) for k, v in attributes.items()}
    prefixes = tuple(w[:-1] for w in wanted if w.endswith(".*"))
    exact = {w for w in wanted if not w.endswith(".*")}
    return {
        k: dict(v)
        for k, v in attributes.items()
        if k in exact or (prefixes and k.startswith(prefixes))
    }
