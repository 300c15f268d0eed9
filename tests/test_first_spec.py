"""The first-spec page (``docs/first-spec.md``) stays true, and its models do what it says.

- Every fenced block right after a ``<!-- quote: PATH -->`` comment is in ``PATH``, line by line
  and in order; the block right after ``<!-- run: PATH -->`` is TLC's output as the recorded run
  ``PATH`` holds it, and as TLC prints it now (where TLC can run).
- The side-by-side table's code spans are each a piece of one line of their column's file; the
  impl column is the queue machine (``impl/machine.py``), and every ``Machine.NAME`` the page
  names is one of its methods.
- ``FirstQueue`` fails with the counterexample the page reads, ``FirstQueueFixed`` passes
  (``python -m tla --model NAME`` finds both in ``tla/first/``).
- The answer of "write one invariant yourself", taken from the page, holds under ``FixedSpec``
  and fails under ``Spec`` one state later than ``NoDuplicateDelivery``; a wrong answer fails.
- Without ``java`` on PATH, ``python -m tla`` prints one line with the install command.
- The reader's clock: the words from README's "Start here" to the point where the learner has
  run TLC and read its counterexample, line by line, stay few.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from tla.models import FIRST_DIR, by_name, discover
from tla.tlc import INSTALL_JAVA, Result, run_tlc
from tla.tlc import available as tlc_available

ROOT: Final = Path(__file__).resolve().parents[1]
PAGE: Final = ROOT / "docs" / "first-spec.md"
RUN: Final = ROOT / "docs" / "runs" / "tla-first.txt"
needs_tlc = pytest.mark.skipif(not tlc_available(), reason="TLC needs Java and tla2tools.jar")

_QUOTE: Final = re.compile(r"<!-- (quote|run): (\S+) -->\n```[\w ]*\n(.*?)\n```", re.DOTALL)
_COLUMNS: Final = re.compile(r"<!-- columns: (.*?) -->\n((?:\|.*\n)+)")
_CODE: Final = re.compile(r"`([^`]+)`")
_ANSWER: Final = re.compile(r"```tla answer\n(.*?)\n```", re.DOTALL)


def missing_lines(source: str, lines: list[str]) -> list[str]:
    """The lines of a quote that are not lines of ``source`` in that order (indentation and
    trailing blanks aside)."""
    have = [line.strip() for line in source.splitlines()]
    at, missing = 0, []
    for line in lines:
        want = line.strip()
        if not want:
            continue
        try:
            at = have.index(want, at) + 1
        except ValueError:
            missing.append(line)
    return missing


def quoted(kind: str) -> list[tuple[str, list[str]]]:
    text = PAGE.read_text()
    return [(m[2], m[3].splitlines()) for m in _QUOTE.finditer(text) if m[1] == kind]


def test_the_check_of_a_quote_can_fail() -> None:
    assert missing_lines("a\n  b\nc\n", ["a", "c"]) == []
    assert missing_lines("a\nb\n", ["b", "a"]) == ["a"]


def test_every_quoted_block_is_in_its_source() -> None:
    found = quoted("quote")
    assert len(found) == 3
    for path, lines in found:
        assert not missing_lines((ROOT / path).read_text(), lines), path
    # The first quote is the whole module up to its invariant: the page hides nothing before it.
    module = (FIRST_DIR / "FirstQueue.tla").read_text().splitlines()
    first = found[0][1]
    assert [ln.strip() for ln in first] == [ln.strip() for ln in module[: len(first)]]
    assert first[-1].startswith("NoDuplicateDelivery ==") and len(first) <= 30


def test_the_quoted_output_is_the_recorded_run() -> None:
    ((path, lines),) = quoted("run")
    assert path == "docs/runs/tla-first.txt"
    assert not missing_lines(RUN.read_text(), lines)
    assert any("Invariant NoDuplicateDelivery is violated" in line for line in lines)


@needs_tlc
def test_tlc_prints_now_what_the_page_quotes(tmp_path: Path) -> None:
    ((_, lines),) = quoted("run")
    done = subprocess.run(
        [sys.executable, "-m", "tla", "--model", "FirstQueue", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not missing_lines(done.stdout, lines), done.stdout
    assert "counterexample found, as expected" in done.stdout
    assert (tmp_path / "FirstQueue.trace").is_file()


def test_the_side_by_side_table_quotes_its_files() -> None:
    (m,) = _COLUMNS.finditer(PAGE.read_text())
    paths = [p.strip() for p in m[1].split("|")]
    sources = [(ROOT / p).read_text().splitlines() for p in paths]
    rows = m[2].splitlines()[2:]
    assert len(rows) >= 4
    for row in rows:
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert len(cells) == len(paths) + 1, row
        for path, lines, cell in zip(paths, sources, cells[1:], strict=True):
            for code in _CODE.findall(cell.replace("\\|", "|")):
                assert any(code in line for line in lines), f"{path} has no line with {code!r}"


def test_the_machine_steps_the_page_names_are_the_machines() -> None:
    # The impl side is the queue machine (impl/machine.py), the class the threaded and asyncio
    # queues drive: every `Machine.NAME` of the page is one of its methods, and the page names
    # the steps of the table's rows (receive, delete and its commit, the sweep, the release).
    text = PAGE.read_text()
    named = set(re.findall(r"`Machine\.(\w+)`", text))
    assert {"receive", "delete", "finish", "fire_due", "release"} <= named, named
    source = (ROOT / "impl" / "machine.py").read_text()
    machine = source[source.index("\nclass Machine(") :]
    for name in named:
        assert re.search(rf"^    def {name}\(self\b", machine, re.M), f"Machine has no {name}"
    # and none of the classes the machine replaced
    assert not re.search(r"\bCore\.|impl/core\.py|impl/shell\.py|BaseQueue\.", text)


def test_the_first_models_are_found_by_name_and_not_in_the_default_run() -> None:
    models = by_name()
    assert models["FirstQueue"].expected == "violation NoDuplicateDelivery"
    assert models["FirstQueueFixed"].expected == "ok"
    assert models["FirstQueueFixed"].spec == FIRST_DIR / "FirstQueue.tla"
    assert not {"FirstQueue", "FirstQueueFixed"} & {m.name for m in discover(large=True)}


def _check(tmp: Path, answer: str, spec: str, invariants: str) -> Result:
    """TLC on a copy of the first module with ``answer`` added, under ``spec``."""
    module = (FIRST_DIR / "FirstQueue.tla").read_text()
    head, rule, tail = module.rpartition("\n====")
    (tmp / "FirstQueue.tla").write_text(f"{head}\n{answer}{rule}{tail}")
    cfg = (FIRST_DIR / "FirstQueueFixed.cfg").read_text()
    cfg = re.sub(r"(?m)^SPECIFICATION .*$", f"SPECIFICATION {spec}", cfg)
    cfg = re.sub(r"(?m)^INVARIANT .*$", f"INVARIANT {invariants}", cfg)
    (tmp / "Yours.cfg").write_text(cfg)
    return run_tlc(tmp / "FirstQueue.tla", tmp / "Yours.cfg", check_deadlock=False, timeout=120)


@needs_tlc
def test_the_answer_holds_with_the_fix_and_fails_without_it(tmp_path: Path) -> None:
    (answer,) = _ANSWER.findall(PAGE.read_text())
    assert answer.startswith("DeletedOnce ==")
    fixed = _check(tmp_path, answer, "FixedSpec", "NoDuplicateDelivery DeletedOnce")
    assert fixed.outcome == "ok", fixed.output
    careless = _check(tmp_path, answer, "Spec", "DeletedOnce")
    assert careless.summary == "violation (Invariant DeletedOnce)", careless.output
    # receive, expire, receive, delete: one state more than NoDuplicateDelivery's four.
    assert len(re.findall(r"^State \d+:", careless.trace(), re.M)) == 5
    assert "<Delete line" in careless.trace()
    both = _check(tmp_path, answer, "Spec", "NoDuplicateDelivery DeletedOnce")
    assert both.summary == "violation (Invariant NoDuplicateDelivery)"
    # and the check can fail: a wrong answer is refused under the fix
    wrong = _check(tmp_path, answer.replace("= 1", "= 0"), "FixedSpec", "DeletedOnce")
    assert wrong.summary == "violation (Invariant DeletedOnce)"


def _first_queue_with(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m tla --model FirstQueue`` run with environment ``env``."""
    return subprocess.run(
        [sys.executable, "-m", "tla", "--model", "FirstQueue"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )


def test_without_java_python_m_tla_says_how_to_install_it_in_one_line(tmp_path: Path) -> None:
    assert shutil.which("java", path=str(tmp_path)) is None
    env = {k: v for k, v in os.environ.items() if k != "PATH"} | {"PATH": str(tmp_path)}
    done = _first_queue_with(env)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"python -m tla: {INSTALL_JAVA}\n"
    assert "sudo apt-get install -y default-jre-headless" in INSTALL_JAVA
    assert "brew install openjdk" in INSTALL_JAVA
    # the page names the same commands
    text = " ".join(PAGE.read_text().split())
    assert "`sudo apt-get install -y default-jre-headless`" in text
    assert "`brew install openjdk`" in text


@pytest.mark.parametrize(
    ("script", "said"),
    [
        # macOS's stub: a `java` that only says no runtime is installed, and fails.
        ("echo 'No Java runtime present, requesting install.' >&2; exit 1", "-version` fails"),
        ("echo 'java version \"1.8.0_351\"' >&2", "is Java 8"),
    ],
    ids=["a java that does not run", "java 8"],
)
def test_an_unusable_java_gets_one_line_naming_it(tmp_path: Path, script: str, said: str) -> None:
    java = tmp_path / "java"
    java.write_text(f"#!/bin/sh\n{script}\n")
    java.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "PATH"} | {"PATH": f"{tmp_path}:/bin"}
    done = _first_queue_with(env)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and said in lines[0] and "default-jre-headless" in lines[0], lines


