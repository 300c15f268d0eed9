"""Trace validation of a recorded endpoint run (``tla/recorded.py``): queues recorded through a
``Recorder`` into a directory, as the SQS endpoint records with ``--record DIR``, are read back
and checked by TLC, each against the model that can check it.

The runs are the real ``impl`` queues on a ``FakeClock`` moved by whole seconds. One directory
holds a standard queue (sends, a batch, receives, a stale delete, a redelivery after its
deadline, a purge), a FIFO queue (two groups, a duplicate) and a system (a source whose
message dies into its dead-letter queue, received there): the lone queues are accepted against
Queue.tla and QueueFifo.tla, the system against QueueSystem.tla. A system with a batch is
checked in part: its source alone, its dead-letter queue "not checked" with why. A doctored
step is rejected; a run on fractional times is "not checked"; a failing write stops the
recording without vetoing the queue's operation. The fast check (``TraceNextMatched``) gives
TraceQueue's own verdicts on a small run with batches, accepted and doctored (marked slow:
TraceQueue's check takes half a minute there). Every test name contains ``trace``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from impl import Entry, FakeClock, FifoQueue, Queue
from tla import recorded
from tla.__main__ import main as tla_main
from tla.recorded import (
    Checked,
    Recorder,
    RecordingError,
    check_directory,
    check_matched,
    read_run,
)
from tla.tlc import available as tlc_available
from tla.trace import Step, check_trace

needs_java = pytest.mark.skipif(not tlc_available(), reason="TLC needs Java and tla2tools.jar")


def record_lone_queues(directory: Path) -> None:
    """A standard and a FIFO queue, each alone, recorded into ``directory``."""
    clock = FakeClock()
    rec = Recorder(directory, start=clock.now())
    with (
        Queue[str](visibility_timeout=2.0, clock=clock, name="orders") as q,
        FifoQueue[str](visibility_timeout=2.0, clock=clock, name="jobs.fifo") as f,
    ):
        q.record_trace(rec.queue("orders"))
        f.record_trace(rec.queue("jobs.fifo", fifo=True, dedup_interval=300))
        q.send("a", id="a")
        q.send_batch([Entry("b", id="b"), Entry("c", id="c", delay=1.0)])
        m = q.receive()
        clock.advance(3.0)
        q.sweep()
        got_all = q.receive_batch(10)  # b, c, then a: a released message goes to the tail
        assert [(g.id, g.attempt) for g in got_all] == [("b", 1), ("c", 1), ("a", 2)]
        again = got_all[2]
        assert not q.delete(m.receipt)  # stale: the first delivery's receipt
        assert q.delete(again.receipt)
        assert q.purge() == 2
        f.send("x", group="g1", id="x1", dedup_id="d1")
        assert f.send("x again", group="g1", id="x2", dedup_id="d1") == "x1"  # a duplicate
        f.send("y", group="g2", id="y1", dedup_id="d2")
        got = f.receive_batch(10)
        assert [g.id for g in got] == ["x1", "y1"]
        assert f.delete(got[0].receipt)
    rec.deleted("orders")
    rec.close()


def record_system(directory: Path, *, batch: bool = False) -> None:
    """A source whose message dies into its dead-letter queue, received there."""
    clock = FakeClock()
    rec = Recorder(directory, start=clock.now())
    with (
        Queue[str](visibility_timeout=1.0, clock=clock, name="orders-dlq") as dlq,
        Queue[str](
            visibility_timeout=1.0, clock=clock, max_receives=1, dead_letter=dlq, name="orders"
        ) as src,
    ):
        dlq.record_trace(rec.queue("orders-dlq"))
        src.record_trace(rec.queue("orders", max_receives=1, dead_letter="orders-dlq"))
        if batch:
            src.send_batch([Entry("a", id="a"), Entry("b", id="b")])
        else:
            src.send("a", id="a")
        m = src.receive()
        assert src.retry(m.receipt)  # dies: moved to the dead-letter queue
        clock.advance(1.0)
        dead = dlq.receive()
        assert (dead.id, dead.attempt) == ("a", 2)
        assert dlq.delete(dead.receipt)
    rec.close()


def by_queue(results: list[Checked]) -> dict[tuple[str, ...], str]:
    return {r.queues: r.status for r in results}


def test_trace_recording_is_json_lines_of_queues_and_steps(tmp_path: Path) -> None:
    record_lone_queues(tmp_path)
    (path,) = tmp_path.glob("*.jsonl")
    kinds = [json.loads(line)["kind"] for line in path.read_text().splitlines()]
    assert kinds[:3] == ["run", "queue", "queue"] and kinds[-2:] == ["deleted", "end"]
    run = read_run(path)
    assert run.ended and run.start == 0.0
    assert list(run.queues) == ["orders.1", "jobs.fifo.1"]
    actions = [s[0] for s in run.queues["orders.1"].steps]
    assert actions[:3] == ["send", "send_batch", "receive"] and actions[-1] == "purge"
    # Tuples come back as tuples: the receive's (id, attempt, deadline).
    receive = run.queues["orders.1"].steps[2]
    assert receive[2] == ("a", 1, 2.0)


def test_trace_of_a_queue_created_again_is_a_new_key(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    rec.queue("q")
    rec.deleted("q")
    rec.queue("q")
    rec.close()
    (path,) = tmp_path.glob("*.jsonl")
    assert list(read_run(path).queues) == ["q.1", "q.2"]


@needs_java
def test_trace_of_recorded_lone_queues_and_a_system_is_accepted(tmp_path: Path) -> None:
    record_lone_queues(tmp_path)
    record_system(tmp_path)
    results = check_directory(tmp_path)
    assert by_queue(results) == {
        ("orders.1",): "accepted",
        ("jobs.fifo.1",): "accepted",
        ("orders-dlq.1", "orders.1"): "accepted",
    }, "\n".join(map(str, results))
    details = {r.queues: r.detail for r in results}
    assert "QueueFifo.tla" in details[("jobs.fifo.1",)]
    assert "QueueSystem.tla" in details[("orders-dlq.1", "orders.1")]


@needs_java
def test_trace_of_a_system_with_a_batch_is_checked_in_part(tmp_path: Path) -> None:
    record_system(tmp_path, batch=True)
    results = check_directory(tmp_path)
    assert by_queue(results) == {("orders-dlq.1",): "not checked", ("orders.1",): "accepted"}
    (unchecked,) = [r for r in results if r.status == "not checked"]
    assert "send_batch" in unchecked.detail and "messages move into it" in unchecked.detail


@needs_java
def test_trace_doctored_is_rejected_and_the_cli_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record_system(tmp_path)
    (path,) = tmp_path.glob("*.jsonl")
    # The dead letter's delivery at attempt 1: the move kept its attempt (2), so no step fits.
    lines = path.read_text().splitlines()
    for k, line in enumerate(lines):
        record = json.loads(line)
        step = record.get("step")
        if record.get("queue") == "orders-dlq.1" and step[0] == "receive":
            step[2][1] = 1
            lines[k] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    assert recorded.main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "rejected: orders-dlq.1, orders.1" in out and "1 rejected" in out
    # python -m tla --recorded DIR is the same check, under the project's one TLC command.
    assert tla_main(["--recorded", str(tmp_path)]) == 1
    assert capsys.readouterr().out == out


def small_run() -> list[Step]:
    """Batches of two over three ids (small enough for TraceQueue's own check): a stale
    receipt in a delete batch, a change batch, a redelivery."""
    clock = FakeClock()
    steps: list[Step] = []
    with Queue[str](visibility_timeout=2.0, clock=clock) as q:
        q.record_trace(steps.append)
        q.send_batch([Entry("a", id="a"), Entry("b", id="b")])
        first = q.receive_batch(2)
        clock.advance(3.0)
        q.sweep()
        again = q.receive_batch(2)
        assert q.delete_batch([first[0].receipt, again[0].receipt]) == [False, True]
        assert q.change_visibility_batch([(again[1].receipt, 1.0)]) == [True]
        q.send("c", id="c")
    return steps


@needs_java
@pytest.mark.slow  # TraceQueue's own check, twice: about 30 s
def test_trace_check_matched_gives_trace_queues_verdicts() -> None:
    steps = small_run()
    doctored = list(steps)
    k = next(i for i, s in enumerate(steps) if s[0] == "delete_batch")
    action, args, _, now = steps[k]
    doctored[k] = (action, args, (True, True), now)  # the stale receipt said to delete
    for trace in (steps, doctored):
        ours = check_matched(trace, capacity=None, max_receives=None)
        theirs = check_trace(trace, capacity=None, max_receives=None)
        assert (ours.accepted, ours.matched) == (theirs.accepted, theirs.matched)
    assert check_matched(steps, capacity=None, max_receives=None).accepted
    assert not check_matched(doctored, capacity=None, max_receives=None).accepted


def test_trace_on_fractional_times_is_not_checked(tmp_path: Path) -> None:
    clock = FakeClock()
    rec = Recorder(tmp_path, start=clock.now())
    with Queue[str](clock=clock, name="q") as q:
        q.record_trace(rec.queue("q"))
        clock.advance(0.25)  # as a real clock would
        q.send("a", id="a")
    rec.close()
    (result,) = check_directory(tmp_path)
    assert result.status == "not checked" and "whole" in result.detail


def test_trace_recorder_that_cannot_write_stops_without_vetoing(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    with Queue[str](name="q") as q:
        q.record_trace(rec.queue("q"))
        assert rec._file is not None
        rec._file.close()  # every later write fails, as on a full disk
        q.send("a", id="a")  # not vetoed
        assert q.receive().id == "a"
    with pytest.raises(RecordingError, match="stopped early"):
        rec.close()


def test_trace_names_a_tla_writer_cannot_quote_are_renamed_consistently() -> None:
    names = recorded._Names()
    step = ("send", ("m1", 0.0, "group!", "dedup id"), True, 0.0)
    again = ("send", ("m2", 0.0, "group!", "other"), "m1", 1.0)
    assert names.step(step) == ("send", ("m1", 0.0, "s_0", "s_1"), True, 0.0)
    assert names.step(again) == ("send", ("m2", 0.0, "s_0", "other"), "m1", 1.0)


def test_trace_directory_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="no recording"):
        check_directory(tmp_path)
    (tmp_path / "x.jsonl").write_text('{"kind": "queue"}\n')
    with pytest.raises(RecordingError, match="line 1: not a recording"):
        check_directory(tmp_path)
    assert recorded.main([str(tmp_path / "missing")]) == 2
    assert tla_main(["--recorded", str(tmp_path / "missing")]) == 2
