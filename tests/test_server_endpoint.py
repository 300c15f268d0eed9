"""The endpoint as a whole (sqs_endpoint/endpoint.py, sqs_endpoint/__main__.py):
``sqs_endpoint.serve`` and
``python -m sqs_endpoint`` with the real operation layer, driven by unmodified boto3 clients.

boto3 (AWS JSON 1.0) and boto3 on the query protocol (the same botocore reading the query-era
service description of ``sqs_endpoint.model`` from a data path of its own, so its QuerySerializer
and QueryParser do the work) each create, send, receive and delete, and see a redelivery after
``ep.advance(31)`` on the frozen clock, without sleeping. A long poll ends in real time while
the clock is frozen. The endpoint's lifecycle: its URL, a port in use, bad arguments, the
config file, ``close`` cancelling a long poll in flight and leaving no thread behind; the
command line's ``--help``, its start banner and a clean stop on Ctrl-C.
"""

from __future__ import annotations

import json
import pathlib
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3  # type: ignore[import-untyped]
import botocore.exceptions  # type: ignore[import-untyped]
import botocore.session  # type: ignore[import-untyped]
import pytest

import sqs_endpoint
from sqs_endpoint import model as sqs_model
from sqs_endpoint.endpoint import ConfigError, load_config
from sqs_endpoint.service import Service

ROOT = pathlib.Path(__file__).resolve().parent.parent
TIMEOUT = 10.0


def client(url: str, session: botocore.session.Session | None = None) -> Any:
    kwargs: dict[str, Any] = {
        "endpoint_url": url,
        "region_name": "us-east-1",
        "aws_access_key_id": "x",
        "aws_secret_access_key": "x",
    }
    if session is not None:
        return session.create_client("sqs", **kwargs)
    return boto3.client("sqs", **kwargs)


def query_session(tmp: pathlib.Path) -> botocore.session.Session:
    """A botocore session whose SQS model is the query-era one (protocol query)."""
    folder = tmp / "sqs" / "2012-11-05"
    folder.mkdir(parents=True)
    (folder / "service-2.json").write_text(json.dumps(sqs_model.load().query_description))
    session = botocore.session.Session()
    session.get_component("data_loader").search_paths.insert(0, str(tmp))
    return session


@pytest.fixture
def ep() -> Iterator[sqs_endpoint.Endpoint]:
    with sqs_endpoint.serve(port=0, clock="fake") as endpoint:
        yield endpoint


def _round_trip(sqs: Any, ep: sqs_endpoint.Endpoint) -> None:
    url = sqs.create_queue(QueueName="jobs", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    assert url == f"{ep.url}/000000000000/jobs"
    sqs.send_message(
        QueueUrl=url,
        MessageBody="hello",
        MessageAttributes={"kind": {"DataType": "String", "StringValue": "greeting"}},
    )  # botocore checks MD5OfMessageBody and MD5OfMessageAttributes
    first = sqs.receive_message(
        QueueUrl=url, MessageAttributeNames=["All"], AttributeNames=["All"]
    )["Messages"]
    assert [m["Body"] for m in first] == ["hello"]
    assert first[0]["MessageAttributes"]["kind"]["StringValue"] == "greeting"
    assert first[0]["Attributes"]["ApproximateReceiveCount"] == "1"
    assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []  # in flight
    ep.advance(31)  # past the visibility timeout: redelivered, no sleep
    second = sqs.receive_message(QueueUrl=url, AttributeNames=["ApproximateReceiveCount"])[
        "Messages"
    ]
    assert second[0]["MessageId"] == first[0]["MessageId"]
    assert second[0]["Attributes"]["ApproximateReceiveCount"] == "2"
    # The first delivery's receipt is stale: it never acts on the redelivered copy.
    with pytest.raises(botocore.exceptions.ClientError):
        sqs.delete_message(QueueUrl=url, ReceiptHandle=first[0]["ReceiptHandle"])
    sqs.delete_message(QueueUrl=url, ReceiptHandle=second[0]["ReceiptHandle"])
    ep.advance(31)
    assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attrs["ApproximateNumberOfMessages"] == "0"
    assert attrs["ApproximateNumberOfMessagesNotVisible"] == "0"


def test_boto3_json_round_trip_and_redelivery(ep: sqs_endpoint.Endpoint) -> None:
    _round_trip(client(ep.url), ep)


def test_boto3_query_protocol_round_trip_and_redelivery(
    ep: sqs_endpoint.Endpoint, tmp_path: pathlib.Path
) -> None:
    session = query_session(tmp_path)
    sqs = client(ep.url, session)
    assert sqs.meta.service_model.protocol == "query"
    _round_trip(sqs, ep)
    with pytest.raises(botocore.exceptions.ClientError) as info:
        sqs.get_queue_url(QueueName="nope")
    assert info.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"


def test_a_long_poll_ends_in_real_time_while_the_clock_is_frozen(ep: sqs_endpoint.Endpoint) -> None:
    sqs = client(ep.url)
    url = sqs.create_queue(QueueName="idle")["QueueUrl"]
    assert ep.frozen
    start = time.monotonic()
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)
    assert got.get("Messages", []) == []
    assert 0.5 <= time.monotonic() - start < 8.0  # generous: a 1 s poll on a loaded machine
    assert ep.now() == 0.0


