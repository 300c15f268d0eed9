"""Read the TLA+ values that TLC prints (in traces and in ``-dump dot`` state labels).

TLC prints a finite value in one of these forms, which is all this parser accepts:

  ``42`` ``-1``           integers                  -> ``int``
  ``"text"``              strings                   -> ``str``
  ``TRUE`` ``FALSE``      booleans                  -> ``bool``
  ``a``                   model values              -> :class:`ModelValue`
  ``<<x, y>>``            sequences and tuples      -> ``tuple``
  ``{x, y}``              sets                      -> ``frozenset``
  ``[f |-> x, g |-> y]``  records                   -> :class:`Record` (field -> value)
  ``(k :> x @@ j :> y)``  functions                 -> :class:`Function` (key -> value)

A function whose domain is ``1..n`` is printed as a sequence, and so is the empty function
(``<< >>``): the caller that expects a function must accept an empty tuple for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeAlias


@dataclass(frozen=True, slots=True)
class ModelValue:
    """A TLC model value, such as the ids ``a`` and ``b`` or the sentinel ``None``."""

    name: str

    def __str__(self) -> str:
        return self.name


class Record(dict[str, "Value"]):
    """A TLA+ record: field name -> value."""


class Function(dict["Value", "Value"]):
    """A TLA+ function printed with ``:>`` and ``@@``: argument -> value."""


Value: TypeAlias = (
    "int | str | bool | ModelValue | tuple[Value, ...] | frozenset[Value] | Record | Function"
)

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<int>-?\d+)
      | (?P<str>"(?:[^"\\]|\\.)*")
      | (?P<sym><<|>>|\|->|:>|@@|[\[\]{}(),])
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot read a TLA+ value at {text[pos : pos + 30]!r}")
        out.append(m.group(m.lastgroup or "name"))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise ValueError(f"expected {expected or 'a value'}, got {tok!r}")
        self.i += 1
        return tok

    def items(self, close: str) -> list[Value]:
        out: list[Value] = []
        if self.peek() == close:
            self.take(close)
            return out
        while True:
            out.append(self.value())
            if self.take() == close:
                return out

    def value(self) -> Value:
        tok = self.take()
        if tok == "<<":
            return tuple(self.items(">>"))
        if tok == "{":
            return frozenset(self.items("}"))
        if tok == "[":
            rec = Record()
            while True:
                name = self.take()
                self.take("|->")
                rec[name] = self.value()
                if self.take() == "]":
                    return rec
        if tok == "(":
            fn = Function()
            while True:
                key = self.value()
                self.take(":>")
                fn[key] = self.value()
                if self.take() == ")":
                    return fn
        if tok.startswith('"'):
            return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), tok[1:-1])
        if tok[0] == "-" or tok.isdigit():
            return int(tok)
        if tok in ("TRUE", "FALSE"):
            return tok == "TRUE"
        if tok[0].isalpha() or tok[0] == "_":
            return ModelValue(tok)
        raise ValueError(f"unexpected {tok!r}")


def parse_value(text: str) -> Value:
    """The value printed as ``text``; ``ValueError`` if it is not one whole TLA+ value."""
    p = _Parser(text)
    v = p.value()
    if p.peek() is not None:
        raise ValueError(f"trailing text after a TLA+ value: {p.toks[p.i :]!r}")
    return v


def parse_state(text: str) -> dict[str, Value]:
    """A state printed as ``/\\ x = 1`` conjuncts (one per variable) -> variable -> value."""
    out: dict[str, Value] = {}
    for part in re.split(r"(?:^|\n)\s*/\\\s+", text.strip()):
        if not part.strip():
            continue
        name, sep, rest = part.partition("=")
        if not sep:
            raise ValueError(f"not a variable assignment: {part!r}")
        out[name.strip()] = parse_value(rest)
    return out
