"""Shared pytest fixtures: a way to run a call in a background thread whose outcome the test
then waits for with a bound (never a sleep). The no-thread-leak rule is in ../conftest.py."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar

import pytest

R = TypeVar("R")

#: Real seconds any single wait in a test may take before the test fails instead of hanging.
BOUND = 10.0


# Notified whenever any Call finishes: what first_finished waits on.
_call_finished = threading.Condition()


class Call(Generic[R]):
    """A call running in its own thread; the test collects its value or exception, bounded."""

    def __init__(self, fn: Callable[[], R], name: str) -> None:
        self._fn = fn
        self._finished = threading.Event()
        self._value: R | None = None
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as e:
            self._error = e
        finally:
            with _call_finished:
                self._finished.set()
                _call_finished.notify_all()

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    def result(self, timeout: float = BOUND) -> R:
        """The call's value, or its exception raised here; fails the test after ``timeout``."""
        assert self._finished.wait(timeout), f"{self.thread.name} did not finish in {timeout}s"
        self.thread.join(timeout)
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def first_finished(*calls: Call[R], timeout: float = BOUND) -> Call[R]:
    """The first of ``calls`` that has finished, waiting (bounded) until one has."""
    with _call_finished:
        assert _call_finished.wait_for(lambda: any(c.finished for c in calls), timeout)
        return next(c for c in calls if c.finished)


class Spawn(Protocol):
    """The type of the ``spawn`` fixture."""

    def __call__(self, fn: Callable[[], R]) -> Call[R]: ...


class _Spawner:
    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def __call__(self, fn: Callable[[], R]) -> Call[R]:
        call = Call(fn, name=f"test-call-{len(self.threads)}")
        self.threads.append(call.thread)
        return call


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """``spawn(fn)`` starts ``fn()`` in a thread and returns its :class:`Call`."""
    spawner = _Spawner()
    yield spawner
    for thread in spawner.threads:
        thread.join(BOUND)
