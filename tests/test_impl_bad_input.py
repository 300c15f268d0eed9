"""``impl.Queue`` and ``FakeClock`` given bad input (issue 13, point 6): refused, nothing changed.

The argument checks of ``tests/test_impl_send_receive.py``, ``test_impl_receipts.py`` and
``test_clock.py`` cover wrong types, negatives, NaN and infinity. This file adds the inputs that
used to slip through or fail late:

- ints too large for a float (``10**400``) and finite times whose sum overflows to infinity
  (``now + timeout``): ``ValueError`` naming the argument, never ``OverflowError``;
- clocks that are classes, or objects whose ``now``/``wait`` are missing or not callable, or
  whose ``now()`` is not a finite number; a trace sink that is not callable: ``TypeError``;
- ``str`` subclasses as ids, even one whose ``__hash__``, ``__eq__`` and ``__str__`` raise: the
  queue keeps, returns and traces plain ``str`` ids and never calls the subclass's methods;
- a trace sink that calls the queue back: ``RuntimeError`` ("called from inside the queue's
  trace sink"), which vetoes the transition that called the sink; nothing deadlocks.

Every refused call must leave the queue exactly as it was: equal ``snapshot()`` and ``stats()``,
and no id reserved (the same send with good arguments then succeeds).
"""

from __future__ import annotations

import logging
import math
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from impl import DuplicateIdError, FakeClock, Message, MonotonicClock, Queue, TraceStep
from model_tests.support import BOUND, Call, ProbeClock

HUGE = 10**400  # an int no float can hold
BIG = sys.float_info.max  # finite, but BIG + anything sizeable is not
HALF = BIG / 2  # a clock reading from which a BIG timeout overflows


@dataclass
class Setup:
    """A queue with ``a`` in flight (``m``, deadline now + ``vt``) and ``b``, ``c`` visible."""

    q: Queue[str]
    clock: ProbeClock
    m: Message[str]


@pytest.fixture
def make() -> Iterator[Callable[..., Setup]]:
    made: list[Queue[str]] = []

    def new(start: float = 0.0, vt: float | None = 30, **kwargs: object) -> Setup:
        clock = ProbeClock(start)
        q: Queue[str] = Queue(clock=clock, **kwargs)  # type: ignore[arg-type]
        made.append(q)
        for i in "abc":
            q.send(i.upper(), id=i)
        m = q.receive(visibility_timeout=vt)
        return Setup(q, clock, m)

    yield new
    for q in made:
        q.close()


@contextmanager
def unchanged(q: Queue[str]) -> Iterator[None]:
    """The block must leave ``q`` exactly as it was."""
    before = (q.snapshot(), q.stats())
    yield
    assert (q.snapshot(), q.stats()) == before


def threads() -> int:
    return threading.active_count()


# -- ints too large for a float, times that overflow ------------------------------------------


@pytest.mark.parametrize("huge", [HUGE, -HUGE])
@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("timeout", lambda s, x: s.q.send("D", id="d", timeout=x)),
        ("timeout", lambda s, x: s.q.receive(timeout=x)),
        ("visibility_timeout", lambda s, x: s.q.receive(visibility_timeout=x)),
        ("timeout", lambda s, x: s.q.change_visibility(s.m.receipt, x)),
    ],
    ids=["send-timeout", "receive-timeout", "receive-visibility_timeout", "change_visibility"],
)
def test_an_int_too_large_for_a_float_is_a_value_error_naming_the_argument(
    make: Callable[..., Setup], name: str, call: Callable[[Setup, int], object], huge: int
) -> None:
    s = make()
    with unchanged(s.q), pytest.raises(ValueError, match=rf"^{name} must be a finite number"):
        call(s, huge)
    assert s.q.send("D", id="d") == "d"  # the id was not reserved


@pytest.mark.parametrize("huge", [HUGE, -HUGE])
def test_the_constructor_refuses_an_int_too_large_for_a_float(huge: int) -> None:
    before = threads()
    with pytest.raises(ValueError, match=r"^visibility_timeout must be a finite number"):
        Queue(visibility_timeout=huge)
    assert threads() == before


def test_a_huge_int_capacity_or_max_receives_is_just_a_large_bound() -> None:
    # Counts are compared with ints, never converted to a float: nothing to overflow.
    with Queue[str](capacity=HUGE, max_receives=HUGE, clock=FakeClock()) as q:
        q.send("A", id="a")
        assert q.retry(q.receive().receipt)
        assert (q.capacity, q.max_receives, q.stats().visible) == (HUGE, HUGE, 1)


