"""The conformance kit on moto: in-process (``mock_aws``) and over HTTP (``ThreadedMotoServer``
on 127.0.0.1), no other network.

Every model output here comes from running the scenario on the model (``run_scenario(...,
"model")``), never typed in. Where moto differs, the test states what moto does: that is an
observation of moto 5.2.5's behaviour (issue 16), written down so that a moto upgrade that
changes it fails here and is noticed, and each such test checks that moto differs from the
model in exactly the op(s) named and nowhere else.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from botocore.exceptions import ClientError  # type: ignore[import-untyped]
from hypothesis import HealthCheck, given, settings

from model_tests.conformance import sqs as sqs_module
from model_tests.conformance.profile import check_profile, sqs_scenarios
from model_tests.conformance.sqs import (
    MotoClock,
    SqsEndpoint,
    SqsTarget,
    WallClock,
    open_endpoint,
    run_on_sqs,
)
from model_tests.scenario_format import QueueConfig
from model_tests.support import BOUND
from model_tests.targets import Output, run_scenario

ROOT = Path(__file__).resolve().parents[2]
SEED = {
    e["name"]: e for e in map(json.loads, (ROOT / "tests" / "data" / "seed_examples.jsonl").open())
}
ENDPOINTS = ("moto", "moto-server")


@pytest.fixture(scope="module", params=ENDPOINTS)
def endpoint(request: pytest.FixtureRequest) -> Iterator[SqsEndpoint]:
    """One endpoint for the module's tests on it (a server starts once, not per test)."""
    import moto.core.utils

    # Two endpoints open at once would stack two patched clocks; pytest tears one
    # parametrization down before the next, and this makes sure of it.
    assert not isinstance(getattr(moto.core.utils.utcnow, "__self__", None), MotoClock)
    with open_endpoint(request.param) as opened:
        yield opened


def sqs(ops: list[Any], **config: Any) -> dict[str, Any]:
    """A scenario inside the SQS profile: unbounded, visibility 30 s unless given."""
    scenario = {"capacity": None, "visibility_timeout": 30, **config, "ops": ops}
    assert check_profile(scenario) == []
    return scenario


def moto_differs(
    scenario: Mapping[str, Any], endpoint: SqsEndpoint, moto_says: Mapping[int, Output]
) -> None:
    """The endpoint's outputs are the model's except at the ops ``moto_says`` names, where
    they are what it says."""
    model = run_scenario(scenario, "model")
    got = run_on_sqs(scenario, endpoint)
    assert all(model[i] != out for i, out in moto_says.items()), "not a divergence"
    assert got == [moto_says.get(i, out) for i, out in enumerate(model)]


# -- agreement -----------------------------------------------------------------------------------


def test_the_seed_fifo_example_gives_the_models_outputs(endpoint: SqsEndpoint) -> None:
    # The seed's capacity (2) is never reached in it, so SQS's unbounded queue is the same.
    example = {**SEED["fifo"]["input"], "capacity": None, "visibility_timeout": 30}
    assert check_profile(example) == []
    assert run_on_sqs(example, endpoint) == run_scenario(example, "model")
    assert run_scenario(example, "model") == SEED["fifo"]["expected"]


def test_delays_batches_expiry_and_purge_agree(endpoint: SqsEndpoint) -> None:
    scenario = sqs(
        [
            ["enqueue", "a", "A", {"delay": 2}],
            ["enqueue_batch", [["b", "B"], ["c", "", {"delay": 0}]]],
            ["reserve_batch", 10],
            ["advance", 3],
            ["reserve", 5],
            ["ack_batch", [["b", 1], ["c", 1], ["zz", 1]]],
            ["extend_batch", [["a", 1, 10], ["a", 2, 10]]],
            ["advance", 6],
            ["reserve"],
            ["purge"],
            ["ack", "a", 1],
            ["new"],
            ["enqueue", "a", "again"],
            ["reserve"],
            ["use", 0],
            ["reserve"],
        ],
        visibility_timeout=5,
    )
    outputs = run_on_sqs(scenario, endpoint)
    assert outputs == run_scenario(scenario, "model")
    # The purge found a in flight, and its receipt died with it.
    assert outputs[9:11] == [1, False]


