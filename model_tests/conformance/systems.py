"""The conformance kit on a system of queues: dead-letter targets, retention, move tasks (contract
section 7).

``python -m model_tests.conformance.systems --endpoint moto|moto-server|impl|impl-fifo|URL
[--strict]`` runs :data:`SCENARIOS` (each probes one rule of docs/contract.md section 7, in the
harness's format with ``"dead_letter"``, ``"retention"`` and the redrive ops; each expressible
on SQS: whole seconds, retention >= 60 s, no ``aged``, no ``dead`` on queue 0) on the endpoint
and judges each run against the model (:mod:`spec.system` through
:class:`model_tests.targets.SystemModelTarget`, or :class:`~model_tests.targets.ModelTarget`
for a retention scenario without a target), op by op.

The scenarios are deterministic on the model (one message per group or per receive where
order could differ), so the judge is equality up to the first op where the endpoint's output
differs; the rest of a run is not judged (what follows depends on it). That first divergence
is then *named*: each :class:`Behaviour` is a known way an SQS endpoint departs from the
contract, with what AWS documents or what was measured (``docs/runs/moto-dlq.txt``, written by
:mod:`model_tests.conformance.measure_dlq`), and a test of the divergence's op, outputs and the
model's state at that op. A divergence no behaviour explains is ``unexplained``. The search
oracle of :mod:`model_tests.conformance.oracle` (one queue, relaxed by AWS's documented
licences) does not run these scenarios: it has no system of queues yet.

Exit status: 0 when every run conforms or diverges in a named way (``--strict``: only when
every run conforms, the check for ``--endpoint impl``), 1 otherwise, 2 for bad arguments or an
endpoint that is not local (:func:`model_tests.conformance.local.is_local`) without ``--yes``.
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from model_tests.scenario_format import (
    DLQ_INDEX,
    Invoke,
    Op,
    Redrive,
    RedriveCancel,
    RedriveStatus,
    Scenario,
    Use,
    parse_scenario,
)
from model_tests.targets import ModelTarget, Output, apply, model_target

if TYPE_CHECKING:
    from model_tests.conformance.sqs import SqsEndpoint

#: A standard queue 0 whose message dies at its first release (visibility 5 s) into queue 1.
_STD: Final[dict[str, Any]] = {
    "capacity": None,
    "visibility_timeout": 5,
    "max_receives": 1,
    "dead_letter": {},
}
_FIFO: Final[dict[str, Any]] = {**_STD, "fifo": True}
_G: Final = {"group": "g"}

#: The scenarios, by name: each probes one rule (its name says which).
SCENARIOS: Final[dict[str, dict[str, Any]]] = {
    "dead letter reaches queue 1 at the release": {
        **_STD,
        "ops": [["enqueue", "a", "A"], ["reserve"], ["advance", 5], ["use", 1], ["reserve"]],
    },
    "dead letter keeps id and receive count": {
        **_STD,
        "ops": [
            ["enqueue", "a", "A"],
            ["reserve"],
            ["advance", 5],
            ["reserve"],
            ["use", 1],
            ["reserve"],
            ["ack", "a", 2],
            ["reserve"],
        ],
    },
    "fifo dead letter keeps id, group and receive count": {
        **_FIFO,
        "ops": [
            ["enqueue", "a", "A", _G],
            ["reserve"],
            ["advance", 5],
            ["reserve"],
            ["use", 1],
            ["reserve"],
            ["ack", "a", 2],
        ],
    },
    "retention ages out a message": {
        "capacity": None,
        "visibility_timeout": 5,
        "retention": 60,
        "ops": [["enqueue", "a", "A"], ["advance", 59], ["reserve"], ["advance", 6], ["reserve"]],
    },
    "an aged-out message is no longer counted": {
        "capacity": None,
        "visibility_timeout": 5,
        "retention": 60,
        "ops": [["enqueue", "a", "A"], ["advance", 61], ["purge"]],
    },
    "an aged-out message does not hide a younger one": {
        "capacity": None,
        "visibility_timeout": 5,
        "retention": 60,
        "ops": [
            ["enqueue", "a", "A"],
            ["advance", 30],
            ["enqueue", "b", "B"],
            ["advance", 31],
            ["reserve"],
        ],
    },
    "standard dead-letter retention counts from the send": {
        **_STD,
        "dead_letter": {"retention": 60},
        "ops": [
            ["enqueue", "a", "A"],
            ["reserve"],
            ["advance", 5],
            ["reserve"],
            ["use", 1],
            ["advance", 50],
            ["reserve"],
            ["retry", "a", 2],
            ["advance", 6],
            ["reserve"],
        ],
    },
    "fifo dead-letter retention restarts at the move": {
        **_FIFO,
        "dead_letter": {"retention": 60},
        "ops": [
            ["enqueue", "a", "A", _G],
            ["reserve"],
            ["advance", 5],
            ["reserve"],
            ["use", 1],
            ["advance", 59],
            ["reserve"],
        ],
    },
    "redrive moves dead letters back as new messages": {
        **_STD,
        "ops": [
            ["enqueue", "a", "A"],
            ["reserve"],
            ["advance", 5],
            ["reserve"],
            ["redrive"],
            ["redrive_status"],
            ["reserve"],
        ],
    },
    "redrive at a rate, then cancel": {
        **_STD,
        "ops": [
            ["enqueue", "a", "A"],
            ["enqueue", "b", "B"],
            ["reserve"],
            ["reserve"],
            ["advance", 5],
            ["reserve"],
            ["redrive", {"rate": 1}],
            ["redrive_cancel"],
            ["redrive_status"],
        ],
    },
}


# -- the known behaviours ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class At:
    """A run's first divergence: the op (index and parsed), the model's output and the
    endpoint's, the model target just before the op, the current queue and the time then, and
    the scenario's ops and outputs before it."""

    index: int
    op: Op
    expected: Output
    got: Output
    model: ModelTarget
    queue: int
    now: float
    ops: tuple[Op, ...]
    outputs: tuple[Output, ...]


