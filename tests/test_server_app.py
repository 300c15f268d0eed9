"""Both SQS wire protocols and the control API (sqs_endpoint/app.py, sqs_endpoint/control.py) end to
end
over HTTP, through a test double of the operation layer.

The double records each call (operation, validated params, base URL) and answers a few
operations, so the tests check the dispatch itself: the JSON protocol (target, body, result,
``__type`` and ``x-amzn-query-error``), the query protocol (form fields from a POST body or a
GET's query string, XML out, ``<ErrorResponse>``, the queue URL taken from the path), request
ids, every kind of bad input answered with a documented 4xx error and nothing reaching the
service, and a bug inside the service answered ``InternalFailure``. botocore's own JSON client
reads the answers. The control API moves the endpoint's clock and names a bad field.
"""

from __future__ import annotations

import http.client
import json
import re
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import boto3  # type: ignore[import-untyped]
import botocore.exceptions  # type: ignore[import-untyped]
import pytest

import sqs_endpoint
from sqs_endpoint.clock import ServerClock
from sqs_endpoint.errors import SqsError
from sqs_endpoint.md5 import md5_of_body

TIMEOUT = 10.0  # a safety bound on every socket read
JSON_TYPE = "application/x-amz-json-1.0"
FORM_TYPE = "application/x-www-form-urlencoded; charset=utf-8"
NS = "{http://queue.amazonaws.com/doc/2012-11-05/}"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


class Double:
    """A stand-in for sqs_endpoint.service.Service: records calls, answers a few operations."""

    def __init__(self, clock: ServerClock) -> None:
        self.clock = clock
        self.calls: list[tuple[str, dict[str, Any], str]] = []
        self.names: list[str] = []
        self.closed = False

    async def call(
        self, operation: str, params: dict[str, Any], *, base_url: str
    ) -> dict[str, Any]:
        self.calls.append((operation, params, base_url))
        if operation == "CreateQueue":
            self.names.append(params["QueueName"])
            return {"QueueUrl": f"{base_url}/000000000000/{params['QueueName']}"}
        if operation == "GetQueueUrl":
            if params["QueueName"] not in self.names:
                raise SqsError("QueueDoesNotExist", "The specified queue does not exist.")
            return {"QueueUrl": f"{base_url}/000000000000/{params['QueueName']}"}
        if operation == "ListQueues":
            return {"QueueUrls": [f"{base_url}/000000000000/{n}" for n in self.names]}
        if operation == "SendMessage":
            return {"MessageId": "m-1", "MD5OfMessageBody": md5_of_body(params["MessageBody"])}
        if operation == "DeleteQueue":
            raise RuntimeError("a bug in the operation layer")
        if operation == "GetQueueAttributes":
            return {"Attributes": {"VisibilityTimeout": 30}}  # not a string: a bug
        return {}

    def queues(self) -> list[str]:
        return list(self.names)

    async def aclose(self) -> None:
        self.closed = True


class Served:
    def __init__(self, ep: sqs_endpoint.Endpoint, double: Double) -> None:
        self.ep, self.double = ep, double
        self.port = ep.port

    def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def json(self, op: str, params: object) -> tuple[int, dict[str, str], Any]:
        body = params if isinstance(params, bytes) else json.dumps(params).encode()
        status, headers, raw = self.request(
            "POST", "/", body, {"X-Amz-Target": f"AmazonSQS.{op}", "Content-Type": JSON_TYPE}
        )
        return status, headers, json.loads(raw)

    def query(
        self, fields: dict[str, str] | bytes, path: str = "/", method: str = "POST"
    ) -> tuple[int, dict[str, str], ET.Element]:
        data = fields if isinstance(fields, bytes) else urllib.parse.urlencode(fields).encode()
        if method == "GET":
            status, headers, raw = self.request("GET", f"{path}?{data.decode()}")
        else:
            status, headers, raw = self.request(method, path, data, {"Content-Type": FORM_TYPE})
        return status, headers, ET.fromstring(raw)


