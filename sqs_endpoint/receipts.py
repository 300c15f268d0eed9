"""Receipt handles: the opaque string a ReceiveMessage hands out for one delivery.

A handle names one delivery of the queue contract's receipt, ``(queue, id, attempt)``, plus the
queue's *incarnation* (a number the Service gives each impl queue it builds, so a queue deleted
and created again under the same name never honours a handle of its predecessor). It is the
URL-safe base64 (unpadded) of ``"<incarnation>:<id>:<attempt>:<queue name>"``: no signature,
since this endpoint checks no credentials and a forged handle can only name a delivery, which
is live or not like any other.

:func:`decode` refuses anything it cannot read back with ``ReceiptHandleIsInvalid`` (SQS's code
for a malformed handle); whether a well-formed handle is *live* is the queue's question
(``impl``'s receipt check), not this module's.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Final

from sqs_endpoint.errors import SqsError

__all__ = ["Handle", "decode", "encode"]

#: An impl message id (the contract's id form) and a queue name (SQS's form).
_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")
_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,80}(\.fifo)?")
#: The longest handle decode reads: SQS's handles are at most 1,024 characters.
_MAX_LEN: Final = 1024


@dataclass(frozen=True, slots=True)
class Handle:
    """What a receipt handle names: a delivery of message ``id`` (``attempt``) of queue
    ``queue`` in its ``incarnation``."""

    queue: str
    incarnation: int
    id: str
    attempt: int


def encode(handle: Handle) -> str:
    """The receipt handle string of ``handle``."""
    raw = f"{handle.incarnation}:{handle.id}:{handle.attempt}:{handle.queue}".encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _invalid(text: str) -> SqsError:
    shown = text if len(text) <= 64 else text[:61] + "..."
    return SqsError(
        "ReceiptHandleIsInvalid",
        f'The input receipt handle "{shown}" is not a valid receipt handle.',
    )


def decode(text: str) -> Handle:
    """The :class:`Handle` a string names; ``SqsError("ReceiptHandleIsInvalid")`` for one this
    endpoint never wrote (not base64, wrong fields, a bad id, attempt or name)."""
    if not isinstance(text, str) or not text or len(text) > _MAX_LEN:
        raise _invalid(str(text))
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        raise _invalid(text) from None
    parts = raw.split(":")
    if len(parts) != 4:
        raise _invalid(text)
    inc, mid, attempt, name = parts
    if not (inc.isdigit() and attempt.isdigit() and _ID.fullmatch(mid) and _NAME.fullmatch(name)):
        raise _invalid(text)
    handle = Handle(name, int(inc), mid, int(attempt))
    if handle.attempt < 1 or encode(handle) != text:
        # Not the one spelling encode writes (leading zeros, padding): never a handle of ours.
        raise _invalid(text)
    return handle
