"""The query protocol's wire form: form-encoded requests in, XML responses out.

A query-era client (botocore before it moved SQS to AWS JSON 1.0, aws-cli v1 of that time, the
SDKs' query clients) sends ``Action=SendMessage&QueueUrl=...&MessageAttribute.1.Name=...`` and
reads XML. Everything here is driven by a *query-era service description*: botocore's JSON-era
model with ``sqs_endpoint/data/query.json`` laid over it
(``sqs_endpoint.model.ServiceModel.query_description``), so the wire names
(``SendMessageBatchRequestEntry.1.Id``, ``Attribute.1.Name``, ``<Message>``,
``<Attribute><Name>..</Name><Value>..</Value></Attribute>``) come from data, never from code per
operation. The naming rules are the ones botocore's ``QuerySerializer`` writes and
its ``QueryParser`` reads (``tests/test_server_query.py`` runs both against this module):

- a member is named by its ``locationName``, else its own name; a nested member's key is its
  parent's key, a dot, and its name;
- a flattened list's elements are ``<name>.1``, ``<name>.2``..., where ``<name>`` is the list
  member's ``locationName`` if it has one (``Entries`` -> ``SendMessageBatchRequestEntry.N``); a
  list that is not flattened nests its elements as ``<name>.member.N``; an empty list is sent as
  the bare key with an empty value (botocore uses the member's own name for it: ``TagKeys=``);
  in XML an empty flattened list is no element at all, so a client reads it as absent;
- a flattened map's entries are ``<name>.N.<key name>`` and ``<name>.N.<value name>``
  (``Attribute.N.Name``/``Attribute.N.Value``), a map that is not flattened has ``.entry.N``.

Parsing yields the JSON-protocol shape of the request (member names as in the model, integers as
int, booleans as bool, blobs still base64 text as JSON carries them), which
``sqs_endpoint.model.ServiceModel.validate_input`` then checks like any JSON request.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from sqs_endpoint.errors import SqsError

__all__ = ["error_xml", "parse_form", "parse_structure", "to_xml"]

_INTEGER = re.compile(r"[+-]?[0-9]+")
_INDEX = re.compile(r"[1-9][0-9]*")


def parse_form(body: bytes | str) -> dict[str, list[str]]:
    """The fields of a form-encoded body or a URL's query string, each with all its values.

    Raises ``SqsError("MalformedQueryString")`` for what is not a query string: bytes that are
    not UTF-8 (before or after percent-decoding) or a field with no ``=`` or an empty one.
    """
    if isinstance(body, bytes | bytearray):
        try:
            text = bytes(body).decode("utf-8")
        except UnicodeDecodeError as e:
            raise SqsError("MalformedQueryString", f"The query string is not UTF-8: {e}") from None
    else:
        text = body
    if not text:
        return {}
    try:
        return urllib.parse.parse_qs(
            text, keep_blank_values=True, strict_parsing=True, encoding="utf-8", errors="strict"
        )
    except (ValueError, UnicodeDecodeError) as e:
        raise SqsError("MalformedQueryString", f"The query string is malformed: {e}") from None


class _Node:
    """One dotted component of the form's keys: ``A.1.B=v`` is A -> 1 -> B with value v."""

    __slots__ = ("children", "key", "value")

    def __init__(self, key: str) -> None:
        self.key = key  # the full dotted key up to here, for error messages
        self.value: str | None = None
        self.children: dict[str, _Node] = {}


def _tree(fields: Mapping[str, str]) -> _Node:
    root = _Node("")
    for name, value in fields.items():
        node = root
        for part in name.split("."):
            child = node.children.get(part)
            if child is None:
                child = _Node(f"{node.key}.{part}" if node.key else part)
                node.children[part] = child
            node = child
        node.value = value
    return root


def _invalid(key: str, value: str | None, reason: str) -> SqsError:
    return SqsError(
        "InvalidParameterValue", f"Value {value!r} for parameter {key} is invalid. Reason: {reason}"
    )


