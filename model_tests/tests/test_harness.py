"""The scenario harness: the seed's examples, timed examples from the contract, malformed input.

Every expected output here is written by hand from the contract (or copied from the seed), never
from either target's own output, and each example runs on both targets. The tables of examples
are data files, ``model_tests/tests/data/harness_*.json`` (timed, batches, FIFO, malformed),
each entry with the contract's reason beside it; the seed's are ``tests/data/seed_examples.jsonl``.
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
from model_tests.scenarios import system_scenarios
from model_tests.targets import TargetName, run_scenario

ROOT = Path(__file__).resolve().parents[2]
SEED_EXAMPLES = [
    json.loads(line)
    for line in (ROOT / "tests" / "data" / "seed_examples.jsonl").read_text().splitlines()
    if line.strip()
]
TARGETS: tuple[TargetName, ...] = ("model", "impl")
#: The tables of examples: one JSON file each, a list of entries with a ``name`` (the test id),
#: ``why`` (what the contract says, from which the expected outputs were worked out) and either
#: ``scenario`` and ``expected`` (its outputs) or, for malformed input, the ``line`` and a
#: fragment of the ``error`` message.
DATA = Path(__file__).resolve().parent / "data"


def _entries(file: str) -> list[dict[str, Any]]:
    entries = json.loads((DATA / file).read_text(encoding="utf-8"))
    assert isinstance(entries, list) and entries, f"{file}: no examples"
    names = [e["name"] for e in entries]
    assert len(set(names)) == len(names), f"{file}: a name is repeated"
    return entries


def examples(file: str) -> dict[str, tuple[dict[str, Any], list[Any]]]:
    """A table of scenarios: name -> (scenario, expected outputs), in the file's order."""
    return {e["name"]: (e["scenario"], e["expected"]) for e in _entries(file)}


def malformed(file: str) -> dict[str, tuple[str, str]]:
    """A table of malformed lines: name -> (line, a fragment of the error message)."""
    return {e["name"]: (e["line"], e["error"]) for e in _entries(file)}


def test_the_seed_file_has_its_four_examples() -> None:
    assert [e["name"] for e in SEED_EXAMPLES] == [
        "fifo",
        "retry fences old attempt",
        "in flight capacity",
        "cancel keeps id reserved",
    ]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("example", SEED_EXAMPLES, ids=[e["name"] for e in SEED_EXAMPLES])
def test_seed_example(example: dict[str, Any], target: TargetName) -> None:
    assert run_scenario(example["input"], target) == example["expected"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("target", TARGETS)
def test_seed_examples_through_the_command_line(target: TargetName) -> None:
    stdin = "".join(json.dumps(e["input"]) + "\n" for e in SEED_EXAMPLES)
    proc = subprocess.run(
        [sys.executable, "-m", "model_tests.harness", "--target", target],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [
        e["expected"] for e in SEED_EXAMPLES
    ]


# -- timed examples, worked out by hand from the contract's table ------------------------------

TIMED: dict[str, tuple[dict[str, Any], list[Any]]] = examples("harness_timed.json")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(TIMED))
def test_timed_example(name: str, target: TargetName) -> None:
    scenario, expected = TIMED[name]
    assert run_scenario(scenario, target) == expected


# -- delays, batches and purge (issue 14), worked out by hand from the contract ----------------

BATCHES: dict[str, tuple[dict[str, Any], list[Any]]] = examples("harness_batches.json")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(BATCHES))
def test_delay_batch_and_purge_example(name: str, target: TargetName) -> None:
    scenario, expected = BATCHES[name]
    assert run_scenario(scenario, target) == expected


def _g(group: str, dedup: str | None = None) -> dict[str, str]:
    """A FIFO send's options."""
    return {"group": group} | ({} if dedup is None else {"dedup": dedup})


#: FIFO queues (contract section 2b, issue 15): each expected output derived by hand from the
#: contract.
FIFO: dict[str, tuple[dict[str, Any], list[Any]]] = examples("harness_fifo.json")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(FIFO))
def test_fifo_example(name: str, target: TargetName) -> None:
    scenario, expected = FIFO[name]
    assert run_scenario(scenario, target) == expected


