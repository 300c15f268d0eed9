"""The relaxed oracle of the conformance kit: is what an SQS endpoint did a behaviour of the spec?

The project's own targets are judged by equality with the model (contract section 4). An SQS
endpoint cannot be: Amazon documents behaviours the contract forbids (a standard queue may
deliver out of order, or twice; an old receipt handle's delete "will succeed"). So the kit names
each such licence once, as a :class:`Relaxation`, with the sentence of AWS's documentation it
rests on, and judges an endpoint's outputs against the spec *relaxed by exactly the named
relaxations*:

- :func:`judge` runs a search over the set of spec states consistent with the outputs so far,
  the way :mod:`model_tests.linearizability` searches orders: each op maps every candidate
  state to the states the relaxed step allows *with the observed output*, and the run is
  rejected at the first op that leaves no candidate. The steps are the spec's transitions
  (:mod:`spec.transitions`) plus the nondeterministic steps each relaxation adds. With no
  relaxation the set is always one state and the judge is the equality of the harness.
- :func:`explain` finds the smallest sets of relaxations under which the run is accepted
  (trying subsets by size), or says it is unexplained: ``lost`` when a message was lost
  (:attr:`Explanation.lost`), ``no verdict`` when the search outgrew its budget
  (:attr:`Explanation.no_verdict`; :meth:`Profile.decides` says whether a profile's verdict is
  definite).
- **Nothing lost is admitted.** The kit runs every scenario followed by its *drain*
  (:func:`drain_ops`, :func:`with_drain`: past every timer, then receives until every message
  must have come out, then the dead letters); :func:`judge` given the drain's outputs too
  rejects a run after which an accepted message was neither deleted, purged, cancelled,
  dead-lettered nor delivered. A relaxation may delay a message, never lose it: each says how
  many receives in a row may pass over a message (:attr:`Relaxation.passes`; only
  ``SHORT_POLL_SAMPLES``, once: AWS's :data:`SUBSEQUENT_REQUEST`), with or without the drain.
- :func:`shrink` is delta debugging of a scenario's ops (then of its batches' entries) that
  keeps a divergence, re-running the endpoint for every candidate.

A :class:`Profile` is a set of relaxations with the reason it admits each: ``strict`` (none:
the contract), ``sqs-standard`` and ``sqs-fifo`` (what AWS documents for each queue type).
:data:`Relaxation.VISIBLE_CHANGE_HIDES` is in no profile: it is a behaviour measured on moto that
AWS documents as an error, named so that the report can say exactly that.

Scenarios are given either parsed (:class:`~model_tests.scenario_format.Scenario`) or as their
JSON object; :func:`to_json` turns a parsed one back into the JSON form the harness reads.
"""

from __future__ import annotations

import enum
import functools
import itertools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, TypeAlias

import spec
from model_tests.scenario_format import (
    DEDUP_INTERVAL,
    QUEUE_DEFAULT,
    Aged,
    Dead,
    Invoke,
    New,
    Op,
    QueueConfig,
    Scenario,
    ScenarioError,
    Use,
    parse_scenario,
)
from model_tests.targets import DUPLICATE, Output
from spec.operations import REGISTRY
from spec.state import Msg, Receipt, State, Status

#: A scenario as the functions here take it: parsed, or its JSON object.
ScenarioLike: TypeAlias = Scenario | Mapping[str, Any]


# =============================================================================================
# The relaxations, each with its meaning and the sentence of AWS's documentation it rests on
# =============================================================================================


@dataclass(frozen=True, slots=True)
class Citation:
    """A sentence of AWS's documentation, verbatim, and the page it is on."""

    quote: str
    url: str


class Relaxation(enum.Enum):
    """A behaviour the contract forbids and an SQS endpoint may show, by name."""

    #: Any visible message may come next (standard queues: best-effort ordering).
    ANY_ORDER = "any-order"
    #: A message may be delivered again while it is in flight (standard queues).
    DUPLICATES = "duplicates"
    #: A stale receipt's delete or visibility change may succeed, and may act.
    STALE_HANDLE_ACTS = "stale-handle-acts"
    #: A visibility change through a past receipt of a visible message succeeds and hides it.
    VISIBLE_CHANGE_HIDES = "visible-change-hides"
    #: Dead-lettering may happen late (on a later receive): dead letters are eventually equal.
    DEAD_LETTER_LAGS = "dead-letter-lags"
    #: A FIFO send that the queue deduplicated may answer as accepted (SQS's answer is success).
    DEDUP_UNREPORTED = "dedup-unreported"
    #: A short-polling receive may deliver fewer deliverable messages than the model, even none.
    SHORT_POLL_SAMPLES = "short-poll-samples"

    @property
    def meaning(self) -> str:
        """One line: what the relaxed model may do that the spec may not."""
        return _MEANING[self]

    @property
    def citation(self) -> Citation:
        return _CITATION[self]

    @property
    def passes(self) -> int:
        """How many receives in a row this relaxation lets pass over a message they could have
        delivered (a short answer that leaves it out), before the message counts as lost: 1
        for ``SHORT_POLL_SAMPLES`` (:data:`SUBSEQUENT_REQUEST`: with fewer than 1,000 messages,
        the next request returns them), 0 for every other (they delay a message or deliver
        another, never leave one out)."""
        return 1 if self is Relaxation.SHORT_POLL_SAMPLES else 0

    @property
    def documented(self) -> bool:
        """Whether AWS's cited sentence allows the behaviour (``False``: AWS documents the
        opposite, and the relaxation only names what an emulator was measured to do)."""
        return self is not Relaxation.VISIBLE_CHANGE_HIDES


_MEANING: Final[Mapping[Relaxation, str]] = {
    Relaxation.ANY_ORDER: (
        "a receive may deliver any deliverable message, not only the head (a redelivered "
        "message may come back at its old place instead of the tail)"
    ),
    Relaxation.DUPLICATES: (
        "a receive may deliver a message that is in flight again: a fresh delivery "
        "(attempt + 1), and the earlier receipt is stale"
    ),
    Relaxation.STALE_HANDLE_ACTS: (
        "a delete, retry or visibility change through a past receipt of a message (not live) "
        "may succeed without acting, or act on the message's current delivery; a delete may "
        "also delete the message while it is visible"
    ),
    Relaxation.VISIBLE_CHANGE_HIDES: (
        "a visibility change through a past receipt of a visible message succeeds and hides "
        "it for that long (no new delivery); with timeout 0 it succeeds and changes nothing"
    ),
    Relaxation.DEAD_LETTER_LAGS: (
        "a message released after max_receives deliveries may stay in the queue, never "
        "delivered again, and be dead-lettered at any later point (on a later receive): "
        "dead letters are compared as eventually equal, and as a set (in any order)"
    ),
    Relaxation.DEDUP_UNREPORTED: (
        "a FIFO send (or batch entry) that the queue deduplicates may answer true instead of "
        '"duplicate": it changes nothing, as a duplicate does'
    ),
    Relaxation.SHORT_POLL_SAMPLES: (
        "a receive or receive_batch may deliver fewer of the deliverable messages than the "
        "model, possibly none (short polling samples a subset of SQS's servers); those it "
        "delivers are the ones a receive of fewer would deliver (with ANY_ORDER, any of them); "
        "a message it passes over must be in the queue's next answer, unless that one is full"
    ),
}

_STANDARD_QUEUES: Final = (
    "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/"
    "standard-queues.html"
)

#: AWS's page on short and long polling (the kit short-polls unless ``--wait-time`` is given).
SHORT_AND_LONG_POLLING: Final = (
    "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/"
    "sqs-short-and-long-polling.html"
)