class _Reader:
    """Reads a request shape out of the key tree, the way botocore's QuerySerializer wrote it."""

    def __init__(self, shapes: Mapping[str, Any]) -> None:
        self.shapes = shapes

    def member_key(self, ref: Mapping[str, Any], name: str) -> str:
        shape = self.shapes[ref["shape"]]
        key = str(ref.get("locationName", shape.get("locationName", name)))
        if shape["type"] == "list" and (ref.get("flattened") or shape.get("flattened")):
            # A flattened list is keyed by its member's name when it has one (Entries ->
            # SendMessageBatchRequestEntry.N), as QuerySerializer replaces the last component.
            member = shape["member"]
            member_name = member.get(
                "locationName", self.shapes[member["shape"]].get("locationName")
            )
            if member_name:
                key = str(member_name)
        return key

    def read(self, node: _Node, ref: Mapping[str, Any]) -> Any:
        shape = self.shapes[ref["shape"]]
        kind = shape["type"]
        if kind == "structure":
            return self.structure(node, shape)
        if kind == "list":
            return self.list(node, ref, shape)
        if kind == "map":
            return self.map(node, ref, shape)
        return self.scalar(node, kind)

    def structure(self, node: _Node, shape: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, ref in shape.get("members", {}).items():
            child = node.children.get(self.member_key(ref, name))
            if child is not None:
                out[name] = self.read(child, ref)
                continue
            # botocore sends an empty flattened list under the member's own name, before the
            # rename to its member's name (UntagQueue: TagKeys= rather than TagKey=).
            own = node.children.get(str(ref.get("locationName", name)))
            if own is not None and self.shapes[ref["shape"]]["type"] == "list":
                out[name] = self.list(own, ref, self.shapes[ref["shape"]])
        return out

    def indexed(self, node: _Node) -> list[_Node]:
        """The children ``.1``, ``.2``... of ``node``, in index order."""
        for index, child in node.children.items():
            if not _INDEX.fullmatch(index):
                raise _invalid(child.key, child.value, "a list index must be a positive integer")
        return [node.children[i] for i in sorted(node.children, key=int)]

    def list(self, node: _Node, ref: Mapping[str, Any], shape: Mapping[str, Any]) -> list[Any]:
        if not node.children:
            if node.value not in (None, ""):
                raise _invalid(node.key, node.value, "a list is sent as indexed members")
            return []  # the empty list: the bare key with an empty value
        container: _Node | None = node
        if not (ref.get("flattened") or shape.get("flattened")):
            container = node.children.get(str(shape["member"].get("locationName", "member")))
        if container is None:
            return []
        return [self.read(child, shape["member"]) for child in self.indexed(container)]

    def map(self, node: _Node, ref: Mapping[str, Any], shape: Mapping[str, Any]) -> dict[str, Any]:
        container: _Node | None = node
        if not (ref.get("flattened") or shape.get("flattened")):
            container = node.children.get("entry")
        if container is None:
            return {}
        key_name = str(shape["key"].get("locationName", "key"))
        value_name = str(shape["value"].get("locationName", "value"))
        out: dict[str, Any] = {}
        for entry in self.indexed(container):
            key_node = entry.children.get(key_name)
            value_node = entry.children.get(value_name)
            if key_node is None or key_node.value is None:
                raise SqsError(
                    "MissingParameter",
                    f"The request must contain the parameter {entry.key}.{key_name}.",
                )
            if value_node is None:
                raise SqsError(
                    "MissingParameter",
                    f"The request must contain the parameter {entry.key}.{value_name}.",
                )
            key = key_node.value
            if key in out:
                raise _invalid(key_node.key, key, f"{key_name} {key!r} is given more than once")
            out[key] = self.read(value_node, shape["value"])
        return out

    def scalar(self, node: _Node, kind: str) -> Any:
        value = node.value
        if value is None:
            raise _invalid(node.key, None, "expected a value, got indexed members")
        if kind in ("integer", "long"):
            if not _INTEGER.fullmatch(value):
                raise _invalid(node.key, value, "must be an integer")
            return int(value)
        if kind == "boolean":
            if value.lower() not in ("true", "false"):
                raise _invalid(node.key, value, "must be true or false")
            return value.lower() == "true"
        # string and blob (base64 text, as JSON carries it too) stay text
        return value


def parse_structure(
    shapes: Mapping[str, Any], shape_name: str, fields: Mapping[str, str]
) -> dict[str, Any]:
    """The members of structure ``shape_name`` read from single-valued form ``fields``.

    Keys that name no member are left out (auth parameters, ``Version``, unknown ones), as a
    JSON request's unknown members are.
    """
    reader = _Reader(shapes)
    return reader.structure(_tree(fields), shapes[shape_name])


# XML


def _escape(text: str) -> str:
    # A bare \r would reach the client as \n (XML end-of-line handling): SQS sends &#xD;.
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#xD;")
    )


