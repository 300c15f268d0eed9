"""docs/server.md's client recipes run as written against a started endpoint.

Each recipe is the fenced block after a ``<!-- recipe: NAME -->`` marker; this file reads it
from the page (never a copy of it) and runs it, unchanged, with ``SQS_ENDPOINT_URL`` naming an
endpoint of the test's own on a free port (every recipe reads that variable, defaulting to
``http://127.0.0.1:9324``). The one-shot recipes (boto3, the AWS CLI, kombu, the JavaScript SDK)
run to their end and print what they received; the worker recipes (Celery, dramatiq) are
saved as the module the page names, a worker is started with the page's command, the page's
send command is run, and the worker's output must show the task ran. Clients come from
``bash scripts/setup`` (missing: skipped on a developer's machine, failed in CI).
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from server_clients import ROOT, SUBPROCESS_BOUND, WORK_BOUND, client_env, missing

import sqs_endpoint

PAGE = ROOT / "docs" / "server.md"
JS = ROOT / "tests" / "clients" / "js"
#: Seconds a worker may take to start, or to run the task sent (generous: a worker process
#: boots its broker connection first, on a shared two-core machine).
WORKER_BOUND = 4 * WORK_BOUND
#: The recipes the page must hold, each with its fence's language.
RECIPES = {
    "boto3": "python",
    "aws-cli": "sh",
    "kombu": "python",
    "celery": "python",
    "dramatiq": "python",
    "js": "js",
}


def recipe(name: str) -> str:
    """The code of the block after ``<!-- recipe: name -->`` in docs/server.md."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(
        rf"<!-- recipe: {re.escape(name)} -->\n```(\w+)\n(.*?)\n```\n", text, flags=re.DOTALL
    )
    assert found, f"docs/server.md has no recipe {name!r}"
    assert found.group(1) == RECIPES[name], found.group(1)
    return found.group(2) + "\n"


def test_the_page_holds_every_recipe_and_no_other() -> None:
    named = re.findall(r"<!-- recipe: ([\w-]+) -->", PAGE.read_text(encoding="utf-8"))
    assert sorted(named) == sorted(RECIPES)
    for name in RECIPES:
        assert "SQS_ENDPOINT_URL" in recipe(name)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    # The real clock: the workers' long polls and timers run as they would against SQS.
    with sqs_endpoint.serve(port=0) as ep:
        yield ep.url


def env(url: str, **extra: str) -> dict[str, str]:
    """A client's environment: no AWS configuration of the machine's, the endpoint's URL."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return client_env() | {"SQS_ENDPOINT_URL": url, "PATH": path} | extra


def run(argv: list[str], cwd: Path, environ: dict[str, str]) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=environ, capture_output=True, text=True,
        timeout=SUBPROCESS_BOUND, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def need_module(name: str) -> None:
    probe = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True)
    if probe.returncode != 0:
        missing(f"{name} (the clients extra)")


def test_boto3(url: str, tmp_path: Path) -> None:
    need_module("boto3")
    (tmp_path / "recipe.py").write_text(recipe("boto3"))
    out = run([sys.executable, "recipe.py"], tmp_path, env(url))
    assert out.splitlines() == ["boto3 received hello"]


def test_kombu(url: str, tmp_path: Path) -> None:
    need_module("kombu")
    (tmp_path / "recipe.py").write_text(recipe("kombu"))
    out = run([sys.executable, "recipe.py"], tmp_path, env(url))
    assert out.splitlines() == ["kombu received {'hello': 'kombu'}"]


def test_aws_cli(url: str, tmp_path: Path) -> None:
    aws = ROOT / ".venv-clients" / "bin" / "aws"
    if not aws.is_file():
        missing(".venv-clients (aws-cli)")
    (tmp_path / "recipe.sh").write_text("set -euo pipefail\n" + recipe("aws-cli"))
    path = os.pathsep.join([str(aws.parent), os.environ.get("PATH", "")])
    out = run(["bash", "recipe.sh"], tmp_path, env(url) | {"PATH": path})
    assert out.splitlines() == ["hello"]


def test_the_javascript_sdk(url: str) -> None:
    node = shutil.which("node")
    if node is None or not (JS / "node_modules" / "@aws-sdk" / "client-sqs").is_dir():
        missing("Node.js and @aws-sdk/client-sqs (npm ci in tests/clients/js)")
    # Beside the locked SDK, so the import resolves to tests/clients/js/node_modules.
    script = JS / f".recipe-{os.getpid()}.mjs"
    script.write_text(recipe("js"))
    try:
        out = run([node, script.name], JS, env(url))
    finally:
        script.unlink()
    assert out.splitlines() == ["js received hello"]


class Output:
    """A worker's output lines, read by a thread of their own as they come (a selector on the
    pipe would miss the lines already read into the text stream's buffer)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        assert process.stdout is not None
        threading.Thread(target=self._read, args=(process.stdout,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)  # the worker ended

    def wait_for(self, wanted: str) -> None:
        """Return once a line containing ``wanted`` came, within WORKER_BOUND seconds."""
        end = time.monotonic() + WORKER_BOUND
        while (left := end - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if wanted in line:
                return
        raise AssertionError(f"the worker never printed {wanted!r}:\n" + "\n".join(self.seen))


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(SUBPROCESS_BOUND)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def worker_recipe(
    url: str,
    tmp_path: Path,
    module: str,
    name: str,
    worker: list[str],
    ready: str,
    send: str,
    wanted: str,
) -> None:
    (tmp_path / f"{module}.py").write_text(recipe(name))
    environ = env(url, PYTHONPATH=str(tmp_path), PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        worker, cwd=tmp_path, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    output = Output(process)
    try:
        output.wait_for(ready)  # sent once the worker consumes (it also would before)
        run([sys.executable, "-c", send], tmp_path, environ)
        output.wait_for(wanted)
    finally:
        stop(process)


def console_script(name: str) -> str:
    script = Path(sys.executable).parent / name
    if not script.is_file():
        missing(f"{name} (the clients extra)")
    return str(script)


@pytest.mark.parametrize("pool", ["solo", "prefork"])
def test_celery(url: str, tmp_path: Path, pool: str) -> None:
    celery = console_script("celery")
    worker = [celery, "-A", "tasks", "worker", "--pool", pool, "--concurrency", "1"]
    worker_recipe(
        url, tmp_path, "tasks", "celery", worker, "exchange=celery",
        "import tasks; tasks.add.delay(2, 3)", "celery ran add: 5",
    )  # fmt: skip


def test_dramatiq(url: str, tmp_path: Path) -> None:
    dramatiq = console_script("dramatiq")
    worker = [dramatiq, "actors", "--processes", "1", "--threads", "1"]
    worker_recipe(
        url, tmp_path, "actors", "dramatiq", worker, "is ready for action",
        'import actors; actors.greet.send("sqs")', "dramatiq greeted sqs",
    )  # fmt: skip


def test_the_page_commands_match_the_workers_run() -> None:
    # The worker and send commands the tests run are the ones the page tells the reader.
    text = PAGE.read_text(encoding="utf-8")
    for command in (
        "celery -A tasks worker --pool solo",
        "python -c 'import tasks; tasks.add.delay(2, 3)'",
        "dramatiq actors --processes 1 --threads 1",
        "python -c 'import actors; actors.greet.send(\"sqs\")'",
    ):
        assert command in text, command