def test_dead_letters_after_a_receive_agree(endpoint: SqsEndpoint) -> None:
    scenario = sqs(
        [["enqueue", "a", "A"], ["reserve", 1], ["advance", 2], ["reserve"], ["dead"], ["dead"]],
        max_receives=1,
    )
    assert run_on_sqs(scenario, endpoint) == run_scenario(scenario, "model")


# -- moto's known divergences (issue 16), each the smallest scenario that shows it ------------


def test_the_seed_retry_example_shows_the_stale_delete(endpoint: SqsEndpoint) -> None:
    # The first seed's pitfall 3: ["ack", "a", 1] after a was redelivered. moto accepts the stale
    # handle (it keeps every handle a message ever had) and returns success.
    example = {**SEED["retry fences old attempt"]["input"], "capacity": None}
    example["visibility_timeout"] = 30
    assert check_profile(example) == []
    moto_differs(example, endpoint, {4: True})


def test_a_stale_delete_deletes_the_redelivered_copy(endpoint: SqsEndpoint) -> None:
    # moto: the stale delete succeeds and removes the message, so the live receipt (a, 2) no
    # longer acts.
    scenario = sqs(
        [
            ["enqueue", "a", "A"],
            ["reserve"],
            ["retry", "a", 1],
            ["reserve"],
            ["ack", "a", 1],
            ["retry", "a", 2],
        ]
    )
    moto_differs(scenario, endpoint, {4: True, 5: False})


def test_a_stale_change_visibility_acts_on_the_current_delivery(endpoint: SqsEndpoint) -> None:
    # moto: extend with the stale (a, 1) releases delivery 2, so a is delivered a third time.
    scenario = sqs(
        [
            ["enqueue", "a", "A"],
            ["reserve"],
            ["retry", "a", 1],
            ["reserve"],
            ["extend", "a", 1, 0],
            ["reserve"],
        ]
    )
    moto_differs(scenario, endpoint, {4: True, 5: ["a", "A", 3]})


def test_change_visibility_on_a_visible_message_hides_it(endpoint: SqsEndpoint) -> None:
    # AWS answers MessageNotInflight; moto hides the released message for 30 s.
    scenario = sqs(
        [["enqueue", "a", "A"], ["reserve"], ["retry", "a", 1], ["extend", "a", 1, 30], ["reserve"]]
    )
    moto_differs(scenario, endpoint, {3: True, 4: None})


def test_a_released_message_returns_to_its_original_slot(endpoint: SqsEndpoint) -> None:
    # The model releases a to the tail, behind b; moto delivers a again first.
    scenario = sqs(
        [["enqueue", "a", "A"], ["enqueue", "b", "B"], ["reserve"], ["retry", "a", 1], ["reserve"]]
    )
    moto_differs(scenario, endpoint, {4: ["a", "A", 2]})


def test_dead_lettering_is_lazy(endpoint: SqsEndpoint) -> None:
    # moto moves a message to the DLQ only on the source queue's next receive.
    scenario = sqs(
        [
            ["enqueue", "a", "A"],
            ["reserve"],
            ["advance", 31],
            ["dead"],
            ["reserve"],
            ["dead"],
        ],
        max_receives=1,
    )
    moto_differs(scenario, endpoint, {3: []})


def test_a_purge_counts_a_message_not_yet_dead_lettered(endpoint: SqsEndpoint) -> None:
    # The same laziness seen by purge: the expired message is still in moto's source queue.
    scenario = sqs(
        [["enqueue", "a", "A"], ["reserve", 1], ["advance", 2], ["purge"]], max_receives=1
    )
    moto_differs(scenario, endpoint, {3: 1})


def test_a_stale_delete_on_a_fifo_queue_succeeds(endpoint: SqsEndpoint) -> None:
    # AWS documents an error for FIFO queues; moto deletes the message. (a, 2) then "succeeds"
    # as well: moto answers success for a handle of a message it deleted.
    scenario = sqs(
        [
            ["enqueue", "a", "A", {"group": "g"}],
            ["reserve"],
            ["retry", "a", 1],
            ["reserve"],
            ["ack", "a", 1],
            ["ack", "a", 2],
        ],
        fifo=True,
    )
    moto_differs(scenario, endpoint, {4: True})


def test_a_second_delete_with_the_same_handle_succeeds(endpoint: SqsEndpoint) -> None:
    scenario = sqs([["enqueue", "a", "A"], ["reserve"], ["ack", "a", 1], ["ack", "a", 1]])
    moto_differs(scenario, endpoint, {3: True})


