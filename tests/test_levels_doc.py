"""``docs/levels.md`` names what exists: its name map, its lists of parts and its hook counts.

The page's tables name the implementation's objects by short names (``Machine.release``,
``BaseQueue.receive``), defined in its "Short names" table, or in full (``impl.outcome.NOTHING``).
Every such name in an inline code span of the page must resolve (import, then ``getattr`` on the
class or, for an instance attribute, on an instance), and an impl column may not name a private
method without its class. The lists of parts must be complete: every public method of
``impl.machine.Machine`` is in the machine's table (the *FIFO hook* marks where its docstring
has them), every method ``impl.fifo_machine.FifoMachine`` and ``impl.fast_machine.FastMachine``
define is in their tables (marked as an override of ``Machine``'s or as new, correctly), every
public method of ``impl.system.System`` is in the system's table, and every public method of
the drivers' conditions (``Wakeups``, ``Conditions``, ``Futures``, ``Waiters``) is in the table
of the waits, with the mutants and test doubles that override it. The "broken by" columns, the
mutation page's catalogue and the pitfall page name the part each mutant really breaks
(``model_tests.mutants.broken_parts``, named after the ``impl`` class that defines it). The code
the page quotes is the code, and the scripts that count the hooks print what the page shows.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import pytest

from impl.aio import AsyncFifoQueue, AsyncQueue, Futures, Waiters
from impl.clock import FakeClock
from impl.driver import Wakeups
from impl.fast_machine import FastMachine
from impl.fifo import FifoQueue
from impl.fifo_machine import FifoMachine, FifoRecord
from impl.machine import Machine, Record
from impl.queue import Queue
from impl.system import System
from impl.threaded import BaseQueue, Conditions
from model_tests import mutants

ROOT: Final = Path(__file__).resolve().parents[1]
PAGE: Final = ROOT / "docs" / "levels.md"
MUTATION: Final = ROOT / "docs" / "mutation.md"
PITFALLS: Final = ROOT / "docs" / "pitfalls.md"

#: The modules whose queue classes override a machine's steps or the drivers' conditions: the
#: mutant catalogues, the scheduler's own mutants and the tests that inject a bug by subclassing.
OVERRIDERS: Final = (
    "model_tests.mutants",
    "model_tests.aio.mutants",
    "model_tests.schedule.local_mutants",
    "model_tests.tests.test_wakeup_mirror",
    "model_tests.tests.test_schedule",
)

#: The queue classes of ``impl`` (a subclass of one of them is a queue).
QUEUES: Final = (BaseQueue, AsyncQueue, AsyncFifoQueue)

#: The classes of the drivers' waits, whose public methods are the table of the waits.
WAITS: Final = (Wakeups, Conditions, Futures, Waiters)

#: Every mutant of the catalogue, by name.
CATALOGUE: Final[dict[str, type[Any]]] = {
    **mutants.MUTANTS,
    **mutants.FIFO_MUTANTS,
    **mutants.SYSTEM_MUTANTS,
    **mutants.ASYNC_MUTANTS,
}

_CODE: Final = re.compile(r"`([^`]+)`")
_FENCE: Final = re.compile(r"```.*?```", re.DOTALL)
_SCRIPT: Final = re.compile(
    r"```sh\n\.venv/bin/python - <<'EOF'\n(.*?)\nEOF\n```\n\n```text\n(.*?)\n```", re.DOTALL
)
_PYTHON: Final = re.compile(r"```python\n(.*?)\n```", re.DOTALL)


# -- reading the page -------------------------------------------------------------------------


def cells(row: str) -> list[str]:
    """The cells of a Markdown table row; ``\\|`` is a pipe inside a cell."""
    parts = re.split(r"(?<!\\)\|", row.strip())[1:-1]
    return [p.strip().replace("\\|", "|") for p in parts]


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every table of ``text`` outside fenced blocks: (header cells, rows of cells)."""
    found = []
    for m in re.finditer(r"^(\|.*\|)\n\|[-| :]+\|\n((?:\|.*\|\n?)+)", _FENCE.sub("", text), re.M):
        found.append((cells(m.group(1)), [cells(r) for r in m.group(2).splitlines()]))
    return found


def table(text: str, header: str) -> list[list[str]]:
    """The rows of the one table whose header row is ``header``."""
    (rows,) = [rows for head, rows in tables(text) if head == cells(header)]
    return rows


def spans(cell: str) -> list[str]:
    return _CODE.findall(cell)


TEXT: Final = PAGE.read_text()


