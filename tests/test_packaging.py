"""The built wheel ships the four layers (``spec``, ``impl``, ``model_tests``, ``tla``) and the SQS
endpoint (``sqs_endpoint``) with their subpackages, no tests, and each entry point it ships runs
once
installed.

The wheel is built once for the module from a copy of the checkout (its tracked and untracked,
not ignored files, as a clean clone would have them), with the ``setuptools`` of this
environment and without build isolation, so it needs no network and takes a few seconds. The
tests read its file list and metadata, then install it with ``pip --no-deps --no-index`` into a
fresh virtual environment (no ``--system-site-packages``) and run each documented
``python -m ...`` of the four layers from a directory outside the checkout, so nothing is
imported from the checkout. What an entry point needs beyond the wheel is exactly what the
wheel's metadata says its extra needs (``model_tests.conformance``: the ``conformance`` extra,
``hypothesis`` among it); those distributions are linked into the fresh environment from this
one (offline), and only when the entry point's extra is tested.

``bench``, ``examples``, ``tools``, ``tests`` and ``model_tests/tests`` belong to the repository,
not to the installed library: ``python -m bench``,
``examples.demo`` and ``tools.diagrams`` are documented as run from the repository root (they
read and write the checkout's ``docs/`` and ``bench/``), so they are not in the wheel and not
run here; the last test fails if a page of the documentation names a ``python -m`` of the
shipped packages that this file does not run (``python -m sqs_endpoint`` with its ``server`` extra).
"""

from __future__ import annotations

import email
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from importlib import metadata
from pathlib import Path, PurePosixPath

import pytest
from offline_venv import link_into
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = {"spec", "impl", "model_tests", "tla", "sqs_endpoint"}
#: Top-level packages of the repository that the wheel leaves out (see the module docstring).
REPOSITORY_ONLY = {"bench", "examples", "tools", "tests"}
PROJECT = canonicalize_name("sqs-queue-reference")

#: Each ``python -m`` of the shipped packages that the documentation names: the extra it needs (from
#: the wheel's metadata) and options its ``--help`` must name.
ENTRY_POINTS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "spec": (None, ("explore",)),
    "spec explore": (None, ("--html", "--trace", "--fifo", "--ids")),
    "tla": (None, ("--model", "--large", "--list", "--dir", "--out")),
    "tla.effects": (None, ("--check",)),
    "model_tests.harness": (None, ("--target",)),
    "model_tests.schedule": (None, ("--program", "--mutant", "--preemptions", "--replay")),
    "model_tests.aio": (None, ("--program", "--mutant", "--bound", "--replay")),
    "model_tests.conformance": (
        "conformance",
        ("--endpoint", "--fifo", "--profile", "--scenarios", "--report", "--wait-time"),
    ),
    "model_tests.conformance.systems": ("conformance", ("--endpoint", "--strict", "--yes")),
    "model_tests.conformance.measure_dlq": ("conformance", ()),
    "spec.html_system": (None, ()),
    "tla.recorded": (None, ("--all", "--timeout")),
    "sqs_endpoint": ("server", ("--host", "--port", "--config", "--clock", "--record")),
}
#: Seconds any one subprocess (build, install, entry point) may take before the test fails.
STEP_BOUND = 300


@dataclass(frozen=True)
class Built:
    src: Path  # the copy of the checkout the wheel was built from
    wheel: Path


