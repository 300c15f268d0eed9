"""The SQS service model of the endpoint (sqs_endpoint/model.py, sqs_endpoint/errors.py): request
validation,
the JSON protocol's responses and both protocols' errors, and sqs_endpoint/data/query.json kept in
step with botocore's model.

Validation: a missing required member is ``MissingParameter`` naming the member by its path, a
value of the wrong type or out of its type's range ``InvalidParameterValue`` naming it, an
unknown operation ``InvalidAction``, and a batch the errors the model lists for it
(``EmptyBatchRequest``, ``TooManyEntriesInBatchRequest``, ``InvalidBatchEntryId``,
``BatchEntryIdsNotDistinct``). JSON bodies and errors are read back by botocore's own
``JSONParser`` over its model, the error's code through the ``x-amzn-query-error`` header as
botocore reads it for an ``awsQueryCompatible`` service.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import botocore.loaders  # type: ignore[import-untyped]
import botocore.model  # type: ignore[import-untyped]
import botocore.parsers  # type: ignore[import-untyped]
import pytest

from sqs_endpoint import model as sqs_model
from sqs_endpoint.errors import SqsError, error_info, known_codes, load_query_data

MODEL = sqs_model.load()
BOTOCORE = botocore.model.ServiceModel(
    botocore.loaders.Loader().load_service_model("sqs", "service-2"), service_name="sqs"
)
URL = "http://127.0.0.1:9324/000000000000/orders"

#: The actions of the SQS API Reference (2012-11-05), written here by hand.
API_REFERENCE_ACTIONS = {
    "AddPermission",
    "CancelMessageMoveTask",
    "ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch",
    "CreateQueue",
    "DeleteMessage",
    "DeleteMessageBatch",
    "DeleteQueue",
    "GetQueueAttributes",
    "GetQueueUrl",
    "ListDeadLetterSourceQueues",
    "ListMessageMoveTasks",
    "ListQueues",
    "ListQueueTags",
    "PurgeQueue",
    "ReceiveMessage",
    "RemovePermission",
    "SendMessage",
    "SendMessageBatch",
    "SetQueueAttributes",
    "StartMessageMoveTask",
    "TagQueue",
    "UntagQueue",
}


def refused(code: str, op: str, params: Any) -> SqsError:
    with pytest.raises(SqsError) as caught:
        MODEL.validate_input(op, params)
    assert caught.value.code == code, caught.value
    return caught.value


def test_the_operations_are_the_api_references() -> None:
    assert MODEL.operation_names >= API_REFERENCE_ACTIONS
    assert set(BOTOCORE.operation_names) == MODEL.operation_names


# -- validation ------------------------------------------------------------------------------


def test_a_valid_request_comes_back_with_only_the_models_members() -> None:
    params = {
        "QueueUrl": URL,
        "MessageBody": "b",
        "DelaySeconds": 3,
        "Unknown": "dropped",
        "MessageGroupId": None,
        "MessageAttributes": {
            "k": {"DataType": "Binary", "BinaryValue": base64.b64encode(b"\x00\x01").decode()}
        },
    }
    assert MODEL.validate_input("SendMessage", params) == {
        "QueueUrl": URL,
        "MessageBody": "b",
        "DelaySeconds": 3,
        "MessageAttributes": {"k": {"DataType": "Binary", "BinaryValue": b"\x00\x01"}},
    }


@pytest.mark.parametrize(
    ("op", "params", "member"),
    [
        ("SendMessage", {"MessageBody": "b"}, "QueueUrl"),
        ("SendMessage", {"QueueUrl": URL}, "MessageBody"),
        ("SendMessage", {"QueueUrl": URL, "MessageBody": None}, "MessageBody"),
        ("CreateQueue", {}, "QueueName"),
        ("ChangeMessageVisibility", {"QueueUrl": URL, "ReceiptHandle": "r"}, "VisibilityTimeout"),
        (
            "SendMessageBatch",
            {"QueueUrl": URL, "Entries": [{"Id": "a", "MessageBody": "b"}, {"Id": "c"}]},
            "Entries.2.MessageBody",
        ),
        (
            "SendMessage",
            {
                "QueueUrl": URL,
                "MessageBody": "b",
                "MessageAttributes": {"color": {"StringValue": "red"}},
            },
            "MessageAttributes.color.DataType",
        ),
    ],
)
def test_a_missing_required_member_is_named(op: str, params: Any, member: str) -> None:
    err = refused("MissingParameter", op, params)
    assert err.message == f"The request must contain the parameter {member}."
    assert (err.status, err.query_code) == (400, "MissingParameter")


@pytest.mark.parametrize(
    ("op", "params", "member"),
    [
        ("SendMessage", {"QueueUrl": 7, "MessageBody": "b"}, "QueueUrl"),
        ("SendMessage", {"QueueUrl": URL, "MessageBody": "b", "DelaySeconds": "5"}, "DelaySeconds"),
        (
            "SendMessage",
            {"QueueUrl": URL, "MessageBody": "b", "DelaySeconds": True},
            "DelaySeconds",
        ),
        ("SendMessage", {"QueueUrl": URL, "MessageBody": "b", "DelaySeconds": 1.5}, "DelaySeconds"),
        ("ReceiveMessage", {"QueueUrl": URL, "WaitTimeSeconds": 2**31}, "WaitTimeSeconds"),
        ("ReceiveMessage", {"QueueUrl": URL, "AttributeNames": "All"}, "AttributeNames"),
        ("ReceiveMessage", {"QueueUrl": URL, "AttributeNames": ["All", 3]}, "AttributeNames.2"),
        ("CreateQueue", {"QueueName": "q", "Attributes": ["VisibilityTimeout"]}, "Attributes"),
        (
            "CreateQueue",
            {"QueueName": "q", "Attributes": {"DelaySeconds": 5}},
            "Attributes.DelaySeconds",
        ),
        ("TagQueue", {"QueueUrl": URL, "Tags": {"k": None}}, "Tags.k"),
        ("SendMessageBatch", {"QueueUrl": URL, "Entries": {"Id": "a"}}, "Entries"),
        (
            "SendMessage",
            {
                "QueueUrl": URL,
                "MessageBody": "b",
                "MessageAttributes": {"r": {"DataType": "Binary", "BinaryValue": "not base64!"}},
            },
            "MessageAttributes.r.BinaryValue",
        ),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_member(
    op: str, params: Any, member: str
) -> None:
    err = refused("InvalidParameterValue", op, params)
    assert f"parameter {member} " in err.message


def test_a_request_that_is_not_an_object_is_refused() -> None:
    err = refused("InvalidParameterValue", "ListQueues", ["QueueNamePrefix"])
    assert "ListQueues" in err.message


def test_an_unknown_operation_is_invalid_action() -> None:
    err = refused("InvalidAction", "SendMessages", {})
    assert "SendMessages" in err.message and err.status == 400


def test_the_integer_types_hold_their_ranges() -> None:
    ok = {"QueueUrl": URL, "MaxNumberOfMessages": 2**31 - 1, "VisibilityTimeout": -(2**31)}
    assert MODEL.validate_input("ReceiveMessage", ok) == ok


#: The member a batch entry carries beside its Id, per batch operation.
BATCHES: dict[str, dict[str, str]] = {
    "SendMessageBatch": {"MessageBody": "b"},
    "DeleteMessageBatch": {"ReceiptHandle": "r"},
    "ChangeMessageVisibilityBatch": {"ReceiptHandle": "r"},
}


@pytest.mark.parametrize("op", sorted(BATCHES))
def test_the_batch_rules_the_model_names(op: str) -> None:
    def entry(i: int) -> dict[str, str]:
        return {"Id": str(i), **BATCHES[op]}

    # The model lists these errors for each batch operation: the rules come from there.
    assert {
        "EmptyBatchRequest",
        "TooManyEntriesInBatchRequest",
        "BatchEntryIdsNotDistinct",
        "InvalidBatchEntryId",
    } <= MODEL.error_codes(op)
    ten = [entry(i) for i in range(10)]
    assert len(MODEL.validate_input(op, {"QueueUrl": URL, "Entries": ten})["Entries"]) == 10
    err = refused(
        "TooManyEntriesInBatchRequest", op, {"QueueUrl": URL, "Entries": [*ten, entry(10)]}
    )
    assert "11" in err.message
    assert err.query_code == "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"
    err = refused("EmptyBatchRequest", op, {"QueueUrl": URL, "Entries": []})
    assert err.query_code == "AWS.SimpleQueueService.EmptyBatchRequest"
    err = refused(
        "BatchEntryIdsNotDistinct", op, {"QueueUrl": URL, "Entries": [entry(1), entry(1)]}
    )
    assert "1" in err.message
    for bad in ("a.b", "", "x" * 81, "\u00e9"):
        refused("InvalidBatchEntryId", op, {"QueueUrl": URL, "Entries": [{**entry(0), "Id": bad}]})
    assert MODEL.validate_input(
        op, {"QueueUrl": URL, "Entries": [{**entry(0), "Id": "A-z_9" * 16}]}
    )
    refused("MissingParameter", op, {"QueueUrl": URL})


def test_enums_are_left_to_the_operations() -> None:
    # SQS takes message system attribute names in ReceiveMessage's AttributeNames, though its
    # model's enum lists queue attributes: validation must not refuse what SQS accepts.
    params = {"QueueUrl": URL, "AttributeNames": ["ApproximateReceiveCount", "SentTimestamp"]}
    assert MODEL.validate_input("ReceiveMessage", params) == params
    assert "ApproximateReceiveCount" not in MODEL.enum("QueueAttributeName")
    assert {"VisibilityTimeout", "RedrivePolicy", "All"} <= MODEL.enum("QueueAttributeName")


def test_the_target_header_names_the_operation() -> None:
    assert MODEL.operation_from_target("AmazonSQS.SendMessage") == "SendMessage"
    for bad in (None, "", "AmazonSQS.", "AmazonSQS.Nope", "DynamoDB_20120810.SendMessage", "Send"):
        with pytest.raises(SqsError) as caught:
            MODEL.operation_from_target(bad)
        assert caught.value.code == "InvalidAction"


# -- JSON responses --------------------------------------------------------------------------


def read_json(op: str, body: bytes, headers: dict[str, str], status: int = 200) -> dict[str, Any]:
    shape = BOTOCORE.operation_model(op).output_shape
    response = {"body": body, "headers": headers, "status_code": status}
    parsed: dict[str, Any] = botocore.parsers.JSONParser().parse(response, shape)
    return parsed


def test_botocore_reads_a_json_result_back() -> None:
    result = {
        "Messages": [
            {
                "MessageId": "m",
                "ReceiptHandle": "r",
                "MD5OfBody": "x",
                "Body": "\u00e9 \r\n",
                "Attributes": {"SentTimestamp": "1"},
                "MessageAttributes": {"b": {"DataType": "Binary", "BinaryValue": b"\x00\xff"}},
            }
        ]
    }
    body = MODEL.serialize_json("ReceiveMessage", result)
    parsed = read_json("ReceiveMessage", body, {})
    parsed.pop("ResponseMetadata")
    assert parsed == result
    # The wire's blob is base64 text.
    message = json.loads(body)["Messages"][0]
    assert (
        message["MessageAttributes"]["b"]["BinaryValue"] == base64.b64encode(b"\x00\xff").decode()
    )


def test_a_json_result_carries_only_its_shapes_members() -> None:
    result = {"QueueUrl": URL, "Internal": object(), "Other": None}
    assert json.loads(MODEL.serialize_json("CreateQueue", result)) == {"QueueUrl": URL}
    batch = {"Successful": [{"Id": "a", "Extra": 1}], "Failed": []}
    assert json.loads(MODEL.serialize_json("DeleteMessageBatch", batch)) == {
        "Successful": [{"Id": "a"}],
        "Failed": [],
    }


def test_an_operation_without_output_has_an_empty_json_body() -> None:
    assert MODEL.serialize_json("DeleteMessage", {}) == b"{}"


def test_a_wrong_type_in_a_json_result_is_a_server_bug_named() -> None:
    with pytest.raises(TypeError, match=r"Successful\.1\.Id"):
        MODEL.serialize_json("DeleteMessageBatch", {"Successful": [{"Id": 1}]})
    with pytest.raises(TypeError, match="ApproximateNumberOfMessagesMoved"):
        MODEL.serialize_json("CancelMessageMoveTask", {"ApproximateNumberOfMessagesMoved": True})
    with pytest.raises(TypeError, match=r"Failed\.1\.SenderFault"):
        MODEL.serialize_json(
            "SendMessageBatch",
            {"Successful": [], "Failed": [{"Id": "a", "SenderFault": 1, "Code": "c"}]},
        )


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "query_code", "status"),
    [
        # Written by hand from the SQS API Reference and AWS's SDKs.
        ("QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", 400),
        ("QueueNameExists", "QueueAlreadyExists", 400),
        ("ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", 404),
        ("PurgeQueueInProgress", "AWS.SimpleQueueService.PurgeQueueInProgress", 403),
        ("OverLimit", "OverLimit", 403),
        ("InvalidAction", "InvalidAction", 400),
        ("MalformedQueryString", "MalformedQueryString", 404),
    ],
)
def test_the_json_error_shape_and_the_query_error_header(
    code: str, query_code: str, status: int
) -> None:
    got_status, headers, body = MODEL.json_error(SqsError(code, "what went wrong"))
    assert got_status == status
    assert headers == {
        "Content-Type": "application/x-amz-json-1.0",
        "x-amzn-query-error": f"{query_code};Sender",
    }
    assert json.loads(body) == {"__type": f"com.amazonaws.sqs#{code}", "message": "what went wrong"}
    # botocore's code: the legacy code from the header, the JSON code kept beside it.
    parsed = read_json("SendMessage", body, headers, status)
    assert parsed["Error"]["Code"] == query_code
    assert parsed["Error"]["QueryErrorCode"] == code
    assert parsed["Error"]["Message"] == "what went wrong"
    assert parsed["Error"]["Type"] == "Sender"


def test_a_receiver_fault_says_receiver() -> None:
    status, headers, _ = MODEL.json_error(SqsError("InternalFailure", "oops"))
    assert (status, headers["x-amzn-query-error"]) == (500, "InternalFailure;Receiver")


def test_an_error_overrides_the_table_and_a_code_no_table_has_gets_defaults() -> None:
    err = SqsError("QueueDoesNotExist", "m", status=404, sender_fault=False, query_code="X")
    assert (err.status, err.sender_fault, err.query_code, err.fault) == (
        404,
        False,
        "X",
        "Receiver",
    )
    err = SqsError("SomethingNew", "m")
    assert (err.status, err.sender_fault, err.query_code) == (400, True, "SomethingNew")
    with pytest.raises(ValueError, match="code"):
        SqsError("", "m")


def test_every_error_shape_of_the_model_has_its_query_code() -> None:
    # A newer botocore with a new error shape fails here until query.json names its code.
    shapes = BOTOCORE.shape_names
    errors = {n for n in shapes if BOTOCORE.shape_for(n).metadata.get("exception")}
    assert errors and errors <= known_codes()
    for name in errors:
        info = error_info(name)
        assert info is not None
        # Where the loaded model itself carries a code (some botocore versions do), it agrees.
        own = BOTOCORE.shape_for(name).metadata.get("error")
        if own:
            assert (own["code"], own["httpStatusCode"]) == (info.query_code, info.status)


def test_query_json_names_only_what_the_model_has() -> None:
    data = load_query_data()
    shapes = set(BOTOCORE.shape_names)
    assert set(data["shapes"]) <= shapes
    for name, patch in data["shapes"].items():
        members = set(BOTOCORE.shape_for(name).members) if "members" in patch else set()
        assert set(patch.get("members", {})) <= members, name
    with_output = {
        op for op in BOTOCORE.operation_names if BOTOCORE.operation_model(op).output_shape
    }
    assert set(data["resultWrappers"]) == with_output
    assert set(data["errors"]) <= shapes
    # Every list and map of the model says how it is flattened on the query wire.
    for name in shapes:
        shape = BOTOCORE.shape_for(name)
        if shape.type_name in ("list", "map") and shape.serialization.get("flattened"):
            query_shape = MODEL.query_description["shapes"][name]
            assert query_shape.get("flattened"), name