class _Writer:
    """Writes a result shape as the XML botocore's QueryParser reads."""

    def __init__(self, shapes: Mapping[str, Any]) -> None:
        self.shapes = shapes
        self.out: list[str] = []

    def element_name(self, ref: Mapping[str, Any], name: str) -> str:
        shape = self.shapes[ref["shape"]]
        if shape["type"] == "list" and (ref.get("flattened") or shape.get("flattened")):
            member_name = shape["member"].get("locationName")
            if member_name:
                return str(member_name)
        return str(ref.get("locationName", shape.get("locationName", name)))

    def structure(self, value: Mapping[str, Any], shape: Mapping[str, Any], path: str) -> None:
        members = shape.get("members", {})
        for name, ref in members.items():
            item = value.get(name)
            if item is None:
                continue
            self.member(self.element_name(ref, name), item, ref, f"{path}.{name}" if path else name)

    def member(self, tag: str, value: Any, ref: Mapping[str, Any], path: str) -> None:
        shape = self.shapes[ref["shape"]]
        kind = shape["type"]
        flattened = bool(ref.get("flattened") or shape.get("flattened"))
        if kind == "list":
            if not isinstance(value, list | tuple):
                raise TypeError(f"{path}: must be a list, got {type(value).__name__}")
            if flattened:
                for i, item in enumerate(value, 1):
                    self.member(tag, item, shape["member"], f"{path}.{i}")
            else:
                inner = str(shape["member"].get("locationName", "member"))
                self.out.append(f"<{tag}>")
                for i, item in enumerate(value, 1):
                    self.member(inner, item, shape["member"], f"{path}.{i}")
                self.out.append(f"</{tag}>")
        elif kind == "map":
            if not isinstance(value, Mapping):
                raise TypeError(f"{path}: must be a mapping, got {type(value).__name__}")
            key_name = str(shape["key"].get("locationName", "key"))
            value_name = str(shape["value"].get("locationName", "value"))
            if not flattened:
                self.out.append(f"<{tag}>")
            for key, item in value.items():
                self.out.append("<entry>" if not flattened else f"<{tag}>")
                self.member(key_name, key, shape["key"], f"{path}.{key}")
                self.member(value_name, item, shape["value"], f"{path}.{key}")
                self.out.append("</entry>" if not flattened else f"</{tag}>")
            if not flattened:
                self.out.append(f"</{tag}>")
        elif kind == "structure":
            if not isinstance(value, Mapping):
                raise TypeError(f"{path}: must be a mapping, got {type(value).__name__}")
            self.out.append(f"<{tag}>")
            self.structure(value, shape, path)
            self.out.append(f"</{tag}>")
        else:
            self.out.append(f"<{tag}>{_escape(_scalar_text(value, kind, path))}</{tag}>")


def _scalar_text(value: Any, kind: str, path: str) -> str:
    if kind in ("integer", "long"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{path}: must be an int, got {type(value).__name__}")
        return str(value)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise TypeError(f"{path}: must be a bool, got {type(value).__name__}")
        return "true" if value else "false"
    if kind == "blob":
        if isinstance(value, bytes | bytearray):
            return base64.b64encode(bytes(value)).decode("ascii")
        if isinstance(value, str):
            return value  # already base64
        raise TypeError(f"{path}: must be bytes, got {type(value).__name__}")
    if not isinstance(value, str):
        raise TypeError(f"{path}: must be a str, got {type(value).__name__}")
    return value


def to_xml(
    description: Mapping[str, Any], operation: str, result: Mapping[str, Any], request_id: str
) -> bytes:
    """``<OpResponse><OpResult>..</OpResult><ResponseMetadata>..</OpResponse>`` for ``result``.

    ``description`` is a query-era service description (``operations``, ``shapes``,
    ``metadata.xmlNamespace``, the output's ``resultWrapper``). An operation with no output
    answers with the response metadata alone, as SQS does.
    """
    op = description["operations"][operation]
    shapes = description["shapes"]
    namespace = description["metadata"]["xmlNamespace"]
    writer = _Writer(shapes)
    writer.out.append(f'<?xml version="1.0"?><{operation}Response xmlns="{namespace}">')
    output = op.get("output")
    if output is not None:
        wrapper = output.get("resultWrapper", f"{operation}Result")
        writer.out.append(f"<{wrapper}>")
        writer.structure(result, shapes[output["shape"]], "")
        writer.out.append(f"</{wrapper}>")
    writer.out.append(
        f"<ResponseMetadata><RequestId>{_escape(request_id)}</RequestId></ResponseMetadata>"
        f"</{operation}Response>"
    )
    return "".join(writer.out).encode("utf-8")


def error_xml(err: SqsError, request_id: str, namespace: str) -> bytes:
    """The query protocol's ``<ErrorResponse>`` for ``err`` (its legacy ``query_code``)."""
    return (
        f'<?xml version="1.0"?><ErrorResponse xmlns="{namespace}"><Error>'
        f"<Type>{err.fault}</Type><Code>{_escape(err.query_code)}</Code>"
        f"<Message>{_escape(err.message)}</Message><Detail/></Error>"
        f"<RequestId>{_escape(request_id)}</RequestId></ErrorResponse>"
    ).encode()
