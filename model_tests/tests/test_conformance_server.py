"""The conformance kit judges this project's SQS server (``sqs_endpoint/``) over HTTP, in the strict
profile: every generated scenario of the SQS profile (standard and FIFO queues, batches, delays,
purge, dead-letter queues), the probes and the system scenarios must give the model's outputs,
with no relaxation at all.

On the server's fake clock (``--endpoint server``) the kit's ``advance`` moves the server's
clock through its time control, so a run of many scenarios takes seconds; a short run on the
real clock (``server-real``: ``advance`` sleeps) picks the generated scenarios whose time,
drain included, is a few seconds.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest

from model_tests.conformance import systems
from model_tests.conformance.__main__ import main
from model_tests.conformance.job import generated, kit_run, probe_run
from model_tests.conformance.oracle import with_drain
from model_tests.conformance.report import KitRun, summary
from model_tests.conformance.sqs import SqsEndpoint, open_endpoint, run_on_sqs
from model_tests.scenario_format import Invoke, parse_scenario
from model_tests.targets import run_scenario

if not hasattr(
    importlib.import_module("sqs_endpoint"), "serve"
):  # pragma: no cover - until it lands
    pytest.skip("sqs_endpoint.serve is not there yet", allow_module_level=True)

#: Generated scenarios per queue type on the fake clock (the seed's first ones: a prefix of
#: any longer run of that seed), in the default run and in the slow one (the docs' seed, as
#: many as docs/conformance.md runs on moto).
FAKE_SCENARIOS = 40
SLOW_SCENARIOS = 300
SLOW_SEED = 16
#: The real-clock run: scenarios whose time (every ``advance``, the drain's too) is 1 s to
#: this many seconds, this many of each queue type.
REAL_SECONDS = 3
REAL_SCENARIOS = 2


@pytest.fixture(scope="module")
def server() -> Iterator[SqsEndpoint]:
    """One server on its fake clock for the module (it starts once, not per test)."""
    with open_endpoint("server") as opened:
        yield opened


def conforms(run: KitRun) -> None:
    """Every scenario gave the model's outputs: no divergence, none needing a relaxation."""
    assert run.profile.name == "strict"
    assert run.findings == (), summary(run)
    assert run.conforming == run.scenarios > 0


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_generated_scenarios_give_the_models_outputs(server: SqsEndpoint, fifo: bool) -> None:
    conforms(
        kit_run("server", fifo=fifo, profile="strict", scenarios=FAKE_SCENARIOS, opened=server)
    )


@pytest.mark.slow  # about a minute per queue type
@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_the_docs_generated_scenarios_give_the_models_outputs(
    server: SqsEndpoint, fifo: bool
) -> None:
    run = kit_run(
        "server",
        fifo=fifo,
        profile="strict",
        scenarios=SLOW_SCENARIOS,
        seed_value=SLOW_SEED,
        opened=server,
    )
    conforms(run)


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_the_probes_of_motos_behaviours_give_the_models_outputs(
    server: SqsEndpoint, fifo: bool
) -> None:
    # Each probe was written to show a way moto departs from the model (a stale delete that
    # deletes the redelivery, a purge that forgets dedup ids...): the server departs in none.
    conforms(probe_run("server", fifo, profile="strict", opened=server))


def test_the_system_scenarios_conform(server: SqsEndpoint) -> None:
    # Dead-letter targets, retention, move tasks: op by op equal to the model's system.
    verdicts = systems.run(server)
    assert [str(v) for v in verdicts if not v.conforms] == []


def test_a_scenario_crosses_hours_of_timers_at_once(server: SqsEndpoint) -> None:
    # A 15-minute delay and an 11-hour visibility timeout crossed by advance: nothing sleeps,
    # so the run is quick whatever the scenario's time (a generous bound, not a measurement).
    import time

    scenario = {
        "capacity": None,
        "visibility_timeout": 42000,
        "ops": [
            ["enqueue", "a", "A", {"delay": 900}],
            ["reserve"],
            ["advance", 901],
            ["reserve"],
            ["advance", 42901 - 902],
            ["reserve", 1],
            ["advance", 2],
            ["reserve", 1],
        ],
    }
    started = time.monotonic()
    got = run_on_sqs(scenario, server)
    assert time.monotonic() - started < 30
    assert got == run_scenario(scenario, "model")
    assert got[1] is None and got[3] == ["a", "A", 1] and got[5] is None
    assert got[7] == ["a", "A", 2]


def test_the_cli_judges_the_server_strictly_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--endpoint", "server", "--scenarios", "5", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "profile strict" in out and "verdict: admitted by profile strict" in out


def _seconds(scenario: dict[str, Any]) -> float:
    """The scenario's time on the endpoint: every ``advance``, the kit's drain included."""
    ops = with_drain(parse_scenario(scenario)).ops
    return sum(
        float(str(op.args[0])) for op in ops if isinstance(op, Invoke) and op.name == "advance"
    )


def short(fifo: bool) -> list[dict[str, Any]]:
    """The first generated scenarios (seed 0) of three ops or more whose time is 1 to
    :data:`REAL_SECONDS` seconds (some timer runs on the real clock)."""
    drawn = [
        s
        for s in generated(fifo, 200, 0)
        if 1 <= _seconds(s) <= REAL_SECONDS and len(s["ops"]) >= 3
    ]
    return drawn[:REAL_SCENARIOS]


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_a_short_run_on_the_real_clock_gives_the_models_outputs(fifo: bool) -> None:
    chosen = short(fifo)
    assert len(chosen) == REAL_SCENARIOS
    conforms(kit_run("server-real", fifo=fifo, profile="strict", given=chosen))
