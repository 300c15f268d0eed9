"""The query protocol of the SQS endpoint (sqs_endpoint/query.py, ServiceModel.parse_query and
serialize_query) read and written by botocore's own query-protocol code.

A query-era client's request is made by botocore's ``QuerySerializer`` and percent-encoded as
botocore sends it; ``parse_form`` + ``parse_query`` + ``validate_input`` must give the same
request as the JSON protocol's params. The XML the endpoint answers with is read back by
botocore's ``QueryParser``: once over the query-era description ``sqs_endpoint.model`` derives
(botocore's JSON-era model with sqs_endpoint/data/query.json), and once over a real query-era SQS
model when this machine has one (``SQS_QUERY_ERA_MODEL``, or the botocore that the Google Cloud
SDK vendors), so a wire name wrong in query.json cannot pass by agreeing with itself. Every
error path of the form parser is checked: malformed query strings, missing and unknown
actions, repeated fields, values their type cannot hold, list indexes, map entries.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import botocore.model  # type: ignore[import-untyped]
import botocore.parsers  # type: ignore[import-untyped]
import botocore.serialize  # type: ignore[import-untyped]
import botocore.utils  # type: ignore[import-untyped]
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqs_endpoint import model as sqs_model
from sqs_endpoint.errors import SqsError, load_query_data
from sqs_endpoint.query import parse_form

MODEL = sqs_model.load()
URL = "http://127.0.0.1:9324/000000000000/orders"

#: Where a real query-era SQS model (botocore < 1.31 / 1.33..1.34.9x) may be on this machine.
_QUERY_ERA_CANDIDATES = [
    os.environ.get("SQS_QUERY_ERA_MODEL", ""),
    "/usr/lib/google-cloud-sdk/lib/third_party/botocore/data/sqs/2012-11-05/service-2.json",
]


def _real_query_era() -> dict[str, Any] | None:
    for candidate in _QUERY_ERA_CANDIDATES:
        if candidate and Path(candidate).is_file():
            description: dict[str, Any] = json.loads(Path(candidate).read_text())
            if description["metadata"].get("protocol") == "query":
                return description
    return None


REAL_QUERY_ERA = _real_query_era()
DERIVED = botocore.model.ServiceModel(MODEL.query_description, service_name="sqs")


def encoded(op: str, params: Mapping[str, Any], service: Any = DERIVED) -> bytes:
    """The body a query-era botocore sends for ``op``: its serializer, its percent-encoding."""
    request = botocore.serialize.create_serializer("query").serialize_to_request(
        params, service.operation_model(op)
    )
    text: str = botocore.utils.percent_encode_sequence(request["body"])
    return text.encode("ascii")


def through_query(op: str, params: Mapping[str, Any], service: Any = DERIVED) -> dict[str, Any]:
    parsed_op, parsed = MODEL.parse_query(parse_form(encoded(op, params, service)))
    assert parsed_op == op
    return MODEL.validate_input(op, parsed)


BINARY = bytes(range(256))
ATTRIBUTES = {
    "color": {"DataType": "String", "StringValue": "red & <blue>"},
    "n": {"DataType": "Number.int", "StringValue": "-12"},
    "raw": {"DataType": "Binary", "BinaryValue": BINARY},
    "uni": {"DataType": "String", "StringValue": "h\u00e9llo \u2603 \U0001f600"},
}

#: One request per operation that has members to carry, each member kind among them.
REQUESTS: dict[str, dict[str, Any]] = {
    "SendMessage": {
        "QueueUrl": URL,
        "MessageBody": "body with = & + % and\nnewline",
        "DelaySeconds": 5,
        "MessageAttributes": ATTRIBUTES,
        "MessageSystemAttributes": {
            "AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-abc"}
        },
        "MessageGroupId": "g",
        "MessageDeduplicationId": "d",
    },
    "SendMessageBatch": {
        "QueueUrl": URL,
        "Entries": [
            {"Id": "a", "MessageBody": "one", "MessageAttributes": ATTRIBUTES},
            {"Id": "b-2_", "MessageBody": "two", "DelaySeconds": 0},
        ],
    },
    "ReceiveMessage": {
        "QueueUrl": URL,
        "AttributeNames": ["All", "ApproximateReceiveCount"],
        "MessageAttributeNames": ["color", "n.*"],
        "MaxNumberOfMessages": 10,
        "VisibilityTimeout": 0,
        "WaitTimeSeconds": 20,
        "ReceiveRequestAttemptId": "attempt",
    },
    "DeleteMessage": {"QueueUrl": URL, "ReceiptHandle": "rh+/="},
    "DeleteMessageBatch": {
        "QueueUrl": URL,
        "Entries": [{"Id": "1", "ReceiptHandle": "r1"}, {"Id": "2", "ReceiptHandle": "r2"}],
    },
    "ChangeMessageVisibility": {"QueueUrl": URL, "ReceiptHandle": "r", "VisibilityTimeout": 43200},
    "ChangeMessageVisibilityBatch": {
        "QueueUrl": URL,
        "Entries": [{"Id": "x", "ReceiptHandle": "r", "VisibilityTimeout": 7}],
    },
    "CreateQueue": {
        "QueueName": "orders.fifo",
        "Attributes": {"FifoQueue": "true", "VisibilityTimeout": "30"},
        "tags": {"team": "a", "cost": "b"},
    },
    "GetQueueUrl": {"QueueName": "orders", "QueueOwnerAWSAccountId": "000000000000"},
    "GetQueueAttributes": {"QueueUrl": URL, "AttributeNames": ["All"]},
    "SetQueueAttributes": {
        "QueueUrl": URL,
        "Attributes": {"RedrivePolicy": '{"deadLetterTargetArn":"arn","maxReceiveCount":"3"}'},
    },
    "ListQueues": {"QueueNamePrefix": "ord", "MaxResults": 5, "NextToken": "t"},
    "DeleteQueue": {"QueueUrl": URL},
    "PurgeQueue": {"QueueUrl": URL},
    "TagQueue": {"QueueUrl": URL, "Tags": {"k": "v"}},
    "UntagQueue": {"QueueUrl": URL, "TagKeys": ["k", "j"]},
    "ListQueueTags": {"QueueUrl": URL},
    "AddPermission": {
        "QueueUrl": URL,
        "Label": "l",
        "AWSAccountIds": ["111111111111"],
        "Actions": ["SendMessage", "ReceiveMessage"],
    },
    "RemovePermission": {"QueueUrl": URL, "Label": "l"},
    "ListDeadLetterSourceQueues": {"QueueUrl": URL, "MaxResults": 3},
    "StartMessageMoveTask": {
        "SourceArn": "arn:aws:sqs:us-east-1:000000000000:dlq",
        "MaxNumberOfMessagesPerSecond": 10,
    },
    "CancelMessageMoveTask": {"TaskHandle": "h"},
    "ListMessageMoveTasks": {
        "SourceArn": "arn:aws:sqs:us-east-1:000000000000:dlq",
        "MaxResults": 1,
    },
}


def test_every_operation_of_the_model_has_a_request_here() -> None:
    assert set(REQUESTS) == MODEL.operation_names


@pytest.mark.parametrize("op", sorted(REQUESTS))
def test_a_query_era_botocore_request_parses_into_the_json_shape(op: str) -> None:
    assert through_query(op, REQUESTS[op]) == MODEL.validate_input(op, REQUESTS[op])


@pytest.mark.skipif(REAL_QUERY_ERA is None, reason="no query-era SQS model on this machine")
@pytest.mark.parametrize("op", sorted(REQUESTS))
def test_a_request_of_the_real_query_era_model_parses_alike(op: str) -> None:
    real = botocore.model.ServiceModel(REAL_QUERY_ERA, service_name="sqs")
    if op not in real.operation_names:
        pytest.skip(f"{op} is newer than this query-era model")
    params = REQUESTS[op]
    members = real.operation_model(op).input_shape.members
    # Members newer than the query-era model (MessageSystemAttributes in old ones) are left out.
    params = {k: v for k, v in params.items() if k in members}
    assert through_query(op, params, real) == MODEL.validate_input(op, params)


def test_the_wire_names_are_the_query_protocols() -> None:
    # What the SQS API Reference's query examples show, written by hand: not derived from
    # query.json, so a wrong entry there fails here even without a query-era model.
    form = parse_form(encoded("SendMessageBatch", REQUESTS["SendMessageBatch"]))
    assert form["SendMessageBatchRequestEntry.1.Id"] == ["a"]
    assert form["SendMessageBatchRequestEntry.1.MessageAttribute.1.Name"] == ["color"]
    assert form["SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType"] == ["String"]
    assert form["SendMessageBatchRequestEntry.2.DelaySeconds"] == ["0"]
    form = parse_form(encoded("CreateQueue", REQUESTS["CreateQueue"]))
    assert form["Attribute.1.Name"] == ["FifoQueue"] and form["Attribute.1.Value"] == ["true"]
    assert form["Tag.1.Key"] == ["team"] and form["Tag.1.Value"] == ["a"]
    form = parse_form(encoded("ReceiveMessage", REQUESTS["ReceiveMessage"]))
    assert form["AttributeName.2"] == ["ApproximateReceiveCount"]
    assert form["MessageAttributeName.1"] == ["color"]
    # TagQueue's Tags has no wire name of its own: it takes its map's (TagMap: Tag).
    form = parse_form(encoded("TagQueue", REQUESTS["TagQueue"]))
    assert form["Tag.1.Key"] == ["k"] and form["Tag.1.Value"] == ["v"]
    form = parse_form(encoded("UntagQueue", REQUESTS["UntagQueue"]))
    assert form["TagKey.2"] == ["j"]


def test_a_hand_written_form_parses() -> None:
    body = (
        "Action=SendMessage&Version=2012-11-05&QueueUrl=http%3A%2F%2Fh%2F0%2Fq"
        "&MessageBody=a+b%26c&MessageAttribute.1.Name=k&MessageAttribute.1.Value.DataType=Binary"
        "&MessageAttribute.1.Value.BinaryValue=AAE%3D&DelaySeconds=3&AWSAccessKeyId=ignored"
    )
    op, params = MODEL.parse_query(parse_form(body))
    assert op == "SendMessage"
    assert MODEL.validate_input(op, params) == {
        "QueueUrl": "http://h/0/q",
        "MessageBody": "a b&c",
        "DelaySeconds": 3,
        "MessageAttributes": {"k": {"DataType": "Binary", "BinaryValue": b"\x00\x01"}},
    }


def test_list_indexes_are_read_in_numeric_order_and_an_empty_list_is_the_bare_key() -> None:
    _, params = MODEL.parse_query(
        {
            "Action": ["UntagQueue"],
            "QueueUrl": [URL],
            "TagKey.10": ["ten"],
            "TagKey.2": ["two"],
            "TagKey.1": ["one"],
        }
    )
    assert params["TagKeys"] == ["one", "two", "ten"]
    _, params = MODEL.parse_query({"Action": ["UntagQueue"], "QueueUrl": [URL], "TagKey": [""]})
    assert params["TagKeys"] == []
    empty = encoded("UntagQueue", {"QueueUrl": URL, "TagKeys": []})
    assert MODEL.parse_query(parse_form(empty))[1]["TagKeys"] == []


# -- error paths -----------------------------------------------------------------------------


def refused(code: str, call: Any, *args: Any) -> SqsError:
    with pytest.raises(SqsError) as caught:
        call(*args)
    assert caught.value.code == code, caught.value
    return caught.value


@pytest.mark.parametrize(
    "body",
    [
        b"Action=ListQueues&novalue",  # a field with no '='
        b"Action=ListQueues&&QueueNamePrefix=a",  # an empty field
        b"Action=ListQueues&QueueNamePrefix=\xff",  # bytes that are not UTF-8
        b"Action=ListQueues&QueueNamePrefix=%ff%fe",  # percent-decoded, not UTF-8
    ],
)
def test_a_malformed_query_string_is_refused(body: bytes) -> None:
    err = refused("MalformedQueryString", parse_form, body)
    assert err.status == 404  # the Common Errors page's status for MalformedQueryString


def test_no_action_and_an_unknown_action_are_refused() -> None:
    refused("MissingAction", MODEL.parse_query, {"QueueUrl": [URL]})
    refused("MissingAction", MODEL.parse_query, {"Action": [""]})
    err = refused("InvalidAction", MODEL.parse_query, {"Action": ["SendMessages"]})
    assert "SendMessages" in err.message and err.query_code == "InvalidAction"


def test_a_field_given_twice_is_refused_naming_it() -> None:
    form = parse_form("Action=DeleteQueue&QueueUrl=a&QueueUrl=b")
    err = refused("InvalidQueryParameter", MODEL.parse_query, form)
    assert "QueueUrl" in err.message


@pytest.mark.parametrize(
    ("fields", "member"),
    [
        (
            {"Action": "ReceiveMessage", "QueueUrl": URL, "MaxNumberOfMessages": "ten"},
            "MaxNumberOfMessages",
        ),
        (
            {"Action": "ReceiveMessage", "QueueUrl": URL, "WaitTimeSeconds": "1.5"},
            "WaitTimeSeconds",
        ),
        (
            {
                "Action": "SendMessageBatch",
                "QueueUrl": URL,
                "SendMessageBatchRequestEntry.x.Id": "a",
            },
            "SendMessageBatchRequestEntry.x",
        ),
        ({"Action": "UntagQueue", "QueueUrl": URL, "TagKey.0": "k"}, "TagKey.0"),
        ({"Action": "UntagQueue", "QueueUrl": URL, "TagKey": "k"}, "TagKey"),
    ],
)
def test_a_value_its_member_cannot_hold_is_refused_naming_the_member(
    fields: dict[str, str], member: str
) -> None:
    err = refused("InvalidParameterValue", MODEL.parse_query, {k: [v] for k, v in fields.items()})
    assert member in err.message


def test_a_map_entry_without_its_name_or_value_is_refused_naming_it() -> None:
    base = {"Action": ["CreateQueue"], "QueueName": ["q"]}
    err = refused("MissingParameter", MODEL.parse_query, {**base, "Attribute.1.Name": ["A"]})
    assert "Attribute.1.Value" in err.message
    err = refused("MissingParameter", MODEL.parse_query, {**base, "Attribute.1.Value": ["1"]})
    assert "Attribute.1.Name" in err.message


def test_a_map_key_given_twice_is_refused() -> None:
    form = {
        "Action": ["TagQueue"],
        "QueueUrl": [URL],
        "Tag.1.Key": ["k"],
        "Tag.1.Value": ["1"],
        "Tag.2.Key": ["k"],
        "Tag.2.Value": ["2"],
    }
    err = refused("InvalidParameterValue", MODEL.parse_query, form)
    assert "Tag.2.Key" in err.message


def test_a_missing_required_member_of_a_query_request_names_it() -> None:
    op, params = MODEL.parse_query(parse_form("Action=SendMessage&MessageBody=x"))
    err = refused("MissingParameter", MODEL.validate_input, op, params)
    assert "QueueUrl" in err.message
    form = parse_form("Action=SendMessageBatch&QueueUrl=u&SendMessageBatchRequestEntry.1.Id=a")
    op, params = MODEL.parse_query(form)
    err = refused("MissingParameter", MODEL.validate_input, op, params)
    assert "Entries.1.MessageBody" in err.message


def test_eleven_entries_of_a_query_batch_are_too_many() -> None:
    entries = [{"Id": str(i), "ReceiptHandle": "r"} for i in range(11)]
    op, params = MODEL.parse_query(
        parse_form(encoded("DeleteMessageBatch", {"QueueUrl": URL, "Entries": entries}))
    )
    err = refused("TooManyEntriesInBatchRequest", MODEL.validate_input, op, params)
    assert err.query_code == "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"


# -- XML responses ---------------------------------------------------------------------------

MESSAGE = {
    "MessageId": "5fea7756-0ea4-451a-a703-a558b933e274",
    "ReceiptHandle": "MbZj6wDWli+JvwwJaBV+3dcjk2YW2vA3+STFFljTM8tJJg6HRG6PYSasuWXPJB+Cw=",
    "MD5OfBody": "fafb00f5732ab283681e124bf8747ed1",
    "Body": "a & b < c > d\r\n\"quoted\" 'single' \u00e9 \U0001f600",
    "Attributes": {"SenderId": "AIDA", "SentTimestamp": "1238099229000"},
    "MD5OfMessageAttributes": "c932db14a896c663f83c260297d594ff",
    "MessageAttributes": {
        "color": {"DataType": "String", "StringValue": "red"},
        "raw": {"DataType": "Binary", "BinaryValue": BINARY},
    },
}
ENTRY_ERROR = {"Id": "b", "SenderFault": True, "Code": "InvalidParameterValue", "Message": "no"}

#: One result per operation with an output, each member kind among them.
RESULTS: dict[str, dict[str, Any]] = {
    "ReceiveMessage": {"Messages": [MESSAGE, {**MESSAGE, "MessageId": "2"}]},
    "SendMessage": {
        "MD5OfMessageBody": "fafb00f5732ab283681e124bf8747ed1",
        "MD5OfMessageAttributes": "3ae8f24a165a8cedc005670c81a27295",
        "MD5OfMessageSystemAttributes": "5ae8f24a165a8cedc005670c81a27295",
        "MessageId": "5fea7756",
        "SequenceNumber": "18849496460467696128",
    },
    "SendMessageBatch": {
        "Successful": [
            {"Id": "a", "MessageId": "m", "MD5OfMessageBody": "x", "SequenceNumber": "1"}
        ],
        "Failed": [ENTRY_ERROR],
    },
    "DeleteMessageBatch": {"Successful": [{"Id": "a"}, {"Id": "c"}], "Failed": [ENTRY_ERROR]},
    "ChangeMessageVisibilityBatch": {"Successful": [{"Id": "a"}], "Failed": [ENTRY_ERROR]},
    "CreateQueue": {"QueueUrl": URL},
    "GetQueueUrl": {"QueueUrl": URL},
    "GetQueueAttributes": {
        "Attributes": {"VisibilityTimeout": "30", "QueueArn": "arn:aws:sqs:r:0:orders"}
    },
    "ListQueues": {"QueueUrls": [URL, URL + "2"], "NextToken": "t"},
    "ListQueueTags": {"Tags": {"team": "a", "empty": ""}},
    "ListDeadLetterSourceQueues": {"queueUrls": [URL], "NextToken": "n"},
    "StartMessageMoveTask": {"TaskHandle": "handle"},
    "CancelMessageMoveTask": {"ApproximateNumberOfMessagesMoved": 12},
    "ListMessageMoveTasks": {
        "Results": [
            {
                "TaskHandle": "h",
                "Status": "RUNNING",
                "SourceArn": "arn:s",
                "DestinationArn": "arn:d",
                "MaxNumberOfMessagesPerSecond": 5,
                "ApproximateNumberOfMessagesMoved": 2,
                "ApproximateNumberOfMessagesToMove": 3,
                "StartedTimestamp": 1700000000000,
            }
        ]
    },
}


def query_parsers() -> list[Any]:
    services = [pytest.param(DERIVED, id="derived")]
    if REAL_QUERY_ERA is not None:
        real = botocore.model.ServiceModel(REAL_QUERY_ERA, service_name="sqs")
        services.append(pytest.param(real, id="real-query-era"))
    return services


def read_xml(service: Any, op: str, body: bytes, status: int = 200) -> dict[str, Any]:
    shape = service.operation_model(op).output_shape
    parsed: dict[str, Any] = botocore.parsers.QueryParser().parse(
        {"body": body, "headers": {}, "status_code": status}, shape
    )
    return parsed


def test_every_operation_with_an_output_has_a_result_here() -> None:
    with_output = {op for op in MODEL.operation_names if DERIVED.operation_model(op).output_shape}
    assert set(RESULTS) == with_output


@pytest.mark.parametrize("service", query_parsers())
@pytest.mark.parametrize("op", sorted(RESULTS))
def test_botocores_query_parser_reads_the_xml_back(service: Any, op: str) -> None:
    if op not in service.operation_names:
        pytest.skip(f"{op} is newer than this query-era model")
    result = RESULTS[op]
    members = service.operation_model(op).output_shape.members
    result = {k: v for k, v in result.items() if k in members}
    parsed = read_xml(service, op, MODEL.serialize_query(op, result, "req-1"))
    assert parsed.pop("ResponseMetadata")["RequestId"] == "req-1"
    assert parsed == result


@pytest.mark.parametrize("op", ["DeleteMessage", "PurgeQueue", "TagQueue", "SetQueueAttributes"])
def test_an_operation_without_output_answers_with_its_request_id(op: str) -> None:
    body = MODEL.serialize_query(op, {}, "req-2")
    assert body.startswith(b'<?xml version="1.0"?><' + op.encode() + b"Response ")
    assert read_xml(DERIVED, op, body)["ResponseMetadata"]["RequestId"] == "req-2"


def test_the_xml_has_the_query_shape() -> None:
    # Written by hand from the SQS API Reference's ReceiveMessage example response.
    body = MODEL.serialize_query(
        "ReceiveMessage",
        {"Messages": [{"MessageId": "m", "Body": "b", "Attributes": {"SenderId": "s"}}]},
        "r",
    ).decode()
    assert body == (
        '<?xml version="1.0"?>'
        '<ReceiveMessageResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">'
        "<ReceiveMessageResult><Message><MessageId>m</MessageId><Body>b</Body>"
        "<Attribute><Name>SenderId</Name><Value>s</Value></Attribute></Message>"
        "</ReceiveMessageResult>"
        "<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></ReceiveMessageResponse>"
    )


def test_an_empty_flattened_list_is_no_element_and_reads_as_absent() -> None:
    # As on SQS: a query-era client sees no Failed member, a JSON client an empty list.
    result = {"Successful": [{"Id": "a"}], "Failed": []}
    body = MODEL.serialize_query("DeleteMessageBatch", result, "r")
    assert b"BatchResultErrorEntry" not in body
    assert "Failed" not in read_xml(DERIVED, "DeleteMessageBatch", body)
    assert json.loads(MODEL.serialize_json("DeleteMessageBatch", result)) == result


def test_a_carriage_return_survives_the_xml() -> None:
    # XML parsers turn a bare \r into \n: the body must carry it as a character reference.
    body = MODEL.serialize_query("ReceiveMessage", {"Messages": [{"Body": "a\rb\r\n"}]}, "r")
    assert b"&#xD;" in body
    assert read_xml(DERIVED, "ReceiveMessage", body)["Messages"][0]["Body"] == "a\rb\r\n"


def test_a_wrong_type_in_a_result_is_a_server_bug_named() -> None:
    with pytest.raises(TypeError, match="ApproximateNumberOfMessagesMoved"):
        MODEL.serialize_query(
            "CancelMessageMoveTask", {"ApproximateNumberOfMessagesMoved": "1"}, "r"
        )
    with pytest.raises(TypeError, match=r"Messages\.1\.Body"):
        MODEL.serialize_query("ReceiveMessage", {"Messages": [{"Body": 3}]}, "r")


_XML_TEXT = st.text(
    alphabet=st.characters(
        codec="utf-8",
        # The characters SQS allows in a message (#x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD ...).
        exclude_characters="".join(chr(c) for c in range(0x20) if c not in (0x9, 0xA, 0xD)),
    ).filter(lambda c: c not in "\ufffe\uffff"),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(body=_XML_TEXT, value=_XML_TEXT, name=st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True))
def test_any_allowed_text_round_trips_through_form_and_xml(
    body: str, value: str, name: str
) -> None:
    params = {
        "QueueUrl": URL,
        "MessageBody": body,
        "MessageAttributes": {name: {"DataType": "String", "StringValue": value}},
    }
    assert through_query("SendMessage", params) == params
    message = {"Body": body, "MessageAttributes": params["MessageAttributes"]}
    xml = MODEL.serialize_query("ReceiveMessage", {"Messages": [message]}, "r")
    assert read_xml(DERIVED, "ReceiveMessage", xml)["Messages"] == [message]


# -- ErrorResponse ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "query_code", "status"),
    [
        # The legacy codes and statuses a query-era client matches (SQS API Reference and the
        # query-era botocore model), written here by hand.
        ("QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", 400),
        ("QueueNameExists", "QueueAlreadyExists", 400),
        ("PurgeQueueInProgress", "AWS.SimpleQueueService.PurgeQueueInProgress", 403),
        (
            "TooManyEntriesInBatchRequest",
            "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
            400,
        ),
        ("InvalidAction", "InvalidAction", 400),
        ("MissingParameter", "MissingParameter", 400),
    ],
)
def test_the_error_response_is_read_by_botocore_with_the_legacy_code(
    code: str, query_code: str, status: int
) -> None:
    err = SqsError(code, "it <went> & wrong")
    got_status, headers, body = MODEL.query_error(err, "req-3")
    assert (got_status, headers["Content-Type"]) == (status, "text/xml")
    parsed = read_xml(DERIVED, "SendMessage", body, status)
    assert parsed["Error"] == {
        "Type": "Sender",
        "Code": query_code,
        "Message": "it <went> & wrong",
        "Detail": None,  # <Detail/>, as SQS sends it
    }
    assert parsed["ResponseMetadata"]["RequestId"] == "req-3"


def test_a_receiver_fault_is_typed_receiver() -> None:
    _, _, body = MODEL.query_error(SqsError("InternalFailure", "oops"), "r")
    assert b"<Type>Receiver</Type><Code>InternalFailure</Code>" in body
    assert read_xml(DERIVED, "SendMessage", body, 500)["Error"]["Type"] == "Receiver"


def test_a_blob_in_xml_is_base64() -> None:
    result = {
        "Messages": [{"MessageAttributes": {"r": {"DataType": "Binary", "BinaryValue": b"\x00"}}}]
    }
    body = MODEL.serialize_query("ReceiveMessage", result, "r")
    assert b"<BinaryValue>" + base64.b64encode(b"\x00") + b"</BinaryValue>" in body


# -- bad input: only SqsError, whatever the form ---------------------------------------------

_KEY_PART = st.sampled_from(
    [
        "QueueUrl",
        "MessageBody",
        "DelaySeconds",
        "MessageAttribute",
        "Name",
        "Value",
        "DataType",
        "StringValue",
        "BinaryValue",
        "StringListValue",
        "SendMessageBatchRequestEntry",
        "Id",
        "Attribute",
        "Tag",
        "Key",
        "TagKey",
        "TagKeys",
        "AttributeName",
        "MaxNumberOfMessages",
        "1",
        "2",
        "0",
        "-1",
        "x",
        "",
    ]
)
_KEYS = st.lists(_KEY_PART, min_size=1, max_size=5).map(".".join)
_ACTIONS = st.sampled_from([*sorted(MODEL.operation_names), "", "Nope"])


@settings(max_examples=300, deadline=None)
@given(
    action=_ACTIONS,
    fields=st.dictionaries(_KEYS, st.lists(st.text(max_size=8), min_size=1, max_size=2)),
)
def test_any_form_is_parsed_or_refused_with_an_sqs_error(
    action: str, fields: dict[str, list[str]]
) -> None:
    form = {**fields, "Action": [action]}
    try:
        op, params = MODEL.parse_query(form)
        MODEL.validate_input(op, params)
    except SqsError as err:
        assert err.status in (400, 404) and err.message


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
_MEMBER = st.sampled_from(
    ["QueueUrl", "MessageBody", "Entries", "MessageAttributes", "Attributes", "Tags", "Id", "x"]
)


@settings(max_examples=300, deadline=None)
@given(
    op=st.sampled_from(sorted(MODEL.operation_names)),
    params=st.dictionaries(_MEMBER, _JSON, max_size=4) | _JSON,
)
def test_any_json_request_is_validated_or_refused_with_an_sqs_error(op: str, params: Any) -> None:
    try:
        MODEL.validate_input(op, params)
    except SqsError as err:
        assert err.status == 400 and err.message


@pytest.mark.skipif(REAL_QUERY_ERA is None, reason="no query-era SQS model on this machine")
def test_the_legacy_codes_agree_with_the_real_query_era_model() -> None:
    assert REAL_QUERY_ERA is not None
    data = load_query_data()
    compared = 0
    for name, shape in REAL_QUERY_ERA["shapes"].items():
        if "error" in shape:
            mine = data["errors"][name]
            assert (mine["code"], mine["httpStatusCode"], mine["senderFault"]) == (
                shape["error"]["code"],
                shape["error"]["httpStatusCode"],
                shape["error"]["senderFault"],
            ), name
            compared += 1
    assert compared >= 10
    assert REAL_QUERY_ERA["metadata"]["xmlNamespace"] == data["xmlNamespace"]


#: A query-era botocore importable from a directory (the Google Cloud SDK vendors 1.34.22).
_QUERY_ERA_BOTOCORE = [
    os.environ.get("SQS_QUERY_ERA_BOTOCORE", ""),
    "/usr/lib/google-cloud-sdk/lib/third_party",
]
#: Run by the old botocore: its serializer writes REQUESTS, its parser reads the XML given.
_OLD_BOTOCORE_SCRIPT = """
import pickle, sys
import botocore, botocore.session, botocore.serialize, botocore.utils
from botocore.parsers import QueryParser
service = botocore.session.get_session().get_service_model("sqs")
assert service.protocol == "query", service.protocol
requests, results, error = pickle.load(sys.stdin.buffer)
out = {"version": botocore.__version__, "bodies": {}, "parsed": {}}
serializer = botocore.serialize.create_serializer("query")
for op, params in requests.items():
    if op in service.operation_names:
        model = service.operation_model(op)
        params = {k: v for k, v in params.items() if k in model.input_shape.members}
        body = serializer.serialize_to_request(params, model)["body"]
        out["bodies"][op] = (params, botocore.utils.percent_encode_sequence(body))
