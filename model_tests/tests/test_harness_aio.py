"""The scenario harness's ``aio`` target: ``impl.AsyncQueue`` (``impl.AsyncFifoQueue``) on one
event loop gives the same outputs as the model on every scenario format the ``impl`` target is
tested on.

Each expected output is the *model* target's (the spec's), never the threaded queue's: the seed
examples, every table of hand-worked examples (timed, delays/batches/purge, FIFO, a system of
queues with a dead-letter target, redrive and retention), the malformed lines (status 2, the
outputs before the bad line written), the command line, and generated scenarios of each kind
(standard, FIFO, systems) as the differential tests draw them, fewer of them.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model_tests.harness import EXIT_MALFORMED, run_lines
from model_tests.scenario_format import parse_line
from model_tests.scenarios import scenarios, system_scenarios
from model_tests.targets import TARGETS, AioTarget, async_class, run_scenario

pytestmark = pytest.mark.skipif(
    async_class(fifo=False) is None, reason="impl has no asyncio driver"
)

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
SEED = [
    json.loads(line)["input"]
    for line in (ROOT / "tests" / "data" / "seed_examples.jsonl").read_text().splitlines()
    if line.strip()
]
#: Every table of scenarios the impl target is tested on (test_harness.py), by file.
TABLES = ("harness_timed.json", "harness_batches.json", "harness_fifo.json", "harness_system.json")


def _scenarios() -> dict[str, dict[str, Any]]:
    found = {f"seed: {k}": s for k, s in enumerate(SEED)}
    for file in TABLES:
        for e in json.loads((DATA / file).read_text(encoding="utf-8")):
            found[f"{file}: {e['name']}"] = e["scenario"]
    return found


SCENARIOS = _scenarios()


def test_the_aio_target_is_a_harness_target() -> None:
    assert TARGETS["aio"] is AioTarget


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_example_gives_the_models_outputs(name: str) -> None:
    scenario = SCENARIOS[name]
    assert run_scenario(scenario, "aio") == run_scenario(scenario, "model")


MALFORMED = json.loads((DATA / "harness_malformed.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("entry", MALFORMED, ids=[e["name"] for e in MALFORMED])
def test_a_malformed_line_stops_the_aio_target_as_it_stops_the_model(
    entry: dict[str, Any],
) -> None:
    lines = json.dumps(SEED[0]) + "\n" + entry["line"] + "\n" + json.dumps(SEED[1]) + "\n"
    runs = {}
    for target in ("model", "aio"):
        out, err = io.StringIO(), io.StringIO()
        status = run_lines(io.StringIO(lines), out, err, target)
        runs[target] = (status, out.getvalue(), err.getvalue())
    assert runs["aio"] == runs["model"]
    assert runs["aio"][0] == EXIT_MALFORMED


@pytest.mark.timeout(120)
def test_the_command_line_runs_the_aio_target() -> None:
    stdin = "".join(json.dumps(s) + "\n" for s in SCENARIOS.values())
    outputs = {}
    for target in ("model", "aio"):
        proc = subprocess.run(
            [sys.executable, "-m", "model_tests.harness", "--target", target],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
            check=False,
        )
        assert (proc.returncode, proc.stderr) == (0, ""), target
        outputs[target] = proc.stdout
    assert outputs["aio"] == outputs["model"]
    assert len(outputs["aio"].splitlines()) == len(SCENARIOS)


GENERATED = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
@GENERATED
@given(data=st.data())
def test_generated_scenarios_give_the_models_outputs(fifo: bool, data: st.DataObject) -> None:
    parsed = parse_line(json.dumps(data.draw(scenarios(fifo=fifo))))
    assert run_scenario(parsed, "aio") == run_scenario(parsed, "model")


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
@GENERATED
@given(data=st.data())
def test_generated_system_scenarios_give_the_models_outputs(
    fifo: bool, data: st.DataObject
) -> None:
    scenario = data.draw(system_scenarios(max_ops=25, fifo=fifo))
    assert run_scenario(scenario, "aio") == run_scenario(scenario, "model"), json.dumps(scenario)