#: The limit AWS puts on short polling's sample, the bound of :attr:`Relaxation.passes`: a
#: message left out of one answer is in the next one (the kit's queues hold far fewer than 1,000).
SUBSEQUENT_REQUEST: Final = Citation(
    "However, if you have fewer than 1,000 messages in your queue, a subsequent request will "
    "return your messages.",
    SHORT_AND_LONG_POLLING,
)

#: What AWS says long polling does (``--wait-time``): every server is queried, but a response
#: may still hold fewer messages than asked for, so ``SHORT_POLL_SAMPLES`` stays in the profiles.
LONG_POLLING: Final = Citation(
    "ReceiveMessage queries all servers for messages, sending a response once at least one "
    "message is available, up to the specified maximum.",
    SHORT_AND_LONG_POLLING,
)

_CITATION: Final[Mapping[Relaxation, Citation]] = {
    Relaxation.ANY_ORDER: Citation(
        "Standard queues ensure at-least-once message delivery, but due to the highly "
        "distributed architecture, more than one copy of a message might be delivered, and "
        "messages may occasionally arrive out of order.",
        _STANDARD_QUEUES,
    ),
    Relaxation.DUPLICATES: Citation(
        "If this occurs, the copy of the message isn't deleted on the server that is "
        "unavailable, and you might get that message copy again when you receive messages.",
        "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/"
        "standard-queues-at-least-once-delivery.html",
    ),
    Relaxation.STALE_HANDLE_ACTS: Citation(
        "When you want to delete a message using the DeleteMessage action, you must use the "
        "ReceiptHandle from the most recent time you received the message. If you use an old "
        "ReceiptHandle, the request will succeed, but the message might not be deleted.",
        "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/"
        "API_DeleteMessage.html",
    ),
    Relaxation.VISIBLE_CHANGE_HIDES: Citation(
        "MessageNotInflight: The specified message isn't in flight.",
        "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/"
        "API_ChangeMessageVisibility.html",
    ),
    Relaxation.DEAD_LETTER_LAGS: Citation(
        "When the ReceiveCount for a message exceeds the maxReceiveCount for a queue, Amazon "
        "SQS moves the message to the dead-letter-queue.",
        "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/"
        "API_SetQueueAttributes.html",
    ),
    Relaxation.DEDUP_UNREPORTED: Citation(
        "If a message with a particular MessageDeduplicationId is sent successfully, any "
        "messages sent with the same MessageDeduplicationId are accepted successfully but "
        "aren't delivered during the 5-minute deduplication interval.",
        "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/"
        "API_SendMessage.html",
    ),
    Relaxation.SHORT_POLL_SAMPLES: Citation(
        "When you consume messages from a queue (FIFO or standard) using short polling, Amazon "
        "SQS samples a subset of its servers (based on a weighted random distribution) and "
        "returns messages from only those servers. Thus, a particular ReceiveMessage request "
        "might not return all of your messages.",
        SHORT_AND_LONG_POLLING,
    ),
}

#: Every relaxation, in the order :func:`explain` tries them (the enum's).
RELAXATIONS: Final = tuple(Relaxation)

#: What AWS documents for FIFO queues about stale receipts, the reason ``sqs-fifo`` does not
#: admit :data:`Relaxation.STALE_HANDLE_ACTS` (AWS re:Post knowledge center).
FIFO_STALE_HANDLE: Final = Citation(
    "For FIFO queues, a receipt handle expires after a visibility timeout period. [...] If you "
    "try to delete the message outside of the visibility timeout period, then you see an error "
    "similar to the following: [...] The receipt handle has expired.",
    "https://repost.aws/knowledge-center/sqs-receipt-handle-error",
)


@dataclass(frozen=True, slots=True)
class Profile:
    """A set of relaxations an endpoint is allowed, with the reason for each."""

    name: str
    relaxations: frozenset[Relaxation]
    why: str

    def admits(self, explanation: Explanation) -> bool:
        """Whether some minimal set of ``explanation`` is within this profile's relaxations
        (a run that conforms strictly is admitted by every profile).

        Judged on the smallest explanations only: a larger set inside the profile may explain
        the run too. Measured: moto's hide of a visible message (``VISIBLE_CHANGE_HIDES``, not
        admitted) is also explained by ``STALE_HANDLE_ACTS`` + ``SHORT_POLL_SAMPLES`` (a stale
        change that succeeds, then receives that sampled nothing), which ``sqs-standard`` has:
        a hide shows only as absence. So "not admitted" names the simplest account of what the
        endpoint did, not a proof that no documented behaviour could produce it."""
        return any(s <= self.relaxations for s in explanation.sets)

    def decides(self, explanation: Explanation) -> bool:
        """Whether this profile's verdict on ``explanation`` is definite: it admits it, or no
        search ran out of budget (else a set the search could not finish might have admitted
        it: "no verdict")."""
        return self.admits(explanation) or not explanation.exhausted


PROFILES: Final[Mapping[str, Profile]] = {
    "strict": Profile(
        "strict",
        frozenset(),
        "no relaxation: the outputs must equal the model's (this project's contract)",
    ),
    "sqs-standard": Profile(
        "sqs-standard",
        frozenset(
            {
                Relaxation.ANY_ORDER,
                Relaxation.DUPLICATES,
                Relaxation.STALE_HANDLE_ACTS,
                Relaxation.DEAD_LETTER_LAGS,
                Relaxation.SHORT_POLL_SAMPLES,
            }
        ),
        "what AWS documents for standard queues: best-effort order, at-least-once delivery "
        "(copies), an old receipt handle's delete succeeds and might not delete, dead-lettering "
        "when a receive finds the receive count exceeded, a short poll that samples servers",
    ),
    "sqs-fifo": Profile(
        "sqs-fifo",
        frozenset(
            {
                Relaxation.DEAD_LETTER_LAGS,
                Relaxation.DEDUP_UNREPORTED,
                Relaxation.SHORT_POLL_SAMPLES,
            }
        ),
        "what AWS documents for FIFO queues: strict order within a group, no duplicate "
        "deliveries while in flight, an expired receipt handle is an error; but dead-lettering "
        "on receive (the redrive policy is the same as for standard queues), a deduplicated "
        'send that answers success, and a short poll that samples servers (AWS: "FIFO or '
        'standard")',
    ),
}


# =============================================================================================
# The relaxed model: a world is the spec state of every queue, plus what the relaxations add
# =============================================================================================


#: Per queue, the visible ids that the last receives of the queue passed over, with how many
#: in a row: ``((id, count), ...)``, sorted.
_Missed: TypeAlias = tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class _World:
    """One candidate state of a whole scenario: every queue's spec state, the ids of each
    queue that are due to be dead-lettered but not yet (``DEAD_LETTER_LAGS``: they are
    ``VISIBLE`` in the spec state and never delivered), the current queue and the clock.

    Per queue also: ``missed``, the messages short answers passed over (bounded by
    :attr:`Relaxation.passes`); and for the drain, ``got`` (delivered by a drain receive) and
    ``reached`` (among what a drain receive, not one of the last, had to deliver).
    """

    queues: tuple[State, ...]
    doomed: tuple[frozenset[str], ...]
    current: int
    now: float
    missed: tuple[_Missed, ...] = ((),)
    got: tuple[frozenset[str], ...] = (frozenset(),)
    reached: tuple[frozenset[str], ...] = (frozenset(),)

    @property
    def state(self) -> State:
        return self.queues[self.current]

    def put(self, state: State, doomed: frozenset[str]) -> _World:
        """This world with the current queue's state and doomed ids replaced."""
        i = self.current
        return replace(
            self,
            queues=(*self.queues[:i], state, *self.queues[i + 1 :]),
            doomed=(*self.doomed[:i], doomed, *self.doomed[i + 1 :]),
        )

    def seen(self, missed: _Missed, got: frozenset[str], reached: frozenset[str]) -> _World:
        """This world with the current queue's receive bookkeeping replaced."""
        i = self.current
        return replace(
            self,
            missed=(*self.missed[:i], missed, *self.missed[i + 1 :]),
            got=(*self.got[:i], got, *self.got[i + 1 :]),
            reached=(*self.reached[:i], reached, *self.reached[i + 1 :]),
        )


