"""The operation registry (``spec/operations.py``) is the one place an operation is declared.

Three kinds of check:

- the registry agrees with what it names: the spec's transitions (names and parameters),
  ``impl.Queue``'s public methods, the lockstep machine's rules, the harness targets' methods,
  the contract's table, and the TLA+ modules that enumerate actions (``QueueGraph.tla``,
  ``TraceQueue.tla``);
- every table derived from it grows with it: a no-op operation added to a copy of the registry
  shows up in the checker's signatures, the explorer's actions, the diagram tool's order, the
  TLC bridges and the harness's op table;
- a registry refuses what would make two operations indistinguishable.

When an operation is added, the first of these tests to fail names the layer still missing it.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import impl
import spec.transitions
from model_tests import targets
from model_tests.linearizability import (
    Call,
    Entry,
    Linearizable,
    Operation,
    QueueAdapter,
    apply,
    arities,
    check,
    impl_names,
    initial_state,
    signatures,
    validate_operation,
)
from model_tests.lockstep import QueueMachine
from model_tests.scenario_format import Invoke, ScenarioError, op_table, parse_op
from spec.explore import Bounds, action_labels, explore
from spec.operations import REGISTRY, Arg, Kind, Registry, Result
from spec.operations import Operation as Declared
from spec.state import State
from tla.graph import graph_actions, label
from tla.trace import event_ops, to_events
from tools.diagrams import diagram_actions, lifecycle_transitions

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT.parent / "shared" / "contract.md"

#: ``impl.Queue``'s public methods that are no operation of the model: queries, naming a
#: receipt, recording, the lifecycle of the queue object.
NOT_OPERATIONS = frozenset(
    {
        "close",
        "dead_letters",
        "health",
        "receipt",
        "record_sweeps",
        "record_trace",
        "shutdown",
        "snapshot",
        "stats",
    }
)

#: The methods of a queue in a system of queues (contract section 7): a redrive acts on two
#: queues and the lookups read where a message came from or went, so they are steps of
#: ``spec.system``, not of the one-queue registry; each is one of its functions.
SYSTEM_METHODS = frozenset({"aged_out", "moved_to", "redrive_tasks", "source_of", "start_redrive"})


def _nothing(state: State) -> tuple[State, None]:
    return state, None


NOOP = Declared(
    name="noop",
    tla="Noop",
    args=(),
    result=Result.NONE,
    contract=None,
    harness="noop",
    impl="noop",
    function=_nothing,
)
EXTENDED = REGISTRY.with_operation(NOOP)


# -- the registry agrees with what it names ----------------------------------------------------


def _transitions() -> set[str]:
    """The spec's transitions: functions of spec.transitions returning ``(State, result)``."""
    return {
        name
        for name, fn in inspect.getmembers(spec.transitions, inspect.isfunction)
        if fn.__module__ == "spec.transitions"
        and str(inspect.signature(fn).return_annotation).startswith("tuple[State")
    }


def test_every_spec_transition_is_an_operation_with_its_parameters() -> None:
    assert {op.name for op in REGISTRY if op.function is not None} == _transitions()
    for op in REGISTRY:
        if op.function is None:
            continue
        assert op.function is getattr(spec.transitions, op.name)
        params = list(inspect.signature(op.function).parameters)
        # state first, then exactly the keywords the step passes
        wanted = set(op.arguments(spec.initial(), 0.0, _sample_args(op)))
        assert params[0] == "state" and set(params[1:]) == wanted, op.name


def _sample_args(op: Declared) -> tuple[object, ...]:
    sample = {Kind.ID: "a", Kind.BODY: "A", Kind.ATTEMPT: 1, Kind.TIME: 1.0}
    return tuple(sample.get(a.kind) for a in op.args)


def _public(cls: type) -> set[str]:
    """The public methods of ``cls`` (its public class attributes that are classes, the
    drivers' ``machine_class`` and ``conditions_class``, are configuration, not operations)."""
    return {
        n
        for n, v in inspect.getmembers(cls)
        if not n.startswith("_") and callable(v) and not isinstance(v, type)
    }


def test_every_operation_is_a_method_of_impl_queue_and_every_method_is_accounted_for() -> None:
    public = _public(impl.Queue)
    methods = {op.impl for op in REGISTRY if op.impl is not None}
    assert methods <= public
    assert public - NOT_OPERATIONS - SYSTEM_METHODS == methods, "a method the registry lacks"


