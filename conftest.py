"""Pytest rule for every test in the repository: no test may leave a thread running.

Every ``impl.Queue`` a test creates must be closed, and every thread a test starts must end.
Threads still alive after the test get a bounded join, then the test fails with their names.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

#: Real seconds the leak check waits, in total, for a test's threads to end.
LEAK_BOUND = 10.0


@pytest.fixture(autouse=True)
def no_thread_leaks() -> Iterator[None]:
    """Fail a test that leaves a thread running (a queue not closed, a blocked call)."""
    before = set(threading.enumerate())
    yield
    new = [t for t in threading.enumerate() if t not in before]
    for t in new:
        t.join(LEAK_BOUND / max(1, len(new)))
    leaked = [t.name for t in new if t.is_alive()]
    if leaked:
        pytest.fail(f"threads still running after the test: {leaked}")
