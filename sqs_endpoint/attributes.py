"""Queue attributes: SQS's names, defaults and value rules (CreateQueue, SetQueueAttributes).

Every settable attribute is kept as the string SQS would echo (``"30"``, ``"true"``), after its
value has been checked; :func:`check` raises ``InvalidAttributeName`` for a name SQS does not take
on that queue type (or a read-only one) and ``InvalidAttributeValue`` for a value out of SQS's
range, before anything changes. The ranges are the API Reference's (SetQueueAttributes):

- ``DelaySeconds`` 0..900, ``MaximumMessageSize`` 1,024..1,048,576 (default 1 MiB, as SQS
  since 2025 and botocore's model say), ``MessageRetentionPeriod``
  60..1,209,600, ``ReceiveMessageWaitTimeSeconds`` 0..20, ``VisibilityTimeout`` 0..43,200,
  ``KmsDataKeyReusePeriodSeconds`` 60..86,400;
- ``RedrivePolicy``: JSON with ``deadLetterTargetArn`` and ``maxReceiveCount`` 1..1,000 (or the
  empty string: none); ``RedriveAllowPolicy``: JSON with ``redrivePermission`` ``allowAll``,
  ``denyAll`` or ``byQueue`` (then ``sourceQueueArns``, 1..10 ARNs); ``Policy``: a JSON object
  (stored and echoed, never enforced: this endpoint checks no credentials);
- ``SqsManagedSseEnabled`` and (FIFO only) ``ContentBasedDeduplication`` booleans;
  ``DeduplicationScope`` ``messageGroup``/``queue``, ``FifoThroughputLimit``
  ``perQueue``/``perMessageGroupId`` (the latter needs ``DeduplicationScope=messageGroup``);
  ``FifoQueue`` only at creation; ``KmsMasterKeyId`` any string (stored, no encryption).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sqs_endpoint.errors import SqsError

__all__ = [
    "COUNTS",
    "READ_ONLY",
    "RedrivePolicy",
    "check",
    "defaults",
    "parse_redrive_allow_policy",
    "parse_redrive_policy",
]

#: Integer attributes and their ranges (inclusive).
_RANGES: Final[dict[str, tuple[int, int]]] = {
    "DelaySeconds": (0, 900),
    "MaximumMessageSize": (1024, 1_048_576),
    "MessageRetentionPeriod": (60, 1_209_600),
    "ReceiveMessageWaitTimeSeconds": (0, 20),
    "VisibilityTimeout": (0, 43_200),
    "KmsDataKeyReusePeriodSeconds": (60, 86_400),
}
_BOOLEANS: Final = frozenset({"SqsManagedSseEnabled", "ContentBasedDeduplication", "FifoQueue"})
_CHOICES: Final[dict[str, frozenset[str]]] = {
    "DeduplicationScope": frozenset({"messageGroup", "queue"}),
    "FifoThroughputLimit": frozenset({"perQueue", "perMessageGroupId"}),
}
_FIFO_ONLY: Final = frozenset(
    {"ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"}
)
_FREE: Final = frozenset({"KmsMasterKeyId"})
_JSON: Final = frozenset({"RedrivePolicy", "RedriveAllowPolicy", "Policy"})
#: Attributes GetQueueAttributes reports but no request may set.
COUNTS: Final = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
READ_ONLY: Final = frozenset({*COUNTS, "CreatedTimestamp", "LastModifiedTimestamp", "QueueArn"})
#: The receive count SQS allows in a redrive policy.
MAX_RECEIVE_COUNT: Final = 1000
MAX_SOURCE_ARNS: Final = 10


def defaults(fifo: bool) -> dict[str, str]:
    """The attributes of a new queue that sets none (SQS's defaults)."""
    out = {
        "VisibilityTimeout": "30",
        "DelaySeconds": "0",
        "MaximumMessageSize": "1048576",
        "MessageRetentionPeriod": "345600",
        "ReceiveMessageWaitTimeSeconds": "0",
        "SqsManagedSseEnabled": "true",
    }
    if fifo:
        out |= {
            "FifoQueue": "true",
            "ContentBasedDeduplication": "false",
            "DeduplicationScope": "queue",
            "FifoThroughputLimit": "perQueue",
        }
    return out


def _bad_value(name: str, value: str, why: str) -> SqsError:
    return SqsError("InvalidAttributeValue", f"Invalid value for the parameter {name}: {why}")


def _unknown(name: str) -> SqsError:
    return SqsError("InvalidAttributeName", f"Unknown Attribute {name}.")


def check(attributes: Mapping[str, str], *, fifo: bool, creating: bool) -> dict[str, str]:
    """``attributes`` checked for a queue (``fifo``; ``creating``: CreateQueue, else
    SetQueueAttributes), as the canonical strings to store. Raises ``SqsError``."""
    out: dict[str, str] = {}
    for name, value in attributes.items():
        if name in READ_ONLY or (name == "FifoQueue" and not creating):
            raise _unknown(name)
        if name in _FIFO_ONLY and not fifo:
            raise _unknown(name)
        if not isinstance(value, str):
            raise _bad_value(name, str(value), "must be a string")
        if name in _RANGES:
            low, high = _RANGES[name]
            text = value.strip()
            if not (text.lstrip("-").isdigit() and low <= int(text) <= high):
                raise _bad_value(name, value, f"must be an integer from {low} to {high}.")
            out[name] = str(int(text))
        elif name in _BOOLEANS:
            lowered = value.strip().lower()
            if lowered not in ("true", "false"):
                raise _bad_value(name, value, "must be true or false.")
            out[name] = lowered
        elif name in _CHOICES:
            if value not in _CHOICES[name]:
                raise _bad_value(
                    name, value, f"must be one of {', '.join(sorted(_CHOICES[name]))}."
                )
            out[name] = value
        elif name == "RedrivePolicy":
            out[name] = "" if value == "" else _canonical_redrive(value)
        elif name == "RedriveAllowPolicy":
            out[name] = "" if value == "" else _canonical_allow(value)
        elif name == "Policy":
            out[name] = "" if value == "" else _canonical_policy(value)
        elif name in _FREE:
            out[name] = value
        else:
            raise _unknown(name)
    if "FifoQueue" in out and (out["FifoQueue"] == "true") != fifo:
        raise SqsError(
            "InvalidParameterValue",
            "The name of a FIFO queue must end with the .fifo suffix, and a queue whose name "
            "ends with .fifo must set FifoQueue to true.",
        )
    return out


@dataclass(frozen=True, slots=True)
class RedrivePolicy:
    """A parsed ``RedrivePolicy``: the target's ARN and ``maxReceiveCount``."""

    target_arn: str
    max_receive_count: int


def _load_object(name: str, value: str) -> dict[str, Any]:
    try:
        data = json.loads(value)
    except ValueError:
        raise _bad_value(name, value, "not valid JSON.") from None
    if not isinstance(data, dict):
        raise _bad_value(name, value, "must be a JSON object.")
    return data


def parse_redrive_policy(value: str) -> RedrivePolicy:
    """The policy a (checked or raw) ``RedrivePolicy`` string holds; ``InvalidAttributeValue``
    naming the field that is wrong."""
    data = _load_object("RedrivePolicy", value)
    unknown = set(data) - {"deadLetterTargetArn", "maxReceiveCount"}
    if unknown:
        raise _bad_value("RedrivePolicy", value, f"unknown field {sorted(unknown)[0]}.")
    arn = data.get("deadLetterTargetArn")
    if not isinstance(arn, str) or not arn:
        raise _bad_value("RedrivePolicy", value, "deadLetterTargetArn must be a queue ARN.")
    count = data.get("maxReceiveCount")
    if isinstance(count, str) and count.strip().isdigit():
        count = int(count.strip())
    if isinstance(count, bool) or not isinstance(count, int):
        raise _bad_value("RedrivePolicy", value, "maxReceiveCount must be an integer.")
    if not 1 <= count <= MAX_RECEIVE_COUNT:
        raise _bad_value(
            "RedrivePolicy", value, f"maxReceiveCount must be from 1 to {MAX_RECEIVE_COUNT}."
        )
    return RedrivePolicy(arn, count)


def _canonical_redrive(value: str) -> str:
    policy = parse_redrive_policy(value)
    return json.dumps(
        {"deadLetterTargetArn": policy.target_arn, "maxReceiveCount": policy.max_receive_count},
        separators=(",", ":"),
    )


def parse_redrive_allow_policy(value: str) -> tuple[str, tuple[str, ...]]:
    """``(redrivePermission, sourceQueueArns)`` of a ``RedriveAllowPolicy`` string."""
    data = _load_object("RedriveAllowPolicy", value)
    permission = data.get("redrivePermission")
    if permission not in ("allowAll", "denyAll", "byQueue"):
        raise _bad_value(
            "RedriveAllowPolicy", value, "redrivePermission must be allowAll, denyAll or byQueue."
        )
    arns = data.get("sourceQueueArns")
    if permission == "byQueue":
        if (
            not isinstance(arns, list)
            or not 1 <= len(arns) <= MAX_SOURCE_ARNS
            or not all(isinstance(a, str) and a for a in arns)
        ):
            raise _bad_value(
                "RedriveAllowPolicy",
                value,
                f"byQueue needs sourceQueueArns, a list of 1 to {MAX_SOURCE_ARNS} queue ARNs.",
            )
        return permission, tuple(arns)
    if arns is not None:
        raise _bad_value(
            "RedriveAllowPolicy", value, "sourceQueueArns goes only with redrivePermission byQueue."
        )
    return permission, ()


def _canonical_allow(value: str) -> str:
    permission, arns = parse_redrive_allow_policy(value)
    data: dict[str, Any] = {"redrivePermission": permission}
    if arns:
        data["sourceQueueArns"] = list(arns)
    return json.dumps(data, separators=(",", ":"))


def _canonical_policy(value: str) -> str:
    _load_object("Policy", value)
    return value
