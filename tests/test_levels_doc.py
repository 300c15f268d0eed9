"""``docs/levels.md`` names what exists: its name map, its lists of seams and its hook counts.

The page's tables name the implementation's objects by short names (``Core.release``,
``BaseQueue.receive``), defined in its "Short names" table, or in full (``impl.core.Wake``).
Every such name in an inline code span of the page must resolve (import, then ``getattr`` on the
class or, for an instance attribute, on an instance), and an impl column may not name a private
method without its class. The seam lists must be complete: every public method of
``impl.core.Core`` is in the core's table, every method ``impl.fifo_core.FifoCore`` defines is in
the FIFO table (marked as an override of ``Core``'s or as new, correctly), and the shell's table
holds every seam ``impl/shell.py``'s docstring names and every shell method a mutant or a test
queue overrides. The "broken by" columns, the mutation page's catalogue and the pitfall page name
the step each mutant really overrides. The scripts that count the hooks print what the page shows.
"""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import pytest

import impl.shell
from impl.clock import FakeClock
from impl.core import Core
from impl.fifo import FifoQueue
from impl.fifo_core import FifoCore, FifoRecord
from impl.queue import Queue
from impl.shell import BaseQueue
from model_tests import mutants

ROOT: Final = Path(__file__).resolve().parents[1]
PAGE: Final = ROOT / "docs" / "levels.md"
MUTATION: Final = ROOT / "docs" / "mutation.md"
PITFALLS: Final = ROOT / "docs" / "pitfalls.md"

#: The modules whose queue classes override the shell's seams or a core's steps: the mutant
#: catalogue, the scheduler's own mutants and the tests that inject a bug by subclassing.
OVERRIDERS: Final = (
    "model_tests.mutants",
    "model_tests.schedule.local_mutants",
    "model_tests.tests.test_wakeup_mirror",
    "model_tests.tests.test_schedule",
)

_CODE: Final = re.compile(r"`([^`]+)`")
_FENCE: Final = re.compile(r"```.*?```", re.DOTALL)
_SCRIPT: Final = re.compile(
    r"```sh\n\.venv/bin/python - <<'EOF'\n(.*?)\nEOF\n```\n\n```text\n(.*?)\n```", re.DOTALL
)


# -- reading the page -------------------------------------------------------------------------