@pytest.fixture
def served() -> Iterator[Served]:
    doubles: list[Double] = []

    def factory(clock: ServerClock) -> Double:
        doubles.append(Double(clock))
        return doubles[0]

    with sqs_endpoint.serve(port=0, clock="fake", service=factory) as ep:
        yield Served(ep, doubles[0])
    assert doubles[0].closed


# -- AWS JSON 1.0 ----------------------------------------------------------------------------------


def test_json_request_and_result(served: Served) -> None:
    status, headers, body = served.json("CreateQueue", {"QueueName": "jobs", "Extra": 1})
    assert status == 200
    assert headers["content-type"] == JSON_TYPE
    assert UUID.fullmatch(headers["x-amzn-requestid"])
    base = f"http://127.0.0.1:{served.port}"
    assert body == {"QueueUrl": f"{base}/000000000000/jobs"}
    # The service got the validated request (only the model's members) and the base URL.
    assert served.double.calls == [("CreateQueue", {"QueueName": "jobs"}, base)]


def test_json_error_shape(served: Served) -> None:
    status, headers, body = served.json("GetQueueUrl", {"QueueName": "missing"})
    assert status == 400
    assert body["__type"] == "com.amazonaws.sqs#QueueDoesNotExist"
    assert body["message"] == "The specified queue does not exist."
    assert headers["x-amzn-query-error"] == "AWS.SimpleQueueService.NonExistentQueue;Sender"
    assert UUID.fullmatch(headers["x-amzn-requestid"])


@pytest.mark.parametrize(
    ("target", "body", "code", "names"),
    [
        ("AmazonSQS.Nope", b"{}", "InvalidAction", "Nope"),
        ("DynamoDB_20120810.ListTables", b"{}", "InvalidAction", "DynamoDB"),
        ("AmazonSQS.CreateQueue", b"{not json", "InvalidParameterValue", "JSON"),
        ("AmazonSQS.CreateQueue", b"\xff\xfe", "InvalidParameterValue", "JSON"),
        ("AmazonSQS.CreateQueue", b"[" * 100_000 + b"]" * 100_000, "InvalidParameterValue", "JSON"),
        ("AmazonSQS.CreateQueue", b"[1, 2]", "InvalidParameterValue", "object"),
        ("AmazonSQS.CreateQueue", b"{}", "MissingParameter", "QueueName"),
        ("AmazonSQS.CreateQueue", b'{"QueueName": 5}', "InvalidParameterValue", "QueueName"),
        (
            "AmazonSQS.ReceiveMessage",
            b'{"QueueUrl": "u", "MaxNumberOfMessages": "ten"}',
            "InvalidParameterValue",
            "MaxNumberOfMessages",
        ),
        (
            "AmazonSQS.SendMessageBatch",
            b'{"QueueUrl": "u", "Entries": []}',
            "EmptyBatchRequest",
            "",
        ),
    ],
)
def test_json_bad_input_is_a_documented_400(
    served: Served, target: str, body: bytes, code: str, names: str
) -> None:
    status, headers, raw = served.request(
        "POST", "/", body, {"X-Amz-Target": target, "Content-Type": JSON_TYPE}
    )
    error = json.loads(raw)
    assert status == 400
    assert error["__type"] == f"com.amazonaws.sqs#{code}"
    assert names in error["message"]
    assert headers["x-amzn-query-error"].endswith(";Sender")
    assert served.double.calls == []  # nothing reached the queues


def test_a_lone_surrogate_in_json_is_invalid_parameter_value(served: Served) -> None:
    status, _, body = served.json("CreateQueue", b'{"QueueName": "a\\ud800"}')
    assert status == 400
    assert body["__type"] == "com.amazonaws.sqs#InvalidParameterValue"
    assert "surrogate" in body["message"]


