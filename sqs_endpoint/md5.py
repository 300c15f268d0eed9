"""The MD5 digests SQS returns beside a message, which clients check.

``MD5OfMessageBody`` (SendMessage) and ``MD5OfBody`` (ReceiveMessage) are the MD5 of the body's
UTF-8 bytes. ``MD5OfMessageAttributes`` (and ``MD5OfMessageSystemAttributes``, the same digest over
the system attributes) is the MD5 of the attributes in SQS's documented encoding ("Calculating the
MD5 message digest for message attributes", SQS Developer Guide), which the AWS SDKs recompute
(the JavaScript and Java SDKs reject a response whose digest differs):

for each attribute, sorted by name:
  4-byte big-endian length + UTF-8 name,
  4-byte length + UTF-8 data type,
  1 byte transport type: 1 for a string value (``String``, ``Number`` and their custom
  ``String.x``/``Number.x`` types), 2 for a binary one, 3/4 for the string/binary lists
  the API reserves (encoded as the Java SDK does: each element as 4-byte length + bytes),
  4-byte length + the value's bytes (UTF-8 for a string).

Attributes are the JSON-protocol shape (``{"DataType": ..., "StringValue": ...}``); a
``BinaryValue`` is the raw bytes (``sqs_endpoint.model.validate_input`` decodes the wire's base64).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from collections.abc import Mapping
from typing import Any

__all__ = ["md5_of_body", "md5_of_message_attributes"]

_STRING = 1
_BINARY = 2
_STRING_LIST = 3
_BINARY_LIST = 4


def md5_of_body(body: str) -> str:
    """The hex MD5 of ``body``'s UTF-8 bytes (``MD5OfMessageBody``, ``MD5OfBody``)."""
    if not isinstance(body, str):
        raise TypeError(f"md5_of_body: body must be str, got {type(body).__name__}")
    return hashlib.md5(body.encode("utf-8")).hexdigest()


def _binary(value: object, where: str) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        # A caller holding the wire form: base64 as both protocols carry it.
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as e:
            raise ValueError(f"{where}: not base64: {e}") from None
    raise TypeError(f"{where}: must be bytes, got {type(value).__name__}")


def _string(value: object, where: str) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"{where}: must be str, got {type(value).__name__}")
    return value.encode("utf-8")


def _field(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def md5_of_message_attributes(attributes: Mapping[str, Mapping[str, Any]] | None) -> str | None:
    """The hex ``MD5OfMessageAttributes`` of ``attributes``; None when there are none.

    SQS leaves the member out of a response whose message has no attributes, so None is what
    the caller puts in the result (serializers drop None members).
    """
    if not attributes:
        return None
    digest = hashlib.md5()
    # Names are [A-Za-z0-9_.-] (SQS's rule), so Python's code-point order is the SDKs' order.
    for name in sorted(attributes):
        value = attributes[name]
        where = f"attribute {name!r}"
        data_type = value.get("DataType")
        digest.update(_field(_string(name, f"{where} name")))
        digest.update(_field(_string(data_type, f"{where} DataType")))
        if value.get("StringValue") is not None:
            digest.update(bytes([_STRING]))
            digest.update(_field(_string(value["StringValue"], f"{where} StringValue")))
        elif value.get("BinaryValue") is not None:
            digest.update(bytes([_BINARY]))
            digest.update(_field(_binary(value["BinaryValue"], f"{where} BinaryValue")))
        elif value.get("StringListValues"):
            digest.update(bytes([_STRING_LIST]))
            for i, item in enumerate(value["StringListValues"], 1):
                digest.update(_field(_string(item, f"{where} StringListValues.{i}")))
        elif value.get("BinaryListValues"):
            digest.update(bytes([_BINARY_LIST]))
            for i, item in enumerate(value["BinaryListValues"], 1):
                digest.update(_field(_binary(item, f"{where} BinaryListValues.{i}")))
        else:
            raise ValueError(f"{where}: has no value (StringValue or BinaryValue)")
    return digest.hexdigest()
