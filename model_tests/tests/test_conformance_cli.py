"""The conformance kit's CLI as a CI job runs it: exit statuses, ``--json`` and ``--junit``, the
region, ``--yes``, the plan printed before anything is created, and the cleanup of its queues.

Endpoints: the project's own queue in-process (``impl``), a broken queue registered as a local
target, moto's ``ThreadedMotoServer`` on 127.0.0.1 reached as a URL (the path a real endpoint
takes: boto3's credential chain, the region from the environment), and fakes of boto3's client
where a test must see that no request was made. Nothing leaves this machine; every scenario
given to a URL endpoint that runs to its end sends nothing (no ``advance`` of the kit's drain:
real time there). Expected outputs come from the
model (``run_scenario(..., "model")``) or from what the broken queue is written to do.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from model_tests.conformance import __main__ as cli
from model_tests.conformance import local, sqs
from model_tests.conformance.broken import LosesMessage
from model_tests.conformance.job import QUEUE_ATTRIBUTES, Job, Refused, scenarios_of
from model_tests.conformance.oracle import PROFILES, explain, with_drain
from model_tests.conformance.output import (
    CONFORMS,
    NO_VERDICT,
    NOT_ADMITTED,
    VERDICTS,
    Outcome,
    json_document,
    junit_document,
)
from model_tests.conformance.plan import OP_REQUESTS, plan, requests
from model_tests.conformance.profile import check_profile, sqs_scenarios
from model_tests.conformance.pytest_plugin import Conformance
from model_tests.conformance.report import PROBES, Finding, KitRun, generate_scenarios
from model_tests.conformance.sqs import SqsEndpoint, SqsTarget, open_endpoint, region_of
from model_tests.scenario_format import parse_scenario
from model_tests.targets import Delay, ImplTarget, Sent, run_scenario
from spec.operations import REGISTRY

#: A scenario inside the SQS profile that moto and the model agree on, with no ``advance``.
AGREED: dict[str, Any] = {
    "capacity": None,
    "visibility_timeout": 30,
    "ops": [["enqueue", "a", "A"], ["reserve"], ["ack", "a", 1]],
}
#: One that sends nothing, so the kit's drain adds nothing (a drain waits in real time on a URL).
SENDS_NOTHING: dict[str, Any] = {
    "capacity": None,
    "visibility_timeout": 30,
    "ops": [["reserve"], ["purge"], ["reserve_batch", 3]],
}
#: One with a dead-letter queue (two SQS queues) and a second harness queue (two more).
WITH_DLQ: dict[str, Any] = {
    "capacity": None,
    "visibility_timeout": 30,
    "max_receives": 2,
    "ops": [["enqueue", "b", "B"], ["new"], ["enqueue", "c", "C"], ["reserve"], ["dead"]],
}


class LosesEverySend(ImplTarget):
    """A broken queue: every send is accepted and nothing is kept."""

    def send(
        self, id: str, body: str, delay: Delay, group: str | None = None, dedup: str | None = None
    ) -> Sent:
        return True


def jsonl(path: Path, *scenarios: dict[str, Any] | str) -> str:
    """Write ``scenarios`` (objects, or raw lines) as a JSON-lines file; its path."""
    lines = [s if isinstance(s, str) else json.dumps(s) for s in scenarios]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def broken(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(local.LOCAL_TARGETS, "broken", LosesEverySend)
    return "broken"


@pytest.fixture(scope="module")
def server() -> Iterator[SqsEndpoint]:
    """A moto server on 127.0.0.1 for the module (its own client lists what is left)."""
    with open_endpoint("moto-server") as opened:
        yield opened


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """Credentials for moto in the environment, no region, and no AWS config file."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "kit")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "kit")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    return monkeypatch


def kit_queues(server: SqsEndpoint) -> list[str]:
    urls: list[str] = server.client.list_queues(QueueNamePrefix="kit-").get("QueueUrls", [])
    return urls


