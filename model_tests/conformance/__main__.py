"""``python -m model_tests.conformance``: run the SQS profile's scenarios on an endpoint and judge.

    python -m model_tests.conformance --endpoint moto|moto-server|URL [--fifo]
        [--profile strict|sqs-standard|sqs-fifo] [--scenarios N] [--seed S]
        [--report PATH] [--scenario-file F] [--no-shrink] [--wait-time SECONDS]
    python -m model_tests.conformance --docs docs/conformance.md

Generated scenarios (:func:`model_tests.conformance.profile.sqs_scenarios`, the same ones for a
seed) or the scenarios of ``--scenario-file`` (JSON lines, each inside the SQS profile) run on
the endpoint; the relaxed oracle explains every divergence, groups them, shrinks one per group
(:mod:`model_tests.conformance.report`). The summary goes to standard output; ``--report``
writes it as Markdown. Exit status 0 when the profile (default: ``sqs-standard``, or
``sqs-fifo`` with ``--fifo``) admits everything seen, 1 when it does not, 2 for bad arguments
or a scenario outside the profile.

``--wait-time SECONDS`` (1..20, URL endpoints only) makes every receive a long poll:
``WaitTimeSeconds`` > 0 queries all of SQS's servers instead of a sample, so fewer receives
come back short or empty; but a receive that finds nothing waits that long, in real time the
scenario does not count (see :mod:`model_tests.conformance.sqs`, "Running against a real
endpoint"). moto endpoints refuse it: moto's long poll would block on the kit's patched clock.

``--docs PATH`` writes the project's ``docs/conformance.md``: moto in-process and moto-server,
standard and FIFO queues, with the fixed parameters :data:`DOC_SCENARIOS` and :data:`DOC_SEED`.

``--bench`` measures the endpoint through the kit instead (``docs/benchmarks.md``, section "SQS
endpoints through the conformance kit"): scenarios per second on the endpoint, of the oracle
and of the model, for the docs' scenarios; and the time of one send + receive + delete cycle
with 0, 100 and 1000 messages in flight (moto recounts its messages on every call).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from model_tests.conformance.oracle import PROFILES
from model_tests.conformance.report import (
    KitRun,
    conformance_doc,
    generate_scenarios,
    markdown,
    probes,
    run_kit,
    summary,
)
from model_tests.scenario_format import Scenario, ScenarioError, parse_line
from model_tests.targets import Output

#: How many scenarios per endpoint and queue type ``--docs`` runs, and with which seed.
DOC_SCENARIOS: Final = 300
DOC_SEED: Final = 16
#: The command that writes ``docs/conformance.md`` (named in its header).
DOC_COMMAND: Final = "python -m model_tests.conformance --docs docs/conformance.md"

EXIT_NOT_ADMITTED: Final = 1
EXIT_USAGE: Final = 2


def kit_run(
    endpoint: str,
    *,
    fifo: bool,
    profile: str | None = None,
    scenarios: int = 100,
    seed_value: int = 0,
    given: Sequence[dict[str, Any]] | None = None,
    shrink_findings: bool = True,
    source: str | None = None,
    labels: Sequence[str] | None = None,
    wait_time: int = 0,
) -> KitRun:
    """One run of the kit on ``endpoint`` (opened and closed here, receives long-polling
    ``wait_time`` seconds): ``given`` scenarios, or ``scenarios`` generated ones for
    ``seed_value``."""
    from model_tests.conformance.profile import check_profile, sqs_scenarios
    from model_tests.conformance.sqs import open_endpoint, run_on_sqs

    chosen = PROFILES[profile or ("sqs-fifo" if fifo else "sqs-standard")]
    drawn = (
        list(given)
        if given is not None
        else generate_scenarios(sqs_scenarios(fifo=fifo), scenarios, seed_value)
    )
    with open_endpoint(endpoint, wait_time=wait_time) as opened:

        def run(scenario: Scenario) -> list[Output]:
            return run_on_sqs(scenario, opened)

        return run_kit(
            drawn,
            run,
            profile=chosen,
            endpoint=endpoint,
            fifo=fifo,
            seed_value=seed_value,
            valid=lambda s: not check_profile(s),
            shrink_findings=shrink_findings,
            source=source or ("generated" if given is None else "given"),
            labels=labels,
        )


def probe_run(endpoint: str, fifo: bool) -> KitRun:
    """The :data:`~model_tests.conformance.report.PROBES` of one queue type on ``endpoint``,
    each its own finding, as written."""
    chosen = probes(fifo)
    return kit_run(
        endpoint,
        fifo=fifo,
        given=[sc for _, sc in chosen],
        source="probes",
        labels=[what for what, _ in chosen],
    )


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


def _read_scenarios(path: str, fifo: bool) -> list[dict[str, Any]]:
    """The scenarios of a JSON-lines file, each checked: valid, of the queue type, inside the
    SQS profile; a ``ValueError`` naming the line otherwise."""
    import json

    from model_tests.conformance.profile import check_profile

    out: list[dict[str, Any]] = []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            parsed = parse_line(line)
        except ScenarioError as e:
            raise ValueError(f"{path} line {number}: {e}") from None
        if parsed.config.fifo != fifo:
            raise ValueError(f"{path} line {number}: fifo must be {fifo} (use --fifo to match)")
        reasons = check_profile(parsed)
        if reasons:
            raise ValueError(f"{path} line {number}: outside the SQS profile: {reasons[0]}")
        out.append(json.loads(line))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m model_tests.conformance",
        description="Run the model's scenarios on an SQS endpoint and judge the outputs with "
        "the relaxed oracle.",
    )
    parser.add_argument(
        "--endpoint",
        default="moto",
        help="moto (in-process), moto-server (ThreadedMotoServer on 127.0.0.1) or an http(s) "
        "URL (credentials from the boto3 chain; real time)",
    )
    parser.add_argument("--fifo", action="store_true", help="FIFO queues")
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        help="what the endpoint is allowed (default: sqs-standard, or sqs-fifo with --fifo)",
    )
    parser.add_argument("--scenarios", type=int, default=100, help="how many to generate")
    parser.add_argument("--seed", type=int, default=0, help="the generator's seed")
    parser.add_argument("--report", help="write the report as Markdown to this path")
    parser.add_argument("--scenario-file", help="run these scenarios (JSON lines) instead")
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
    args = parser.parse_args(argv)
    if args.scenarios < 0:
        parser.error(f"--scenarios must be >= 0, got {args.scenarios}")
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
    try:
        given = _read_scenarios(args.scenario_file, args.fifo) if args.scenario_file else None
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        run = kit_run(
            args.endpoint,
            fifo=args.fifo,
            profile=args.profile,
            scenarios=args.scenarios,
            seed_value=args.seed,
            given=given,
            shrink_findings=not args.no_shrink,
            wait_time=args.wait_time,
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(summary(run))
    if args.report:
        Path(args.report).write_text(markdown(run))
    return 0 if run.admitted else EXIT_NOT_ADMITTED


if __name__ == "__main__":
    sys.exit(main())
