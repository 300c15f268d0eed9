"""Thread-level trace validation: TLC checks that what the threads of an ``impl.Queue`` did at its
synchronisation points is a behaviour of ``tla/ThreadedQueue.tla``.

``tla/trace.py`` checks the order of a run's transitions against ``Queue.tla``; this module checks
the synchronisation underneath against the threaded model: who took the mutex, who waited on
which condition, how many waiters each notify reached, who woke and why, and which transition
each critical section made. A run is written as a sequence of :class:`ThreadEvent`
``(thread, kind, detail)``, in the one order the threads did them (every event but ``call``,
``return``, ``raise`` and ``tick`` happens with the mutex held, so the order is well defined).
The kinds and their details are those of ``model_tests/schedule/events.py`` (the controlled
scheduler records them):

  ``call``     ``(op, args)``            a method of the queue starts (``args`` are not read:
                                         the transition it records says what the model needs)
  ``acquire``  ``(lock,)``               the thread holds the mutex (outermost acquire only)
  ``release``  ``(lock,)``               it lets the mutex go: the end of a critical section,
                                         or, followed by ``wait``, the start of a wait
  ``wait``     ``(cond, deadline)``      it waits on ``cond`` (``not_empty``, ``not_full``,
                                         ``new_deadline``) until notified or ``deadline``
  ``wake``     ``(cond, how)``           the wait ended, ``how`` = ``notified``/``timeout``/
                                         ``interrupt``; recorded just before or just after
                                         the ``acquire`` that takes the mutex back
  ``notify``   ``(cond, n)``             a notify (or notify_all) that reached ``n`` waiters
  ``step``     ``(action, args, result[, now])``  a transition, as ``Queue.record_trace``
                                         hands it to its sink
  ``return``   ``(op, value)``           the method returned
  ``raise``    ``(op, exception)``       the method raised
  ``tick``     ``(dt, now)``             the clock driver moved the time to ``now``

:func:`to_model_events` groups them into the steps of the model (``tla/TraceThreadedQueue.tla``
says which): a ``call`` is a Start action, an ``acquire`` is ``Acquire``, everything a thread
did between taking the mutex and letting it go (its transition, its notifies, its return or its
wait) is ONE critical section ``XxxCS`` -- the atomicity the model assumes and the mutex gives
-- a ``wake`` is either the model's earlier notify or the sweeper's ``Timeout``. A ``tick`` is
no event: each event carries the clock readings it may have seen (``lo``, ``hi``) and the model's
clock ticks towards them. The threads' roles come from what they call: a thread that sends,
cancels or purges is a producer, one that receives, deletes, retries or changes visibility a
consumer, the sweeper thread is named ``sweeper``, and any other thread (a clock driver) may only
tick. A program's setup, run before its threads by one thread named ``setup`` that both sends and
receives, is split into a producer and a consumer (:func:`split_setup`). Receives without a
visibility timeout (``visibility_timeout=None``) are checked against a model whose ``VT`` is past
the run's last time: no delivery expires there, as none does in the code.
:func:`check_thread_events` writes a module whose constant ``Trace`` is those steps, runs
TLC, and says whether the run was accepted or at which event it was rejected.

NOT MODELLED (raises :class:`NotModelled` before TLC runs, or TLC rejects at that event): receives
with another visibility timeout than the queue's, explicit ``sweep()`` calls, a caller's timed
wait that runs out (the model has no timed wait but the sweeper's), exceptions (``raise``:
shutdown, ``Full``, interrupts) -- :func:`modelled_prefix` keeps what precedes these --, a delete
with a receipt the thread does not hold from its own last receive, consumers that use both
``receive`` and ``receive_batch``, batches of different sizes in one run, and a setup whose events
were not recorded (the model starts from an empty queue).

THE INVERSION (as in ``tla/trace.py``): TLC reporting the invariant ``TraceIncomplete`` violated
means ACCEPTED. Unlike there, the events may be matched in more than one way (which of several
waiters a notify woke; whether the clock ticked before or after a critical section that read
it), so a way that gets stuck proves nothing: TLC runs without its deadlock check and dumps every
state it reached; finishing without a violation means REJECTED, and the largest ``step`` of those
states says how many of the model's steps the best way matched. :class:`ThreadVerdict` says it
the right way round.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from tla.trace import CONFIG_TAIL, TraceVerdict, run_inverted, tla_value

#: The kinds of :class:`ThreadEvent`.
KINDS: Final = frozenset(
    {"call", "acquire", "release", "wait", "wake", "notify", "step", "return", "raise", "tick"}
)

#: The condition variables of ``impl.Queue`` (ThreadedQueue's ``Conds``).
CONDS: Final = ("not_empty", "not_full", "new_deadline")

PRODUCER_OPS: Final = frozenset({"send", "send_batch", "cancel", "purge"})
CONSUMER_OPS: Final = frozenset(
    {
        "receive",
        "receive_batch",
        "delete",
        "delete_batch",
        "retry",
        "change_visibility",
        "change_visibility_batch",
    }
)

#: The modules a check needs next to the generated one.
_MODULES: Final = ("Queue.tla", "ThreadedQueue.tla", "TraceThreadedQueue.tla")


@dataclass(frozen=True, slots=True)
class ThreadEvent:
    """One thing one thread did at a synchronisation point (see the module docstring)."""

    thread: str
    kind: str
    detail: tuple[object, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.thread, str) or not self.thread:
            raise TypeError(f"thread must be a non-empty str, got {self.thread!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {self.kind!r}")
        if not isinstance(self.detail, tuple):
            raise TypeError(f"detail must be a tuple, got {type(self.detail).__name__}")

    def __str__(self) -> str:
        return f"{self.thread}: {self.kind} {self.detail!r}"


class NotModelled(ValueError):
    """The events use something ``ThreadedQueue.tla`` does not model, or are malformed."""


class ThreadTraceCheckError(RuntimeError):
    """TLC neither accepted nor rejected the events: it failed (its message is included)."""


#: One step of ``TraceThreadedQueue.tla``'s ``Trace``: field -> value.
Record = dict[str, object]


@dataclass
class ModelEvent:
    """One step of the model, and the raw events it stands for (indices into the input)."""

    record: Record
    #: The raw events it was made from: the first and the last (a critical section spans
    #: from its ``acquire`` to its ``release`` or ``wait``).
    first: int
    last: int
    #: Where it is placed among the model's steps: a critical section at its transition
    #: (where it read the clock), or at its end if it made none.
    key: tuple[int, int] = (0, 0)


@dataclass
class _CS:
    """A critical section in progress."""

    first: int
    lo: int
    op: str
    steps: list[tuple[int, tuple[object, ...], int]] = field(default_factory=list)
    notified: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CONDS, 0))


def _int(x: object, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int | float) or x != int(x):
        raise NotModelled(f"{what}: expected a whole number, got {x!r}")
    return int(x)


def _time(x: object, start: float, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise NotModelled(f"{what}: a time must be a number, got {x!r}")
    return _int(x - start, what)


def _receipt(x: object, what: str) -> tuple[str, int]:
    if not isinstance(x, tuple | list) or len(x) < 2:
        raise NotModelled(f"{what}: expected (id, attempt, ...), got {x!r}")
    return str(x[0]), _int(x[1], what)


@dataclass(frozen=True)
class Roles:
    """Which thread is which in the model."""

    producers: frozenset[str]
    consumers: frozenset[str]
    sweeper: str

    @property
    def threads(self) -> frozenset[str]:
        return self.producers | self.consumers | {self.sweeper}


def modelled_prefix(events: Sequence[ThreadEvent], sweeper: str = "sweeper") -> list[ThreadEvent]:
    """The events before the first ``raise``, interrupted wait, or timed-out wait of a thread
    other than the sweeper: the model has no exceptions and no timed wait but the sweeper's,
    and a prefix of a behaviour is a behaviour, so this is what can be checked of a run in
    which a call raised (a ``receive(block=False)`` that found nothing, an interrupt) or a
    timed send or receive ran out. The critical section the cut falls in (the thread's
    ``acquire`` and ``wake`` just before) goes too: it has no end the model could match."""
    cut = next(
        (
            k
            for k, e in enumerate(events)
            if e.kind == "raise"
            or (e.kind == "wake" and e.detail[1:2] == ("interrupt",))
            or (e.kind == "wake" and e.detail[1:2] == ("timeout",) and e.thread != sweeper)
        ),
        len(events),
    )
    if cut < len(events):
        t = events[cut].thread
        mine = [k for k in range(cut) if events[k].thread == t]
        call = max((k for k in mine if events[k].kind == "call"), default=-1)
        section = max((k for k in mine if events[k].kind == "acquire"), default=-1)
        if section > call and not any(events[k].kind == "step" for k in mine if k > section):
            cut = section
    return list(events[:cut])


def split_setup(events: Sequence[ThreadEvent], setup: str = "setup") -> list[ThreadEvent]:
    """``events`` with the thread ``setup`` (a program's setup, run before its threads by one
    thread that both sends and receives) split in two threads of the model: its sends (and
    cancels, purges) as those of the producer ``<setup>-producer``, the rest as those of the
    consumer ``<setup>-consumer``. One thread's calls run one after the other, so the two
    halves never overlap: the split is the same behaviour, with roles the model has."""
    out: list[ThreadEvent] = []
    role: str | None = None
    for k, e in enumerate(events):
        if e.thread != setup:
            out.append(e)
            continue
        if e.kind == "call":
            op = str(e.detail[0]) if e.detail else ""
            role = "producer" if op in PRODUCER_OPS else "consumer"
        if role is None:
            raise NotModelled(f"event {k} ({e}): the setup thread outside any call")
        out.append(ThreadEvent(f"{setup}-{role}", e.kind, e.detail))
        if e.kind in ("return", "raise"):
            role = None
    return out


def roles(events: Sequence[ThreadEvent], sweeper: str = "sweeper") -> Roles:
    """The producers (they send, cancel or purge) and consumers (the rest of the calls)."""
    ops: dict[str, set[str]] = {}
    for k, e in enumerate(events):
        if e.kind == "call":
            op = str(e.detail[0]) if e.detail else ""
            if op not in PRODUCER_OPS | CONSUMER_OPS:
                raise NotModelled(f"event {k} ({e}): {op!r} is no method ThreadedQueue models")
            ops.setdefault(e.thread, set()).add(op)
    if sweeper in ops:
        raise NotModelled(f"the sweeper thread {sweeper!r} calls {sorted(ops[sweeper])}")
    producers = frozenset(t for t, o in ops.items() if o <= PRODUCER_OPS)
    consumers = frozenset(t for t, o in ops.items() if o <= CONSUMER_OPS)
    both = set(ops) - producers - consumers
    if both:
        raise NotModelled(f"threads {sorted(both)} both send and receive: the model has no such")
    return Roles(producers, consumers, sweeper)


def to_model_events(
    events: Sequence[ThreadEvent],
    *,
    visibility_timeout: int | None,
    start: float = 0.0,
    sweeper: str = "sweeper",
    setup: str = "setup",
) -> list[ModelEvent]:
    """The steps of ``TraceThreadedQueue.tla`` that ``events`` stand for, in order.

    ``visibility_timeout`` is the queue's (every receive must use it; ``None``: no receive
    has one, see :func:`render_config`); ``start`` its clock's start; the thread named
    ``setup`` is split (:func:`split_setup`). Raises :class:`NotModelled` for events the model
    has no step for, or malformed ones.
    """
    if visibility_timeout is not None and (
        not isinstance(visibility_timeout, int) or visibility_timeout < 1
    ):
        raise NotModelled(
            f"visibility_timeout must be a whole number >= 1 or None, got {visibility_timeout!r}"
        )
    events = split_setup(events, setup)
    who = roles(events, sweeper)
    out: list[ModelEvent] = []
    now = 0
    in_call: dict[str, str] = {}
    holds: dict[str, bool] = {}
    open_cs: dict[str, _CS] = {}
    sweeper_seen = False
    seq = 0
    ticks: list[tuple[int, int]] = []  # (index, the time it moved to)

    def emit(record: Record, first: int, last: int, anchor: int, lo: int, hi: int) -> None:
        nonlocal seq
        seq += 1
        out.append(ModelEvent({**record, "lo": lo, "hi": hi}, first, last, (anchor, seq)))

    # The transition each call recorded, by the index of its call: what the Start action needs.
    call_step = _call_steps(events)
    skip: set[int] = set()
    for k, e in enumerate(events):
        if k in skip:
            continue
        t, kind, d = e.thread, e.kind, e.detail
        where = f"event {k} ({e})"
        if kind == "tick":
            if len(d) != 2:
                raise NotModelled(f"{where}: expected (dt, now)")
            new = _time(d[1], start, where)
            if new < now:
                raise NotModelled(f"{where}: the time goes back")
            now = new
            ticks.append((k, now))
            continue
        if t not in who.threads:
            # A thread the model does not have (a clock driver): it may take the mutex, but
            # must change nothing and wake no one while it holds it.
            if kind in ("step", "wait", "wake") or (kind == "notify" and _int(d[1], where)):
                raise NotModelled(f"{where}: {t!r} is no thread of the model")
            continue
        if kind == "call":
            op = str(d[0])
            in_call[t] = op
            if op in ("receive", "receive_batch") and holds.get(t):
                emit({"kind": "drop", "thread": t}, k, k, k, now, now)
                holds[t] = False
            record = _call_record(t, op, call_step.get(k), where)
            emit(record, k, k, k, now, now)
        elif kind == "acquire":
            op = "sweep" if t == who.sweeper else in_call.get(t, "")
            if not op:
                raise NotModelled(f"{where}: {t!r} takes the mutex outside any call")
            if t == who.sweeper:
                sweeper_seen = True
            nxt = events[k + 1] if k + 1 < len(events) else None
            if nxt is not None and nxt.thread == t and nxt.kind == "wake":
                # Recorded after the re-acquire: the wake comes first in the model.
                emit(_wake_record(t, nxt.detail, f"event {k + 1}"), k + 1, k + 1, k, now, now)
                skip.add(k + 1)
            emit({"kind": "acquire", "thread": t}, k, k, k, now, now)
            open_cs[t] = _CS(first=k, lo=now, op=op)
        elif kind == "wake":
            emit(_wake_record(t, d, where), k, k, k, now, now)
        elif kind in ("step", "notify"):
            cs = open_cs.get(t)
            if cs is None:
                raise NotModelled(f"{where}: outside a critical section")
            if kind == "step":
                cs.steps.append((k, d, now))
            else:
                cond = str(d[0])
                if cond not in CONDS:
                    raise NotModelled(f"{where}: unknown condition {cond!r}")
                cs.notified[cond] += _int(d[1], where)
        elif kind == "release":
            cs = open_cs.pop(t, None)
            if cs is None:
                raise NotModelled(f"{where}: a release without an acquire")
            nxt = events[k + 1] if k + 1 < len(events) else None
            last, sleep, deadline = k, "none", None
            if nxt is not None and nxt.thread == t and nxt.kind == "wait":
                last, sleep, deadline = k + 1, str(nxt.detail[0]), nxt.detail[1]
                skip.add(k + 1)
            record = _cs_record(t, cs, sleep, deadline, start, visibility_timeout, where)
            # Before the sweeper thread has run, the code starts it (no notify) where the
            # model, whose sweeper sleeps from the start, notifies it: either will do.
            record["wD"] = cs.notified["new_deadline"] if sweeper_seen else None
            if record.get("got") and sleep == "none":
                holds[t] = True
            if record["op"] in ("delete", "retry", "delete_batch") and sleep == "none":
                holds[t] = False
            # The clock may have ticked while the thread held the mutex (the clock driver
            # does not take it). The section is one step of the model at the time it read:
            # placed before any tick past that reading; when the reading is not known, at
            # its end, at any time the clock showed while it ran.
            read = record.pop("read", None)
            if read is None and cs.steps and len(cs.steps[0][1]) > 3:
                read = _time(cs.steps[0][1][3], start, where)  # the step's own `now`
            if read is None:
                emit(record, cs.first, last, last, cs.lo, now)
            else:
                assert isinstance(read, int)
                later = [i for i, at in ticks if cs.first < i < last and at > read]
                emit(record, cs.first, last, min([*later, last]), read, read)
        elif kind == "wait":
            raise NotModelled(f"{where}: a wait that did not release the mutex")
        elif kind in ("return", "raise"):
            in_call.pop(t, None)
            emit({"kind": kind, "thread": t}, k, k, k, now, now)
    out.sort(key=lambda m: m.key)
    return out


def _call_steps(events: Sequence[ThreadEvent]) -> dict[int, tuple[object, ...]]:
    """The first transition each call recorded (by the call's index), if it recorded one."""
    open_call: dict[str, int] = {}
    found: dict[int, tuple[object, ...]] = {}
    for k, e in enumerate(events):
        if e.kind == "call":
            open_call[e.thread] = k
        elif e.kind in ("return", "raise"):
            open_call.pop(e.thread, None)
        elif e.kind == "step" and e.thread in open_call:
            found.setdefault(open_call[e.thread], e.detail)
    return found


def _call_record(t: str, op: str, step: tuple[object, ...] | None, where: str) -> Record:
    """A ``call`` step, with the arguments the model's Start action takes (from the step)."""
    r: Record = {"kind": "call", "thread": t, "op": op}
    args = step[1] if step is not None and len(step) > 1 else None
    if step is not None and (not isinstance(args, tuple) or step[0] != op):
        raise NotModelled(f"{where}: its transition {step!r} is not a {op}")
    assert args is None or isinstance(args, tuple)
    if op == "send":
        r["id"] = None if args is None else str(args[0])
        r["delay"] = 0 if args is None or len(args) < 2 else _int(args[1] or 0, where)
    elif op == "send_batch":
        if args is None:
            raise NotModelled(f"{where}: a send_batch that recorded nothing")
        ids, delays = args
        assert isinstance(ids, tuple | list) and isinstance(delays, tuple | list)
        pairs = zip(ids, delays, strict=True)
        r["entries"] = tuple((str(i), _int(x or 0, where)) for i, x in pairs)
    elif op == "cancel":
        r["id"] = None if args is None else str(args[0])
    elif op == "receive_batch":
        r["n"] = None if args is None else _int(args[0], where)
    elif op in ("delete", "retry", "change_visibility"):
        r["receipt"] = None if args is None else _receipt(args, where)
        if op == "change_visibility":
            if args is None:
                raise NotModelled(f"{where}: a change_visibility that recorded nothing")
            r["timeout"] = _int(args[2], where)
    elif op == "delete_batch":
        r["receipts"] = None if args is None else tuple(_receipt(x, where) for x in args)
    elif op == "change_visibility_batch":
        if args is None:
            raise NotModelled(f"{where}: a change_visibility_batch that recorded nothing")
        r["receipts"] = tuple(_receipt(x, where) for x in args)
        timeouts = {_int(x[2], where) for x in args if isinstance(x, tuple | list)}
        if len(timeouts) != 1:
            raise NotModelled(f"{where}: the model gives every entry of a batch one timeout")
        r["timeout"] = timeouts.pop()
    return r


def _wake_record(t: str, d: tuple[object, ...], where: str) -> Record:
    if len(d) != 2 or str(d[0]) not in CONDS:
        raise NotModelled(f"{where}: expected (cond, how)")
    return {"kind": "wake", "thread": t, "cond": str(d[0]), "how": str(d[1])}


def _cs_record(
    t: str,
    cs: _CS,
    sleep: str,
    deadline: object,
    start: float,
    vt: int | None,
    where: str,
) -> Record:
    """A ``cs`` step: the section's wakeups, its end, and what its transition gave."""
    if sleep != "none" and sleep not in CONDS:
        raise NotModelled(f"{where}: unknown condition {sleep!r}")
    r: Record = {
        "kind": "cs",
        "thread": t,
        "op": cs.op,
        "wE": cs.notified["not_empty"],
        "wF": cs.notified["not_full"],
        "sleep": sleep,
    }
    steps = [d for _, d, _ in cs.steps]
    if cs.op == "sweep":
        if any(s[0] != "expire" for s in steps):
            raise NotModelled(f"{where}: the sweeper made a transition other than expire")
        r["fired"] = tuple(str(s[2]) for s in steps)
        r["target"] = None if deadline is None else _time(deadline, start, where)
        if sleep != "new_deadline":
            raise NotModelled(f"{where}: a sweep round that did not wait on new_deadline")
        return r
    if not steps:
        return r
    if len(steps) > 1 or steps[0][0] != cs.op:
        raise NotModelled(f"{where}: a {cs.op} critical section recorded {steps!r}")
    _, args, result = steps[0][:3]
    if cs.op == "receive":
        assert isinstance(args, tuple)
        _same_vt(args[0], vt, where)
        r["got"] = _receipt(result, where)
        if vt is not None:
            r["read"] = _time(_tuple(result, where)[2], start, where) - vt
    elif cs.op == "receive_batch":
        assert isinstance(args, tuple)
        _same_vt(args[1], vt, where)
        got = _tuple(result, where)
        r["got"] = tuple(_receipt(x, where) for x in got)
        if got and vt is not None:
            r["read"] = _time(_tuple(got[0], where)[2], start, where) - vt
    elif cs.op in ("delete", "retry"):
        r["ok"] = bool(result)
    elif cs.op == "change_visibility":
        r["ok"] = result is not False
        if result is not False and result is not None:
            assert isinstance(args, tuple)
            r["read"] = _time(result, start, where) - _int(args[2], where)
    elif cs.op == "delete_batch":
        r["done"] = sum(1 for x in _tuple(result, where) if x)
    elif cs.op == "cancel":
        r["ok"] = bool(result)
    elif cs.op == "purge":
        r["count"] = _int(result, where)
    return r


def _same_vt(x: object, vt: int | None, where: str) -> None:
    """A receive's visibility timeout ``x`` must be the queue's ``vt``."""
    if (x is None) != (vt is None) or (x is not None and _int(x, where) != vt):
        raise NotModelled(f"{where}: the model's receives all use visibility timeout {vt}")


def _tuple(x: object, where: str) -> tuple[object, ...]:
    if not isinstance(x, tuple | list):
        raise NotModelled(f"{where}: expected a tuple, got {x!r}")
    return tuple(x)


# -- the check ----------------------------------------------------------------------------------


def _set(values: Iterable[object]) -> str:
    return "{" + ", ".join(sorted({tla_value(v) for v in values})) + "}"


def _seq(x: object) -> tuple[tuple[object, ...], ...]:
    """A record's sequence of pairs (entries, receipts, a batch's receipts)."""
    assert isinstance(x, tuple) and all(isinstance(p, tuple) for p in x)
    return x


def _pairs(r: Record, key: str) -> list[tuple[object, ...]]:
    """The (id, number) pairs under ``key``: one receipt, or a sequence of them."""
    v = r.get(key)
    if not isinstance(v, tuple) or not v:
        return []
    return list(_seq(v)) if isinstance(v[0], tuple) else [v]


def _ids(records: Sequence[Record]) -> set[str]:
    ids: set[str] = set()
    for k, r in enumerate(records):
        if r.get("id") is not None:
            ids.add(str(r["id"]))
        elif r["kind"] == "call" and r["op"] == "send":
            # A send that recorded no transition (it waited, then the run was cut): its id
            # is not known, so it gets one of its own, never sent by anyone else.
            ids.add(f"unsent{k}")
        for key in ("entries", "receipts", "receipt", "got"):
            ids |= {str(p[0]) for p in _pairs(r, key)}
        fired = r.get("fired", ())
        assert isinstance(fired, tuple)
        ids |= {str(i) for i in fired}
    return ids


def _record(r: Record) -> str:
    return "[" + ", ".join(f"{k} |-> {tla_value(v)}" for k, v in r.items()) + "]"


def render_module(model_events: Sequence[ModelEvent], name: str = "ThreadTraceRun") -> str:
    """A module that EXTENDS TraceThreadedQueue and defines ``RecordedTrace``."""
    body = ",\n".join(f"    {_record(m.record)}" for m in model_events)
    return (
        f"{'-' * 28} MODULE {name} {'-' * 28}\n"
        f"\\* Generated by tla/threaded_trace.py: {len(model_events)} steps of ThreadedQueue.\n"
        "EXTENDS TraceThreadedQueue\n\n"
        "RecordedTrace == <<\n"
        f"{body}\n"
        ">>\n"
        f"{'=' * 77}\n"
    )


def render_config(
    model_events: Sequence[ModelEvent],
    who: Roles,
    *,
    capacity: int | None,
    max_receives: int | None,
    visibility_timeout: int | None,
    bug: str = "none",
) -> str:
    """ThreadedQueue's constants fitted to the events, and the inverted invariant."""
    records = [m.record for m in model_events]
    calls = [r for r in records if r["kind"] == "call"]
    delays = {r["delay"] for r in calls if r["op"] == "send"} | {0}
    for r in calls:
        if r["op"] == "send_batch":
            delays |= {p[1] for p in _seq(r["entries"])}
    extends = {r["timeout"] for r in calls if "timeout" in r}
    batched = {str(r["op"]) for r in calls} & {
        "send_batch",
        "receive_batch",
        "delete_batch",
        "change_visibility_batch",
    }
    if batched and any(r["op"] == "receive" for r in calls):
        raise NotModelled("the model's consumers use receive or receive_batch, not both")
    sizes = {len(_seq(r["entries"])) for r in calls if r["op"] == "send_batch"}
    sizes |= {int(str(r["n"])) for r in calls if r["op"] == "receive_batch" and r["n"] is not None}
    if len(sizes) > 1:
        raise NotModelled(f"batches of sizes {sorted(sizes)}: the model has one size, Batch")
    batch = max(sizes, default=2) if batched else 1
    attempts = [1]
    for r in records:
        for key in ("got", "receipt", "receipts"):
            attempts += [int(str(p[1])) for p in _pairs(r, key)]
    # Without max_receives no release kills: a bound above every attempt of the run.
    receives = max(attempts) + 1 if max_receives is None else max_receives
    max_time = max([0, *(int(str(r["hi"])) for r in records)])
    # Receives without a visibility timeout: the model's (it has no other) runs past the
    # run's last time, so no delivery expires in the model, as none does in the code.
    vt = max_time + 1 if visibility_timeout is None else visibility_timeout
    uses = {str(r["op"]) for r in calls}
    return (
        "\\* Generated by tla/threaded_trace.py. TraceIncomplete VIOLATED = the events are\n"
        "\\* ACCEPTED; a deadlock = REJECTED (see tla/TraceThreadedQueue.tla).\n"
        "CONSTANTS\n"
        f"    Producers = {_set(who.producers)}\n"
        f"    Consumers = {_set(who.consumers)}\n"
        f"    Sweeper = {tla_value(who.sweeper)}\n"
        f"    Ids = {_set(_ids(records))}\n"
        f"    Capacity = {tla_value(capacity)}\n"
        f"    MaxReceives = {receives}\n"
        f"    VT = {vt}\n"
        f"    ExtendTimeouts = {_set(extends)}\n"
        f"    WithCancel = {tla_value('cancel' in uses)}\n"
        f"    WithPurge = {tla_value('purge' in uses)}\n"
        f"    Delays = {_set(delays)}\n"
        f"    Batch = {batch}\n"
        f"    MaxTime = {max_time}\n"
        f"    Bug = {tla_value(bug)}\n"
        f"{CONFIG_TAIL}"
    )


@dataclass(frozen=True)
class ThreadVerdict(TraceVerdict):
    """TLC's answer, the right way round: were the events a behaviour of ThreadedQueue?
    (``matched`` counts the model's steps, :attr:`model_events`.)"""

    model_events: tuple[ModelEvent, ...]
    events: tuple[ThreadEvent, ...]

    @property
    def rejected(self) -> ModelEvent | None:
        """The first step of the model that no step of ThreadedQueue matches, when rejected."""
        return None if self.accepted else self.model_events[self.matched]

    @property
    def rejected_at(self) -> int | None:
        """The index of the input event at which the events were rejected: the event itself,
        or, for a critical section, the ``release`` or ``wait`` that ends it."""
        m = self.rejected
        return None if m is None else m.last

    @property
    def rejected_span(self) -> tuple[int, int] | None:
        """The input events the rejected step stands for (first, last): a critical section
        from its ``acquire`` to its end."""
        m = self.rejected
        return None if m is None else (m.first, m.last)

    def explain(self) -> str:
        if self.accepted:
            return (
                f"accepted: all {len(self.events)} events ({len(self.model_events)} steps) are "
                "a behaviour of ThreadedQueue"
            )
        m = self.rejected
        assert m is not None
        shown = "\n".join(f"  {k}: {self.events[k]}" for k in range(m.first, m.last + 1))
        return (
            f"rejected at event {m.last} of {len(self.events)} (step {self.matched} of "
            f"{len(self.model_events)}: {m.record}), after the steps before it:\n{shown}"
        )


def check_thread_events(
    events: Sequence[ThreadEvent],
    *,
    capacity: int | None,
    max_receives: int | None,
    visibility_timeout: int | None,
    start: float = 0.0,
    sweeper: str = "sweeper",
    setup: str = "setup",
    bug: str = "none",
    timeout: float = 120.0,
) -> ThreadVerdict:
    """Is ``events``, recorded from an ``impl.Queue`` with these ``capacity``, ``max_receives``
    and ``visibility_timeout`` (whole clock units, or ``None``), a behaviour of
    ``ThreadedQueue.tla``? The thread named ``setup`` is split (:func:`split_setup`).

    ``bug`` picks the model's ``Bug`` (``"none"``: the queue as it should be). Raises
    :class:`NotModelled` for events outside the model, :class:`ThreadTraceCheckError` if TLC
    fails instead of answering, ``tla.tlc.SetupError`` if Java or the TLA+ tools are missing.
    """
    raw = tuple(events)
    model_events = to_model_events(
        raw, visibility_timeout=visibility_timeout, start=start, sweeper=sweeper, setup=setup
    )
    who = roles(split_setup(raw, setup), sweeper)
    config = render_config(
        model_events,
        who,
        capacity=capacity,
        max_receives=max_receives,
        visibility_timeout=visibility_timeout,
        bug=bug,
    )
    # Every path: the events may be matched in more than one way (which waiters a notify
    # woke, when the clock ticked), and a way that gets stuck says nothing while another
    # goes on. Rejected = no way matches them all; `matched' = how far the best one got.
    accepted, matched, result = run_inverted(
        _MODULES,
        "ThreadTraceRun",
        render_module(model_events),
        config,
        timeout=timeout,
        every_path=True,
    )
    frozen = tuple(model_events)
    if accepted is not None:
        matched = len(frozen) if accepted else matched
        return ThreadVerdict(accepted, matched, result, model_events=frozen, events=raw)
    raise ThreadTraceCheckError(
        f"TLC gave no verdict ({result.summary}):\n" + "\n".join(result.output[-30:])
    )
