"""The built wheel ships the four layers (``spec``, ``impl``, ``model_tests``, ``tla``), no tests.

The wheel is built once for the module from a copy of the checkout (its tracked and untracked,
not ignored files, as a clean clone would have them), with the ``setuptools`` of this
environment and without build isolation, so it needs no network and takes a few seconds; the
tests then read the wheel's file list and metadata. ``bench``, ``examples``, ``tools``,
``tests`` and ``model_tests/tests`` belong to the repository, not to the installed library.
"""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = {"spec", "impl", "model_tests", "tla"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
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
    done = subprocess.run(build, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = dist.glob("sqs_queue_reference-*.whl")
    with zipfile.ZipFile(path) as z:
        yield z


def names(wheel: zipfile.ZipFile) -> list[PurePosixPath]:
    return [PurePosixPath(n) for n in wheel.namelist()]


def test_the_wheel_ships_the_four_layers_only(wheel: zipfile.ZipFile) -> None:
    top = {p.parts[0] for p in names(wheel) if not p.parts[0].endswith(".dist-info")}
    assert top == SHIPPED


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
    (metadata,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    fields = email.message_from_bytes(wheel.read(metadata))
    assert fields["License-Expression"] == "MIT"
    (licence,) = [n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    text = wheel.read(licence).decode()
    assert text.startswith("MIT License") and (ROOT / "LICENSE").read_text() == text