@pytest.mark.parametrize("target", TARGETS)
def test_fifo_batch_repeating_an_id_of_a_duplicate_entry(target: TargetName) -> None:
    """Contract 2b: a batch's duplicates are set aside first and the other entries are accepted
    or rejected together, so an id that only repeats a duplicate entry's id is no repeat."""
    scenario: dict[str, Any] = {
        "capacity": None,
        "fifo": True,
        "ops": [
            ["enqueue", "b", "B", _g("g", "x")],
            ["enqueue_batch", [["a", "A", _g("g")], ["a", "A", _g("g", "x")]]],
            ["reserve_batch", 10],
        ],
    }
    assert run_scenario(scenario, target) == [
        True,
        [True, "duplicate"],
        [["b", "B", 1], ["a", "A", 1]],
    ]


@pytest.mark.timeout(120)
def test_fifo_through_the_command_line() -> None:
    stdin = "".join(json.dumps(scenario) + "\n" for scenario, _ in FIFO.values())
    for target in TARGETS:
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
        assert [json.loads(line) for line in proc.stdout.splitlines()] == [
            expected for _, expected in FIFO.values()
        ], target


@pytest.mark.timeout(120)
def test_the_new_ops_through_the_command_line() -> None:
    """Both targets, one process each, every example of :data:`BATCHES` on its own line."""
    stdin = "".join(json.dumps(scenario) + "\n" for scenario, _ in BATCHES.values())
    for target in TARGETS:
        proc = subprocess.run(
            [sys.executable, "-m", "model_tests.harness", "--target", target],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
            check=False,
        )
        assert (proc.returncode, proc.stderr) == (0, "")
        assert [json.loads(line) for line in proc.stdout.splitlines()] == [
            expected for _, expected in BATCHES.values()
        ]


# -- malformed input ---------------------------------------------------------------------------

VALID = '{"capacity": 1, "ops": [["enqueue", "a", "A"], ["reserve"]]}'

MALFORMED: dict[str, tuple[str, str]] = malformed("harness_malformed.json")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_line_stops_with_status_2(name: str, target: TargetName) -> None:
    bad, fragment = MALFORMED[name]
    out, err = io.StringIO(), io.StringIO()
    status = run_lines(io.StringIO(f"{VALID}\n\n{bad}\n{VALID}\n"), out, err, target)
    assert status == EXIT_MALFORMED
    # The valid line before was run and written; nothing of the bad line or after it was.
    assert out.getvalue() == '[true,["a","A",1]]\n'
    message = err.getvalue()
    assert message.count("\n") == 1 and message.endswith("\n")
    assert message.startswith("line 3: "), message
    assert fragment in message, message


def test_use_of_a_queue_made_later_in_the_scenario_is_fine() -> None:
    scenario = {"capacity": 1, "ops": [["new"], ["new"], ["use", 2], ["use", 0]]}
    assert run_scenario(scenario, "model") == [None, None, None, None]


@pytest.mark.timeout(120)
def test_malformed_line_through_the_command_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "model_tests.harness", "--target", "impl"],
        input=f'{VALID}\n{{"capacity": 1, "ops": [["ack", "a"]]}}\n{VALID}\n',
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert proc.returncode == EXIT_MALFORMED
    assert proc.stdout == '[true,["a","A",1]]\n'
    assert proc.stderr.startswith("line 2: op 0 ") and "ack takes" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_empty_input_is_no_scenarios() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert run_lines(io.StringIO(""), out, err, "model") == 0
    assert (out.getvalue(), err.getvalue()) == ("", "")


# -- a system of queues (issue 25): a dead-letter target, redrive, retention ---------------------

#: The system examples: queue 1 as queue 0's dead-letter target, the redrive ops, retention.
SYSTEM: dict[str, tuple[dict[str, Any], list[Any]]] = examples("harness_system.json")
#: The targets that run a system of queues: the spec's (spec.system) and impl's.
SYSTEM_TARGETS: tuple[TargetName, ...] = TARGETS


@pytest.mark.parametrize("target", SYSTEM_TARGETS)
@pytest.mark.parametrize("name", list(SYSTEM))
def test_system_example(name: str, target: TargetName) -> None:
    scenario, expected = SYSTEM[name]
    assert run_scenario(scenario, target) == expected