def test_a_long_poll_gets_a_message_sent_while_it_waits(ep: sqs_endpoint.Endpoint) -> None:
    sqs = client(ep.url)
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    got: list[Any] = []
    receiver = threading.Thread(
        target=lambda: got.append(client(ep.url).receive_message(QueueUrl=url, WaitTimeSeconds=20))
    )
    start = time.monotonic()
    receiver.start()
    sqs.send_message(QueueUrl=url, MessageBody="wake")
    receiver.join(TIMEOUT * 2)
    assert [m["Body"] for m in got[0]["Messages"]] == ["wake"]
    assert time.monotonic() - start < 15.0  # well before the 20 s poll ends


# -- the Endpoint ----------------------------------------------------------------------------------


def _endpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sqs_endpoint.endpoint"]


def test_serve_lifecycle() -> None:
    before = len(_endpoint_threads())
    ep = sqs_endpoint.serve(port=0)
    assert ep.url == f"http://127.0.0.1:{ep.port}"
    assert ep.port > 0
    assert not ep.frozen  # the real clock by default
    assert len(_endpoint_threads()) == before + 1
    with socket.create_connection(("127.0.0.1", ep.port), timeout=TIMEOUT):
        pass
    ep.close()
    ep.close()  # idempotent
    assert len(_endpoint_threads()) == before
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", ep.port), timeout=TIMEOUT)
    with pytest.raises(RuntimeError, match="closed"):
        ep.advance(1)
    assert "closed" in repr(ep)


def test_endpoint_clock_control(ep: sqs_endpoint.Endpoint) -> None:
    assert ep.frozen and ep.now() == 0.0
    ep.advance(5)
    assert ep.now() == 5.0
    ep.run()
    assert not ep.frozen
    ep.freeze()
    t = ep.now()
    assert t >= 5.0 and ep.now() == t
    for bad, error in (("1", TypeError), (-1, ValueError), (float("nan"), ValueError)):
        with pytest.raises(error, match="seconds"):
            ep.advance(bad)


def test_endpoint_call_and_queues(ep: sqs_endpoint.Endpoint) -> None:
    url = ep.call("CreateQueue", {"QueueName": "made"})["QueueUrl"]
    assert url == f"{ep.url}/000000000000/made"
    assert ep.queues() == ["made"]


def test_a_port_in_use_is_an_oserror() -> None:
    with sqs_endpoint.serve(port=0) as ep, pytest.raises(OSError):
        sqs_endpoint.serve(port=ep.port)


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"port": -1}, ValueError, "port"),
        ({"port": 70000}, ValueError, "port"),
        ({"port": "80"}, ValueError, "port"),
        ({"host": ""}, TypeError, "host"),
        ({"clock": "slow"}, ValueError, "clock"),
        ({"service": 5}, TypeError, "service"),
    ],
)
def test_bad_serve_arguments(kwargs: dict[str, Any], error: type[Exception], name: str) -> None:
    with pytest.raises(error, match=name):
        sqs_endpoint.serve(**kwargs)


