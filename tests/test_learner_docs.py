"""The learner's pages stay true: their quoted code, their commands and their links.

``docs/tla-primer.md`` and ``docs/pitfalls.md`` quote the sources. A fenced block right after a
``<!-- quote: PATH -->`` comment is a quote: its lines (indentation aside) must appear in
``PATH`` in the same order; a line ``...`` marks left-out lines. A table right after a
``<!-- columns: PATH | PATH | PATH -->`` comment quotes one file per column after the first:
every inline code span of a cell must be a piece of one line of that column's file.

``docs/pitfalls.md`` shows commands. Every ``python3 - <<'EOF'`` script is run, and
what it prints must be the ``text`` block that follows it. Every ``pytest`` command must name an
existing test file whose text holds each name of its ``-k`` expression, every ``python -m tla
--model NAME`` an existing model that is expected to fail, every mutant a class of
``model_tests.mutants``; each seed pitfall's section names the mutants that
``model_tests/mutants.py`` files under that pitfall, and each mutant with the part it breaks
(``model_tests.mutants.broken_parts``: a step of the queue machine, ``Machine.live``, or a wait of
the driver's conditions, ``Conditions.wait``).

The learner's pages (README, the first spec, the primer, the walkthrough, the pitfalls, the
exercises, the explorer) name the implementation as it is: every ``Class.attribute`` of an impl
class in their prose and tables exists (on the class, or on an instance built with defaults),
and none names the implementation before the queue machine (``impl/core.py``, ``Core``, "the
shell"). The walkthrough's "where it lives" tables name only what exists in each layer, and its
first pass names tests and the implementation's parts (the machine, the drivers' conditions)
only in those tables.

Every relative link of README, of the learner's pages, of ``docs/index.md``,
``docs/contract.md`` and ``docs/sources.md`` must name an existing file and, with an anchor into
a Markdown page, an existing heading of it. No page a user reads (README and every
``docs/*.md``) points outside the repository (``../shared/``): the contract and the source
problems are ``docs/contract.md`` and ``docs/sources.md``. The contract page names every
invariant, operation and harness op that the code defines.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

import impl
from impl.aio import Futures, Waiters
from impl.clock import FakeClock
from impl.driver import Wakeups
from impl.fast_machine import FastMachine
from impl.fifo_machine import FifoMachine, FifoRecord
from impl.machine import Machine, Record
from impl.outcome import Blocked, Effect, Outcome
from impl.sweeper import SweeperLink
from impl.sync import Sync
from impl.system import System
from impl.threaded import BaseQueue, Conditions
from impl.timers import Timer, Timers
from model_tests import mutants
from model_tests.scenario_format import op_table
from spec.invariants import INVARIANTS
from spec.operations import REGISTRY
from tla.models import discover

ROOT: Final = Path(__file__).resolve().parents[1]
DOCS: Final = ROOT / "docs"
PRIMER: Final = DOCS / "tla-primer.md"
PITFALLS: Final = DOCS / "pitfalls.md"
#: The pages whose links are checked (docs/explorer.html is a page, but not Markdown).
LINKED_PAGES: Final = (
    "index.md",
    "first-spec.md",
    "tla-primer.md",
    "walkthrough.md",
    "pitfalls.md",
    "exercises.md",
    "contract.md",
    "sources.md",
)

_QUOTE = re.compile(r"<!-- quote: (\S+) -->\n```\w*\n(.*?)\n```", re.DOTALL)
_COLUMNS = re.compile(r"<!-- columns: (.*?) -->\n((?:\|.*\n)+)")
_SCRIPT = re.compile(r"```sh\npython3 - <<'EOF'\n(.*?)\nEOF\n```\n\n```text\n(.*?)\n```", re.DOTALL)
_CODE = re.compile(r"`([^`]+)`")


def quotes(page: Path) -> list[tuple[str, list[str]]]:
    """The quoted blocks of ``page``: (source path, the block's lines)."""
    return [(m.group(1), m.group(2).splitlines()) for m in _QUOTE.finditer(page.read_text())]


def missing_lines(source: str, lines: list[str]) -> list[str]:
    """The lines of a quote that are not in ``source`` in order (indentation aside)."""
    have = [line.strip() for line in source.splitlines()]
    at = 0
    missing = []
    for line in lines:
        want = line.strip()
        if not want or want == "...":
            continue
        try:
            at = have.index(want, at) + 1
        except ValueError:
            missing.append(line)
    return missing


@pytest.mark.parametrize("page", [PRIMER, PITFALLS], ids=lambda p: p.name)
def test_every_quoted_block_is_still_in_its_source(page: Path) -> None:
    found = quotes(page)
    assert len(found) >= 8, f"{page.name}: expected quoted blocks, found {len(found)}"
    for path, lines in found:
        missing = missing_lines((ROOT / path).read_text(), lines)
        assert not missing, f"{page.name} quotes {path}, which no longer has: {missing}"


def test_the_quote_check_can_fail() -> None:
    source = "def f():\n    a = 1\n    b = 2\n"
    assert missing_lines(source, ["def f():", "...", "b = 2"]) == []
    assert missing_lines(source, ["b = 2", "a = 1"]) == ["a = 1"]  # out of order
    assert missing_lines(source, ["a = 3"]) == ["a = 3"]


def cells(row: str) -> list[str]:
    """The cells of a Markdown table row; ``\\|`` is a pipe inside a cell."""
    parts = re.split(r"(?<!\\)\|", row.strip())[1:-1]
    return [p.strip().replace("\\|", "|") for p in parts]


def test_the_three_columns_of_receive_quote_the_three_sources() -> None:
    text = PRIMER.read_text()
    (m,) = _COLUMNS.finditer(text)
    paths = [p.strip() for p in m.group(1).split("|")]
    assert paths == ["tla/Queue.tla", "spec/transitions.py", "impl/machine.py"]
    sources = [(ROOT / p).read_text().splitlines() for p in paths]
    rows = m.group(2).splitlines()[2:]  # after the header and the rule
    assert len(rows) >= 10
    spans = 0
    for row in rows:
        row_cells = cells(row)
        assert len(row_cells) == 4, row
        for path, lines, cell in zip(paths, sources, row_cells[1:], strict=True):
            for code in _CODE.findall(cell):
                spans += 1
                assert any(code in line for line in lines), f"{path} has no line with {code!r}"
    assert spans >= 30


#: The pitfall page's scripts with what each prints, named by the mutants they run.
SCRIPTS: Final = [(m[1], m[2]) for m in _SCRIPT.finditer(PITFALLS.read_text())]


def _script_id(pair: tuple[str, str]) -> str:
    return "-".join(re.findall(r"\b(\w+Queue)\b:", pair[1])) or "real-queue"


@pytest.mark.parametrize("script, output", SCRIPTS, ids=[_script_id(p) for p in SCRIPTS])
def test_each_pitfall_script_prints_what_the_page_says(script: str, output: str) -> None:
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
    assert done.stdout.rstrip("\n") == output


def test_the_pitfall_page_has_its_scripts() -> None:
    assert len(SCRIPTS) == 9


def sections(page: Path) -> dict[str, str]:
    """``page``'s ``## `` sections, by heading."""
    parts = re.split(r"^## (.*)$", page.read_text(), flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_one_section_per_seed_pitfall_naming_its_mutants() -> None:
    pitfalls = {k: v for k, v in sections(PITFALLS).items() if k.startswith("Pitfall ")}
    assert [k.split(":")[0] for k in pitfalls] == [f"Pitfall {n}" for n in range(1, 7)]
    # The mutant catalogue files its mutants under the seed's pitfalls 1 to 5.
    doc = mutants.__doc__ or ""
    listing = doc.partition("Seed pitfalls")[2].partition("Classic bugs")[0]
    filed: dict[int, list[str]] = {}
    n = 0
    for line in listing.splitlines():
        if head := re.match(r"(\d)\. ", line):
            n = int(head.group(1))
        filed.setdefault(n, []).extend(re.findall(r":class:`(\w+)`", line))
    assert sorted(k for k in filed if k) == [1, 2, 3, 4, 5]
    for (heading, body), number in zip(pitfalls.items(), range(1, 7), strict=True):
        for name in filed.get(number, []):
            assert f"`{name}`" in body, f"{heading} does not name {name}"


#: The reference classes a mutant's broken part belongs to, most specific first: the part is
#: named after the first of them its class derives from (``Machine.live``, ``Conditions.wait``).
REFERENCES: Final[tuple[type, ...]] = (
    FifoMachine,
    Machine,
    Conditions,
    Futures,
    Waiters,
    impl.FifoQueue,
    impl.Queue,
    impl.AsyncQueue,
)


def parts_broken_by(cls: type) -> set[str]:
    """What the mutant ``cls`` breaks, as ``Reference.name`` (``model_tests.mutants``)."""
    return {
        f"{next(r for r in REFERENCES if issubclass(k, r)).__name__}.{name}"
        for k, name in mutants.broken_parts(cls)
    }


def test_the_pitfall_page_names_the_part_each_mutant_breaks() -> None:
    text = re.sub(r"```.*?```", "", PITFALLS.read_text(), flags=re.DOTALL)
    said = re.findall(r"`(\w+Queue)` \((?:step )?`(\w+\.\w+)`", text)
    assert len(said) >= 14, said
    catalogue = {**mutants.MUTANTS, **mutants.FIFO_MUTANTS}
    for name, part in said:
        assert parts_broken_by(catalogue[name]) == {part}, f"{name} does not break {part}"
    # and the check can fail
    assert parts_broken_by(mutants.PollingSweeperQueue) == {"Conditions.wait"}
    assert parts_broken_by(mutants.TailReleaseFifoQueue) == {"FifoMachine.requeue"}
    assert parts_broken_by(impl.Queue) == set()


def commands(text: str) -> list[str]:
    """The commands of a page: inline code and lines of ``sh`` blocks that run the venv's
    Python with ``-m pytest`` or ``-m tla``."""
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    found = [c for c in _CODE.findall(prose) if c.startswith(".venv/bin/python -m ")]
    for block in re.findall(r"```sh\n(.*?)\n```", text, re.DOTALL):
        found += [line for line in block.splitlines() if line.startswith(".venv/bin/python -m ")]
    return found


def test_every_command_names_an_existing_test_model_or_mutant() -> None:
    text = PITFALLS.read_text()
    models = {m.name: m for m in discover(large=True)}
    cmds = commands(text)
    pytest_cmds = [c for c in cmds if " -m pytest " in c]
    tla_cmds = [c for c in cmds if " -m tla " in c]
    assert len(pytest_cmds) >= 10 and len(tla_cmds) >= 4
    for cmd in pytest_cmds:
        path = next(w for w in cmd.split() if w.endswith(".py"))
        test_file = ROOT / path
        assert test_file.is_file(), cmd
        k = re.search(r'-k (?:"([^"]+)"|(\S+))', cmd)
        assert k is not None, f"{cmd}: select the tests with -k"
        source = test_file.read_text().lower()
        for word in re.findall(r"\w+", k.group(1) or k.group(2)):
            if word not in ("and", "or", "not"):
                assert word.lower() in source, f"{cmd}: {path} has no {word!r}"
    failing = 0
    for cmd in tla_cmds:
        name = cmd.split("--model ")[1].split()[0]
        assert name in models, f"{cmd}: no model {name}"
        failing += models[name].expect == "violation"
    assert failing >= 6, "the page shows TLC's counterexamples: models expected to fail"
    named = set(re.findall(r"`(\w+Queue)`", text))
    assert named - {"FifoQueue"} <= set(mutants.MUTANTS), named - set(mutants.MUTANTS)
    assert len(named) >= 12


# -- links ------------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return {slug(h) for h in re.findall(r"^#+ (.*)$", text, flags=re.MULTILINE)}


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]


@pytest.mark.parametrize("name", ["../README.md", *LINKED_PAGES])
def test_every_relative_link_names_an_existing_file_and_heading(name: str) -> None:
    page = (DOCS / name).resolve()
    found = links(page)
    assert found, f"{name} links nowhere"
    for target in found:
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{name} links to {target}: no such file"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), f"{name} links to {target}: no such heading"


def test_the_index_lists_the_learner_pages_in_order() -> None:
    text = (DOCS / "index.md").read_text()
    order = [
        "first-spec.md",
        "tla-primer.md",
        "walkthrough.md",
        "pitfalls.md",
        "exercises.md",
        "explorer.html",
        "tla.md",
        "levels.md",
        "testing.md",
    ]
    at = [text.find(f"]({page})") for page in order]
    assert -1 not in at, dict(zip(order, at, strict=True))
    assert at == sorted(at), "the learner's path is out of order"
    listed = set(re.findall(r"\]\(([\w-]+\.md)\)", text))
    pages = {p.name for p in DOCS.glob("*.md")}
    assert pages <= listed, f"pages missing from the index: {sorted(pages - listed)}"


def test_the_slug_of_a_heading() -> None:
    assert slug("5. Why only at-least-once, and the idempotent consumer") == (
        "5-why-only-at-least-once-and-the-idempotent-consumer"
    )
    assert slug("Exercise 3: a receipt without `attempt`") == "exercise-3-a-receipt-without-attempt"


# -- the walkthrough's "where it lives" tables --------------------------------------------------

WHERE_HEADER: Final = "| concept | TLA+ | spec | impl | test |"
#: The files each column of a "where it lives" table names things in.
LAYERS: Final = {
    "TLA+": ("tla/*.tla", "tla/*.cfg"),
    "spec": ("spec/*.py",),
    "impl": ("impl/*.py",),
    "test": ("tests/*.py", "model_tests/*.py", "model_tests/tests/*.py", "examples/*.py"),
}


def where_tables(page: Path) -> list[list[list[str]]]:
    """The "where it lives" tables of ``page``: their rows, as cells."""
    text = page.read_text()
    tables = []
    for m in re.finditer(re.escape(WHERE_HEADER) + r"\n\|[-|]+\|\n((?:\|.*\n)+)", text):
        tables.append([cells(row) for row in m.group(1).splitlines()])
    return tables


def unknown_names(code: str, layer: str, words: set[str], files: set[str]) -> list[str]:
    """The names in an inline code span of a table's ``layer`` column that the layer lacks: a
    file name must be one of its files (or a path from the root), any other word one of its
    words."""
    if re.fullmatch(r"[\w/.-]+\.(py|tla|cfg)", code):
        return [] if Path(code).name in files or (ROOT / code).is_file() else [code]
    return [w for w in re.findall(r"[A-Za-z_]\w+", code) if w not in words]


#: The classes an impl cell may name as ``Class.attribute``: impl's exports and its parts (the
#: queue machine, its outcomes, the system, the two drivers' conditions, the sweeper, the timers).
IMPL_CLASSES: Final[dict[str, type]] = {
    **{n: getattr(impl, n) for n in impl.__all__ if isinstance(getattr(impl, n), type)},
    **{
        c.__name__: c
        for c in (
            Machine,
            Record,
            FifoMachine,
            FifoRecord,
            FastMachine,
            Outcome,
            Effect,
            Blocked,
            System,
            Conditions,
            Wakeups,
            Futures,
            Waiters,
            SweeperLink,
            Sync,
            Timer,
            Timers,
        )
    },
}

#: The classes of the implementation before the queue machine (the core and its threaded
#: shell): a page that still names one of them names code that no longer exists.
RETIRED_CLASSES: Final = frozenset({"Core", "FifoCore", "Wake", "Inbox"})


def instance_of(cls: type) -> object | None:
    """An instance of the impl class ``cls`` built with defaults (on a fake clock), to look up
    an instance attribute on; ``None`` for a class that has no default instance here."""
    if issubclass(cls, (BaseQueue, impl.AsyncQueue, impl.AsyncFifoQueue)):
        return cls(clock=FakeClock())
    if issubclass(cls, Machine):
        return cls(1)
    if issubclass(cls, Conditions):
        return cls(FakeClock())
    if issubclass(cls, Futures):
        return cls()
    if issubclass(cls, Waiters):
        return cls("not_empty")
    if cls is System:
        return System(Machine(1), "queue-1")
    return None


def has_attribute(cls: type, attr: str) -> bool:
    """Whether ``cls`` or an instance of it built with defaults has ``attr``."""
    if hasattr(cls, attr):
        return True
    instance = instance_of(cls)
    try:
        return instance is not None and hasattr(instance, attr)
    finally:
        if isinstance(instance, (BaseQueue, impl.AsyncQueue, impl.AsyncFifoQueue)):
            instance.close()


_MEMBER: Final = re.compile(r"(?<![\w.])([A-Z]\w*)\.(\w+)")


def unresolved(code: str, *, known_only: bool = False) -> list[str]:
    """The ``Class.attribute`` names of a code span that name no impl code: an attribute that
    neither the class nor an instance of it built with defaults has, a retired class of the old
    implementation, and (unless ``known_only``: prose, which names other libraries' classes
    too) a class that impl does not have."""
    bad = []
    for cls_name, attr in _MEMBER.findall(code):
        if attr in ("py", "tla", "cfg", "md"):
            continue
        cls = IMPL_CLASSES.get(cls_name)
        if cls is None:
            if cls_name in RETIRED_CLASSES or not known_only:
                bad.append(f"{cls_name}.{attr}")
        elif not has_attribute(cls, attr):
            bad.append(f"{cls_name}.{attr}")
    return bad


#: A numbered section's heading: ``10. Dead-letter queues: ...``.
_NUMBERED: Final = re.compile(r"(\d+)\. ")


def numbered_sections(page: Path) -> dict[str, str]:
    """``page``'s numbered ``## N. ...`` sections, by heading."""
    return {h: body for h, body in sections(page).items() if _NUMBERED.match(h)}


def test_every_section_of_the_walkthrough_ends_with_where_it_lives() -> None:
    numbered = numbered_sections(DOCS / "walkthrough.md")
    found = [int(m.group(1)) for h in numbered if (m := _NUMBERED.match(h))]
    assert found == list(range(1, len(found) + 1)), found  # 1, 2, ... with no gap
    assert len(found) >= 10  # section 10 is two digits: the match must take both
    for heading, body in numbered.items():
        tail = body.rstrip().rpartition("**Where it lives**")[2]
        assert tail.lstrip().startswith(WHERE_HEADER), f"section {heading}"
        assert tail.strip().splitlines()[-1].startswith("|"), f"section {heading}"


def test_every_name_in_the_where_it_lives_tables_exists_in_its_layer() -> None:
    tables = where_tables(DOCS / "walkthrough.md")
    assert len(tables) == len(numbered_sections(DOCS / "walkthrough.md"))  # one per section
    columns = list(LAYERS)
    texts = {
        layer: [p for g in globs for p in ROOT.glob(g) if p.is_file()]
        for layer, globs in LAYERS.items()
    }
    words = {
        layer: set(re.findall(r"\w+", " ".join(p.read_text() for p in files)))
        for layer, files in texts.items()
    }
    names = {layer: {p.name for p in files} for layer, files in texts.items()}
    checked = 0
    for rows in tables:
        for row in rows:
            assert len(row) == 5, row
            for layer, cell in zip(columns, row[1:], strict=True):
                for code in _CODE.findall(cell):
                    checked += 1
                    bad = unknown_names(code, layer, words[layer], names[layer])
                    assert not bad, f"{layer} has no {bad} (row {row[0]!r})"
                    if layer == "impl":
                        gone = unresolved(code)
                        assert not gone, f"impl has no {gone} (row {row[0]!r})"
    assert checked >= 80
    # and the check can fail
    assert unknown_names("Queue.nosuch", "impl", words["impl"], names["impl"]) == ["nosuch"]
    assert unknown_names("Nope.tla", "TLA+", words["TLA+"], names["TLA+"]) == ["Nope.tla"]
    assert unresolved("Queue._deliver, Machine.deliver, Machine.visible") == ["Queue._deliver"]
    assert unresolved("FifoQueue._wake_group, FifoMachine.wake_group") == ["FifoQueue._wake_group"]
    assert unresolved("Core.deliver, Nowhere.x") == ["Core.deliver", "Nowhere.x"]
    assert unresolved("Core.deliver, asyncio.Queue.get, Task.cancel", known_only=True) == [
        "Core.deliver"
    ]
    named = "Conditions.waiting, Futures.pass_on, Waiters.futures, System.dead_letter, Outcome.due"
    assert unresolved(f"{named}, AsyncQueue.machine, FifoQueue.machine") == []
    assert unresolved("BaseQueue._wake, Conditions.notify_all") == [
        "BaseQueue._wake",
        "Conditions.notify_all",
    ]


# -- the contract and the source problems are in the repository ---------------------------------

#: The pages a user reads: README and every page of docs/.
USER_PAGES: Final = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
_OUTSIDE: Final = re.compile(r"\.\./shared\b|(?<![\w.])shared/(?:contract\.md|seeds)")


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: p.name)
def test_no_page_points_outside_the_repository(page: Path) -> None:
    lines = page.read_text().splitlines()
    outside = [f"{k}: {line}" for k, line in enumerate(lines, 1) if _OUTSIDE.search(line)]
    assert outside == [], f"{page.name} points outside the repository: {outside}"


