"""The shape of ``impl/``, checked: no module reads another module's private names or another
object's private attributes.

A name that starts with ``_`` (and is not a dunder, ``__x__``) belongs to the module or the
object that defines it. Inside ``impl/`` a collaborator that needs one (the sweeper, the fork
handlers, the system of queues, the asyncio driver, a redrive) goes through a public method or
attribute of the owner whose docstring states its contract, so the owner's invariants stay in
the owner's code. The check, per ``impl/*.py`` file:

- an attribute ``x._name`` is a violation unless ``x`` is the bare name ``self`` or ``cls``
  (so ``self._core._ids``, ``dest._core``, ``super()._x``, ``type(self)._x`` all are; a
  name-mangled ``__x`` is private too);
- ``from impl.x import _name`` (or ``from .x import _name``) of a private name is a violation.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
OWN: Final = frozenset({"self", "cls"})


def is_private(name: str) -> bool:
    """True for ``_x`` and ``__x``, False for a public name and for a dunder ``__x__``."""
    dunder = name.startswith("__") and name.endswith("__") and len(name) > 4
    return name.startswith("_") and not dunder


def private_reads(source: str, module: str) -> list[str]:
    """Every read of another object's private attribute, and every import of a private name
    from the ``impl`` package, in ``source`` (the text of the module ``module``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in OWN):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level or base == "impl" or base.startswith("impl."):
                found.extend(
                    (node.lineno, f"imports {alias.name}")
                    for alias in node.names
                    if is_private(alias.name)
                )
    return [f"{module}:{line}: {what}" for line, what in sorted(found)]


def test_the_check_finds_every_form_of_private_read() -> None:
    source = (
        "from impl.core import _helper\n"  # 1
        "from .timers import _order, Public\n"  # 2
        "import impl.core as core\n"
        "class A:\n"
        "    def f(self, dest, q, cls):\n"
        "        self._x = 1\n"  # allowed: own attribute
        "        cls._y\n"  # allowed: own class attribute
        "        self.__mangled\n"  # allowed: own name-mangled attribute
        "        self.__init__\n"  # allowed: dunder
        "        dest.__class__\n"  # allowed: dunder of another object
        "        self._core._ids\n"  # 11
        "        dest._core\n"  # 12
        "        q._lock.acquire()\n"  # 13
        "        super()._x()\n"  # 14
        "        type(self)._x\n"  # 15
        "        self._inner._wake\n"  # 16
        "        core._private\n"  # 17
        "        dest.__secret\n"  # 18
        "        dest.public\n"
    )
    hits = private_reads(source, "m")
    assert [int(h.split(":")[1]) for h in hits] == [1, 2, 11, 12, 13, 14, 15, 16, 17, 18], hits
    assert "m:2: imports _order" in hits
    assert "m:11: self._core._ids" in hits
    assert private_reads("class A:\n    def f(self):\n        return self._x\n", "m") == []
    assert private_reads("from os import _exit\n", "m") == []  # not the impl package


def test_no_module_of_impl_reads_a_private_name_of_another() -> None:
    found = [
        hit
        for path in sorted((ROOT / "impl").glob("*.py"))
        for hit in private_reads(path.read_text(), f"impl/{path.name}")
    ]
    assert found == []
