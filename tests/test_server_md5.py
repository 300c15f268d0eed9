"""The MD5 digests the SQS endpoint returns (sqs_endpoint/md5.py), against vectors it did not
compute.

Three kinds of expected values, none taken from the code under test:

- RFC 1321's own test suite (appendix A.5) for the body digest;
- digests built here byte by byte from SQS's documented encoding (4-byte big-endian lengths,
  the transport-type byte) and hashed with hashlib;
- the published examples of the ``aws-md5-of-message-attributes`` npm package's README, a
  reimplementation of the SDKs' check (its string, custom number type, binary and
  three-attribute examples), so the encoding is also checked against someone else's reading.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from sqs_endpoint.md5 import md5_of_body, md5_of_message_attributes


@pytest.mark.parametrize(
    ("body", "digest"),
    [
        # RFC 1321, A.5 "Test suite".
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("a", "0cc175b9c0f1b6a831c399e269772661"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
    ],
)
def test_the_body_digest_is_rfc_1321s_md5(body: str, digest: str) -> None:
    assert md5_of_body(body) == digest


def test_the_body_digest_is_over_utf_8() -> None:
    assert md5_of_body("\u00e9\U0001f600") == hashlib.md5(b"\xc3\xa9\xf0\x9f\x98\x80").hexdigest()


def test_a_body_that_is_not_text_is_refused() -> None:
    with pytest.raises(TypeError, match="body"):
        md5_of_body(b"bytes")  # type: ignore[arg-type]


#: The README examples of the aws-md5-of-message-attributes npm package.
STRING: dict[str, Any] = {"attribName1": {"DataType": "String", "StringValue": "attribValue 1"}}
NUMBER: dict[str, Any] = {
    "customNumberTypeAttrib": {
        "DataType": "Number.float",
        "StringValue": "4563442423554324324264524243.32543234",
    }
}
BINARY: dict[str, Any] = {
    "binaryAttribute": {"DataType": "Binary", "BinaryValue": b"Hello binary world!"}
}


@pytest.mark.parametrize(
    ("attributes", "digest"),
    [
        (STRING, "19e27d4e946b072f3f58da80d94fd778"),
        (NUMBER, "9fe1b90bbd9965bdf77bac517c7d2495"),
        (BINARY, "31a92b15d92f8db860eda32aceb656c3"),
        ({**STRING, **NUMBER, **BINARY}, "c932db14a896c663f83c260297d594ff"),
    ],
    ids=["string", "custom-number", "binary", "three"],
)
def test_the_published_attribute_digests(attributes: dict[str, Any], digest: str) -> None:
    assert md5_of_message_attributes(attributes) == digest


def test_the_digest_is_the_documented_encoding_built_by_hand() -> None:
    attributes: dict[str, Any] = {
        "zeta": {"DataType": "String", "StringValue": "\u00e9"},
        "Alpha": {"DataType": "Binary.gif", "BinaryValue": b"\x00\xff"},
    }
    # Sorted by name: "Alpha" < "zeta". Each field a 4-byte big-endian length and its bytes;
    # the transport type 2 (binary) for Alpha, 1 (string) for zeta.
    encoding = (
        b"\x00\x00\x00\x05Alpha"
        + b"\x00\x00\x00\x0aBinary.gif"
        + b"\x02"
        + b"\x00\x00\x00\x02\x00\xff"
        + b"\x00\x00\x00\x04zeta"
        + b"\x00\x00\x00\x06String"
        + b"\x01"
        + b"\x00\x00\x00\x02\xc3\xa9"
    )
    assert md5_of_message_attributes(attributes) == hashlib.md5(encoding).hexdigest()


def test_the_order_the_attributes_come_in_does_not_matter() -> None:
    forward = {**STRING, **NUMBER, **BINARY}
    backward = {**BINARY, **NUMBER, **STRING}
    assert md5_of_message_attributes(forward) == md5_of_message_attributes(backward)


def test_a_binary_value_as_the_wires_base64_gives_the_same_digest() -> None:
    wire = {
        "binaryAttribute": {
            "DataType": "Binary",
            "BinaryValue": base64.b64encode(b"Hello binary world!").decode(),
        }
    }
    assert md5_of_message_attributes(wire) == "31a92b15d92f8db860eda32aceb656c3"


def test_the_reserved_list_values_are_encoded_as_the_java_sdk_does() -> None:
    # Transport type 3 (string list), then each element as length + bytes.
    attributes: dict[str, Any] = {"l": {"DataType": "String", "StringListValues": ["a", "bc"]}}
    encoding = (
        b"\x00\x00\x00\x01l"
        + b"\x00\x00\x00\x06String"
        + b"\x03"
        + b"\x00\x00\x00\x01a"
        + b"\x00\x00\x00\x02bc"
    )
    assert md5_of_message_attributes(attributes) == hashlib.md5(encoding).hexdigest()


def test_no_attributes_have_no_digest() -> None:
    # SQS leaves MD5OfMessageAttributes out of a message without attributes.
    assert md5_of_message_attributes({}) is None
    assert md5_of_message_attributes(None) is None


def test_an_attribute_without_a_value_or_with_a_wrong_type_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'k'"):
        md5_of_message_attributes({"k": {"DataType": "String"}})
    with pytest.raises(TypeError, match="'k' StringValue"):
        md5_of_message_attributes({"k": {"DataType": "String", "StringValue": 3}})
    with pytest.raises(TypeError, match="'k' DataType"):
        md5_of_message_attributes({"k": {"StringValue": "v"}})
    with pytest.raises(ValueError, match="not base64"):
        md5_of_message_attributes({"k": {"DataType": "Binary", "BinaryValue": "***"}})
