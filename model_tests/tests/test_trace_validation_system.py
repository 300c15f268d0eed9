"""Trace validation of a system of queues: a run recorded from the real ``impl.Queue`` pair
``orders -> orders-dlq`` is a behaviour of ``tla/QueueSystem.tla``.

``tla.system_trace.SystemRecorder`` gives both queues one sink, so the two queues' steps arrive
in one list in linearization order (the module says why); ``check_system_trace`` turns it into
the constant of ``tla/TraceQueueSystem.tla`` and asks TLC whether some behaviour of
``QueueSystem`` takes exactly those steps, on those queues, with those results. The run, on a
``FakeClock`` (the queues' sweeper threads run too, racing the test's own sweeps): four
dead-letter moves (two retries, a ``change_visibility(..., 0)``, a deadline in the source's sweep),
a delivery in the dead-letter queue at the kept attempt, a redrive at one message a second
(two moves, fired by the dead-letter queue's sweep, each a new message in the source; one
scope id skipped because it aged out first), retention in both queues, in flight (a moved
message by its original enqueue time, a redriven one by its new one), a delay, a stale delete.
The trace is accepted; the same trace doctored so that a move is seen half done, a redrive
keeps the id, or a move resets the attempt is rejected at that event; and the runs of two
system mutants are rejected: ``RedriveKeeps`` where its redriven message is delivered at the
old attempt, ``RetentionFromMove`` at a sweep of the dead-letter queue that did not age out
what its original enqueue time made due.

Every test name contains ``trace`` (``pytest -k trace``). The TLC runs need Java. The two
mutants' runs are marked slow (``pytest -m slow``); the default run takes about 15 s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from impl import FakeClock, Queue, RedriveStatus, RedriveTask, ShutDown
from model_tests.mutants import RedriveKeepsQueue, RetentionFromMoveQueue
from model_tests.support import BOUND
from tla.system_trace import (
    NotModelled,
    QueueConfig,
    SystemConfig,
    SystemRecorder,
    Tagged,
    check_system_events,
    check_system_trace,
    to_system_events,
)
from tla.tlc import available as tlc_available
from tla.trace import Event, TraceError

needs_java = pytest.mark.skipif(not tlc_available(), reason="TLC needs Java and tla2tools.jar")

SOURCE, DLQ = "orders", "orders-dlq"
RATE = 1.0  # redrive moves per second: one per whole clock unit


@dataclass
class SystemRun:
    steps: list[Tagged]
    config: SystemConfig
    task: RedriveTask[str]
    #: The redrive's moves in order: (old id, new id), as the dead-letter queue reports them.
    moves: list[tuple[str, str]]
    aged_out: dict[str, list[str]]
    #: The first redriven message's delivery in the source: (id, attempt).
    redelivered: tuple[str, int]
    #: The second redriven message, received with no deadline and held.
    held: str


def record_system_run(queue_class: type[Queue[str]] = Queue) -> SystemRun:
    """The run of the module docstring, on ``queue_class`` queues (``impl.Queue`` or a mutant)."""
    clock = FakeClock()
    with (
        queue_class(visibility_timeout=1.0, clock=clock, retention=4.0, name=DLQ) as dlq,
        queue_class(
            capacity=4,
            visibility_timeout=2.0,
            max_receives=1,
            clock=clock,
            dead_letter=dlq,
            retention=6.0,
            name=SOURCE,
        ) as src,
    ):
        recorder = SystemRecorder([dlq, src])
        # t = 0: four sends; three deliveries that die (max_receives=1), one deleted.
        for id in ("a", "b", "c", "d"):
            src.send(f"body-{id}", id=id)
        a = src.receive()
        assert src.retry(a.receipt)  # dies: moved to the DLQ, attempt 1 kept
        src.receive()  # b: dropped, its deadline (2) will kill it in the source's sweep
        c = src.receive()
        assert src.change_visibility(c.receipt, 0)  # dies: moved
        d = src.receive()
        assert src.delete(d.receipt) and not src.delete(d.receipt)
        # t = 1: the DLQ delivers a at its life count; the delivery is dropped (deadline 2).
        clock.advance(1.0)
        a2 = dlq.receive()
        assert (a2.id, a2.attempt) == ("a", 2)
        # t = 2: b's deadline dead-letters it; a's deadline makes it visible again in the DLQ.
        clock.advance(1.0)
        src.sweep()
        dlq.sweep()
        task = dlq.start_redrive(rate=RATE)  # scope: c, and a and b in their visible order
        assert task.to_move == 3
        dlq.sweep()  # the tick due at 2: the first move
        # t = 3: the second move; a send with a delay; the first redriven message is done.
        clock.advance(1.0)
        dlq.sweep()
        src.send("body-e", id="e", delay=1.0)
        first_new = dlq.moved_to("c")
        assert first_new is not None
        m = src.receive()
        assert m.id == first_new[1] and src.delete(m.receipt)
        # t = 4: the third scope id ages out in the DLQ first (sent at 0 + retention 4), so the
        # tick skips it; e's delay fires. The second redriven message is received with no
        # deadline (held), e after it: e dies, moved with its enqueue time 3 kept.
        clock.advance(1.0)
        dlq.sweep()
        src.sweep()
        held = src.receive(visibility_timeout=None)
        e = src.receive()
        assert e.id == "e" and src.retry(e.receipt)
        # t = 5: the DLQ delivers e, deadline 7. t = 7: e ages out in the DLQ while in flight
        # (3 + 4: its original enqueue time; its retention timer started at the move, before
        # the deadline's, so it fires first and the deadline is stale).
        clock.advance(1.0)
        e2 = dlq.receive(visibility_timeout=2.0)
        assert (e2.id, e2.attempt) == ("e", 2)
        clock.advance(2.0)
        dlq.sweep()
        # t = 9: the held message ages out in the source, in flight (redriven at 3, + 6: its
        # retention restarted at the redrive).
        clock.advance(2.0)
        src.sweep()
        recorder.stop()
        # In the order of the moves: c first (the scope's oldest), then a or b.
        moves = [(id, got[1]) for id in ("c", "a", "b") if (got := dlq.moved_to(id)) is not None]
        return SystemRun(
            recorder.steps,
            recorder.config,
            task,
            moves,
            {DLQ: dlq.aged_out(), SOURCE: src.aged_out()},
            (m.id, m.attempt),
            held.id,
        )


@pytest.fixture(scope="module")
def run() -> Iterator[SystemRun]:
    yield record_system_run()


def _tuple(x: object) -> tuple[object, ...]:
    assert isinstance(x, tuple)
    return x


def _events(run: SystemRun) -> list[Event]:
    return to_system_events(run.steps, run.config)


# -- the recorded trace itself (no TLC) ---------------------------------------------------------


def test_trace_of_a_system_run_has_moves_redrive_and_retention(run: SystemRun) -> None:
    assert run.task.status is RedriveStatus.COMPLETED
    assert run.redelivered == (run.moves[0][1], 1)  # a new message: its attempts start again
    assert (run.task.moved, run.task.skipped) == (2, 1)
    redrives = [(name, s) for name, s in run.steps if s[0] == "redrive"]
    assert all(name == DLQ for name, _ in redrives)
    # One recorded step per move, at started_at + k / rate (the rate TLC cannot check).
    assert [s[3] for _, s in redrives] == [run.task.started_at + k / RATE for k in range(2)]
    assert [(s[1][1], s[2]) for _, s in redrives] == run.moves
    # The id that was not moved aged out in the DLQ first, as did e; the second redriven
    # message aged out in the source.
    (unmoved,) = {"a", "b"} - {old for old, _ in run.moves}
    second_new = next(new for old, new in run.moves if old != "c")
    assert run.held == second_new
    assert run.aged_out == {DLQ: [unmoved, "e"], SOURCE: [second_new]}
    aged = [(name, s[2], s[3]) for name, s in run.steps if s[0] == "age_out"]
    # When: the DLQ's retention (4) from the original sends (0 and 3), the source's (6) from
    # the redrive (3).
    expected = [(DLQ, unmoved, 0 + 4.0), (DLQ, "e", 3 + 4.0), (SOURCE, second_new, 3 + 6.0)]
    assert sorted(aged) == sorted(expected)
    # A dead-letter move is no step of its own, and the DLQ records nothing for a message
    # moved into it: its steps are a receive, its sweeps and the redrive's moves.
    assert {s[0] for name, s in run.steps if name == DLQ} == {
        "receive",
        "expire",
        "age_out",
        "redrive",
    }


def test_trace_events_of_a_system_run_name_queues_and_timer_kinds(run: SystemRun) -> None:
    events = _events(run)
    assert {e["q"] for e in events} == {1, 2}  # creation order: the DLQ first
    fired = [f for e in events if e["op"] == "expire" for f in _tuple(e["fired"])]
    assert ("msg", "b") in fired and ("ret", "e") in fired
    times = [int(str(e["now"])) for e in events]
    assert times == sorted(times)


def test_trace_of_a_batch_is_not_modelled_by_the_system_check(run: SystemRun) -> None:
    batch: Tagged = (SOURCE, ("send_batch", (("x",), (0.0,)), True, 0.0))
    with pytest.raises(NotModelled, match="send_batch"):
        to_system_events([batch], run.config)


def test_trace_of_a_redrive_tick_inside_a_sweep_is_moved_after_it(run: SystemRun) -> None:
    # One sweep of the DLQ at 5: a deadline, the tick's move, a retention timer. QueueSystem's
    # Expire is the whole sweep and its Redrive a step of its own; the DLQ has no target, so
    # the move commutes with the rest of the sweep and follows it.
    steps: list[Tagged] = [
        (DLQ, ("expire", (), "x", 5.0)),
        (DLQ, ("redrive", (DLQ, "y"), "msg-9", 5.0)),
        (DLQ, ("age_out", (), "z", 5.0)),
        (SOURCE, ("expire", (), "w", 5.0)),
    ]
    events = to_system_events(steps, run.config)
    assert [(e["op"], e["q"]) for e in events] == [("expire", 1), ("redrive", 1), ("expire", 2)]
    assert events[0]["fired"] == (("msg", "x"), ("ret", "z"))


def test_trace_of_a_redrive_tick_inside_a_sweep_of_a_middle_queue_is_not_modelled() -> None:
    # In a chain c <- b <- a, b's sweep may move into c: a redrive of b in the middle of it
    # need not commute with the rest (both may add to the same queue's tail), so it is refused.
    chain = SystemConfig(
        (
            QueueConfig("c"),
            QueueConfig("b", max_receives=1, dead_letter="c"),
            QueueConfig("a", max_receives=1, dead_letter="b"),
        )
    )
    steps: list[Tagged] = [
        ("b", ("expire", (), "x", 5.0)),
        ("b", ("redrive", ("b", "y"), "msg-9", 5.0)),
        ("b", ("expire", (), "z", 5.0)),
    ]
    with pytest.raises(NotModelled, match="has a dead-letter target"):
        to_system_events(steps, chain)


def test_trace_of_a_redrive_to_a_named_destination_says_where(run: SystemRun) -> None:
    # The redrive step does not name its destination: by default the message's source (what
    # start_redrive() without one does), else the one the caller says the task was given.
    step: Tagged = (DLQ, ("redrive", (DLQ, "y"), "msg-9", 0.0))
    (default,) = to_system_events([step], run.config)
    (named,) = to_system_events([step], run.config, destinations={DLQ: SOURCE})
    assert (default["to"], named["to"]) == (None, 2)
    with pytest.raises(TraceError, match="no queue named 'elsewhere'"):
        to_system_events([step], run.config, destinations={DLQ: "elsewhere"})


def test_trace_config_of_a_system_refuses_what_queue_system_cannot_number() -> None:
    with pytest.raises(ValueError, match="created before it"):
        SystemConfig((QueueConfig("a", dead_letter="b"), QueueConfig("b")))
    with pytest.raises(ValueError, match="distinct names"):
        SystemConfig((QueueConfig("a"), QueueConfig("a")))


def test_trace_of_two_queues_is_put_in_time_order_stably(run: SystemRun) -> None:
    # A step reads its time inside its critical section, so a step of the DLQ at 1 may be
    # appended after a step of the source at 2 (no common lock: they commute). The events are in
    # time order; steps of the same time keep the order in which they were appended.
    steps: list[Tagged] = [
        (SOURCE, ("send", ("x", 0.0), True, 2.0)),
        (SOURCE, ("send", ("y", 0.0), True, 2.0)),
        (DLQ, ("cancel", ("z",), False, 1.0)),
    ]
    events = to_system_events(steps, run.config)
    assert [(e["op"], e.get("id"), e["now"]) for e in events] == [
        ("cancel", "z", 1),
        ("send", "x", 2),
        ("send", "y", 2),
    ]


# -- TLC's verdicts ---------------------------------------------------------------------------


@needs_java
def test_trace_of_a_system_run_is_accepted(run: SystemRun) -> None:
    verdict = check_system_trace(run.steps, run.config)
    assert verdict.accepted, verdict.explain() + "\n" + verdict.result.trace()
    assert verdict.matched == len(verdict.events)


def _index(events: list[Event], op: str, q: int, **fields: object) -> int:
    return next(
        k
        for k, e in enumerate(events)
        if e["op"] == op and e["q"] == q and all(e.get(f) == v for f, v in fields.items())
    )


@needs_java
def test_trace_doctored_so_a_move_is_seen_half_done_is_rejected(run: SystemRun) -> None:
    # A move in two steps: between them the message is DEAD in the source and not yet in the
    # DLQ. A cancel of it in the DLQ that finds nothing is then a correct observation; after
    # the one-step move QueueSystem has it VISIBLE there, so no step matches.
    events = _events(run)
    k = _index(events, "retry", 2, id="a") + 1
    probe: Event = {"op": "cancel", "q": 1, "id": "a", "ok": False, "now": events[k - 1]["now"]}
    verdict = check_system_events([*events[:k], probe, *events[k:]], run.config)
    assert not verdict.accepted
    assert verdict.matched == k, verdict.explain()


@needs_java
def test_trace_doctored_so_a_redrive_keeps_the_id_is_rejected(run: SystemRun) -> None:
    events = _events(run)
    k = _index(events, "redrive", 1, id="c")
    doctored = [*events[:k], {**events[k], "new": "c"}, *events[k + 1 :]]
    verdict = check_system_events(doctored, run.config)
    assert not verdict.accepted
    assert verdict.matched == k, verdict.explain()


@needs_java
def test_trace_doctored_so_a_move_resets_the_attempt_is_rejected(run: SystemRun) -> None:
    events = _events(run)
    k = _index(events, "receive", 1, id="a")
    doctored = [*events[:k], {**events[k], "attempt": 1}, *events[k + 1 :]]
    verdict = check_system_events(doctored, run.config)
    assert not verdict.accepted
    assert verdict.matched == k, verdict.explain()


@pytest.mark.slow  # a run of a mutant and a TLC run: ~3 s each, on top of the rest
@needs_java
def test_trace_of_the_retention_from_move_mutant_is_rejected() -> None:
    # The mutant counts e's retention in the DLQ from the move (4), not from its send (3): at 7
    # its sweep fires e's deadline instead of ageing e out, a sweep QueueSystem has no step for
    # (its Expire fires the due retention timer first). Which DLQ sweep is first to differ
    # depends on the scope's order, which the sweeper threads' race decides.
    mutant = record_system_run(RetentionFromMoveQueue)
    events = _events(mutant)
    verdict = check_system_events(events, mutant.config)
    assert not verdict.accepted
    rejected = verdict.rejected_event
    assert rejected is not None and (rejected["op"], rejected["q"]) == ("expire", 1), (
        verdict.explain()
    )


@pytest.mark.slow  # a run of a mutant and a TLC run: ~3 s each, on top of the rest
@needs_java
def test_trace_of_the_redrive_keeps_mutant_is_rejected() -> None:
    # The mutant's redrive moves the record back with its attempt: the new message's first
    # delivery in the source is attempt 2, which QueueSystem's new message (attempt 0) is not.
    mutant = record_system_run(RedriveKeepsQueue)
    assert mutant.redelivered == (mutant.moves[0][1], 2)
    events = _events(mutant)
    verdict = check_system_events(events, mutant.config)
    assert not verdict.accepted
    assert verdict.matched == _index(events, "receive", 2, id=mutant.moves[0][1])


# -- threads: the shared sink's order is a linearization --------------------------------------

ORIGINALS = tuple(f"m{k}" for k in range(6))


def record_threaded_run() -> tuple[list[Tagged], SystemConfig, RedriveTask[str]]:
    """Four threads on the pair, no time passing (no deadlines): a producer sends to the
    source; its consumer fails every delivery (each retry dead-letters: a move under both
    locks); once three messages are in the DLQ the test thread lets the producer send the
    other three and starts an unrated redrive, whose moves (under both locks too) race their
    sends and retries, and then lets the DLQ's consumer go: it releases an original's first
    delivery there and deletes everything else. Whatever the interleaving, every message ends
    deleted in the DLQ (an original, or the new message a redrive made of it, dead-lettered
    again)."""
    clock = FakeClock()
    errors: list[BaseException] = []
    with (
        Queue[str](clock=clock, name=DLQ) as dlq,
        Queue[str](max_receives=1, clock=clock, dead_letter=dlq, name=SOURCE) as src,
    ):
        recorder = SystemRecorder([dlq, src])
        progress = threading.Condition()

        def worker(fn: Callable[[], None]) -> threading.Thread:
            def run() -> None:
                try:
                    fn()
                except ShutDown:
                    pass
                except BaseException as e:  # surfaced by the test, not lost in the thread
                    errors.append(e)
                finally:
                    with progress:
                        progress.notify_all()

            t = threading.Thread(target=run, daemon=True)
            t.start()
            return t

        more = threading.Event()

        def producer() -> None:
            for k, id in enumerate(ORIGINALS):
                if k == 3:
                    assert more.wait(BOUND), "the test never let the producer go on"
                src.send(f"body-{id}", id=id)

        def source_consumer() -> None:
            while True:
                m = src.receive(visibility_timeout=None)
                src.retry(m.receipt)  # dies (max_receives=1): moved to the DLQ
                with progress:
                    progress.notify_all()

        go = threading.Event()

        def dlq_consumer() -> None:
            assert go.wait(BOUND), "the test never started the redrive"
            while True:
                m = dlq.receive(visibility_timeout=None)
                if m.id in ORIGINALS and m.attempt == 2:
                    dlq.change_visibility(m.receipt, 0)  # back to the DLQ's tail
                else:
                    dlq.delete(m.receipt)
                with progress:
                    progress.notify_all()

        threads = [worker(producer), worker(source_consumer), worker(dlq_consumer)]
        with progress:
            assert progress.wait_for(lambda: dlq.stats().visible >= 3, BOUND), dlq.stats()
        more.set()  # the last three sends and their moves race the redrive
        task = dlq.start_redrive()  # moves what is visible in the DLQ now
        go.set()

        def quiet() -> bool:
            a, b = src.stats(), dlq.stats()
            return bool(errors) or (b.done == len(ORIGINALS) and a.visible + a.in_flight == 0)

        with progress:
            assert progress.wait_for(quiet, BOUND), (src.stats(), dlq.stats())
        src.shutdown()
        dlq.shutdown()
        for t in threads:
            t.join(BOUND)
        assert not errors, errors
        recorder.stop()
        return recorder.steps, recorder.config, task


@needs_java
def test_trace_of_a_multithreaded_system_run_is_accepted() -> None:
    steps, config, task = record_threaded_run()
    actions = [s[0] for _, s in steps]
    assert task.to_move >= 3 and task.moved == task.to_move  # nobody else took the scope
    assert actions.count("retry") == len(ORIGINALS) + task.moved  # every delivery in the source
    assert actions.count("redrive") == task.moved
    verdict = check_system_trace(steps, config)
    assert verdict.accepted, verdict.explain() + "\n" + verdict.result.trace()
