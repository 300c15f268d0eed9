"""One job of the conformance kit, as the CLI and the pytest plugin run it.

A :class:`Job` says what to run: an endpoint (:mod:`model_tests.conformance.local`'s targets,
moto, moto-server or a URL), the queue type and profile, the scenarios (generated for a seed,
a user's own, each checked against the SQS profile, optionally with the user's queue
attributes), the probes, and whether the user said ``--yes``. :func:`run_job` runs it and
returns an :class:`~model_tests.conformance.output.Outcome`; it never raises for what a job can
meet (a refused scenario, an endpoint that fails, Ctrl-C or SIGTERM): that is the outcome's
error, after the endpoint's queues were deleted. Before anything is created on an SQS endpoint
it prints the account and region, the queues and the bound on requests (:func:`preamble`), and
an endpoint that is not local stops there without ``yes``.
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from model_tests.conformance.local import FIFO_TARGETS, is_target, runner
from model_tests.conformance.oracle import PROFILES
from model_tests.conformance.output import Outcome
from model_tests.conformance.report import (
    KitRun,
    Runner,
    generate_scenarios,
    probes,
    run_kit,
    summary,
)
from model_tests.scenario_format import ScenarioError, parse_line

if TYPE_CHECKING:
    from model_tests.conformance.sqs import SqsEndpoint

#: The queue attributes a job may set on every scenario (the scenario format's names).
QUEUE_ATTRIBUTES: Final = ("visibility_timeout", "max_receives", "delay", "fifo")


def default_profile(endpoint: str, fifo: bool) -> str:
    """The profile a run is judged by unless ``--profile`` says: ``strict`` for the project's
    own queue (an in-process target, or this project's server over HTTP), else what AWS
    documents for the queue type."""
    from model_tests.conformance.sqs import SERVER_ENDPOINTS

    if is_target(endpoint) or endpoint in SERVER_ENDPOINTS:
        return "strict"
    return "sqs-fifo" if fifo else "sqs-standard"


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
    opened: SqsEndpoint | None = None,
) -> KitRun:
    """One run of the kit on ``endpoint`` (``opened``, or opened and closed here, receives
    long-polling ``wait_time`` seconds; an in-process target of :mod:`.local` needs no
    opening): ``given`` scenarios, or ``scenarios`` generated ones for ``seed_value``."""
    from model_tests.conformance.profile import check_profile
    from model_tests.conformance.sqs import open_endpoint, run_on_sqs

    fifo = fifo or endpoint in FIFO_TARGETS
    chosen = PROFILES[profile or default_profile(endpoint, fifo)]
    drawn = list(given) if given is not None else generated(fifo, scenarios, seed_value)

    def judge(run: Runner) -> KitRun:
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

    if is_target(endpoint):
        if wait_time:
            raise ValueError(f"wait_time must be 0 on {endpoint} (an in-process queue)")
        return judge(runner(endpoint))
    if opened is not None:
        endpoint_open = opened
        return judge(lambda scenario: run_on_sqs(scenario, endpoint_open))
    with open_endpoint(endpoint, wait_time=wait_time) as fresh:
        return judge(lambda scenario: run_on_sqs(scenario, fresh))


def generated(fifo: bool, n: int, seed_value: int) -> list[dict[str, Any]]:
    """The ``n`` generated scenarios of the SQS profile for ``seed_value``."""
    from model_tests.conformance.profile import sqs_scenarios

    return generate_scenarios(sqs_scenarios(fifo=fifo), n, seed_value)


def probe_run(
    endpoint: str,
    fifo: bool,
    *,
    profile: str | None = None,
    wait_time: int = 0,
    opened: SqsEndpoint | None = None,
) -> KitRun:
    """The :data:`~model_tests.conformance.report.PROBES` of one queue type on ``endpoint``,
    each its own finding, as written."""
    chosen = probes(fifo or endpoint in FIFO_TARGETS)
    return kit_run(
        endpoint,
        fifo=fifo,
        profile=profile,
        given=[sc for _, sc in chosen],
        source="probes",
        labels=[what for what, _ in chosen],
        wait_time=wait_time,
        opened=opened,
    )


class Refused(ValueError):
    """The run was refused before anything was created: bad scenarios, no ``--yes``."""


def read_scenarios(path: str, fifo: bool) -> list[dict[str, Any]]:
    """The scenarios of a JSON-lines file (blank lines and lines starting with ``#`` skipped),
    each checked: valid, of the queue type, inside the SQS profile
    (:func:`model_tests.conformance.profile.check_profile`). :class:`Refused` names every line
    refused, each with all its reasons."""
    import json

    out: list[dict[str, Any]] = []
    refusals: list[str] = []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path} line {number}"
        try:
            parse_line(line)
        except ScenarioError as e:
            refusals.append(f"{where}: {e}")
            continue
        raw = json.loads(line)
        found = _refusals(raw, fifo, where)
        if found:
            refusals += found
        else:
            out.append(raw)
    if refusals:
        raise Refused(f"{len(refusals)} scenario(s) refused:\n" + "\n".join(refusals))
    return out


def _reruns(shrink_findings: bool) -> int:
    """How many runs one finding may take after its scenarios ran: the shrinker's budget and
    the run of the result (:func:`report.run_kit`'s default ``max_runs``), or that one run."""
    import inspect

    budget = inspect.signature(run_kit).parameters["max_runs"].default
    return int(budget) + 1 if shrink_findings else 1


def preamble(
    endpoint: str,
    opened: SqsEndpoint | None,
    scenarios: Sequence[dict[str, Any]],
    *,
    fifo: bool,
    shrink_findings: bool,
) -> dict[str, Any]:
    """Print, before anything is created, where the run goes (account and region, by STS), the
    queues it creates and deletes and the requests it makes at most; the same as data."""
    from model_tests.conformance.local import is_local
    from model_tests.conformance.oracle import with_drain
    from model_tests.conformance.plan import plan
    from model_tests.conformance.sqs import caller_identity
    from model_tests.scenario_format import parse_scenario

    local = is_local(endpoint)
    where = "local" if local else "NOT local"
    if opened is None:
        print(
            f"endpoint {endpoint} (local): the project's queue in this process; no account, "
            "region, queues or requests",
            flush=True,
        )
        return {"endpoint": endpoint, "local": True}
    account, identity = caller_identity(opened)
    if account is None:
        then = "continuing (a local endpoint)" if local else "continuing"
        who = f"account unknown: {identity}; {then}"
    else:
        who = f"account {account} ({identity})"
    print(f"endpoint {endpoint} ({where}): {who}, region {opened.region}", flush=True)
    # Each scenario runs with the drain the kit adds after it: its requests count too.
    made = plan([with_drain(parse_scenario(s)) for s in scenarios], _reruns(shrink_findings))
    for line in made.lines(opened.prefix, fifo):
        print(line, flush=True)
    return {
        "endpoint": endpoint,
        "local": local,
        "account": account,
        "identity": identity,
        "region": opened.region,
        "queue_prefix": opened.prefix,
        "plan": {
            "scenarios": made.scenarios,
            "queues": made.queues,
            "requests": made.requests,
            "costliest_scenario": made.costliest,
            "reruns_per_finding": made.reruns,
        },
    }


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While the run is under way, SIGTERM (how a CI job is cancelled) raises
    ``KeyboardInterrupt`` as Ctrl-C does, so the queues are deleted on the way out."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@dataclass(frozen=True, slots=True)
class Job:
    """What one run of the kit does (see the module docstring).

    ``given``: the user's scenarios (decoded JSON) instead of ``scenarios`` generated ones for
    ``seed``; ``scenarios_file``: read them from JSON lines (:func:`read_scenarios`).
    ``queue``: attributes set on every scenario (:func:`with_queue`). ``probes``: also run the
    probes. ``yes``: go ahead on an endpoint that is not local.
    """

    endpoint: str
    fifo: bool = False
    profile: str | None = None
    scenarios: int = 100
    seed: int = 0
    given: Sequence[Mapping[str, Any]] | None = None
    scenarios_file: str | None = None
    queue: Mapping[str, Any] = field(default_factory=dict)
    probes: bool = False
    yes: bool = False
    shrink: bool = True
    wait_time: int = 0


def _refusals(raw: Mapping[str, Any], fifo: bool, where: str) -> list[str]:
    """Why the scenario ``raw`` cannot run in this job (empty: it can)."""
    from model_tests.conformance.profile import check_profile
    from model_tests.scenario_format import parse_scenario

    try:
        parsed = parse_scenario(raw)
    except ScenarioError as e:
        return [f"{where}: {e}"]
    if parsed.config.fifo != fifo:
        want = "a FIFO queue's (this run is FIFO)" if fifo else "a standard queue's"
        hint = "drop --fifo" if fifo else "use --fifo or --endpoint impl-fifo"
        return [f"{where}: the scenario must be {want}: {hint}"]
    reasons = check_profile(parsed)
    if reasons:
        return [f"{where}: outside the SQS profile: {'; '.join(reasons)}"]
    return []


def check_queue(queue: Mapping[str, Any]) -> None:
    """A ``ValueError`` naming each key of ``queue`` that is not in :data:`QUEUE_ATTRIBUTES`."""
    unknown = sorted(set(queue) - set(QUEUE_ATTRIBUTES))
    if unknown:
        raise ValueError(
            f"queue: unknown attribute(s) {', '.join(unknown)}; the attributes are "
            f"{', '.join(QUEUE_ATTRIBUTES)}"
        )


def with_queue(
    scenarios: Sequence[Mapping[str, Any]], queue: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """``scenarios`` with the queue attributes ``queue`` (:data:`QUEUE_ATTRIBUTES`) set on
    each (:func:`check_queue` first)."""
    check_queue(queue)
    return [{**s, **queue} for s in scenarios]


def scenarios_of(job: Job, fifo: bool) -> tuple[list[dict[str, Any]], bool]:
    """The scenarios ``job`` runs, each checked (:class:`Refused` names every one refused),
    and whether they are the user's."""
    check_queue(job.queue)
    if job.scenarios_file is not None:
        given: list[dict[str, Any]] | None = read_scenarios(job.scenarios_file, fifo)
    elif job.given is not None:
        given = [dict(s) for s in job.given]
    else:
        given = None
    if given is not None:
        drawn = with_queue(given, job.queue)
        refusals = [r for i, s in enumerate(drawn) for r in _refusals(s, fifo, f"scenario {i}")]
        if refusals:
            raise Refused(f"{len(refusals)} scenario(s) refused:\n" + "\n".join(refusals))
        return drawn, True
    if not job.queue:
        return generated(fifo, job.scenarios, job.seed), False
    # The generator draws its own queue attributes: draw more, keep those that stay inside the
    # profile with the user's, in the order drawn (the same for a seed).
    kept: list[dict[str, Any]] = []
    asked = job.scenarios
    while len(kept) < job.scenarios and asked <= 64 * max(job.scenarios, 1):
        asked *= 4
        drawn = with_queue(generated(fifo, asked, job.seed), job.queue)
        kept = [s for s in drawn if not _refusals(s, fifo, "")][: job.scenarios]
    if len(kept) < job.scenarios:
        raise Refused(
            f"queue: only {len(kept)} of {job.scenarios} generated scenarios fit the queue "
            f"attributes {dict(job.queue)} inside the SQS profile"
        )
    return kept, False


def _expected(error: Exception) -> bool:
    """Whether ``error`` is the endpoint's (an SQS refusal, botocore's connection and
    credential errors, the queues left) rather than a fault of the kit."""
    from model_tests.conformance.sqs import LeftQueues, SqsError

    return isinstance(error, SqsError | LeftQueues | OSError) or type(error).__module__.startswith(
        ("botocore", "boto3", "urllib3")
    )


def run_job(job: Job) -> Outcome:
    """Run ``job``; every error, Ctrl-C included, becomes the :class:`Outcome`'s error, after
    the endpoint's queues were deleted."""
    from model_tests.conformance.local import is_local
    from model_tests.conformance.sqs import open_endpoint

    runs: list[KitRun] = []
    labelled: dict[int, tuple[str, ...]] = {}
    context: dict[str, Any] = {"seed": job.seed}
    endpoint = job.endpoint
    fifo = job.fifo or endpoint in FIFO_TARGETS or bool(job.queue.get("fifo"))
    try:
        with terminate_as_interrupt(), contextlib.ExitStack() as stack:
            drawn, users = scenarios_of(job, fifo)
            chosen = probes(fifo) if job.probes else []
            opened = None
            if not is_target(endpoint):
                opened = stack.enter_context(open_endpoint(endpoint, wait_time=job.wait_time))
            elif job.wait_time:
                raise ValueError(f"wait_time must be 0 on {endpoint} (an in-process queue)")
            context.update(
                preamble(
                    endpoint,
                    opened,
                    [*drawn, *(sc for _, sc in chosen)],
                    fifo=fifo,
                    shrink_findings=job.shrink,
                )
            )
            if not is_local(endpoint) and not job.yes:
                raise Refused(
                    f"{endpoint} is not a local endpoint: it creates queues and makes requests "
                    "in the account above; run again with --yes to go ahead"
                )
            run = kit_run(
                endpoint,
                fifo=fifo,
                profile=job.profile,
                seed_value=job.seed,
                given=drawn,
                shrink_findings=job.shrink,
                source="given" if users else "generated",
                opened=opened,
            )
            runs.append(run)
            print(summary(run), flush=True)
            if chosen:
                probe = probe_run(endpoint, fifo, profile=job.profile, opened=opened)
                runs.append(probe)
                labelled[len(runs) - 1] = tuple(what for what, _ in chosen)
                print(summary(probe), flush=True)
    except KeyboardInterrupt:
        stopped = "interrupted (Ctrl-C or SIGTERM)"
        return Outcome(tuple(runs), labelled, stopped, context, interrupted=True)
    except Exception as e:
        if isinstance(e, ValueError):
            text = str(e)  # a refusal or a bad argument: the message says it all
        else:
            text = f"{type(e).__name__}: {e}"
            if not _expected(e):
                # A fault of the kit itself: the traceback is what its report needs.
                traceback.print_exc(file=sys.stderr)
        return Outcome(tuple(runs), labelled, text, context)
    return Outcome(tuple(runs), labelled, None, context)