def test_a_visibility_timeout_whose_deadline_overflows_is_refused(
    make: Callable[..., Setup],
) -> None:
    # At HALF a float has no room for 30 more seconds: a deadline now + 30 would be due at once
    # (and the sweeper would race the check), so a is held with no deadline.
    s = make(start=HALF, vt=None)
    with unchanged(s.q), pytest.raises(ValueError, match=r"^visibility_timeout is too large"):
        s.q.receive(visibility_timeout=BIG)
    assert s.q.receive(visibility_timeout=1).id == "b"


def test_a_queue_default_visibility_timeout_whose_deadline_overflows_is_refused() -> None:
    with Queue[str](visibility_timeout=BIG, clock=FakeClock(HALF)) as q:
        q.send("A", id="a")
        with unchanged(q), pytest.raises(ValueError, match=r"^visibility_timeout is too large"):
            q.receive()
        assert q.receive(visibility_timeout=None).attempt == 1


def test_a_change_visibility_whose_deadline_overflows_is_refused(
    make: Callable[..., Setup],
) -> None:
    s = make(start=HALF, vt=None)  # no deadline: see the test above
    with unchanged(s.q), pytest.raises(ValueError, match=r"^timeout is too large"):
        s.q.change_visibility(s.m.receipt, BIG)
    assert s.q.change_visibility(s.m.receipt, 1)


def test_a_receive_timeout_whose_end_overflows_is_refused_before_waiting() -> None:
    with Queue[str](clock=FakeClock(HALF)) as q:  # empty: a receive that waited would hang
        call = Call(lambda: q.receive(timeout=BIG), name="receive-overflowing-timeout")
        with unchanged(q), pytest.raises(ValueError, match=r"^timeout is too large"):
            call.result(BOUND)


def test_a_send_timeout_whose_end_overflows_is_refused_before_waiting(
    make: Callable[..., Setup],
) -> None:
    s = make(start=HALF, vt=None, capacity=3)  # full: a send that waited would hang
    call = Call(lambda: s.q.send("D", id="d", timeout=BIG), name="send-overflowing-timeout")
    with unchanged(s.q), pytest.raises(ValueError, match=r"^timeout is too large"):
        call.result(BOUND)
    assert s.q.cancel("b")
    assert s.q.send("D", id="d", block=False) == "d"  # the id was not reserved


# -- FakeClock --------------------------------------------------------------------------------


@pytest.mark.parametrize("start", [HUGE, -HUGE, math.inf, -math.inf])
def test_fake_clock_refuses_a_start_that_is_not_a_finite_float(start: float) -> None:
    with pytest.raises(ValueError, match=r"^start must be a finite number"):
        FakeClock(start)


@pytest.mark.parametrize(("start", "dt"), [(0.0, HUGE), (HALF, BIG), (BIG, BIG)])
def test_fake_clock_refuses_an_advance_that_would_leave_finite_time(
    start: float, dt: float
) -> None:
    clock = FakeClock(start)
    with pytest.raises(ValueError, match=r"^dt "):
        clock.advance(dt)
    assert clock.now() == start
    clock.advance(0)  # still usable
    assert clock.now() == start


# -- clocks and sinks that are not what they claim --------------------------------------------


class _Duck:
    """A clock by duck typing: no base class, just callable ``now`` and ``wait``."""

    def __init__(self) -> None:
        self._real = MonotonicClock()

    def now(self) -> float:
        return self._real.now()

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        self._real.wait(cond, deadline)


class _NowIsANumber:
    now = 5.0

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        raise AssertionError("never called")


class _NoWait:
    def now(self) -> float:
        return 0.0


class _WaitIsNone(_NoWait):
    wait = None


class _NowReadsText(_Duck):
    def now(self) -> float:
        return "0"  # type: ignore[return-value]


class _NowReadsInfinity(_Duck):
    def now(self) -> float:
        return math.inf


@pytest.mark.parametrize(
    ("clock", "error"),
    [
        (FakeClock, TypeError),
        (MonotonicClock, TypeError),
        (ProbeClock, TypeError),
        (_Duck, TypeError),
        (_NowIsANumber(), TypeError),
        (_NoWait(), TypeError),
        (_WaitIsNone(), TypeError),
        (_NowReadsText(), TypeError),
        (_NowReadsInfinity(), ValueError),
    ],
    ids=lambda v: getattr(v, "__name__", type(v).__name__),
)
def test_the_constructor_refuses_a_clock_that_is_not_a_clock_instance(
    clock: object, error: type[Exception]
) -> None:
    before = threads()
    with pytest.raises(error, match=r"^clock"):
        Queue(clock=clock)  # type: ignore[arg-type]
    assert threads() == before


