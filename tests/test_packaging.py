"""The built wheel ships the four layers (``spec``, ``impl``, ``model_tests``, ``tla``) and the SQS
endpoint (``sqs_endpoint``) with their subpackages, no tests, and each entry point it ships runs
once installed.

The wheel is built once for the module from a copy of the checkout (its tracked and untracked,
not ignored files, as a clean clone would have them), with the ``setuptools`` of this
environment and without build isolation, so it needs no network and takes a few seconds. The
tests read its file list and metadata, then install it with ``pip --no-deps --no-index`` into a
fresh virtual environment (no ``--system-site-packages``) and run each documented
``python -m ...`` of the four layers from a directory outside the checkout, so nothing is
imported from the checkout. What an entry point needs beyond the wheel is exactly what the
wheel's metadata says its extra needs (``model_tests.conformance``: the ``conformance`` extra,
``hypothesis`` among it); those distributions are linked into the fresh environment from this
one (offline), and only when the entry point's extra is tested. The console scripts
(``sqs-endpoint``, ``sqs-conformance``) run from a working directory that holds a user's own
``server.py`` (and modules named like the other shipped packages), and without their extra
exit 2 with one line; docs/server.md's quick start runs in an environment that has the wheel
and its ``fixtures`` extra alone, and so does a user's test with the plugin's fixtures.

``bench``, ``examples``, ``tools``, ``tests`` and ``model_tests/tests`` belong to the repository,
not to the installed library: ``python -m bench``,
``examples.demo`` and ``tools.diagrams`` are documented as run from the repository root (they
read and write the checkout's ``docs/`` and ``bench/``), so they are not in the wheel and not
run here; the last test fails if a page of the documentation names a ``python -m`` of the
shipped packages that this file does not run (``python -m sqs_endpoint`` with its ``server`` extra).
"""

from __future__ import annotations

