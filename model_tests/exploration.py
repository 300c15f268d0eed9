"""The exploration engine both explorers share: a schedule's decisions, a search over schedules
with a preemption bound, and replay strings.

A *backend* runs a program once under a *strategy* and records a :class:`Run`: the choice made
at each *decision point* (where more than one step was possible) with what each alternative
would have cost in preemptions. Two backends use this module:

- the thread backend, :mod:`model_tests.schedule.explore`: the real threaded queue under the
  controlled scheduler; a choice is ``(thread index, interrupt?)``;
- the event-loop backend, :mod:`model_tests.aio.explore`: the asyncio queue on a deterministic
  event loop; a choice is ``(kind, argument)``: run ready callback k, cancel task i, advance
  the clock, end.

What they share, and what lives here: :class:`Decision`, :class:`Failure`, :class:`Run`,
:class:`Level`, :class:`Result`, the strategy :func:`forced` (replay a prefix of choices, then
run without preemption), :func:`search` (iterative context bounding, as CHESS: every schedule
with at most ``k`` preemptions for k = 0, 1, ..., each run once, those with one preemption
more started from the decision points the level below recorded, so the first failure found has
the fewest preemptions), and :func:`encode` / :func:`decode` (a schedule as
``program:queue:choices``, runs of one choice as ``c*n``, separated by ``.``). A backend
supplies the run, the choice type and how a choice is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

C = TypeVar("C")
P = TypeVar("P")
S = TypeVar("S")
E = TypeVar("E")
H = TypeVar("H")
R = TypeVar("R", bound="Run[Any, Any, Any, Any, Any]")


@dataclass(frozen=True)
class Decision(Generic[C]):
    """A decision point of a run: the alternatives, their preemption costs, the choice."""

    options: tuple[C, ...]
    costs: tuple[int, ...]
    chosen: C


@dataclass(frozen=True)
class Failure:
    """What is wrong with one schedule: ``kind`` (LOST WAKEUP, an invariant's name, ...) and a
    readable message."""

    kind: str
    message: str


@dataclass
class Run(Generic[P, C, S, E, H]):
    """One run of a program under one schedule, and its verdict: the decisions made, the steps
    as printed, the events, the history of calls and returns."""

    program: P
    mutant: str
    decisions: list[Decision[C]]
    steps: list[S]
    events: list[E]
    history: list[H]
    failure: Failure | None = None

    @property
    def choices(self) -> list[C]:
        return [d.chosen for d in self.decisions]

    @property
    def preemptions(self) -> int:
        return sum(d.costs[d.options.index(d.chosen)] for d in self.decisions)


@dataclass
class Level:
    """What one preemption bound explored: schedules, seconds."""

    bound: int
    schedules: int = 0
    seconds: float = 0.0


@dataclass
class Result(Generic[P, R]):
    """What a search found: the levels explored and the failing run, if any."""

    program: P
    mutant: str
    levels: list[Level] = field(default_factory=list)
    failure: R | None = None
    complete: bool = True  # every schedule up to the last level's bound was explored

    @property
    def schedules(self) -> int:
        return sum(lv.schedules for lv in self.levels)

    @property
    def seconds(self) -> float:
        return sum(lv.seconds for lv in self.levels)


#: Picks a choice from the options (with their costs), given the default (no preemption).
Strategy = Callable[[list[C], list[int], C], C]


def forced(prefix: Sequence[C], show: Callable[[C], object] = lambda c: c) -> Strategy[C]:
    """Follow ``prefix`` at the first decision points, then the default (no preemption);
    ``ValueError`` if a choice of ``prefix`` is not among the options (``show`` writes a
    choice in that message)."""
    at = [0]

    def choose(options: list[C], costs: list[int], default: C) -> C:
        i = at[0]
        at[0] += 1
        if i < len(prefix):
            if prefix[i] not in options:
                raise ValueError(
                    f"schedule does not replay: decision {i} wants {show(prefix[i])}, "
                    f"the options are {[show(o) for o in options]}"
                )
            return prefix[i]
        return default

    return choose


def search(
    result: Result[P, R],
    run_prefix: Callable[[list[C]], R],
    k_max: int,
    *,
    stop: bool = True,
    minimal: bool = False,
    smaller: Callable[[R, R], bool] | None = None,
    max_schedules: int | None = None,
) -> Result[P, R]:
    """Every schedule with at most ``k_max`` preemptions, fewest first, into ``result``:
    ``run_prefix(prefix)`` runs one schedule that follows ``prefix`` and then the default.

    The failing run kept is the first found, or with ``smaller`` the smallest by it. With
    ``stop``, stop at the level of the first failure: at once, or (``minimal``) after that
    level. ``max_schedules`` bounds the runs (the result is then not ``complete``)."""
    frontier: list[list[C]] = [[]]
    runs = 0
    for k in range(k_max + 1):
        level = Level(k)
        result.levels.append(level)
        began = time.perf_counter()
        stack, frontier = frontier, []
        while stack:
            if max_schedules is not None and runs >= max_schedules:
                result.complete = False
                level.seconds += time.perf_counter() - began
                return result
            prefix = stack.pop()
            run = run_prefix(prefix)
            runs += 1
            level.schedules += 1
            if run.failure is not None and (
                result.failure is None or (smaller is not None and smaller(run, result.failure))
            ):
                result.failure = run
                if stop and not minimal:
                    level.seconds += time.perf_counter() - began
                    return result
            _branch(run, prefix, k, stack, frontier)
        level.seconds += time.perf_counter() - began
        if (stop and result.failure is not None) or not frontier:
            break
    return result


def _branch(
    run: Run[Any, C, Any, Any, Any],
    prefix: list[C],
    k: int,
    stack: list[list[C]],
    frontier: list[list[C]],
) -> None:
    """The schedules that branch off ``run`` after ``prefix``: those within ``k`` preemptions
    onto ``stack`` (this level), those with one more onto ``frontier`` (the next)."""
    decisions = run.decisions
    choices = run.choices
    spent = 0
    for i, d in enumerate(decisions):
        if i >= len(prefix):
            for alt, cost in zip(d.options, d.costs, strict=True):
                if alt == d.chosen:
                    continue
                total = spent + cost
                branch = [*choices[:i], alt]
                if total <= k:
                    stack.append(branch)
                elif total == k + 1:
                    frontier.append(branch)
        spent += d.costs[d.options.index(d.chosen)]


def encode(name: str, mutant: str, choices: Sequence[C], token: Callable[[C], str]) -> str:
    """``name:mutant:choices``, each choice as ``token`` writes it, runs of one choice as
    ``c*n``, separated by ``.``: what :func:`decode` reads back."""
    parts: list[str] = []
    i = 0
    while i < len(choices):
        j = i
        while j < len(choices) and choices[j] == choices[i]:
            j += 1
        c = token(choices[i])
        parts.append(c if j - i == 1 else f"{c}*{j - i}")
        i = j
    return f"{name}:{mutant}:{'.'.join(parts)}"


def decode(text: str, parse: Callable[[str], C], what: str = "queue") -> tuple[str, str, list[C]]:
    """``(program, mutant, choices)`` from a replay string, each choice read by ``parse``;
    ``ValueError`` if malformed (``what`` names the middle part in the message)."""
    try:
        program, mutant, body = text.strip().split(":")
    except ValueError:
        raise ValueError(f"replay must be program:{what}:choices, got {text!r}") from None
    choices: list[C] = []
    for part in filter(None, body.split(".")):
        c, _, n = part.partition("*")
        try:
            count = int(n) if n else 1
            choice = parse(c)
        except ValueError:
            raise ValueError(f"replay: bad choice {part!r} in {text!r}") from None
        choices.extend([choice] * count)
    return program, mutant, choices