@cache
def short_names() -> dict[str, type[Any]]:
    """The page's "Short names" table: short name -> the class, checked to live in its file."""
    names = {}
    for row in table(TEXT, "| short name | object | file |"):
        (short,), qualified, (file,) = spans(row[0]), spans(row[1])[0], spans(row[2])
        module, _, name = qualified.rpartition(".")
        obj = getattr(importlib.import_module(module), name)
        assert obj.__name__ == short == name, row
        assert Path(inspect.getsourcefile(obj) or "") == ROOT / file, f"{qualified} not in {file}"
        names[short] = obj
    return names


def samples() -> Iterator[object]:
    """One instance of each short-named class that has instance attributes the page names."""
    clock = FakeClock()
    queues: list[Any] = [Queue(clock=clock), FifoQueue(clock=clock), AsyncQueue(clock=clock)]
    try:
        for q in queues:
            yield q
            yield q.conditions
        yield Machine(1)
        yield FifoMachine(1)
        yield FastMachine(1)
        yield Record("a", None, 0.0)
        yield FifoRecord("a", None, 0.0, "g", 1)
    finally:
        for q in queues:
            q.close()


def resolve(ref: str) -> bool:
    """Whether the dotted name ``ref`` (a short name or ``impl.`` first) names an object."""
    head, *attrs = ref.split(".")
    obj: object
    if head == "impl":
        for cut in range(len(attrs), -1, -1):
            try:
                obj = importlib.import_module(".".join([head, *attrs[:cut]]))
            except ModuleNotFoundError:
                continue
            attrs = attrs[cut:]
            break
    else:
        obj = short_names()[head]
    for i, attr in enumerate(attrs):
        if hasattr(obj, attr):
            obj = getattr(obj, attr)
        elif i == 0 and isinstance(obj, type):  # an instance attribute
            cls = obj
            owners = [s for s in samples() if isinstance(s, cls)]
            if not any(hasattr(s, attr) for s in owners):
                return False
            obj = getattr(next(s for s in owners if hasattr(s, attr)), attr)
        else:
            return False
    return True


def references(code: str) -> list[str]:
    """The dotted names of the implementation in one inline code span (not file names)."""
    heads = "|".join(["impl", *short_names()])
    found = re.findall(rf"(?<![\w.])((?:{heads})(?:\.\w+)+)", code)
    return [r for r in found if not re.search(r"\.(tla|cfg|py|md)$", r)]


# -- the names ------------------------------------------------------------------------------


def test_the_short_names_are_the_impl_classes() -> None:
    names = short_names()
    wanted = {"Machine", "FifoMachine", "FastMachine", "System", "Outcome", "Effect", "Blocked"}
    wanted |= {"BaseQueue", "Conditions", "Wakeups", "AsyncQueue", "Futures", "Waiters"}
    assert wanted <= set(names), sorted(wanted - set(names))
    assert not issubclass(FifoQueue, Queue), "the page says FifoQueue is Queue's sibling"
    assert issubclass(FifoMachine, Machine) and issubclass(FastMachine, Machine)


def test_the_drivers_name_the_machines_and_conditions_the_page_says() -> None:
    assert Queue.machine_class is FastMachine
    assert FifoQueue.machine_class is FifoMachine
    assert BaseQueue.conditions_class is Conditions and Queue.conditions_class is Conditions
    assert AsyncQueue.conditions_class is Futures and Futures.waiters_class is Waiters
    assert Machine.self_check and not FastMachine.self_check
    assert issubclass(Conditions, Wakeups) and issubclass(Futures, Wakeups)


def test_every_name_of_the_implementation_on_the_page_exists() -> None:
    prose = _FENCE.sub("", TEXT)
    refs = [r for code in _CODE.findall(prose) for r in references(code)]
    assert len(refs) >= 300, len(refs)
    missing = sorted({r for r in refs if not resolve(r)})
    assert not missing, f"docs/levels.md names what impl does not have: {missing}"


def test_the_name_check_can_fail() -> None:
    assert resolve("Machine.release") and resolve("BaseQueue.receive")
    assert resolve("Machine.visible") and resolve("BaseQueue.mutex")  # instance attributes
    assert resolve("Conditions.mutex") and resolve("Machine.on_effect")
    assert resolve("impl.outcome.NOTHING") and resolve("impl.sweeper.sweep_forever")
    assert not resolve("Machine._release")
    assert not resolve("BaseQueue._sweeper_target")
    assert not resolve("impl.queue.Queue._deliver")
    assert not resolve("impl.core.Core") and not resolve("impl.shell.BaseQueue")
    assert references("`Queue.tla` and `ThreadedQueue.tla`") == []
    assert references("len(Machine.visible) + 1") == ["Machine.visible"]


