"""``python -m tla``: run TLC on every model in ``tla/`` and check each outcome is the expected one.

Every ``tla/*.cfg`` is a model (see :mod:`tla.models` for what a config declares). Models that
are meant to fail are teaching models: for them a counterexample is success, and its trace is
saved to ``<out>/<model>.trace``; the full output of each run goes to ``<out>/<model>.log``.
``<out>`` is ``--out``, by default ``_runs`` beside the models (``tla/_runs`` in a checkout,
where the docs and tests read the traces), except for the models of an installed package:
site-packages is not the user's to write into, so those runs go to ``./tla_runs`` in the working
directory (:func:`runs_dir`). The exit status is 0 when every outcome was the expected one, 1 when
one was not, 2 when nothing could be checked (no Java, no jar, a bad config, an unknown model).

``python -m tla --recorded DIR`` checks a recorded run instead: every queue an SQS endpoint
recorded into ``DIR`` (``python -m sqs_endpoint --record DIR``, ``pytest --sqs-record DIR``), each
against its spec (:mod:`tla.recorded`, also ``python -m tla.recorded DIR``); the exit status is
0 when no queue's trace was rejected, 1 when one was, 2 when the directory holds no recording.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tla.models import TLA_DIR, Model, by_name, discover
from tla.tlc import Result, SetupError, find_jar, find_java, run_tlc

#: TLC output lines that are noise for a reader following the progress.
_NOISE = (
    "Parsing file",
    "Semantic processing",
    "  Estimates of",
    "  because two",
    "  calculated",
    "  based on",
)


def _models(n: int) -> str:
    return f"{n} model" if n == 1 else f"{n} models"


def _verdict(model: Model, result: Result) -> str:
    if not model.met_by(result):
        return "UNEXPECTED"
    if model.expect == "violation":
        return "counterexample found, as expected"
    return "ok, as expected"


def _table(rows: list[tuple[Model, Result]]) -> str:
    head = ("model", "expected", "actual", "distinct states", "depth", "seconds", "")
    body = [
        (
            m.name,
            m.expected,
            r.summary,
            "" if r.distinct is None else f"{r.distinct}",
            "" if r.depth is None else f"{r.depth}",
            f"{r.seconds:.1f}",
            "" if m.met_by(r) else "<-- UNEXPECTED",
        )
        for m, r in rows
    ]
    widths = [max(len(row[k]) for row in [head, *body]) for k in range(len(head))]
    right = {3, 4, 5}

    def fmt(row: Sequence[str]) -> str:
        cells = [
            c.rjust(w) if k in right else c.ljust(w)
            for k, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths[:-1])
    return "\n".join([fmt(head), rule, *(fmt(row) for row in body)])


def runs_dir(models: Path) -> Path:
    """Where the logs and traces of the models in ``models`` go by default: ``_runs`` beside
    them, unless they are the installed package's own models (``tla/`` outside a source
    checkout, which has a ``pyproject.toml`` beside it): then ``./tla_runs``."""
    installed = (
        models.resolve() == TLA_DIR.resolve() and not (TLA_DIR.parent / "pyproject.toml").is_file()
    )
    return Path.cwd() / "tla_runs" if installed else models / "_runs"


def _save(model: Model, result: Result, runs: Path) -> Path | None:
    runs.mkdir(parents=True, exist_ok=True)
    (runs / f"{model.name}.log").write_text("\n".join(result.output) + "\n")
    trace = runs / f"{model.name}.trace"
    text = result.trace()
    if text:
        trace.write_text(text)
        return trace
    trace.unlink(missing_ok=True)
    return None


def _relative(path: Path) -> Path:
    return path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tla", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this model (a config name such as Queue or ExactlyOnce); repeatable",
    )
    parser.add_argument("--large", action="store_true", help="also run the *.large.cfg models")
    parser.add_argument("--quiet", action="store_true", help="one line per model, not TLC's output")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    parser.add_argument(
        "--dir", type=Path, default=TLA_DIR, help="the directory of the models (default: tla/)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="where the logs and traces go (default: _runs beside the models; ./tla_runs for "
        "an installed package's models)",
    )
    parser.add_argument(
        "--recorded",
        type=Path,
        metavar="DIR",
        help="check the endpoint run recorded in DIR, not the models (as python -m tla.recorded)",
    )
    args = parser.parse_args(argv)
    if args.recorded is not None:
        from tla import recorded

        return recorded.main([str(args.recorded)])
    runs = args.out if args.out is not None else runs_dir(args.dir)

    try:
        models = discover(args.dir, large=args.large)
        if args.model:
            known = by_name(args.dir)
            unknown = [n for n in args.model if n not in known]
            if unknown:
                raise SetupError(
                    f"no model named {', '.join(unknown)}; models: {', '.join(sorted(known))}"
                )
            models = [known[n] for n in dict.fromkeys(args.model)]
        if args.list:
            for m in models:
                print(f"{m.name:24} {m.module}.tla  expect {m.expected}")
            return 0
        find_java()
        jar = find_jar()
    except (SetupError, ValueError) as e:
        print(f"python -m tla: {e}", file=sys.stderr)
        return 2

    print(f"TLC: {jar}; {_models(len(models))}, 1 worker each")
    started = time.perf_counter()
    rows: list[tuple[Model, Result]] = []
    for model in models:
        if not args.quiet:
            print(
                f"\n=== {model.name}: {model.module}.tla with {model.cfg.name}, "
                f"expecting {model.expected}"
                + ("" if model.check_deadlock else ", deadlock allowed"),
                flush=True,
            )

        def show(line: str) -> None:
            if not args.quiet and line.strip() and not line.startswith(_NOISE):
                print(f"  | {line}", flush=True)

        result = run_tlc(model.spec, model.cfg, check_deadlock=model.check_deadlock, on_line=show)
        trace = _save(model, result, runs)
        where = f" (trace: {_relative(trace)})" if trace else ""
        print(
            f"--> {model.name}: {result.summary} in {result.seconds:.1f} s: "
            f"{_verdict(model, result)}{where}",
            flush=True,
        )
        rows.append((model, result))

    total = time.perf_counter() - started
    bad = [m.name for m, r in rows if not m.met_by(r)]
    print()
    print(_table(rows))
    print(
        f"\n{_models(len(rows))} in {total:.1f} s: "
        + (f"UNEXPECTED outcome for {', '.join(bad)}" if bad else "every outcome as expected")
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