def _delivered_id(out: Output) -> str | None:
    if isinstance(out, list) and len(out) == 3 and isinstance(out[0], str):
        return out[0]
    return None


def _empty(out: Output) -> bool:
    return out is None or out == []


def _is_receive(op: Op) -> bool:
    return isinstance(op, Invoke) and op.name in ("receive", "receive_batch")


def _lags(at: At) -> bool:
    """A receive from queue 1 finds nothing where the model delivers a dead letter that died in
    queue 0 after queue 0's last receive (so no receive there could have moved it)."""
    id = _delivered_id(at.expected)
    if at.queue != DLQ_INDEX or not _is_receive(at.op) or not _empty(at.got) or id is None:
        return False
    source = at.model.states[0]
    if id not in source.dead:
        return False
    # The receives on queue 0 since it delivered the message: none found it.
    queue, last_delivery, receives_after = 0, -1, 0
    for i, (op, out) in enumerate(zip(at.ops, at.outputs, strict=True)):
        if isinstance(op, Use):
            queue = op.index
        elif queue == 0 and _is_receive(op):
            if _delivered_id(out) == id:
                last_delivery, receives_after = i, 0
            elif last_delivery >= 0:
                receives_after += 1
    return last_delivery >= 0 and receives_after == 0


def _counts_aged(at: At) -> bool:
    """A purge counts more than the model by at most the queue's aged-out messages."""
    if not (isinstance(at.op, Invoke) and at.op.name == "purge"):
        return False
    if not isinstance(at.expected, int) or not isinstance(at.got, int):
        return False
    aged = len(at.model.states[at.queue].aged_out)
    return at.expected < at.got <= at.expected + aged


def _stops_at_aged(at: At) -> bool:
    """A receive returns nothing although the model delivers, and the queue holds an aged-out
    message (the one that receive met first)."""
    return (
        _is_receive(at.op)
        and _empty(at.got)
        and not _empty(at.expected)
        and bool(at.model.states[at.queue].aged_out)
    )


def _fifo_enqueue_kept(at: At) -> bool:
    """A FIFO queue 1 returns nothing where the model delivers a dead letter whose *original*
    enqueue time (its send to queue 0) is older than queue 1's retention: aged out as if the
    move kept the timestamp."""
    id = _delivered_id(at.expected)
    dlq = at.model.states[DLQ_INDEX] if len(at.model.states) > DLQ_INDEX else None
    if dlq is None or not dlq.config.fifo or at.queue != DLQ_INDEX or id is None:
        return False
    retention = dlq.config.retention
    sent = at.model.states[0].get(id)
    return (
        _empty(at.got)
        and retention is not None
        and sent is not None
        and at.now >= sent.enqueued_at + retention
    )


def _unsupported(at: At) -> bool:
    return isinstance(at.op, Redrive | RedriveCancel | RedriveStatus) and at.got == "unsupported"