#: The asyncio shell's queues beside the threaded queue of the same kind.
ASYNC_PAIRS = (
    (impl.Queue, targets.async_class(fifo=False)),
    (impl.FifoQueue, targets.async_class(fifo=True)),
)
needs_aio = pytest.mark.skipif(
    targets.async_class(fifo=False) is None, reason="impl has no asyncio shell"
)
#: Public methods an async queue has and the threaded one has not (``async with`` and
#: ``async for`` are dunders): none, so far.
ASYNC_ONLY: frozenset[str] = frozenset()


@needs_aio
@pytest.mark.parametrize("threaded, aio", ASYNC_PAIRS, ids=["standard", "fifo"])
def test_every_operation_is_a_method_of_the_async_queues_async_where_the_threaded_may_block(
    threaded: type, aio: type
) -> None:
    """The same public methods as the threaded queue, each a coroutine function exactly when
    the threaded one may block (it takes ``block``), a plain method otherwise."""
    methods = {op.impl for op in REGISTRY if op.impl is not None}
    assert methods <= _public(aio)
    assert _public(aio) - ASYNC_ONLY == _public(threaded), "a method only one shell has"
    for name in sorted(_public(threaded)):
        may_block = "block" in inspect.signature(getattr(threaded, name)).parameters
        assert inspect.iscoroutinefunction(getattr(aio, name)) is may_block, name


@needs_aio
@pytest.mark.parametrize("threaded, aio", ASYNC_PAIRS, ids=["standard", "fifo"])
def test_the_async_methods_take_the_threaded_methods_parameters(threaded: type, aio: type) -> None:
    for name in sorted(_public(threaded)):
        want = inspect.signature(getattr(threaded, name)).parameters
        got = inspect.signature(getattr(aio, name)).parameters
        assert [(p.name, p.kind) for p in got.values()] == [
            (p.name, p.kind) for p in want.values()
        ], name


def test_every_system_method_of_impl_queue_is_a_step_or_lookup_of_spec_system() -> None:
    import spec.system

    for name in SYSTEM_METHODS - {"aged_out"}:
        assert callable(getattr(impl.Queue, name)), name
        assert callable(getattr(spec.system, name, None)) or callable(
            getattr(spec.system.System, name, None)
        ), name


def test_every_operation_is_a_rule_of_the_lockstep_machine() -> None:
    for op in REGISTRY:
        assert callable(getattr(QueueMachine, op.rule, None)), op.rule


def test_every_harness_op_is_a_method_of_each_target() -> None:
    for op in REGISTRY:
        if op.harness is None:
            continue
        for cls in (targets.Target, targets.ModelTarget, targets.ImplTarget):
            assert callable(getattr(cls, op.name, None)), (cls.__name__, op.name)


def test_contract_rows_are_named_after_the_operations() -> None:
    rows = [op.contract for op in REGISTRY if op.contract is not None]
    assert all(op.contract is None or op.contract.startswith(f"{op.name}(") for op in REGISTRY)
    # Only the clock has no row: it is the checker's, not the queue's.
    assert [op.name for op in REGISTRY if op.contract is None] == ["advance"]
    if not CONTRACT.exists():
        pytest.skip(f"{CONTRACT} is not beside this checkout")
    text = CONTRACT.read_text(encoding="utf-8")
    section2 = text[text.index("## 2. Transitions") : text.index("## 2b.")]
    cells = re.findall(r"^\| `([^`]+)`", section2, re.MULTILINE)
    assert set(rows) <= set(cells)


def _tla(name: str) -> str:
    return (ROOT / "tla" / name).read_text(encoding="utf-8")


def test_queue_graph_labels_and_steps_exactly_the_registrys_actions() -> None:
    text = _tla("QueueGraph.tla")
    labels = re.findall(r"lastAction'? = <<\"(\w+)\"", text)
    assert labels == [*action_labels(), "Init"]  # each action's label, then Init's
    nxt = text[text.index("Next ==") : text.index("Spec ==")]
    disjuncts = re.findall(r"\\/ (?:\\E [^:]+: )?(\w+)", nxt)
    assert disjuncts == list(action_labels())


def test_trace_queue_matches_exactly_the_recorded_operations() -> None:
    text = _tla("TraceQueue.tla")
    match = text[text.index("Match(e) ==") : text.index("TraceNext ==")]
    assert re.findall(r'e\.op = "(\w+)"', match) == list(event_ops())