@dataclass(frozen=True, slots=True)
class _Rules:
    """What a step needs besides the world: the scenario's configuration and the relaxations."""

    config: QueueConfig
    spec_config: spec.Config
    relaxed: frozenset[Relaxation]
    #: How many receives in a row may pass over a message (the relaxations' largest).
    passes: int = 0
    #: Whether misses are bounded (``False`` only to tell a loss from another rejection).
    bounded: bool = True

    def has(self, r: Relaxation) -> bool:
        return r in self.relaxed


def _spec_config(c: QueueConfig) -> spec.Config:
    if c.fifo:
        return spec.Config(
            capacity=c.capacity,
            max_receives=c.max_receives,
            delay=c.delay,
            fifo=True,
            dedup_interval=c.dedup_interval,
        )
    return spec.Config(capacity=c.capacity, max_receives=c.max_receives, delay=c.delay)


def _alive(state: State, doomed: Iterable[str]) -> frozenset[str]:
    """The doomed ids still waiting: those whose message is still ``VISIBLE`` (a delete, a
    purge or a visibility change may have taken one out of the queue meanwhile)."""
    out = set()
    for id in doomed:
        m = state.get(id)
        if m is not None and m.status is Status.VISIBLE:
            out.add(id)
    return frozenset(out)


def _lagging(
    rules: _Rules,
    state: State,
    doomed: frozenset[str],
    run: Callable[[State], tuple[State, Any]],
) -> tuple[State, frozenset[str], Any]:
    """Run a spec transition; under ``DEAD_LETTER_LAGS`` a release that the spec dead-letters
    puts the message back in ``VISIBLE`` instead and marks it doomed.

    Done by running the transition on the same state with dead-lettering switched off, so the
    spec's own release (its placement, its timer bookkeeping) is what runs.
    """
    cfg = state.config
    if not rules.has(Relaxation.DEAD_LETTER_LAGS) or cfg.max_receives is None:
        after, result = run(state)
        return after, _alive(after, doomed), result
    limit = cfg.max_receives
    after, result = run(replace(state, config=replace(cfg, max_receives=None)))
    after = replace(after, config=cfg)
    before = set(state.visible)
    newly = set()
    for id in after.visible:
        m = after.get(id)
        if id not in before and m is not None and m.attempt >= limit:
            newly.add(id)
    return after, _alive(after, doomed | newly), result


def _kill(state: State, id: str) -> State:
    """A doomed (visible) message is dead-lettered now.

    The dead letters are kept sorted: under ``DEAD_LETTER_LAGS`` they are compared as a set
    (:func:`_successors`), so the order of late dead-letterings is no part of the state, and
    ``k`` doomed messages make ``2 ** k`` worlds, not ``k!`` orders of each subset."""
    m = state.get(id)
    assert m is not None and m.status is Status.VISIBLE
    return replace(
        state.with_msg(replace(m, status=Status.DEAD)),
        visible=tuple(v for v in state.visible if v != id),
        dead=tuple(sorted((*state.dead, id))),
    )


def _lag_closure(worlds: set[_World], budget: int) -> set[_World]:
    """Every world reachable by dead-lettering doomed messages, one at a time, in any order."""
    out = set(worlds)
    frontier = [w for w in worlds if any(w.doomed)]
    while frontier:
        w = frontier.pop()
        for qi, d in enumerate(w.doomed):
            for id in sorted(d):
                s = _kill(w.queues[qi], id)
                w2 = replace(
                    w,
                    queues=(*w.queues[:qi], s, *w.queues[qi + 1 :]),
                    doomed=(*w.doomed[:qi], d - {id}, *w.doomed[qi + 1 :]),
                )
                if w2 not in out:
                    out.add(w2)
                    frontier.append(w2)
                    if len(out) > budget:
                        return out
    return out


def _sweep(rules: _Rules, w: _World) -> _World:
    """What the harness does after every op: every queue sweeps at the current time.

    A queue with no timer due is left as it is (the sweep would change nothing, and the op
    kept its doomed ids alive already): most ops fire no timer."""
    now = w.now
    if not any((t := m.due) is not None and t <= now for s in w.queues for m in s.messages):
        return w
    queues: list[State] = []
    doomed: list[frozenset[str]] = []
    for s, d in zip(w.queues, w.doomed, strict=True):
        after, dd, _ = _lagging(rules, s, d, lambda st: spec.expire(st, now))
        queues.append(after)
        doomed.append(dd)
    return replace(w, queues=tuple(queues), doomed=tuple(doomed))


# -- receive -----------------------------------------------------------------------------------


def _candidates(state: State, doomed: frozenset[str]) -> list[str]:
    """The ids a receive may take, in the spec's order: deliverable (visible; on a FIFO queue,
    in an unlocked group), not doomed, and on a FIFO queue not behind a doomed message of its
    group (the doomed one still holds its place in the group's order)."""
    blocking: list[Msg] = []
    for id in doomed:
        m = state.get(id)
        if m is not None:
            blocking.append(m)
    out: list[str] = []
    for id in state.deliverable():
        if id in doomed:
            continue
        m = state.get(id)
        assert m is not None
        if state.config.fifo and any(b.group == m.group and b.sent < m.sent for b in blocking):
            continue
        out.append(id)
    return out


def _strict_picks(state: State, candidates: list[str], n: int) -> list[str]:
    """What the spec's ``receive_batch(n)`` takes from ``candidates``: the first ``n``; on a
    FIFO queue group by group, in the order of each group's earliest candidate."""
    if not state.config.fifo:
        return candidates[:n]
    groups: dict[str | None, list[str]] = {}
    for id in candidates:
        m = state.get(id)
        assert m is not None
        groups.setdefault(m.group, []).append(id)
    return [id for ids in groups.values() for id in ids][:n]


def _deliver(state: State, id: str, deadline: float | None) -> State:
    """A delivery of ``id``: from ``VISIBLE`` as the spec's receive does, or (a duplicate)
    again while in flight: attempt + 1, a new deadline and a new timer place."""
    m = state.get(id)
    assert m is not None
    delivered = replace(m, status=Status.IN_FLIGHT, attempt=m.attempt + 1, deadline=deadline)
    return replace(
        state.with_msg(delivered),
        visible=tuple(v for v in state.visible if v != id),
        in_flight=(*(x for x in state.in_flight if x != id), id),
        timers=(*(x for x in state.timers if x != id), id),
    )


@dataclass(frozen=True, slots=True)
class _DrainStep:
    """A receive of the drain: ``reach`` when it is not one of the queue's last
    :data:`MAX_PASSES` drain receives (what it had to deliver is owed by the end)."""

    reach: bool