def test_the_outside_check_can_fail() -> None:
    assert _OUTSIDE.search("the contract, `../shared/contract.md`")
    assert _OUTSIDE.search("in ../shared/seeds/000_x.txt")
    assert not _OUTSIDE.search("the [contract](contract.md), sources.md, a shared lock")


def contract_invariants() -> set[str]:
    """The contract's invariants as the code names them: the spec's, and those the TLA+ models
    of the contract check (``Queue``, ``QueueFifo``, and ``BatchAtomic`` of ``QueueBatchSplit``),
    without TLA+'s ``TypeOK``."""
    names = set(INVARIANTS)
    for cfg in ("Queue.cfg", "QueueFifo.cfg", "QueueBatchSplit.cfg"):
        for line in (ROOT / "tla" / cfg).read_text().splitlines():
            if line.startswith("INVARIANTS "):
                names |= set(line.split()[1:]) - {"TypeOK"}
    return names


def test_the_contract_page_names_every_invariant_operation_and_harness_op() -> None:
    text = re.sub(r"```.*?```", "", (DOCS / "contract.md").read_text(), flags=re.DOTALL)
    spans = set(_CODE.findall(text))
    invariants = contract_invariants()
    assert {"OneState", "BatchAtomic", "GroupOrder", "DedupWindow"} <= invariants
    assert sorted(invariants - spans) == [], "invariants the contract page does not name"
    operations = {op.name for op in REGISTRY}
    named = {word for s in spans for word in re.findall(r"^\w+", s)}  # `send(id, …)`: send
    assert sorted(operations - named) == [], "operations the contract page does not name"
    ops = set(op_table())
    harness = {m.group(1) for s in spans if (m := re.match(r'\["(\w+)"', s))}
    assert len(ops) >= 15
    assert sorted(ops - harness) == [], "harness ops the contract page does not show"