def test_an_error_quoting_a_control_character_is_still_readable(served: Served) -> None:
    async def refuse(operation: str, params: dict[str, Any], *, base_url: str) -> dict[str, Any]:
        raise SqsError("InvalidParameterValue", f"Bad name {params['QueueName']}")

    served.double.call = refuse  # type: ignore[method-assign]
    status, _, root = served.query({"Action": "CreateQueue", "QueueName": "a\x1fb\x00"})
    assert status == 400
    assert root.findtext(f"{NS}Error/{NS}Message") == "Bad name a\\x1fb\\x00"
    status, _, body = served.json("CreateQueue", {"QueueName": "a\x1fb"})
    assert body["message"] == "Bad name a\\x1fb"


def test_a_json_content_type_without_a_target_is_invalid_action_in_json(served: Served) -> None:
    status, _, raw = served.request("POST", "/", b"{}", {"Content-Type": JSON_TYPE})
    assert status == 400
    assert json.loads(raw)["__type"] == "com.amazonaws.sqs#InvalidAction"


def test_a_bug_in_the_service_is_internal_failure_never_a_traceback(served: Served) -> None:
    for op, params in (
        ("DeleteQueue", {"QueueUrl": "u"}),
        ("GetQueueAttributes", {"QueueUrl": "u"}),
    ):
        status, headers, body = served.json(op, params)
        assert status == 500
        assert body["__type"] == "com.amazonaws.sqs#InternalFailure"
        assert "Traceback" not in json.dumps(body)
        assert headers["x-amzn-query-error"] == "InternalFailure;Receiver"