# -- every derived table grows with the registry -----------------------------------------------


def test_the_checkers_tables_grow() -> None:
    assert signatures(EXTENDED) == {**signatures(), "noop": "() -> None"}
    assert arities(EXTENDED) == {**arities(), "noop": 0}
    assert impl_names(EXTENDED)["noop"] == "noop"
    op = Operation("noop")
    with pytest.raises(ValueError, match=r"op\.name must be one of"):
        validate_operation(op)
    validate_operation(op, EXTENDED)
    start = initial_state()
    assert apply(start, op, EXTENDED) == (start, None)
    adapter = QueueAdapter(registry=EXTENDED)
    assert adapter(Call("t", "noop", (), {}, 1, 2)) == Operation("noop", (), None)
    history = [Entry("t", op, 0, 1)]
    assert isinstance(check(history, registry=EXTENDED), Linearizable)


def test_the_explorers_actions_grow() -> None:
    assert action_labels(EXTENDED) == (*action_labels(), "Noop")
    bounds = Bounds(ids=("a",), capacity=1, max_attempt=1, max_time=1)
    base, extended = explore(bounds), explore(bounds, registry=EXTENDED)
    assert extended.states == base.states
    # The no-op is enabled everywhere and changes nothing: a self-loop on every node.
    noops = {(a, b) for a, lab, b in extended.edges if lab == "Noop"}
    assert noops == {(n, n) for n in extended.nodes.values()}
    assert extended.edges - {(n, "Noop", n) for n in extended.nodes.values()} == base.edges


def test_the_diagram_tools_table_grows() -> None:
    assert diagram_actions(EXTENDED) == [*diagram_actions(), "Noop"]
    edges = lifecycle_transitions(registry=EXTENDED)
    assert {t.action for t in edges} - {t.action for t in lifecycle_transitions()} == {"Noop"}


def test_the_tlc_bridges_tables_grow() -> None:
    assert graph_actions(EXTENDED) == (*graph_actions(), "Noop")
    assert label(("Noop",), EXTENDED) == "Noop"
    with pytest.raises(ValueError, match="no action of the registry"):
        label(("Noop",))
    assert event_ops(EXTENDED) == (*event_ops(), "noop")
    assert to_events([("noop", (), True, 3.0)], registry=EXTENDED) == [
        {"op": "noop", "ok": True, "now": 3}
    ]


def test_the_harness_op_table_grows() -> None:
    assert op_table(EXTENDED) == {**op_table(), "noop": ()}
    assert parse_op(["noop"], 1, registry=EXTENDED) == Invoke("noop", ())
    with pytest.raises(ScenarioError, match='unknown op "noop"'):
        parse_op(["noop"], 1)


# -- the registry refuses what would be ambiguous ----------------------------------------------


def test_two_operations_may_not_share_a_name_in_any_layer() -> None:
    send = REGISTRY["send"]
    with pytest.raises(ValueError, match="name 'send'"):
        REGISTRY.with_operation(send)
    with pytest.raises(ValueError, match="TLA\\+ action 'Send'"):
        REGISTRY.with_operation(
            Declared("send2", "Send", (), Result.NONE, None, None, "send2", _nothing)
        )
    with pytest.raises(ValueError, match="harness op 'enqueue'"):
        REGISTRY.with_operation(
            Declared("send2", "Send2", (), Result.NONE, None, "enqueue", "send2", _nothing)
        )
    with pytest.raises(KeyError, match="no operation 'nope'"):
        REGISTRY["nope"]


def test_an_attempt_must_follow_an_id() -> None:
    with pytest.raises(ValueError, match="attempt must follow an id"):
        Declared("bad", "Bad", (Arg("attempt", Kind.ATTEMPT),), Result.BOOL, None, None, None,
                 _nothing)  # fmt: skip


def test_the_registry_is_a_value_by_name() -> None:
    assert isinstance(REGISTRY, Registry)
    assert REGISTRY.names == (
        "send", "send_batch", "receive", "receive_batch", "delete", "delete_batch", "retry",
        "change_visibility", "change_visibility_batch", "cancel", "purge", "expire", "advance"
    )  # fmt: skip
    assert REGISTRY.by_tla("Tick").name == "advance"
    assert REGISTRY["expire"].rule == "sweep" and REGISTRY["delete"].harness == "ack"
