"""SQS's service model: request validation and response shapes for both wire protocols.

Nothing here is written per operation. The operations, their input and output shapes, required
members and types come from botocore's SQS service model (``botocore.loaders.Loader()
.load_service_model("sqs", "service-2")``, the JSON-era model every boto3 user already has);
what that model lacks for the query protocol (wire names, flattening, result wrappers, legacy
error codes) is ``sqs_endpoint/data/query.json``, laid over it once
(``ServiceModel.query_description``).

One request pipeline for both protocols, into the operation layer's JSON-protocol shapes:

- JSON: ``params = json body``; ``op`` from ``X-Amz-Target`` (``operation_from_target``).
- query: ``op, params = model.parse_query(sqs_endpoint.query.parse_form(body))``.
- then ``params = model.validate_input(op, params)``: raises ``SqsError`` naming the member
  (missing required member: ``MissingParameter``; wrong type or out of the type's range:
  ``InvalidParameterValue``; a batch's entries: the batch errors the model lists for the
  operation). It returns the normalized request: only the model's members, blobs as bytes.
- the result goes out as ``serialize_json(op, result)`` or ``serialize_query(op, result,
  request_id)``; an ``SqsError`` as ``json_error(err)`` or ``query_error(err, request_id)``, each
  ``(status, headers, body)``.

Queue semantics (attribute names and values, message size, name rules, visibility ranges) are
not here: the operation layer checks them. The model's enums are not enforced either: SQS
itself accepts names outside them (``ReceiveMessage``'s ``AttributeNames`` takes message system
attribute names such as ``ApproximateReceiveCount`` though its model enum lists queue
attributes); ``enum`` gives the operation layer a model's list when it wants one.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from sqs_endpoint import query
from sqs_endpoint.errors import SqsError, load_query_data

__all__ = [
    "JSON_CONTENT_TYPE",
    "XML_CONTENT_TYPE",
    "ServiceModel",
    "load",
]

JSON_CONTENT_TYPE = "application/x-amz-json-1.0"
XML_CONTENT_TYPE = "text/xml"

#: Most entries one batch request may carry (SQS API Reference, the batch actions).
MAX_BATCH_ENTRIES = 10
#: A batch entry's Id (SQS API Reference, SendMessageBatchRequestEntry): alphanumerics, hyphens
#: and underscores, at most 80 characters.
_BATCH_ENTRY_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")
_INT_RANGE = {"integer": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
#: Form fields a query request carries beside the operation's members.
_ACTION = "Action"


def _load_botocore_model() -> dict[str, Any]:
    # botocore is the server extra; imported here so `import sqs_endpoint.errors` never needs it.
    import botocore.loaders  # type: ignore[import-untyped]

    model: dict[str, Any] = botocore.loaders.Loader().load_service_model("sqs", "service-2")
    return model


def _overlay(description: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """The query-era description: ``description`` with ``data`` (query.json) laid over it."""
    out: dict[str, Any] = copy.deepcopy(dict(description))
    out["metadata"] = {**out["metadata"], "protocol": "query", "protocols": ["query"]}
    out["metadata"]["xmlNamespace"] = data["xmlNamespace"]
    for name, wrapper in data["resultWrappers"].items():
        op = out["operations"].get(name)
        if op is not None and "output" in op:
            op["output"]["resultWrapper"] = wrapper
    shapes = out["shapes"]
    for name, patch in data["shapes"].items():
        shape = shapes.get(name)
        if shape is None:
            continue  # a shape a newer botocore dropped: nothing to annotate
        for member, traits in patch.get("members", {}).items():
            if member in shape.get("members", {}):
                shape["members"][member].update(traits)
        for part in ("member", "key", "value"):
            if part in patch and part in shape:
                shape[part].update(patch[part])
        if "locationName" in patch:
            shape["locationName"] = patch["locationName"]
        if patch.get("flattened"):
            shape["flattened"] = True
    for name, info in data["errors"].items():
        shape = shapes.get(name)
        if shape is not None:
            shape["error"] = dict(info)
    return out


class ServiceModel:
    """The SQS model: operations, validation and both protocols' serialization.

    ``description`` is a JSON-era service description (default: botocore's, loaded once by
    ``load()``); ``query_data`` the query protocol's additions (default:
    sqs_endpoint/data/query.json).
    """

    def __init__(
        self,
        description: Mapping[str, Any] | None = None,
        query_data: Mapping[str, Any] | None = None,
    ) -> None:
        self.description: dict[str, Any] = (
            dict(description) if description is not None else _load_botocore_model()
        )
        self.query_data: Mapping[str, Any] = (
            query_data if query_data is not None else load_query_data()
        )
        self.query_description: dict[str, Any] = _overlay(self.description, self.query_data)
        self._shapes: dict[str, Any] = self.description["shapes"]
        self._operations: dict[str, Any] = self.description["operations"]
        #: Every operation of the model, by its API name (``SendMessage``).
        self.operation_names: frozenset[str] = frozenset(self._operations)
        self.target_prefix: str = str(self.description["metadata"].get("targetPrefix", "AmazonSQS"))
        self.xml_namespace: str = str(self.query_data["xmlNamespace"])

    # The operations

    def _operation(self, op: str) -> Mapping[str, Any]:
        spec = self._operations.get(op)
        if spec is None:
            raise SqsError("InvalidAction", f"The action {op} is not valid for this endpoint.")
        return spec  # type: ignore[no-any-return]

    def operation_from_target(self, target: str | None) -> str:
        """The operation an ``X-Amz-Target: AmazonSQS.<Op>`` header names.

        Raises ``SqsError("InvalidAction")`` for a missing header, another service's prefix or an
        operation the model does not have.
        """
        if not target:
            raise SqsError("InvalidAction", "The request has no X-Amz-Target header.")
        prefix, _, op = target.partition(".")
        if prefix != self.target_prefix or not op:
            raise SqsError("InvalidAction", f"The target {target} is not valid for this endpoint.")
        self._operation(op)
        return op

    def error_codes(self, op: str) -> frozenset[str]:
        """The error shapes the model lists for ``op``."""
        return frozenset(e["shape"] for e in self._operation(op).get("errors", ()))

    def enum(self, shape_name: str) -> frozenset[str]:
        """The values the model's string shape ``shape_name`` lists (empty if it lists none)."""
        return frozenset(self._shapes[shape_name].get("enum", ()))

    # Input

    def validate_input(self, op: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` checked against ``op``'s input shape; the normalized request.

        Raises ``SqsError`` (``InvalidAction`` for an unknown ``op``, ``MissingParameter``,
        ``InvalidParameterValue``, the batch errors) naming the member by its path
        (``Entries.2.Id``, ``MessageAttributes.color.DataType``). The result keeps only the
        model's members, drops None, and holds blobs as bytes (the wire's base64 decoded).
        """
        spec = self._operation(op)
        if not isinstance(params, Mapping):
            raise SqsError(
                "InvalidParameterValue",
                f"The request of {op} must be an object, got {type(params).__name__}.",
            )
        ref = spec.get("input")
        if ref is None:
            return {}
        out: dict[str, Any] = self._check(params, ref, "")
        entries_errors = self.error_codes(op)
        if "Entries" in self._shapes[ref["shape"]].get("members", {}):
            self._check_batch(op, out.get("Entries", []), entries_errors)
        return out

    def _check(self, value: Any, ref: Mapping[str, Any], path: str) -> Any:
        shape = self._shapes[ref["shape"]]
        kind = shape["type"]
        where = path or "the request"
        if kind == "structure":
            if not isinstance(value, Mapping):
                raise _invalid_type(where, value, "an object")
            for name in shape.get("required", ()):
                if value.get(name) is None:
                    raise SqsError(
                        "MissingParameter",
                        f"The request must contain the parameter {_join(path, name)}.",
                    )
            out: dict[str, Any] = {}
            for name, member in shape.get("members", {}).items():
                item = value.get(name)
                if item is not None:
                    out[name] = self._check(item, member, _join(path, name))
            return out
        if kind == "list":
            if not isinstance(value, list | tuple):
                raise _invalid_type(where, value, "a list")
            return [
                self._check(v, shape["member"], _join(path, str(i))) for i, v in enumerate(value, 1)
            ]
        if kind == "map":
            if not isinstance(value, Mapping):
                raise _invalid_type(where, value, "an object")
            result: dict[str, Any] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise _invalid_type(f"a key of {where}", key, "a string")
                if item is None:
                    raise _invalid_type(_join(path, key), item, "a value")
                result[key] = self._check(item, shape["value"], _join(path, key))
            return result
        if kind == "string":
            if not isinstance(value, str):
                raise _invalid_type(where, value, "a string")
            return value
        if kind in _INT_RANGE:
            if isinstance(value, bool) or not isinstance(value, int):
                raise _invalid_type(where, value, "an integer")
            low, high = _INT_RANGE[kind]
            if not low <= value <= high:
                raise SqsError(
                    "InvalidParameterValue",
                    f"Value {value} for parameter {where} is invalid. Reason: out of the range "
                    f"of {'a 32' if kind == 'integer' else 'a 64'}-bit integer.",
                )
            return value
        if kind == "boolean":
            if not isinstance(value, bool):
                raise _invalid_type(where, value, "a boolean")
            return value
        if kind == "blob":
            if isinstance(value, bytes | bytearray):
                return bytes(value)
            if not isinstance(value, str):
                raise _invalid_type(where, value, "base64 text")
            try:
                return base64.b64decode(value, validate=True)
            except binascii.Error:
                raise SqsError(
                    "InvalidParameterValue",
                    f"Value for parameter {where} is invalid. Reason: not base64.",
                ) from None
        raise TypeError(f"shape {ref['shape']} has a type ({kind}) this server does not read")

    def _check_batch(self, op: str, entries: list[Any], errors: frozenset[str]) -> None:
        """The batch rules the model names for ``op`` (its error shapes), in SQS's order."""
        entry_name = self._entry_wire_name(op)
        if "EmptyBatchRequest" in errors and not entries:
            raise SqsError(
                "EmptyBatchRequest", f"There should be at least one {entry_name} in the request."
            )
        if "TooManyEntriesInBatchRequest" in errors and len(entries) > MAX_BATCH_ENTRIES:
            raise SqsError(
                "TooManyEntriesInBatchRequest",
                f"Maximum number of entries per request are {MAX_BATCH_ENTRIES}. "
                f"You have sent {len(entries)}.",
            )
        seen: set[str] = set()
        for entry in entries:
            entry_id = entry.get("Id")
            if not isinstance(entry_id, str):
                continue  # an entry shape without Id: nothing to check
            if "InvalidBatchEntryId" in errors and not _BATCH_ENTRY_ID.fullmatch(entry_id):
                raise SqsError(
                    "InvalidBatchEntryId",
                    "A batch entry id can only contain alphanumeric characters, hyphens and "
                    "underscores. It can be at most 80 letters long.",
                )
            if "BatchEntryIdsNotDistinct" in errors and entry_id in seen:
                raise SqsError("BatchEntryIdsNotDistinct", f"Id {entry_id} repeated.")
            seen.add(entry_id)

    def _entry_wire_name(self, op: str) -> str:
        # The query name of the entry list's member (SendMessageBatchRequestEntry): the name SQS's
        # own batch messages use.
        request = self.query_description["shapes"][self._operation(op)["input"]["shape"]]
        entries = self.query_description["shapes"][request["members"]["Entries"]["shape"]]
        return str(entries["member"].get("locationName", "Entry"))

    def parse_query(self, form: Mapping[str, list[str]]) -> tuple[str, dict[str, Any]]:
        """``(operation, params)`` of a query request's fields (``sqs_endpoint.query.parse_form``).

        ``params`` is the JSON-protocol shape (``Entries``, ``MessageAttributes``...), to be
        checked by ``validate_input``. Raises ``SqsError``: ``MissingAction`` with no Action,
        ``InvalidAction`` for one the model lacks, ``InvalidQueryParameter`` for a field given
        twice, ``InvalidParameterValue`` for a value its member's type cannot hold.
        """
        fields: dict[str, str] = {}
        for name, values in form.items():
            if len(values) != 1:
                raise SqsError(
                    "InvalidQueryParameter", f"The parameter {name} is given {len(values)} times."
                )
            fields[name] = values[0]
        op = fields.pop(_ACTION, None)
        if not op:
            raise SqsError("MissingAction", "The request must contain the parameter Action.")
        spec = self._operation(op)
        ref = spec.get("input")
        if ref is None:
            return op, {}
        return op, query.parse_structure(self.query_description["shapes"], ref["shape"], fields)

    # Output

    def _output(self, value: Any, ref: Mapping[str, Any], path: str) -> Any:
        shape = self._shapes[ref["shape"]]
        kind = shape["type"]
        if kind == "structure":
            if not isinstance(value, Mapping):
                raise TypeError(
                    f"{path or 'result'}: must be a mapping, got {type(value).__name__}"
                )
            members = shape.get("members", {})
            return {
                name: self._output(value[name], members[name], _join(path, name))
                for name in members
                if value.get(name) is not None
            }
        if kind == "list":
            if not isinstance(value, list | tuple):
                raise TypeError(f"{path}: must be a list, got {type(value).__name__}")
            return [
                self._output(v, shape["member"], _join(path, str(i)))
                for i, v in enumerate(value, 1)
            ]
        if kind == "map":
            if not isinstance(value, Mapping):
                raise TypeError(f"{path}: must be a mapping, got {type(value).__name__}")
            return {
                self._output(k, shape["key"], path): self._output(v, shape["value"], _join(path, k))
                for k, v in value.items()
            }
        if kind == "blob":
            if isinstance(value, bytes | bytearray):
                return base64.b64encode(bytes(value)).decode("ascii")
            if isinstance(value, str):
                return value  # already the wire's base64
            raise TypeError(f"{path}: must be bytes, got {type(value).__name__}")
        expected: type | tuple[type, ...] = {
            "string": str,
            "integer": int,
            "long": int,
            "boolean": bool,
        }[kind]
        if not isinstance(value, expected) or (kind != "boolean" and isinstance(value, bool)):
            raise TypeError(f"{path}: must be {kind}, got {type(value).__name__}")
        return value

    def serialize_json(self, op: str, result: Mapping[str, Any]) -> bytes:
        """The AWS JSON 1.0 body of ``op``'s ``result``.

        Only the output shape's members go out (others and None values are left out); a member
        of the wrong type is a server bug and raises TypeError naming it.
        """
        ref = self._operation(op).get("output")
        body = {} if ref is None else self._output(result, ref, "")
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def serialize_query(self, op: str, result: Mapping[str, Any], request_id: str) -> bytes:
        """The query protocol's XML body of ``op``'s ``result`` (``<OpResponse>``)."""
        self._operation(op)
        return query.to_xml(self.query_description, op, result, request_id)

    def json_error(self, err: SqsError) -> tuple[int, dict[str, str], bytes]:
        """``(status, headers, body)`` of ``err`` in AWS JSON 1.0.

        The body's ``__type`` is ``com.amazonaws.sqs#<Code>``; ``x-amzn-query-error`` carries the
        legacy code and the fault (``AWS.SimpleQueueService.NonExistentQueue;Sender``), which
        botocore and the SDKs read for an ``awsQueryCompatible`` service.
        """
        body = {"__type": f"com.amazonaws.sqs#{err.code}", "message": err.message}
        headers = {
            "Content-Type": JSON_CONTENT_TYPE,
            "x-amzn-query-error": f"{err.query_code};{err.fault}",
        }
        return err.status, headers, json.dumps(body, ensure_ascii=False).encode("utf-8")

    def query_error(self, err: SqsError, request_id: str) -> tuple[int, dict[str, str], bytes]:
        """``(status, headers, body)`` of ``err`` in the query protocol (``<ErrorResponse>``)."""
        body = query.error_xml(err, request_id, self.xml_namespace)
        return err.status, {"Content-Type": XML_CONTENT_TYPE}, body


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _invalid_type(where: str, value: object, expected: str) -> SqsError:
    return SqsError(
        "InvalidParameterValue",
        f"Value {_short(value)} for parameter {where} is invalid. Reason: must be {expected}.",
    )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@cache
def load() -> ServiceModel:
    """The endpoint's model, built once: botocore's SQS model with sqs_endpoint/data/query.json."""
    return ServiceModel()