@dataclass(frozen=True)
class Installed:
    python: Path  # the fresh environment's interpreter
    site: Path  # its site-packages
    outside: Path  # an empty directory outside the checkout, the cwd of every run

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        # No PYTHONPATH or user site: only the fresh environment's site-packages and the empty
        # cwd are on sys.path. No bytecode written (some packages are links into this venv).
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env |= {"PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        return subprocess.run(
            [str(self.python), *args],
            cwd=self.outside,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=STEP_BOUND,
            check=False,
        )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to know which files a clean clone has")
    tmp = tmp_path_factory.mktemp("packaging")
    src, dist = tmp / "src", tmp / "dist"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():  # a file deleted but not yet committed is not there
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    build += ["--no-index", "--quiet", "-w", str(dist), str(src)]
    done = subprocess.run(build, capture_output=True, text=True, timeout=STEP_BOUND, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = dist.glob("sqs_queue_reference-*.whl")
    return Built(src, path)


@pytest.fixture(scope="module")
def wheel(built: Built) -> Iterator[zipfile.ZipFile]:
    with zipfile.ZipFile(built.wheel) as z:
        yield z


def names(wheel: zipfile.ZipFile) -> list[PurePosixPath]:
    return [PurePosixPath(n) for n in wheel.namelist()]


def wheel_metadata(wheel: zipfile.ZipFile) -> Message:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return email.message_from_bytes(wheel.read(name))


def test_the_wheel_ships_the_shipped_packages_only(wheel: zipfile.ZipFile) -> None:
    top = {p.parts[0] for p in names(wheel) if not p.parts[0].endswith(".dist-info")}
    assert top == SHIPPED


def test_every_file_of_the_shipped_packages_ships_except_their_tests(
    built: Built, wheel: zipfile.ZipFile
) -> None:
    # Subpackages (the conformance kit, the scheduler) and data beside the code (py.typed, the
    # TLA+ models, the explorer page's assets in spec/) alike: a file a clean clone has in a
    # layer is in the wheel, unless it is in a tests package.
    expected = {
        p.relative_to(built.src).as_posix()
        for top in SHIPPED
        for p in (built.src / top).rglob("*")
        if p.is_file() and "tests" not in p.relative_to(built.src).parts
    }
    shipped = {str(p) for p in names(wheel) if not p.parts[0].endswith(".dist-info")}
    assert sorted(expected - shipped) == [], "left out of the wheel: add to pyproject.toml"
    assert sorted(shipped - expected) == []
    assert {"model_tests/conformance/__main__.py", "model_tests/schedule/__main__.py"} <= shipped


def test_no_test_module_or_test_package_is_shipped(wheel: zipfile.ZipFile) -> None:
    tests = [str(p) for p in names(wheel) if p.name.startswith("test_") or "tests" in p.parts]
    assert tests == []
    assert "model_tests/support.py" in wheel.namelist()  # the library half of model_tests ships


def test_each_package_is_typed_and_the_tla_models_come_along(wheel: zipfile.ZipFile) -> None:
    shipped = set(wheel.namelist())
    assert {f"{package}/py.typed" for package in SHIPPED} <= shipped
    models = {f"tla/{p.name}" for p in (ROOT / "tla").iterdir() if p.suffix in (".tla", ".cfg")}
    assert models and models <= shipped


def test_the_metadata_names_the_mit_licence_and_ships_its_text(wheel: zipfile.ZipFile) -> None:
    assert wheel_metadata(wheel)["License-Expression"] == "MIT"
    (licence,) = [n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    text = wheel.read(licence).decode()
    assert text.startswith("MIT License") and (ROOT / "LICENSE").read_text() == text


# -- the wheel installed in a fresh environment ------------------------------------------------


def requirements_of_extra(fields: Message, extra: str) -> list[Requirement]:
    """What the wheel's ``Requires-Dist`` asks for with ``extra``, the extra's own included."""
    found = [Requirement(r) for r in fields.get_all("Requires-Dist") or []]
    return [r for r in found if r.marker is not None and r.marker.evaluate({"extra": extra})]


def closure(wanted: list[Requirement], fields: Message) -> list[metadata.Distribution]:
    """The distributions of this environment that ``wanted`` needs, transitively (with the
    extras each asks for and the markers of this interpreter); skips if one is missing."""
    todo = [(r, "") for r in wanted]
    seen: set[tuple[str, frozenset[str]]] = set()
    found: dict[str, metadata.Distribution] = {}
    while todo:
        req, via = todo.pop()
        name = canonicalize_name(req.name)
        if (name, frozenset(req.extras)) in seen:
            continue
        seen.add((name, frozenset(req.extras)))
        if name == PROJECT:  # the project's own extra, e.g. dev includes conformance
            todo += [(r, "") for e in req.extras for r in requirements_of_extra(fields, e)]
            continue
        try:
            dist = found[name] = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            pytest.skip(f"{req.name} (needed by {via or 'the extra'}) is not installed here")
        for text in dist.requires or []:
            dep = Requirement(text)
            extras = req.extras or {""}
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in extras):
                todo.append((dep, req.name))
    return list(found.values())


@pytest.fixture(scope="module")
def installed(
    built: Built, wheel: zipfile.ZipFile, tmp_path_factory: pytest.TempPathFactory
) -> Installed:
    tmp = tmp_path_factory.mktemp("installed")
    venv, outside = tmp / "venv", tmp / "elsewhere"
    outside.mkdir()
    assert not outside.resolve().is_relative_to(ROOT)
    # No pip in the fresh environment: this environment's pip installs into it (--python).
    done = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        capture_output=True,
        text=True,
        timeout=STEP_BOUND,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    install += ["--no-index", "--no-compile", "--quiet", str(built.wheel)]
    done = subprocess.run(install, capture_output=True, text=True, timeout=STEP_BOUND, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        timeout=STEP_BOUND,
        check=True,
    ).stdout.strip()
    return Installed(python, Path(site), outside)


@pytest.fixture(scope="module")
def with_extras(installed: Installed, wheel: zipfile.ZipFile) -> Installed:
    """``installed``, plus the distributions of every extra an entry point needs."""
    fields = wheel_metadata(wheel)
    extras = {extra for extra, _ in ENTRY_POINTS.values() if extra is not None}
    for extra in sorted(extras):
        wanted = requirements_of_extra(fields, extra)
        assert wanted, f"the wheel's metadata has no extra {extra!r}"
        link_into(installed.site, closure(wanted, fields))
    return installed


def test_the_layers_are_imported_from_the_fresh_environment(installed: Installed) -> None:
    # Before any extra is linked in: the shipped packages import with the wheel alone, from it.
    modules = ", ".join(sorted(SHIPPED))
    done = installed.run("-c", f"import {modules}; print(*(m.__file__ for m in ({modules})))")
    assert done.returncode == 0, done.stderr
    files = [Path(f) for f in done.stdout.split()]
    assert len(files) == len(SHIPPED)
    assert all(f.is_relative_to(installed.site) for f in files), files
    for top in REPOSITORY_ONLY | {"model_tests.tests"}:
        gone = installed.run("-c", f"import {top}")
        assert gone.returncode != 0 and "ModuleNotFoundError" in gone.stderr, top


@pytest.mark.parametrize("command", sorted(ENTRY_POINTS))
def test_each_shipped_entry_point_answers_help_outside_the_checkout(
    with_extras: Installed, command: str
) -> None:
    _, options = ENTRY_POINTS[command]
    done = with_extras.run("-m", *command.split(), "--help")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"usage: python -m {command}"), done.stdout
    missing = [o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}\b", done.stdout)]
    assert missing == [], done.stdout