def test_botocore_reads_the_json_answers(served: Served) -> None:
    client = boto3.client(
        "sqs",
        endpoint_url=served.ep.url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    url = client.create_queue(QueueName="jobs")["QueueUrl"]
    assert url == f"{served.ep.url}/000000000000/jobs"
    sent = client.send_message(QueueUrl=url, MessageBody="hello")  # botocore checks the MD5
    assert sent["MessageId"] == "m-1"
    with pytest.raises(botocore.exceptions.ClientError) as info:
        client.get_queue_url(QueueName="nope")
    assert info.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"
    assert info.value.response["Error"]["QueryErrorCode"] == "QueueDoesNotExist"
    # The signature botocore computed was not checked (nor needed): "x" is no real key.
    assert served.double.calls[0][0] == "CreateQueue"


# -- the query protocol ----------------------------------------------------------------------------


def test_query_post_and_xml_result(served: Served) -> None:
    status, headers, root = served.query(
        {"Action": "CreateQueue", "QueueName": "jobs", "Version": "2012-11-05"}
    )
    assert status == 200
    assert headers["content-type"] == "text/xml"
    assert root.tag == f"{NS}CreateQueueResponse"
    url = root.findtext(f"{NS}CreateQueueResult/{NS}QueueUrl")
    assert url == f"http://127.0.0.1:{served.port}/000000000000/jobs"
    request_id = root.findtext(f"{NS}ResponseMetadata/{NS}RequestId")
    assert request_id == headers["x-amzn-requestid"]
    assert UUID.fullmatch(request_id)


def test_query_get(served: Served) -> None:
    served.query({"Action": "CreateQueue", "QueueName": "a"})
    status, _, root = served.query({"Action": "ListQueues"}, method="GET")
    assert status == 200
    urls = [e.text for e in root.iter(f"{NS}QueueUrl")]
    assert urls == [f"http://127.0.0.1:{served.port}/000000000000/a"]


def test_query_takes_the_queue_url_from_the_path(served: Served) -> None:
    status, _, root = served.query(
        {"Action": "SendMessage", "MessageBody": "hi"}, path="/000000000000/jobs"
    )
    assert status == 200
    assert root.findtext(f"{NS}SendMessageResult/{NS}MD5OfMessageBody") == md5_of_body("hi")
    op, params, base = served.double.calls[-1]
    assert (op, params["QueueUrl"]) == ("SendMessage", f"{base}/000000000000/jobs")


def test_query_queue_url_given_wins_over_the_path(served: Served) -> None:
    served.query(
        {"Action": "SendMessage", "MessageBody": "hi", "QueueUrl": "http://h/1/other"},
        path="/000000000000/jobs",
    )
    assert served.double.calls[-1][1]["QueueUrl"] == "http://h/1/other"


def test_query_path_is_not_taken_for_an_operation_without_queue_url(served: Served) -> None:
    served.query({"Action": "ListQueues"}, path="/000000000000/jobs")
    assert served.double.calls[-1] == ("ListQueues", {}, f"http://127.0.0.1:{served.port}")


def test_query_error_shape(served: Served) -> None:
    status, headers, root = served.query({"Action": "GetQueueUrl", "QueueName": "missing"})
    assert status == 400
    assert root.tag == f"{NS}ErrorResponse"
    assert root.findtext(f"{NS}Error/{NS}Code") == "AWS.SimpleQueueService.NonExistentQueue"
    assert root.findtext(f"{NS}Error/{NS}Type") == "Sender"
    assert root.findtext(f"{NS}RequestId") == headers["x-amzn-requestid"]


@pytest.mark.parametrize(
    ("fields", "method", "status", "code"),
    [
        ({}, "POST", 400, "MissingAction"),
        ({"QueueName": "q"}, "POST", 400, "MissingAction"),
        ({"Action": "Nope"}, "POST", 400, "InvalidAction"),
        ({"Action": "CreateQueue"}, "POST", 400, "MissingParameter"),
        (b"Action=CreateQueue&QueueName=%ff", "POST", 404, "MalformedQueryString"),
        (b"Action=CreateQueue&&&", "POST", 404, "MalformedQueryString"),
        (
            {"Action": "ReceiveMessage", "QueueUrl": "u", "MaxNumberOfMessages": "x"},
            "POST",
            400,
            "InvalidParameterValue",
        ),
        ({"Action": "ListQueues"}, "PUT", 400, "MalformedHttpRequestException"),
        ({"Action": "ListQueues"}, "DELETE", 400, "MalformedHttpRequestException"),
    ],
)
def test_query_bad_input_is_a_documented_error(
    served: Served, fields: dict[str, str] | bytes, method: str, status: int, code: str
) -> None:
    got, _, root = served.query(fields, method=method)
    assert got == status
    assert root.findtext(f"{NS}Error/{NS}Code") == code
    assert served.double.calls == []


def test_query_field_in_the_url_and_the_body_is_given_twice(served: Served) -> None:
    status, _, raw = served.request(
        "POST", "/?Action=ListQueues", b"Action=ListQueues", {"Content-Type": FORM_TYPE}
    )
    assert status == 400
    assert ET.fromstring(raw).findtext(f"{NS}Error/{NS}Code") == "InvalidQueryParameter"


def test_a_bare_get_is_missing_action(served: Served) -> None:
    status, _, raw = served.request("GET", "/")
    assert status == 400
    assert ET.fromstring(raw).findtext(f"{NS}Error/{NS}Code") == "MissingAction"


# -- HTTP-level refusals in SQS's shapes -----------------------------------------------------------


def test_oversize_body_is_request_entity_too_large_in_the_protocol_of_the_head() -> None:
    def factory(clock: ServerClock) -> Double:
        return Double(clock)

    with sqs_endpoint.serve(port=0, service=factory, max_body=100) as ep:
        s = Served(ep, Double(ep.clock))
        status, headers, body = s.json("CreateQueue", {"QueueName": "q" * 200})
        assert status == 413
        assert body["__type"] == "com.amazonaws.sqs#RequestEntityTooLargeException"
        assert headers["x-amzn-query-error"] == "RequestEntityTooLargeException;Sender"
        status, _, root = s.query({"Action": "CreateQueue", "QueueName": "q" * 200})
        assert status == 413
        assert root.findtext(f"{NS}Error/{NS}Code") == "RequestEntityTooLargeException"


def test_a_malformed_http_request_gets_an_sqs_error(served: Served) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", served.port), timeout=TIMEOUT) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        data = sock.makefile("rb").read()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert ET.fromstring(body).findtext(f"{NS}Error/{NS}Code") == "MalformedHttpRequestException"


def test_a_host_header_that_is_not_a_host_is_not_put_into_urls(served: Served) -> None:
    status, _, body = served.request(
        "POST",
        "/",
        json.dumps({"QueueName": "jobs"}).encode(),
        {
            "X-Amz-Target": "AmazonSQS.CreateQueue",
            "Content-Type": JSON_TYPE,
            "Host": "evil.example/<script>",
        },
    )
    assert status == 200
    assert json.loads(body)["QueueUrl"] == f"http://127.0.0.1:{served.port}/000000000000/jobs"


def test_the_host_header_names_the_queue_urls(served: Served) -> None:
    _, _, body = served.request(
        "POST",
        "/",
        json.dumps({"QueueName": "jobs"}).encode(),
        {"X-Amz-Target": "AmazonSQS.CreateQueue", "Content-Type": JSON_TYPE, "Host": "localhost:9"},
    )
    assert json.loads(body)["QueueUrl"] == "http://localhost:9/000000000000/jobs"


# -- the control API -------------------------------------------------------------------------------


def control(served: Served, method: str, path: str, body: bytes = b"") -> tuple[int, Any]:
    status, headers, raw = served.request(method, path, body)
    assert headers["content-type"] == "application/json"
    return status, json.loads(raw)


def test_control_clock_state_advance_freeze_run(served: Served) -> None:
    assert control(served, "GET", "/_control/clock") == (
        200,
        {"now": 0.0, "frozen": True, "mode": "fake"},
    )
    status, state = control(served, "POST", "/_control/clock/advance", b'{"seconds": 31}')
    assert (status, state["now"]) == (200, 31.0)
    status, state = control(served, "POST", "/_control/clock/advance?seconds=1.5")
    assert (status, state["now"]) == (200, 32.5)
    assert served.ep.now() == 32.5
    status, state = control(served, "POST", "/_control/clock/run")
    assert (status, state["frozen"]) == (200, False)
    assert not served.ep.frozen
    status, state = control(served, "POST", "/_control/clock/freeze")
    assert (status, state["frozen"]) == (200, True)
    assert state["now"] >= 32.5


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/_control/clock/advance", b'{"seconds": -1}', "seconds"),
        ("/_control/clock/advance", b'{"seconds": "5"}', "seconds"),
        ("/_control/clock/advance", b'{"seconds": true}', "seconds"),
        ("/_control/clock/advance", b'{"seconds": 1e999}', "seconds"),
        ("/_control/clock/advance", b'{"seconds": 1' + b"0" * 400 + b"}", "seconds"),
        ("/_control/clock/advance", b'{"secs": 5}', "seconds"),
        ("/_control/clock/advance", b"[5]", "body"),
        ("/_control/clock/advance", b"{nope", "body"),
        ("/_control/clock/advance", b"", "seconds"),
        ("/_control/clock/advance?seconds=abc", b"", "seconds"),
        ("/_control/clock/advance?seconds=nan", b"", "seconds"),
        ("/_control/clock/advance?seconds=1&seconds=2", b"", "seconds"),
    ],
)
def test_control_bad_input_names_the_field(
    served: Served, path: str, body: bytes, field: str
) -> None:
    status, error = control(served, "POST", path, body)
    assert status == 400
    assert error["error"] == "InvalidParameter"
    assert error["field"] == field
    assert served.ep.now() == 0.0  # unchanged


def test_control_unknown_path_and_wrong_method(served: Served) -> None:
    status, error = control(served, "GET", "/_control/nope")
    assert (status, error["error"]) == (404, "NotFound")
    status, headers, _ = served.request("GET", "/_control/clock/advance")
    assert (status, headers["allow"]) == (405, "POST")


def test_control_health_lists_the_queues(served: Served) -> None:
    served.json("CreateQueue", {"QueueName": "b"})
    served.json("CreateQueue", {"QueueName": "a"})
    assert control(served, "GET", "/_control/health") == (200, {"ok": True, "queues": ["a", "b"]})
