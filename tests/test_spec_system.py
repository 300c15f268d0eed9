"""The pure spec of a system of queues (spec.system, issue 25): every rule of the design note
and of docs/contract.md section 7, each with values worked out by hand in the test."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from spec import system as sy
from spec.invariants import violations
from spec.state import MSG, RET, TICK, Config, Msg, Receipt, State, Status, initial
from spec.system_explore import SystemBounds, explore_system
from spec.system_invariants import (
    nothing_lost,
    system_one_state,
    system_step_violations,
    system_violations,
)
from spec.transitions import expire, receive, send

# -- per queue: the new fields change nothing for a queue without retention --------------------


def test_a_queue_without_retention_has_the_values_it_always_had() -> None:
    s, ok = send(initial(), "a", "a", None, 5.0)
    s, d = receive(s, 6.0, 3.0)
    assert ok and d is not None
    want = State(
        messages=(Msg("a", "a", Status.IN_FLIGHT, attempt=1, deadline=9.0),),
        in_flight=("a",),
        timers=("a",),
    )
    assert s == want and s.order == () and s.messages[0].enqueued_at == 0.0


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan])
def test_retention_must_be_finite_and_positive(bad: float) -> None:
    with pytest.raises(ValueError, match="retention"):
        Config(retention=bad)


def test_retention_must_be_a_number() -> None:
    with pytest.raises(TypeError, match="retention"):
        Config(retention="10")  # type: ignore[arg-type]


def test_the_retention_timer_starts_after_the_delay_timer_and_both_fire_in_that_order() -> None:
    s, _ = send(initial(Config(retention=5.0)), "a", "a", 5.0, 0.0)
    assert s.order == ((MSG, "a"), (RET, "a")) and s.timers == ("a",)
    s, fired = expire(s, 5.0)
    # The delay fires first (started first), then the retention timer ages it out.
    assert fired == ("a", "a")
    assert s.get("a") == Msg("a", "a", Status.AGED_OUT, enqueued_at=0.0)
    assert s.aged_out == ("a",) and s.visible == () and s.order == () and s.timers == ()
    assert violations(s) == []


def test_retention_started_before_the_deadline_wins_the_tie_and_never_dead_letters() -> None:
    s, _ = send(initial(Config(retention=10.0, max_receives=1)), "a", "a", None, 0.0)
    s, d = receive(s, 4.0, 6.0)  # deadline 10.0, the retention timer's due time too
    assert d is not None and s.order == ((RET, "a"), (MSG, "a"))
    s, fired = expire(s, 10.0)
    assert fired == ("a",)  # the deadline stopped when the message aged out
    assert s.get("a").status is Status.AGED_OUT  # type: ignore[union-attr]
    assert s.dead == () and s.in_flight == () and not s.is_live(d.receipt)
    assert violations(s) == []


def test_a_stale_retention_timer_is_gone_with_its_message() -> None:
    from spec.transitions import delete

    s, _ = send(initial(Config(retention=10.0)), "a", "a", None, 0.0)
    s, d = receive(s, 1.0, 3.0)
    assert d is not None
    s, ok = delete(s, d.receipt)
    assert ok and s.order == () and expire(s, 20.0) == (s, ())


# -- building a system: rule 1 ------------------------------------------------------------------


def _pair(dlq: Config | None = None, src: Config | None = None) -> sy.System:
    return sy.build(
        ("dlq", dlq if dlq is not None else Config(retention=100.0)),
        ("src", src if src is not None else Config(max_receives=1), "dlq"),
    )


@pytest.mark.parametrize(
    ("config", "target", "words"),
    [
        (Config(), "dlq", "max_receives"),
        (Config(max_receives=1), "nowhere", "created before"),
        (Config(max_receives=1, fifo=True), "dlq", "same kind"),
        (Config(max_receives=1), "bounded", "unbounded"),
    ],
)
def test_configurations_that_cannot_work_are_refused_naming_dead_letter(
    config: Config, target: str, words: str
) -> None:
    base = sy.build(("dlq", Config()), ("bounded", Config(capacity=3)))
    with pytest.raises(ValueError, match=f"dead_letter.*{words}|{words}") as e:
        sy.add_queue(base, "src", config, dead_letter=target)
    assert "dead_letter" in str(e.value)


def test_names_are_checked_and_unique() -> None:
    s = sy.build(("a", Config()))
    with pytest.raises(ValueError, match="name"):
        sy.add_queue(s, "a")
    with pytest.raises(ValueError, match="name"):
        sy.add_queue(s, "no spaces")
    with pytest.raises(TypeError, match="name"):
        sy.add_queue(s, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dead_letter"):
        sy.add_queue(s, "b", Config(max_receives=1), dead_letter=s)  # type: ignore[arg-type]
    fifo = sy.add_queue(s, "b.fifo", Config(fifo=True))
    assert fifo.names() == ("a", "b.fifo") and fifo.state("b.fifo").queue == 1


# -- ids: rule 2 --------------------------------------------------------------------------------


def test_an_id_any_queue_accepted_is_rejected_everywhere() -> None:
    s, ok = sy.send(_pair(), "dlq", "a", "x", None, 1.0)
    assert ok is True and s.accepted == ("a",)
    again, ok = sy.send(s, "src", "a", "y", None, 2.0)
    assert ok is False and again is s
    batch, ok2 = sy.send_batch(s, "src", [("b", "b", None), ("a", "a", None)], 2.0)
    assert ok2 is False and batch is s


def test_every_send_of_a_system_stamps_its_enqueue_time() -> None:
    s, _ = sy.send(_pair(), "src", "a", "x", None, 7.0)
    assert s.state("src").get("a") == Msg("a", "x", enqueued_at=7.0)


# -- the move: rule 3 ---------------------------------------------------------------------------


def _dead_lettered(s: sy.System, now: float = 5.0) -> sy.System:
    """``a`` sent to src at 3, received at 4, retried at ``now``: dead after one delivery."""
    s, _ = sy.send(s, "src", "a", "body", None, 3.0)
    s, d = sy.receive(s, "src", 4.0, 10.0)
    assert d is not None
    s, ok = sy.retry(s, "src", d.receipt, now)
    assert ok
    return s


def test_a_dying_retry_moves_the_message_into_the_target_in_the_same_step() -> None:
    s = _dead_lettered(_pair())
    src, dlq = s.state("src"), s.state("dlq")
    assert src.get("a") == Msg("a", "body", Status.DEAD, attempt=1, enqueued_at=3.0)
    assert src.dead == ("a",) and src.in_flight == () and src.order == ()
    # In the target: the same id and body, VISIBLE, attempt kept, the original enqueue time.
    assert dlq.get("a") == Msg("a", "body", attempt=1, base=1, enqueued_at=3.0)
    assert dlq.visible == ("a",) and dlq.order == ((RET, "a"),)
    assert s.source_of("dlq", "a") == "src" and s.source_of("src", "a") is None
    assert system_violations(s) == []


def test_a_deadline_firing_moves_inside_the_sweep_and_the_target_delivers_it() -> None:
    s, _ = sy.send(_pair(), "src", "a", "a", None, 0.0)
    s, _ = sy.send(s, "src", "b", "b", None, 0.0)
    s, _ = sy.receive_batch(s, "src", 0.0, 2, 2.0)
    s, fired = sy.expire(s, "src", 2.0)
    assert fired == ((MSG, "a"), (MSG, "b"))
    assert s.state("src").dead == ("a", "b") and s.state("dlq").visible == ("a", "b")
    s, d = sy.receive(s, "dlq", 3.0, 1.0)
    assert d is not None and (d.id, d.attempt) == ("a", 2)
    assert d.receipt.queue == 0  # the dlq's receipts name the dlq
    assert system_violations(s) == []


def test_a_stale_receipt_of_the_source_does_nothing_in_the_target() -> None:
    s, _ = sy.send(_pair(), "src", "a", "a", None, 0.0)
    s, d = sy.receive(s, "src", 0.0, 2.0)
    assert d is not None
    s, _ = sy.retry(s, "src", d.receipt, 1.0)
    after, ok = sy.delete(s, "dlq", d.receipt)
    assert ok is False and after is s


def test_a_chain_keeps_the_attempt_as_the_life_count() -> None:
    s = sy.build(
        ("c", Config()),
        ("b", Config(max_receives=1), "c"),
        ("a", Config(max_receives=1), "b"),
    )
    s, _ = sy.send(s, "a", "m", "m", None, 0.0)
    for queue, attempt in (("a", 1), ("b", 2)):
        s, d = sy.receive(s, queue, 1.0, 5.0)
        assert d is not None and d.attempt == attempt
        s, _ = sy.retry(s, queue, d.receipt, 1.0)
    # Died in a after 1 delivery, in b after its first there (life count 2): in c with 2.
    assert s.state("c").get("m") == Msg("m", "m", attempt=2, base=2, enqueued_at=0.0)
    assert [s.state(q).get("m").status for q in "abc"] == [  # type: ignore[union-attr]
        Status.DEAD,
        Status.DEAD,
        Status.VISIBLE,
    ]
    assert system_violations(s) == [] and s.source_of("c", "m") == "b"


def test_a_fifo_move_keeps_the_group_resets_the_enqueue_time_and_is_never_deduplicated() -> None:
    s = sy.build(
        ("dlq.fifo", Config(fifo=True, retention=100.0)),
        ("src.fifo", Config(fifo=True, max_receives=1), "dlq.fifo"),
    )
    # The dlq accepted dedup id "d" at 1: a send with it there is a duplicate until 301.
    s, ok = sy.send(s, "dlq.fifo", "x", "x", None, 1.0, "g0", "d")
    assert ok is True
    s, ok = sy.send(s, "src.fifo", "a", "a", None, 2.0, "g1", "d")
    assert ok is True
    s, d = sy.receive(s, "src.fifo", 3.0, 10.0)
    assert d is not None
    s, _ = sy.retry(s, "src.fifo", d.receipt, 4.0)
    dlq = s.state("dlq.fifo")
    # Group kept, the next place in the dlq's send order (1), enqueued now (4), no dedup id.
    assert dlq.get("a") == Msg("a", "a", attempt=1, group="g1", sent=1, enqueued_at=4.0, base=1)
    assert dlq.visible == ("x", "a") and dlq.dedup == (("d", "x", 1.0),)
    assert system_violations(s) == []


def test_standard_retention_counts_from_the_original_send_across_the_move() -> None:
    s = _pair(Config(retention=5.0))
    s, _ = sy.send(s, "src", "a", "a", None, 0.0)
    s, _ = sy.receive(s, "src", 0.0, 10.0)
    s, _ = sy.expire(s, "src", 10.0)  # dies at 10 and moves: older than the dlq's 5 s already
    assert s.state("dlq").visible == ("a",)
    s, fired = sy.expire(s, "dlq", 10.0)  # the dlq's next sweep ages it out
    assert fired == ((RET, "a"),) and s.state("dlq").aged_out == ("a",)
    assert system_violations(s) == []


def test_fifo_retention_restarts_at_the_move() -> None:
    s = sy.build(
        ("dlq.fifo", Config(fifo=True, retention=5.0)),
        ("src.fifo", Config(fifo=True, max_receives=1), "dlq.fifo"),
    )
    s, _ = sy.send(s, "src.fifo", "a", "a", None, 0.0, "g")
    s, _ = sy.receive(s, "src.fifo", 0.0, 10.0)
    s, _ = sy.expire(s, "src.fifo", 10.0)
    s2, fired = sy.expire(s, "dlq.fifo", 14.0)
    assert fired == () and s2 is s
    s, fired = sy.expire(s, "dlq.fifo", 15.0)
    assert fired == ((RET, "a"),)


def test_a_deadline_started_before_a_moved_in_retention_timer_fires_first_in_a_tie() -> None:
    s = _pair(Config(retention=10.0))
    s, _ = sy.send(s, "dlq", "x", "x", None, 1.0)  # x's retention due at 11
    s, _ = sy.send(s, "src", "y", "y", None, 0.0)
    s, _ = sy.receive(s, "dlq", 2.0, 8.0)  # x's deadline due at 10
    s, _ = sy.receive(s, "src", 0.0, 3.0)
    s, _ = sy.expire(s, "src", 3.0)  # y moves in at 3: its retention due at 0 + 10 = 10
    assert s.state("dlq").order == ((RET, "x"), (MSG, "x"), (RET, "y"))
    s, fired = sy.expire(s, "dlq", 10.0)
    assert fired == ((MSG, "x"), (RET, "y"))
    assert s.state("dlq").visible == ("x",) and s.state("dlq").aged_out == ("y",)


# -- redrive: rule 5 ---------------------------------------------------------------------------


def test_redrive_all_at_once_back_to_the_source_as_new_messages() -> None:
    s = _dead_lettered(_pair())
    s, ok = sy.send(s, "src", "msg-1", "taken", None, 6.0)  # the counter skips a taken id
    assert ok is True
    s, task = sy.start_redrive(s, "dlq", 8.0)
    assert (task.status, task.moved, task.skipped, task.to_move) == (
        sy.RedriveStatus.COMPLETED,
        1,
        0,
        1,
    )
    assert s.moved_to("dlq", "a") == ("src", "msg-2") and s.counter == 2
    assert s.state("dlq").get("a").status is Status.MOVED  # type: ignore[union-attr]
    assert s.state("dlq").moved == ("a",)
    # A new message: fresh id, attempt 0, enqueued now, no source, at the tail.
    assert s.state("src").get("msg-2") == Msg("msg-2", "body", enqueued_at=8.0)
    assert s.state("src").visible == ("msg-1", "msg-2")
    assert s.source_of("src", "msg-2") is None
    assert s.redrive_tasks("dlq") == (task,)
    assert system_violations(s) == []


def test_the_scope_is_what_was_visible_at_the_start() -> None:
    s = _dead_lettered(_pair())
    s, _ = sy.send(s, "dlq", "direct", "d", None, 6.0)  # no source: skipped
    s, _ = sy.send(s, "dlq", "held", "h", None, 6.0)
    s, _ = sy.receive(s, "dlq", 6.0, 1.0)  # receives "a": in flight, out of the scope
    s, task = sy.start_redrive(s, "dlq", 7.0, rate=1.0)
    assert task.scope == ("direct", "held") and task.to_move == 2
    s, _ = sy.send(s, "dlq", "late", "l", None, 7.0)
    s, _ = sy.expire(s, "dlq", 8.0)  # a expires too (visible again, after the scope)
    task = s.task(task.name)
    assert (task.status, task.moved, task.skipped) == (sy.RedriveStatus.COMPLETED, 0, 2)
    assert s.state("dlq").visible == ("direct", "held", "late", "a")


def test_a_rate_moves_one_per_tick_and_catches_up_in_one_sweep() -> None:
    s = sy.build(("dlq", Config()), ("other", Config()))
    for i in ("p", "q", "r"):
        s, _ = sy.send(s, "dlq", i, i, None, 0.0)
    s, task = sy.start_redrive(s, "dlq", 0.0, destination="other", rate=2.0)
    assert task.next_tick == 0.0 and s.state("dlq").order == ((TICK, task.name),)
    s, fired = sy.expire(s, "dlq", 0.0)
    assert fired == ((TICK, task.name),) and s.task(task.name).next_tick == 0.5
    assert s.state("other").visible == ("msg-1",)
    s, fired = sy.expire(s, "dlq", 1.0)  # ticks due at 0.5 and 1.0
    assert fired == ((TICK, task.name), (TICK, task.name))
    done = s.task(task.name)
    assert (done.status, done.moved, done.next_tick) == (sy.RedriveStatus.COMPLETED, 3, None)
    assert s.state("other").visible == ("msg-1", "msg-2", "msg-3")
    assert s.state("dlq").order == () and system_violations(s) == []


def test_a_retention_timer_started_before_the_re_armed_tick_fires_first() -> None:
    s = sy.build(("dlq", Config(retention=1.0)), ("other", Config()))
    s, _ = sy.send(s, "dlq", "y", "y", None, 0.0)
    s, _ = sy.send(s, "dlq", "z", "z", None, 0.0)
    s, task = sy.start_redrive(s, "dlq", 0.0, destination="other", rate=1.0)
    s, _ = sy.expire(s, "dlq", 0.0)  # moves y; the tick re-armed at 1, after z's retention
    s, fired = sy.expire(s, "dlq", 1.0)
    assert fired == ((RET, "z"), (TICK, task.name))
    done = s.task(task.name)
    assert (done.moved, done.skipped, done.status) == (1, 1, sy.RedriveStatus.COMPLETED)


def test_a_full_destination_keeps_the_message_and_the_task_retries() -> None:
    s = sy.build(("dlq", Config()), ("small", Config(capacity=1)))
    s, _ = sy.send(s, "small", "f", "f", None, 0.0)
    s, _ = sy.send(s, "dlq", "m", "m", None, 0.0)
    s, task = sy.start_redrive(s, "dlq", 2.0, destination="small")
    assert (task.status, task.moved, task.next_tick) == (sy.RedriveStatus.RUNNING, 0, 3.0)
    assert s.state("dlq").visible == ("m",)
    s2, fired = sy.expire(s, "dlq", 3.0)  # still full: another retry a second later
    assert fired == ((TICK, task.name),) and s2.task(task.name).next_tick == 4.0
    s, _ = sy.cancel(s2, "small", "f")
    s, _ = sy.expire(s, "dlq", 4.0)
    assert s.task(task.name).status is sy.RedriveStatus.COMPLETED
    assert s.state("small").visible == ("msg-1",) and system_violations(s) == []


def test_cancel_stops_the_task_and_keeps_what_moved() -> None:
    s = sy.build(("dlq", Config()), ("other", Config()))
    s, _ = sy.send(s, "dlq", "p", "p", None, 0.0)
    s, _ = sy.send(s, "dlq", "q", "q", None, 0.0)
    s, task = sy.start_redrive(s, "dlq", 0.0, destination="other", rate=1.0)
    s, _ = sy.expire(s, "dlq", 0.0)
    s, ok = sy.cancel_redrive(s, task.name)
    assert ok and s.task(task.name).status is sy.RedriveStatus.CANCELLED
    assert s.state("dlq").order == () and sy.next_due(s, "dlq") is None
    again, ok = sy.cancel_redrive(s, task.name)
    assert ok is False and again is s
    s, fired = sy.expire(s, "dlq", 5.0)
    assert (
        fired == () and s.state("dlq").visible == ("q",) and s.state("other").visible == ("msg-1",)
    )


def test_one_running_task_per_queue_and_bad_arguments_are_named() -> None:
    s = sy.build(("dlq", Config()), ("other", Config()), ("f.fifo", Config(fifo=True)))
    s, task = sy.start_redrive(s, "dlq", 0.0, destination="other", rate=1.0)
    with pytest.raises(sy.RedriveRunning, match=task.name):
        sy.start_redrive(s, "dlq", 0.0)
    with pytest.raises(ValueError, match="destination"):
        sy.start_redrive(s, "other", 0.0, destination="other")
    with pytest.raises(ValueError, match="destination"):
        sy.start_redrive(s, "other", 0.0, destination="f.fifo")
    for bad in (0, -1.0, math.inf):
        with pytest.raises(ValueError, match="rate"):
            sy.start_redrive(s, "other", 0.0, rate=bad)
    with pytest.raises(TypeError, match="rate"):
        sy.start_redrive(s, "other", 0.0, rate="1")  # type: ignore[arg-type]


def test_redrive_step_is_refused_where_it_cannot_happen() -> None:
    s = sy.build(("dlq", Config()), ("small", Config(capacity=0)))
    s, _ = sy.send(s, "dlq", "m", "m", None, 0.0)
    for id, dest in (("m", "small"), ("m", "dlq"), ("nope", "small")):
        after, new = sy.redrive_step(s, "dlq", id, dest, 1.0)
        assert new is None and after is s


def test_a_fifo_redrive_keeps_the_group_and_takes_the_next_place() -> None:
    s = sy.build(("dlq.fifo", Config(fifo=True)), ("dest.fifo", Config(fifo=True)))
    s, _ = sy.send(s, "dest.fifo", "x", "x", None, 0.0, "g", "d")
    s, _ = sy.send(s, "dlq.fifo", "m", "m", None, 0.0, "g", "d")
    s, new = sy.redrive_step(s, "dlq.fifo", "m", "dest.fifo", 3.0)
    assert new == "msg-1"
    assert s.state("dest.fifo").get("msg-1") == Msg(
        "msg-1", "m", group="g", sent=1, enqueued_at=3.0
    )
    assert system_violations(s) == []


# -- invariants: rule 6 ------------------------------------------------------------------------


def test_the_two_step_move_is_caught_by_nothing_lost_between_its_steps() -> None:
    s, _ = sy.send(_pair(), "src", "a", "a", None, 0.0)
    s, d = sy.receive(s, "src", 0.0, 5.0)
    assert d is not None
    between, after = sy.move_in_two_steps(s, "src", d.receipt, 1.0)
    assert nothing_lost(between) is not None and "'a'" in str(nothing_lost(between))
    assert system_one_state(between) is not None
    assert after == sy.retry(s, "src", d.receipt, 1.0)[0]
    assert nothing_lost(after) is None and system_violations(after) == []


def test_system_one_state_catches_a_message_in_two_places_and_a_lost_redrive() -> None:
    s = _dead_lettered(_pair())
    twice = sy._put(s, "src", replace(s.state("src"), dead=()))
    twice = sy._put(twice, "src", twice.state("src").with_msg(Msg("a", "body", attempt=1)))
    twice = sy._put(twice, "src", replace(twice.state("src"), visible=("a",)))
    assert system_one_state(twice) is not None
    s, _ = sy.start_redrive(s, "dlq", 6.0)
    lost = sy._put(s, "src", replace(s.state("src"), messages=(s.state("src").messages[0],)))
    assert nothing_lost(lost) is not None


def test_retention_honoured_catches_an_early_age_out() -> None:
    s, _ = sy.send(_pair(), "dlq", "a", "a", None, 0.0)
    early = sy.age_out(s, "dlq", "a")  # the timer is due at 100
    assert any("RetentionHonoured" in r for r in system_step_violations(s, early, 50.0))
    assert system_step_violations(s, early, 100.0) == []


def test_every_explored_state_of_two_queues_keeps_every_invariant() -> None:
    g = explore_system(SystemBounds())
    assert g.violations == []
    # Recorded from this explorer at QueueSystem.cfg's bounds, for the TLC comparison to come.
    assert g.states == 8727
    statuses = {
        (m.name, x.status, x.base > 0)
        for system, _ in g.nodes
        for m in system.queues
        for x in m.state.messages
    }
    # Not vacuous: messages moved in, aged out after a move, redriven, dead-lettered again.
    assert ("1", Status.VISIBLE, True) in statuses
    assert ("1", Status.AGED_OUT, True) in statuses
    assert ("1", Status.MOVED, True) in statuses
    assert any("msg-1" in system.state("2").dead for system, _ in g.nodes), (
        "a redriven message dead-lettered again"
    )


#: The steps of the random walk (send and expire twice: taken twice as often).
_WALK_OPS = [
    *("send", "send", "send_batch", "receive", "receive_batch", "delete", "retry", "cv"),
    *("cv_batch", "cancel", "purge", "expire", "expire", "tick", "redrive", "redrive_step"),
    "cancel_redrive",
]


def _walk(fifo: bool, seed: int, steps: int) -> set[str]:
    """A seeded random walk over every transition of a three-queue system (a chain with
    retention, redrive tasks with and without a rate, a bounded destination), checking every
    invariant on every state and every step half on every step. Returns the actions taken."""
    import random

    rng = random.Random(seed)
    k = ".fifo" if fifo else ""
    dlq, src, other = f"dlq{k}", f"src{k}", f"other{k}"
    s = sy.build(
        (dlq, Config(fifo=fifo, retention=3.0)),
        (src, Config(fifo=fifo, max_receives=1, retention=4.0), dlq),
        (other, Config(fifo=fifo, capacity=2)),
    )
    now, n, taken = 0.0, 0, set()
    for _ in range(steps):
        q = rng.choice(s.names())
        st = s.state(q)
        live = [x for x in st.messages if x.status is Status.IN_FLIGHT]
        receipts = [Receipt(st.queue, x.id, x.attempt) for x in live]
        op = rng.choice(_WALK_OPS)
        before = s
        if op == "send":
            n += 1
            g = rng.choice(["g1", "g2"]) if fifo else None
            dd = rng.choice([None, "d1", "d2"]) if fifo else None
            s, _ = sy.send(s, q, rng.choice([f"m{n}", "m1"]), "b", None, now, g, dd)
        elif op == "send_batch":
            n += 2
            e = [(f"m{n - 1}", "b", None, "g1", None), (f"m{n}", "b", None, "g2", None)]
            s, _ = sy.send_batch(s, q, e if fifo else [x[:3] for x in e], now)
        elif op == "receive":
            s, _ = sy.receive(s, q, now, rng.choice([1.0, 2.0, None]))
        elif op == "receive_batch":
            s, _ = sy.receive_batch(s, q, now, 2, 1.0)
        elif op in ("delete", "retry", "cv") and receipts:
            r = rng.choice(receipts)
            if op == "delete":
                s, _ = sy.delete(s, q, r)
            elif op == "retry":
                s, _ = sy.retry(s, q, r, now)
            else:
                s, _ = sy.change_visibility(s, q, r, rng.choice([0.0, 1.0]), now)
        elif op == "cv_batch" and receipts:
            s, _ = sy.change_visibility_batch(s, q, [(r, 0.0) for r in receipts[:3]], now)
        elif op == "cancel" and st.messages:
            s, _ = sy.cancel(s, q, rng.choice(st.messages).id)
        elif op == "purge":
            s, _ = sy.purge(s, q)
        elif op == "expire":
            s, _ = sy.expire(s, q, now)
        elif op == "tick":
            now += rng.choice([0.5, 1.0])
        elif op == "redrive" and s.running(q) is None:
            dest = rng.choice([None, *(x for x in s.names() if x != q)])
            s, _ = sy.start_redrive(s, q, now, dest, rng.choice([None, 1.0, 2.0]))
        elif op == "redrive_step" and st.visible:
            s, _ = sy.redrive_step(s, q, st.visible[0], rng.choice(s.names()), now)
        elif op == "cancel_redrive" and s.tasks:
            s, _ = sy.cancel_redrive(s, rng.choice(s.tasks).name)
        assert system_violations(s) == [], (op, q)
        assert system_step_violations(before, s, now) == [], (op, q)
        if s != before or op == "tick":
            taken.add(op)
        ticked = op == "expire" and any(x.next_tick is not None for x in before.tasks)
        if ticked and [x.moved for x in s.tasks] != [x.moved for x in before.tasks]:
            taken.add("a tick moved")
        if s.sources != before.sources:
            taken.add("dead-letter move")
        if any(s.state(x).aged_out != before.state(x).aged_out for x in s.names()):
            taken.add("aged out")
    return taken


@pytest.mark.parametrize("fifo", [False, True])
def test_a_random_walk_over_every_transition_keeps_every_invariant(fifo: bool) -> None:
    taken: set[str] = set()
    for seed in range(4):
        taken |= _walk(fifo, seed, 250)
    ops = ["send", "send_batch", "receive", "receive_batch", "delete", "retry", "cv"]
    ops += ["cv_batch", "cancel", "purge", "expire", "tick", "redrive", "redrive_step"]
    ops += ["cancel_redrive", "a tick moved", "dead-letter move", "aged out"]
    assert taken == set(ops)  # every kind of step changed the system at least once
