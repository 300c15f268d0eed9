"""``impl.Queue`` left to the garbage collector: no leaked queue, no leaked thread (issue 13, 4).

A careless user drops a queue without closing it. The queue must then be collected even while
its sweeper thread exists (the sweeper holds only a weak reference to it), the sweeper must end,
and a queue that still had active messages (visible or in flight) says so with a
``ResourceWarning`` ("unclosed impl.Queue ... with N active messages", its source the queue).
A closed queue, or one with nothing active, is collected silently.

Warnings are always caught here, because a recorded warning keeps its ``source`` (the queue)
alive: pytest's own recorder would resurrect the queue until the test ends. Every test runs on
the fake clock and on the real one; nothing sleeps: the threads are joined with a bound, and
"the sweeper is waiting" is read from the probe clock's wait log.
"""

from __future__ import annotations

import gc
import logging
import re
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from impl import Queue, TraceStep
from model_tests.support import BOUND, ProbeClock, RealProbeClock

SWEEPER = re.compile(r"impl\.Queue-\d+-sweeper")

Clock = ProbeClock | RealProbeClock


def sweepers() -> set[threading.Thread]:
    """The sweeper threads alive now, found by their documented name."""
    return {t for t in threading.enumerate() if SWEEPER.fullmatch(t.name)}


def make_clock(kind: str) -> Clock:
    return ProbeClock() if kind == "fake" else RealProbeClock()


@dataclass
class Errors:
    """Everything that went wrong out of sight: thread deaths, errors in ``__del__``, and
    what the queue logged at ERROR."""

    thread: list[str] = field(default_factory=list)
    unraisable: list[str] = field(default_factory=list)
    logged: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        return self.thread + self.unraisable + self.logged


