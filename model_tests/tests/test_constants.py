"""The constants the layers share are defined once per layer and are equal across the layers.

The contract's limits and defaults are numbers each layer needs without importing the others
(``impl`` runs without ``spec``; the harness's scenario format is read by both; TLC reads only
``tla/``). So each layer defines each once, and this test holds them equal:

- ``MAX_BATCH``, the most entries of a batch (contract section 2, SQS's 10): ``spec.MAX_BATCH``
  (``spec/transitions.py``), ``impl``'s (``impl/queue.py``, and ``impl/machine.py`` where it is
  defined), the harness's (``model_tests/scenario_format.py``), the TLA+ layer's
  (``tla/trace.py``) and the bound of ``tla/Queue.tla``'s ``ASSUME MaxBatch \\in 1..10``, with
  every model's ``MaxBatch`` within it;
- the FIFO dedup interval, SQS's five minutes: ``spec.DEDUP_INTERVAL`` (``spec/state.py``), the
  default of ``spec.Config`` and of ``impl.FifoQueue``, the harness's ``DEDUP_INTERVAL``;
- the contract's id form: ``impl``'s ``ID_PATTERN`` and the harness's.

The last test reads each layer's library for the module-level assignments of each name: one,
in the module named, so a second definition inside a layer fails it.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType
from typing import Final

import pytest

import impl
import spec
from model_tests import scenario_format
from spec.explore import Bounds
from tla import trace as tla_trace

ROOT: Final = Path(__file__).resolve().parents[2]
TLA: Final = ROOT / "tla"


def impl_modules(name: str) -> list[ModuleType]:
    """The modules of ``impl`` that define ``name``: ``impl.queue`` always, ``impl.machine`` too
    where the engine defines it (they must then agree)."""
    found = []
    for module in ("impl.queue", "impl.machine", "impl.validate"):
        try:
            m = importlib.import_module(module)
        except ModuleNotFoundError:
            continue
        if name in vars(m):
            found.append(m)
    return found


def test_max_batch_is_ten_in_every_layer() -> None:
    assert spec.MAX_BATCH == 10
    values = {m.__name__: m.MAX_BATCH for m in impl_modules("MAX_BATCH")}
    assert "impl.queue" in values, "impl.queue.MAX_BATCH is gone"
    assert values == dict.fromkeys(values, spec.MAX_BATCH)
    assert scenario_format.MAX_BATCH == spec.MAX_BATCH
    assert tla_trace.MAX_BATCH == spec.MAX_BATCH


def test_the_tla_models_bound_max_batch_by_the_same_ten() -> None:
    (bound,) = re.findall(r"ASSUME MaxBatch \\in 1\.\.(\d+)", (TLA / "Queue.tla").read_text())
    assert int(bound) == spec.MAX_BATCH
    values = {
        p.name: int(m.group(1))
        for p in sorted(TLA.glob("*.cfg"))
        if (m := re.search(r"^\s*MaxBatch\s*=\s*(\d+)", p.read_text(), re.MULTILINE))
    }
    assert values, "no model sets MaxBatch?"
    assert {n: v for n, v in values.items() if not 1 <= v <= spec.MAX_BATCH} == {}


def test_the_dedup_interval_is_five_minutes_in_every_layer() -> None:
    assert spec.DEDUP_INTERVAL == 300.0
    assert spec.Config().dedup_interval == spec.DEDUP_INTERVAL
    default = inspect.signature(impl.FifoQueue).parameters["dedup_interval"].default
    assert default == spec.DEDUP_INTERVAL
    assert scenario_format.DEDUP_INTERVAL == spec.DEDUP_INTERVAL
    # The explorer's bounds count whole clock units (TLA+'s DedupInterval), from the same value.
    assert Bounds().dedup_interval == int(spec.DEDUP_INTERVAL)


def test_impl_and_the_harness_read_ids_by_one_pattern() -> None:
    patterns = [m.ID_PATTERN for m in impl_modules("ID_PATTERN")]
    assert patterns, "impl defines no ID_PATTERN"
    for pattern in (*patterns, scenario_format.ID_PATTERN):
        assert pattern.pattern == scenario_format.ID_PATTERN.pattern
        for good, bad in (("a" * 128, "a" * 129), ("A-z_0", "a.b")):
            assert pattern.fullmatch(good) and not pattern.fullmatch(bad)


#: Each layer's Python, where its definitions are searched.
LAYERS: Final = {"spec": ["spec"], "tla": ["tla"], "model_tests": ["model_tests"]}


def definitions(name: str, layer: str) -> list[str]:
    """Where ``layer`` (its library, not its tests) assigns ``name`` at module level."""
    pattern = re.compile(rf"^{name}\b[^=\n]*=", re.MULTILINE)
    return [
        str(p.relative_to(ROOT))
        for folder in LAYERS[layer]
        for p in sorted((ROOT / folder).rglob("*.py"))
        if "tests" not in p.relative_to(ROOT).parts and pattern.search(p.read_text())
    ]


@pytest.mark.parametrize(
    ("name", "layer", "where"),
    [
        ("MAX_BATCH", "spec", ["spec/transitions.py"]),
        ("DEDUP_INTERVAL", "spec", ["spec/state.py"]),
        ("MAX_BATCH", "tla", ["tla/trace.py"]),
        ("MAX_BATCH", "model_tests", ["model_tests/scenario_format.py"]),
        ("DEDUP_INTERVAL", "model_tests", ["model_tests/scenario_format.py"]),
        ("ID_PATTERN", "model_tests", ["model_tests/scenario_format.py"]),
    ],
)
def test_each_constant_is_defined_once_per_layer(name: str, layer: str, where: list[str]) -> None:
    assert definitions(name, layer) == where