for op, xml in results.items():
    if op in service.operation_names:
        shape = service.operation_model(op).output_shape
        parsed = QueryParser().parse({"body": xml, "headers": {}, "status_code": 200}, shape)
        parsed.pop("ResponseMetadata")
        out["parsed"][op] = (parsed, list(shape.members))
error = QueryParser().parse({"body": error, "headers": {}, "status_code": 400}, None)
out["error"] = error["Error"]
pickle.dump(out, sys.stdout.buffer)
"""


def _old_botocore() -> str | None:
    for candidate in _QUERY_ERA_BOTOCORE:
        if candidate and (Path(candidate) / "botocore" / "__init__.py").is_file():
            return candidate
    return None


@pytest.mark.skipif(_old_botocore() is None, reason="no query-era botocore on this machine")
def test_a_query_era_botocore_of_its_own_reads_and_writes_this_wire() -> None:
    # The old botocore's own serializer, parser and model, in a process of its own: the
    # requests it sends parse into the JSON shapes, and it reads every result and an error.
    results = {op: MODEL.serialize_query(op, r, "rid") for op, r in RESULTS.items()}
    error = MODEL.query_error(SqsError("QueueDoesNotExist", "gone"), "rid")[2]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", _OLD_BOTOCORE_SCRIPT],
        input=pickle.dumps((REQUESTS, results, error)),
        capture_output=True,
        env={**env, "PYTHONPATH": str(_old_botocore())},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    out = pickle.loads(done.stdout)
    assert out["bodies"] and out["parsed"]
    for op, (params, body) in out["bodies"].items():
        parsed_op, parsed = MODEL.parse_query(parse_form(body))
        assert parsed_op == op
        assert MODEL.validate_input(op, parsed) == MODEL.validate_input(op, params), op
    for op, (parsed, members) in out["parsed"].items():
        assert parsed == {k: v for k, v in RESULTS[op].items() if k in members}, op
    assert out["error"] == {
        "Type": "Sender",
        "Code": "AWS.SimpleQueueService.NonExistentQueue",
        "Message": "gone",
        "Detail": None,
    }
