"""The scenario harness: the seed's examples, timed examples from the contract, malformed input.

Every expected output here is written by hand from the contract (or copied from the seed), never
from either target's own output, and each example runs on both targets.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from model_tests.harness import EXIT_MALFORMED, run_lines
from model_tests.targets import TargetName, run_scenario

ROOT = Path(__file__).resolve().parents[2]
SEED_EXAMPLES = [
    json.loads(line)
    for line in (ROOT / "tests" / "data" / "seed_examples.jsonl").read_text().splitlines()
    if line.strip()
]
TARGETS: tuple[TargetName, ...] = ("model", "impl")


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

TIMED: dict[str, tuple[dict[str, Any], list[Any]]] = {
    # A delivery expires when the clock reaches its deadline (deadline <= now) and comes back
    # with attempt 2; the old receipt is stale from then on.
    "redelivery at the deadline": (
        {
            "capacity": 1,
            "visibility_timeout": 5,
            "ops": [
                ["enqueue", "a", "A"],
                ["reserve"],
                ["advance", 4.75],
                ["reserve"],
                ["advance", 0.25],
                ["ack", "a", 1],
                ["reserve"],
                ["ack", "a", 1],
                ["ack", "a", 2],
            ],
        },
        [True, ["a", "A", 1], None, None, None, False, ["a", "A", 2], False, True],
    ),
    # ["reserve", vt] overrides the queue's default (here: never expire).
    "reserve with its own vt": (
        {
            "capacity": None,
            "ops": [
                ["enqueue", "a", "A"],
                ["enqueue", "b", "B"],
                ["reserve", 2],
                ["reserve"],
                ["advance", 1000],
                ["reserve"],
                ["reserve"],
            ],
        },
        [True, True, ["a", "A", 1], ["b", "B", 1], None, ["a", "A", 2], None],
    ),
    # extend sets the deadline to now + t (3 + 5 = 8), not old deadline + t (10).
    "extend counts from now": (
        {
            "capacity": 2,
            "visibility_timeout": 5,
            "ops": [
                ["enqueue", "a", "A"],
                ["reserve"],
                ["advance", 3],
                ["extend", "a", 1, 5],
                ["advance", 4],
                ["reserve"],
                ["advance", 1],
                ["reserve"],
                ["extend", "a", 1, 5],
                ["extend", "a", 2, 0],
                ["reserve"],
            ],
        },
        [
            True,
            ["a", "A", 1],
            None,
            True,
            None,
            None,
            None,
            ["a", "A", 2],
            False,
            True,
            ["a", "A", 3],
        ],
    ),
    # After max_receives deliveries the next release dead-letters, freeing capacity.
    "dead after max_receives": (
        {
            "capacity": 1,
            "visibility_timeout": 1,
            "max_receives": 2,
            "ops": [
                ["enqueue", "a", "A"],
                ["reserve"],
                ["advance", 1],
                ["dead"],
                ["reserve"],
                ["advance", 1],
                ["dead"],
                ["reserve"],
                ["ack", "a", 2],
                ["enqueue", "b", "B"],
                ["reserve"],
                ["retry", "b", 1],
                ["reserve"],
                ["retry", "b", 2],
                ["dead"],
            ],
        },
        [
            True,
            ["a", "A", 1],
            None,
            [],
            ["a", "A", 2],
            None,
            ["a"],
            None,
            False,
            True,
            ["b", "B", 1],
            True,
            ["b", "B", 2],
            True,
            ["a", "b"],
        ],
    ),
    # Equal deadlines are released in receive order; earlier deadlines first.
    "expiry order": (
        {
            "capacity": None,
            "visibility_timeout": 2,
            "ops": [
                ["enqueue", "a", "A"],
                ["enqueue", "b", "B"],
                ["enqueue", "c", "C"],
                ["reserve"],
                ["reserve", 1],
                ["reserve"],
                ["advance", 2],
                ["reserve"],
                ["reserve"],
                ["reserve"],
            ],
        },
        [
            True,
            True,
            True,
            ["a", "A", 1],
            ["b", "B", 1],
            ["c", "C", 1],
            None,
            ["b", "B", 2],
            ["a", "A", 2],
            ["c", "C", 2],
        ],
    ),
    # A visibility timeout of 0 is due at once: the sweeper releases it right away.
    "vt zero": (
        {
            "capacity": 1,
            "max_receives": 2,
            "ops": [["enqueue", "a", "A"], ["reserve", 0], ["reserve", 0], ["reserve"], ["dead"]],
        },
        [True, ["a", "A", 1], ["a", "A", 2], None, ["a"]],
    ),
    # Queues share the clock and nothing else; receipts always name the current queue.
    "two queues, one clock": (
        {
            "capacity": 1,
            "visibility_timeout": 3,
            "ops": [
                ["enqueue", "a", "A"],
                ["reserve"],
                ["new"],
                ["enqueue", "a", "other"],
                ["advance", 1],
                ["reserve"],
                ["ack", "a", 1],
                ["use", 0],
                ["advance", 2],
                ["ack", "a", 1],
                ["reserve"],
                ["use", 1],
                ["reserve"],
                ["enqueue", "b", "B"],
            ],
        },
        [
            True,
            ["a", "A", 1],
            None,
            True,
            None,
            ["a", "other", 1],
            True,
            None,
            None,
            False,
            ["a", "A", 2],
            None,
            None,
            True,
        ],
    ),
    # Cancelling an in-flight message kills its receipt and frees its slot at once.
    "cancel in flight": (
        {
            "capacity": 1,
            "visibility_timeout": 1,
            "ops": [
                ["enqueue", "a", "A"],
                ["reserve"],
                ["cancel", "a"],
                ["advance", 5],
                ["ack", "a", 1],
                ["reserve"],
                ["enqueue", "b", "B"],
                ["cancel", "a"],
            ],
        },
        [True, ["a", "A", 1], True, None, False, None, True, False],
    ),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(TIMED))
def test_timed_example(name: str, target: TargetName) -> None:
    scenario, expected = TIMED[name]
    assert run_scenario(scenario, target) == expected


# -- delays, batches and purge (issue 14), worked out by hand from the contract ----------------

BATCHES: dict[str, tuple[dict[str, Any], list[Any]]] = {
    # A delayed message is DELAYED until its visible_at (now + delay) and counts against the
    # capacity meanwhile; without the option a send takes the queue's "delay", {"delay": 0}
    # overrides it. A delay fires at the sweep that reaches it, to the tail of VISIBLE.
    "delays, the option and the queue's default": (
        {
            "capacity": 3,
            "delay": 2,
            "ops": [
                ["enqueue", "a", "A"],
                ["enqueue", "b", "B", {"delay": 0}],
                ["enqueue", "c", "C", {"delay": 1}],
                ["reserve"],
                ["reserve"],
                ["enqueue", "d", "D"],
                ["advance", 0.75],
                ["reserve"],
                ["advance", 0.25],
                ["reserve"],
                ["advance", 1],
                ["reserve"],
            ],
        },
        [
            True,
            True,
            True,
            ["b", "B", 1],
            None,
            False,
            None,
            None,
            None,
            ["c", "C", 1],
            None,
            ["a", "A", 1],
        ],
    ),
    # Timers due at the same time fire in the order they were started, whatever their kind:
    # a's deadline (started by the reserve) before b's delay (started by the send after it).
    "a deadline started first fires first": (
        {
            "capacity": None,
            "visibility_timeout": 2,
            "ops": [
                ["enqueue", "a", "A"],
                ["reserve"],
                ["enqueue", "b", "B", {"delay": 2}],
                ["advance", 2],
                ["reserve"],
                ["reserve"],
            ],
        },
        [True, ["a", "A", 1], True, None, ["a", "A", 2], ["b", "B", 1]],
    ),
    # ... and b's delay, started before a's deadline, first.
    "a delay started first fires first": (
        {
            "capacity": None,
            "visibility_timeout": 2,
            "ops": [
                ["enqueue", "b", "B", {"delay": 2}],
                ["enqueue", "a", "A"],
                ["reserve"],
                ["advance", 2],
                ["reserve"],
                ["reserve"],
            ],
        },
        [True, True, ["a", "A", 1], None, ["b", "B", 1], ["a", "A", 2]],
    ),
    # extend moves a deadline but keeps its timer's place (a before b at time 2): the place of
    # the receive that started it, even for a delivery without a deadline (vt null: c's
    # receive came before d's delayed send, so c goes before d at time 3).
    "extend keeps a timer's place": (
        {
            "capacity": None,
            "ops": [
                ["enqueue", "a", "A"],
                ["reserve", 1],
                ["enqueue", "b", "B", {"delay": 2}],
                ["extend", "a", 1, 2],
                ["enqueue", "c", "C"],
                ["reserve", None],
                ["enqueue", "d", "D", {"delay": 3}],
                ["extend", "c", 1, 3],
                ["advance", 2],
                ["reserve_batch", 10],
                ["advance", 1],
                ["reserve_batch", 10],
            ],
        },
        [
            True,
            ["a", "A", 1],
            True,
            True,
            True,
            ["c", "C", 1],
            True,
            True,
            None,
            [["a", "A", 2], ["b", "B", 1]],
            None,
            [["c", "C", 2], ["d", "D", 1]],
        ],
    ),
    # A cancelled delayed message never becomes visible, and frees its slot at once.
    "cancel a delayed message": (
        {
            "capacity": 1,
            "ops": [
                ["enqueue", "a", "A", {"delay": 1}],
                ["enqueue", "b", "B"],
                ["cancel", "a"],
                ["enqueue", "b", "B"],
                ["advance", 1],
                ["reserve"],
                ["reserve"],
            ],
        },
        [True, False, True, True, None, ["b", "B", 1], None],
    ),
    # send_batch is all or none: too many for the room left, an id accepted before, an id
    # repeated inside the batch: rejected, and no id of it is reserved (b and c go later).
    "enqueue_batch, all or none": (
        {
            "capacity": 3,
            "ops": [
                ["enqueue", "a", "A"],
                ["enqueue_batch", [["b", "B"], ["c", "C"], ["d", "D"]]],
                ["enqueue_batch", [["b", "B"], ["a", "X"]]],
                ["enqueue_batch", [["b", "B"], ["b", "B2"]]],
                ["enqueue_batch", [["b", "B"], ["c", "C", {"delay": 1}]]],
                ["reserve_batch", 10],
                ["enqueue", "d", "D"],
                ["advance", 1],
                ["reserve_batch", 10],
                ["reserve_batch", 1],
            ],
        },
        [
            True,
            False,
            False,
            False,
            True,
            [["a", "A", 1], ["b", "B", 1]],
            False,
            None,
            [["c", "C", 1]],
            [],
        ],
    ),
    # A batch larger than the capacity can never fit: rejected; one that fits is accepted.
    "enqueue_batch larger than the capacity": (
        {
            "capacity": 1,
            "ops": [["enqueue_batch", [["a", "A"], ["b", "B"]]], ["enqueue_batch", [["a", "A"]]]],
        },
        [False, True],
    ),
    # receive_batch takes the first min(n, visible) in FIFO order, all with one deadline; a
    # delete_batch acts on each receipt in order (a repeated receipt: false the second time).
    "reserve_batch and ack_batch": (
        {
            "capacity": None,
            "visibility_timeout": 5,
            "ops": [
                ["enqueue_batch", [["a", "A"], ["b", "B"], ["c", "C"]]],
                ["reserve_batch", 2],
                ["reserve_batch", 2, 1],
                ["advance", 1],
                ["advance", 4],
                ["reserve_batch", 3, None],
                ["ack_batch", [["a", 2], ["a", 2], ["b", 1], ["c", 2], ["z", 1]]],
                ["reserve_batch", 10],
                ["ack", "b", 2],
            ],
        },
        [
            True,
            [["a", "A", 1], ["b", "B", 1]],
            [["c", "C", 1]],
            None,
            None,
            [["c", "C", 2], ["a", "A", 2], ["b", "B", 2]],
            [True, False, False, True, False],
            [],
            True,
        ],
    ),
    # change_visibility_batch: each change in order (a's second change wins and keeps a's
    # place), t = 0 releases (here to DEAD: max_receives 1), a future receipt is refused.
    "extend_batch": (
        {
            "capacity": None,
            "visibility_timeout": 2,
            "max_receives": 1,
            "ops": [
                ["enqueue_batch", [["a", "A"], ["b", "B"], ["c", "C"]]],
                ["reserve_batch", 3],
                ["advance", 1],
                ["extend_batch", [["a", 1, 5], ["b", 1, 0], ["c", 2, 5], ["a", 1, 1]]],
                ["dead"],
                ["advance", 1],
                ["dead"],
            ],
        },
        [
            True,
            [["a", "A", 1], ["b", "B", 1], ["c", "C", 1]],
            None,
            [True, True, False, True],
            ["b"],
            None,
            ["b", "a", "c"],
        ],
    ),
    # purge cancels every active message (delayed, visible, in flight) and kills their
    # receipts; the ids stay reserved, the room is freed, dead letters are untouched.
    "purge": (
        {
            "capacity": 3,
            "visibility_timeout": 5,
            "ops": [
                ["enqueue", "a", "A"],
                ["enqueue", "b", "B", {"delay": 3}],
                ["enqueue", "c", "C"],
                ["reserve"],
                ["purge"],
                ["ack", "a", 1],
                ["advance", 5],
                ["reserve"],
                ["enqueue", "a", "A"],
                ["enqueue_batch", [["d", "D"], ["e", "E"], ["f", "F"]]],
                ["cancel", "b"],
                ["purge"],
                ["purge"],
            ],
        },
        [True, True, True, ["a", "A", 1], 3, False, None, None, False, True, False, 3, 0],
    ),
    "purge leaves the dead letters": (
        {
            "capacity": 1,
            "visibility_timeout": 1,
            "max_receives": 1,
            "ops": [["enqueue", "a", "A"], ["reserve"], ["advance", 1], ["purge"], ["dead"]],
        },
        [True, ["a", "A", 1], None, 0, ["a"]],
    ),
    # "fifo": false and dedup_interval (FIFO only) are accepted on a standard queue.
    "standard queue keys": (
        {"capacity": 1, "fifo": False, "dedup_interval": 60, "ops": [["enqueue", "a", "A", {}]]},
        [True],
    ),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(BATCHES))
def test_delay_batch_and_purge_example(name: str, target: TargetName) -> None:
    scenario, expected = BATCHES[name]
    assert run_scenario(scenario, target) == expected


def _g(group: str, dedup: str | None = None) -> dict[str, str]:
    """A FIFO send's options."""
    return {"group": group} | ({} if dedup is None else {"dedup": dedup})