def cells(row: str) -> list[str]:
    """The cells of a Markdown table row; ``\\|`` is a pipe inside a cell."""
    parts = re.split(r"(?<!\\)\|", row.strip())[1:-1]
    return [p.strip().replace("\\|", "|") for p in parts]


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every table of ``text`` outside fenced blocks: (header cells, rows of cells)."""
    found = []
    for m in re.finditer(r"^(\|.*\|)\n\|[-| ]+\|\n((?:\|.*\|\n?)+)", _FENCE.sub("", text), re.M):
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
    queues: list[BaseQueue[Any]] = [Queue(clock=clock), FifoQueue(clock=clock)]
    try:
        yield from queues
        yield Core(1, None, None)
        yield FifoCore(1, None, None)
        yield FifoRecord("a", None, "g", 1)
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
            obj = getattr(owners[0], attr)
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
    assert {"Core", "FifoCore", "BaseQueue", "Queue", "FifoQueue", "Record"} <= set(names)
    assert not issubclass(FifoQueue, Queue), "the page says FifoQueue is Queue's sibling"


def test_every_name_of_the_implementation_on_the_page_exists() -> None:
    prose = _FENCE.sub("", TEXT)
    refs = [r for code in _CODE.findall(prose) for r in references(code)]
    assert len(refs) >= 200, len(refs)
    missing = sorted({r for r in refs if not resolve(r)})
    assert not missing, f"docs/levels.md names what impl does not have: {missing}"


def test_the_name_check_can_fail() -> None:
    assert resolve("Core.release") and resolve("BaseQueue.receive")
    assert resolve("Core.visible") and resolve("BaseQueue.mutex")  # instance attributes
    assert resolve("impl.core.Wake") and resolve("impl.sweeper.sweep_forever")
    assert not resolve("Core._release")
    assert not resolve("BaseQueue._sweeper_target")
    assert not resolve("impl.queue.Queue._deliver")
    assert references("`Queue.tla` and `ThreadedQueue.tla`") == []
    assert references("len(Core.visible) + 1") == ["Core.visible"]


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
            assert not bare, f"{code!r}: say whose method {bare} is (Core._x, BaseQueue._x)"
            named += len(references(code))
    assert named >= 150, named


# -- the seams ------------------------------------------------------------------------------


def own_methods(cls: type, private: bool) -> set[str]:
    """The methods ``cls`` itself defines: private (no dunders) or public."""
    return {
        n
        for n, v in vars(cls).items()
        if inspect.isfunction(v) and n.startswith("_") == private and not n.startswith("__")
    }


def listed(rows: list[list[str]], prefix: str) -> dict[str, list[str]]:
    """The methods named in the first column of ``rows`` (``prefix.name``), each with its row."""
    out: dict[str, list[str]] = {}
    for row in rows:
        names = spans(row[0])
        assert names and all(n.startswith(prefix + ".") for n in names), row
        for n in names:
            assert n not in out, f"{n} is listed twice"
            out[n.removeprefix(prefix + ".")] = row
    return out


CORE_ROWS: Final = table(TEXT, "| step | what it is | TLA+ / spec | broken by |")
FIFO_ROWS: Final = table(
    TEXT, "| step | overrides | what FIFO changes | `QueueFifo.tla` / spec | broken by |"
)
SHELL_ROWS: Final = table(TEXT, "| seam | what it is | overridden by |")


def test_every_public_method_of_the_core_is_listed() -> None:
    steps = listed(CORE_ROWS, "Core")
    public = own_methods(Core, private=False)
    assert own_methods(Core, private=True) == set(), "the core's seams are its public methods"
    assert set(steps) == public, (sorted(public - set(steps)), sorted(set(steps) - public))
    assert {"release", "deliver", "stamp", "live", "arm", "expire", "fire_delay"} <= set(steps)


def test_the_fifo_table_lists_what_the_fifo_core_overrides_and_adds() -> None:
    steps = listed(FIFO_ROWS, "FifoCore")
    defined = own_methods(FifoCore, private=False)
    assert set(steps) == defined, (sorted(defined - set(steps)), sorted(set(steps) - defined))
    for name, row in steps.items():
        overrides = name in own_methods(Core, private=False)
        assert row[1] == ("yes" if overrides else "new"), f"FifoCore.{name}: {row[1]!r}"
    assert own_methods(FifoCore, private=True) == set()
    assert {"release", "deliver", "place", "locked", "wake_group"} <= set(steps)


def overriders() -> list[type[BaseQueue[Any]]]:
    """The queue classes of :data:`OVERRIDERS` (each defined in its module)."""
    modules: list[ModuleType] = [importlib.import_module(m) for m in OVERRIDERS]
    return [
        cls
        for m in modules
        for cls in vars(m).values()
        if inspect.isclass(cls) and issubclass(cls, BaseQueue) and cls.__module__ == m.__name__
    ]


def broken(cls: type[BaseQueue[Any]]) -> set[str]:
    """What ``cls`` overrides: its own shell methods (``BaseQueue._name``) and, when it names its
    own core, that core's own steps (``Core.name`` or ``FifoCore.name``: whose step it is)."""
    out = {
        f"BaseQueue.{n}"
        for n, v in vars(cls).items()
        if inspect.isfunction(v) and n != "__init__" and hasattr(BaseQueue, n)
    }
    core = vars(cls).get("_core_class")
    if core is None:
        return out
    impl_cores = [c for c in core.__mro__ if c in (FifoCore, Core)]
    for k in core.__mro__[: core.__mro__.index(impl_cores[0])]:
        for n, v in vars(k).items():
            # whose step it is: the nearest impl core that defines it (none: a helper)
            owner = next((c for c in impl_cores if n in vars(c)), None)
            if inspect.isfunction(v) and n != "__init__" and owner is not None:
                out.add(f"{owner.__name__}.{n}")
    return out


def shell_docstring_seams() -> set[str]:
    named = (impl.shell.__doc__ or "").partition("Seams for the mutant catalogue")[2]
    return set(re.findall(r"``(_\w+)\(", named.partition("\n\n")[0]))


