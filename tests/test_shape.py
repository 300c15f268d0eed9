"""The shape of the code, checked: what the library modules may import, and (below) what the
comments may cite.

- No library module of ``model_tests/`` (outside ``model_tests/tests/``) imports a test module:
  the wheel ships the library without its tests, so such an import breaks an installed copy.
- No public operation of a queue builds a closure cell: a function holding a lambda over its
  locals makes a cell for each of them on every call, the calls that never wait included (a
  wait loop's step comes from ``impl.driver.step_of`` instead).
"""

from __future__ import annotations

import ast
import inspect
import re
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


# -- what the comments cite ----------------------------------------------------------------------

#: The shipped layers and the repository's own library code: their comments and docstrings cite
#: contract sections (docs/contract.md), never issue numbers; history lives in CHANGELOG.md.
CITING_PACKAGES: Final = ("impl", "spec", "tla", "model_tests", "sqs_endpoint", "bench", "tools")
ISSUE_REFERENCE: Final = re.compile(r"\bissues? \d+|\bissue-\d+|\bdesign note", re.IGNORECASE)


def issue_references(source: str, where: str) -> list[str]:
    """Each line of ``source`` that cites an issue number or the (absent) design note."""
    return [
        f"{where}:{number}: {line.strip()}"
        for number, line in enumerate(source.splitlines(), 1)
        if ISSUE_REFERENCE.search(line)
    ]


def test_the_check_finds_an_issue_reference() -> None:
    assert issue_references("x = 1\n# as issue 25 says\n", "m.py") == ["m.py:2: # as issue 25 says"]
    assert issue_references('"""Design note rule 4."""\n', "m.py") != []
    assert issue_references("# contract section 7.4\n", "m.py") == []


def test_library_code_cites_contract_sections_not_issues() -> None:
    found = [
        hit
        for package in CITING_PACKAGES
        for path in library_modules(package)
        for hit in issue_references(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert found == [], "\n".join(found)


# -- how long a function of impl/ is -------------------------------------------------------------

#: The longest a function of ``impl/`` may be, in lines (its ``def`` to its last line).
MAX_FUNCTION_LINES: Final = 60
#: The functions of ``impl/`` over that today, with their length: the list may only shrink (a new
#: long function, or one grown longer, fails; one shortened must leave the list).
LONG_FUNCTIONS: Final[dict[str, int]] = {}


def long_functions(source: str, where: str) -> dict[str, int]:
    """``{"where:Class.function": lines}`` for each function of ``source`` over the limit."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                assert child.end_lineno is not None
                lines = child.end_lineno - child.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found[f"{where}:{prefix}{child.name}"] = lines
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(source), "")
    return found


def test_the_length_check_counts_a_long_function() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(f"class C:\n  def f(self):\n{body}", "m.py") == {
        "m.py:C.f": MAX_FUNCTION_LINES + 1
    }
    assert long_functions("def g():\n    return 1\n", "m.py") == {}


def test_no_function_of_impl_grows_past_the_limit() -> None:
    found: dict[str, int] = {}
    for path in library_modules("impl"):
        found |= long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    grown = {k: v for k, v in found.items() if v > LONG_FUNCTIONS.get(k, MAX_FUNCTION_LINES)}
    assert grown == {}, f"over {MAX_FUNCTION_LINES} lines: {grown}"
    gone = sorted(set(LONG_FUNCTIONS) - set(found))
    assert gone == [], f"no longer over the limit: remove from LONG_FUNCTIONS: {gone}"


def test_no_public_operation_of_a_queue_builds_a_closure_cell() -> None:
    import impl

    queues = [getattr(impl, name) for name in impl.__all__ if name.endswith("Queue")]
    assert {q.__name__ for q in queues} >= {"Queue", "FifoQueue", "AsyncQueue", "AsyncFifoQueue"}
    cells = {
        f"{q.__name__}.{name}": f.__code__.co_cellvars
        for q in queues
        for name in dir(q)
        if not name.startswith("_")
        and inspect.isfunction(f := getattr(q, name))
        and f.__code__.co_cellvars
    }
    assert cells == {}, f"closure cells built on every call: {cells}"


def test_the_cell_check_sees_a_function_over_a_local() -> None:
    def operation(x: int) -> int:
        def step(now: int) -> int:
            return now + x

        return step(0)

    assert operation.__code__.co_cellvars == ("x",)