#: FIFO queues (contract section 2b, issue 15): name -> (scenario, expected outputs), each
#: expected output derived by hand from the contract.
FIFO: dict[str, tuple[dict[str, Any], list[Any]]] = {
    # Groups are independent; a group is locked while one of its messages is in flight, and
    # the next receive takes the earliest message of an unlocked group.
    "group order and lock": (
        {
            "capacity": None,
            "fifo": True,
            "ops": [
                ["enqueue", "a", "A", _g("g1")],
                ["enqueue", "b", "B", _g("g2")],
                ["enqueue", "c", "C", _g("g1")],
                ["enqueue", "d", "D", _g("g2")],
                ["reserve"],
                ["reserve"],
                ["reserve"],
                ["ack", "a", 1],
                ["reserve"],
                ["ack", "b", 1],
                ["reserve"],
            ],
        },
        [
            True,
            True,
            True,
            True,
            ["a", "A", 1],
            ["b", "B", 1],
            None,
            True,
            ["c", "C", 1],
            True,
            ["d", "D", 1],
        ],
    ),
    # A released message (expiry, retry) goes back to the head of its group, before the
    # later messages of that group; a receive skips the locked group's visible messages.
    "head-of-group redelivery": (
        {
            "capacity": None,
            "visibility_timeout": 5,
            "fifo": True,
            "ops": [
                ["enqueue", "a", "A", _g("g")],
                ["enqueue", "b", "B", _g("g")],
                ["enqueue", "c", "C", _g("h")],
                ["reserve"],
                ["reserve"],
                ["reserve"],
                ["advance", 5],
                ["reserve"],
                ["reserve"],
                ["reserve"],
                ["retry", "a", 2],
                ["reserve"],
                ["ack", "a", 3],
                ["reserve"],
            ],
        },
        [
            True,
            True,
            True,
            ["a", "A", 1],
            ["c", "C", 1],
            None,
            None,
            ["a", "A", 2],
            ["c", "C", 2],
            None,
            True,
            ["a", "A", 3],
            True,
            ["b", "B", 1],
        ],
    ),
    # Dedup: within the interval of the first acceptance a send with the same dedup id is a
    # duplicate whatever became of that message (here deleted), needing no room; a rejected
    # send records nothing; at the interval's end the dedup id is new again and its window
    # restarts; a send without a dedup id is never a duplicate.
    "dedup window": (
        {
            "capacity": 2,
            "fifo": True,
            "dedup_interval": 10,
            "ops": [
                ["enqueue", "a", "A", _g("g", "x")],
                ["enqueue", "b", "B", _g("g", "x")],
                ["enqueue", "a", "A", _g("g", "y")],
                ["enqueue", "c", "C", _g("g", "y")],
                ["reserve"],
                ["ack", "a", 1],
                ["advance", 5],
                ["enqueue", "d", "D", _g("g", "x")],
                ["advance", 5],
                ["enqueue", "d", "D", _g("g", "x")],
                ["enqueue", "e", "E", _g("g", "x")],
                ["enqueue", "f", "F", _g("g")],
                ["enqueue", "c", "C", _g("g", "y")],
                ["reserve"],
                ["reserve"],
            ],
        },
        [
            True,
            "duplicate",
            False,
            True,
            ["a", "A", 1],
            True,
            None,
            "duplicate",
            None,
            True,
            "duplicate",
            False,
            False,
            ["c", "C", 1],
            None,
        ],
    ),
    # Batches: duplicates reported per entry, the others accepted or rejected together;
    # receive_batch takes a group's visible messages in send order, then the next group's.
    "batches": (
        {
            "capacity": 3,
            "fifo": True,
            "ops": [
                ["enqueue_batch", [["a", "A", _g("g1", "x")], ["b", "B", _g("g2")]]],
                ["enqueue_batch", [["c", "C", _g("g1")]]],
                ["enqueue_batch", [["d", "D", _g("g2", "x")], ["e", "E", _g("g2")]]],
                ["reserve_batch", 2],
                ["reserve_batch", 10],
                ["ack_batch", [["a", 1]]],
                ["reserve"],
                ["extend_batch", [["c", 1, 0]]],
                ["reserve_batch", 10],
                ["enqueue_batch", [["d", "D", _g("g2", "x")], ["e", "E", _g("g3")]]],
                ["reserve_batch", 10],
            ],
        },
        [
            [True, True],
            [True],
            ["duplicate", False],
            [["a", "A", 1], ["c", "C", 1]],
            [["b", "B", 1]],
            [True],
            None,
            [True],
            [["c", "C", 2]],
            ["duplicate", True],
            [["e", "E", 1]],
        ],
    ),
    # The queue's delay applies to every send; cancel and purge unlock a group.
    "queue delay, cancel and purge": (
        {
            "capacity": None,
            "fifo": True,
            "delay": 2,
            "ops": [
                ["enqueue", "a", "A", _g("g")],
                ["enqueue", "b", "B", _g("g")],
                ["reserve"],
                ["advance", 2],
                ["reserve"],
                ["cancel", "a"],
                ["reserve"],
                ["purge"],
                ["enqueue", "c", "C", _g("g")],
                ["advance", 2],
                ["reserve"],
            ],
        },
        [True, True, None, None, ["a", "A", 1], True, ["b", "B", 1], 1, True, None, ["c", "C", 1]],
    ),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(FIFO))