def impl_cells() -> list[str]:
    """Every cell of an impl column (its header starts with "impl") of the page's tables."""
    out = []
    for head, rows in tables(TEXT):
        columns = [i for i, h in enumerate(head) if h.startswith("impl")]
        out += [row[i] for row in rows for i in columns]
    return out


def test_the_impl_columns_name_each_method_with_its_class() -> None:
    found = impl_cells()
    assert len(found) >= 50, len(found)
    named = 0
    for cell in found:
        for code in spans(cell):
            bare = re.findall(r"(?<![\w.])_[a-z]\w*", code)
            assert not bare, f"{code!r}: say whose method {bare} is (BaseQueue._x)"
            named += len(references(code))
    assert named >= 150, named


def test_the_quoted_step_is_the_machines_code() -> None:
    (quoted,) = [b for b in _PYTHON.findall(TEXT) if b.startswith("    def receive(self")]
    source = inspect.getsource(Machine.receive)
    (fn,) = ast.parse(textwrap.dedent(source)).body
    assert isinstance(fn, ast.FunctionDef)
    doc = fn.body[0]
    assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
    lines = source.splitlines()
    assert doc.end_lineno is not None
    del lines[doc.lineno - 1 : doc.end_lineno]
    assert quoted.splitlines() == lines


# -- the parts ------------------------------------------------------------------------------


def own_methods(cls: type, private: bool) -> set[str]:
    """The methods ``cls`` itself defines (static and class methods too): private (no dunders)
    or public."""
    out = set()
    for n, v in vars(cls).items():
        if isinstance(v, staticmethod | classmethod):
            v = v.__func__
        if inspect.isfunction(v) and n.startswith("_") == private and not n.startswith("__"):
            out.add(n)
    return out


def listed(rows: list[list[str]], prefixes: tuple[str, ...]) -> dict[str, list[str]]:
    """The methods named in the first column of ``rows`` (``Prefix.name``, one of
    ``prefixes``), each with its row."""
    out: dict[str, list[str]] = {}
    for row in rows:
        names = spans(row[0])
        assert names and all(n.split(".")[0] in prefixes for n in names), row
        for n in names:
            assert n not in out, f"{n} is listed twice"
            out[n] = row
    return out


def bare(names: dict[str, list[str]]) -> dict[str, list[str]]:
    """``names`` without their class: ``Machine.release`` -> ``release``."""
    return {n.partition(".")[2]: row for n, row in names.items()}


MACHINE_ROWS: Final = table(TEXT, "| step | what it is | TLA+ / spec | broken by |")
FIFO_ROWS: Final = table(
    TEXT, "| step | overrides | what FIFO changes | `QueueFifo.tla` / spec | broken by |"
)
FAST_ROWS: Final = table(TEXT, "| step | overrides | what it writes out |")
SYSTEM_ROWS: Final = table(TEXT, "| step | what it is | TLA+ / spec |")
WAIT_ROWS: Final = table(TEXT, "| part | what it is | overridden by |")


def test_every_public_method_of_the_machine_is_listed() -> None:
    steps = bare(listed(MACHINE_ROWS, ("Machine",)))
    public = own_methods(Machine, private=False)
    assert own_methods(Machine, private=True) == set(), "the machine's parts are all public"
    assert set(steps) == public, (sorted(public - set(steps)), sorted(set(steps) - public))
    assert {"send", "receive", "release", "deliver", "stamp", "live", "fire_due"} <= set(steps)
    for name, row in steps.items():
        hook = "*FIFO hook.*" in (getattr(Machine, name).__doc__ or "")
        assert ("*FIFO hook*" in row[1]) == hook, f"Machine.{name}: FIFO hook is {hook}"


def overrides(rows: list[list[str]], sub: type, base: type) -> set[str]:
    """Check that ``rows`` list every method ``sub`` defines, each marked "yes" if it overrides
    ``base``'s and "new" if not; the names listed."""
    steps = bare(listed(rows, (sub.__name__,)))
    defined = own_methods(sub, private=False)
    assert set(steps) == defined, (sorted(defined - set(steps)), sorted(set(steps) - defined))
    for name, row in steps.items():
        mark = "yes" if name in own_methods(base, private=False) else "new"
        assert row[1] == mark, f"{sub.__name__}.{name}: {row[1]!r}, not {mark!r}"
    assert own_methods(sub, private=True) == set()
    return set(steps)


def test_the_fifo_table_lists_what_the_fifo_machine_overrides_and_adds() -> None:
    steps = overrides(FIFO_ROWS, FifoMachine, Machine)
    assert {"deliverable", "heads", "requeue", "left_flight", "locked"} <= steps


