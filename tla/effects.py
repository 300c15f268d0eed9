"""The careless consumers' counterexamples of ``tla/QueueEffects.tla``, kept in ``docs/diagrams``.

TLC refutes ``EffectOnce`` for a consumer that records its idempotency key after the effect,
in a later step: ``QueueEffectsCareless.cfg`` (two consumers, one slower than its visibility
timeout) and ``QueueEffectsCrash.cfg`` (one consumer that crashes between the two steps). Each
trace TLC prints is kept as a file (:data:`TRACES`), so that
``model_tests/tests/test_understanding_effects.py`` can replay it on ``impl.Queue`` without
Java; ``tests/test_tla.py`` checks, when Java is present, that each kept trace is what TLC finds
today. This module also reads the model's consumer and store variables out of a trace state.

    python -m tla.effects            # run TLC, rewrite the kept traces
    python -m tla.effects --check    # write nothing; exit 1 if a kept trace is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tla.counterexample import function, parse_trace
from tla.models import TLA_DIR, Model, discover
from tla.tlc import SetupError, run_tlc
from tla.values import ModelValue, Value

#: Where the kept traces live: beside the diagram tool's ``exactly_once.trace``.
DIAGRAMS = TLA_DIR.parent / "docs" / "diagrams"

#: Model name -> the file that keeps its counterexample.
TRACES: dict[str, Path] = {
    "QueueEffectsCareless": DIAGRAMS / "effects_careless.trace",
    "QueueEffectsCrash": DIAGRAMS / "effects_crash.trace",
}


def _model(name: str) -> Model:
    (model,) = [m for m in discover() if m.name == name]
    return model


def run_trace(name: str) -> str:
    """Run TLC on the model ``name`` (a key of :data:`TRACES`) and return its counterexample.

    ``ValueError`` names the model if TLC did not find the violation its config expects;
    :class:`tla.tlc.SetupError` if Java or the jar is missing.
    """
    if name not in TRACES:
        raise ValueError(f"name must be one of {sorted(TRACES)}, got {name!r}")
    model = _model(name)
    result = run_tlc(model.spec, model.cfg, check_deadlock=model.check_deadlock)
    if not model.met_by(result):
        raise ValueError(f"{name}: expected {model.expected}, TLC said {result.summary}")
    return result.trace()


def stale(name: str, fresh: str) -> bool:
    """Whether the kept trace of ``name`` differs from ``fresh`` in any state (not in the
    ``line, col`` of an action, which moves whenever a comment above it is edited)."""
    path = TRACES[name]
    if not path.is_file():
        return True
    return parse_trace(path.read_text(encoding="utf-8")) != parse_trace(fresh)


# -- the consumer and store variables of a QueueEffects state -----------------------------------


def _name(v: Value) -> str:
    if not isinstance(v, ModelValue):
        raise ValueError(f"expected a model value, got {v!r}")
    return v.name


def phases(state: dict[str, Value]) -> dict[str, str]:
    """``phase``: consumer -> ``idle``, ``received``, ``applied`` or ``recorded``."""
    out = {}
    for c, p in function(state["phase"]).items():
        if not isinstance(p, str):
            raise ValueError(f"phase[{c}] is not a string: {p!r}")
        out[_name(c)] = p
    return out


def effects(state: dict[str, Value]) -> dict[str, int]:
    """``effects``: id -> how many times its effect has been applied."""
    out = {}
    for i, n in function(state["effects"]).items():
        if not isinstance(n, int) or isinstance(n, bool):
            raise ValueError(f"effects[{i}] is not a count: {n!r}")
        out[_name(i)] = n
    return out


def keys(state: dict[str, Value]) -> frozenset[str]:
    """``keys``: the ids whose idempotency key the store has recorded."""
    v = state["keys"]
    if not isinstance(v, frozenset):
        raise ValueError(f"keys is not a set: {v!r}")
    return frozenset(_name(i) for i in v)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tla.effects",
        description="Run TLC on the careless-consumer models of QueueEffects.tla and keep "
        "their counterexamples in docs/diagrams.",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a kept trace is stale"
    )
    args = parser.parse_args(argv)
    if not DIAGRAMS.is_dir():
        # An installed package has no docs/: the traces belong to the repository's pages.
        print(
            f"python -m tla.effects: {DIAGRAMS} does not exist: the kept traces are the "
            "repository's (docs/diagrams); run this from a source checkout",
            file=sys.stderr,
        )
        return 2
    status = 0
    for name, path in TRACES.items():
        try:
            fresh = run_trace(name)
        except (SetupError, ValueError) as e:
            print(f"python -m tla.effects: {e}", file=sys.stderr)
            return 2
        if not stale(name, fresh):
            print(f"{path.name}: up to date")
        elif args.check:
            print(f"{path.name}: STALE (run python -m tla.effects)")
            status = 1
        else:
            path.write_text(fresh, encoding="utf-8")
            print(f"{path.name}: written")
    return status


if __name__ == "__main__":
    sys.exit(main())