def test_the_source_problems_page_links_every_pitfall_and_question() -> None:
    text = (DOCS / "sources.md").read_text()
    pitfalls = [h for h in sections(PITFALLS) if h.startswith("Pitfall ")]
    assert len(pitfalls) == 6
    for heading in [*pitfalls, "The second seed's traps"]:
        assert f"pitfalls.md#{slug(heading)}" in text, heading
    questions = re.findall(r"^### (Q\d\..*)$", (DOCS / "walkthrough.md").read_text(), re.M)
    assert len(questions) == 5
    for heading in questions:
        assert f"walkthrough.md#{slug(heading)}" in text, heading


# -- the walkthrough's two passes, and claims that the code decides ----------------------------


def test_the_walkthrough_marks_its_first_pass_and_where_to_stop() -> None:
    headings = list(sections(DOCS / "walkthrough.md"))
    stop = next(k for k, h in enumerate(headings) if h.startswith("You can stop here"))
    assert headings[stop - 1].startswith("6. ") and headings[stop + 1].startswith("7. ")
    body = sections(DOCS / "walkthrough.md")[headings[stop]]
    assert "first pass" in body and "second pass" in body
    assert "#check-your-understanding" in body


def test_the_walkthrough_defines_source_problem_and_says_seed_only_there() -> None:
    text = (DOCS / "walkthrough.md").read_text()
    words = sections(DOCS / "walkthrough.md")["Words used on this page"]
    assert "**source problem**" in words
    assert len(re.findall(r"\bseeds?\b", text, re.I)) == len(re.findall(r"\bseeds?\b", words, re.I))


