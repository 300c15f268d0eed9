"""The import direction of the layers: ``spec`` imports no other layer, ``tla`` only ``spec``.

The TLA+ layer's Python (``tla/*.py``) reads TLC's output into the spec's values, so it imports
``spec``; were any library module of ``spec`` to import ``tla`` the two packages would import
each other (an import hidden inside a function hides the loop, it does not remove it). So the
check reads every import statement, at any depth, of every module. ``spec/__main__.py`` is the
command line, imported by no module: it may use ``tla`` (``--trace`` reads a TLC trace with
:func:`tla.explorer.load_trace`).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parent.parent
#: The project's packages: what an import of another layer starts with.
PACKAGES: Final = frozenset({"spec", "impl", "model_tests", "tla", "tools", "bench", "examples"})
#: What each layer's library modules may import of the project.
ALLOWED: Final = {"spec": frozenset({"spec"}), "tla": frozenset({"spec", "tla"})}
#: The entry points: run as ``python -m``, imported by nothing.
ENTRY_POINTS: Final = frozenset({"__main__.py"})


def imported(path: Path) -> set[str]:
    """The project packages ``path`` imports, at module level or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            names = [node.module]
        else:
            continue
        found |= {n.partition(".")[0] for n in names} & PACKAGES
    return found


def modules(layer: str) -> list[Path]:
    return sorted(p for p in (ROOT / layer).rglob("*.py") if p.name not in ENTRY_POINTS)


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_the_layers_below_it(layer: str) -> None:
    assert modules(layer), f"no modules in {layer}/?"
    wrong = {
        str(p.relative_to(ROOT)): sorted(bad)
        for p in modules(layer)
        if (bad := imported(p) - ALLOWED[layer])
    }
    assert wrong == {}, f"{layer} imports layers above it: {wrong}"


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "lazy.py"
    module.write_text("import json\n\ndef f() -> None:\n    from tla.counterexample import x\n")
    assert imported(module) == {"tla"}


def test_the_command_line_is_the_only_module_of_spec_that_uses_tla() -> None:
    assert imported(ROOT / "spec" / "__main__.py") == {"spec", "tla"}
