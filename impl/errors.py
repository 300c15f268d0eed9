"""The exceptions of the threaded queue, shaped after the standard library's ``queue`` module.

``Full`` and ``Empty`` subclass ``queue.Full`` and ``queue.Empty``, so code written for
``queue.Queue`` catches them unchanged. ``ShutDown`` subclasses ``queue.ShutDown`` where Python
has one (3.13 and later) and ``Exception`` before that.
"""

from __future__ import annotations

import queue
import sys

if sys.version_info >= (3, 13):
    _ShutDownBase = queue.ShutDown
else:
    _ShutDownBase = Exception


class Full(queue.Full):
    """``send`` found no room: at once with ``block=False``, or when its ``timeout`` ran out."""


class Empty(queue.Empty):
    """``receive`` found nothing visible: at once with ``block=False``, or after ``timeout``."""


class ShutDown(_ShutDownBase):
    """The queue was shut down: no more sends, and receives only while something is visible."""


class DuplicateIdError(ValueError):
    """``send`` was given an id that this queue has already accepted (ids are never reused).

    A ``ValueError``, as the contract requires; its own class lets an adapter such as
    :class:`impl.JobQueue` tell a duplicate from a malformed id without parsing messages.
    """


class RedriveRunning(RuntimeError):
    """``start_redrive`` on a dead-letter queue that already has a running redrive task (only one
    runs per queue, as SQS's ``StartMessageMoveTask``): cancel it or let it complete first."""