def test_the_fast_machine_table_lists_what_it_writes_out() -> None:
    steps = overrides(FAST_ROWS, FastMachine, Machine)
    assert {"send", "receive", "delete"} <= steps


def test_the_system_table_lists_every_step_across_queues() -> None:
    steps = bare(listed(SYSTEM_ROWS, ("System",)))
    public = own_methods(System, private=False)
    assert set(steps) == public, (sorted(public - set(steps)), sorted(set(steps) - public))
    assert {"claim", "dead_letter", "redrive_move"} <= set(steps)


def overriders() -> list[type[Any]]:
    """The queue classes of :data:`OVERRIDERS` (each defined in its module)."""
    modules: list[ModuleType] = [importlib.import_module(m) for m in OVERRIDERS]
    return [
        cls
        for m in modules
        for cls in vars(m).values()
        if inspect.isclass(cls) and issubclass(cls, QUEUES) and cls.__module__ == m.__name__
    ]


def owner(klass: type, name: str) -> str:
    """``Class.name`` for the ``impl`` class nearest ``klass`` (in its MRO) that defines
    ``name``: whose part a subclass's ``name`` overrides."""
    for k in klass.__mro__:
        if k.__module__.startswith("impl.") and name in vars(k):
            return f"{k.__name__}.{name}"
    raise AssertionError(f"{klass.__name__}.{name} overrides nothing of impl")


def broken(cls: type[Any]) -> set[str]:
    """What the queue class ``cls`` breaks (``model_tests.mutants.broken_parts``, its methods
    only), each named after the ``impl`` class that defines it: ``Machine.to_delete``,
    ``FifoMachine.requeue``, ``Conditions.wait``, ``BaseQueue.retry``."""
    return {
        owner(klass, name)
        for klass, name in mutants.broken_parts(cls)
        if inspect.isfunction(getattr(klass, name))
    }


def test_the_override_finder_can_fail() -> None:
    assert broken(mutants.DeleteByIdQueue) == {"Machine.to_delete"}
    assert broken(mutants.PollingSweeperQueue) == {"Conditions.wait"}
    assert broken(mutants.SilentUnlockFifoQueue) == {"Machine.finish"}
    assert broken(mutants.TailReleaseFifoQueue) == {"FifoMachine.requeue"}
    assert broken(mutants.OneWakeDeadLetterQueue) == {"Machine.moves"}
    assert broken(mutants.WithdrawnKeptAsyncQueue) == {"Waiters.live"}
    assert broken(mutants.TwoStepMoveQueue) == {
        "Machine.release",
        "BaseQueue.retry",
        "BaseQueue.change_visibility",
        "BaseQueue.sweep",
    }
    assert broken(Queue) == set() and broken(AsyncQueue) == set()


def test_no_mutant_or_test_double_overrides_a_private_method() -> None:
    found = overriders()
    assert len(found) >= len(CATALOGUE) + 3, len(found)
    for cls in found:
        private = {p for p in broken(cls) if p.partition(".")[2].startswith("_")}
        assert not private, f"{cls.__name__} overrides {sorted(private)}"


def test_the_table_of_the_waits_lists_every_method_of_the_conditions() -> None:
    parts = listed(WAIT_ROWS, tuple(k.__name__ for k in WAITS))
    public = {f"{k.__name__}.{n}" for k in WAITS for n in own_methods(k, private=False)}
    assert set(parts) == public, (sorted(public - set(parts)), sorted(set(parts) - public))
    overridden: dict[str, set[str]] = {}
    for cls in overriders():
        for part in broken(cls):
            if part.partition(".")[0] in {k.__name__ for k in WAITS}:
                overridden.setdefault(part, set()).add(cls.__name__)
    assert {"Conditions.wait", "Futures.pass_on", "Waiters.live"} <= set(overridden)
    for name, row in parts.items():
        by = {s for s in spans(row[2]) if not s.endswith(".py")}
        assert by == overridden.get(name, set()), f"{name} overridden by {sorted(by)}"


def broken_by(rows: list[list[str]], prefix: str) -> None:
    """The "broken by" column of ``rows`` names exactly the mutants that break the row's
    steps."""
    for row in rows:
        steps = {f"{prefix}.{n.split('.')[-1]}" for n in spans(row[0])}
        named = set(spans(row[-1]))
        assert named <= set(CATALOGUE), named - set(CATALOGUE)
        wanted = {name for name, cls in CATALOGUE.items() if broken(cls) & steps}
        assert named == wanted, f"{sorted(steps)}: broken by {sorted(wanted)}, not {named}"


