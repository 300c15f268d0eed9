"""The SQS profile: the scenarios an SQS endpoint can express, generated and checked.

:func:`sqs_scenarios` is a Hypothesis strategy built from the pieces of
:mod:`model_tests.scenarios` (the spec as a guide, its payloads, groups, dedup ids, receipt and
batch-size draws, its list of running timers); :func:`check_profile` says why a given scenario is
outside the profile, one reason per line (empty: inside). The profile is what SQS can express
at all, plus what it leaves undefined:

- ``capacity`` null (SQS queues are unbounded); ``visibility_timeout`` given, whole seconds
  0..43200 (SQS has no "never expires"); queue ``delay`` whole seconds 0..900; ``max_receives``
  1..1000 or null; on FIFO queues ``dedup_interval`` 300 (SQS's fixed five minutes);
- each id sent at most once per queue (SQS has no sender-chosen ids to reject a second send);
- no ``cancel`` (SQS cannot cancel a message by id);
- every time (``vt``, ``t``, ``dt``, a send's ``delay``, 0..900) whole seconds, no ``null`` vt;
  every deadline and the whole scenario end before 43200 s (SQS's 12-hour visibility limit);
- no ``advance`` landing exactly on a running timer (a deadline, a delay's due time, the end of
  a dedup window): which side of the tie SQS takes is undefined;
- a receipt at most once per ``ack_batch``/``extend_batch`` (SQS refuses the whole request);
- two ``purge`` of one queue at least 60 s apart (SQS allows one purge per queue a minute);
- a payload whose JSON encoding fits SQS's 256 KiB body (the kit sends it JSON-encoded).

Generated scenarios use fresh ids ``m0``, ``m1``, ... and integer times; ``advance`` aims at the
next timer one second before or after it (never on it), so releases and delays still happen.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from hypothesis import strategies as st

from model_tests.conformance.sqs import MAX_DELAY, MAX_RECEIVE_COUNT, MAX_VISIBILITY
from model_tests.scenario_format import (
    DEDUP_INTERVAL,
    QUEUE_DEFAULT,
    Aged,
    Invoke,
    New,
    Redrive,
    RedriveCancel,
    RedriveStatus,
    Scenario,
    ScenarioError,
    parse_scenario,
)
from model_tests.scenarios import (
    DEDUPS,
    batch_size,
    enqueue_args,
    guided_ops,
    own_op,
    receipt_args,
    timers,
)
from model_tests.targets import ModelTarget, apply

#: The largest body SQS takes, bytes.
MAX_BODY: Final = 262144
#: How long SQS makes a queue wait between two purges, seconds.
PURGE_INTERVAL: Final = 60


def _whole(value: object, maximum: int) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and float(value).is_integer()
        and 0 <= value <= maximum
    )


def _config_reasons(scenario: Scenario) -> list[str]:
    c = scenario.config
    reasons = []
    if c.capacity is not None:
        reasons.append(f"capacity must be null (SQS queues are unbounded), got {c.capacity}")
    if c.visibility_timeout is None:
        reasons.append("visibility_timeout must be given (SQS has no 'never expires')")
    elif not _whole(c.visibility_timeout, MAX_VISIBILITY):
        reasons.append(
            f"visibility_timeout must be whole seconds 0..{MAX_VISIBILITY}, "
            f"got {c.visibility_timeout:g}"
        )
    if not _whole(c.delay, MAX_DELAY):
        reasons.append(f"delay must be whole seconds 0..{MAX_DELAY}, got {c.delay:g}")
    if c.max_receives is not None and c.max_receives > MAX_RECEIVE_COUNT:
        reasons.append(f"max_receives must be 1..{MAX_RECEIVE_COUNT} or null, got {c.max_receives}")
    if c.fifo and c.dedup_interval != DEDUP_INTERVAL:
        reasons.append(
            f"dedup_interval must be {DEDUP_INTERVAL:g} (fixed on SQS), got {c.dedup_interval:g}"
        )
    return reasons


def _op_reasons(
    where: str, op: Invoke, model: ModelTarget, sent: set[str], queue_vt: float | None
) -> list[str]:
    """Why ``op`` (about to run on ``model``; ``sent``: the current queue's ids, updated;
    ``queue_vt``: the queues' visibility timeout) is outside the profile."""
    reasons = []
    now = model.now
    name = op.name
    args: tuple[Any, ...] = op.args
    if name == "cancel":
        reasons.append(f"{where}: cancel (SQS cannot cancel a message by id)")
    if name in ("send", "send_batch"):
        for id, body, delay, *_ in [args] if name == "send" else args[0]:
            if id in sent:
                reasons.append(f"{where}: id {id!r} sent twice to one queue")
            sent.add(id)
            if delay is not QUEUE_DEFAULT and not _whole(delay, MAX_DELAY):
                reasons.append(f"{where}: delay must be whole seconds 0..{MAX_DELAY}, got {delay}")
            if len(json.dumps(body)) > MAX_BODY:
                reasons.append(f"{where}: payload of {id!r} too large for an SQS body")
    # The visibility times the op sets: a receive's (the queue's when left out), extensions'.
    times: list[Any] = []
    if name == "receive":
        times = [args[0]]
    elif name == "receive_batch":
        times = [args[1]]
    elif name == "change_visibility":
        times = [args[2]]
    elif name == "change_visibility_batch":
        times = [e[2] for e in args[0]]
    for t in times:
        if t is QUEUE_DEFAULT:
            if queue_vt is None:
                continue  # reported with the configuration
            t = queue_vt
        if t is None:
            reasons.append(f"{where}: vt null (SQS has no 'never expires')")
        elif not _whole(t, MAX_VISIBILITY):
            reasons.append(f"{where}: time must be whole seconds 0..{MAX_VISIBILITY}, got {t}")
        elif now + t >= MAX_VISIBILITY:
            reasons.append(f"{where}: a deadline at {now + t:g} s is 12 hours or more")
    if name in ("delete_batch", "change_visibility_batch"):
        receipts = [tuple(e[:2]) for e in args[0]]
        if len(set(receipts)) < len(receipts):
            reasons.append(f"{where}: a receipt repeated inside one batch")
    if name == "advance":
        dt = args[0]
        if not _whole(dt, MAX_VISIBILITY):
            reasons.append(f"{where}: dt must be whole seconds, got {dt}")
        else:
            at = now + dt
            if at in timers(model.states):
                reasons.append(f"{where}: advance lands exactly on a timer at {at:g} s")
            if at >= MAX_VISIBILITY:
                reasons.append(f"{where}: the scenario reaches {at:g} s (12 hours or more)")
    return reasons


def check_profile(scenario: Scenario | Mapping[str, Any]) -> list[str]:
    """Why ``scenario`` is outside the SQS profile, one sentence each; empty if it is inside.

    A mapping is parsed first (an invalid scenario gives its parse error as the one reason).
    """
    try:
        parsed = scenario if isinstance(scenario, Scenario) else parse_scenario(scenario)
    except ScenarioError as e:
        return [f"not a valid scenario: {e}"]
    reasons = _config_reasons(parsed)
    config = parsed.config
    system = any(
        isinstance(op, Redrive | RedriveCancel | RedriveStatus | Aged) for op in parsed.ops
    )
    if config.dead_letter is not None or config.retention is not None or system:
        # The relaxed oracle judges one queue at a time; a system of queues (contract section 7) has
        # its own check.
        return [
            *reasons,
            "dead_letter, retention and the redrive ops are judged by "
            "python -m model_tests.conformance.systems, not by this profile",
        ]
    if config.capacity is not None or config.visibility_timeout is None:
        # The guide below needs no capacity; a null queue vt is reported already.
        config = type(config)(
            capacity=None,
            visibility_timeout=config.visibility_timeout,
            max_receives=config.max_receives,
            delay=config.delay,
            fifo=config.fifo,
            dedup_interval=config.dedup_interval,
        )
    model = ModelTarget(config)
    sent: list[set[str]] = [set()]
    purged: list[float | None] = [None]
    for i, op in enumerate(parsed.ops):
        where = f"op {i}"
        if isinstance(op, Invoke):
            reasons += _op_reasons(
                where, op, model, sent[model.current], parsed.config.visibility_timeout
            )
            if op.name == "purge":
                last = purged[model.current]
                if last is not None and model.now - last < PURGE_INTERVAL:
                    reasons.append(f"{where}: purge {model.now - last:g} s after the last one")
                purged[model.current] = model.now
        elif isinstance(op, New):
            sent.append(set())
            purged.append(None)
        apply(model, op)
    return reasons


# -- the generator -------------------------------------------------------------------------------

#: Visibility timeouts (queue and per receive), whole seconds.
VTS: Final = (0, 1, 2, 3, 5, 30)
#: Extensions and per-send delays, whole seconds.
SHORT: Final = (0, 1, 2, 3)


class _Ids:
    """Fresh ids ``m0``, ``m1``, ... for one scenario."""

    def __init__(self) -> None:
        self.n = 0

    def next(self) -> str:
        self.n += 1
        return f"m{self.n - 1}"


@st.composite
def _message(draw: st.DrawFn, ids: _Ids, fifo: bool, dedups: tuple[str, ...]) -> list[Any]:
    return enqueue_args(draw, ids.next(), fifo, dedups, lambda d: d(st.sampled_from(SHORT)))


def _distinct(receipts: list[list[Any]]) -> list[list[Any]]:
    """The receipts without repeats (of id and attempt), in order."""
    seen: set[tuple[Any, Any]] = set()
    out = []
    for r in receipts:
        if (r[0], r[1]) not in seen:
            seen.add((r[0], r[1]))
            out.append(r)
    return out


@st.composite
def _advance(draw: st.DrawFn, model: ModelTarget) -> list[Any]:
    """Whole seconds, often one second before or after the next timer, never on any timer."""
    due = timers(model.states)
    ahead = [t - model.now for t in due if t > model.now]
    if ahead and draw(st.integers(0, 3)) > 0:
        dt = max(0, int(min(ahead)) + draw(st.sampled_from((-1, 1))))
    else:
        dt = draw(st.sampled_from((0, 1, 2, 3, 5, PURGE_INTERVAL)))
    while model.now + dt in due:
        dt += 1
    return ["advance", dt]


@st.composite
def _op(draw: st.DrawFn, model: ModelTarget, ids: _Ids, purged: dict[int, float]) -> list[Any]:
    fifo = model.states[0].config.fifo
    name = draw(
        st.sampled_from(
            ("enqueue",) * (8 if fifo else 4)
            + ("reserve",) * 4
            + ("ack", "ack", "retry", "extend")
            + ("advance",) * 3
            + ("dead", "new", "use")
            + ("enqueue_batch", "enqueue_batch", "reserve_batch", "reserve_batch")
            + ("ack_batch", "extend_batch", "purge")
        )
    )
    if name == "enqueue":
        return ["enqueue", *draw(_message(ids, fifo, DEDUPS))]
    if name == "enqueue_batch":
        entries: list[list[Any]] = []
        for _ in range(batch_size(draw)):
            used = {e[2].get("dedup") for e in entries if len(e) == 3}
            free = tuple(d for d in DEDUPS if d not in used)
            entries.append(draw(_message(ids, fifo, free)))
        return ["enqueue_batch", entries]
    if name == "reserve":
        return ["reserve"] if draw(st.booleans()) else ["reserve", draw(st.sampled_from(VTS))]
    if name == "reserve_batch":
        n = batch_size(draw)
        return (
            ["reserve_batch", n]
            if draw(st.booleans())
            else ["reserve_batch", n, draw(st.sampled_from(VTS))]
        )
    if name in ("ack", "retry"):
        return [name, *draw(receipt_args(model))]
    if name == "extend":
        return ["extend", *draw(receipt_args(model)), draw(st.sampled_from(SHORT))]
    if name == "ack_batch":
        receipts = [list(draw(receipt_args(model))) for _ in range(batch_size(draw))]
        return ["ack_batch", _distinct(receipts)]
    if name == "extend_batch":
        changes = [
            [*draw(receipt_args(model)), draw(st.sampled_from(SHORT))]
            for _ in range(batch_size(draw))
        ]
        return ["extend_batch", _distinct(changes)]
    if name == "purge":
        last = purged.get(model.current)
        if last is None or model.now - last >= PURGE_INTERVAL:
            purged[model.current] = model.now
            return ["purge"]
        return ["dead"]
    if name == "advance":
        return draw(_advance(model))
    return own_op(draw, name, model)


@st.composite
def sqs_scenarios(draw: st.DrawFn, fifo: bool = False, max_ops: int = 30) -> dict[str, Any]:
    """A scenario object (decoded JSON) inside the SQS profile, of up to ``max_ops`` ops; a FIFO
    queue's if ``fifo``."""
    scenario: dict[str, Any] = {"capacity": None, "visibility_timeout": draw(st.sampled_from(VTS))}
    if fifo:
        scenario["fifo"] = True
    k = draw(st.sampled_from(("absent", None, 1, 2, 3)))
    if k != "absent":
        scenario["max_receives"] = k
    delay = draw(st.sampled_from(("absent", "absent", 0, 1, 2)))
    if delay != "absent":
        scenario["delay"] = delay
    ids = _Ids()
    purged: dict[int, float] = {}
    scenario["ops"] = guided_ops(draw, scenario, lambda model: _op(model, ids, purged), max_ops)
    return scenario
