"""The system-of-queues models of issue 25, checked by TLC: ``tla/QueueSystem.tla`` (the dead-letter
move, redrive and retention across queues) and ``tla/ThreadedQueueSystem.tla`` (one lock per
queue).

- The configs declare their outcomes: the two correct models pass, the two teaching models fail
  (the two-step move violates ``NothingLost``; opposite lock orders deadlock).
- The teaching models' counterexamples are the ones docs/tla.md walks through: the retry that
  kills ``a`` in its source while its target does not have it; the redrive and the source's
  sweeper each holding one lock and waiting for the other's.
- The checks are not vacuous: each witness invariant of ``QueueSystem.tla`` (a move in, an age
  out after a move, an age out in flight, a redrive, a second death) is false in some reachable
  state of ``QueueSystem.cfg``'s bounds; and mutants of the model fail by name: retention counted
  from the move (``RetentionKeepsEnqueueTime``), a redrive that keeps the attempt
  (``RefinesQueue``: the arrival is no ``Send`` of ``Queue.tla``), a sweeper round that takes only
  its own lock (``LockedWrites``).
- TLC's state graph of ``QueueSystem.tla`` and ``spec.system_explore``'s are the same graph,
  state for state and edge for edge, on ``QueueSystem.cfg``'s bounds (``slow``) and with one id
  (quick).
- The correct models' full runs and the full graph comparison (10-40 s each on a loaded
  machine) are marked ``slow``; the others take 2-5 s each.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from spec.system_explore import SystemBounds, SystemNode, explore_system
from tla.__main__ import main
from tla.counterexample import parse_trace
from tla.graph import parse_dot
from tla.models import TLA_DIR, Model, discover
from tla.tlc import Result, run_tlc
from tla.tlc import available as tlc_available
from tla.values import Function, ModelValue, Record, Value

needs_java = pytest.mark.skipif(not tlc_available(), reason="TLC needs Java and tla2tools.jar")

SYSTEM_MODELS = {
    "QueueSystem": "ok",
    "QueueSystemTwoStep": "violation NothingLost",
    "ThreadedQueueSystem": "ok",
    "ThreadedQueueSystemOppositeOrder": "violation Deadlock",
}


def models() -> dict[str, Model]:
    return {m.name: m for m in discover() if m.name in SYSTEM_MODELS}


def run(model: Model) -> Result:
    return run_tlc(model.spec, model.cfg, check_deadlock=model.check_deadlock, timeout=600)


def copy_modules(tmp_path: Path, *names: str) -> None:
    for name in names:
        shutil.copy(TLA_DIR / f"{name}.tla", tmp_path / f"{name}.tla")


def mutant(tmp_path: Path, module: str, correct: str, wrong: str, cfg: str) -> Result:
    """TLC on ``module`` with ``correct`` replaced by ``wrong``, with the config ``cfg``."""
    copy_modules(tmp_path, "Queue", "QueueSystem", "ThreadedQueueSystem")
    text = (TLA_DIR / f"{module}.tla").read_text()
    assert text.count(correct) == 1, f"the mutant's anchor is not in {module}.tla once"
    (tmp_path / f"{module}.tla").write_text(text.replace(correct, wrong))
    shutil.copy(TLA_DIR / f"{cfg}.cfg", tmp_path / "Mutant.cfg")
    model = models()[cfg]
    return run_tlc(
        tmp_path / f"{module}.tla", tmp_path / "Mutant.cfg", check_deadlock=model.check_deadlock
    )


def mv(name: str) -> ModelValue:
    return ModelValue(name)


# -- discovery ----------------------------------------------------------------------------------


def test_the_system_models_declare_their_expected_outcomes() -> None:
    found = models()
    assert {n: m.expected for n, m in found.items()} == SYSTEM_MODELS
    assert found["QueueSystemTwoStep"].spec == TLA_DIR / "QueueSystem.tla"
    assert found["ThreadedQueueSystemOppositeOrder"].spec == TLA_DIR / "ThreadedQueueSystem.tla"
    # TLC's own deadlock check is what says "deadlock free" for the threaded system.
    assert found["ThreadedQueueSystem"].check_deadlock
    assert found["ThreadedQueueSystemOppositeOrder"].check_deadlock
    # The teaching models differ from their correct twin in the one constant they are about.
    assert 'Move = "two_step"' in found["QueueSystemTwoStep"].cfg.read_text()
    assert 'Move = "atomic"' in found["QueueSystem"].cfg.read_text()
    opposite = found["ThreadedQueueSystemOppositeOrder"].cfg.read_text()
    assert 'LockOrder = "opposite"' in opposite
    assert 'LockOrder = "creation"' in found["ThreadedQueueSystem"].cfg.read_text()


# -- the correct models -------------------------------------------------------------------------


@needs_java
@pytest.mark.slow
@pytest.mark.parametrize("name", ["QueueSystem", "ThreadedQueueSystem"])
def test_the_correct_system_models_pass(name: str) -> None:
    result = run(models()[name])
    assert result.outcome == "ok", result.detail
    assert result.distinct is not None and result.distinct > 1000


# -- the teaching models and their counterexamples ----------------------------------------------


@needs_java
def test_a_move_in_two_steps_loses_the_message_between_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--model", "QueueSystemTwoStep", "--quiet"]) == 0
    assert "counterexample found, as expected" in capsys.readouterr().out
    steps = parse_trace((TLA_DIR / "_runs" / "QueueSystemTwoStep.trace").read_text())
    assert [s.action for s in steps] == ["Initial", "Send", "Receive", "Retry"]
    last = steps[-1].state
    a = mv("a")
    assert last["transit"] == frozenset({(1, 2, a)})  # the move: into 1, from 2, of a
    data = last["data"]
    assert isinstance(data, tuple)
    dlq, source = data
    assert isinstance(dlq, Record) and isinstance(source, Record)
    assert dlq["msgs"] == ()  # the target does not have a ...
    msgs = source["msgs"]
    assert isinstance(msgs, Function)
    rec = msgs[a]
    assert isinstance(rec, Record) and rec["status"] == "DEAD"  # ... and the source let it go
    assert source["dead"] == (a,)


@needs_java
def test_opposite_lock_orders_deadlock_the_redrive_and_the_sweeper(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--model", "ThreadedQueueSystemOppositeOrder", "--quiet"]) == 0
    assert "counterexample found, as expected" in capsys.readouterr().out
    text = (TLA_DIR / "_runs" / "ThreadedQueueSystemOppositeOrder.trace").read_text()
    assert text.startswith("Error: Deadlock reached.")
    steps = parse_trace(text)
    last = steps[-1].state
    redrive, sweeper = ("redrive", 1), ("sweeper", 2)
    # The redrive holds the DLQ's lock (1), the source's sweeper the source's (2) ...
    assert last["owner"] == (redrive, sweeper)
    want = last["want"]
    assert isinstance(want, Function)
    # ... and each waits for the other's.
    assert want[redrive] == (2,) and want[sweeper] == (1,)
    # The steps docs/tla.md lists: the five calls, then the two lock takes.
    assert [s.action for s in steps] == [
        "Initial",
        "StartSend",
        "StartReceive",
        "StartSweep",
        "StartSweep",
        "StartRedrive",
        "Acquire",
        "Acquire",
    ]


# -- the checks are not vacuous -----------------------------------------------------------------

WITNESSES = ["NoMoveIn", "NoAgedOutAfterMove", "NoAgedOutInFlight", "NoRedrive", "NoSecondDeath"]


@needs_java
@pytest.mark.parametrize("witness", WITNESSES)
def test_each_behaviour_of_the_system_is_reached(tmp_path: Path, witness: str) -> None:
    cfg = models()["QueueSystem"].cfg.read_text()
    head, _, _ = cfg.partition("INVARIANTS")
    (tmp_path / "Witness.cfg").write_text(f"{head}INVARIANTS {witness}\n")
    result = run_tlc(TLA_DIR / "QueueSystem.tla", tmp_path / "Witness.cfg", check_deadlock=False)
    assert (result.outcome, result.detail) == ("violation", f"Invariant {witness}")


@needs_java
def test_retention_counted_from_the_move_is_caught(tmp_path: Path) -> None:
    result = mutant(
        tmp_path,
        "QueueSystem",
        "!.source = a, !.movedTo = None]",
        "!.source = a, !.movedTo = None, !.enqueuedAt = now]",
        "QueueSystem",
    )
    assert (result.outcome, result.detail) == ("violation", "Invariant RetentionKeepsEnqueueTime")


@needs_java
def test_a_redrive_that_keeps_the_attempt_is_caught(tmp_path: Path) -> None:
    result = mutant(
        tmp_path,
        "QueueSystem",
        "    IN Sent(gone, d, n, 0, t)",
        "    IN [Sent(gone, d, n, 0, t) EXCEPT ![d].msgs[n].attempt = s[q].msgs[i].attempt]",
        "QueueSystem",
    )
    assert (result.outcome, result.detail) == ("violation", "Action property RefinesQueue")


@needs_java
def test_a_sweeper_round_under_its_own_lock_only_is_caught(tmp_path: Path) -> None:
    result = mutant(
        tmp_path,
        "ThreadedQueueSystem",
        '"sweep"}            -> ReleaseLocks(o.q)',
        '"sweep"}            -> <<o.q>>',
        "ThreadedQueueSystem",
    )
    assert (result.outcome, result.detail) == ("violation", "Action property LockedWrites")


# -- the same graph, checked both ways: TLC's and spec.system_explore's -------------------------
#
# One key per state, on both sides: the clock; per queue (1, then 2), its messages sorted by id
# as (id, status, attempt, base, deadline, visibleAt, enqueuedAt, source, movedTo), its visible,
# in-flight, dead and delayed lists, and its timers in the one order as (kind, id). TLA+'s
# redrive id r1 is spec.system's first generated id, msg-1; the model value None is Python's
# None; a time is an int on both sides. An edge is the pair of its states' keys (TLC's dump
# names no parameters, so the labels are not compared: the explorer's are QueueSystem.tla's
# action names by construction).

Key = tuple[object, ...]
_NEW_IDS = {"r1": "msg-1"}


def _opt(v: object) -> object:
    """A TLA+ or spec value as the key holds it: None for the model value None, an int for
    an integral time."""
    if v == ModelValue("None") or v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _tla_id(v: object) -> str:
    assert isinstance(v, ModelValue), v
    return _NEW_IDS.get(v.name, v.name)


def _seq(v: object) -> tuple[object, ...]:
    assert isinstance(v, tuple), v
    return v


def _tla_key(state: dict[str, Value]) -> Key:
    queues: list[Key] = []
    for d in _seq(state["data"]):
        assert isinstance(d, Record)
        msgs = d["msgs"]
        recs = []
        for i, r in msgs.items() if isinstance(msgs, Function) else ():
            assert isinstance(r, Record)
            moved = _opt(r["movedTo"])
            to = None if moved is None else (_seq(moved)[0], _tla_id(_seq(moved)[1]))
            fields = ("attempt", "base", "deadline", "visibleAt", "enqueuedAt", "source")
            recs.append((_tla_id(i), r["status"], *(_opt(r[f]) for f in fields), to))
        lists = tuple(
            tuple(_tla_id(i) for i in _seq(d[f]))
            for f in ("visible", "inFlight", "dead", "delayed")
        )
        timers = tuple((_seq(e)[0], _tla_id(_seq(e)[1])) for e in _seq(d["timers"]))
        queues.append((tuple(sorted(recs, key=repr)), lists, timers))
    return (state["now"], tuple(queues))


def _spec_key(node: SystemNode) -> Key:
    system, now = node
    queues: list[Key] = []
    for member in system.queues:
        q, s = member.name, member.state
        recs = []
        for m in s.messages:
            source = system.source_of(q, m.id)
            moved = system.moved_to(q, m.id)
            recs.append(
                (
                    m.id,
                    m.status.value,
                    *(_opt(x) for x in (m.attempt, m.base, m.deadline, m.visible_at)),
                    _opt(m.enqueued_at),
                    None if source is None else int(source),
                    None if moved is None else (int(moved[0]), moved[1]),
                )
            )
        lists = (s.visible, s.in_flight, s.dead, s.delayed)
        queues.append((tuple(sorted(recs, key=repr)), lists, s.timer_order()))
    return (now, tuple(queues))


@needs_java
@pytest.mark.parametrize(
    "ids", [("a",), pytest.param(("a", "b"), marks=pytest.mark.slow, id="QueueSystem.cfg")]
)
def test_tlc_and_the_python_explorer_build_the_same_system_graph(
    tmp_path: Path, ids: tuple[str, ...]
) -> None:
    """QueueSystem.cfg's bounds (and with one id: the quick check): TLC's complete state graph
    (``-dump dot``) and ``spec.system_explore``'s, mapped to one key per state, have the same
    states and the same edges, and the explorer finds no violation."""
    cfg = models()["QueueSystem"].cfg.read_text()
    assert "    Ids = {a, b}\n" in cfg
    ids_line = "    Ids = {" + ", ".join(ids) + "}\n"
    head = cfg.replace("    Ids = {a, b}\n", ids_line).partition("SPECIFICATION")[0]
    (tmp_path / "Graph.cfg").write_text(f"{head}SPECIFICATION Spec\n")
    dot = tmp_path / "graph.dot"
    result = run_tlc(
        TLA_DIR / "QueueSystem.tla",
        tmp_path / "Graph.cfg",
        check_deadlock=False,
        extra=["-dump", "dot", str(dot)],
    )
    assert result.outcome == "ok", result.detail
    tlc = parse_dot(dot.read_text())
    tlc_keys = {fp: _tla_key(s) for fp, s in tlc.states.items()}

    graph = explore_system(SystemBounds(ids=ids))
    assert graph.violations == []
    by_number = {n: node for node, n in graph.nodes.items()}
    spec_keys = {n: _spec_key(node) for n, node in by_number.items()}

    # The mapping loses nothing on either side: one key per state.
    assert len(set(tlc_keys.values())) == len(tlc_keys) == result.distinct
    assert len(set(spec_keys.values())) == len(spec_keys) == graph.states
    assert {tlc_keys[fp] for fp in tlc.initial} == {spec_keys[0]}
    assert set(tlc_keys.values()) == set(spec_keys.values())
    tlc_edges = {(tlc_keys[a], tlc_keys[b]) for a, _, b in tlc.edges}
    spec_edges = {(spec_keys[a], spec_keys[b]) for a, _, b in graph.edges}
    assert tlc_edges == spec_edges