def test_the_broken_by_columns_name_the_mutants_of_each_step() -> None:
    broken_by(MACHINE_ROWS, "Machine")
    broken_by(FIFO_ROWS, "FifoMachine")
    machines = {p for cls in CATALOGUE.values() for p in broken(cls) if "Machine." in p}
    rows = {f"Machine.{n}" for n in bare(listed(MACHINE_ROWS, ("Machine",)))}
    rows |= {f"FifoMachine.{n}" for n in bare(listed(FIFO_ROWS, ("FifoMachine",)))}
    assert machines <= rows, sorted(machines - rows)


def test_every_single_queue_and_fifo_mutant_breaks_one_part() -> None:
    for name, cls in {**mutants.MUTANTS, **mutants.FIFO_MUTANTS}.items():
        assert len(broken(cls)) == 1, f"{name} breaks {sorted(broken(cls))}"


# -- the other pages that say what a mutant breaks ------------------------------------------


def test_the_mutation_page_names_the_part_each_mutant_breaks() -> None:
    text = MUTATION.read_text()
    rows = table(text, "| mutant | seed pitfall (or bug) | step | the check that fails, and how |")
    assert len(rows) >= 20
    for row in rows:
        (name,) = spans(row[0])
        assert set(spans(row[2])) == broken(CATALOGUE[name]), f"{name}: {row[2]}"
    assert {spans(r[0])[0] for r in rows} == set(mutants.MUTANTS), "the table is the catalogue"
    header = cells("| mutant | bug | what it overrides | the check that fails, and how |")
    others = [row for head, rows in tables(text) if head == header for row in rows]
    for row in others:
        (name,) = spans(row[0])
        assert set(spans(row[2])) == broken(CATALOGUE[name]), f"{name}: {row[2]}"
    wanted = set(mutants.SYSTEM_MUTANTS) | set(mutants.ASYNC_MUTANTS)
    assert {spans(r[0])[0] for r in others} == wanted, "the system and asyncio tables"


def test_the_pitfall_page_names_the_part_each_mutant_breaks() -> None:
    text = _FENCE.sub("", PITFALLS.read_text())
    said = re.findall(r"`(\w+Queue)` \((?:step |seam |wait |effect )?`([\w.]+)`", text)
    assert len(said) >= 14, said
    for name, part in said:
        cls = CATALOGUE[name]
        own = {
            f"{klass.__name__}.{attr}"
            for klass, attr in mutants.broken_parts(cls)
            if inspect.isfunction(getattr(klass, attr))
        }
        assert part in broken(cls) | own, f"pitfalls.md: {name} does not break {part}"
    assert not re.search(r"\bhook `_", text), "pitfalls.md names an old hook"


# -- the counts ------------------------------------------------------------------------------

SCRIPTS: Final = _SCRIPT.findall(TEXT)

#: The commits whose parents the "before" script reads: the shell/core split and the machine.
HISTORY: Final = ("c57cf22~1:impl/queue.py", "acfe843~1:impl/shell.py")


def _has_history() -> bool:
    for blob in HISTORY:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "cat-file", "-e", blob], capture_output=True, check=False
        )
        if done.returncode != 0:
            return False
    return True


def _run(script: str) -> str:
    done = subprocess.run(
        [sys.executable, "-"],
        input=script + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.rstrip("\n")


def test_the_page_counts_the_hooks_before_and_after() -> None:
    assert len(SCRIPTS) == 2
    before, after = SCRIPTS
    assert all(c in before[0] for c in ("c57cf22~1", "acfe843~1", "git"))
    assert re.search(r"^Queue: 26 documented hooks, 42 private methods$", before[1], re.M)
    assert re.search(r"^BaseQueue: 9 named seams, \d+ private methods$", before[1], re.M)
    assert re.search(r"^Machine: \d+ public methods", after[1], re.M)


def test_the_count_of_the_hooks_after_is_what_the_code_gives() -> None:
    script, output = SCRIPTS[1]
    assert _run(script) == output
    assert f"Machine: {len(own_methods(Machine, private=False))} public methods" in output
    assert f"{len(CATALOGUE)} mutants break " in output
    assert output.endswith(", 0 private methods"), "a mutant overrides a private method"
    for waits in (Conditions, Futures, Waiters):
        methods = [n for n in vars(waits) if n in own_methods(waits, private=False)]
        assert f"\n{waits.__name__}: {', '.join(methods)}\n" in output, waits.__name__


@pytest.mark.skipif(not _has_history(), reason="needs the git history (commits c57cf22, acfe843)")
def test_the_count_of_the_hooks_before_is_what_the_old_code_gives() -> None:
    script, output = SCRIPTS[0]
    assert _run(script) == output