def test_the_installed_spec_writes_its_explorer_page(installed: Installed) -> None:
    # The page is built from the installed spec/ (with whatever assets it reads beside it).
    page = installed.outside / "explorer.html"
    done = installed.run("-m", "spec", "explore", "--html", str(page))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hold in every state" in done.stdout
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
    assert "<script" in html and "</html>" in html.lower()


def test_the_installed_tla_runner_finds_the_installed_models(
    built: Built, installed: Installed
) -> None:
    # Beside tla/models.py in site-packages: every model of the checkout (--large adds the rest).
    done = installed.run("-m", "tla", "--list")
    assert done.returncode == 0, done.stdout + done.stderr
    listed = {line.split()[0] for line in done.stdout.splitlines()}
    cfgs = (built.src / "tla").glob("*.cfg")
    assert listed == {p.stem for p in cfgs if not p.name.endswith(".large.cfg")}


def test_the_installed_tla_commands_never_write_into_site_packages(installed: Installed) -> None:
    # TLC's logs and traces of the installed models go to ./tla_runs, not beside the models.
    code = "from tla.__main__ import runs_dir; import tla.models as m; print(runs_dir(m.TLA_DIR))"
    done = installed.run("-c", code)
    assert done.returncode == 0, done.stdout + done.stderr
    assert Path(done.stdout.strip()) == installed.outside / "tla_runs"
    # The kept effects traces are the repository's docs: installed, the command says so.
    done = installed.run("-m", "tla.effects")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "run this from a source checkout" in done.stderr


def test_the_installed_harness_runs_a_seed_scenario(installed: Installed) -> None:
    # A retry fences the old attempt (as in tests/data/seed_examples.jsonl), in both targets.
    ops = [["enqueue", "a", "A"], ["reserve"], ["retry", "a", 1], ["ack", "a", 1]]
    scenario = json.dumps({"capacity": 1, "ops": ops})
    for target in ("model", "impl"):
        done = installed.run("-m", "model_tests.harness", "--target", target, stdin=scenario)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.split() == ['[true,["a","A",1],true,false]'], (target, done.stdout)


def test_every_documented_entry_point_of_the_layers_is_run_here() -> None:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
    documented: set[str] = set()
    for page in pages:
        for found in re.finditer(r"python3? -m ([A-Za-z_][\w.]*)", page.read_text("utf-8")):
            documented.add(found.group(1).rstrip("."))
    ours = {m for m in documented if m.split(".")[0] in SHIPPED}
    assert ours, "no python -m of the shipped packages found in the documentation"
    assert sorted(ours - set(ENTRY_POINTS)) == []