def _receive(
    rules: _Rules,
    w: _World,
    n: int,
    vt: object,
    observed: object,
    step: _DrainStep | None = None,
) -> list[_World]:
    """The worlds after a receive of up to ``n`` that delivered ``observed`` (a list of
    ``[id, payload, attempt]``).

    A short answer (fewer visible messages than the spec delivers: ``SHORT_POLL_SAMPLES``)
    passes over every message it could have delivered (any candidate with ``ANY_ORDER``,
    else the spec's picks); a message passed over by more short answers in a row than
    :attr:`_Rules.passes` is lost, and the receive is rejected. A full answer forgets the
    count: it "returned your messages" as far as its room allowed."""
    if not isinstance(observed, list) or len(observed) > n:
        return []
    s, doomed = w.state, w.doomed[w.current]
    candidates = _candidates(s, doomed)
    visible: list[str] = []
    duplicates = 0
    order: list[str] = []
    for item in observed:
        if not isinstance(item, list) or len(item) != 3:
            return []
        id, body, attempt = item
        m = s.get(id) if isinstance(id, str) else None
        if m is None or id in order or m.body != body or attempt != m.attempt + 1:
            return []
        if id in candidates:
            visible.append(id)
        elif rules.has(Relaxation.DUPLICATES) and m.status is Status.IN_FLIGHT:
            duplicates += 1
        else:
            return []
        order.append(id)
    room = n - duplicates
    # As many visible messages as the spec would deliver with the room the duplicates left;
    # a short poll may have sampled fewer (those a receive of fewer would take).
    wanted = min(room, len(candidates))
    if len(visible) > wanted:
        return []
    if len(visible) < wanted and not rules.has(Relaxation.SHORT_POLL_SAMPLES):
        return []
    any_order = rules.has(Relaxation.ANY_ORDER)
    picks = _strict_picks(s, candidates, len(visible))
    if not any_order and visible != picks:
        return []
    q = w.current
    missed: _Missed = ()
    if len(visible) < wanted:
        before = dict(w.missed[q])
        owed = candidates if any_order else _strict_picks(s, candidates, wanted)
        missed = tuple(sorted((id, before.get(id, 0) + 1) for id in owed if id not in visible))
        if rules.bounded and any(c > rules.passes for _, c in missed):
            return []
    got, reached = w.got[q], w.reached[q]
    if step is not None:
        got = got | frozenset(order)
        if step.reach:
            reached = reached | frozenset(_strict_picks(s, candidates, wanted))
    timeout = rules.config.visibility_timeout if vt is QUEUE_DEFAULT else vt
    assert timeout is None or isinstance(timeout, int | float)
    deadline = None if timeout is None else w.now + timeout
    for id in order:
        s = _deliver(s, id, deadline)
    after = w.put(s, _alive(s, doomed))
    if missed == after.missed[q] and got == after.got[q] and reached == after.reached[q]:
        return [after]
    return [after.seen(missed, got, reached)]


def _expected_receive(rules: _Rules, w: _World, n: int) -> list[list[Any]]:
    """The spec's deliveries from this world (for a rejection's "allowed" outputs)."""
    s = w.state
    picks = _strict_picks(s, _candidates(s, w.doomed[w.current]), n)
    out: list[list[Any]] = []
    for id in picks:
        m = s.get(id)
        assert m is not None
        out.append([m.id, m.body, m.attempt + 1])
    return out


# -- delete / retry / change_visibility ---------------------------------------------------------


def _spec_receipt_op(
    state: State, kind: str, receipt: Receipt, t: float, now: float
) -> tuple[State, bool]:
    if kind == "delete":
        return spec.delete(state, receipt)
    if kind == "retry":
        return spec.retry(state, receipt)
    return spec.change_visibility(state, receipt, t, now)


def _done(state: State, id: str) -> State:
    """A message deleted while not in flight (a stale handle acting): ``DONE``, out of every
    list, as ``cancel`` takes it out."""
    after, ok = spec.cancel(state, id)
    assert ok
    m = after.get(id)
    assert m is not None
    return after.with_msg(replace(m, status=Status.DONE))


def _hide(state: State, id: str, deadline: float) -> State:
    """A visible message hidden until ``deadline`` without a delivery (``VISIBLE_CHANGE_HIDES``):
    in flight at its current attempt, so its last receipt is live again until it returns."""
    m = state.get(id)
    assert m is not None and m.status is Status.VISIBLE
    return replace(
        state.with_msg(replace(m, status=Status.IN_FLIGHT, deadline=deadline)),
        visible=tuple(v for v in state.visible if v != id),
        in_flight=(*state.in_flight, id),
        timers=(*state.timers, id),
    )


def _receipt_outcomes(
    rules: _Rules, w: _World, kind: str, id: str, attempt: int, t: float
) -> list[tuple[bool, _World]]:
    """Every ``(result, world)`` a delete / retry / change_visibility may have from ``w``."""
    s, doomed = w.state, w.doomed[w.current]
    receipt = Receipt(s.queue, id, attempt)
    if s.is_live(receipt):
        after, dd, ok = _lagging(
            rules, s, doomed, lambda st: _spec_receipt_op(st, kind, receipt, t, w.now)
        )
        return [(ok is True, w.put(after, dd))]
    outcomes: list[tuple[bool, _World]] = [(False, w)]
    m = s.get(id)
    if m is None or not 1 <= attempt <= m.attempt:
        return outcomes  # never delivered with that attempt: no handle to act through
    if rules.has(Relaxation.STALE_HANDLE_ACTS):
        outcomes.append((True, w))  # "the request will succeed, but ... might not be deleted"
        if m.status is Status.IN_FLIGHT:
            live = Receipt(s.queue, id, m.attempt)
            after, dd, _ = _lagging(
                rules, s, doomed, lambda st: _spec_receipt_op(st, kind, live, t, w.now)
            )
            outcomes.append((True, w.put(after, dd)))
        elif kind == "delete" and m.status in (Status.VISIBLE, Status.DELAYED):
            after = _done(s, id)
            outcomes.append((True, w.put(after, _alive(after, doomed))))
    visible = m.status is Status.VISIBLE
    if rules.has(Relaxation.VISIBLE_CHANGE_HIDES) and kind != "delete" and visible:
        timeout = 0.0 if kind == "retry" else t
        if timeout == 0:
            outcomes.append((True, w))
        else:
            after = _hide(s, id, w.now + timeout)
            outcomes.append((True, w.put(after, _alive(after, doomed))))
    return outcomes


#: The ops that act through receipts: one receipt, or a batch of them.
_RECEIPT_OPS: Final = (
    "delete",
    "retry",
    "change_visibility",
    "delete_batch",
    "change_visibility_batch",
)


def _receipt_batch(
    rules: _Rules, w: _World, entries: Sequence[tuple[str, str, int, float]], observed: object
) -> list[_World]:
    """The worlds after a batch of receipt ops (one step: no sweep between entries) whose
    results were ``observed``."""
    if not isinstance(observed, list) or len(observed) != len(entries):
        return []
    worlds = {w}
    for (kind, id, attempt, t), want in zip(entries, observed, strict=True):
        if not isinstance(want, bool):
            return []
        worlds = {
            x2
            for x in worlds
            for ok, x2 in _receipt_outcomes(rules, x, kind, id, attempt, t)
            if ok is want
        }
    return list(worlds)