def test_a_duck_typed_clock_instance_is_accepted_and_drives_expiry() -> None:
    with Queue[str](clock=_Duck()) as q:
        q.send("A", id="a")
        q.receive(visibility_timeout=0.01)
        again = q.receive(timeout=BOUND)  # redelivered by the sweeper, on the duck's waits
        assert (again.id, again.attempt) == ("a", 2)


@pytest.mark.parametrize(
    "sink", [5, "print", object(), [print]], ids=["int", "str", "object", "list"]
)
def test_record_trace_refuses_a_sink_that_cannot_be_called(
    make: Callable[..., Setup], sink: object
) -> None:
    s = make()
    steps: list[TraceStep] = []
    s.q.record_trace(steps.append)
    with unchanged(s.q), pytest.raises(TypeError, match=r"^sink must be callable"):
        s.q.record_trace(sink)  # type: ignore[arg-type]
    s.q.send("D", id="d")  # the sink set before the refused call is still the one in use
    assert [step[:3] for step in steps] == [("send", ("d", 0.0), True)]


# -- str subclasses as ids --------------------------------------------------------------------


class HostileId(str):
    """A ``str`` whose own methods raise: the queue may only look at its characters."""

    def __hash__(self) -> int:
        raise AssertionError("__hash__ of a str subclass was called")

    def __eq__(self, other: object) -> bool:
        raise AssertionError("__eq__ of a str subclass was called")

    def __ne__(self, other: object) -> bool:
        raise AssertionError("__ne__ of a str subclass was called")

    def __str__(self) -> str:
        raise AssertionError("__str__ of a str subclass was called")


def exact(*values: object) -> bool:
    return all(type(v) is str for v in values)


def test_a_str_subclass_id_is_kept_returned_and_traced_as_a_plain_str() -> None:
    steps: list[TraceStep] = []
    with Queue[str](visibility_timeout=None, clock=FakeClock()) as q:
        q.record_trace(steps.append)
        sent = q.send("A", id=HostileId("a"))
        q.send("B", id=HostileId("b"))
        assert exact(sent) and str.__eq__(sent, "a")
        m = q.receive()
        assert exact(m.id, m.receipt.id) and (m.id, m.attempt) == ("a", 1)
        r = q.receipt(HostileId("a"), 1)
        assert exact(r.id) and r == m.receipt
        assert q.delete(r)
        assert q.cancel(HostileId("b"))
        snap = q.snapshot()
        assert exact(*snap.done, *snap.cancelled) and (snap.done, snap.cancelled) == (
            frozenset({"a"}),
            frozenset({"b"}),
        )
        traced = [step[1][0] for step in steps if step[0] in ("send", "delete", "cancel")]
        assert exact(*traced) and traced == ["a", "b", "a", "b"]


def test_a_str_subclass_id_is_refused_as_its_plain_value_would_be() -> None:
    with Queue[str](clock=FakeClock()) as q:
        q.send("A", id="a")
        with unchanged(q):
            with pytest.raises(DuplicateIdError):
                q.send("A", id=HostileId("a"))
            with pytest.raises(ValueError, match=r"^id must match"):
                q.send("B", id=HostileId("b c"))
            with pytest.raises(ValueError, match=r"^id must match"):
                q.cancel(HostileId(""))
            with pytest.raises(ValueError, match=r"^id must match"):
                q.receipt(HostileId("x" * 129), 1)
            assert q.cancel(HostileId("nobody")) is False
        assert q.send("B", id="b") == "b"


# -- calling the queue from inside its trace sink ---------------------------------------------

#: A call of each public method of the queue, as a sink might make it: ``(q, m) -> None``.
INNER: dict[str, Callable[[Queue[str], Message[str]], object]] = {
    "send": lambda q, m: q.send("X", id="x"),
    "receive": lambda q, m: q.receive(block=False),
    "delete": lambda q, m: q.delete(m.receipt),
    "retry": lambda q, m: q.retry(m.receipt),
    "change_visibility": lambda q, m: q.change_visibility(m.receipt, 5),
    "cancel": lambda q, m: q.cancel("c"),
    "sweep": lambda q, m: q.sweep(),
    "record_trace": lambda q, m: q.record_trace(None),
    "dead_letters": lambda q, m: q.dead_letters(),
    "stats": lambda q, m: q.stats(),
    "snapshot": lambda q, m: q.snapshot(),
    "health": lambda q, m: q.health(),
    "shutdown": lambda q, m: q.shutdown(),
    "close": lambda q, m: q.close(),
}