def test_a_deduplicated_send_is_reported_as_accepted(endpoint: SqsEndpoint) -> None:
    # moto returns a fresh MessageId for the duplicate (measured), so the kit cannot tell it
    # from an acceptance; the duplicate is still never delivered.
    g = {"group": "g", "dedup": "x"}
    scenario = sqs(
        [["enqueue", "a", "A", g], ["enqueue", "b", "B", g], ["reserve_batch", 10]], fifo=True
    )
    moto_differs(scenario, endpoint, {1: True})


def test_deduplication_forgets_a_deleted_message(endpoint: SqsEndpoint) -> None:
    # AWS: "Amazon SQS continues tracking the deduplication ID even after the message has been
    # received and deleted." moto compares only with the messages it still holds.
    g = {"group": "g", "dedup": "x"}
    scenario = sqs(
        [
            ["enqueue", "a", "A", g],
            ["reserve"],
            ["ack", "a", 1],
            ["enqueue", "b", "B", g],
            ["reserve"],
        ],
        fifo=True,
    )
    moto_differs(scenario, endpoint, {3: True, 4: ["b", "B", 1]})


def test_a_fifo_batch_interleaves_groups_in_send_order(endpoint: SqsEndpoint) -> None:
    # The model (and AWS: "as many messages with the same message group ID as possible")
    # takes group g's messages first; moto scans in send order.
    scenario = sqs(
        [
            ["enqueue", "a", "A", {"group": "g"}],
            ["enqueue", "b", "B", {"group": "h"}],
            ["enqueue", "c", "C", {"group": "g"}],
            ["reserve_batch", 3],
        ],
        fifo=True,
    )
    moto_differs(scenario, endpoint, {3: [["a", "A", 1], ["b", "B", 1], ["c", "C", 1]]})


# -- the kit's own mapping ---------------------------------------------------------------------


class CountingClient:
    """A boto3 client that counts the calls made through it."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self.client, name)


def test_a_receipt_the_kit_never_saw_is_false_without_a_call(endpoint: SqsEndpoint) -> None:
    counting = CountingClient(endpoint.client)
    target = SqsTarget(
        QueueConfig(capacity=None, visibility_timeout=30),
        SqsEndpoint(endpoint.name, counting, endpoint.clock),
    )
    try:
        assert target.send("a", "A", 0.0) is True
        assert target.receive(30.0) == ("a", "A", 1)
        before = len(counting.calls)
        assert target.delete("a", 2) is False
        assert target.delete("zz", 1) is False
        assert target.change_visibility("a", 0, 5) is False
        assert target.delete_batch([("a", 3), ("b", 1)]) == [False, False]
        assert counting.calls[before:] == []
        assert target.delete_batch([("a", 3), ("a", 1)]) == [False, True]
        assert counting.calls[before:] == ["delete_message_batch"]
    finally:
        target.close()


def test_what_sqs_cannot_express_is_refused(endpoint: SqsEndpoint) -> None:
    with pytest.raises(ValueError, match="capacity"):
        SqsTarget(QueueConfig(capacity=2, visibility_timeout=30), endpoint)
    with pytest.raises(ValueError, match="visibility_timeout"):
        SqsTarget(QueueConfig(capacity=None), endpoint)
    with pytest.raises(ValueError, match="visibility_timeout"):
        SqsTarget(QueueConfig(capacity=None, visibility_timeout=0.5), endpoint)
    target = SqsTarget(QueueConfig(capacity=None, visibility_timeout=30), endpoint)
    try:
        target.send("a", "A", 0.0)
        with pytest.raises(ValueError, match="cancel"):
            target.cancel("a")
        with pytest.raises(ValueError, match="'a' is sent twice"):
            target.send("a", "B", 0.0)
        with pytest.raises(ValueError, match="vt"):
            target.receive(None)
        with pytest.raises(ValueError, match="dt"):
            target.advance(0.5)
    finally:
        target.close()


def test_an_unknown_endpoint_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="endpoint"), open_endpoint("ftp://example"):
        pass


class RecordingClient(CountingClient):
    """A boto3 client that records each call's name and parameters."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.params: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        def call(**params: Any) -> Any:
            self.params.append((name, params))
            return method(**params)

        return call