def test_fifo_example(name: str, target: TargetName) -> None:
    scenario, expected = FIFO[name]
    assert run_scenario(scenario, target) == expected


@pytest.mark.parametrize("target", TARGETS)
def test_fifo_batch_repeating_an_id_of_a_duplicate_entry(target: TargetName) -> None:
    """Contract 2b: a batch's duplicates are set aside first and the other entries are accepted
    or rejected together, so an id that only repeats a duplicate entry's id is no repeat."""
    scenario = {
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

MALFORMED: dict[str, tuple[str, str]] = {
    "not json": ("{capacity: 1}", "not valid JSON"),
    "not an object": ("[1, 2]", "expected a scenario object"),
    "missing capacity": ('{"ops": []}', 'missing key "capacity"'),
    "missing ops": ('{"capacity": 1}', 'missing key "ops"'),
    "unknown key": ('{"capacity": 1, "ops": [], "visibility": 3}', 'unknown key "visibility"'),
    "duplicate key": ('{"capacity": 1, "capacity": 2, "ops": []}', 'duplicate key "capacity"'),
    "negative capacity": ('{"capacity": -1, "ops": []}', "capacity: must be >= 0"),
    "fractional capacity": ('{"capacity": 1.5, "ops": []}', "capacity: expected an integer"),
    "boolean capacity": ('{"capacity": true, "ops": []}', "capacity: expected an integer"),
    "negative vt": (
        '{"capacity": 1, "visibility_timeout": -1, "ops": []}',
        "visibility_timeout: must be a number in [0,",
    ),
    "string vt": (
        '{"capacity": 1, "visibility_timeout": "5", "ops": []}',
        "visibility_timeout: expected a number",
    ),
    "max_receives 0": (
        '{"capacity": 1, "max_receives": 0, "ops": []}',
        "max_receives: must be >= 1",
    ),
    "ops not a list": ('{"capacity": 1, "ops": {}}', "ops: expected a list"),
    "op not a list": ('{"capacity": 1, "ops": ["reserve"]}', "op 0"),
    "unknown op": ('{"capacity": 1, "ops": [["push", "a"]]}', 'unknown op "push"'),
    "enqueue arity": ('{"capacity": 1, "ops": [["enqueue", "a"]]}', "enqueue takes"),
    "reserve arity": ('{"capacity": 1, "ops": [["reserve", 1, 2]]}', "reserve takes"),
    "dead arity": ('{"capacity": 1, "ops": [["dead", 0]]}', "dead takes"),
    "id with a space": ('{"capacity": 1, "ops": [["enqueue", "a b", "x"]]}', "does not match"),
    "empty id": ('{"capacity": 1, "ops": [["cancel", ""]]}', "does not match"),
    "id too long": (
        '{"capacity": 1, "ops": [["enqueue", "' + "a" * 129 + '", "x"]]}',
        "does not match",
    ),
    "id not a string": ('{"capacity": 1, "ops": [["cancel", 5]]}', "expected an id string"),
    "payload not a string": ('{"capacity": 1, "ops": [["enqueue", "a", 5]]}', "payload must be"),
    "negative attempt": ('{"capacity": 1, "ops": [["ack", "a", -1]]}', "attempt: must be >= 0"),
    "fractional attempt": (
        '{"capacity": 1, "ops": [["retry", "a", 1.0]]}',
        "attempt: expected an integer",
    ),
    "negative dt": ('{"capacity": 1, "ops": [["advance", -1]]}', "dt: must be a number in [0,"),
    "NaN dt": ('{"capacity": 1, "ops": [["advance", NaN]]}', "NaN is not a JSON number"),
    "overflowing dt": ('{"capacity": 1, "ops": [["advance", 1e999]]}', "dt: must be a number"),
    "negative extend": ('{"capacity": 1, "ops": [["extend", "a", 1, -2]]}', "t: must be"),
    "use of a missing queue": (
        '{"capacity": 1, "ops": [["new"], ["use", 2]]}',
        "use 2: only queues 0..1 exist",
    ),
    # issue 14: delays, batches, purge
    "fifo not a bool": ('{"capacity": 1, "fifo": 1, "ops": []}', "fifo: expected true or false"),
    "negative queue delay": ('{"capacity": 1, "delay": -1, "ops": []}', "delay: must be a number"),
    "group option": (
        '{"capacity": 1, "ops": [["enqueue", "a", "A", {"group": "g"}]]}',
        'option "group" is for FIFO queues only ("fifo": true)',
    ),
    "dedup option in a batch entry": (
        '{"capacity": 1, "ops": [["enqueue_batch", [["a", "A"], ["b", "B", {"dedup": "x"}]]]]}',
        'entry 1: option "dedup" is for FIFO queues only',
    ),
    "unknown option": (
        '{"capacity": 1, "ops": [["enqueue", "a", "A", {"priority": 1}]]}',
        'unknown option "priority" (known: delay)',
    ),
    "opts not an object": ('{"capacity": 1, "ops": [["enqueue", "a", "A", 5]]}', "opts must be"),
    "negative delay option": (
        '{"capacity": 1, "ops": [["enqueue", "a", "A", {"delay": -1}]]}',
        "delay: must be a number in [0,",
    ),
    "enqueue arity with opts": (
        '{"capacity": 1, "ops": [["enqueue", "a", "A", {}, 1]]}',
        "enqueue takes",
    ),
    "empty enqueue_batch": (
        '{"capacity": 1, "ops": [["enqueue_batch", []]]}',
        "a batch takes 1 to 10 entries, got 0",
    ),
    "enqueue_batch of 11": (
        '{"capacity": 1, "ops": [["enqueue_batch", ['
        + ", ".join(f'["m{i}", "x"]' for i in range(11))
        + "]]]}",
        "a batch takes 1 to 10 entries, got 11",
    ),
    "enqueue_batch not a list": (
        '{"capacity": 1, "ops": [["enqueue_batch", "a"]]}',
        "entries must be a list",
    ),
    "enqueue_batch entry too short": (
        '{"capacity": 1, "ops": [["enqueue_batch", [["a"]]]]}',
        'entry 0: expected [id, payload] or [id, payload, opts], got ["a"]',
    ),
    "enqueue_batch entry with a bad id": (
        '{"capacity": 1, "ops": [["enqueue_batch", [["a", "A"], ["b c", "B"]]]]}',
        "entry 1: id",
    ),
    "reserve_batch of 0": ('{"capacity": 1, "ops": [["reserve_batch", 0]]}', "n: must be >= 1"),
    "reserve_batch of 11": ('{"capacity": 1, "ops": [["reserve_batch", 11]]}', "n: must be <= 10"),
    "reserve_batch without n": (
        '{"capacity": 1, "ops": [["reserve_batch"]]}',
        "reserve_batch takes",
    ),
    "reserve_batch negative vt": (
        '{"capacity": 1, "ops": [["reserve_batch", 1, -1]]}',
        "vt: must be a number",
    ),
    "empty ack_batch": (
        '{"capacity": 1, "ops": [["ack_batch", []]]}',
        "a batch takes 1 to 10 receipts, got 0",
    ),
    "ack_batch of 11": (
        '{"capacity": 1, "ops": [["ack_batch", [' + ", ".join(['["a", 1]'] * 11) + "]]]}",
        "a batch takes 1 to 10 receipts, got 11",
    ),
    "ack_batch entry with a negative attempt": (
        '{"capacity": 1, "ops": [["ack_batch", [["a", -1]]]]}',
        "entry 0 attempt: must be >= 0",
    ),
    "empty extend_batch": (
        '{"capacity": 1, "ops": [["extend_batch", []]]}',
        "a batch takes 1 to 10 changes, got 0",
    ),
    "extend_batch of 11": (
        '{"capacity": 1, "ops": [["extend_batch", [' + ", ".join(['["a", 1, 2]'] * 11) + "]]]}",
        "a batch takes 1 to 10 changes, got 11",
    ),
    "extend_batch entry without t": (
        '{"capacity": 1, "ops": [["extend_batch", [["a", 1]]]]}',
        "entry 0: expected [id, attempt, t]",
    ),
    "purge arity": ('{"capacity": 1, "ops": [["purge", 1]]}', "purge takes"),
    # issue 15: FIFO queues
    "delay on a FIFO queue": (
        '{"capacity": 1, "fifo": true, "ops": [["enqueue", "a", "A", {"group": "g", "delay": 1}]]}',
        'option "delay" is not taken by a FIFO queue',
    ),
    "FIFO send without a group": (
        '{"capacity": 1, "fifo": true, "ops": [["enqueue", "a", "A"]]}',
        "a send on a FIFO queue needs a group",
    ),
    "FIFO batch entry without a group": (
        '{"capacity": 1, "fifo": true, "ops": [["enqueue_batch", [["a", "A", {"dedup": "x"}]]]]}',
        "entry 0: a send on a FIFO queue needs a group",
    ),
    "unknown FIFO option": (
        '{"capacity": 1, "fifo": true, "ops": [["enqueue", "a", "A", {"group": "g", "p": 1}]]}',
        'unknown option "p" (known: group, dedup)',
    ),
    "group not an id": (
        '{"capacity": 1, "fifo": true, "ops": [["enqueue", "a", "A", {"group": "g h"}]]}',
        'group: id "g h" does not match',
    ),
    "dedup not an id": (
        '{"capacity": 1, "fifo": true, "ops": [["enqueue", "a", "A", {"group": "g", "dedup": 1}]]}',
        "dedup: expected an id string",
    ),
    "dedup repeated inside a batch": (
        '{"capacity": 2, "fifo": true, "ops": [["enqueue_batch", '
        '[["a", "A", {"group": "g", "dedup": "x"}], ["b", "B", {"group": "h", "dedup": "x"}]]]]}',
        "a dedup id repeated inside one enqueue_batch is an invalid batch",
    ),
    "negative dedup_interval": (
        '{"capacity": 1, "fifo": true, "dedup_interval": -1, "ops": []}',
        "dedup_interval: must be a number",
    ),
}


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