def _batch_entries(op: Invoke) -> list[tuple[str, str, int, float]]:
    """``(kind, id, attempt, t)`` of each entry of a receipt op or batch."""
    a = op.args
    if op.name in ("delete", "retry"):
        return [(op.name, _str(a[0]), _int(a[1]), 0.0)]
    if op.name == "change_visibility":
        return [(op.name, _str(a[0]), _int(a[1]), _float(a[2]))]
    if op.name == "delete_batch":
        return [("delete", _str(r[0]), _int(r[1]), 0.0) for r in _seq(a[0])]
    assert op.name == "change_visibility_batch"
    return [("change_visibility", _str(c[0]), _int(c[1]), _float(c[2])) for c in _seq(a[0])]


def _str(x: object) -> str:
    assert isinstance(x, str)
    return x


def _int(x: object) -> int:
    assert isinstance(x, int) and not isinstance(x, bool)
    return x


def _float(x: object) -> float:
    assert isinstance(x, int | float) and not isinstance(x, bool)
    return float(x)


def _seq(x: object) -> Sequence[Any]:
    assert isinstance(x, tuple | list)
    return x


# -- the ops that branch on nothing ----------------------------------------------------------


def _sent(result: object) -> bool | str:
    return DUPLICATE if isinstance(result, str) else result is True


def _apply_strict(rules: _Rules, w: _World, op: Op) -> tuple[_World, Output]:
    """A deterministic op: the spec's step and its output, as the harness writes it."""
    s, doomed, cfg = w.state, w.doomed[w.current], rules.config
    match op:
        case Dead():
            return w, list(s.dead)
        case New():
            fresh = spec.initial(rules.spec_config, queue=len(w.queues))
            return (
                replace(
                    w,
                    queues=(*w.queues, fresh),
                    doomed=(*w.doomed, frozenset()),
                    current=len(w.queues),
                    missed=(*w.missed, ()),
                    got=(*w.got, frozenset()),
                    reached=(*w.reached, frozenset()),
                ),
                None,
            )
        case Use(index):
            return replace(w, current=index), None
        case Invoke("advance", (dt,)):
            return replace(w, now=w.now + _float(dt)), None
        case Invoke("send", args):
            id, body, delay = _str(args[0]), _str(args[1]), args[2]
            if cfg.fifo:
                group, dedup = _str(args[3]), args[4]
                assert dedup is None or isinstance(dedup, str)
                after, r = spec.send(s, id, body, None, w.now, group=group, dedup_id=dedup)
            else:
                d = cfg.delay if delay is QUEUE_DEFAULT else _float(delay)
                after, r = spec.send(s, id, body, d, w.now)
            return w.put(after, _alive(after, doomed)), _sent(r)
        case Invoke("send_batch", (entries,)):
            if cfg.fifo:
                fifo = tuple((e[0], e[1], None, e[3], e[4]) for e in _seq(entries))
                after, rs = spec.send_batch(s, fifo, w.now)
                return w.put(after, _alive(after, doomed)), [_sent(r) for r in _seq(rs)]
            std = tuple(
                (e[0], e[1], cfg.delay if e[2] is QUEUE_DEFAULT else e[2]) for e in _seq(entries)
            )
            after, ok = spec.send_batch(s, std, w.now)
            return w.put(after, _alive(after, doomed)), ok is True
        case Invoke("cancel", (id,)):
            after, ok = spec.cancel(s, _str(id))
            return w.put(after, _alive(after, doomed)), ok
        case Invoke("purge", ()):
            after, count = spec.purge(s)
            return w.put(after, _alive(after, doomed)), count
    raise ValueError(f"op {op!r} is not one the oracle knows")


def _same(a: object, b: object) -> bool:
    """Equal as JSON: ``true`` is not ``1``, a tuple is a list."""
    return json.dumps(a) == json.dumps(b)


def _successors(
    rules: _Rules, w: _World, op: Op, observed: object, step: _DrainStep | None = None
) -> list[_World]:
    """Every world after ``op`` (not yet swept) in which its output is ``observed``."""
    if isinstance(op, Invoke):
        if op.name == "receive":
            got = [] if observed is None else [observed]
            return _receive(rules, w, 1, op.args[0], got, step)
        if op.name == "receive_batch":
            return _receive(rules, w, _int(op.args[0]), op.args[1], observed, step)
        if op.name in ("delete", "retry", "change_visibility"):
            return _receipt_batch(rules, w, _batch_entries(op), [observed])
        if op.name in ("delete_batch", "change_visibility_batch"):
            return _receipt_batch(rules, w, _batch_entries(op), observed)
    after, out = _apply_strict(rules, w, op)
    if _same(out, observed):
        return [after]
    if (
        isinstance(op, Dead)
        and rules.has(Relaxation.DEAD_LETTER_LAGS)
        and isinstance(observed, list)
        and all(isinstance(x, str) for x in observed)
        and _same(out, sorted(observed))
    ):
        return [after]
    if (
        rules.has(Relaxation.DEDUP_UNREPORTED)
        and isinstance(op, Invoke)
        and op.name in ("send", "send_batch")
        and _same(_unreported(out), observed)
    ):
        return [after]
    return []


def _unreported(out: Output) -> Output:
    """A send's output with every ``"duplicate"`` answered as an acceptance."""
    if isinstance(out, list):
        return [True if o == DUPLICATE else o for o in out]
    return True if out == DUPLICATE else out


def _allowed(rules: _Rules, worlds: Iterable[_World], op: Op, limit: int = 6) -> list[Output]:
    """Outputs ``op`` could have had from ``worlds``: every result of a receipt op (or batch of
    them) that some world allows; the spec's deliveries for a receive; else the spec's output."""
    found: dict[str, Output] = {}
    for w in sorted(worlds, key=repr):
        outs: list[Output]
        if isinstance(op, Invoke) and op.name in ("receive", "receive_batch"):
            n = 1 if op.name == "receive" else _int(op.args[0])
            got = _expected_receive(rules, w, n)
            outs = [(got[0] if got else None) if op.name == "receive" else got]
        elif isinstance(op, Invoke) and op.name in _RECEIPT_OPS:
            entries = _batch_entries(op)
            outs = []
            for combo in itertools.product((True, False), repeat=min(len(entries), 6)):
                want = list(combo) + [False] * (len(entries) - len(combo))
                if _receipt_batch(rules, w, entries, want):
                    outs.append(want if op.name.endswith("_batch") else want[0])
        else:
            outs = [_apply_strict(rules, w, op)[1]]
        for o in outs:
            found.setdefault(json.dumps(o), o)
        if len(found) >= limit:
            break
    return [found[k] for k in sorted(found)][:limit]