def _due(s: Setup) -> None:
    # Once the sweeper sleeps until a's deadline, move past it without waking the sweeper:
    # a is due, and the test's own sweep() is the one that releases it.
    assert s.clock.wait_for_call(lambda c: c.thread.endswith("-sweeper") and c.deadline == 30)
    s.clock.advance(30, wake=False)


#: Each transition that calls the sink: (what to do first, the call, the action it traces).
OUTER: dict[str, tuple[Callable[[Setup], None], Callable[[Setup], object], str]] = {
    "send": (lambda s: None, lambda s: s.q.send("D", id="d"), "send"),
    "receive": (lambda s: None, lambda s: s.q.receive(), "receive"),
    "delete": (lambda s: None, lambda s: s.q.delete(s.m.receipt), "delete"),
    "retry": (lambda s: None, lambda s: s.q.retry(s.m.receipt), "retry"),
    "change_visibility": (
        lambda s: None,
        lambda s: s.q.change_visibility(s.m.receipt, 5),
        "change_visibility",
    ),
    "change_visibility-0": (
        lambda s: None,
        lambda s: s.q.change_visibility(s.m.receipt, 0),
        "change_visibility",
    ),
    "cancel": (lambda s: None, lambda s: s.q.cancel("b"), "cancel"),
    "sweep": (_due, lambda s: s.q.sweep(), "expire"),
}


@pytest.mark.parametrize("outer", list(OUTER))
@pytest.mark.parametrize("inner", list(INNER))
def test_a_sink_that_calls_the_queue_gets_a_runtime_error_and_vetoes_the_transition(
    make: Callable[..., Setup], inner: str, outer: str
) -> None:
    s = make()
    first, transition, action = OUTER[outer]
    first(s)
    seen: list[str] = []

    def sink(step: TraceStep) -> None:
        seen.append(step[0])
        INNER[inner](s.q, s.m)

    sweepers = [t for t in threading.enumerate() if t.name.endswith("-sweeper")]
    with unchanged(s.q):
        s.q.record_trace(sink)
        call = Call(lambda: transition(s), name=f"{outer}-calling-{inner}-from-its-sink")
        with pytest.raises(RuntimeError, match="called from inside the queue's trace sink") as e:
            call.result(BOUND)  # bounded: a deadlock fails the test instead of hanging it
        s.q.record_trace(None)
    assert inner in str(e.value)
    assert seen == [action]
    # The refused call did nothing either: the queue is open, its sweeper alive, its lock free;
    # and the vetoed transition goes through once the sink is gone.
    assert all(t.is_alive() for t in sweepers)
    assert not s.q.health().expiry_stalled
    transition(s)
    s.q.send("Y", id="y")


def test_close_from_a_sink_in_the_sweeper_is_refused_and_that_sweep_changes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ProbeClock()
    refused: list[RuntimeError] = []
    with Queue[str](clock=clock) as q:
        q.send("A", id="a")
        q.receive(visibility_timeout=1)
        (sweeper,) = [t for t in threading.enumerate() if t.name.endswith("-sweeper")]

        def sink(step: TraceStep) -> None:
            if step[0] == "expire" and not refused:
                try:
                    q.close()
                except RuntimeError as e:
                    refused.append(e)
                    raise

        q.record_trace(sink)
        assert clock.wait_for_waiters(1, BOUND), "the sweeper never waited for a's deadline"
        begun = clock.waits_begun
        with caplog.at_level(logging.ERROR, logger="impl.queue"), unchanged(q):
            clock.advance(1)  # the sweeper's sink calls close(): refused, and the sweep vetoed
            # The sweeper survives its failed round: it goes back to waiting (for its backoff).
            assert clock.wait_for_waiters(1, BOUND, after=begun), "the sweeper did not wait again"
            assert sweeper.is_alive()
        assert len(refused) == 1 and re.search(r"close.*trace sink", str(refused[0]))
        assert [r.exc_info[1] for r in caplog.records if r.exc_info] == refused
        h = q.health()  # reports the failed round; the same sweeper still runs
        assert (h.sweeper_failures, h.last_error) == (1, refused[0])
        assert h.sweeper_running and not h.expiry_stalled
        again = Call(lambda: q.receive(timeout=BOUND), name="receive-after-retry")
        clock.advance(1)  # past the backoff: the sweeper retries, now without a refusal
        assert (again.result(BOUND).id, q.stats().in_flight) == ("a", 1)
