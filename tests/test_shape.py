"""The shape of the code, checked: what the library modules may import, and (below) what the
comments may cite.

- No library module of ``model_tests/`` (outside ``model_tests/tests/``) imports a test module:
  the wheel ships the library without its tests, so such an import breaks an installed copy.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]


def library_modules(package: str) -> Iterator[Path]:
    """Every ``.py`` file of ``package`` outside its ``tests`` folders."""
    for path in sorted((ROOT / package).rglob("*.py")):
        if "tests" not in path.relative_to(ROOT).parts:
            yield path


def imported(tree: ast.AST, module: str) -> Iterator[tuple[int, str]]:
    """``(line, dotted name)`` of every import in ``tree`` (of the module named ``module``),
    relative imports resolved, anywhere in the module (a function's lazy import too)."""
    package = module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def imports_of_tests(source: str, module: str) -> list[str]:
    """The imports of test modules (``model_tests.tests...``) in ``source``."""
    return [
        f"{module}:{line}: imports {name}"
        for line, name in imported(ast.parse(source), module)
        if name == "model_tests.tests" or name.startswith("model_tests.tests.")
    ]


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def test_no_library_module_of_model_tests_imports_a_test_module() -> None:
    found = [
        hit
        for path in library_modules("model_tests")
        for hit in imports_of_tests(path.read_text(), _module_name(path))
    ]
    assert found == []


def test_the_import_check_sees_every_form_of_import() -> None:
    source = (
        "import model_tests.tests.replay\n"
        "from model_tests.tests.test_lockstep_fifo import FifoMachine\n"
        "from model_tests import tests\n"
        "from .tests import test_schedule\n"
        "def f():\n    from ..tests import replay\n"
        "import model_tests.testsuite\n"
    )
    hits = imports_of_tests(source, "model_tests.schedule.explore")
    assert [h.split(":")[1] for h in hits] == ["1", "2", "3", "6"], hits
    hits = imports_of_tests("from .tests import test_schedule\n", "model_tests.lockstep")
    assert hits == ["model_tests.lockstep:1: imports model_tests.tests.test_schedule"]
