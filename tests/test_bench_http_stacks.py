"""The HTTP-stack benchmark measures every stack it can run and says why it skips the others,
and each stack it measures really serves the SQS app (speed not asserted).

``python -m bench.http_stacks --quick`` runs once for the module, as a user would run it; the
tests read its JSON and its text. Then each stack's process is started on its own and driven
through a whole SQS exchange, in both protocols, so a figure can only come from a stack that
answered correctly.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

import bench.http_stacks as hs

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("http_stacks") / "rows.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.http_stacks", "--quick", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows: list[dict[str, Any]] = json.loads(out.read_text())
    return done.stdout, rows


def test_every_row_is_reported_once(quick_run: tuple[str, list[dict[str, Any]]]) -> None:
    _, rows = quick_run
    assert [r["key"] for r in rows] == list(hs.KEYS)
    assert len(set(hs.KEYS)) == len(hs.KEYS) == 12


def test_each_row_is_measured_or_skipped_with_a_reason(
    quick_run: tuple[str, list[dict[str, Any]]],
) -> None:
    _, rows = quick_run
    for r in rows:
        if r["skipped"]:
            assert r["value"] is None and r["baseline"] is None, r
            assert r["note"].startswith("skipped: ") and len(r["note"]) > len("skipped: "), r
        else:
            assert isinstance(r["value"], float) and r["value"] >= 0, r
            assert isinstance(r["baseline"], float) and r["baseline"] >= 0, r
            assert r["baseline_name"] in (hs.THREADING, hs.AIOHTTP), r
            assert r["target"] == "" and r["passed"] is None, r  # no targets: a measured choice
    # This project's stack and the stdlib's always run (no dependency, Linux /proc here).
    if Path("/proc/self/status").exists():
        measured = {r["key"] for r in rows if not r["skipped"]}
        assert {k for k in hs.KEYS if k.endswith("_vs_threading")} <= measured


def test_ratios_are_figure_over_baseline(quick_run: tuple[str, list[dict[str, Any]]]) -> None:
    _, rows = quick_run
    for r in rows:
        if r["skipped"]:
            assert r["ratio"] is None
        elif r["baseline"] == 0:
            assert r["ratio"] is None  # infinite: written as null in the JSON
        else:
            assert math.isclose(r["ratio"], r["value"] / r["baseline"], rel_tol=1e-9), r


def test_the_output_names_the_conditions(quick_run: tuple[str, list[dict[str, Any]]]) -> None:
    stdout, rows = quick_run
    assert "| benchmark" in stdout
    assert "quick run" in stdout and "Python 3." in stdout
    assert "load average" in stdout and "before" in stdout and "after" in stdout
    for r in rows:
        if not r["skipped"]:
            assert "median of 1 rounds" in r["note"] or "median of 1 windows" in r["note"]
        if r["baseline_name"] == hs.AIOHTTP and not r["skipped"]:
            assert "aiohttp 3." in r["note"]  # which aiohttp, on which interpreter


# -- each stack serves the app correctly ----------------------------------------------------------


def _runnable() -> list[Any]:
    return [
        pytest.param(s, id=s.name, marks=pytest.mark.skip(reason=s.missing) if s.missing else ())
        for s in hs.stacks()
    ]


@pytest.mark.parametrize("stack", _runnable())
def test_a_stack_answers_an_sqs_exchange(stack: hs.Stack) -> None:
    with hs.launch(stack) as process:
        client = hs.Client(process.url)
        try:
            name = f"t-{uuid.uuid4().hex[:8]}"
            queue_url = str(client.call("CreateQueue", {"QueueName": name})["QueueUrl"])
            assert queue_url.endswith(f"/000000000000/{name}")
            body = "héllo, wörld ✓"
            sent = client.call("SendMessage", {"QueueUrl": queue_url, "MessageBody": body})
            assert sent["MD5OfMessageBody"] == hashlib.md5(body.encode()).hexdigest()
            got = client.call("ReceiveMessage", {"QueueUrl": queue_url, "VisibilityTimeout": 30})[
                "Messages"
            ]
            assert [m["Body"] for m in got] == [body]
            assert got[0]["MessageId"] == sent["MessageId"]
            client.call(
                "DeleteMessage", {"QueueUrl": queue_url, "ReceiptHandle": got[0]["ReceiptHandle"]}
            )
            attrs = client.call(
                "GetQueueAttributes", {"QueueUrl": queue_url, "AttributeNames": ["All"]}
            )["Attributes"]
            assert attrs["ApproximateNumberOfMessages"] == "0"
            assert attrs["ApproximateNumberOfMessagesNotVisible"] == "0"  # deleted, not hidden
            # The benchmark's own cycle, with its pre-built bodies.
            send = json.dumps({"QueueUrl": queue_url, "MessageBody": "x"}).encode()
            receive = json.dumps({"QueueUrl": queue_url}).encode()
            prefix = json.dumps({"QueueUrl": queue_url})[:-1].encode() + b', "ReceiptHandle": '
            assert hs.cycle(client, send, receive, prefix) == "x"
            # An SQS error keeps its status and its code through the adapter.
            status, raw = client.raw(
                "SendMessage",
                json.dumps({"QueueUrl": queue_url + "-gone", "MessageBody": "x"}).encode(),
            )
            assert status == 400
            assert json.loads(raw)["__type"].endswith("QueueDoesNotExist")
            # The query protocol: a GET whose request is its query string.
            client.connection.request("GET", "/?Action=ListQueues&Version=2012-11-05")
            response = client.connection.getresponse()
            xml = response.read().decode()
            assert response.status == 200, xml
            assert response.getheader("x-amzn-RequestId")
            assert f"<QueueUrl>{queue_url}</QueueUrl>" in xml
        finally:
            client.close()


@pytest.mark.parametrize("stack", _runnable())
def test_a_stack_answers_a_long_poll_with_the_message_sent(stack: hs.Stack) -> None:
    with hs.launch(stack) as process:
        sender, poller = hs.Client(process.url), hs.Client(process.url)
        try:
            name = f"t-{uuid.uuid4().hex[:8]}"
            queue_url = str(sender.call("CreateQueue", {"QueueName": name})["QueueUrl"])
            answered: list[dict[str, Any]] = []

            def poll() -> None:
                answered.append(
                    poller.call("ReceiveMessage", {"QueueUrl": queue_url, "WaitTimeSeconds": 20})
                )

            waiting = threading.Thread(target=poll)
            waiting.start()
            # Whether the poll is parked yet or not, it gets this message (at once, or when it
            # arrives): no ordering is assumed, only the answer.
            sender.call("SendMessage", {"QueueUrl": queue_url, "MessageBody": "woken"})
            waiting.join(timeout=30)
            assert not waiting.is_alive()
            assert [m["Body"] for m in answered[0]["Messages"]] == ["woken"]
        finally:
            sender.close()
            poller.close()


def test_aiohttp_is_skipped_with_its_reason_when_no_interpreter_has_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(hs, "importable", lambda name: False)
    monkeypatch.setattr(hs, "ROOT", tmp_path)  # no .venv-clients there
    stack = hs.aiohttp_stack()
    assert stack.missing.startswith("aiohttp is not installed")
    with (
        pytest.raises(RuntimeError, match=r"aiohttp\.web cannot run here: aiohttp is not"),
        hs.launch(stack),
    ):
        pass
    rows = hs.rows_of(
        {hs.OURS: hs._empty(), hs.THREADING: hs._empty()},
        [hs.Stack(hs.OURS, ""), hs.Stack(hs.THREADING, ""), stack],
        hs.QUICK,
    )
    skipped = [r for r in rows if r.baseline_name == hs.AIOHTTP]
    assert len(skipped) == 6
    assert all(r.skipped and r.note == f"skipped: {stack.missing}" for r in skipped)