import configparser
import email
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import urllib.request
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

    def env(self) -> dict[str, str]:
        # No PYTHONPATH or user site: only the fresh environment's site-packages and the cwd
        # are on sys.path. No bytecode written (some packages are links into this venv).
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        return env | {"PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}

    def script(self, name: str) -> Path:
        """A console script the wheel installed into the fresh environment."""
        path = self.python.parent / name
        assert path.is_file(), f"the wheel installed no script {name!r}"
        return path

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """``python ARGS`` of the fresh environment (or ``run_script``'s argv), in ``outside``."""
        return self.run_argv([str(self.python), *args], stdin=stdin)

    def run_script(self, name: str, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run_argv([str(self.script(name)), *args])

    def run_argv(
        self, argv: list[str], stdin: str | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            cwd=self.outside if cwd is None else cwd,
            env=self.env(),
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


#: A module of the user's own named ``server`` (a common name), in the working directory of every
#: run from the fresh environment: nothing installed may import it in place of its own package.
USERS_SERVER = 'raise SystemExit("the user\'s own server.py was imported")\n'


def install_wheel(built: Built, tmp: Path) -> Installed:
    """A fresh virtual environment with the wheel alone, and its working directory outside the
    checkout, holding the user's ``server.py``."""
    venv, outside = tmp / "venv", tmp / "elsewhere"
    outside.mkdir()
    assert not outside.resolve().is_relative_to(ROOT)
    (outside / "server.py").write_text(USERS_SERVER)
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
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel in a fresh environment; ``with_extras`` links the extras into it."""
    return install_wheel(built, tmp_path_factory.mktemp("installed"))


@pytest.fixture(scope="module")
def bare(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel in a fresh environment of its own that no extra is ever linked into."""
    return install_wheel(built, tmp_path_factory.mktemp("bare"))


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


# -- the console scripts ------------------------------------------------------------------------

#: pyproject.toml's ``[project.scripts]``: each console script, its target, the extra it needs,
#: the ``python -m`` it is the same command as, and options its ``--help`` must name.
SCRIPTS: dict[str, tuple[str, str, str]] = {
    "sqs-endpoint": ("sqs_endpoint.__main__:main", "server", "sqs_endpoint"),
    "sqs-conformance": (
        "model_tests.conformance.__main__:main",
        "conformance",
        "model_tests.conformance",
    ),
}


def test_the_wheel_declares_the_console_scripts(wheel: zipfile.ZipFile) -> None:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    entry_points = configparser.ConfigParser(delimiters=("=",))
    entry_points.optionxform = str  # type: ignore[assignment, method-assign]
    entry_points.read_string(wheel.read(name).decode())
    declared = dict(entry_points["console_scripts"])
    assert declared == {script: target for script, (target, _, _) in SCRIPTS.items()}


def test_the_conformance_kit_checks_the_modules_of_its_extra(
    installed: Installed, wheel: zipfile.ZipFile
) -> None:
    # The kit's own list (what it looks for before it starts) names the extra's distributions.
    done = installed.run(
        "-c", "import model_tests.conformance.__main__ as m; print(*m.EXTRA_MODULES)"
    )
    assert done.returncode == 0, done.stderr
    extra = requirements_of_extra(wheel_metadata(wheel), "conformance")
    assert set(done.stdout.split()) == {canonicalize_name(r.name) for r in extra}


def test_the_users_own_server_module_is_in_the_working_directory(installed: Installed) -> None:
    # What every run here would hit if an installed package imported "server".
    done = installed.run("-c", "import server")
    assert done.returncode == 1 and "the user's own server.py was imported" in done.stderr


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_each_console_script_answers_help_like_its_python_m(
    with_extras: Installed, script: str
) -> None:
    _, _, module = SCRIPTS[script]
    done = with_extras.run_script(script, "--help")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"usage: {script} "), done.stdout  # its own name, not python -m
    _, options = ENTRY_POINTS[module]
    missing = [o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}\b", done.stdout)]
    assert missing == [], done.stdout


#: The command lines each script is run with where its extra is missing: a run (the endpoint's
#: on any free port, were it to start), and the kit's --help (it needs its extra to list its
#: profiles).
WITHOUT_EXTRA: dict[str, tuple[list[str], ...]] = {
    "sqs-endpoint": (["--port", "0"],),
    "sqs-conformance": (["--help"], []),
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_command_without_its_extra_exits_2_with_one_line_naming_it(
    bare: Installed, script: str
) -> None:
    _, extra, module = SCRIPTS[script]
    for argv in ([str(bare.script(script))], [str(bare.python), "-m", module]):
        for args in WITHOUT_EXTRA[script]:
            done = bare.run_argv([*argv, *args])
            command = " ".join([Path(argv[0]).name, *argv[1:], *args])
            assert done.returncode == 2, (command, done.stdout, done.stderr)
            assert done.stdout == "", (command, done.stdout)
            lines = done.stderr.splitlines()
            assert len(lines) == 1, (command, done.stderr)
            assert re.search(rf"\[{extra}\]|\b{extra}\b.*\bextra\b", lines[0]), lines[0]


#: Modules a user's project may have under the names of the other shipped packages. Only the
#: endpoint's was renamed (server -> sqs_endpoint); the console scripts do not put the working
#: directory on the import path, so none of these is imported in place of the installed one.
USERS_MODULES = ("server", "impl", "spec", "tla", "model_tests")


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_the_console_scripts_run_beside_a_users_modules_of_the_shipped_names(
    with_extras: Installed, script: str, tmp_path: Path
) -> None:
    for name in USERS_MODULES:
        (tmp_path / f"{name}.py").write_text(USERS_SERVER.replace("server", name))
    done = with_extras.run_argv([str(with_extras.script(script)), "--help"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"usage: {script} "), done.stdout


def read_line(process: subprocess.Popen[str]) -> str:
    """The next line the process writes, within :data:`STEP_BOUND` seconds."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as ready:
        ready.register(process.stdout, selectors.EVENT_READ)
        assert ready.select(STEP_BOUND), "the process wrote nothing"
    return process.stdout.readline()


def test_the_installed_endpoint_serves_its_config_and_stops_on_sigterm(
    with_extras: Installed,
) -> None:
    # The service a developer runs: queues from --config, a health request and an SQS request
    # over plain HTTP (no client library), then SIGTERM: it stops cleanly, status 0.
    config = with_extras.outside / "queues.toml"
    config.write_text('[[queue]]\nname = "jobs"\n\n[[queue]]\nname = "jobs.fifo"\n'
                      "attributes = { FifoQueue = true }\n")  # fmt: skip
    argv = [str(with_extras.script("sqs-endpoint")), "--port", "0", "--config", str(config)]
    process = subprocess.Popen(
        argv, cwd=with_extras.outside, env=with_extras.env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        first = read_line(process)
        found = re.search(r"(http://127\.0\.0\.1:\d+) ", first)
        assert found, first
        url = found.group(1)
        with urllib.request.urlopen(f"{url}/_control/health", timeout=STEP_BOUND) as answer:
            assert json.load(answer) == {"ok": True, "queues": ["jobs", "jobs.fifo"]}
        request = urllib.request.Request(
            url,
            data=b"{}",
            headers={
                "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Target": "AmazonSQS.ListQueues",
            },
        )
        with urllib.request.urlopen(request, timeout=STEP_BOUND) as answer:
            listed = json.load(answer)["QueueUrls"]
        assert listed == [f"{url}/000000000000/jobs", f"{url}/000000000000/jobs.fifo"]
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=STEP_BOUND)
        assert process.returncode == 0, out + err
        assert out.splitlines()[-1] == "stopped", out
        assert "Traceback" not in err, err
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


# -- the endpoint's quick start (docs/server.md), with the fixtures extra alone ---------------

SERVER_PAGE = ROOT / "docs" / "server.md"
#: Where the quick start's endpoint listens (the endpoint's default); a test's own is elsewhere.
DEFAULT_URL = "http://127.0.0.1:9324"


def quick_start_blocks() -> dict[str, str]:
    """The fenced blocks of docs/server.md's "Quick start" section, by language (one each)."""
    text = SERVER_PAGE.read_text(encoding="utf-8")
    section = text.split("## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```(\w+)\n(.*?)^```$", section, flags=re.DOTALL | re.MULTILINE)
    languages = [language for language, _ in blocks]
    assert sorted(languages) == ["python", "sh"], languages
    return {language: code for language, code in blocks}


@pytest.fixture(scope="module")
def with_fixtures(
    built: Built, wheel: zipfile.ZipFile, tmp_path_factory: pytest.TempPathFactory
) -> Installed:
    """The wheel in a fresh environment with the ``fixtures`` extra's distributions alone: what
    the quick start's ``pip install '.[fixtures]'`` installs."""
    env = install_wheel(built, tmp_path_factory.mktemp("fixtures"))
    fields = wheel_metadata(wheel)
    link_into(env.site, closure(requirements_of_extra(fields, "fixtures"), fields))
    return env


def test_the_quick_start_installs_the_fixtures_extra_and_starts_the_script() -> None:
    shell = quick_start_blocks()["sh"]
    assert "pip install '.[fixtures]'" in shell
    assert re.search(r"^\.venv/bin/sqs-endpoint\b", shell, flags=re.MULTILINE), shell
    assert DEFAULT_URL in shell


def test_the_quick_start_serves_boto3_with_the_fixtures_extra_alone(
    with_fixtures: Installed,
) -> None:
    # sqs-endpoint as the quick start starts it (on a free port here), and its boto3 block,
    # unchanged but for that port, prints the queue URL its comment says.
    code = quick_start_blocks()["python"]
    printed = re.search(r"# (http://\S+)$", code, flags=re.MULTILINE)
    assert printed, code
    argv = [str(with_fixtures.script("sqs-endpoint")), "--port", "0"]
    process = subprocess.Popen(
        argv, cwd=with_fixtures.outside, env=with_fixtures.env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        found = re.search(r"(http://127\.0\.0\.1:\d+) ", read_line(process))
        assert found
        url = found.group(1)
        done = with_fixtures.run("-c", code.replace(DEFAULT_URL, url))
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines() == [printed.group(1).replace(DEFAULT_URL, url)]
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=STEP_BOUND)
        assert process.returncode == 0, out + err
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_the_fixtures_extra_runs_a_users_test_with_the_plugins_fixtures(
    with_fixtures: Installed,
) -> None:
    # A user's test file using sqs_client and sqs_advance, beside the user's server.py: pytest
    # of the fresh environment finds the plugin through its entry point.
    example = ROOT / "examples" / "test_sqs_redelivery.py"
    shutil.copy(example, with_fixtures.outside / example.name)
    done = with_fixtures.run("-m", "pytest", "-q", "-p", "no:cacheprovider", example.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout, done.stdout


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