# -- the reader's clock ---------------------------------------------------------------------

#: The learner's own first TLC run, on the first-spec page.
FIRST_RUN: Final = "`.venv/bin/python -m tla --model FirstQueue`"
#: Where the learner has run TLC and read its counterexample line by line: the fix comes next.
READ_TRACE: Final = "\n## The fix"
#: Ten minutes from a clone: 1200 words at about 200 a minute are six; the set-up (a venv,
#: pip's install of pytest, hypothesis and TLC's 2 MB jar; Java if it is missing) about three;
#: TLC on the model, a second.
MAX_WORDS: Final = 1200


def words_before_first_counterexample() -> tuple[int, int]:
    """(README's "Start here" words up to its link to the page, the page's words up to the point
    where the learner has run TLC and read its trace), code blocks included: the reader reads
    those too."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Start here\n")
    readme_part = readme[start : readme.index("](docs/first-spec.md)", start)]
    page = PAGE.read_text()
    end = page.index(READ_TRACE)
    assert page.index(FIRST_RUN) < page.index("## Read the trace") < end
    return _words(readme_part), _words(page[:end])


def _words(text: str) -> int:
    return len(re.sub(r"<!--.*?-->", "", text).split())


def test_the_learner_reaches_their_own_counterexample_in_a_few_words() -> None:
    readme, page = words_before_first_counterexample()
    assert readme + page <= MAX_WORDS, (readme, page)
    assert readme <= 200, "README's 'Start here' must send the learner to the page first"


if __name__ == "__main__":
    r, p = words_before_first_counterexample()
    print(f"README 'Start here' to the link: {r} words; first-spec.md to the trace read: {p}")