def test_receives_long_poll_for_the_endpoints_wait_time(endpoint: SqsEndpoint) -> None:
    # A long poll of a queue that holds a message returns it at once (moto included); only an
    # empty one waits, which is why moto endpoints refuse a wait time (below).
    for wait_time in (0, 3):
        recording = RecordingClient(endpoint.client)
        opened = SqsEndpoint(endpoint.name, recording, endpoint.clock, wait_time=wait_time)
        target = SqsTarget(QueueConfig(capacity=None, visibility_timeout=30), opened)
        try:
            target.send("a", "A", 0.0)
            assert target.receive(30.0) == ("a", "A", 1)
        finally:
            target.close()
        waits = [p["WaitTimeSeconds"] for name, p in recording.params if name == "receive_message"]
        assert waits == [wait_time]


@pytest.mark.parametrize("name", ENDPOINTS)
def test_a_moto_endpoint_refuses_a_wait_time(name: str) -> None:
    with (
        pytest.raises(ValueError, match="wait_time must be 0 on"),
        open_endpoint(name, wait_time=1),
    ):
        pass


@pytest.mark.parametrize(
    ("wait_time", "error"), [(21, ValueError), (-1, ValueError), (1.5, TypeError)]
)
def test_a_wait_time_sqs_does_not_take_is_refused(wait_time: Any, error: type) -> None:
    with (
        pytest.raises(error, match="wait_time"),
        open_endpoint("http://127.0.0.1:1", wait_time=wait_time),
    ):
        pass


def test_a_url_endpoint_runs_a_scenario_with_the_boto3_chain_and_long_polling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The URL path as on real SQS, against a moto server on 127.0.0.1: credentials and region
    # from the environment (boto3's chain), real time (no advance here, and no receive of an
    # empty queue, which would wait: every receive finds a message).
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "kit")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "kit")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    scenario = sqs(
        [
            ["enqueue_batch", [["a", "A"], ["b", "B"]]],
            ["reserve"],
            ["ack", "a", 1],
            ["reserve_batch", 10],
            ["extend", "b", 1, 60],
        ]
    )
    with open_endpoint("moto-server") as server:
        assert server.url is not None
        with open_endpoint(server.url, wait_time=1) as url:
            assert isinstance(url.clock, WallClock) and url.wait_time == 1
            assert run_on_sqs(scenario, url) == run_scenario(scenario, "model")


def test_the_wall_clock_sleeps_until_the_scenarios_time() -> None:
    # Fake time: the calls' latency since the scenario started is taken off each sleep.
    now = [100.0]
    slept: list[float] = []

    def sleep(dt: float) -> None:
        slept.append(dt)
        now[0] += dt

    clock = WallClock(sleep, lambda: now[0])
    now[0] = 200.0
    clock.restart()
    now[0] += 0.25  # latency of the ops before the first advance
    clock.advance(5)
    now[0] += 0.5
    clock.advance(1)
    now[0] += 3.0  # a long poll that waited: the scenario's time is behind the wall clock
    clock.advance(2)
    assert slept == [pytest.approx(4.75), pytest.approx(0.5), 0.0]
    assert now[0] == pytest.approx(200.0 + 5 + 1 + 3.0)


def test_the_moto_clock_ticks_on_every_read_and_advances_by_dt() -> None:
    clock = MotoClock()
    first, second = clock.now(), clock.now()
    assert (second - first).total_seconds() == 1e-6
    clock.advance(5)
    assert (clock.now() - second).total_seconds() == pytest.approx(5 + 1e-6)


# -- the profile ---------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sqs_scenarios(fifo=False) | sqs_scenarios(fifo=True))
def test_generated_scenarios_are_inside_the_profile(scenario: dict[str, Any]) -> None:
    assert check_profile(scenario) == []


def test_generated_scenarios_give_the_same_outputs_in_process_and_over_http() -> None:
    # moto in-process and moto over HTTP are one engine: the kit must not add a difference.
    scenarios: list[dict[str, Any]] = []

    @settings(max_examples=12, database=None, derandomize=True)
    @given(sqs_scenarios(fifo=False) | sqs_scenarios(fifo=True))
    def collect(scenario: dict[str, Any]) -> None:
        scenarios.append(scenario)

    collect()
    with open_endpoint("moto") as opened:
        in_process = [run_on_sqs(s, opened) for s in scenarios]
    with open_endpoint("moto-server") as opened:
        over_http = [run_on_sqs(s, opened) for s in scenarios]
    assert in_process == over_http


