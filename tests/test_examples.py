"""The small examples in ``examples/`` do what their docstrings say, and run as ``python -m``.

Each example's ``main()`` returns what it showed; these tests assert those facts (and what it
printed), so an example that stopped teaching the truth fails here. The examples run on a
FakeClock: nothing waits for real time.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from examples import consumer, dead_letters, idempotent, redelivery
from impl import Stats
from model_tests.support import BOUND

ROOT = Path(__file__).resolve().parent.parent


def test_consumer_processes_each_order_once_and_the_shutdown_drains_the_queue(
    capsys: pytest.CaptureFixture[str],
) -> None:
    results, stats = consumer.main()
    assert results == {f"order-{n}": n * 20 for n in range(1, 6)}
    # Every message was deleted: none left visible or in flight, none redelivered or dead.
    assert stats == Stats(visible=0, in_flight=0, done=5, cancelled=0, dead=0)
    out = capsys.readouterr().out.splitlines()
    assert out[:5] == [f"order-{n}: {n * 20}" for n in range(1, 6)]


def test_redelivery_a_late_delete_loses_to_the_second_attempt(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert redelivery.main() == [
        ("slow consumer receives, attempt", 1),
        ("fast consumer receives, attempt", 2),
        ("fast consumer deletes", True),
        ("slow consumer deletes, late", False),
        ("messages done", 1),
    ]
    assert "slow consumer deletes, late: False" in capsys.readouterr().out


@pytest.mark.parametrize("run", range(20))
def test_idempotent_two_consumers_apply_the_effect_once_whichever_wins(run: int) -> None:
    # The two consumers meet at the lock at once; whoever gets it first, the effect is applied once.
    shipped, outcomes = idempotent.main()
    assert shipped == ["PARCEL 42"]
    assert sorted(outcomes) == [1, 2]
    assert sorted(applied for applied, _ in outcomes.values()) == [False, True]
    # Deletes do not depend on who applied: attempt 1's receipt went stale at the redelivery.
    assert (outcomes[1][1], outcomes[2][1]) == (False, True)


def test_the_check_then_record_consumer_the_example_warns_against_applies_twice() -> None:
    # The docstring's claim, made to happen: both copies check before either records its id.
    done: set[str] = set()
    applied: list[str] = []
    both_checked = threading.Barrier(2, timeout=BOUND)

    def tempting(id: str) -> None:
        if id not in done:
            both_checked.wait()
            applied.append(id)
            done.add(id)

    threads = [threading.Thread(target=tempting, args=("order-1",)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(BOUND)
    assert applied == ["order-1", "order-1"]


def test_dead_letters_sets_the_poison_message_aside_after_max_receives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    processed, dead = dead_letters.main()
    assert processed == [1, 2]
    assert dead == [("poison", 3)]
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [f"poison: attempt {n} failed, given back" for n in (1, 2, 3)]


@pytest.mark.parametrize(
    ("name", "last_line"),
    [
        ("consumer", "Stats(visible=0, in_flight=0, done=5, cancelled=0, dead=0, delayed=0)"),
        ("redelivery", "messages done: 1"),
        ("idempotent", "shipped: ['PARCEL 42']"),
        ("dead_letters", "processed: [1, 2]; dead letters: [('poison', 3)]"),
    ],
)
def test_python_dash_m_runs_each_example(name: str, last_line: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", f"examples.{name}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines()[-1] == last_line
