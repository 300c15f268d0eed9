"""Pytest rules and fixtures for every test in the repository.

- No test may leave a thread running: every ``impl.Queue`` a test creates must be closed, and
  every thread a test starts must end. Threads still alive after the test get a bounded join,
  then the test fails with their names.
- The test-support modules of ``model_tests`` whose plain ``assert`` statements are the checks
  (the lockstep machine, the fault matrix) get pytest's assertion rewriting, as test modules
  do, so a failing check says what it compared.
- ``spawn(fn)`` runs ``fn()`` in a background thread and returns its
  :class:`model_tests.support.Call`, whose outcome the test then waits for with a bound.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

# Before anything imports them (model_tests.support imports impl only).
pytest.register_assert_rewrite("model_tests.lockstep", "model_tests.fault_matrix")

from model_tests.support import BOUND, Spawn, Spawner  # noqa: E402


@pytest.fixture(autouse=True)
def no_thread_leaks() -> Iterator[None]:
    """Fail a test that leaves a thread running (a queue not closed, a blocked call)."""
    before = set(threading.enumerate())
    yield
    new = [t for t in threading.enumerate() if t not in before]
    for t in new:
        t.join(BOUND / max(1, len(new)))
    leaked = [t.name for t in new if t.is_alive()]
    if leaked:
        pytest.fail(f"threads still running after the test: {leaked}")


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """``spawn(fn)`` starts ``fn()`` in a thread and returns its ``Call`` (model_tests.support)."""
    spawner = Spawner()
    yield spawner
    for thread in spawner.threads:
        thread.join(BOUND)