class _Spy:
    """The real service, telling the test when a ReceiveMessage has reached it."""

    def __init__(self, inner: Service, entered: threading.Event) -> None:
        self.inner, self.entered = inner, entered

    async def call(
        self, operation: str, params: dict[str, Any], *, base_url: str
    ) -> dict[str, Any]:
        if operation == "ReceiveMessage":
            self.entered.set()
        return await self.inner.call(operation, params, base_url=base_url)

    def queues(self) -> list[str]:
        return self.inner.queues()

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_close_cancels_a_long_poll_in_flight() -> None:
    entered = threading.Event()
    ep = sqs_endpoint.serve(
        port=0, clock="fake", service=lambda clock: _Spy(Service(clock), entered)
    )
    sqs = client(ep.url)
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    outcome: list[object] = []

    def poll() -> None:
        try:
            outcome.append(client(ep.url).receive_message(QueueUrl=url, WaitTimeSeconds=20))
        except Exception as e:  # the connection closed under it
            outcome.append(e)

    receiver = threading.Thread(target=poll)
    receiver.start()
    assert entered.wait(TIMEOUT)
    start = time.monotonic()
    ep.close()
    receiver.join(TIMEOUT * 3)
    assert not receiver.is_alive()
    assert time.monotonic() - start < 15.0  # not the 20 s of the poll
    assert outcome  # an empty answer or a closed connection, never a hang
    assert _endpoint_threads() == []


# -- the config file -------------------------------------------------------------------------------


def test_config_creates_queues(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "queues.toml"
    path.write_text(
        '[[queue]]\nname = "dead"\n\n'
        '[[queue]]\nname = "jobs"\nattributes = { VisibilityTimeout = 45, DelaySeconds = "2" }\n'
        'tags = { team = "payments" }\n\n'
        '[[queue]]\nname = "orders.fifo"\nattributes = { FifoQueue = true }\n'
    )
    with sqs_endpoint.serve(port=0, config=path) as ep:
        assert ep.queues() == ["dead", "jobs", "orders.fifo"]
        sqs = client(ep.url)
        url = sqs.get_queue_url(QueueName="jobs")["QueueUrl"]
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        assert (attrs["VisibilityTimeout"], attrs["DelaySeconds"]) == ("45", "2")
        assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "payments"}
        fifo = sqs.get_queue_url(QueueName="orders.fifo")["QueueUrl"]
        fifo_attrs = sqs.get_queue_attributes(QueueUrl=fifo, AttributeNames=["FifoQueue"])
        assert fifo_attrs["Attributes"]["FifoQueue"] == "true"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("not toml [", "not TOML"),
        ("[server]\nport = 1\n", "'server'"),
        ("queue = 5\n", "array of tables"),
        ("[[queue]]\nattributes = {}\n", "name"),
        ('[[queue]]\nname = "a"\ncolour = "red"\n', "'colour'"),
        ('[[queue]]\nname = "a"\nattributes = 5\n', "queue 1.attributes must be a table"),
        ('[[queue]]\nname = "a"\nattributes = { X = [1] }\n', "attributes.X"),
    ],
)
def test_bad_config_names_the_field(tmp_path: pathlib.Path, text: str, names: str) -> None:
    path = tmp_path / "queues.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=str(path).replace(".", r"\.")) as info:
        load_config(path)
    assert names in str(info.value)