# -- exit statuses -------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ["impl", "impl-fifo"])
def test_the_projects_queue_conforms_strictly(
    endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run.json"
    assert cli.main(["--endpoint", endpoint, "--scenarios", "6", "--json", str(out)]) == CONFORMS
    run = json.loads(out.read_text())["runs"][0]
    assert (run["profile"], run["scenarios"], run["conforming"]) == ("strict", 6, 6)
    assert run["queue_type"] == ("FIFO" if endpoint == "impl-fifo" else "standard")
    assert "no account, region, queues or requests" in capsys.readouterr().out


def test_a_broken_queue_is_not_admitted(broken: str, tmp_path: Path) -> None:
    f = jsonl(tmp_path / "s.jsonl", AGREED)
    assert cli.main(["--endpoint", broken, "--scenarios-file", f]) == NOT_ADMITTED


@pytest.mark.parametrize("profile", ["strict", "sqs-standard"])
def test_a_queue_that_loses_a_message_is_not_admitted(
    profile: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The kit's drain finds the message that never comes out, under every profile.
    monkeypatch.setitem(local.LOCAL_TARGETS, "loses-a", functools.partial(LosesMessage, lose="a"))
    f = jsonl(tmp_path / "s.jsonl", {**AGREED, "ops": [["enqueue", "a", "A"]]})
    out = tmp_path / "run.json"
    args = ["--endpoint", "loses-a", "--profile", profile, "--scenarios-file", f]
    assert cli.main([*args, "--json", str(out)]) == NOT_ADMITTED
    (finding,) = json.loads(out.read_text())["runs"][0]["findings"]
    assert finding["drain"] and finding["verdict"] == "not admitted"


def test_a_crashed_endpoint_is_an_error_not_a_verdict(
    aws_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    aws_env.setenv("AWS_DEFAULT_REGION", "us-east-1")
    junit = tmp_path / "junit.xml"
    status = cli.main(
        ["--endpoint", "http://127.0.0.1:9", "--scenarios", "1", "--junit", str(junit)]
    )
    assert status == NO_VERDICT
    err = capsys.readouterr().err
    assert "error: EndpointConnectionError" in err
    # The queue whose creation never reached the endpoint is not reported as left behind.
    assert "could not delete" not in err
    errors = ET.parse(junit).getroot().findall("testsuite/testcase/error")
    assert len(errors) == 1 and "EndpointConnectionError" in (errors[0].get("message") or "")


def test_a_refused_scenario_file_names_each_line_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cancel = {**AGREED, "ops": [["enqueue", "a", "A"], ["cancel", "a"]]}
    f = jsonl(
        tmp_path / "s.jsonl",
        AGREED,
        {**AGREED, "capacity": 2},
        "",
        "# a comment",
        cancel,
        '{"capacity": null, "ops": [["fly"]]}',
        {**AGREED, "fifo": True, "ops": [["enqueue", "a", "A", {"group": "g"}]]},
    )
    assert cli.main(["--endpoint", "impl", "--scenarios-file", f]) == NO_VERDICT
    out, err = capsys.readouterr()
    refused = [line for line in err.splitlines() if " line " in line]
    assert [line.split(" line ")[1].split(":")[0] for line in refused] == ["2", "5", "6", "7"]
    assert "capacity" in refused[0] and "cancel" in refused[1] and "fly" in refused[2]
    assert "--fifo" in refused[3]
    assert "4 scenario(s) refused" in err and out == ""  # nothing ran


# -- --json and --junit --------------------------------------------------------------------------


def test_json_and_junit_describe_the_run_and_its_findings(broken: str, tmp_path: Path) -> None:
    # The second scenario sends nothing: the broken queue answers it as the model does.
    f = jsonl(tmp_path / "s.jsonl", AGREED, {**AGREED, "ops": [["reserve"], ["advance", 5]]})
    paths = {name: tmp_path / name for name in ("run.json", "junit.xml")}
    json_path, junit_path = str(paths["run.json"]), str(paths["junit.xml"])
    args = ["--endpoint", broken, "--scenarios-file", f, "--seed", "7", "--probes"]
    status = cli.main([*args, "--json", json_path, "--junit", junit_path])
    assert status == NOT_ADMITTED
    doc = json.loads(paths["run.json"].read_text())
    assert (doc["status"], doc["verdict"], doc["error"]) == (1, "not admitted", None)
    given, probes = doc["runs"]
    assert (given["endpoint"], given["profile"], given["seed"]) == ("broken", "strict", 7)
    assert (given["source"], given["scenarios"], given["conforming"]) == ("given", 2, 1)
    (finding,) = given["findings"]
    assert finding["verdict"] == "not admitted" and finding["count"] == 1
    # The minimal scenario reproduces: the model's outputs, and what the broken queue gives
    # (both may go on with the outputs of the kit's drain after the scenario's ops).
    ops = len(finding["scenario"]["ops"])
    assert finding["model"][:ops] == run_scenario(finding["scenario"], "model")
    assert finding["outputs"][:ops] == run_scenario(finding["scenario"], LosesEverySend)
    assert finding["outputs"] != finding["model"]
    assert finding["first_divergence"]["op"][0] in ("reserve", "reserve_batch")

    suites = ET.parse(paths["junit.xml"]).getroot()
    assert suites.tag == "testsuites"
    given_suite, probe_suite = suites.findall("testsuite")
    cases = given_suite.findall("testcase")
    assert len(cases) == 2 and int(given_suite.get("tests", "")) == 2
    assert [c.find("failure") is not None for c in cases] == [False, True]
    assert given_suite.get("failures") == "1" and given_suite.get("errors") == "0"
    assert all(c.get("name") and c.get("classname") for c in cases)
    # Every probe is a test case; the broken queue loses each probe's messages.
    standard_probes = [what for what, sc in PROBES if not sc.get("fifo")]
    names = [c.get("name") for c in probe_suite.findall("testcase")]
    assert names == [f"probe: {what}" for what in standard_probes]
    failed = len(probe_suite.findall("testcase/failure"))
    assert failed == len(probes["findings"]) == int(probe_suite.get("failures", ""))
    assert int(suites.get("tests", "")) == len(cases) + len(names)


def _finding(budget: int | None, admitted: bool) -> Finding:
    outputs = run_scenario(AGREED, LosesEverySend)
    e = explain(AGREED, outputs) if budget is None else explain(AGREED, outputs, budget=budget)
    return Finding("k", 1, AGREED, outputs, run_scenario(AGREED, "model"), e, admitted)


def _run(*findings: Finding) -> KitRun:
    return KitRun("impl", False, PROFILES["strict"], 0, 1, 0, findings)


def test_a_search_that_ran_out_of_budget_is_no_verdict() -> None:
    undecided = _finding(budget=0, admitted=False)
    assert undecided.no_verdict
    assert Outcome((_run(undecided),)).status == NO_VERDICT
    xml = ET.fromstring(junit_document(Outcome((_run(undecided),))))
    assert [e.get("type") for e in xml.iter("error")] == ["NoVerdict"]
    # A definite "not admitted" wins over a missing verdict; an error is no verdict.
    assert Outcome((_run(undecided, _finding(None, False)),)).status == NOT_ADMITTED
    assert Outcome((_run(_finding(None, True)),)).status == CONFORMS
    assert Outcome((), error="boom").status == NO_VERDICT
    assert json_document(Outcome((), error="boom"))["verdict"] == "error"


def test_junit_holds_no_character_xml_cannot() -> None:
    bad = "\x00\x1b"
    text = junit_document(Outcome((), error=f"endpoint said {bad}"))
    assert ET.fromstring(text).find("testsuite/testcase/error") is not None
    assert "\\u0000" in text and "\\u001b" in text


# -- the region ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "url", "region"),
    [
        ({"AWS_DEFAULT_REGION": "eu-west-2"}, "http://localhost:4566", "eu-west-2"),
        ({"AWS_REGION": "ap-south-1"}, "http://localhost:4566", "ap-south-1"),
        ({"AWS_REGION": "ap-south-1", "AWS_DEFAULT_REGION": "eu-west-2"}, "http://h", "ap-south-1"),
        ({}, "https://sqs.eu-central-1.amazonaws.com", "eu-central-1"),
        ({}, "https://eu-north-1.queue.amazonaws.com", "eu-north-1"),
    ],
)
def test_the_region_comes_from_either_variable_or_the_aws_host(
    environ: dict[str, str], url: str, region: str
) -> None:
    assert region_of(url, environ) == region


def test_no_region_or_a_conflicting_one_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="AWS_DEFAULT_REGION or AWS_REGION"):
        region_of("http://localhost:4566", {})
    with pytest.raises(ValueError, match="is in eu-west-1"):
        region_of("https://sqs.eu-west-1.amazonaws.com", {"AWS_REGION": "us-east-1"})


def test_aws_region_alone_is_enough_for_a_url_endpoint(
    aws_env: pytest.MonkeyPatch, server: SqsEndpoint, tmp_path: Path
) -> None:
    # boto3 itself reads only AWS_DEFAULT_REGION (NoRegionError with AWS_REGION alone).
    aws_env.setenv("AWS_REGION", "us-east-1")
    f = jsonl(tmp_path / "s.jsonl", SENDS_NOTHING)
    out = tmp_path / "run.json"
    assert server.url is not None
    assert cli.main(["--endpoint", server.url, "--scenarios-file", f, "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert (doc["region"], doc["local"], doc["account"]) == ("us-east-1", True, "123456789012")
    assert kit_queues(server) == []


# -- before anything is created: the plan, and --yes ---------------------------------------------


class Refusing:
    """A boto3 client that records each call and makes none."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def call(**params: Any) -> Any:
            self.calls.append(name)
            raise ConnectionError(f"{name}: no network in the tests")

        return call


def test_an_endpoint_off_this_machine_needs_yes(
    aws_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    client = Refusing()
    aws_env.setattr(sqs, "_url_clients", lambda url, region: (client, client))
    aws_env.setattr(sqs, "caller_identity", lambda opened: ("111122223333", "arn:aws:iam::x"))
    url = "https://sqs.eu-west-1.amazonaws.com"
    assert cli.main(["--endpoint", url, "--scenarios", "3"]) == NO_VERDICT
    out, err = capsys.readouterr()
    assert "account 111122223333" in out and "region eu-west-1" in out and "NOT local" in out
    assert "queues: it creates and deletes" in out and "requests: at most" in out
    assert "--yes" in err and client.calls == []
    # With --yes it goes ahead: its first request is the first queue's creation.
    assert cli.main(["--endpoint", url, "--scenarios", "3", "--yes"]) == NO_VERDICT
    assert client.calls[0] == "create_queue"


@pytest.mark.parametrize(
    ("endpoint", "is_local"),
    [
        ("impl", True),
        ("moto-server", True),
        ("http://localhost:9324", True),
        ("http://127.0.0.2:9324", True),
        ("http://[::1]:4566", True),
        ("http://elasticmq:9324", False),
        ("https://sqs.us-east-1.amazonaws.com", False),
        ("http://10.0.0.5:4566", False),
    ],
)
def test_which_endpoints_are_local(endpoint: str, is_local: bool) -> None:
    assert local.is_local(endpoint) is is_local


def test_the_request_bound_holds_for_generated_scenarios(server: SqsEndpoint) -> None:
    counted: list[str] = []

    class Counting:
        def __init__(self, client: Any) -> None:
            self.client = client

        def __getattr__(self, name: str) -> Any:
            counted.append(name)
            return getattr(self.client, name)

    endpoint = SqsEndpoint(server.name, Counting(server.client), server.clock, server.url)
    for fifo in (False, True):
        for raw in generate_scenarios(sqs_scenarios(fifo=fifo), 6, 3):
            # As the kit runs it: followed by its drain.
            parsed = with_drain(raw)
            counted.clear()
            run_scenario(parsed, lambda config: SqsTarget(config, endpoint))
            assert len(counted) <= requests(parsed), raw
    # Exact where nothing is left to chance: create, send, receive, delete, delete the queue;
    # with a dead-letter queue, its create, ARN and delete, and the empty drain of ``dead``.
    counted.clear()
    run_scenario(AGREED, lambda config: SqsTarget(config, endpoint))
    assert len(counted) == requests(parse_scenario(AGREED)) == 5
    counted.clear()
    dlq = {**AGREED, "max_receives": 3, "ops": [["dead"]]}
    run_scenario(dlq, lambda config: SqsTarget(config, endpoint))
    assert len(counted) == requests(parse_scenario(dlq)) == 6


def test_the_plan_counts_queues_and_dead_letter_queues() -> None:
    made = plan([parse_scenario(AGREED), parse_scenario(WITH_DLQ)], reruns=7)
    # AGREED: one queue; WITH_DLQ: two harness queues, each with its dead-letter queue.
    assert (made.queues, made.dead_letter, made.scenarios) == (5, 2, 2)
    assert made.costliest == requests(parse_scenario(WITH_DLQ))
    queues_line, requests_line = made.lines("kit-0123abcd", fifo=True)
    assert "5 queues" in queues_line and "2 of them dead-letter queues" in queues_line
    assert "kit-0123abcd<4 hex>-<n>.fifo" in queues_line
    assert f"at most {made.requests} for the 2 scenarios" in requests_line
    assert "up to 7 runs" in requests_line
    assert "dead-letter" not in plan([parse_scenario(AGREED)], 1).lines("kit-x", False)[0]


def test_every_operation_has_a_request_count() -> None:
    assert sorted(op.name for op in REGISTRY) == sorted(OP_REQUESTS)


# -- cleanup -------------------------------------------------------------------------------------


class Failing:
    """A boto3 client that fails the ``nth`` call of ``operation`` with ``error``, after making
    it when ``after`` (the request reached the endpoint, the answer was lost)."""

    def __init__(
        self, client: Any, operation: str, nth: int, error: BaseException, after: bool = False
    ) -> None:
        self.client, self.operation, self.nth = client, operation, nth
        self.error, self.after = error, after
        self.seen = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)
        if name != self.operation:
            return method

        def call(**params: Any) -> Any:
            self.seen += 1
            if self.seen == self.nth:
                if self.after:
                    method(**params)
                raise self.error
            return method(**params)

        return call


@pytest.mark.parametrize(
    ("which", "operation", "nth", "error", "after"),
    [
        ("judged", "send_message", 2, KeyboardInterrupt(), False),
        ("judged", "receive_message", 1, RuntimeError("injected"), False),
        # The fourth queue's creation reached moto, its answer did not: the sweep creates it
        # again (CreateQueue of an existing queue gives its URL), then deletes it.
        ("admin", "create_queue", 4, KeyboardInterrupt(), True),
    ],
    ids=["ctrl-c in a send", "an error in a receive", "ctrl-c as a queue is created"],
)
def test_every_kit_queue_is_deleted_after_an_error_or_ctrl_c(
    aws_env: pytest.MonkeyPatch,
    server: SqsEndpoint,
    tmp_path: Path,
    which: str,
    operation: str,
    nth: int,
    error: BaseException,
    after: bool,
) -> None:
    aws_env.setenv("AWS_DEFAULT_REGION", "us-east-1")
    real = sqs._url_clients
    made: list[Failing] = []

    def failing(url: str, region: str) -> tuple[Any, Any]:
        judged, admin = real(url, region)
        wrapped = Failing(judged if which == "judged" else admin, operation, nth, error, after)
        made.append(wrapped)
        return (wrapped, admin) if which == "judged" else (judged, wrapped)

    aws_env.setattr(sqs, "_url_clients", failing)
    f = jsonl(tmp_path / "s.jsonl", WITH_DLQ, AGREED, WITH_DLQ)
    junit = tmp_path / "junit.xml"
    assert server.url is not None
    status = cli.main(["--endpoint", server.url, "--scenarios-file", f, "--junit", str(junit)])
    assert status == NO_VERDICT
    assert made[0].seen == nth + (operation == "create_queue")  # the failure happened
    assert kit_queues(server) == []
    message = ET.parse(junit).getroot().find("testsuite/testcase/error")
    assert message is not None
    assert ("interrupted" if isinstance(error, KeyboardInterrupt) else "injected") in (
        message.get("message") or ""
    )


def test_sigterm_is_handled_as_ctrl_c() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), cli.terminate_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) == before


# -- the pytest fixture and the page -------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "conformance_ci"
PAGE = ROOT / "docs" / "conformance-ci.md"


#: Seconds the example suite's own pytest may take (it takes a few; the machine is shared).
SUITE_BOUND = 300


def test_the_example_suite_passes_on_the_projects_queue() -> None:
    args = [str(EXAMPLE), "--sqs-endpoint", "impl", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=SUITE_BOUND,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_the_fixture_fails_a_test_with_the_kits_report(broken: str) -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        Conformance(broken).check(given=[AGREED])
    assert "NOT admitted by profile strict" in str(failed.value) and "status 1" in str(failed.value)
    assert Conformance("impl").check(given=[AGREED]).status == CONFORMS
    with pytest.raises(pytest.UsageError, match="--sqs-endpoint"):
        Conformance().run(given=[AGREED])


class Interrupted(ImplTarget):
    """A queue whose every send is interrupted, as by Ctrl-C."""

    def send(
        self, id: str, body: str, delay: Delay, group: str | None = None, dedup: str | None = None
    ) -> Sent:
        raise KeyboardInterrupt


def test_ctrl_c_in_the_fixture_stops_the_test_session(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(local.LOCAL_TARGETS, "interrupted", Interrupted)
    with pytest.raises(KeyboardInterrupt, match="interrupted"):
        Conformance("interrupted").run(given=[AGREED])
    # The CLI's job says so and carries on to its outputs.
    f = jsonl(tmp_path / "s.jsonl", AGREED)
    assert cli.main(["--endpoint", "interrupted", "--scenarios-file", f]) == NO_VERDICT


def test_the_users_queue_attributes_are_set_on_every_scenario() -> None:
    attributes = {"visibility_timeout": 30, "max_receives": 5}
    drawn, users = scenarios_of(Job("impl", scenarios=6, queue=attributes), fifo=False)
    assert len(drawn) == 6 and not users
    assert all(s.items() >= attributes.items() and check_profile(s) == [] for s in drawn)
    # The same scenarios for the same seed; a given scenario takes them too, checked.
    assert scenarios_of(Job("impl", scenarios=6, queue=attributes), fifo=False)[0] == drawn
    given, users = scenarios_of(Job("impl", given=[AGREED], queue={"delay": 3}), fifo=False)
    assert given == [{**AGREED, "delay": 3}] and users
    with pytest.raises(ValueError, match="capacity"):
        scenarios_of(Job("impl", queue={"capacity": 5}), fifo=False)
    with pytest.raises(Refused, match="scenario 0: outside the SQS profile"):
        scenarios_of(Job("impl", given=[AGREED], queue={"visibility_timeout": 0.5}), False)


def test_the_page_names_the_statuses_options_and_fixture_arguments() -> None:
    page = PAGE.read_text()
    rows = re.findall(r"^\| (\d) \|", page, flags=re.MULTILINE)
    assert [int(r) for r in rows] == sorted(VERDICTS)
    options = {a for action in cli.parser()._actions for a in action.option_strings}
    for option in ("--json", "--junit", "--yes", "--scenarios-file", "--probes", "--endpoint"):
        assert option in options and f"`{option}" in page, option
    for name in inspect.signature(Conformance.run).parameters:
        if name != "self":
            assert f"`{name}`" in page or f"`{name}=" in page, name
    for name in QUEUE_ATTRIBUTES:
        assert f"`{name}`" in page, name
    for endpoint in ("impl", "impl-fifo", "moto", "moto-server"):
        assert f"`{endpoint}`" in page, endpoint
