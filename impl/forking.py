"""Fork safety of the threaded queues: the registry of live queues and the ``os.register_at_fork``
handlers.

Before a fork the parent takes every live queue's mutex (in token order), so that no queue is
copied into the child in the middle of a transition; after it the parent releases them, and the
child gives each queue a fresh lock, fresh conditions and no sweeper thread (the parent's threads
do not exist in the child), restarting a sweeper where timers are armed (the method each queue
registers with :func:`register`, the queue's ``_reinit_after_fork``).
Tokens, the identity every queue's receipts carry, are handed out here too, under a lock that the
fork handlers also hold, so a child never reuses a token its parent gave.
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from impl.threaded import BaseQueue

__all__ = ["new_token", "register"]

# Identity tokens for receipts: every queue gets a distinct one, so receipts never cross queues.
_tokens = itertools.count(1)
_tokens_lock = threading.Lock()

# Every live queue, for the fork handlers, with its method that re-initializes it in a child
# (held weakly: the registry keeps no queue alive).
_AfterFork = weakref.WeakMethod[Callable[[], None]]
_queues: weakref.WeakKeyDictionary[BaseQueue[Any], _AfterFork] = weakref.WeakKeyDictionary()
_queues_lock = threading.Lock()
_forking: list[tuple[BaseQueue[Any], _AfterFork]] = []


def new_token() -> int:
    """A token no other queue of this process (or of its parent, before a fork) has."""
    with _tokens_lock:
        return next(_tokens)


def register(q: BaseQueue[Any], after_fork_in_child: Callable[[], None]) -> None:
    """Track ``q`` for the fork handlers while it lives: before a fork its ``mutex`` is held
    (in ``q.token`` order), and in the child ``after_fork_in_child`` (a method of ``q``) is
    called, with no other thread alive, to give it fresh locks and no sweeper."""
    with _queues_lock:
        _queues[q] = weakref.WeakMethod(after_fork_in_child)


def _before_fork() -> None:
    _tokens_lock.acquire()
    _queues_lock.acquire()
    _forking[:] = sorted(_queues.items(), key=lambda item: item[0].token)
    for q, _ in _forking:
        q.mutex.acquire()


def _after_fork_in_parent() -> None:
    for q, _ in reversed(_forking):
        q.mutex.release()
    _forking.clear()
    _queues_lock.release()
    _tokens_lock.release()


def _after_fork_in_child() -> None:
    global _tokens_lock, _queues_lock
    _tokens_lock = threading.Lock()
    _queues_lock = threading.Lock()
    for _, after_fork in _forking:
        reinit = after_fork()
        assert reinit is not None  # _forking holds its queue
        reinit()
    _forking.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