class Behaviour(enum.Enum):
    """A known way an SQS endpoint departs from the contract on a system of queues."""

    #: Dead-lettering at the next receive of the source, not at the release (known since the
    #: one-queue kit: the oracle's ``DEAD_LETTER_LAGS``).
    DEAD_LETTER_LAGS = "dead-letter-lags"
    #: A message past its retention is still counted (it is deleted lazily, if ever).
    RETENTION_LAZY = "retention-lazy"
    #: A receive that meets a message past its retention returns nothing at all.
    RETENTION_STOPS_RECEIVE = "retention-stops-receive"
    #: A move into a FIFO dead-letter queue keeps the enqueue timestamp (AWS resets it).
    FIFO_DLQ_ENQUEUE_KEPT = "fifo-dlq-enqueue-kept"
    #: StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask are not implemented.
    MOVE_TASKS_UNSUPPORTED = "move-tasks-unsupported"

    @property
    def meaning(self) -> str:
        return _MEANING[self][0]

    @property
    def source(self) -> str:
        """Where it comes from: an AWS page, or the recorded measurement."""
        return _MEANING[self][1]

    def explains(self, at: At) -> bool:
        return _TEST[self](at)


_MOTO: Final = "measured on moto 5.2.5: docs/runs/moto-dlq.txt"
_MEANING: Final[Mapping[Behaviour, tuple[str, str]]] = {
    Behaviour.DEAD_LETTER_LAGS: (
        "a message whose receives ran out moves to the dead-letter queue at a later receive of "
        "its source, not when its visibility timeout ends",
        "the one-queue kit's relaxation (oracle.Relaxation.DEAD_LETTER_LAGS, its AWS citation: "
        "'When the ReceiveCount for a message exceeds the maxReceiveCount for a queue, Amazon "
        f"SQS moves the message to the dead-letter-queue.'); {_MOTO} (lines 'dead-letter ...')",
    ),
    Behaviour.RETENTION_LAZY: (
        "a message past MessageRetentionPeriod stays counted in the queue's attributes until a "
        "receive meets it",
        f"{_MOTO} (lines 'retention: 60 s after sending ...', '1000 s more ...')",
    ),
    Behaviour.RETENTION_STOPS_RECEIVE: (
        "a receive that meets a message past its retention returns nothing, even when younger "
        "messages are visible (the expired one is hidden and its receive count rises)",
        f"{_MOTO} (lines 'retention: receive up to 10 ...')",
    ),
    Behaviour.FIFO_DLQ_ENQUEUE_KEPT: (
        "a message moved into a FIFO dead-letter queue keeps its original enqueue timestamp, so "
        "it ages out of the DLQ by its first send (AWS: 'the enqueue timestamp resets when the "
        "message is moved to a dead-letter queue' for FIFO queues)",
        f"{_MOTO} (lines 'retention in dlq fifo ...'); AWS: https://docs.aws.amazon.com/"
        "AWSSimpleQueueService/latest/SQSDeveloperGuide/setting-up-dead-letter-queue-"
        "retention.html",
    ),
    Behaviour.MOVE_TASKS_UNSUPPORTED: (
        "the move-task calls fail: no redrive at all",
        f"{_MOTO} (lines 'move tasks: ...': NotImplementedError)",
    ),
}
_TEST: Final[Mapping[Behaviour, Callable[[At], bool]]] = {
    Behaviour.DEAD_LETTER_LAGS: _lags,
    Behaviour.RETENTION_LAZY: _counts_aged,
    Behaviour.RETENTION_STOPS_RECEIVE: _stops_at_aged,
    Behaviour.FIFO_DLQ_ENQUEUE_KEPT: _fifo_enqueue_kept,
    Behaviour.MOVE_TASKS_UNSUPPORTED: _unsupported,
}