def test_a_missing_config_file(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        sqs_endpoint.serve(port=0, config=tmp_path / "none.toml")


def test_a_config_queue_the_service_refuses_stops_the_start(tmp_path: pathlib.Path) -> None:
    before = len(_endpoint_threads())
    bad = {"queue": [{"name": "bad name!"}]}
    with pytest.raises(ConfigError, match="bad name!"):
        sqs_endpoint.serve(port=0, config=bad)
    assert len(_endpoint_threads()) == before
    # From a file: the file, the queue's place in it and its name.
    path = tmp_path / "queues.toml"
    path.write_text('[[queue]]\nname = "ok"\n\n[[queue]]\nname = "bad name!"\n')
    with pytest.raises(ConfigError) as info:
        sqs_endpoint.serve(port=0, config=path)
    assert str(info.value).startswith(f"{path}: queue 2 ('bad name!'): "), info.value
    assert len(_endpoint_threads()) == before


# -- python -m sqs_endpoint
# ------------------------------------------------------------------------------


def test_main_help() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "sqs_endpoint", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    for option in ("--host", "--port", "--config", "--clock", "--record"):
        assert option in out
    assert "127.0.0.1" in out


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_main_serves_until_ctrl_c(tmp_path: pathlib.Path) -> None:
    config = tmp_path / "queues.toml"
    config.write_text('[[queue]]\nname = "jobs"\n')
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sqs_endpoint",
            "--port",
            "0",
            "--clock",
            "fake",
            "--config",
            str(config),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C's own disposition: a test run started in the background by a shell without
        # job control ignores SIGINT, and a child inherits that (Python then leaves it ignored).
        preexec_fn=_default_sigint,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert "this machine only" in banner
        url = banner.split()[3]
        assert url.startswith("http://127.0.0.1:")
        assert "no credentials" in proc.stdout.readline()
        sqs = client(url)
        assert sqs.get_queue_url(QueueName="jobs")["QueueUrl"] == f"{url}/000000000000/jobs"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "stopped" in out
        assert "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_main_bad_config_exits_2(tmp_path: pathlib.Path) -> None:
    config = tmp_path / "queues.toml"
    config.write_text("[[queue]]\n")
    result = subprocess.run(
        [sys.executable, "-m", "sqs_endpoint", "--port", "0", "--config", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    # One line naming the command, the file, the queue and the key (docs/server.md, "Running
    # it as a service").
    assert result.stderr.splitlines() == [
        f"python -m sqs_endpoint: {config}: queue 1: name must be a non-empty string, got None"
    ]


def test_main_without_the_server_extra_exits_2_with_one_line() -> None:
    # botocore blocked as if not installed: None in sys.modules makes every import of it fail.
    code = (
        "import sys; sys.modules['botocore'] = None; "
        "from sqs_endpoint.__main__ import main; sys.exit(main(['--port', '0']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "'server' extra" in lines[0]
    assert "pip install" in lines[0]
    assert "Traceback" not in result.stderr


def test_main_is_a_console_script_target() -> None:
    # What a console script `sqs-endpoint = "sqs_endpoint.__main__:main"` runs:
    # sys.exit(main()), main reading sys.argv itself.
    code = (
        "import sys; sys.argv = ['sqs-endpoint', '--port', '70000']; "
        "from sqs_endpoint.__main__ import main; sys.exit(main())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    # Its errors name the command as it was run.
    assert result.stderr.splitlines() == ["sqs-endpoint: --port must be in 0..65535, got 70000"]


def test_real_clock_redelivery_wakes_a_long_poll() -> None:
    # The real clock: the visibility timeout expires from the loop's timer at the real time,
    # and the waiting receive gets the message then (generous bounds: a loaded machine).
    with sqs_endpoint.serve(port=0, clock="real") as ep:
        sqs = client(ep.url)
        url = sqs.create_queue(QueueName="rt", Attributes={"VisibilityTimeout": "1"})["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="again")
        first = sqs.receive_message(QueueUrl=url)["Messages"][0]
        start = time.monotonic()
        second = sqs.receive_message(
            QueueUrl=url, WaitTimeSeconds=10, AttributeNames=["ApproximateReceiveCount"]
        )["Messages"][0]
        elapsed = time.monotonic() - start
        assert second["MessageId"] == first["MessageId"]
        assert second["Attributes"]["ApproximateReceiveCount"] == "2"
        assert 0.5 <= elapsed < 8.0
