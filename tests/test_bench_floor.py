"""``bench.floor``: the floor queue keeps the semantics it is a floor for, and the report holds
every figure the closing note of issue 22 cites (quick sizes: the figures themselves are the
recorded run's, in docs/benchmarks.md)."""

from __future__ import annotations

import json
import queue
import threading
from pathlib import Path

import pytest

from bench import floor
from impl.errors import ShutDown
from impl.message import Entry, Receipt
from model_tests.support import BOUND


def test_the_floor_hides_a_delivery_and_only_its_receipt_deletes_it() -> None:
    q = floor.FloorQueue(visibility_timeout=floor.HOUR)
    id = q.send("A")
    got_id, body, attempt, receipt = q.receive(timeout=1.0)
    assert (got_id, body, attempt) == (id, "A", 1)
    assert id in q.in_flight and not q.visible, "a delivery is hidden, not removed"
    assert q.delete((id, 2)) is False, "a receipt of another delivery must not act"
    assert q.delete(receipt) is True
    assert q.delete(receipt) is False, "a second delete of one delivery must not act"
    assert q.done == {id} and not q.in_flight


def test_the_floor_arms_one_deadline_per_delivery_in_start_order() -> None:
    q = floor.FloorQueue(visibility_timeout=floor.HOUR)
    for body in "AB":
        q.send(body)
    first, second = q.receive(timeout=1.0), q.receive(timeout=1.0)
    assert [(t[1], t[2]) for t in sorted(q.timers)] == [(1, first[0]), (2, second[0])]


def test_the_floor_receive_times_out_when_nothing_is_visible() -> None:
    with pytest.raises(queue.Empty):
        floor.FloorQueue(visibility_timeout=floor.HOUR).receive(timeout=0.0)