# =============================================================================================
# judge / explain
# =============================================================================================


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a run's outputs are a behaviour of the spec relaxed by ``relaxations``.

    When not: ``op_index`` is the first op after which no candidate state was left, ``op`` that
    op (as JSON), ``observed`` its output, and ``allowed`` outputs that op could have had from
    the states left before it. ``lost``: the ids the endpoint never delivered although it had
    to, when that is why (passed over by more receives in a row than the relaxations allow, or
    still undelivered after the drain; then ``op_index`` is the drain's last op).
    ``exhausted``: the search outgrew its budget of candidate states (no verdict).
    """

    accepted: bool
    relaxations: frozenset[Relaxation]
    op_index: int | None = None
    op: Any = None
    observed: Output = None
    allowed: tuple[Output, ...] = ()
    exhausted: bool = False
    lost: tuple[str, ...] = ()

    def __str__(self) -> str:
        names = "+".join(r.name for r in RELAXATIONS if r in self.relaxations) or "strict"
        if self.accepted:
            return f"accepted ({names})"
        if self.exhausted:
            return f"no verdict ({names}): the search outgrew its budget at op {self.op_index}"
        if self.lost:
            return (
                f"rejected ({names}) at op {self.op_index} {_compact(self.op)}: "
                f"{', '.join(self.lost)} lost (accepted and not deleted, but not delivered "
                "when a receive had to deliver it)"
            )
        allowed = " or ".join(_compact(a) for a in self.allowed) or "nothing"
        return (
            f"rejected ({names}) at op {self.op_index} {_compact(self.op)}: "
            f"observed {_compact(self.observed)}, allowed {allowed}"
        )


def _compact(x: object) -> str:
    return json.dumps(x, separators=(",", ":"))


def _parse(scenario: ScenarioLike) -> Scenario:
    parsed = scenario if isinstance(scenario, Scenario) else parse_scenario(scenario)
    c = parsed.config
    if (
        c.dead_letter is not None
        or c.retention is not None
        or any(isinstance(op, Aged) for op in parsed.ops)
    ):
        # The worlds here are queues of their own: a move between two, or a retention timer,
        # is not a step of this search (model_tests.conformance.systems judges those).
        raise ValueError(
            "dead_letter, retention and aged: this oracle judges queues of their own; use "
            "model_tests.conformance.systems for a system of queues"
        )
    return parsed


#: How many candidate states :func:`judge` keeps before it gives up (``Verdict.exhausted``).
BUDGET: Final = 20_000


# -- the drain -----------------------------------------------------------------------------------

#: The most receives in a row any relaxation lets pass over a message (:attr:`Relaxation.passes`).
MAX_PASSES: Final = max(r.passes for r in Relaxation)
#: How many messages a drain receive asks for (SQS's most).
DRAIN_BATCH: Final = 10
#: The visibility timeout of a standard queue's drain receives: what they deliver stays
#: delivered for the rest of the drain (a FIFO queue's use 0, below).
DRAIN_VISIBILITY: Final = 3600
#: The latest time a drain's deadline may reach (SQS's 12 hours, less a second).
_DRAIN_HORIZON: Final = 43199


def _last_timer(parsed: Scenario) -> tuple[float, float]:
    """``(end, latest)``: the scenario's last time, and the latest time any of its ops may have
    set a timer for, in any relaxed world (a receive's deadline, a visibility change's, a
    send's delay), or ``-1`` without any."""
    c = parsed.config
    now, latest = 0.0, -1.0

    def vt_of(vt: object) -> float | None:
        t = c.visibility_timeout if vt is QUEUE_DEFAULT else vt
        return None if t is None else _float(t)

    for op in parsed.ops:
        if not isinstance(op, Invoke):
            continue
        a = op.args
        times: list[float | None] = []
        if op.name == "advance":
            now += _float(a[0])
        elif op.name == "receive":
            times = [vt_of(a[0])]
        elif op.name == "receive_batch":
            times = [vt_of(a[1])]
        elif op.name == "change_visibility":
            times = [_float(a[2])]
        elif op.name == "change_visibility_batch":
            times = [_float(e[2]) for e in _seq(a[0])]
        elif op.name in ("send", "send_batch"):
            delays = [a[2]] if op.name == "send" else [e[2] for e in _seq(a[0])]
            times = [c.delay if c.fifo or d is QUEUE_DEFAULT else _float(d) for d in delays]
        latest = max([latest, *(now + t for t in times if t is not None)])
    return now, latest


def _sent_per_queue(parsed: Scenario) -> list[int]:
    """How many distinct ids each queue of the scenario was sent."""
    ids: list[set[str]] = [set()]
    current = 0
    for op in parsed.ops:
        if isinstance(op, New):
            ids.append(set())
            current = len(ids) - 1
        elif isinstance(op, Use):
            current = op.index
        elif isinstance(op, Invoke) and op.name == "send":
            ids[current].add(_str(op.args[0]))
        elif isinstance(op, Invoke) and op.name == "send_batch":
            ids[current].update(_str(e[0]) for e in _seq(op.args[0]))
    return [len(x) for x in ids]


def _drain_plan(parsed: Scenario) -> list[tuple[list[Any], _DrainStep | None]]:
    """The drain's ops (JSON) with, for each receive, its :class:`_DrainStep`."""
    sent_per_queue = _sent_per_queue(parsed)
    if not any(sent_per_queue):
        return []
    end, latest = _last_timer(parsed)
    plan: list[tuple[list[Any], _DrainStep | None]] = []
    at = end
    if latest >= end:
        dt = math.floor(latest - end) + 1
        plan.append((["advance", dt], None))
        at += dt
    fifo = parsed.config.fifo
    vt = 0 if fifo else max(1, min(DRAIN_VISIBILITY, int(_DRAIN_HORIZON - at)))
    current = _final_queue(parsed)
    for q, sent in enumerate(sent_per_queue):
        if sent == 0:
            continue
        if q != current:
            plan.append((["use", q], None))
            current = q
        # Each full answer delivers 10; a short one passes over the rest, and the next must
        # not pass over them again: a short one before each full one is the most it takes.
        receives = (MAX_PASSES + 1) * math.ceil(sent / DRAIN_BATCH)
        for j in range(receives):
            plan.append((["reserve_batch", DRAIN_BATCH, vt], _DrainStep(j < receives - MAX_PASSES)))
        if parsed.config.max_receives is not None:
            plan.append((["dead"], None))
    return plan


def _final_queue(parsed: Scenario) -> int:
    """The current queue after the scenario's ops."""
    current, queues = 0, 1
    for op in parsed.ops:
        if isinstance(op, New):
            current, queues = queues, queues + 1
        elif isinstance(op, Use):
            current = op.index
    return current


def drain_ops(scenario: ScenarioLike) -> list[list[Any]]:
    """The ops (as JSON) the kit runs after a scenario's own, and :func:`judge` judges with it:
    its *drain*.

    An ``advance`` past every timer the scenario may have set (its deadlines, delays and
    visibility changes: every message is deliverable again), then per queue that was sent
    anything (``use`` it) ``(MAX_PASSES + 1) * ceil(sent / 10)`` times ``reserve_batch 10``,
    and ``dead`` when the queue dead-letters. A standard queue's drain receives hide what
    they deliver for :data:`DRAIN_VISIBILITY` seconds, so each delivers what is left; a FIFO
    queue's use 0 (a delivered message would lock its group), so each delivers the heads of
    the groups again until they are dead-lettered. After the drain every accepted message
    not deleted, purged, cancelled or dead-lettered must have been delivered by one of its
    receives (on a FIFO queue: every message one of them, not among the last
    :data:`MAX_PASSES`, had to deliver): see :func:`judge`. The URL endpoints should
    long-poll these receives (AWS: long polling "queries all servers"); the count is enough
    for short polls too, since a receive may pass over a message at most
    :data:`MAX_PASSES` times in a row. A scenario that sent nothing has no drain.
    """
    return [op for op, _ in _drain_plan(_parse(scenario))]


def with_drain(scenario: ScenarioLike) -> Scenario:
    """The scenario followed by its :func:`drain_ops`: what the kit runs on an endpoint."""
    parsed = _parse(scenario)
    raw = to_json(parsed)
    return parse_scenario({**raw, "ops": [*raw["ops"], *drain_ops(parsed)]})


def _unaccounted(rules: _Rules, w: _World) -> tuple[str, ...]:
    """After the drain: the ids of ``w`` that were accepted and neither deleted, purged,
    cancelled, dead-lettered nor delivered by the drain (standard queues), or owed by a drain
    receive and not delivered (FIFO queues); and every message still waiting to be
    dead-lettered that the drain did not deliver. A message in flight with no deadline is
    held, not lost."""
    out: list[str] = []
    for s, doomed, got, reached in zip(w.queues, w.doomed, w.got, w.reached, strict=True):
        for m in s.messages:
            if m.id in doomed:
                # Delivered by the drain, it is late (DEAD_LETTER_LAGS: dead-lettered by a
                # later receive); doomed before the drain, a drain receive had to move it.
                if m.id not in got:
                    out.append(m.id)
            elif m.status is Status.IN_FLIGHT and m.deadline is None:
                continue
            elif (
                m.status in (Status.VISIBLE, Status.IN_FLIGHT, Status.DELAYED)
                and m.id not in got
                and (not rules.config.fifo or m.id in reached)
            ):
                out.append(m.id)
    return tuple(sorted(out))


@functools.lru_cache(maxsize=256)
def _parsed_drain(parsed: Scenario) -> tuple[tuple[Op, ...], tuple[_DrainStep | None, ...]]:
    """The drain's ops, parsed, and their steps (cached: :func:`explain` judges one scenario
    many times)."""
    plan = _drain_plan(parsed)
    ops = with_drain(parsed).ops[len(parsed.ops) :] if plan else ()
    return tuple(ops), tuple(st for _, st in plan)


def _plan(parsed: Scenario, outputs: int) -> tuple[list[Op], list[_DrainStep | None], bool]:
    """The ops ``outputs`` answer (the scenario's, or with its drain) and each drain
    receive's step; whether the drain is there."""
    ops = list(parsed.ops)
    steps: list[_DrainStep | None] = [None] * len(ops)
    if outputs == len(ops):
        return ops, steps, False
    drain, drain_steps = _parsed_drain(parsed)
    if drain and outputs == len(ops) + len(drain):
        return ops + list(drain), steps + list(drain_steps), True
    with_plan = f" or {len(ops) + len(drain)} (with its drain)" if drain else ""
    raise ValueError(f"outputs: {outputs} outputs for {len(ops)} ops{with_plan}")


def judge(
    scenario: ScenarioLike,
    outputs: Sequence[Output],
    relaxations: Iterable[Relaxation] = (),
    *,
    budget: int = BUDGET,
    detail: bool = True,
) -> Verdict:
    """Decide whether ``outputs`` (one per op, as the harness writes them) are a behaviour of
    the spec relaxed by exactly ``relaxations``: a search over the set of states consistent
    with the outputs so far. Without ``detail`` a rejection leaves ``allowed`` and ``lost``
    empty (:func:`explain`'s subsets need only the answer).

    ``outputs`` answers the scenario's ops, or those and its :func:`drain_ops`; with the drain,
    the run is also rejected when a message is lost (see :func:`drain_ops`). Without it a
    message may still be lost: passed over by more short answers in a row than the
    relaxations allow (:attr:`Relaxation.passes`)."""
    parsed = _parse(scenario)
    relaxed = frozenset(relaxations)
    ops, steps, drained = _plan(parsed, len(outputs))
    cfg = _spec_config(parsed.config)
    passes = max((r.passes for r in relaxed), default=0)
    rules = _Rules(parsed.config, cfg, relaxed, passes)
    worlds: set[_World] = {_World((spec.initial(cfg, queue=0),), (frozenset(),), 0, 0.0)}
    lag = Relaxation.DEAD_LETTER_LAGS in relaxed
    fifo = parsed.config.fifo
    for i, (op, out, step) in enumerate(zip(ops, outputs, steps, strict=True)):
        if lag:
            worlds = _lag_closure(worlds, budget)
        after = {_sweep(rules, w2) for w in worlds for w2 in _successors(rules, w, op, out, step)}
        if not after:
            return Verdict(
                accepted=False,
                relaxations=relaxed,
                op_index=i,
                op=_op_json(op, fifo),
                observed=out,
                allowed=tuple(_allowed(rules, worlds, op)) if detail else (),
                lost=(
                    _passed_over(replace(rules, bounded=False), worlds, op, out, step)
                    if detail
                    else ()
                ),
            )
        if len(after) > budget:
            return Verdict(
                False, relaxed, op_index=i, op=_op_json(op, fifo), observed=out, exhausted=True
            )
        worlds = after
    if drained:
        left = [_unaccounted(rules, w) for w in worlds]
        if all(left):
            last = len(ops) - 1
            return Verdict(
                False,
                relaxed,
                op_index=last,
                op=_op_json(ops[last], fifo),
                observed=outputs[last],
                lost=min(left, key=lambda ids: (len(ids), ids)),
            )
    return Verdict(accepted=True, relaxations=relaxed)


def _passed_over(
    rules: _Rules, worlds: Iterable[_World], op: Op, out: object, step: _DrainStep | None
) -> tuple[str, ...]:
    """If a receive was rejected only for passing over messages too often (its successors
    with ``rules`` unbounded), the ids passed over too often; else nothing."""
    if not (isinstance(op, Invoke) and op.name in ("receive", "receive_batch")):
        return ()
    found: list[tuple[str, ...]] = []
    for w in worlds:
        for w2 in _successors(rules, w, op, out, step):
            found.append(tuple(sorted(id for id, c in w2.missed[w2.current] if c > 0)))
    return min(found, key=lambda ids: (len(ids), ids)) if found else ()


@dataclass(frozen=True, slots=True)
class Explanation:
    """The smallest sets of relaxations under which a run is accepted.

    ``sets`` holds every minimal set of the smallest size, in a fixed order: ``(frozenset(),)``
    when the run conforms to the spec itself, ``()`` when no set of relaxations explains it.
    ``strict`` is the strict verdict (where the run first departs from the spec); ``relaxed``
    the verdict under every relaxation tried (for an unexplained run: where even that fails).
    ``exhausted``: the sets whose search outgrew its budget (their answer is unknown), so the
    smallest sets may be smaller than ``sets`` says, and an "unexplained" may be explained:
    :attr:`no_verdict`, and :meth:`Profile.decides`.
    """

    sets: tuple[frozenset[Relaxation], ...]
    strict: Verdict
    relaxed: Verdict
    exhausted: tuple[frozenset[Relaxation], ...] = ()

    @property
    def conforms(self) -> bool:
        return self.sets == (frozenset(),)

    @property
    def unexplained(self) -> bool:
        return not self.sets

    @property
    def lost(self) -> bool:
        """Unexplained because a message was lost (the relaxed verdict names it)."""
        return self.unexplained and bool(self.relaxed.lost)

    @property
    def no_verdict(self) -> bool:
        """No set explains the run, but some search ran out of budget: no verdict."""
        return self.unexplained and bool(self.exhausted)

    @property
    def key(self) -> str:
        """A stable name: ``strict``, ``unexplained``, ``lost``, ``no verdict``, ``A``,
        ``A+B``, or alternatives ``A+B | C``."""
        if self.no_verdict:
            return NO_VERDICT
        if self.lost:
            return LOST
        if self.unexplained:
            return "unexplained"
        if self.conforms:
            return "strict"
        return " | ".join("+".join(r.name for r in RELAXATIONS if r in s) for s in self.sets)


#: The key of an explanation whose search ran out of budget (:attr:`Explanation.no_verdict`).
NO_VERDICT: Final = "no verdict"
#: The key of a run that lost a message (:attr:`Explanation.lost`).
LOST: Final = "lost"


def explain(
    scenario: ScenarioLike,
    outputs: Sequence[Output],
    relaxations: Sequence[Relaxation] = RELAXATIONS,
    *,
    budget: int = BUDGET,
) -> Explanation:
    """The smallest set(s) of ``relaxations`` under which :func:`judge` accepts ``outputs``,
    trying every subset by size; or unexplained.

    Each relaxation only adds behaviours, so a run that all of them together do not explain is
    unexplained at once, without trying the subsets.
    """
    parsed = _parse(scenario)
    strict = judge(parsed, outputs, (), budget=budget)
    if strict.accepted:
        return Explanation((frozenset(),), strict, strict)
    order = [r for r in RELAXATIONS if r in relaxations]
    everything = frozenset(order)
    relaxed = judge(parsed, outputs, order, budget=budget)
    if relaxed.exhausted:
        return Explanation((), strict, relaxed, (everything,))
    if not relaxed.accepted:
        return Explanation((), strict, relaxed)
    exhausted: list[frozenset[Relaxation]] = []
    for size in range(1, len(order) + 1):
        found = tuple(
            frozenset(c)
            for c in itertools.combinations(order, size)
            if _accepts(parsed, outputs, frozenset(c), budget, exhausted)
        )
        if found:
            return Explanation(found, strict, relaxed, tuple(exhausted))
    raise AssertionError("every relaxation together accepts, so some subset does")


def _accepts(
    parsed: Scenario,
    outputs: Sequence[Output],
    relaxed: frozenset[Relaxation],
    budget: int,
    exhausted: list[frozenset[Relaxation]],
) -> bool:
    """Whether :func:`judge` accepts under ``relaxed``; a search out of budget is recorded in
    ``exhausted`` and counts as not accepted."""
    v = judge(parsed, outputs, relaxed, budget=budget, detail=False)
    if v.exhausted:
        exhausted.append(relaxed)
    return v.accepted


# =============================================================================================
# shrink: delta debugging that keeps a divergence, re-running the endpoint
# =============================================================================================


def shrink(
    scenario: ScenarioLike,
    run: Callable[[Scenario], Sequence[Output]],
    keep: Callable[[Scenario, Sequence[Output]], bool],
    *,
    valid: Callable[[Scenario], bool] | None = None,
    max_runs: int = 600,
) -> Scenario:
    """A smaller scenario on which ``keep(scenario, run(scenario))`` still holds.

    Delta debugging (ddmin) of the ops, then of each batch's entries (and of a
    ``reserve_batch``'s ``n``): a candidate is kept when it parses, passes ``valid`` (e.g. the
    SQS profile's check) and ``keep`` holds on a fresh run of it. ``keep`` usually asks for the
    same explanation as the original run's. At most ``max_runs`` runs; the result is 1-minimal
    in its ops when the budget did not run out. ``ValueError`` if the scenario itself does not
    keep.
    """
    raw = to_json(_parse(scenario))
    runs = 0

    def test(ops: list[Any]) -> bool:
        nonlocal runs
        try:
            parsed = parse_scenario({**raw, "ops": ops})
        except ScenarioError:
            return False
        if valid is not None and not valid(parsed):
            return False
        if runs >= max_runs:
            return False
        runs += 1
        return keep(parsed, run(parsed))

    ops: list[Any] = list(raw["ops"])
    if not test(ops):
        raise ValueError("scenario: it does not show the divergence to keep")
    ops = _ddmin(ops, test)
    for i in range(len(ops)):
        op = ops[i]
        if op[0] in ("enqueue_batch", "ack_batch", "extend_batch"):
            entries = list(op[1])
            j = 0
            while len(entries) > 1 and j < len(entries):
                fewer = entries[:j] + entries[j + 1 :]
                if test([*ops[:i], [op[0], fewer, *op[2:]], *ops[i + 1 :]]):
                    entries = fewer
                    ops[i] = [op[0], fewer, *op[2:]]
                else:
                    j += 1
        elif op[0] == "reserve_batch":
            for n in range(1, op[1]):
                smaller = [op[0], n, *op[2:]]
                if test([*ops[:i], smaller, *ops[i + 1 :]]):
                    ops[i] = smaller
                    break
    return parse_scenario({**raw, "ops": ops})


def _ddmin(items: list[Any], test: Callable[[list[Any]], bool]) -> list[Any]:
    """Zeller's ddmin on complements: the smallest list found whose every one-item removal
    fails ``test`` (when the granularity reaches single items)."""
    n = 2
    while len(items) >= 2:
        size = math.ceil(len(items) / n)
        reduced = False
        for k in range(0, len(items), size):
            complement = items[:k] + items[k + size :]
            if test(complement):
                items = complement
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if n >= len(items):
                break
            n = min(n * 2, len(items))
    if len(items) == 1 and test([]):
        return []
    return items


# =============================================================================================
# Scenarios back to JSON
# =============================================================================================


def _num(t: object) -> int | float:
    """A time as JSON: whole numbers as integers."""
    assert isinstance(t, int | float) and not isinstance(t, bool)
    return int(t) if float(t).is_integer() else float(t)


def _opts(args: Sequence[object], fifo: bool) -> list[dict[str, Any]]:
    """The options object of a send (or batch entry), or nothing when it has none."""
    if fifo:
        opts: dict[str, Any] = {"group": args[3]}
        if args[4] is not None:
            opts["dedup"] = args[4]
        return [opts]
    return [] if args[2] is QUEUE_DEFAULT else [{"delay": _num(args[2])}]


def _op_json(op: Op, fifo: bool) -> list[Any]:
    """One parsed op as the harness writes it."""
    match op:
        case Dead():
            return ["dead"]
        case New():
            return ["new"]
        case Use(index):
            return ["use", index]
    assert isinstance(op, Invoke)
    h = REGISTRY[op.name].harness
    a = op.args
    match op.name:
        case "send":
            return [h, a[0], a[1], *_opts(a, fifo)]
        case "send_batch":
            return [h, [[e[0], e[1], *_opts(e, fifo)] for e in _seq(a[0])]]
        case "receive":
            return [h] if a[0] is QUEUE_DEFAULT else [h, None if a[0] is None else _num(a[0])]
        case "receive_batch":
            vt = a[1]
            return [h, a[0]] if vt is QUEUE_DEFAULT else [h, a[0], None if vt is None else _num(vt)]
        case "change_visibility":
            return [h, a[0], a[1], _num(a[2])]
        case "delete_batch":
            return [h, [[r[0], r[1]] for r in _seq(a[0])]]
        case "change_visibility_batch":
            return [h, [[c[0], c[1], _num(c[2])] for c in _seq(a[0])]]
        case "advance":
            return [h, _num(a[0])]
    return [h, *a]


def to_json(scenario: Scenario) -> dict[str, Any]:
    """A parsed scenario as the JSON object the harness reads (defaults left out), such that
    ``parse_scenario(to_json(s)) == s``."""
    c = scenario.config
    out: dict[str, Any] = {"capacity": c.capacity}
    if c.fifo:
        out["fifo"] = True
        if c.dedup_interval != DEDUP_INTERVAL:
            out["dedup_interval"] = _num(c.dedup_interval)
    if c.visibility_timeout is not None:
        out["visibility_timeout"] = _num(c.visibility_timeout)
    if c.max_receives is not None:
        out["max_receives"] = c.max_receives
    if c.delay != 0:
        out["delay"] = _num(c.delay)
    out["ops"] = [_op_json(op, c.fifo) for op in scenario.ops]
    return out


def json_line(scenario: ScenarioLike) -> str:
    """The scenario as one line for ``python -m model_tests.harness``."""
    obj = to_json(scenario) if isinstance(scenario, Scenario) else dict(scenario)
    return json.dumps(obj, separators=(",", ":"))