OUTSIDE: dict[str, tuple[dict[str, Any], str]] = {
    "a capacity": ({"capacity": 2, "visibility_timeout": 30, "ops": []}, "capacity"),
    "no visibility timeout": ({"capacity": None, "ops": []}, "visibility_timeout"),
    "a fractional time": (
        {"capacity": None, "visibility_timeout": 30, "ops": [["advance", 0.5]]},
        "dt must be whole seconds",
    ),
    "cancel": (
        {
            "capacity": None,
            "visibility_timeout": 30,
            "ops": [["enqueue", "a", "A"], ["cancel", "a"]],
        },
        "cancel",
    ),
    "an id sent twice": (
        {
            "capacity": None,
            "visibility_timeout": 30,
            "ops": [["enqueue", "a", "A"], ["enqueue_batch", [["a", "B"]]]],
        },
        "sent twice",
    ),
    "an advance onto a deadline": (
        {
            "capacity": None,
            "visibility_timeout": 3,
            "ops": [["enqueue", "a", "A"], ["reserve"], ["advance", 3]],
        },
        "exactly on a timer",
    ),
    "an advance onto a delay's due time": (
        {
            "capacity": None,
            "visibility_timeout": 3,
            "ops": [["enqueue", "a", "A", {"delay": 2}], ["advance", 2]],
        },
        "exactly on a timer",
    ),
    "a null vt": (
        {
            "capacity": None,
            "visibility_timeout": 3,
            "ops": [["enqueue", "a", "A"], ["reserve", None]],
        },
        "vt null",
    ),
    "a deadline past 12 hours": (
        {
            "capacity": None,
            "visibility_timeout": 3,
            "ops": [["advance", 43000], ["enqueue", "a", "A"], ["reserve", 300]],
        },
        "12 hours",
    ),
    "a delay over 900 s": (
        {"capacity": None, "visibility_timeout": 3, "ops": [["enqueue", "a", "A", {"delay": 901}]]},
        "delay must be whole seconds 0..900",
    ),
    "a receipt twice in one batch": (
        {"capacity": None, "visibility_timeout": 3, "ops": [["ack_batch", [["a", 1], ["a", 1]]]]},
        "repeated inside one batch",
    ),
    "two purges within a minute": (
        {"capacity": None, "visibility_timeout": 3, "ops": [["purge"], ["advance", 59], ["purge"]]},
        "purge 59 s after",
    ),
    "a FIFO dedup interval": (
        {"capacity": None, "visibility_timeout": 3, "fifo": True, "dedup_interval": 2, "ops": []},
        "dedup_interval",
    ),
    "not a scenario": ({"capacity": None, "ops": [["fly"]]}, "not a valid scenario"),
}


@pytest.mark.parametrize("name", OUTSIDE)
def test_a_scenario_outside_the_profile_is_named(name: str) -> None:
    scenario, reason = OUTSIDE[name]
    reasons = check_profile(scenario)
    assert len(reasons) == 1 and reason in reasons[0], reasons


# -- a URL endpoint's clients ------------------------------------------------------------------


class _Unavailable(http.server.BaseHTTPRequestHandler):
    """Answers every request with SQS's 503 ``ServiceUnavailable`` (a retryable error)."""

    requests: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.requests.append(self.headers.get("X-Amz-Target", "query"))
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b'{"__type": "ServiceUnavailable", "message": "try again"}'
        self.send_response(503)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_judged_call_is_made_once_even_when_retryable(monkeypatch: pytest.MonkeyPatch) -> None:
    # boto3's default configuration retries a 503 (measured: 3 attempts): a send retried after a
    # lost answer is another scenario, so the judged client makes one attempt.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "kit")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "kit")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        judged, admin = sqs_module._url_clients(url, "us-east-1")
        _Unavailable.requests.clear()
        with pytest.raises(ClientError, match="ServiceUnavailable"):
            judged.send_message(QueueUrl=f"{url}/1/q", MessageBody="x")
        assert len(_Unavailable.requests) == 1
        assert admin.meta.config.retries["total_max_attempts"] > 1
    finally:
        server.shutdown()
        thread.join(BOUND)
        server.server_close()
