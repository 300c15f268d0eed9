"""The models in ``tla/``: one per ``*.cfg`` file, with the outcome the file itself expects.

A model is a TLC config file plus the module it checks. Everything the runner needs to know
about a model is written in the config, in comment lines of the form ``\\* key: value``:

  ``\\* expect: ok``                 TLC must finish without finding any error (the default);
  ``\\* expect: violation``          TLC must find a counterexample (invariant, property or
                                     deadlock) -- a teaching model that is meant to fail;
  ``\\* expect: violation NAME``     ... and the error must name NAME (``ExactlyOnce``,
                                     ``Deadlock``, ``Temporal`` for liveness, ...);
  ``\\* module: NAME``               the module to check; by default the config's file name up
                                     to its first dot (``Queue.large.cfg`` checks ``Queue``);
  ``\\* deadlock: allowed``          run TLC with ``-deadlock`` (a state with no successor is
                                     not an error); ``\\* deadlock: checked`` is the default,
                                     TLC's own.

Configs named ``*.large.cfg`` have larger bounds and run only with ``--large``.

``tla/first/`` holds the first-spec page's module and its two configs (``FirstQueue``, which must
fail, and ``FirstQueueFixed``): a learner's exercise, not part of the contract, so the default
run of every model leaves them out and ``python -m tla --model FirstQueue`` runs them by name
(:func:`by_name`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tla.tlc import Result

#: The directory of the TLA+ modules and their configs.
TLA_DIR = Path(__file__).resolve().parent
#: The first-spec page's models (``docs/first-spec.md``), run by name only.
FIRST_DIR = TLA_DIR / "first"

_DIRECTIVE = re.compile(r"^\\\*\s*(expect|module|deadlock)\s*:\s*(.*?)\s*$")


@dataclass(frozen=True)
class Model:
    """One TLC run: a config, its module, and what the config says TLC must find."""

    #: The config's file name without ``.cfg``: ``Queue``, ``Queue.large``, ``ExactlyOnce``.
    name: str
    cfg: Path
    module: str
    #: ``ok`` or ``violation``.
    expect: str = "ok"
    #: For a violation: a word the error must contain (empty: any counterexample will do).
    expect_name: str = ""
    check_deadlock: bool = True

    @property
    def spec(self) -> Path:
        return self.cfg.with_name(f"{self.module}.tla")

    @property
    def large(self) -> bool:
        return self.name.endswith(".large")

    @property
    def expected(self) -> str:
        return f"{self.expect} {self.expect_name}".strip()

    def met_by(self, result: Result) -> bool:
        """Whether TLC's result is the outcome this model expects."""
        if result.outcome != self.expect:
            return False
        return not self.expect_name or self.expect_name in re.findall(r"\w+", result.detail)


def read_model(cfg: Path) -> Model:
    """The model that ``cfg`` describes; ``ValueError`` naming the file for a bad directive."""
    name = cfg.name.removesuffix(".cfg")
    fields: dict[str, str] = {}
    for n, line in enumerate(cfg.read_text().splitlines(), 1):
        m = _DIRECTIVE.match(line.strip())
        if m is None:
            continue
        key, value = m.group(1), m.group(2).split("(")[0].strip()
        if key in fields:
            raise ValueError(f"{cfg}:{n}: a second '{key}:' line")
        fields[key] = value
    expect, _, expect_name = fields.get("expect", "ok").partition(" ")
    if expect not in ("ok", "violation") or (expect == "ok" and expect_name):
        raise ValueError(
            f"{cfg}: 'expect:' must be 'ok', 'violation' or 'violation NAME', "
            f"got {fields['expect']!r}"
        )
    deadlock = fields.get("deadlock", "checked")
    if deadlock not in ("checked", "allowed"):
        raise ValueError(f"{cfg}: 'deadlock:' must be 'checked' or 'allowed', got {deadlock!r}")
    module = fields.get("module", name.split(".")[0])
    if not re.fullmatch(r"\w+", module):
        raise ValueError(f"{cfg}: 'module:' must name a module, got {module!r}")
    return Model(
        name=name,
        cfg=cfg,
        module=module,
        expect=expect,
        expect_name=expect_name.strip(),
        check_deadlock=deadlock == "checked",
    )


def discover(directory: Path = TLA_DIR, *, large: bool = False) -> list[Model]:
    """Every model in ``directory``, by name; ``*.large.cfg`` ones only if ``large``.

    Raises ``ValueError`` for a config whose directives are wrong or whose module is missing.
    """
    models = [read_model(cfg) for cfg in sorted(directory.glob("*.cfg"))]
    for m in models:
        if not m.spec.is_file():
            raise ValueError(f"{m.cfg}: module {m.module} has no file {m.spec.name}")
    return [m for m in models if large or not m.large]


def by_name(directory: Path = TLA_DIR) -> dict[str, Model]:
    """The models that ``--model NAME`` can name: every model of ``directory`` (the large ones
    too) and, for the default directory, the first-spec page's models of :data:`FIRST_DIR`."""
    models = discover(directory, large=True)
    if directory.resolve() == TLA_DIR and FIRST_DIR.is_dir():
        models += discover(FIRST_DIR, large=True)
    return {m.name: m for m in models}