def test_the_report_has_every_figure_and_the_parts_add_up(tmp_path: Path) -> None:
    out = tmp_path / "floor.json"
    assert floor.main(["-n", "300", "--repeat", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    for key in floor.TITLES:
        kinds = floor.BATCH_KINDS if key == "one_cpu_4x4_batch" else floor.KINDS
        assert set(result[key]) == set(kinds), key
        assert all(v > 0 for v in result[key].values()), key
    assert result["memory"]["floor"] > 0 and result["memory"]["impl.Queue"] > 0
    parts = result["impl_parts"]
    # The parts are measured one by one; their sum must come near what tracemalloc saw
    # for the whole queue (within a quarter: allocator rounding and container slack).
    assert abs(sum(parts.values()) - result["memory"]["impl.Queue"]) < 0.25 * sum(parts.values())
    # One operation at a time: each kind's send, receive and delete, in microseconds.
    assert set(result["per_op"]) == set(floor.OP_KINDS)
    assert all(
        set(us) == set(floor.OPS) and min(us.values()) > 0 for us in result["per_op"].values()
    )
    # Every round of every workload is kept, and the best of them is the figure reported.
    for key in floor.TITLES:
        assert floor.best(result["rounds"][key]) == result[key], key
    report = floor.text(result)
    assert "(impl.Queue - the obliged floor)" in report and "one operation at a time" in report
    assert report.count("round by round, of the floor's rate") == len(floor.TITLES)
    shares = [share for _, share in result["profile"]]
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 1
    # The written-out steps of the queue's machine are where its cycle spends its own time.
    assert any("fast_machine.py:receive_now" in where for where, _ in result["profile"])


def test_paired_ratios_divide_each_round_by_that_round_s_floor() -> None:
    # Three rounds: the obliged floor made 8 of 10, 10 of 20 and 30 of 40 cycles; a best-of
    # ratio (30 / 40) would hide that one round made half the floor's rate.
    rates = {"floor": [10.0, 20.0, 40.0], "obliged floor": [8.0, 10.0, 30.0]}
    assert floor.paired(rates, "obliged floor") == {"median": 0.75, "min": 0.5, "max": 0.8}
    assert floor.best(rates) == {"floor": 40.0, "obliged floor": 30.0}
    with pytest.raises(ValueError):
        floor.paired({"floor": [1.0], "impl.Queue": [1.0, 2.0]}, "impl.Queue")


def test_the_floor_batches_deliver_in_order_and_delete_only_live_receipts() -> None:
    q = floor.FloorQueue(visibility_timeout=floor.HOUR)
    ids = q.send_batch(["A", "B", "C"])
    got = q.receive_batch(2, timeout=1.0)
    assert [(m[0], m[1], m[2]) for m in got] == [(ids[0], "A", 1), (ids[1], "B", 1)]
    assert q.delete_batch([got[0][3], (ids[1], 7), got[0][3]]) == [True, False, False]
    assert list(q.visible) == [ids[2]] and set(q.in_flight) == {ids[1]}


def test_the_obliged_floor_batches_check_entries_and_delete_only_live_receipts() -> None:
    q = floor.ObligedQueue(visibility_timeout=floor.HOUR)
    with pytest.raises(TypeError, match="entries"):
        q.send_entries(["A"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="entries"):
        q.send_entries([])
    with pytest.raises(ValueError, match="max_messages"):
        q.receive_messages(11, timeout=1.0)
    assert not q.visible  # a refused batch changes nothing
    ids = q.send_entries([Entry("A"), Entry("B"), Entry("C")])
    got = q.receive_messages(2, timeout=1.0)
    assert [(m.id, m.body, m.attempt) for m in got] == [(ids[0], "A", 1), (ids[1], "B", 1)]
    receipts = [got[0].receipt, got[1].receipt]
    assert q.delete_receipts(receipts) == [True, True]
    assert q.delete_receipts(receipts) == [False, False]  # each receipt deletes once
    assert list(q.visible) == [ids[2]] and not q.in_flight


def test_the_obliged_floor_does_what_the_contract_obliges_per_message() -> None:
    # Its ratio bounds impl.Queue's only if each test and step it makes is one every design
    # makes (docs/contract.md sections 1 and 3); each is exercised here, through its API.
    q = floor.ObligedQueue(visibility_timeout=floor.HOUR, capacity=2)
    with pytest.raises(TypeError, match="block"):
        q.send("A", block=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ids"):
        q.send("A", id="mine")
    with pytest.raises(ValueError, match="delays"):
        q.send("A", delay=1.0)
    assert not q.visible and not q.accepted  # a refused send changes nothing
    q.accepted.add("msg-1")  # as if a caller had chosen the first fresh id
    first = q.send("A")
    assert first == "msg-2", "a generated id never collides with one already used"
    q.send("B")
    with pytest.raises(queue.Full):
        q.send("C")  # the capacity bounds the active messages
    m = q.receive(timeout=1.0)
    assert q.aim == q.in_flight[m.id].deadline  # the sweeper's aim: the first deadline
    n = q.receive(timeout=1.0, visibility_timeout=None)
    assert [t[2] for t in q.timers] == [m.id], "no deadline: no timer"
    with pytest.raises(ValueError, match="visibility_timeout"):
        q.receive(timeout=1.0, visibility_timeout=-1.0)
    other = floor.ObligedQueue(visibility_timeout=floor.HOUR)
    other.token = 2
    other.accepted.add("msg-1")
    other.send("X")
    foreign = other.receive(timeout=1.0).receipt
    assert (foreign.id, foreign.attempt) == (m.id, m.attempt)
    assert q.delete(foreign) is False, "a receipt of another queue never acts"
    assert q.delete(m.receipt) is True and q.delete(n.receipt) is True
    q.shutdown()
    with pytest.raises(ShutDown):
        q.send("D")
    with pytest.raises(ShutDown):
        q.receive(timeout=0.0)  # nothing visible after shutdown
    with pytest.raises(ShutDown):
        q.send_entries([Entry("E")])


def test_the_obliged_floor_wakes_the_sweeper_only_for_an_earlier_deadline() -> None:
    q = floor.ObligedQueue(visibility_timeout=floor.HOUR)
    for body in "ABC":
        q.send(body)
    q.receive(timeout=1.0)
    aim = q.aim
    q.receive(timeout=1.0)  # a later deadline: the sweeper keeps its aim
    assert q.aim == aim
    q.receive(timeout=1.0, visibility_timeout=1.0)  # an earlier one: re-aimed
    assert q.aim is not None and aim is not None and q.aim < aim


def test_the_obliged_machine_and_its_driver_make_the_obliged_floor_s_tests_and_steps() -> None:
    # ObligedQueue's obligations, split as impl's design splits them: the machine's steps answer
    # None for a case they do not serve, and the driver names the reason.
    q = floor.ObligedDriver(visibility_timeout=floor.HOUR, capacity=2)
    m = q.machine
    with pytest.raises(TypeError, match="block"):
        q.send("A", block=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ids"):
        q.send("A", id="mine")
    with pytest.raises(ValueError, match="delays"):
        q.send("A", delay=1.0)
    assert not m.visible and not m.accepted  # a refused send changes nothing
    m.accepted.add("msg-1")  # as if a caller had chosen the first fresh id
    assert q.send("A") == "msg-2", "a generated id never collides with one already used"
    q.send("B")
    with pytest.raises(queue.Full):
        q.send("C")  # the capacity bounds the active messages
    assert m.send_now(0.0, "C") is None and len(m.visible) == 2
    first = q.receive(timeout=1.0)
    assert q.aim == m.in_flight[first.id].deadline  # the sweeper's aim: the first deadline
    second = q.receive(timeout=1.0, visibility_timeout=None)
    assert [t[2] for t in m.timers] == [first.id], "no deadline: no timer"
    assert m.receive_now(0.0, 1.0) is None  # nothing visible: not the step's case
    with pytest.raises(queue.Empty):
        q.receive(timeout=0.0)
    with pytest.raises(ValueError, match="visibility_timeout"):
        q.receive(timeout=1.0, visibility_timeout=-1.0)
    foreign = Receipt(2, first.id, first.attempt)
    assert q.delete(foreign) is False, "a receipt of another queue never acts"
    assert q.delete(first.receipt) is True and q.delete(first.receipt) is False
    assert q.delete(second.receipt) is True and q.done == {first.id, second.id}
    q.shutdown()
    with pytest.raises(ShutDown):
        q.send("D")
    with pytest.raises(ShutDown):
        q.receive(timeout=0.0)  # nothing visible after shutdown


def test_the_obliged_driver_wakes_a_waiting_receiver_with_a_send() -> None:
    q = floor.ObligedDriver(visibility_timeout=floor.HOUR)
    entered = threading.Event()

    class Announcing(threading.Condition):
        def wait(self, timeout: float | None = None) -> bool:
            entered.set()  # the lock is held: a send can take it only once this one waits
            return super().wait(timeout)

    q.not_empty = Announcing(q.mutex)
    got: list[str] = []
    receiver = threading.Thread(target=lambda: got.append(q.receive(timeout=BOUND).body))
    receiver.start()
    assert entered.wait(BOUND), "the receiver never waited"
    assert q.send("A")  # takes the lock once the receiver's wait released it
    receiver.join(BOUND)
    assert got == ["A"] and q.waiting == 0
