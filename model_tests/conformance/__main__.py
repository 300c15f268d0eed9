"""``python -m model_tests.conformance``: run the SQS profile's scenarios on an endpoint and judge.

    python -m model_tests.conformance --endpoint impl|impl-fifo|moto|moto-server|server|
        server-real|URL [--fifo]
        [--profile strict|sqs-standard|sqs-fifo] [--scenarios N] [--seed S]
        [--scenarios-file F.jsonl] [--probes] [--json PATH] [--junit PATH] [--report PATH]
        [--yes] [--no-shrink] [--wait-time SECONDS]
    python -m model_tests.conformance --docs docs/conformance.md

Installed (``pip install '.[conformance]'``), the console script ``sqs-conformance`` is the same
command. Without the ``conformance`` extra (boto3, moto, hypothesis), both exit 2 with one line
naming the extra, ``--help`` too.

Generated scenarios (:func:`model_tests.conformance.profile.sqs_scenarios`, the same ones for a
seed) or the scenarios of ``--scenarios-file`` (JSON lines in the harness's format, each checked
against the SQS profile; every line refused is named with why, and nothing runs), and with
``--probes`` the probes (:data:`model_tests.conformance.report.PROBES`), run on the endpoint;
the relaxed oracle explains every divergence, groups them, shrinks one per group
(:mod:`model_tests.conformance.report`). The summary goes to standard output; ``--report``
writes it as Markdown, ``--json`` as data and ``--junit`` as JUnit XML
(:mod:`model_tests.conformance.output`). Exit status: 0 when the profile (default: ``strict`` on
``impl`` and ``sqs_endpoint``, ``sqs-standard``, or ``sqs-fifo`` with ``--fifo``) admits everything
seen, 1 when it does not, 2 for an error (bad arguments, a refused scenario, an endpoint that
fails, Ctrl-C) or no verdict.

``--endpoint impl`` (``impl-fifo``) is the project's own queue in-process
(:mod:`model_tests.conformance.local`); ``--endpoint server`` is the project's SQS server
(``sqs_endpoint/``) over HTTP on its fake clock (``advance`` moves it: no sleeping), ``server-real``
the same on the real clock; both are judged ``strict`` by default. Before anything is created on
an SQS endpoint, the run prints the account (STS ``GetCallerIdentity``; for an endpoint without
STS, that it is unknown) and the region, the queues it creates and deletes and at most how many
requests it makes (:mod:`model_tests.conformance.plan`); an endpoint that is not local (not
impl, moto, or a URL on localhost, 127.0.0.0/8 or ::1) needs ``--yes``, else the run stops there
with status 2. Every ``kit-*`` queue of the run is deleted at the end, after an error, Ctrl-C or
SIGTERM too.

``--wait-time SECONDS`` (1..20, not on moto) makes every receive a long poll:
``WaitTimeSeconds`` > 0 queries all of SQS's servers instead of a sample, so fewer receives
come back short or empty; but a receive that finds nothing waits that long, in real time the
scenario does not count (see :mod:`model_tests.conformance.sqs`, "Running against a real
endpoint"). moto endpoints refuse it: moto's long poll would block on the kit's patched clock.

``--systems`` runs the check of a system of queues instead (:mod:`model_tests.conformance.
systems`: dead-letter targets, retention, move tasks; ``--profile strict`` makes it fail on any
divergence, named or not).

``--docs PATH`` writes the project's ``docs/conformance.md``: moto in-process and moto-server,
standard and FIFO queues, with the fixed parameters :data:`DOC_SCENARIOS` and :data:`DOC_SEED`.

``--bench`` measures the endpoint through the kit instead (``docs/benchmarks.md``, section "SQS
endpoints through the conformance kit"): scenarios per second on the endpoint, of the oracle
and of the model, for the docs' scenarios; and the time of one send + receive + delete cycle
with 0, 100 and 1000 messages in flight (moto recounts its messages on every call).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

#: The extra the kit needs (pyproject.toml's ``conformance``) and the modules its distributions
#: install: boto3, moto and hypothesis (``model_tests.conformance.report`` imports hypothesis at
#: import time; tests/test_packaging.py checks this list against the wheel's metadata).
EXTRA: Final = "conformance"
EXTRA_MODULES: Final = ("boto3", "moto", "hypothesis")
#: The console script of pyproject.toml's ``[project.scripts]``, and the ``python -m`` form.
SCRIPT: Final = "sqs-conformance"
MODULE_COMMAND: Final = "python -m model_tests.conformance"

try:
    from model_tests.conformance.job import (
        Job,
        generated,
        kit_run,
        probe_run,
        read_scenarios,
        run_job,
        terminate_as_interrupt,
    )
    from model_tests.conformance.oracle import PROFILES
    from model_tests.conformance.output import write_json, write_junit
    from model_tests.conformance.report import (
        KitRun,
        conformance_doc,
        generate_scenarios,
        markdown,
        summary,
    )
except ModuleNotFoundError as e:
    # Without the extra the module still imports, so that main() says what to install.
    if (e.name or "").partition(".")[0] not in EXTRA_MODULES:
        raise

#: What the CLI runs through :mod:`model_tests.conformance.job`, importable from here as before.
__all__ = ["generated", "kit_run", "probe_run", "read_scenarios", "terminate_as_interrupt"]

#: How many scenarios per endpoint and queue type ``--docs`` runs, and with which seed.
DOC_SCENARIOS: Final = 300
DOC_SEED: Final = 16
#: The command that writes ``docs/conformance.md`` (named in its header).
DOC_COMMAND: Final = "python -m model_tests.conformance --docs docs/conformance.md"

#: Exit statuses (:mod:`model_tests.conformance.output`'s ``NOT_ADMITTED`` and ``NO_VERDICT``,
#: written out so that a missing extra exits with the second): 1 a divergence the profile does
#: not admit, 2 an error (bad arguments, a refused scenario, a crash, a missing extra) or no
#: verdict.
EXIT_NOT_ADMITTED: Final = 1
EXIT_USAGE: Final = 2


def missing_extra() -> list[str]:
    """The modules of the ``conformance`` extra that are not installed (none: the kit runs)."""
    return [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is None]


def prog() -> str:
    """How the kit was started: its console script, or ``python -m``."""
    return SCRIPT if Path(sys.argv[0]).name == SCRIPT else MODULE_COMMAND


def doc_runs(scenarios: int = DOC_SCENARIOS, seed_value: int = DOC_SEED) -> list[KitRun]:
    """The runs of ``docs/conformance.md``: moto and moto-server, standard then FIFO, the
    generated scenarios then the probes."""
    runs = []
    for fifo in (False, True):
        for endpoint in ("moto", "moto-server"):
            runs.append(kit_run(endpoint, fifo=fifo, scenarios=scenarios, seed_value=seed_value))
            runs.append(probe_run(endpoint, fifo))
    return runs


def bench(endpoint: str, scenarios: int = 200, cycles: int = 100) -> list[str]:
    """The ``--bench`` figures of ``endpoint``, one line each (wall-clock time: a benchmark)."""
    import time

    from model_tests.conformance.oracle import explain
    from model_tests.conformance.profile import sqs_scenarios
    from model_tests.conformance.sqs import SqsTarget, open_endpoint, run_on_sqs
    from model_tests.scenario_format import QUEUE_DEFAULT, QueueConfig, parse_scenario
    from model_tests.targets import run_scenario

    lines = []
    with open_endpoint(endpoint) as opened:
        for fifo in (False, True):
            drawn = generate_scenarios(sqs_scenarios(fifo=fifo), scenarios, DOC_SEED)
            parsed = [parse_scenario(s) for s in drawn]
            ops = sum(len(s.ops) for s in parsed)
            start = time.perf_counter()
            outputs = [run_on_sqs(s, opened) for s in parsed]
            on_endpoint = time.perf_counter() - start
            start = time.perf_counter()
            for s, out in zip(parsed, outputs, strict=True):
                explain(s, out)
            oracle = time.perf_counter() - start
            start = time.perf_counter()
            for s in parsed:
                run_scenario(s, "model")
            model = time.perf_counter() - start
            lines.append(
                f"{endpoint}, {'FIFO' if fifo else 'standard'}: {len(parsed) / on_endpoint:.1f} "
                f"scenarios/s ({ops / on_endpoint:.0f} ops/s) on the endpoint; the oracle "
                f"{len(parsed) / oracle:.0f} scenarios/s; the model {len(parsed) / model:.0f}"
            )
        per_cycle = []
        for held in (0, 100, 1000):
            target = SqsTarget(QueueConfig(capacity=None, visibility_timeout=3600), opened)
            try:
                for i in range(0, held, 10):
                    ids = range(i, min(held, i + 10))
                    target.send_batch([(f"h{j}", "x", QUEUE_DEFAULT) for j in ids])
                    target.receive_batch(10, QUEUE_DEFAULT)
                start = time.perf_counter()
                for k in range(cycles):
                    target.send(f"c{k}", "y", QUEUE_DEFAULT)
                    got = target.receive(QUEUE_DEFAULT)
                    if got is None or not target.delete(got[0], got[2]):
                        raise RuntimeError(f"bench: cycle {k} lost its message on {endpoint}")
                per_cycle.append(
                    f"{held} in flight {(time.perf_counter() - start) / cycles * 1e3:.1f} ms"
                )
            finally:
                target.close()
        lines.append(f"{endpoint}: send + receive + delete cycle: {', '.join(per_cycle)}")
    return lines


def job(args: argparse.Namespace) -> Job:
    """The :class:`~model_tests.conformance.job.Job` of the CLI's arguments."""
    return Job(
        endpoint=args.endpoint,
        fifo=args.fifo,
        profile=args.profile,
        scenarios=args.scenarios,
        seed=args.seed,
        scenarios_file=args.scenarios_file,
        probes=args.probes,
        yes=args.yes,
        shrink=not args.no_shrink,
        wait_time=args.wait_time,
    )


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog(),
        description="Run the model's scenarios on an SQS endpoint and judge the outputs with "
        "the relaxed oracle. Exit status: 0 conforms (the profile admits everything seen), 1 a "
        "divergence the profile does not admit, 2 an error or no verdict.",
    )
    parser.add_argument(
        "--endpoint",
        default="moto",
        help="impl or impl-fifo (the project's own queue in-process, profile strict), server "
        "or server-real (the project's SQS server over HTTP on its fake or the real clock, "
        "profile strict), moto (in-process), moto-server (ThreadedMotoServer on 127.0.0.1) or "
        "an http(s) URL "
        "(credentials from the boto3 chain, region from AWS_REGION or AWS_DEFAULT_REGION; "
        "real time; --yes unless on localhost)",
    )
    parser.add_argument("--fifo", action="store_true", help="FIFO queues")
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        help="what the endpoint is allowed (default: strict on impl and server, sqs-standard, "
        "or sqs-fifo with --fifo)",
    )
    parser.add_argument("--scenarios", type=int, default=100, help="how many to generate")
    parser.add_argument("--seed", type=int, default=0, help="the generator's seed")
    parser.add_argument("--report", help="write the report as Markdown to this path")
    parser.add_argument(
        "--scenarios-file",
        "--scenario-file",
        dest="scenarios_file",
        metavar="F.jsonl",
        help="run these scenarios (JSON lines, the harness's format) instead of generated ones",
    )
    parser.add_argument(
        "--probes", action="store_true", help="also run the probes (one test case each)"
    )
    parser.add_argument("--json", metavar="PATH", help="write the run as JSON to this path")
    parser.add_argument(
        "--junit", metavar="PATH", help="write JUnit XML to this path (a test case per finding)"
    )
    parser.add_argument(
        "--yes",
        action="store_true",
        help="go ahead on an endpoint that is not local (it creates queues and makes requests)",
    )
    parser.add_argument(
        "--no-shrink", action="store_true", help="report the smallest scenario as found"
    )
    parser.add_argument(
        "--wait-time",
        type=int,
        default=0,
        metavar="SECONDS",
        help="long-poll every receive this long (1..20; URL endpoints only): all servers are "
        "queried, but a receive of an empty queue waits that long",
    )
    parser.add_argument(
        "--docs", help="write docs/conformance.md (moto and moto-server, both queue types)"
    )
    parser.add_argument(
        "--bench", action="store_true", help="measure the endpoint's throughput through the kit"
    )
    parser.add_argument(
        "--systems",
        action="store_true",
        help="run the system check instead (dead-letter targets, retention, move tasks: "
        "python -m model_tests.conformance.systems; --profile strict makes it strict)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    missing = missing_extra()
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        print(
            f"{prog()}: {', '.join(missing)} {verb} not installed: the conformance kit needs the "
            f"project's {EXTRA!r} extra (pip install '.[{EXTRA}]' in a clone of the repository)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    cli = parser()
    args = cli.parse_args(argv)
    if args.scenarios < 0:
        cli.error(f"--scenarios must be >= 0, got {args.scenarios}")
    if args.systems:
        from model_tests.conformance import systems

        flags = ["--strict"] if args.profile == "strict" else []
        return systems.main(["--endpoint", args.endpoint, *flags, *(["--yes"] if args.yes else [])])
    if args.bench:
        for line in bench(args.endpoint):
            print(line, flush=True)
        return 0
    if args.docs:
        runs = doc_runs()
        Path(args.docs).write_text(conformance_doc(runs, DOC_COMMAND))
        for r in runs:
            print(summary(r))
        return 0
    outcome = run_job(job(args))
    if outcome.error is not None:
        print(f"error: {outcome.error}", file=sys.stderr)
    if args.report and outcome.runs:
        Path(args.report).write_text("\n".join(markdown(r) for r in outcome.runs))
    if args.json:
        write_json(args.json, outcome)
    if args.junit:
        write_junit(args.junit, outcome)
    return outcome.status


if __name__ == "__main__":
    sys.exit(main())