# -- the judge ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    """A run's verdict: it conforms (``at`` is ``None``), or its first divergence and the
    behaviours that explain it (none: unexplained)."""

    name: str
    expected: tuple[Output, ...]
    got: tuple[Output, ...]
    at: At | None = None
    explained_by: tuple[Behaviour, ...] = ()

    @property
    def conforms(self) -> bool:
        return self.at is None

    @property
    def unexplained(self) -> bool:
        return self.at is not None and not self.explained_by

    def __str__(self) -> str:
        if self.at is None:
            return f"conforms: {self.name}"
        word = ", ".join(b.value for b in self.explained_by) or "unexplained"
        op = json.dumps(SCENARIOS.get(self.name, {}).get("ops", [None] * 99)[self.at.index])
        return (
            f"diverges ({word}): {self.name}: op {self.at.index} {op}: model "
            f"{json.dumps(self.at.expected)}, endpoint {json.dumps(self.at.got)}"
        )


def judge(name: str, scenario: Scenario | Mapping[str, Any], got: Sequence[Output]) -> Verdict:
    """The verdict on the endpoint's outputs ``got`` of ``scenario``: the model is run op by op
    beside them (so each op's model state is at hand to name a divergence)."""
    parsed = scenario if isinstance(scenario, Scenario) else parse_scenario(scenario)
    model = model_target(parsed.config)
    expected: list[Output] = []
    first: At | None = None
    for i, op in enumerate(parsed.ops):
        if first is None and i < len(got):
            snapshot = _copy(model)
        out = apply(model, op)
        expected.append(out)
        if first is None and (i >= len(got) or not _same(op, out, got[i])):
            first = At(
                i,
                op,
                out,
                got[i] if i < len(got) else None,
                snapshot,
                snapshot.current,
                snapshot.now,
                parsed.ops[:i],
                tuple(got[:i]),
            )
    if first is None:
        return Verdict(name, tuple(expected), tuple(got))
    named = tuple(b for b in Behaviour if b.explains(first))
    return Verdict(name, tuple(expected), tuple(got), first, named)


def _same(op: Op, expected: Output, got: Output) -> bool:
    """Whether the endpoint's output of ``op`` is the model's. A ``redrive_status`` from SQS
    has no count of skipped messages (the kit gives ``null`` there, :meth:`model_tests.
    conformance.sqs.SqsTarget.redrive_status`): that count is not compared."""
    if (
        isinstance(op, RedriveStatus)
        and isinstance(expected, list)
        and isinstance(got, list)
        and len(expected) == len(got) == 4
        and got[2] is None
    ):
        return [*got[:2], got[3]] == [*expected[:2], expected[3]]
    return got == expected


def _copy(model: ModelTarget) -> ModelTarget:
    """A copy of the model target that later ops do not change (its states are values)."""
    import copy

    clone = copy.copy(model)
    clone.states = list(model.states)
    return clone


# -- running on an endpoint ----------------------------------------------------------------------


@contextmanager
def runner(endpoint: str | SqsEndpoint) -> Iterator[Callable[[Mapping[str, Any]], list[Output]]]:
    """A function running a scenario on ``endpoint``: ``impl`` (``impl-fifo`` is the same
    here: a scenario says its kind), moto, moto-server, a URL, or an endpoint already open."""
    from model_tests.conformance.sqs import open_endpoint, run_on_sqs
    from model_tests.targets import run_scenario

    if isinstance(endpoint, str) and endpoint in ("impl", "impl-fifo"):
        yield lambda s: run_scenario(s, "impl")
    elif isinstance(endpoint, str):
        with open_endpoint(endpoint) as opened:
            yield lambda s: run_on_sqs(s, opened)
    else:
        yield lambda s: run_on_sqs(s, endpoint)


def run(endpoint: str | SqsEndpoint, names: Sequence[str] | None = None) -> list[Verdict]:
    """The verdicts of :data:`SCENARIOS` (or those named) on ``endpoint``."""
    chosen = list(SCENARIOS) if names is None else list(names)
    with runner(endpoint) as go:
        return [judge(n, SCENARIOS[n], go(SCENARIOS[n])) for n in chosen]


def report(endpoint: str, verdicts: Sequence[Verdict]) -> list[str]:
    """The lines the CLI prints: one per scenario, then the behaviours seen, then a count."""
    lines = [str(v) for v in verdicts]
    seen = sorted({b for v in verdicts for b in v.explained_by}, key=lambda b: b.value)
    for b in seen:
        lines.append(f"  {b.value}: {b.meaning} [{b.source}]")
    conform = sum(v.conforms for v in verdicts)
    unexplained = sum(v.unexplained for v in verdicts)
    lines.append(
        f"{endpoint}: {len(verdicts)} scenarios, {conform} conform, "
        f"{len(verdicts) - conform - unexplained} diverge in a named way, {unexplained} unexplained"
    )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m model_tests.conformance.systems",
        description="Judge an endpoint's dead-letter queues, retention and move tasks.",
    )
    parser.add_argument("--endpoint", required=True, help="impl, moto, moto-server or a URL")
    parser.add_argument(
        "--strict", action="store_true", help="fail on any divergence, named or not"
    )
    parser.add_argument(
        "--yes",
        action="store_true",
        help="run on an endpoint that is not local (it creates, bills and deletes kit-* queues)",
    )
    args = parser.parse_args(argv)
    from model_tests.conformance.local import is_local

    if not is_local(args.endpoint) and not args.yes:
        print(
            f"{args.endpoint} is not local: its queues (kit-*) and requests are real; "
            "give --yes to run there",
            file=sys.stderr,
        )
        return 2
    verdicts = run(args.endpoint)
    for line in report(args.endpoint, verdicts):
        print(line)
    bad = [v for v in verdicts if (not v.conforms if args.strict else v.unexplained)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
