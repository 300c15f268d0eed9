"""Replaying a TLC counterexample on the implementation, one impl call per TLC step.

Test-only (``model_tests/tests`` is not shipped in the wheel). The three "check your
understanding" test files replay TLC's traces and share these helpers:

- ``test_understanding.py``: ExactlyOnce's counterexample on ``impl.Queue``;
- ``test_understanding_fifo.py``: the FIFO counterexamples on ``impl.FifoQueue``;
- ``test_understanding_effects.py``: the effect models' counterexamples.

:func:`tlc_view` and :func:`impl_view` put what a TLC state and a ``Snapshot`` both say into one
shape, so a test asserts ``impl_view(q.snapshot()) == tlc_view(step)`` after every step (in the
test itself, where pytest shows the difference). :class:`Consumers` makes the call that a step of
the queue or of its consumers stands for (``Produce``, ``Consume``, ``Clock``, ``Sweep``,
``Finish`` of ``tla/QueueConsumers.tla`` and of the models built on it).

Time is a ``ProbeClock`` that a ``Clock`` step moves waking nobody, and the replay plays the
sweeper: a ``Sweep`` step is ``q.sweep()``, so a receipt is live exactly until that line.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from impl import BaseQueue, Message, Queue, Snapshot
from model_tests.support import ProbeClock
from tla.counterexample import TraceStep, deadline, finished, held, messages

#: What a finished delivery came to: (consumer, (id, attempt), what delete returned).
Finish = tuple[str, tuple[str, int], bool]


def now(step: TraceStep) -> int:
    """The model's clock in ``step``."""
    value = step.state["now"]
    assert isinstance(value, int), f"state {step.number}: now is {value!r}"
    return value


def _ids(step: TraceStep, name: str) -> list[str]:
    value = step.state[name]
    assert isinstance(value, tuple), f"state {step.number}: {name} is {value!r}"
    return [str(x) for x in value]


def tlc_view(step: TraceStep) -> dict[str, object]:
    """What a TLC state of the queue says that ``Queue.snapshot()`` can show too."""
    msgs = messages(step.state)
    return {
        "visible": _ids(step, "visible"),
        "in_flight": _ids(step, "inFlight"),
        "dead": _ids(step, "dead"),
        "status": {i: m["status"] for i, m in msgs.items()},
        # The impl forgets the attempt of a done or cancelled message.
        "attempts": {
            i: m["attempt"] for i, m in msgs.items() if m["status"] not in ("DONE", "CANCELLED")
        },
        "deadlines": {i: deadline(m) for i, m in msgs.items() if m["status"] == "IN_FLIGHT"},
    }


def impl_view(s: Snapshot[Any]) -> dict[str, object]:
    """What ``s`` says, in the shape of :func:`tlc_view`."""
    status = {m.id: "VISIBLE" for m in s.visible}
    status |= {m.id: "IN_FLIGHT" for m in s.in_flight}
    status |= {m.id: "DEAD" for m in s.dead}
    status |= {i: "DONE" for i in s.done} | {i: "CANCELLED" for i in s.cancelled}
    return {
        "visible": [m.id for m in s.visible],
        "in_flight": [m.id for m in s.in_flight],
        "dead": [m.id for m in s.dead],
        "status": status,
        "attempts": {m.id: m.attempt for m in (*s.visible, *s.in_flight, *s.dead)},
        "deadlines": {m.id: m.deadline for m in s.in_flight},
    }


def one_changed(before: Mapping[str, object], after: Mapping[str, object]) -> str:
    """The one consumer whose variable differs between two states."""
    changed = [c for c in after if before[c] != after[c]]
    assert len(changed) == 1, f"expected one consumer to change, got {changed}"
    return changed[0]


@dataclass
class Consumers:
    """The queue and its consumers, driven by TLC's steps.

    ``send(id)`` is how a ``Produce`` step sends (a FIFO test sends with a group); it must
    return the id the queue accepted, which must be ``id``. ``holding`` is what each consumer
    received and still holds; ``finishes`` what each ``Finish`` came to, in order.
    """

    q: BaseQueue[str]
    clock: ProbeClock
    send: Callable[[str], str] | None = None
    holding: dict[str, Message[str]] = field(default_factory=dict)
    finishes: list[Finish] = field(default_factory=list)

    def play(self, prev: TraceStep, step: TraceStep) -> bool:
        """Make the call that TLC's step ``prev -> step`` stands for; False (and no call) if
        it is none of the queue's or the consumers' steps (the caller's to play)."""
        a, b = prev.state, step.state
        if step.action == "Produce":
            for i in sorted(set(messages(b)) - set(messages(a))):
                if self.send is None:
                    assert isinstance(self.q, Queue), "a FIFO queue sends through send="
                    got = self.q.send(i, id=i)
                else:
                    got = self.send(i)
                assert got == i, f"state {step.number}: sending {i} gave {got}"
        elif step.action == "Consume":
            c = one_changed(held(a), held(b))
            r = held(b)[c]
            assert r is not None, f"state {step.number}: {c} holds nothing"
            d = deadline(messages(b)[r[0]])
            m = self.q.receive(block=False, visibility_timeout=None if d is None else d - now(step))
            assert (m.id, m.attempt) == r, f"state {step.number}: {c} received {m}, TLC {r}"
            self.holding[c] = m
            if d is not None:  # the sweeper thread has started: let it fall asleep
                assert self.clock.wait_for_waiters(1), "the sweeper thread never slept"
        elif step.action == "Clock":
            self.clock.advance(now(step) - now(prev), wake=False)
        elif step.action == "Sweep":
            self.q.sweep()
        elif step.action == "Finish":
            c = one_changed(held(a), held(b))
            m = self.holding.pop(c)
            assert (m.id, m.attempt) == held(a)[c], f"state {step.number}: {c} held {m}"
            done = (c, (m.id, m.attempt), self.q.delete(m.receipt))
            # A model that records what each delete returned (QueueConsumers' ``finished``)
            # must have recorded this one.
            assert "finished" not in b or done in finished(b), f"state {step.number}: {done}"
            self.finishes.append(done)
        else:
            return False
        return True

    def replay(self, steps: Iterable[TraceStep]) -> Iterator[TraceStep]:
        """Play each step after the first (the initial state) and yield it, for the caller to
        compare the queue with it; a step that is none of :meth:`play`'s fails the test."""
        for prev, step in itertools.pairwise(steps):
            if not self.play(prev, step):
                pytest.fail(f"state {step.number}: unexpected action {step.action}")
            yield step
