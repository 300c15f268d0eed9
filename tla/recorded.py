"""Trace validation of a recorded run: every queue an SQS endpoint served, checked by TLC.

``python -m sqs_endpoint --record DIR`` (``sqs_endpoint.serve(record=DIR)``) records the trace of
every
queue it serves; ``python -m tla.recorded DIR`` checks each against the TLA+ spec, so a user's
own test session against the endpoint can be validated. This module is both halves: the
:class:`Recorder` the endpoint writes with, and the checker.

THE RECORDING. A :class:`Recorder` writes one file per endpoint run, ``DIR/<pid>-<8 hex>.jsonl``
(several endpoints may record into one directory), one JSON object a line, written as it
happens (line-buffered, so a killed endpoint leaves what it recorded):

  ``{"kind": "run", "version": 1, "start": T}``        first: the clock's reading at the start
  ``{"kind": "queue", "key": K, "name": N, "fifo": b, "capacity": c, "max_receives": k,
  "dead_letter": K2, "retention": r, "dedup_interval": d}``  a queue created (or created again
                                                       after a delete: a new key); ``dead_letter``
                                                       is its target's key or null
  ``{"kind": "step", "queue": K, "step": [action, args, result, now]}``  one transition, as
                                                       ``BaseQueue.record_trace`` passes it
                                                       (tuples as JSON arrays)
  ``{"kind": "deleted", "queue": K}``                  the queue was deleted
  ``{"kind": "end"}``                                  the recorder was closed

A key is the queue's name and its incarnation (``orders.1``, ``orders.2`` after a delete and a
create). The endpoint's hook (the Service's): ``Recorder(DIR, start=clock.now())`` when it
starts; for each queue it creates, ``q.record_trace(recorder.queue(name, fifo=...,
max_receives=..., dead_letter=target_name, retention=..., dedup_interval=...))`` before the
queue's first operation; ``recorder.deleted(name)`` when a queue is deleted;
``recorder.close()`` when it stops. A sink never raises (a write that fails stops the
recording and is reported when the recorder closes): the endpoint's operations are never vetoed
by the recording.

THE CHECK (:func:`check_directory`). The queues of one file form systems linked by their
dead-letter targets. A queue nothing moves into (not a dead-letter target, its target running
no redrive, no retention timer fired) is checked alone with ``tla.trace.check_trace``, against
``tla/Queue.tla`` (``tla/QueueFifo.tla`` for a FIFO queue): its dead-letter moves are Queue's
dead-lettering after ``max_receives``. A system with a target (two queues or more) is checked
as a whole with ``tla.system_trace.check_system_trace`` against ``tla/QueueSystem.tla`` when it
can be: standard queues, no batch, no purge (QueueSystem leaves those to Queue.tla). Otherwise
its sources are checked alone as above and the queues things move into are reported "not
checked", with why. A time must be a whole number of clock units after the start (record on the
fake clock and ``advance`` by whole seconds); a run on the real clock is "not checked". Strings
the TLA+ writer cannot quote (a FIFO group or dedup id with punctuation) are renamed, one name
each, which changes no comparison.

Exit status of ``python -m tla.recorded DIR``: 0 when every queue checked was accepted (and,
with ``--all``, every queue was checked), 1 when one was rejected (or, with ``--all``, one was
not checked), 2 when nothing could be read or TLC cannot run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from tla.system_trace import NotModelled, QueueConfig, SystemConfig, Tagged, check_system_trace
from tla.trace import (
    Fifo,
    Step,
    TraceCheckError,
    TraceError,
    Verdict,
    render_config,
    render_module,
    run_inverted,
    to_events,
)

#: The recording format's version (the ``run`` line's ``version``).
VERSION: Final = 1
#: What ``tla.trace.tla_value`` can quote as a TLA+ string.
_SAFE: Final = re.compile(r"[A-Za-z0-9_.:-]*")
#: The modules a lone queue's check needs (``tla/TraceQueueMatched.tla`` says why not
#: ``TraceQueue.tla``'s own ``TraceNext``), standard and FIFO.
_MODULES: Final = ("Queue.tla", "TraceQueue.tla", "TraceQueueMatched.tla")
_FIFO_MODULES: Final = (
    "Queue.tla",
    "QueueFifo.tla",
    "TraceQueueFifo.tla",
    "TraceQueueFifoMatched.tla",
)
#: Steps that only ``QueueSystem.tla`` models.
_SYSTEM_ONLY: Final = frozenset({"age_out", "redrive"})
#: Steps ``QueueSystem.tla`` leaves to ``Queue.tla``.
_NOT_IN_SYSTEM: Final = frozenset(
    {"send_batch", "receive_batch", "delete_batch", "change_visibility_batch", "purge"}
)


class RecordingError(ValueError):
    """A recording that cannot be read (its file and line are in the text)."""


# -- recording ----------------------------------------------------------------------------------


class Recorder:
    """Writes one endpoint run's queues and steps into ``directory`` (the module docstring)."""

    def __init__(self, directory: Path | str, *, start: float = 0.0) -> None:
        if isinstance(start, bool) or not isinstance(start, int | float):
            raise TypeError(f"start must be the clock's reading, got {type(start).__name__}")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
        self._file: IO[str] | None = self.path.open("x", buffering=1, encoding="utf-8")
        self._lock = threading.Lock()
        self._incarnations: dict[str, int] = {}
        self._live: dict[str, str] = {}
        #: The first write that failed (the recording stopped there), if any.
        self.error: BaseException | None = None
        self._write({"kind": "run", "version": VERSION, "start": start})

    def _write(self, record: dict[str, Any]) -> None:
        # Called inside a queue's critical section: never raises; a failure stops recording.
        with self._lock:
            if self._file is None:
                return
            try:
                self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
            except (OSError, TypeError, ValueError) as e:
                self.error = e
                self._file.close()
                self._file = None

    def queue(
        self,
        name: str,
        *,
        fifo: bool = False,
        capacity: int | None = None,
        max_receives: int | None = None,
        dead_letter: str | None = None,
        retention: float | None = None,
        dedup_interval: float | None = None,
    ) -> Callable[[Step], None]:
        """Record a queue created now; the sink to give its ``record_trace``. ``dead_letter``:
        the name of its target (a queue recorded before it)."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be the queue's name, got {name!r}")
        if dead_letter is not None and dead_letter not in self._live:
            raise ValueError(f"dead_letter: no queue named {dead_letter!r} is recorded")
        with self._lock:
            n = self._incarnations[name] = self._incarnations.get(name, 0) + 1
            key = self._live[name] = f"{name}.{n}"
        self._write(
            {
                "kind": "queue",
                "key": key,
                "name": name,
                "fifo": bool(fifo),
                "capacity": capacity,
                "max_receives": max_receives,
                "dead_letter": None if dead_letter is None else self._live[dead_letter],
                "retention": retention,
                "dedup_interval": dedup_interval,
            }
        )

        def sink(step: Step) -> None:
            self._write({"kind": "step", "queue": key, "step": list(step)})

        return sink

    def deleted(self, name: str) -> None:
        """Record that the queue ``name`` was deleted (a queue created again is a new one)."""
        key = self._live.pop(name, None)
        if key is not None:
            self._write({"kind": "deleted", "queue": key})

    def close(self) -> None:
        """End the recording; raise the write error that stopped it early, if one did."""
        self._write({"kind": "end"})
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
        if self.error is not None:
            raise RecordingError(f"{self.path}: the recording stopped early: {self.error}")


# -- reading ------------------------------------------------------------------------------------


@dataclass
class RecordedQueue:
    """One queue of a recorded run and its steps, in the order recorded."""

    key: str
    name: str
    fifo: bool = False
    capacity: int | None = None
    max_receives: int | None = None
    dead_letter: str | None = None
    retention: float | None = None
    dedup_interval: float | None = None
    steps: list[Step] = field(default_factory=list)


@dataclass
class RecordedRun:
    """One file of a recording directory."""

    path: Path
    start: float
    queues: dict[str, RecordedQueue]
    #: Every step of the run, tagged with its queue's key, in the order recorded.
    steps: list[Tagged]
    #: Whether the recorder was closed (else the endpoint stopped without closing it).
    ended: bool


def _tuples(x: Any) -> Any:
    """JSON arrays back into the tuples ``record_trace`` passed."""
    if isinstance(x, list):
        return tuple(_tuples(v) for v in x)
    return x


def read_run(path: Path) -> RecordedRun:
    """The run recorded in ``path``; :class:`RecordingError` names the line that is wrong."""
    queues: dict[str, RecordedQueue] = {}
    steps: list[Tagged] = []
    start: float | None = None
    ended = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path} line {number}"
        try:
            record = json.loads(line)
            kind = record["kind"]
            if start is None:
                if kind != "run" or record.get("version") != VERSION:
                    raise RecordingError(f"{where}: not a recording of version {VERSION}")
                start = float(record["start"])
            elif kind == "queue":
                fields = {k: record[k] for k in RecordedQueue.__dataclass_fields__ if k in record}
                fields.pop("steps", None)
                queues[record["key"]] = RecordedQueue(**fields)
            elif kind == "step":
                action, args, result, now = _tuples(record["step"])
                step: Step = (str(action), tuple(args), result, float(now))
                queues[record["queue"]].steps.append(step)
                steps.append((record["queue"], step))
            elif kind == "end":
                ended = True
            elif kind != "deleted":
                raise RecordingError(f"{where}: unknown kind {kind!r}")
        except RecordingError:
            raise
        except (ValueError, KeyError, TypeError) as e:
            raise RecordingError(f"{where}: {type(e).__name__}: {e}") from e
    if start is None:
        raise RecordingError(f"{path}: empty: no run was recorded")
    return RecordedRun(path, start, queues, steps, ended)


# -- checking -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checked:
    """The verdict on some queues of a run: ``"accepted"``, ``"rejected"`` or ``"not checked"``;
    ``detail`` says against what, where it was rejected, or why it was not checked."""

    path: Path
    queues: tuple[str, ...]
    status: str
    detail: str

    def __str__(self) -> str:
        return f"{self.status}: {', '.join(self.queues)} ({self.path.name}): {self.detail}"


class _Names:
    """Safe TLA+ names for the strings of a trace that ``tla_value`` cannot quote."""

    def __init__(self) -> None:
        self._aliases: dict[str, str] = {}

    def __call__(self, x: object) -> object:
        if isinstance(x, str) and not _SAFE.fullmatch(x):
            return self._aliases.setdefault(x, f"s_{len(self._aliases)}")
        if isinstance(x, tuple):
            return tuple(self(v) for v in x)
        return x

    def step(self, step: Step) -> Step:
        action, args, result, now = step
        safe_args = self(args)
        assert isinstance(safe_args, tuple)
        return (action, safe_args, self(result), now)


def _components(run: RecordedRun) -> list[list[RecordedQueue]]:
    """The systems of the run: queues linked by a dead-letter target, in creation order."""
    parent = {k: k for k in run.queues}

    def root(k: str) -> str:
        while parent[k] != k:
            k = parent[k]
        return k

    for q in run.queues.values():
        if q.dead_letter is not None and q.dead_letter in parent:
            parent[root(q.key)] = root(q.dead_letter)
    groups: dict[str, list[RecordedQueue]] = {}
    for q in run.queues.values():
        groups.setdefault(root(q.key), []).append(q)
    return list(groups.values())


def _moved_into(system: Sequence[RecordedQueue]) -> set[str]:
    """The keys of the queues something moves into: dead-letter targets, and the sources of a
    target that runs a redrive (a redrive step names no destination: its source is assumed)."""
    targets = {q.dead_letter for q in system if q.dead_letter is not None}
    redriving = {q.key for q in system if any(s[0] == "redrive" for s in q.steps)}
    sources = {q.key for q in system if q.dead_letter in redriving}
    return {k for k in targets if k is not None} | sources


def _units(x: float | None, what: str) -> int | None:
    if x is None:
        return None
    if x != int(x):
        raise TraceError(f"{what} {x!r} is not a whole number of clock units")
    return int(x)


def _check_alone(run: RecordedRun, q: RecordedQueue, timeout: float) -> Checked:
    fired = sorted({s[0] for s in q.steps} & _SYSTEM_ONLY)
    if fired:
        return Checked(
            run.path,
            (q.key,),
            "not checked",
            f"{', '.join(fired)} steps: only QueueSystem.tla models them, and it needs a "
            "dead-letter target",
        )
    names = _Names()
    model = "QueueFifo.tla" if q.fifo else "Queue.tla"
    try:
        fifo = None
        if q.fifo:
            interval = _units(q.dedup_interval if q.dedup_interval is not None else 300, "dedup")
            fifo = Fifo(interval or 0)
        verdict = check_matched(
            [names.step(s) for s in q.steps],
            capacity=q.capacity,
            max_receives=q.max_receives,
            start=run.start,
            timeout=timeout,
            fifo=fifo,
        )
    except TraceError as e:
        return Checked(run.path, (q.key,), "not checked", f"{e} (record on the fake clock)")
    status = "accepted" if verdict.accepted else "rejected"
    return Checked(run.path, (q.key,), status, f"against {model}: {verdict.explain()}")


def check_matched(
    steps: Sequence[Step],
    *,
    capacity: int | None,
    max_receives: int | None,
    start: float = 0.0,
    timeout: float = 300.0,
    fifo: Fifo | None = None,
) -> Verdict:
    """``tla.trace.check_trace``, through ``TraceNextMatched`` (``tla/TraceQueueMatched.tla``,
    ``tla/TraceQueueFifoMatched.tla``): the same module and constants, without the conjunct
    whose batch sets grow as ``(|Ids| * |Delays|) ^ MaxBatch``."""
    events = to_events(steps, start)
    base = "TraceQueueFifo" if fifo is not None else "TraceQueue"
    module = render_module(events, fifo=fifo is not None)
    config = render_config(events, capacity, max_receives, fifo)
    if module.count(f"EXTENDS {base}\n") != 1 or config.count("NEXT TraceNext\n") != 1:
        raise TraceCheckError("tla/trace.py's module or config changed shape: cannot retarget")
    module = module.replace(f"EXTENDS {base}\n", f"EXTENDS {base}Matched\n")
    config = config.replace("NEXT TraceNext\n", "NEXT TraceNextMatched\n")
    # TLC evaluates a constant definition at startup: Queue's SendBatches (every batch over
    # Ids \X Delays) would take minutes, and TraceNextMatched never reads it.
    config = config.replace("CONSTANTS\n", "CONSTANTS\n    SendBatches <- NoSendBatches\n", 1)
    accepted, matched, result = run_inverted(
        _FIFO_MODULES if fifo is not None else _MODULES,
        "TraceRun",
        module,
        config,
        timeout=timeout,
    )
    frozen = tuple(events)
    if accepted is None:
        raise TraceCheckError(
            f"TLC gave no verdict ({result.summary}):\n" + "\n".join(result.output[-30:])
        )
    return Verdict(accepted, len(frozen) if accepted else matched, result, events=frozen)


def _system_reasons(system: Sequence[RecordedQueue]) -> list[str]:
    reasons = []
    if any(q.fifo for q in system):
        reasons.append("FIFO queues (QueueSystem.tla models standard queues)")
    used = sorted({s[0] for q in system for s in q.steps} & _NOT_IN_SYSTEM)
    if used:
        reasons.append(f"{', '.join(used)} steps (QueueSystem.tla leaves them to Queue.tla)")
    return reasons


def _check_system(run: RecordedRun, system: Sequence[RecordedQueue], timeout: float) -> Checked:
    keys = tuple(q.key for q in system)
    names = _Names()
    config = SystemConfig(
        tuple(
            QueueConfig(
                name=q.key,
                capacity=q.capacity,
                max_receives=q.max_receives,
                retention=_units(q.retention, f"{q.key} retention"),
                dead_letter=q.dead_letter,
            )
            for q in system
        )
    )
    # A redrive step names its dead-letter queue by its name: here, by its key.
    by_name = {q.name: q.key for q in system}
    tagged: list[Tagged] = []
    for key, step in run.steps:
        if key not in keys:
            continue
        action, args, result, now = step
        if action == "redrive" and args and isinstance(args[0], str):
            args = (by_name.get(args[0], args[0]), *args[1:])
        tagged.append((key, names.step((action, args, result, now))))
    try:
        verdict = check_system_trace(tagged, config, start=run.start, timeout=timeout)
    except NotModelled as e:
        return Checked(run.path, keys, "not checked", str(e))
    except TraceError as e:
        return Checked(run.path, keys, "not checked", f"{e} (record on the fake clock)")
    status = "accepted" if verdict.accepted else "rejected"
    return Checked(run.path, keys, status, f"against QueueSystem.tla: {verdict.explain()}")


def check_run(run: RecordedRun, *, timeout: float = 300.0) -> list[Checked]:
    """The verdicts on every queue of ``run`` (see the module docstring)."""
    out: list[Checked] = []
    for system in _components(run):
        if len(system) == 1:
            out.append(_check_alone(run, system[0], timeout))
            continue
        reasons = _system_reasons(system)
        if not reasons:
            out.append(_check_system(run, system, timeout))
            continue
        moved = _moved_into(system)
        for q in system:
            if q.key in moved:
                why = "; ".join(reasons)
                out.append(
                    Checked(
                        run.path,
                        (q.key,),
                        "not checked",
                        f"messages move into it, so only its system can be checked, and "
                        f"QueueSystem.tla cannot: {why}",
                    )
                )
            else:
                out.append(_check_alone(run, q, timeout))
    return out


def check_directory(directory: Path | str, *, timeout: float = 300.0) -> list[Checked]:
    """The verdicts on every run recorded in ``directory`` (each ``*.jsonl``, by name)."""
    d = Path(directory)
    if not d.is_dir():
        raise RecordingError(f"{d}: no such directory")
    files = sorted(d.glob("*.jsonl"))
    if not files:
        raise RecordingError(f"{d}: no recording (*.jsonl) in it")
    out: list[Checked] = []
    for path in files:
        out += check_run(read_run(path), timeout=timeout)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from tla.tlc import SetupError

    parser = argparse.ArgumentParser(
        prog="python -m tla.recorded",
        description="Check every queue of a recorded endpoint run against the TLA+ spec (TLC).",
    )
    parser.add_argument("directory", type=Path, help="the directory given to --record")
    parser.add_argument(
        "--all", action="store_true", help="fail unless every queue could be checked"
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per TLC run")
    args = parser.parse_args(argv)
    try:
        results = check_directory(args.directory, timeout=args.timeout)
    except (RecordingError, SetupError, TraceCheckError) as e:
        print(f"python -m tla.recorded: {e}", file=sys.stderr)
        return 2
    for r in results:
        print(r)
    counts = {s: sum(r.status == s for r in results) for s in ("accepted", "rejected")}
    unchecked = len(results) - sum(counts.values())
    print(
        f"{len(results)} checks: {counts['accepted']} accepted, {counts['rejected']} rejected, "
        f"{unchecked} not checked"
    )
    if counts["rejected"] or (args.all and unchecked):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
