"""What a run of the kit will do to an SQS endpoint, said before it does it.

:func:`requests` is an upper bound on the SQS requests one scenario makes through
:class:`model_tests.conformance.sqs.SqsTarget` (its queues created and deleted included), read
from the scenario's ops and the op mapping of :mod:`model_tests.conformance.sqs`:

- each queue (the first, and one per ``new``): ``CreateQueue`` and ``DeleteQueue``; with
  ``max_receives`` its dead-letter queue too, and a ``GetQueueAttributes`` for its ARN;
- a send, receive, delete, visibility change or retry, single or batch: one request at most
  (none for a receipt the kit never saw); ``advance``, ``new`` and ``use``: none beyond the
  queue's; ``purge``: two (the count, then ``PurgeQueue``);
- ``dead`` with a dead-letter queue: one ``ReceiveMessage`` that finds it empty, plus a
  ``ReceiveMessage`` and a ``DeleteMessageBatch`` per round that finds messages; each round
  takes at least one of the scenario's messages out for good, so all the ``dead`` of a scenario
  make at most two requests per message it sends, beyond their one each.

:func:`plan` adds them up for a run and says how many queues it creates; a finding's reruns
(shrinking) run its scenario's sub-scenarios, none costlier than the scenario itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from model_tests.scenario_format import Dead, Invoke, New, Scenario

#: Requests of each op of the target (the registry's names), at most.
OP_REQUESTS: Final = {
    "send": 1,
    "send_batch": 1,
    "receive": 1,
    "receive_batch": 1,
    "delete": 1,
    "delete_batch": 1,
    "retry": 1,
    "change_visibility": 1,
    "change_visibility_batch": 1,
    "purge": 2,
    "advance": 0,
    "cancel": 0,
    "expire": 0,
}
#: What an op missing from :data:`OP_REQUESTS` is counted as (a test keeps the table complete).
UNKNOWN_OP: Final = 1


def queues(scenario: Scenario) -> int:
    """How many SQS queues ``scenario`` creates (and deletes): each harness queue, and its
    dead-letter queue with ``max_receives``."""
    harness = 1 + sum(isinstance(op, New) for op in scenario.ops)
    return harness * (2 if scenario.config.max_receives is not None else 1)


def _sent(op: Invoke) -> int:
    if op.name == "send":
        return 1
    if op.name == "send_batch":
        entries = op.args[0]
        return len(entries) if isinstance(entries, tuple | list) else 0
    return 0


def requests(scenario: Scenario) -> int:
    """An upper bound on the SQS requests of one run of ``scenario`` (see the module
    docstring)."""
    dlq = scenario.config.max_receives is not None
    harness = 1 + sum(isinstance(op, New) for op in scenario.ops)
    total = harness * (2 + (3 if dlq else 0))
    sent = 0
    deads = 0
    for op in scenario.ops:
        if isinstance(op, Invoke):
            total += OP_REQUESTS.get(op.name, UNKNOWN_OP)
            sent += _sent(op)
        elif isinstance(op, Dead):
            deads += 1
    if dlq and deads:
        total += deads + 2 * sent
    return total


@dataclass(frozen=True, slots=True)
class Plan:
    """What a run makes: ``scenarios`` runs creating ``queues`` queues in all (``dead_letter``
    of them dead-letter queues) and making at most ``requests`` requests; then, per behaviour
    found (at most one per divergent scenario), at most ``reruns`` runs of a scenario of at
    most ``costliest`` requests (shrinking it)."""

    scenarios: int
    queues: int
    dead_letter: int
    requests: int
    costliest: int
    reruns: int

    def lines(self, prefix: str, fifo: bool) -> list[str]:
        """The plan as the CLI prints it, queue names under ``prefix`` (``kit-<8 hex>``)."""
        suffix = ".fifo" if fifo else ""
        dlq = (
            f" ({self.dead_letter} of them dead-letter queues, {prefix}<4 hex>-<n>-dlq{suffix})"
            if self.dead_letter
            else ""
        )
        return [
            f"queues: it creates and deletes {self.queues} queues, named {prefix}<4 hex>-<n>"
            f"{suffix}{dlq}, one scenario's at a time: each is deleted when its scenario ends, "
            "and any left when the run ends",
            f"requests: at most {self.requests} for the {self.scenarios} scenarios, plus 1 "
            f"(STS) before; then, per behaviour found (at most one per divergent scenario), "
            f"up to {self.reruns} runs of a scenario of at most {self.costliest} requests",
        ]


def plan(scenarios: Sequence[Scenario], reruns: int) -> Plan:
    """The :class:`Plan` of running ``scenarios``, each behaviour found re-run up to ``reruns``
    times."""
    costs = [requests(s) for s in scenarios]
    total = sum(queues(s) for s in scenarios)
    harness = sum(1 + sum(isinstance(op, New) for op in s.ops) for s in scenarios)
    return Plan(
        scenarios=len(scenarios),
        queues=total,
        dead_letter=total - harness,
        requests=sum(costs),
        costliest=max(costs, default=0),
        reruns=reruns,
    )