def test_the_lifecycle_diagrams_bounds_are_the_ones_the_walkthrough_names() -> None:
    from tools.diagrams import LIFECYCLE_BOUNDS as b

    section = " ".join(sections(DOCS / "walkthrough.md")["2. The states and the invariant"].split())
    assert len(b.ids) == 2 and f"with {'two'} ids" in section
    assert f"batches of {b.batch}" in section
    assert f"delays of {' and '.join(str(d) for d in b.delays)}" in section
    assert f"`max_receives` {b.max_receives}" in section
    assert "LIFECYCLE_BOUNDS" in section


def test_the_walkthrough_calls_an_invariant_of_a_config_an_invariant() -> None:
    invariants = set()
    for cfg in (ROOT / "tla").glob("*.cfg"):
        for line in cfg.read_text().splitlines():
            if line.startswith(("INVARIANT ", "INVARIANTS ")):
                invariants |= set(line.split()[1:])
    assert "ExactlyOnce" in invariants
    text = " ".join((DOCS / "walkthrough.md").read_text().split())
    wrong = [n for n in invariants if re.search(rf"\bpropert(y|ies) `{n}`", text)]
    assert wrong == [], f"invariants the walkthrough calls a property: {wrong}"
    assert "invariant `ExactlyOnce`" in text


