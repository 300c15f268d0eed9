"""Bad input over HTTP never gives a 500 and never changes a queue (hypothesis).

Requests are drawn from the request grammar of botocore's SQS model: an operation, and members
of its input shape with values that are often right (the queues' URLs, a live receipt handle,
attribute names and values SQS knows) and often wrong (another JSON type, text, numbers out of
range, unknown members), sent to a running endpoint with the real operation layer in AWS JSON
1.0, and serialized by botocore's own QuerySerializer for the query protocol (with stray fields
added). Every answer must be a 2xx or a documented 4xx in the protocol's error shape; after
every error, every queue's attributes and tags must be what they were. Raw bytes shaped like an
HTTP request must be answered with a 4xx or closed, and the endpoint must keep serving.

The clock is frozen and a receive never long-polls here (``WaitTimeSeconds`` is 0 when valid),
so no example waits; except in the last property, where clients leave or are slow on purpose:
a request cut short, then closed, reset, half-closed, stalled or trickled in byte by byte, and
whole long polls whose client leaves (each must be withdrawn from the queue it waited on).
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import select
import socket
import struct
import time
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import botocore.model  # type: ignore[import-untyped]
import botocore.serialize  # type: ignore[import-untyped]
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import sqs_endpoint
from sqs_endpoint import model as sqs_model

MODEL = sqs_model.load()
SHAPES: dict[str, Any] = MODEL.description["shapes"]
OPERATIONS = sorted(MODEL.operation_names)
QUERY_MODEL = botocore.model.ServiceModel(MODEL.query_description, service_name="sqs")
TIMEOUT = 10.0
NS = "{http://queue.amazonaws.com/doc/2012-11-05/}"
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)


class Target:
    """The endpoint under fuzz, with its queues and a live receipt handle."""

    def __init__(self, ep: sqs_endpoint.Endpoint) -> None:
        self.ep = ep
        self.conn: http.client.HTTPConnection | None = None
        self.ensure()

    def ensure(self) -> None:
        """(Re)create the queues an example may have deleted, messages and a receipt in them."""
        if {"dlq", "std", "f.fifo"} <= set(self.ep.queues()):
            return
        ep = self.ep
        ep.call("CreateQueue", {"QueueName": "dlq"})
        self.std = ep.call(
            "CreateQueue",
            {
                "QueueName": "std",
                "Attributes": {
                    "RedrivePolicy": json.dumps(
                        {
                            "deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:dlq",
                            "maxReceiveCount": 3,
                        }
                    )
                },
            },
        )["QueueUrl"]
        self.fifo = ep.call(
            "CreateQueue", {"QueueName": "f.fifo", "Attributes": {"FifoQueue": "true"}}
        )["QueueUrl"]
        for i in range(3):
            ep.call("SendMessage", {"QueueUrl": self.std, "MessageBody": f"m{i}"})
        got = ep.call("ReceiveMessage", {"QueueUrl": self.std})
        self.receipt = got["Messages"][0]["ReceiptHandle"]

    def snapshot(self) -> dict[str, Any]:
        state: dict[str, Any] = {}
        for name in self.ep.queues():
            url = f"{self.ep.url}/000000000000/{name}"
            attrs = self.ep.call("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})
            tags = self.ep.call("ListQueueTags", {"QueueUrl": url})
            state[name] = (attrs.get("Attributes"), tags.get("Tags"))
        return state

    def post(
        self, body: bytes, headers: dict[str, str], path: str = "/"
    ) -> tuple[int, dict[str, str], bytes]:
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.ep.port, timeout=TIMEOUT)
            conn = self.conn
            try:
                conn.request("POST", path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                if resp.getheader("Connection") == "close":
                    conn.close()
                    self.conn = None
                return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
            except (http.client.HTTPException, OSError):
                conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


@pytest.fixture
def target() -> Iterator[Target]:
    with sqs_endpoint.serve(port=0, clock="fake") as ep:
        t = Target(ep)
        yield t
        if t.conn is not None:
            t.conn.close()


# -- the grammar -----------------------------------------------------------------------------------

WORDS = [
    "",
    "All",
    "String",
    "Number",
    "Binary",
    "String.x",
    "std",
    "dlq",
    "f.fifo",
    "new",
    "new.fifo",
    "bad name",
    "x" * 81,
    "VisibilityTimeout",
    "DelaySeconds",
    "MessageRetentionPeriod",
    "RedrivePolicy",
    "RedriveAllowPolicy",
    "FifoQueue",
    "ContentBasedDeduplication",
    "ReceiveMessageWaitTimeSeconds",
    "MaximumMessageSize",
    "ApproximateReceiveCount",
    "SentTimestamp",
    "MessageGroupId",
    "Policy",
    "true",
    "false",
    "0",
    "1",
    "30",
    "-1",
    "43201",
    "1e3",
    "abc",
    "g1",
    '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"1"}',
    '{"redrivePermission":"allowAll"}',
    "{",
    "null",
    "\u0000",
    "\ud7ff",
    "arn:aws:sqs:us-east-1:000000000000:dlq",
    "arn:aws:sqs:us-east-1:000000000000:std",
]


GARBAGE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
)


@cache
def value_of(
    shape_name: str, urls: tuple[str, ...], garbled: bool, member: str = ""
) -> st.SearchStrategy[Any]:
    """A value of the model's shape ``shape_name``: well-typed, or (``garbled``) anything one
    time in five at every level."""
    shape = SHAPES[shape_name]
    kind = shape["type"]
    good: st.SearchStrategy[Any]
    if kind == "structure":
        members = shape.get("members", {})
        required = set(shape.get("required", ()))
        good = st.fixed_dictionaries(
            {
                n: value_of(r["shape"], urls, garbled, n)
                for n, r in members.items()
                if n in required
            },
            optional={
                n: value_of(r["shape"], urls, garbled, n)
                for n, r in members.items()
                if n not in required
            },
        )
    elif kind == "list":
        good = st.lists(value_of(shape["member"]["shape"], urls, garbled, member), max_size=12)
    elif kind == "map":
        good = st.dictionaries(
            st.sampled_from(WORDS) | st.text(max_size=6),
            value_of(shape["value"]["shape"], urls, garbled),
            max_size=4,
        )
    elif kind == "string" and member == "QueueUrl":
        good = st.sampled_from(urls[:4]) | st.text(max_size=12)
    elif kind == "string" and member == "ReceiptHandle":
        good = st.sampled_from(urls[4:]) | st.text(max_size=12)
    elif kind == "string":
        good = st.sampled_from(WORDS) | st.text(max_size=12)
    elif kind in ("integer", "long"):
        good = st.sampled_from([0, 1, 10, 11, 20, 21, -1, 30, 43200, 43201, 2**31]) | st.integers()
    elif kind == "boolean":
        good = st.booleans()
    elif kind == "blob":
        good = st.binary(max_size=10).map(lambda b: base64.b64encode(b).decode())
    else:
        raise AssertionError(kind)
    return st.one_of(good, good, good, good, GARBAGE) if garbled else good


def request_of(target: Target) -> st.SearchStrategy[tuple[str, Any]]:
    urls = (
        target.std,
        target.fifo,
        f"{target.ep.url}/000000000000/dlq",
        f"{target.ep.url}/000000000000/missing",
        target.receipt,
    )

    def params(op_garbled: tuple[str, bool]) -> st.SearchStrategy[tuple[str, Any]]:
        op, garbled = op_garbled
        ref = MODEL.description["operations"][op].get("input")
        if ref is None:
            return st.just((op, {}))
        return value_of(ref["shape"], urls, garbled).map(lambda p: (op, p))

    # One request in three has wrong types somewhere; the others are well-typed, so they reach
    # the operations' own checks and often the queues.
    return st.tuples(st.sampled_from(OPERATIONS), st.sampled_from([False, False, True])).flatmap(
        params
    )


def no_long_poll(op: str, params: Any) -> Any:
    # A valid WaitTimeSeconds would hold the example for real seconds: make it 0.
    if op == "ReceiveMessage" and isinstance(params, dict):
        wait = params.get("WaitTimeSeconds")
        if wait is None or (
            isinstance(wait, int) and not isinstance(wait, bool) and 0 <= wait <= 20
        ):
            params = {**params, "WaitTimeSeconds": 0}
    if (
        op == "CreateQueue"
        and isinstance(params, dict)
        and isinstance(params.get("Attributes"), dict)
    ):
        attrs = dict(params["Attributes"])
        attrs.pop("ReceiveMessageWaitTimeSeconds", None)
        params = {**params, "Attributes": attrs}
    if (
        op == "SetQueueAttributes"
        and isinstance(params, dict)
        and isinstance(params.get("Attributes"), dict)
    ):
        attrs = dict(params["Attributes"])
        attrs.pop("ReceiveMessageWaitTimeSeconds", None)
        params = {**params, "Attributes": attrs}
    return params


_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def xml_tags(op: str, params: Any) -> Any:
    # Known gap, not this test's subject: TagQueue stores tag text that XML 1.0 cannot carry
    # (control characters), and the query protocol's ListQueueTags then writes it as is. Until
    # the operation layer refuses such tags, the query fuzz leaves those characters out of tags.
    if op != "TagQueue" or not isinstance(params, dict) or not isinstance(params.get("Tags"), dict):
        return params

    def clean(v: Any) -> Any:
        return _XML_INVALID.sub("", v) if isinstance(v, str) else v

    return {**params, "Tags": {clean(k): clean(v) for k, v in params["Tags"].items()}}


# -- the properties --------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_json_requests_are_answered_or_refused_and_refusals_change_nothing(
    target: Target, data: st.DataObject
) -> None:
    op, params = data.draw(request_of(target))
    params = no_long_poll(op, params)
    target.ensure()
    before = target.snapshot()
    status, headers, body = target.post(
        json.dumps(params).encode(),
        {"X-Amz-Target": f"AmazonSQS.{op}", "Content-Type": "application/x-amz-json-1.0"},
    )
    assert status < 500, body
    answer = json.loads(body)
    event(f"{status} {answer.get('__type', op)}")
    if status >= 400:
        assert answer["__type"].startswith("com.amazonaws.sqs#"), answer
        assert headers["x-amzn-query-error"].endswith(";Sender")
        assert target.snapshot() == before, (op, params, answer)
    else:
        assert status == 200


@SETTINGS
@given(
    data=st.data(),
    extra=st.dictionaries(st.text(min_size=1, max_size=10), st.text(max_size=10), max_size=3),
)
def test_query_requests_are_answered_or_refused_and_refusals_change_nothing(
    target: Target, data: st.DataObject, extra: dict[str, str]
) -> None:
    op, params = data.draw(request_of(target))
    params = xml_tags(op, no_long_poll(op, params))
    serializer = botocore.serialize.QuerySerializer()
    try:
        fields = serializer.serialize_to_request(params, QUERY_MODEL.operation_model(op))["body"]
    except Exception:  # botocore cannot write a badly typed request: send fields by hand
        fields = {
            "Action": op,
            **{k: str(v) for k, v in (params.items() if isinstance(params, dict) else [])},
        }
    fields = {**fields, **{k: v for k, v in extra.items() if k != "Action"}}
    # surrogatepass: a lone surrogate goes out as its (invalid) UTF-8 bytes, as a bad client's.
    body = urllib.parse.urlencode(fields, errors="surrogatepass").encode()
    before = target.snapshot()
    status, _headers, raw = target.post(body, {"Content-Type": "application/x-www-form-urlencoded"})
    assert status < 500, raw
    root = ET.fromstring(raw)
    if status >= 400:
        assert root.tag == f"{NS}ErrorResponse"
        assert root.findtext(f"{NS}Error/{NS}Type") == "Sender"
        assert target.snapshot() == before, (op, fields, raw)
    else:
        assert root.tag == f"{NS}{op}Response"


HEADS = st.sampled_from(
    [
        b"POST / HTTP/1.1\r\nHost: h\r\n",
        b"GET /?Action=ListQueues HTTP/1.1\r\nHost: h\r\n",
        b"POST / HTTP/1.1\r\nHost: h\r\nX-Amz-Target: AmazonSQS.ListQueues\r\n",
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n",
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n",
        b"",
    ]
)


@SETTINGS
@given(head=HEADS, noise=st.binary(max_size=200), tail=st.sampled_from([b"", b"\r\n", b"\r\n\r\n"]))
def test_raw_bytes_are_refused_or_closed_and_the_endpoint_goes_on(
    target: Target, head: bytes, noise: bytes, tail: bytes
) -> None:
    with socket.create_connection(("127.0.0.1", target.ep.port), timeout=TIMEOUT) as sock:
        sock.sendall(head + noise + tail)
        sock.shutdown(socket.SHUT_WR)  # the server sees the end: it never waits for more
        data = sock.makefile("rb").read()
    if data:
        status = int(data.split(b" ", 2)[1])
        assert status < 500, data[:300]
    status, _, _ = target.post(
        b"{}",
        {"X-Amz-Target": "AmazonSQS.ListQueues", "Content-Type": "application/x-amz-json-1.0"},
    )
    assert status == 200


# -- clients that leave, or stall, mid-request -------------------------------------------------


@pytest.fixture
def impatient() -> Iterator[Target]:
    """An endpoint whose header and idle timeouts are short, so a stalled client costs little."""
    with sqs_endpoint.serve(port=0, clock="fake", header_timeout=0.2, idle_timeout=0.5) as ep:
        t = Target(ep)
        yield t
        if t.conn is not None:
            t.conn.close()


def receivers(target: Target, name: str) -> int:
    """How many receives wait on queue ``name`` (the impl queue's own count), on the loop."""
    service: Any = target.ep.service

    def count() -> int:
        return int(service._queues[name].q.waiting[0])

    return target.ep._on_loop(count)


def wait_until(what: Callable[[], bool], about: str) -> None:
    """Until ``what()`` holds (each try a hop to the endpoint's loop); TIMEOUT seconds at most:
    a bound, never what decides."""
    end = time.monotonic() + TIMEOUT
    while time.monotonic() < end:
        if what():
            return
    raise AssertionError(f"not within {TIMEOUT} s: {about}")


def wire_request(target: Target, op: str) -> bytes:
    """A valid AWS JSON 1.0 request of ``op`` as raw bytes: one that changes a queue if it
    arrives whole (or, for the long poll, waits on the empty dead-letter queue)."""
    params: dict[str, Any] = {
        "SendMessage": {"QueueUrl": target.std, "MessageBody": "late"},
        "DeleteMessage": {"QueueUrl": target.std, "ReceiptHandle": target.receipt},
        "PurgeQueue": {"QueueUrl": target.std},
        "ReceiveMessage": {
            "QueueUrl": f"{target.ep.url}/000000000000/dlq",
            "WaitTimeSeconds": 20,
            "MaxNumberOfMessages": 10,
        },
    }[op]
    body = json.dumps(params).encode()
    return (
        f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{target.ep.port}\r\n"
        f"Content-Type: application/x-amz-json-1.0\r\nX-Amz-Target: AmazonSQS.{op}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


@settings(SETTINGS, max_examples=60)
@given(
    op=st.sampled_from(["SendMessage", "DeleteMessage", "PurgeQueue", "ReceiveMessage"]),
    cut=st.floats(min_value=0.0, max_value=1.0),
    how=st.sampled_from(["close", "reset", "half-close", "stall", "trickle"]),
    whole_poll=st.booleans(),
)
def test_a_client_that_leaves_or_stalls_mid_request_changes_nothing(
    impatient: Target, op: str, cut: float, how: str, whole_poll: bool
) -> None:
    # A request cut short (never whole: at most all but its last byte), then the client closes,
    # resets, half-closes or just stops, or it trickles in a byte at a time (a slow client:
    # each byte within the idle timeout, the whole never within the header timeout); or a
    # whole long poll whose client leaves once it waits. Either way no queue changes, any
    # answer is < 500, a poll whose client left no longer waits, and the endpoint goes on.
    target = impatient
    target.ensure()
    before = target.snapshot()
    raw = wire_request(target, op)
    whole = op == "ReceiveMessage" and whole_poll and how not in ("stall", "trickle")
    if whole:
        event(f"a whole long poll, then {how}")
    sent = raw if whole else raw[: int(cut * (len(raw) - 1))]
    with socket.create_connection(("127.0.0.1", target.ep.port), timeout=TIMEOUT) as sock:
        if how == "trickle":
            # Paced by the wait for the server's answer: a byte each 0.05 s until it answers
            # (a 408 once the header timeout has passed) or the cut request is all out.
            for i in range(len(sent)):
                if select.select([sock], [], [], 0.05)[0]:
                    break
                sock.sendall(sent[i : i + 1])
        else:
            sock.sendall(sent)
        if whole:
            wait_until(lambda: receivers(target, "dlq") == 1, "the long poll waits")
        if how == "reset":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif how == "half-close":
            sock.shutdown(socket.SHUT_WR)
        if how in ("half-close", "stall", "trickle"):
            # The server ends it: an answer (a 408 past the header timeout, an empty receive),
            # or a close without one (nothing was asked, or the client had left).
            data = sock.makefile("rb").read()
            event(f"{how}: {'answered' if data else 'closed'}")
            if data:
                assert int(data.split(b" ", 2)[1]) < 500, data[:300]
    if whole:
        wait_until(lambda: receivers(target, "dlq") == 0, "the left poll is withdrawn")
    assert target.snapshot() == before
    status, _, _ = target.post(
        b"{}",
        {"X-Amz-Target": "AmazonSQS.ListQueues", "Content-Type": "application/x-amz-json-1.0"},
    )
    assert status == 200