#: System lines that are not valid scenarios: the line, a fragment of the error.
SYSTEM_MALFORMED: dict[str, tuple[dict[str, Any], str]] = {
    "dead_letter without max_receives": (
        {"capacity": None, "dead_letter": {}, "ops": []},
        'dead_letter: needs "max_receives"',
    ),
    "unknown dead_letter key": (
        {"capacity": None, "max_receives": 1, "dead_letter": {"capacity": 1}, "ops": []},
        'dead_letter: unknown key "capacity"',
    ),
    "retention 0": ({"capacity": None, "retention": 0, "ops": []}, "retention: must be > 0"),
    "dead_letter retention 0": (
        {"capacity": None, "max_receives": 1, "dead_letter": {"retention": 0}, "ops": []},
        "dead_letter retention: must be > 0",
    ),
    "redrive without a target": (
        {"capacity": None, "ops": [["redrive"]]},
        'redrive needs a dead-letter target (the scenario key "dead_letter")',
    ),
    "redrive_status without a target": (
        {"capacity": None, "ops": [["redrive_status"]]},
        "redrive_status needs a dead-letter target",
    ),
    "redrive into the dead-letter queue": (
        {"capacity": None, "max_receives": 1, "dead_letter": {}, "ops": [["redrive", {"to": 1}]]},
        "cannot move into the dead-letter queue itself",
    ),
    "redrive to a queue of no system": (
        {
            "capacity": None,
            "max_receives": 1,
            "dead_letter": {},
            "ops": [["new"], ["redrive", {"to": 2}]],
        },
        "must be 0, the one other queue of the system, got 2",
    ),
    "redrive rate 0": (
        {"capacity": None, "max_receives": 1, "dead_letter": {}, "ops": [["redrive", {"rate": 0}]]},
        "rate: must be > 0",
    ),
    "redrive unknown option": (
        {"capacity": None, "max_receives": 1, "dead_letter": {}, "ops": [["redrive", {"n": 1}]]},
        'unknown option "n" (known: rate, to)',
    ),
    "redrive_cancel with an argument": (
        {"capacity": None, "max_receives": 1, "dead_letter": {}, "ops": [["redrive_cancel", 1]]},
        'redrive_cancel takes ["redrive_cancel"]',
    ),
    "use 1 without a target": (
        {"capacity": None, "ops": [["use", 1]]},
        "use 1: only queues 0..0 exist",
    ),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(SYSTEM_MALFORMED))
def test_system_malformed_line_stops_with_status_2(name: str, target: TargetName) -> None:
    bad, fragment = SYSTEM_MALFORMED[name]
    out, err = io.StringIO(), io.StringIO()
    status = run_lines(io.StringIO(f"{VALID}\n{json.dumps(bad)}\n"), out, err, target)
    assert status == EXIT_MALFORMED
    assert out.getvalue() == '[true,["a","A",1]]\n'
    assert err.getvalue().startswith("line 2: ") and fragment in err.getvalue(), err.getvalue()


def test_a_new_queue_after_a_target_is_queue_2_and_has_no_target() -> None:
    # Queue 2 (the first ["new"] of a scenario with a dead-letter target) keeps its dead
    # letters as before: in itself, listed by dead, with nothing in queue 1.
    scenario: dict[str, Any] = {
        "capacity": None,
        "visibility_timeout": 5,
        "max_receives": 1,
        "dead_letter": {},
        "ops": [
            ["new"],
            ["enqueue", "a", "A"],
            ["reserve"],
            ["advance", 5],
            ["dead"],
            ["use", 1],
            ["reserve"],
        ],
    }
    for target in TARGETS:
        assert run_scenario(scenario, target) == [
            None,
            True,
            ["a", "A", 1],
            None,
            ["a"],
            None,
            None,
        ]


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_system_scenarios_give_the_same_outputs_on_model_and_impl(
    fifo: bool, data: st.DataObject
) -> None:
    # Differential: spec.system and impl on generated system scenarios (moves, redrive at a
    # rate or at once, cancel, retention on both queues, FIFO groups in queue 1).
    scenario = data.draw(system_scenarios(max_ops=25, fifo=fifo))
    assert run_scenario(scenario, "model") == run_scenario(scenario, "impl"), json.dumps(scenario)
