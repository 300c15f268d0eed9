"""Broken endpoints for the conformance kit's own tests: the model with one fault each.

Each class is a :class:`model_tests.targets.ModelTarget` (so a :class:`~model_tests.targets.Target`)
that answers as the spec does except for one fault a queue user cares about most, a lost
message. Run them as any target: ``run_scenario(scenario, functools.partial(LosesMessage,
lose="m1"))``, or through :func:`model_tests.conformance.report.run_kit` with such a runner. No
profile may admit what they do (every message accepted must come out of the kit's drain):

- :class:`LosesMessage`: the send of one id answers as accepted and the message is never
  stored (nothing after it sees it: not a receive, not a purge's count, not the dead letters);
- :class:`NeverRedelivers`: a message whose visibility timeout runs out is dropped instead of
  released (never delivered again, never dead-lettered), like ``mutants.UnarmedDeadlineQueue``
  with its sweeper's view of the message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import spec
from model_tests.scenario_format import QueueConfig
from model_tests.targets import BatchEntry, Delay, ModelTarget, Sent


class LosesMessage(ModelTarget):
    """The spec, except that the message sent with id ``lose`` is accepted and dropped."""

    def __init__(self, config: QueueConfig, lose: str) -> None:
        super().__init__(config)
        self.lose = lose

    def send(
        self, id: str, body: str, delay: Delay, group: str | None = None, dedup: str | None = None
    ) -> Sent:
        if id == self.lose:
            return True
        return super().send(id, body, delay, group, dedup)

    def send_batch(self, entries: Sequence[BatchEntry]) -> bool | list[Sent]:
        kept = [e for e in entries if e[0] != self.lose]
        if len(kept) == len(entries):
            return super().send_batch(entries)
        result = super().send_batch(kept) if kept else True
        if not isinstance(result, list):
            return result
        # A FIFO batch answers per entry: the lost one as accepted, in its place.
        answers = iter(result)
        return [True if e[0] == self.lose else next(answers) for e in entries]


class NeverRedelivers(ModelTarget):
    """The spec, except that a message released at the end of its visibility timeout is
    dropped (out of every list, ``DONE``): it never comes back and is never dead-lettered."""

    def sweep_all(self) -> None:
        before = [frozenset(s.in_flight) for s in self.states]
        super().sweep_all()
        for i, (s, was) in enumerate(zip(self.states, before, strict=True)):
            for id in was:
                m = s.get(id)
                if m is not None and m.status is spec.Status.VISIBLE:
                    s, _ = spec.cancel(s, id)
                    dropped = s.get(id)
                    assert dropped is not None
                    s = s.with_msg(replace(dropped, status=spec.Status.DONE))
            self.states[i] = s
