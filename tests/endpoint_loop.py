"""Waiting for a condition on a running endpoint's event loop, for the endpoint's tests.

A test thread cannot read the Service while the loop runs; :func:`wait_until` hops to the loop
(``Endpoint._on_loop``) and evaluates the condition there, again and again, until it holds. The
wall clock only bounds the wait (a condition that never holds fails the test after
:data:`TIMEOUT` seconds); it never decides the outcome.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

import sqs_endpoint

#: The bound on one wait, in seconds: far above any healthy run.
TIMEOUT: Final = 10.0


def wait_until(ep: sqs_endpoint.Endpoint, what: Callable[[], bool], about: str) -> None:
    """Hop to the endpoint's loop until ``what()`` holds there (:data:`TIMEOUT` seconds at
    most: a bound, never what decides); ``AssertionError`` naming ``about`` if it never does."""
    end = time.monotonic() + TIMEOUT
    while time.monotonic() < end:
        if ep._on_loop(what):
            return
    raise AssertionError(f"not within {TIMEOUT} s: {about}")
