"""What the SQS endpoint's client tests (tests/test_server_clients_*.py) share.

Each client runs unmodified against an endpoint of the test's own (the ``sqs_endpoint`` fixture of
sqs_endpoint/pytest_plugin.py, on the fake clock). A client installed outside ``.venv`` (the
query-era
boto3 in ``.venv-query``, aws-cli and aiobotocore in ``.venv-clients``, Node.js and the
JavaScript SDK in tests/clients/js) runs as a subprocess with a bounded time, its facts printed
as one JSON line. ``bash scripts/setup`` installs every client; a test whose client is missing
skips on a developer's machine and fails in CI (``CI=true``), where setup must have installed it.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any, NoReturn

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ROOT / "tests" / "clients"
#: Seconds one client's subprocess may take (a few; generous for a shared machine).
SUBPROCESS_BOUND = 120
#: Seconds a test waits for a worker (Celery, dramatiq, kombu's event loop) to do a task.
WORK_BOUND = 30.0
#: CI sets CI=true: there every client must be installed, so a missing one fails the test.
IN_CI = os.environ.get("CI", "").lower() == "true"


def missing(what: str) -> NoReturn:
    """Skip (a developer's machine) or fail (CI) a test whose client ``what`` is not installed;
    called while a module is collected, the same for every test of the module."""
    message = f"{what} is not installed here; bash scripts/setup installs it"
    if IN_CI:
        pytest.fail(f"{message}, and CI runs it first", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def client_module(name: str) -> Any:
    """The client library ``name`` of the clients extra (typed Any: their hints are partial),
    or :func:`missing`."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        missing(f"{name} (the clients extra)")


def venv_python(venv: str, *modules: str) -> Path:
    """The interpreter of ``ROOT/venv`` if it imports ``modules``; else :func:`missing`."""
    python = ROOT / venv / "bin" / "python"
    if not python.is_file():
        missing(f"{venv} ({', '.join(modules)})")
    probe = subprocess.run(
        [str(python), "-c", f"import {', '.join(modules)}"],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_BOUND,
        check=False,
    )
    if probe.returncode != 0:
        missing(f"{', '.join(modules)} in {venv}")
    return python


def client_env() -> dict[str, str]:
    """The environment of a client subprocess: dummy credentials and region, nothing of the
    machine's AWS configuration (no profile, no credential file, no instance metadata)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHON"))}
    env |= {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return env


def run_client(*argv: str | Path) -> dict[str, Any]:
    """Run a client script; its last line of output is its facts as JSON."""
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=ROOT,
        env=client_env(),
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_BOUND,
        check=False,
    )
    assert done.returncode == 0, f"{argv[0]} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    facts: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return facts


def assert_facts(facts: dict[str, Any], expected: dict[str, Any]) -> None:
    """Every expected fact, compared one by one so a failure names the part of the work."""
    for key, value in expected.items():
        assert facts.get(key) == value, f"{key}: saw {facts.get(key)!r}, SQS gives {value!r}"
