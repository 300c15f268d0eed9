"""The SQS endpoint's pytest plugin: fixtures that give a test its own SQS on the fake clock.

Installed with the project, it is registered as a ``pytest11`` entry point (``sqs_endpoint``), so
any test in an environment that has the project gets these fixtures without a ``conftest.py``:

``sqs_endpoint``
    A running endpoint (``sqs_endpoint.serve(port=0, clock="fake")``) on a free port of 127.0.0.1,
    new
    for each test and closed after it. Its clock is frozen until the test moves it, so nothing
    in the test depends on how fast the machine is. ``sqs_endpoint.url`` is the base URL.
``sqs_client``
    A boto3 SQS client for that endpoint: region ``us-east-1``, dummy credentials (the endpoint
    checks none), whatever protocol the installed botocore speaks.
``sqs_advance``
    ``advance(seconds)``: move the endpoint's clock forward. A visibility timeout, a delay, a
    deduplication window or a retention period passes at once, and a long poll waiting on the
    queue is answered as soon as a message becomes visible.

``sqs_restart``
    ``restart()``: crash the endpoint and start it again on its data file, at the same URL (a
    test that asks for it gets a durable endpoint, kept in a SQLite file in its ``tmp_path``):
    what a consumer sees when its SQS endpoint is killed and comes back. Every answered send
    and delete survives; a delivery in flight comes back at its deadline, its receipt handle
    dead (docs/contract.md section 9).

``pytest --sqs-data`` makes every test's endpoint durable (a data file in the test's
``tmp_path``), to run a suite against the durable endpoint. ``pytest --sqs-record DIR`` makes
every test's endpoint record the trace of each queue it serves into ``DIR`` (one file per
endpoint), and ``python -m tla --recorded DIR`` then checks the whole session against the TLA+
spec with TLC. ``examples/test_sqs_redelivery.py`` is a runnable example. ``-p no:sqs_endpoint``
turns the plugin off. The fixtures start the endpoint and import boto3 only when a test asks for
them, so loading the plugin costs other pytest runs no client library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # only for the annotations: the endpoint is imported when a fixture starts it
    from sqs_endpoint.endpoint import Endpoint


#: The region the client is made for: any name works, the endpoint serves every region alike.
REGION = "us-east-1"
#: Credentials for the client: botocore signs every request, the endpoint checks no signature.
DUMMY_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(
        "sqs_endpoint", "the SQS endpoint's fixtures (sqs_endpoint/pytest_plugin.py)"
    )
    group.addoption(
        "--sqs-record",
        metavar="DIR",
        type=Path,
        default=None,
        help="record every queue of each sqs_endpoint into DIR (check: python -m tla --recorded)",
    )
    group.addoption(
        "--sqs-data",
        action="store_true",
        default=False,
        help="keep each test's sqs_endpoint in a data file in its tmp_path (a durable endpoint)",
    )


@pytest.fixture
def sqs_endpoint(request: pytest.FixtureRequest) -> Iterator[Endpoint]:
    """An SQS endpoint on a free port of 127.0.0.1 on the fake clock, closed after the test."""
    import sqs_endpoint

    record: Path | None = request.config.getoption("sqs_record")
    if record is not None:
        record.mkdir(parents=True, exist_ok=True)
    data: Path | None = None
    if request.config.getoption("sqs_data") or "sqs_restart" in request.fixturenames:
        tmp_path: Path = request.getfixturevalue("tmp_path")
        data = tmp_path / "sqs_endpoint.sqlite3"
    with sqs_endpoint.serve(port=0, clock="fake", record=record, data=data) as endpoint:
        yield endpoint


@pytest.fixture
def sqs_client(sqs_endpoint: Endpoint) -> Iterator[Any]:
    """A boto3 SQS client for ``sqs_endpoint`` (us-east-1, dummy credentials)."""
    try:
        import boto3  # type: ignore[import-untyped, unused-ignore]
    except ModuleNotFoundError:  # pragma: no cover - boto3 is in the clients and dev extras
        pytest.fail("the sqs_client fixture needs boto3: pip install boto3", pytrace=False)
    # Credentials and region of its own, whatever the machine's profile or environment says.
    session = boto3.session.Session(region_name=REGION, **DUMMY_CREDENTIALS)
    client = session.client("sqs", endpoint_url=sqs_endpoint.url)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def sqs_advance(sqs_endpoint: Endpoint) -> Callable[[float], None]:
    """``advance(seconds)``: move ``sqs_endpoint``'s fake clock forward by ``seconds``."""

    def advance(seconds: float) -> None:
        sqs_endpoint.advance(seconds)

    return advance


@pytest.fixture
def sqs_restart(sqs_endpoint: Endpoint) -> Callable[[], None]:
    """``restart()``: crash ``sqs_endpoint`` and start it again on its data file, same URL."""

    def restart() -> None:
        sqs_endpoint.restart(crash=True)

    return restart