def test_the_first_pass_names_its_tests_only_in_its_tables() -> None:
    # Sections 1-6: a reader's prose, the code names in each section's "where it lives" table.
    first = {
        h: b
        for h, b in numbered_sections(DOCS / "walkthrough.md").items()
        if re.match(r"[1-6]\. ", h)
    }
    assert len(first) == 6
    for heading, body in first.items():
        prose = [ln for ln in re.sub(r"```.*?```", "", body, flags=re.DOTALL).splitlines()]
        named = [
            t for ln in prose if not ln.startswith("|") for t in re.findall(r"`(test_\w+)`", ln)
        ]
        assert named == [], f"section {heading} names tests outside its table: {named}"
        # Nor the implementation's parts (the machine, the drivers' internals): only the API.
        spans = [c for ln in prose if not ln.startswith("|") for c in _CODE.findall(ln)]
        parts = [
            f"{c}.{a}" for span in spans for c, a in _MEMBER.findall(span) if c in INTERNAL_CLASSES
        ]
        assert parts == [], f"section {heading} names impl parts outside its table: {parts}"


#: The impl classes that are parts of the implementation, not its API (``impl.__all__``).
INTERNAL_CLASSES: Final = frozenset(IMPL_CLASSES) - set(impl.__all__) | RETIRED_CLASSES


