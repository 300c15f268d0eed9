"""The small examples in ``examples/`` do what their docstrings say, and run as ``python -m``.

Each example's ``main()`` returns what it showed; these tests assert those facts (and what it
printed), so an example that stopped teaching the truth fails here. The examples run on a
FakeClock: nothing waits for real time.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from examples import (
    async_consumer,
    consumer,
    dead_letter_queues,
    dead_letters,
    effect_once,
    idempotent,
    redelivery,
)
from examples.effect_once import CarelessStore, EffectStore
from impl import FakeClock, Queue, RedriveStatus, Stats
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


# -- dead-letter queues that are queues (examples/dead_letter_queues.py, contract section 7) ----


def test_dead_letter_queues_the_poison_message_moves_is_received_and_comes_back_with_a_new_id(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shown = dead_letter_queues.main()
    # max_receives=2: order-2 is delivered twice in orders; the release after the second
    # delivery (its visibility timeout, fired by the sweep) dead-letters it into orders-dlq.
    assert shown.dead_in_orders == ["order-2"]
    assert shown.source == "orders"
    # In the dead-letter queue it is the same message: same id and body, attempt kept (two
    # deliveries in orders, so this delivery is the third).
    assert shown.dlq_delivery == ("order-2", "1,000", 3)
    # The redrive moves it back as a new message: a new id, delivered as attempt 1.
    assert shown.redriven_as not in {id for id, _ in dead_letter_queues.ORDERS}
    assert shown.redriven_attempt == 1
    assert shown.task == (RedriveStatus.COMPLETED, 1, 0, 1)
    assert shown.processed == {"order-1": 250, "order-3": 75, shown.redriven_as: 1000}
    # orders: three done, order-2's DEAD entry stays ("died here"); the DLQ: one moved out.
    assert shown.orders == Stats(visible=0, in_flight=0, done=3, cancelled=0, dead=1)
    assert shown.dlq == Stats(visible=0, in_flight=0, done=0, cancelled=0, dead=0, moved=1)
    out = capsys.readouterr().out.splitlines()
    assert "orders: order-2 attempt 2: cannot parse '1,000', left in flight" in out
    assert "orders: dead letters ['order-2']; orders-dlq: 1 visible" in out
    assert f"orders: {shown.redriven_as} processed 1000" in out


def test_dead_letter_queues_runs_as_a_script_with_nothing_installed() -> None:
    # `python3 examples/dead_letter_queues.py`: -S leaves out site-packages (and the editable
    # install's path), so the script finds impl/ from its own location, with no dependency.
    runs = [
        subprocess.run(
            [sys.executable, "-S", "examples/dead_letter_queues.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        for _ in range(2)
    ]
    for done in runs:
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
    assert runs[0].stdout == runs[1].stdout  # deterministic: a fake clock, no threads racing
    assert runs[0].stdout.splitlines()[-1].startswith("orders-dlq: Stats(")


# -- issue 18: exactly-once effects (examples/effect_once.py, tla/QueueEffects.tla) ---------------


def test_effect_once_the_atomic_store_applies_the_effect_once_the_careless_one_twice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The duplicate race of main(): consumer 1 applies the effect and is slow past its
    # visibility timeout; order-1 is redelivered to consumer 2. Both deletes are the same in
    # both runs (the stale receipt loses): only the store decides how often the effect happens.
    assert effect_once.main() == {"atomic": (1, [True, False]), "careless": (2, [True, False])}
    assert capsys.readouterr().out.splitlines() == [
        "atomic store: effect applied 1x; deletes returned [True, False]",
        "careless store: effect applied 2x; deletes returned [True, False]",
    ]


SLOW_AT = ["before apply", "between apply and record", "before delete"]


@pytest.mark.parametrize("slow_at", SLOW_AT)
@pytest.mark.parametrize("store_class", [EffectStore, CarelessStore], ids=["atomic", "careless"])
def test_effect_once_under_the_duplicate_race_wherever_the_first_consumer_is_slow(
    store_class: type[EffectStore], slow_at: str
) -> None:
    # Two consumers; the first is slower than its visibility timeout at one of its three
    # points (it waits on an event; the FakeClock makes it late). The message is delivered
    # twice every time; the effect is applied once, except with the careless store when the
    # first consumer is slow between the effect and the key (TLC's QueueEffectsCareless trace).
    store = store_class()
    clock = FakeClock()
    paused, resume = threading.Event(), threading.Event()
    first_deleted: list[bool] = []

    def pause(here: str) -> None:
        if here == slow_at:
            paused.set()
            assert resume.wait(BOUND)

    with Queue[str](visibility_timeout=30.0, clock=clock) as q:
        q.send("ship parcel 42", id="order-1")
        first = q.receive(block=False)

        def consumer_1() -> None:
            pause("before apply")
            store.apply(first.id)
            pause("between apply and record")
            store.record(first.id)
            pause("before delete")
            first_deleted.append(q.delete(first.receipt))

        c1 = threading.Thread(target=consumer_1)
        c1.start()
        assert paused.wait(BOUND)
        clock.advance(31.0)
        q.sweep()
        second = q.receive(block=False)
        assert (second.id, second.attempt) == ("order-1", 2)  # delivered twice
        assert effect_once.consume(q, store, second, lambda: None) is True
        resume.set()
        c1.join(BOUND)
        assert not c1.is_alive()
        assert q.stats().done == 1
    twice = store_class is CarelessStore and slow_at == "between apply and record"
    assert store.effects["order-1"] == (2 if twice else 1)
    assert store.keys == {"order-1"}
    assert first_deleted == [False]  # the slow consumer's receipt went stale at the release


def test_async_consumer_charges_each_order_once_though_order_2_is_delivered_twice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log, stats = asyncio.run(async_consumer.main())
    # order-2's first consumer charged it and did not delete it; the loop timer (no sweep())
    # redelivered it when the fake clock passed the visibility timeout; attempt 2 found it done.
    assert log == [
        "order-1 #1: charged",
        "order-2 #1: charged",
        "order-3 #1: charged",
        "order-2 #2: already",
    ]
    # Every message deleted with its receipt, and `async for` ended after the shutdown drained.
    assert stats == Stats(visible=0, in_flight=0, done=3, cancelled=0, dead=0)
    assert capsys.readouterr().out.splitlines()[:4] == log


def test_async_consumer_runs_as_a_script_with_nothing_installed() -> None:
    # `python3 examples/async_consumer.py`, with -S as for dead_letter_queues above.
    done = subprocess.run(
        [sys.executable, "-S", "examples/async_consumer.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines()[3] == "order-2 #2: already"


@pytest.mark.parametrize(
    ("name", "last_line"),
    [
        (
            "consumer",
            "Stats(visible=0, in_flight=0, done=5, cancelled=0, dead=0, delayed=0, aged_out=0, "
            "moved=0)",
        ),
        ("redelivery", "messages done: 1"),
        ("idempotent", "shipped: ['PARCEL 42']"),
        ("dead_letters", "processed: [1, 2]; dead letters: [('poison', 3)]"),
        ("effect_once", "careless store: effect applied 2x; deletes returned [True, False]"),
        (
            "async_consumer",
            "Stats(visible=0, in_flight=0, done=3, cancelled=0, dead=0, delayed=0, aged_out=0, "
            "moved=0)",
        ),
        (
            "dead_letter_queues",
            "orders-dlq: Stats(visible=0, in_flight=0, done=0, cancelled=0, dead=0, delayed=0, "
            "aged_out=0, moved=1)",
        ),
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
