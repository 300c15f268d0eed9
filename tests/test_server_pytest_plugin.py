"""The SQS endpoint's pytest plugin (sqs_endpoint/pytest_plugin.py): its fixtures, its entry point,
its
example.

The example (examples/test_sqs_redelivery.py) runs in a pytest of its own, which gets the
fixtures only through the project's ``pytest11`` entry point (no conftest.py names the plugin),
so a broken registration fails here; run with ``--sqs-record``, its recording is accepted by
TLC (``python -m tla --recorded``). The fixtures are then used directly: the endpoint is on
127.0.0.1 on a frozen clock, ``sqs_advance`` moves it by exactly what it is given, and a long
poll is answered by the advance that makes a message visible.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import tomllib
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from sqs_endpoint import Endpoint, pytest_plugin

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "test_sqs_redelivery.py"
RESTART_EXAMPLE = ROOT / "examples" / "test_sqs_restart.py"
#: Seconds a pytest of its own may take (a second or two; the machine is shared).
SUBPROCESS_BOUND = 120
#: Seconds a waiting receive may take to answer once its message is visible (it answers at once).
ANSWER_BOUND = 10.0


def pytest_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_BOUND,
        check=False,
    )


def test_the_wheel_ships_the_module_of_every_pytest_entry_point() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    plugins = project["project"]["entry-points"]["pytest11"]
    shipped = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert plugins == {"sqs_endpoint": "sqs_endpoint.pytest_plugin"}
    assert all(module.split(".")[0] in shipped for module in plugins.values())


def test_the_example_passes_with_the_fixtures_of_the_entry_point() -> None:
    done = pytest_run(str(EXAMPLE))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_the_restart_example_passes_with_the_fixtures_of_the_entry_point() -> None:
    done = pytest_run(str(RESTART_EXAMPLE))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_sqs_data_runs_a_suite_against_the_durable_endpoint(tmp_path: Path) -> None:
    done = pytest_run("--sqs-data", "--basetemp", str(tmp_path), str(EXAMPLE))
    assert done.returncode == 0, done.stdout + done.stderr
    (data,) = tmp_path.rglob("sqs_endpoint.sqlite3")  # the test's endpoint kept a data file
    assert data.read_bytes().startswith(b"SQLite format 3\x00")


def test_a_recorded_session_is_checked_against_the_spec(tmp_path: Path) -> None:
    # The example's session recorded, then the recording checked by TLC: what a user does to
    # validate their own tests' use of the endpoint.
    record = tmp_path / "record"
    done = pytest_run("--sqs-record", str(record), str(EXAMPLE))
    assert done.returncode == 0, done.stdout + done.stderr
    (recording,) = record.glob("*.jsonl")
    assert '"name":"orders"' in recording.read_text()
    checked = subprocess.run(
        [sys.executable, "-m", "tla", "--recorded", str(record)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_BOUND,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "1 checks: 1 accepted, 0 rejected, 0 not checked" in checked.stdout


def test_without_the_plugin_the_example_has_no_fixtures() -> None:
    done = pytest_run("-p", "no:sqs_endpoint", str(EXAMPLE))
    assert done.returncode != 0
    assert "fixture 'sqs_client' not found" in done.stdout


def test_loading_the_plugin_imports_no_client_library() -> None:
    # pytest loads the plugin in every run of this environment: the fixtures import boto3 (and
    # start the endpoint) only when a test asks for them.
    code = (
        "import sys, sqs_endpoint.pytest_plugin\n"
        "loaded = {'boto3', 'botocore'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_endpoint_is_on_loopback_and_its_clock_stands_still(sqs_endpoint: Endpoint) -> None:
    assert sqs_endpoint.url.startswith("http://127.0.0.1:")
    before = sqs_endpoint.now()
    assert sqs_endpoint.now() == before


def test_advance_moves_the_clock_by_exactly_the_seconds_given(
    sqs_endpoint: Endpoint, sqs_advance: Callable[[float], None]
) -> None:
    before = sqs_endpoint.now()
    sqs_advance(3600)
    assert sqs_endpoint.now() == before + 3600


def test_the_client_is_for_the_endpoint_with_dummy_credentials(
    sqs_client: Any, sqs_endpoint: Endpoint
) -> None:
    assert sqs_client.meta.region_name == pytest_plugin.REGION
    assert sqs_client.meta.endpoint_url == sqs_endpoint.url
    credentials = sqs_client._request_signer._credentials
    assert credentials.access_key == pytest_plugin.DUMMY_CREDENTIALS["aws_access_key_id"]
    url = sqs_client.create_queue(QueueName="plain")["QueueUrl"]
    assert url == f"{sqs_endpoint.url}/000000000000/plain"


def test_a_long_poll_is_answered_by_the_advance_that_ends_a_delay(
    sqs_client: Any, sqs_advance: Callable[[float], None]
) -> None:
    url = sqs_client.create_queue(QueueName="later")["QueueUrl"]
    sqs_client.send_message(QueueUrl=url, MessageBody="in a minute", DelaySeconds=60)
    answer: Future[list[dict[str, Any]]] = Future()
    polling = threading.Event()

    def poll() -> None:
        polling.set()
        try:
            got = sqs_client.receive_message(QueueUrl=url, WaitTimeSeconds=20)
            answer.set_result(got.get("Messages", []))
        except BaseException as error:  # handed to the test thread, which raises it
            answer.set_exception(error)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    assert polling.wait(ANSWER_BOUND)
    # Whether the poll reached the endpoint before the advance or after, the delay is over
    # for it: it either waits and is woken, or finds the message at once.
    sqs_advance(60)
    (message,) = answer.result(timeout=ANSWER_BOUND)
    assert message["Body"] == "in a minute"
    thread.join(ANSWER_BOUND)