# -- every learner's page names the implementation as it is -------------------------------------

#: The learner's pages, README first: their prose and tables may name only code that exists.
LEARNER_PAGES: Final = [
    ROOT / "README.md",
    *(
        DOCS / name
        for name in (
            "first-spec.md",
            "tla-primer.md",
            "walkthrough.md",
            "pitfalls.md",
            "exercises.md",
            "explorer.md",
        )
    ),
]
#: The words of the implementation before the queue machine: its files, its "core" and its
#: "shell" (now the machine and the drivers), and the seams that no longer exist.
_RETIRED: Final = re.compile(
    r"impl/(?:core|shell|fifo_core)\.py|\b(?:threaded|asyncio) shell\b|\bthe shell\b"
    r"|\bshell's\b|\bcore's\b|\b_core(?:_class)?\b|\bmoved_receivers\b"
)


@pytest.mark.parametrize("page", LEARNER_PAGES, ids=lambda p: p.name)
def test_the_learner_pages_name_the_implementation_as_it_is(page: Path) -> None:
    text = page.read_text()
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    spans = _CODE.findall(prose)
    gone = sorted({name for span in spans for name in unresolved(span, known_only=True)})
    assert gone == [], f"{page.name} names code that impl does not have: {gone}"
    retired = [
        f"{k}: {line.strip()}"
        for k, line in enumerate(text.splitlines(), 1)
        if _RETIRED.search(line)
    ]
    assert retired == [], f"{page.name} names the implementation before the machine: {retired}"


def test_the_retired_names_check_can_fail() -> None:
    assert _RETIRED.search("its lock is the threaded shell's, impl/shell.py")
    assert _RETIRED.search("the core's step")
    assert _RETIRED.search("the queue's `_core`")
    assert not _RETIRED.search("paste it into a shell; the machine's step; its core idea")
    assert unresolved("`Machine.live` and `BaseQueue._wait`", known_only=True) == [
        "BaseQueue._wait"
    ]