@pytest.fixture
def errors(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> Iterator[Errors]:
    found = Errors()

    def on_thread(args: threading.ExceptHookArgs) -> None:
        found.thread.append(f"{args.thread.name if args.thread else '?'}: {args.exc_value!r}")

    def on_unraisable(args: Any) -> None:
        found.unraisable.append(f"{args.object!r}: {args.exc_value!r}")

    monkeypatch.setattr(threading, "excepthook", on_thread)
    monkeypatch.setattr(sys, "unraisablehook", on_unraisable)
    with caplog.at_level(logging.ERROR, logger="impl.queue"):
        yield found
        found.logged += [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def resource_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """The texts of the ResourceWarnings among ``caught`` (so the records can be dropped)."""
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


def collect_leftovers() -> None:
    """Collect what earlier tests left (a failed test's traceback holds its queues), so that
    the warnings a test records are its own queue's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def joined(threads: set[threading.Thread]) -> list[str]:
    """Join ``threads`` with a bound; the names of those still running."""
    for t in threads:
        t.join(BOUND / max(1, len(threads)))
    return sorted(t.name for t in threads if t.is_alive())


# -- an unreferenced queue is collected, and its sweeper ends ---------------------------------


@pytest.mark.parametrize("kind", ["fake", "real"])
def test_an_unreferenced_queue_is_collected_while_its_sweeper_waits_and_the_sweeper_ends(
    kind: str, errors: Errors
) -> None:
    clock = make_clock(kind)
    before = sweepers()
    q: Queue[str] = Queue(clock=clock)
    q.send("A", id="a")
    q.receive(visibility_timeout=3600)  # a finite deadline: the sweeper thread starts
    (sweeper,) = sweepers() - before
    # The sweeper is now asleep until the deadline, an hour away: it must not hold the queue.
    assert clock.wait_for_thread(sweeper)
    ref = weakref.ref(q)
    with warnings.catch_warnings():
        # Ignored, not recorded: a record would keep the queue alive through its source.
        warnings.simplefilter("ignore", ResourceWarning)
        del q
        gc.collect()
        assert ref() is None, "the queue outlived its last reference"
        assert joined({sweeper}) == [], "the sweeper of a collected queue did not end"
    assert errors.all() == []


@pytest.mark.parametrize("kind", ["fake", "real"])
def test_many_unreferenced_queues_leave_no_thread(kind: str, errors: Errors) -> None:
    start = threading.active_count()
    before = sweepers()
    refs = []
    started: set[threading.Thread] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        for n in range(20):
            # Rebinding q drops the previous queue, as a careless loop would.
            q: Queue[str] = Queue(clock=make_clock(kind))
            q.send(str(n))
            q.receive(visibility_timeout=3600)
            refs.append(weakref.ref(q))
            started |= sweepers() - before
        assert len(started) == 20
        del q
        gc.collect()
        assert [r for r in refs if r() is not None] == []
        assert joined(started) == []
    assert threading.active_count() == start
    assert errors.all() == []


# -- the ResourceWarning ----------------------------------------------------------------------


def _two_visible(q: Queue[str]) -> None:
    q.send("A", id="a")
    q.send("B", id="b")


def _two_in_flight(q: Queue[str]) -> None:
    _two_visible(q)
    q.receive(visibility_timeout=3600)
    q.receive(visibility_timeout=3600)


def _one_of_each(q: Queue[str]) -> None:
    _two_visible(q)
    q.receive(visibility_timeout=3600)


@pytest.mark.parametrize("kind", ["fake", "real"])
@pytest.mark.parametrize("setup", [_two_visible, _two_in_flight, _one_of_each])
def test_an_unclosed_queue_with_active_messages_warns_when_collected(
    kind: str, setup: Callable[[Queue[str]], None], errors: Errors
) -> None:
    collect_leftovers()
    before = sweepers()
    q: Queue[str] = Queue(clock=make_clock(kind))
    setup(q)
    started = sweepers() - before
    ref = weakref.ref(q)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del q
        gc.collect()
    texts = resource_warnings(caught)
    sources = [w.source for w in caught if issubclass(w.category, ResourceWarning)]
    assert len(texts) == 1, texts
    assert re.search(r"unclosed impl\.Queue.*with 2 active messages", texts[0]), texts[0]
    assert isinstance(sources[0], Queue)
    # The record held the queue (its source); once it is gone, so is the queue and its thread.
    del caught, sources
    gc.collect()
    assert ref() is None
    assert joined(started) == []
    assert errors.all() == []


def _closed_with_active_messages(q: Queue[str]) -> None:
    _one_of_each(q)
    q.close()


def _empty(q: Queue[str]) -> None:
    pass


def _only_finished_messages(q: Queue[str]) -> None:
    # done, cancelled and dead: accepted once, active no more
    for i in "abc":
        q.send(i.upper(), id=i)
    assert q.delete(q.receive(visibility_timeout=3600).receipt)
    assert q.cancel("b")
    assert q.retry(q.receive(visibility_timeout=3600).receipt)  # max_receives=1: dead
    stats = q.stats()
    assert (stats.visible, stats.in_flight, stats.done, stats.cancelled, stats.dead) == (
        0, 0, 1, 1, 1,
    )  # fmt: skip


@pytest.mark.parametrize("kind", ["fake", "real"])
@pytest.mark.parametrize("setup", [_closed_with_active_messages, _empty, _only_finished_messages])
def test_no_warning_for_a_closed_queue_or_one_with_nothing_active(
    kind: str, setup: Callable[[Queue[str]], None], errors: Errors
) -> None:
    collect_leftovers()
    before = sweepers()
    q: Queue[str] = Queue(max_receives=1, clock=make_clock(kind))
    setup(q)
    started = sweepers() - before
    ref = weakref.ref(q)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del q
        gc.collect()
    assert resource_warnings(caught) == []
    del caught
    assert ref() is None
    assert joined(started) == []
    assert errors.all() == []


# -- the last reference dropped inside the sweeper thread itself ------------------------------


@pytest.mark.parametrize("kind", ["fake", "real"])
def test_a_queue_whose_last_reference_goes_in_its_own_sweeper_thread_still_ends(
    kind: str, errors: Errors
) -> None:
    """The trace sink holds the only reference and lets go of it during an expiry, which runs
    in the sweeper thread: the queue is then freed there (its ``__del__`` runs in the sweeper,
    which can neither join itself nor wait for itself), and the sweeper must still end."""
    clock = make_clock(kind)
    vt = 1.0 if kind == "fake" else 0.05
    test_let_go = threading.Event()
    box: list[Queue[str]] = []

    def sink(step: TraceStep) -> None:
        if step[0] == "expire" and box:
            assert test_let_go.wait(BOUND)
            box.clear()  # now only the sweeper's own reference, for this sweep, is left

    # max_receives=1: the expiry dead-letters the message, so nothing is active at the end and
    # no ResourceWarning is due (a recorded one would keep the queue alive through its source).
    q: Queue[str] = Queue(max_receives=1, clock=clock)
    box.append(q)
    q.record_trace(sink)
    before = sweepers()
    q.send("A", id="a")
    q.receive(visibility_timeout=vt)
    (sweeper,) = sweepers() - before
    freed_in: list[str] = []
    weakref.finalize(q, lambda: freed_in.append(threading.current_thread().name))
    ref = weakref.ref(q)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del q
        test_let_go.set()
        if isinstance(clock, ProbeClock):
            clock.advance(vt)  # the real clock gets there by itself
        assert joined({sweeper}) == [], "the sweeper did not end after freeing its queue"
    assert freed_in == [sweeper.name], "the queue was not freed in its sweeper thread"
    assert ref() is None
    assert resource_warnings(caught) == []
    assert errors.all() == []
