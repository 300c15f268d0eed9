"""Argument checks shared by the queue's methods: each raises before anything is touched.

Every function names the argument in its message, raises ``TypeError`` for a value of the wrong
type and ``ValueError`` for a value of the right type but out of range, and otherwise returns the
value (as a ``float`` for times), so a method can validate everything before taking its lock.
"""

from __future__ import annotations

import math
import re
from typing import Final

#: The contract's id form: 1 to 128 ASCII letters, digits, ``_`` or ``-``.
ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")

#: Positive infinity: the bound of a finite time (a hot path compares with it, never calls).
INF: Final = math.inf


def is_number(value: object) -> bool:
    """An ``int`` or ``float`` but not a ``bool`` (``True`` is not a timeout)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_id(name: str, value: object) -> str:
    """A ``str`` matching :data:`ID_PATTERN`, returned as an exact ``str``.

    A ``str`` subclass is copied to a plain ``str`` (``str.__str__`` of the base class, so none
    of the subclass's methods run): the queue stores, hashes and compares only exact strings.
    """
    if type(value) is not str:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
        value = str.__str__(value)
    if ID_PATTERN.fullmatch(value) is None:
        raise ValueError(f"{name} must match [A-Za-z0-9_-]{{1,128}}, got {value!r}")
    return value


def to_finite(name: str, value: int | float) -> float:
    """``value`` as a finite ``float``, or ``ValueError`` naming ``name``.

    An ``int`` too large for a float is a ``ValueError`` here, never an ``OverflowError``, and
    its digits are not printed (``repr`` of a huge int is itself an error past 4300 digits).
    """
    try:
        f = float(value)
    except OverflowError:
        raise ValueError(
            f"{name} must be a finite number, got an int too large for a float"
        ) from None
    if math.isnan(f) or math.isinf(f):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return f


def check_time(name: str, value: object) -> float:
    """A finite number >= 0 (a duration or a point on a clock), as a ``float``."""
    if not is_number(value):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    assert isinstance(value, int | float)
    try:
        f = float(value)
    except OverflowError:
        raise ValueError(
            f"{name} must be a finite number >= 0, got an int too large for a float"
        ) from None
    if math.isnan(f) or math.isinf(f) or f < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return f


def check_later(name: str, now: float, delta: float) -> float:
    """``now + delta`` (a deadline or an end time), or ``ValueError`` naming ``name`` if that
    overflows to infinity: a finite timeout must give a finite time on this clock."""
    t = now + delta
    if t == math.inf:
        raise ValueError(f"{name} is too large: {now!r} + {delta!r} is not a finite time")
    return t


def check_optional_time(name: str, value: object) -> float | None:
    """``None`` or a finite number >= 0."""
    return None if value is None else check_time(name, value)


def check_int(name: str, value: object, minimum: int) -> int:
    """An ``int`` (not a ``bool``) >= ``minimum``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return value


def check_optional_int(name: str, value: object, minimum: int) -> int | None:
    """``None`` or an ``int`` >= ``minimum``."""
    return None if value is None else check_int(name, value, minimum)


def check_callable(name: str, value: object) -> None:
    """Something that can be called (a function, a bound method, an object with ``__call__``)."""
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {type(value).__name__}")


def check_bool(name: str, value: object) -> bool:
    """Exactly ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value