def test_the_shell_table_lists_every_seam() -> None:
    seams = listed(SHELL_ROWS, "BaseQueue")
    named = shell_docstring_seams()
    assert {"_notify", "_wait", "_wait_for_room", "_sleep_until"} <= named
    assert named <= set(seams), f"seams of impl/shell.py missing: {sorted(named - set(seams))}"
    classes = {cls.__name__: cls for cls in overriders()}
    overridden: dict[str, set[str]] = {}
    for cls in classes.values():
        for ref in broken(cls):
            if ref.startswith("BaseQueue."):
                overridden.setdefault(ref.removeprefix("BaseQueue."), set()).add(cls.__name__)
    for name, row in seams.items():
        assert name.startswith("_") and name in own_methods(BaseQueue, private=True), name
        assert name in named or name in overridden, f"{name} is neither named nor overridden"
        by = {s for s in spans(row[2]) if not s.endswith(".py")}
        assert by == overridden.get(name, set()), f"BaseQueue.{name} overridden by {by}"
    assert set(overridden) <= set(seams), sorted(set(overridden) - set(seams))


def broken_by(rows: list[list[str]], prefix: str) -> None:
    """The "broken by" column of ``rows`` names exactly the mutants that override the row's
    steps."""
    catalogue = {**mutants.MUTANTS, **mutants.FIFO_MUTANTS}
    for row in rows:
        steps = {f"{prefix}.{n.split('.')[-1]}" for n in spans(row[0])}
        named = set(spans(row[-1]))
        assert named <= set(catalogue), named - set(catalogue)
        wanted = {name for name, cls in catalogue.items() if broken(cls) & steps}
        assert named == wanted, f"{sorted(steps)}: broken by {sorted(wanted)}, not {named}"


def test_the_broken_by_columns_name_the_mutants_of_each_step() -> None:
    broken_by(CORE_ROWS, "Core")
    broken_by(FIFO_ROWS, "FifoCore")
    catalogue = {**mutants.MUTANTS, **mutants.FIFO_MUTANTS}
    for name, cls in catalogue.items():
        assert len(broken(cls)) == 1, f"{name} overrides {sorted(broken(cls))}"


def test_the_override_finder_can_fail() -> None:
    assert broken(mutants.DeleteByIdQueue) == {"Core.to_delete"}
    assert broken(mutants.PollingSweeperQueue) == {"BaseQueue._sleep_until"}
    assert broken(mutants.SilentUnlockFifoQueue) == {"FifoCore.delete"}
    assert broken(mutants.TailReleaseFifoQueue) == {"FifoCore.place"}
    assert broken(Queue) == set()


# -- the other pages that say what a mutant overrides -----------------------------------------


def test_the_mutation_page_names_the_step_each_mutant_overrides() -> None:
    rows = table(
        MUTATION.read_text(),
        "| mutant | seed pitfall (or bug) | step | the check that fails, and how |",
    )
    assert len(rows) >= 20
    catalogue = {**mutants.MUTANTS, **mutants.FIFO_MUTANTS}
    for row in rows:
        (name,) = spans(row[0])
        assert set(spans(row[2])) == broken(catalogue[name]), f"{name}: {row[2]}"
    assert {spans(r[0])[0] for r in rows} == set(mutants.MUTANTS), "the table is the catalogue"


def test_the_pitfall_page_names_the_step_each_mutant_overrides() -> None:
    text = _FENCE.sub("", PITFALLS.read_text())
    said = re.findall(r"`(\w+Queue)` \((?:step |seam )?`([\w.]+)`", text)
    assert len(said) >= 14, said
    catalogue = {**mutants.MUTANTS, **mutants.FIFO_MUTANTS}
    for name, step in said:
        assert step in broken(catalogue[name]), f"pitfalls.md: {name} does not override {step}"
    assert not re.search(r"\bhook `_", text), "pitfalls.md names an old hook"


# -- the counts ------------------------------------------------------------------------------

SCRIPTS: Final = _SCRIPT.findall(TEXT)


def _has_history() -> bool:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", "c57cf22~1:impl/queue.py"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


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
    assert "c57cf22~1" in before[0] and "git" in before[0]
    assert re.search(r"^Queue: 26 documented hooks, 42 private methods$", before[1], re.M)
    assert re.search(r"^Core: \d+ public methods", after[1], re.M)


def test_the_count_of_the_hooks_after_is_what_the_code_gives() -> None:
    script, output = SCRIPTS[1]
    assert _run(script) == output
    core = own_methods(Core, private=False)
    assert f"Core: {len(core)} public methods" in output
    assert f"{len(shell_docstring_seams())} named seams" in output


@pytest.mark.skipif(not _has_history(), reason="needs the git history (commit c57cf22)")
def test_the_count_of_the_hooks_before_is_what_the_old_code_gives() -> None:
    script, output = SCRIPTS[0]
    assert _run(script) == output
