"""The conformance kit's run and what it writes: verdicts grouped by explanation, shrunk, reported.

:func:`run_kit` runs scenarios on an endpoint (any ``run`` function: an SQS endpoint, or one of
the project's own targets in the tests), judges each run with :func:`oracle.explain`, groups the
divergences by their explanation, and shrinks one scenario per group (the one with the fewest
ops) to a minimal one that keeps that explanation. The result, a :class:`KitRun`, is printed
by :func:`summary`, written as Markdown by :func:`markdown` (``--report``), and assembled for the
project's own page by :func:`conformance_doc` (``docs/conformance.md``).

Everything here is deterministic for a seed: the scenarios come from Hypothesis's generator
with a fixed seed (:func:`generate_scenarios`), an endpoint on a patched clock behaves the same
every run, and the report contains no timing, so a committed report can be checked for
freshness by regenerating it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from hypothesis import strategies as st
from hypothesis.control import BuildContext
from hypothesis.errors import StopTest, UnsatisfiedAssumption
from hypothesis.internal.conjecture.data import ConjectureData

from model_tests.conformance.oracle import (
    LOST,
    NO_VERDICT,
    PROFILES,
    RELAXATIONS,
    Explanation,
    Profile,
    Relaxation,
    drain_ops,
    explain,
    json_line,
    shrink,
    to_json,
    with_drain,
)
from model_tests.scenario_format import Scenario, parse_scenario
from model_tests.targets import Output, run_scenario

#: A function that runs one scenario on an endpoint and returns its outputs.
Runner = Callable[[Scenario], list[Output]]

#: The group name of runs that no set of relaxations explains, before the op name.
UNEXPLAINED: Final = "unexplained"


def generate_scenarios(
    strategy: st.SearchStrategy[dict[str, Any]], n: int, seed_value: int
) -> list[dict[str, Any]]:
    """``n`` scenarios drawn from ``strategy``: scenario ``i`` is drawn from ``(seed_value, i)``
    alone, so the first ``n`` scenarios of a seed are the same for every count ``>= n``.

    Each is one draw of Hypothesis's generator from its own seeded random source (no run of
    ``@given``, whose examples depend on how many are asked for, and whose first is always
    the simplest); nothing from earlier runs changes what is drawn. A draw the strategy
    rejects is drawn again from ``(seed_value, i, attempt)``.
    """
    if n < 0:
        raise ValueError(f"n: must be >= 0, got {n}")
    return [_draw(strategy, seed_value, i) for i in range(n)]


def _draw(strategy: st.SearchStrategy[dict[str, Any]], seed_value: int, i: int) -> dict[str, Any]:
    for attempt in range(_ATTEMPTS):
        source = random.Random(
            f"{seed_value}:{i}" if attempt == 0 else f"{seed_value}:{i}:{attempt}"
        )
        data = ConjectureData(random=source)
        try:
            # Some strategies (st.data(), st.composite's helpers) need a build context.
            with BuildContext(data, wrapped_test=_draw):
                return data.draw(strategy)
        except (StopTest, UnsatisfiedAssumption):
            continue
    raise ValueError(f"strategy: no valid draw for scenario {i} in {_ATTEMPTS} attempts")


#: How many times :func:`generate_scenarios` redraws a rejected draw.
_ATTEMPTS: Final = 100


@dataclass(frozen=True, slots=True)
class Finding:
    """One behaviour: the divergences whose minimal scenarios share an explanation, with one of
    those minimal scenarios.

    ``key`` names the explanation (:func:`group_key`), ``count`` how many of the run's scenarios
    showed it, ``scenario`` the shrunk scenario (JSON, without the drain the kit adds:
    :attr:`drain`), ``outputs`` the endpoint's outputs on it and ``model`` the model's (both
    with the drain's), ``explanation`` the oracle's on it, ``admitted`` the profile's verdict.
    """

    key: str
    count: int
    scenario: dict[str, Any]
    outputs: list[Output]
    model: list[Output]
    explanation: Explanation
    admitted: bool
    #: What the scenario was written to show (a probe's description), if it was.
    label: str | None = None

    @property
    def relaxations(self) -> frozenset[Relaxation]:
        """Every relaxation named by the minimal sets (empty when unexplained)."""
        return frozenset(r for s in self.explanation.sets for r in s)

    @property
    def no_verdict(self) -> bool:
        """Not admitted, and not decided either: a search ran out of budget."""
        return not self.admitted and bool(self.explanation.exhausted)

    @property
    def drain(self) -> list[list[Any]]:
        """The ops the kit ran after the scenario's (:func:`oracle.drain_ops`), as JSON."""
        return drain_ops(self.scenario) if len(self.outputs) > len(self.scenario["ops"]) else []


#: :attr:`KitRun.verdict`'s values.
ADMITTED: Final = "admitted"
NOT_ADMITTED: Final = "not admitted"


@dataclass(frozen=True, slots=True)
class KitRun:
    """The verdicts of one run of the kit: one endpoint, one queue type, one profile."""

    endpoint: str
    fifo: bool
    profile: Profile
    seed: int
    scenarios: int
    conforming: int
    findings: tuple[Finding, ...]
    #: What the scenarios were: ``"generated"`` (from the seed) or ``"probes"`` (:data:`PROBES`).
    source: str = "generated"

    @property
    def admitted(self) -> bool:
        """Whether the profile admits every behaviour seen (the CLI's exit status 0)."""
        return all(f.admitted for f in self.findings)

    @property
    def verdict(self) -> str:
        """:data:`ADMITTED`, :data:`NOT_ADMITTED` (some finding is, definitely: it wins), or
        :data:`oracle.NO_VERDICT` (some finding could not be decided within the budget)."""
        if any(not f.admitted and not f.no_verdict for f in self.findings):
            return NOT_ADMITTED
        if any(f.no_verdict for f in self.findings):
            return NO_VERDICT
        return ADMITTED

    @property
    def queue_type(self) -> str:
        return "FIFO" if self.fifo else "standard"


def group_key(explanation: Explanation) -> str:
    """The name of a run's explanation: its key (:attr:`Explanation.key`: ``lost`` when a
    message was lost, ``no verdict`` when the search ran out of budget); for any other
    unexplained run, also the op at which every relaxation together fails (different failures
    are different behaviours)."""
    if explanation.unexplained and not (explanation.lost or explanation.no_verdict):
        op = explanation.relaxed.op
        name = op[0] if isinstance(op, list) and op else "?"
        return f"{UNEXPLAINED}: {name}"
    return explanation.key


def _keeps(key: str) -> Callable[[Scenario, Sequence[Output]], bool]:
    """The shrinker's test: a run still in the group ``key``."""

    def keep(scenario: Scenario, outputs: Sequence[Output]) -> bool:
        return group_key(explain(scenario, outputs)) == key

    return keep


#: Batch ops by the op they batch: a scenario's *skeleton* names its ops this way.
_SINGLE: Final = {
    "enqueue_batch": "enqueue",
    "reserve_batch": "reserve",
    "ack_batch": "ack",
    "extend_batch": "extend",
}


def _skeleton(scenario: Scenario) -> tuple[str, ...]:
    """The names of a scenario's ops, a batch named as its single op."""
    names = (to_json_op[0] for to_json_op in to_json(scenario)["ops"])
    return tuple(_SINGLE.get(n, n) for n in names)


def _contains(whole: tuple[str, ...], part: tuple[str, ...]) -> bool:
    """Whether ``part`` is a subsequence of ``whole``."""
    it = iter(whole)
    return all(name in it for name in part)


def _first_op(explanation: Explanation) -> str:
    op = explanation.strict.op
    return str(op[0]) if isinstance(op, list) and op else "?"


def run_kit(
    scenarios: Sequence[Mapping[str, Any]],
    run: Runner,
    *,
    profile: Profile,
    endpoint: str,
    fifo: bool,
    seed_value: int = 0,
    valid: Callable[[Scenario], bool] | None = None,
    shrink_findings: bool = True,
    max_runs: int = 300,
    source: str = "generated",
    labels: Sequence[str] | None = None,
) -> KitRun:
    """Run every scenario, followed by its drain (:func:`oracle.with_drain`), with ``run``;
    explain each; group the divergences by their *minimal* explanation; shrink one scenario
    per group (keeping its explanation; ``valid`` keeps shrunk scenarios inside the profile).

    Grouping: the divergences are first sorted by their explanation (:func:`group_key`); the
    smallest of a sort is shrunk, and its minimal scenario names a group: that explanation,
    the op where it first departs from the model, and its *skeleton* (its ops' names, a
    batch as its single op). Every scenario of the sort whose ops contain that skeleton (in
    order) joins the group; the smallest left is shrunk next, and so on, so two different
    behaviours that one relaxation set (or none) explains, such as two bugs that each deliver
    a message the model deduplicated, are two groups, each with its minimal scenario. Without
    shrinking, a sort is one group.

    With ``labels`` (one per scenario: what it was written to show, as :data:`PROBES`) every
    divergent scenario is its own finding, labelled, in the given order, as written.
    """
    if labels is not None and len(labels) != len(scenarios):
        raise ValueError(f"labels: {len(labels)} labels for {len(scenarios)} scenarios")

    def drained(scenario: Scenario) -> list[Output]:
        return run(with_drain(scenario))

    def finding(
        key: str, count: int, scenario: Scenario, outputs: list[Output], label: str | None = None
    ) -> Finding:
        e = explain(scenario, outputs)
        return Finding(
            key=key,
            count=count,
            scenario=to_json(scenario),
            outputs=outputs,
            model=run_scenario(with_drain(scenario), "model"),
            explanation=e,
            admitted=profile.admits(e),
            label=label,
        )

    sorts: dict[str, list[Scenario]] = {}
    conforming = 0
    findings: list[Finding] = []
    for i, raw in enumerate(scenarios):
        parsed = parse_scenario(raw)
        outputs = drained(parsed)
        e = explain(parsed, outputs)
        if e.conforms:
            conforming += 1
        elif labels is not None:
            findings.append(finding(group_key(e), 1, parsed, outputs, labels[i]))
        else:
            sorts.setdefault(group_key(e), []).append(parsed)
    for key, members in sorts.items():
        pending = sorted(members, key=lambda s: len(s.ops))
        groups: dict[tuple[str, str, tuple[str, ...]], tuple[Scenario, list[Output], int]] = {}
        while pending:
            minimal = pending[0]
            if shrink_findings:
                minimal = shrink(minimal, drained, _keeps(key), valid=valid, max_runs=max_runs)
                skeleton = _skeleton(minimal)
                joined = [m for m in pending if _contains(_skeleton(m), skeleton)] or pending[:1]
            else:
                joined = pending
            pending = [m for m in pending if not any(m is j for j in joined)]
            outputs = drained(minimal)
            name = (key, _first_op(explain(minimal, outputs)), _skeleton(minimal))
            if name in groups:
                first, first_outputs, count = groups[name]
                groups[name] = (first, first_outputs, count + len(joined))
            else:
                groups[name] = (minimal, outputs, len(joined))
        for minimal, outputs, count in groups.values():
            findings.append(finding(key, count, minimal, outputs))
    if labels is None:
        findings.sort(key=lambda f: (_last(f.key), -f.count, f.key))
    return KitRun(
        endpoint=endpoint,
        fifo=fifo,
        profile=profile,
        seed=seed_value,
        scenarios=len(scenarios),
        conforming=conforming,
        findings=tuple(findings),
        source=source,
    )


def _last(key: str) -> bool:
    """Whether a finding sorts after the explained ones (unexplained, lost, no verdict)."""
    return key.startswith(UNEXPLAINED) or key in (LOST, NO_VERDICT)


# =============================================================================================
# What is printed and written
# =============================================================================================


def _compact(x: object) -> str:
    return json.dumps(x, separators=(",", ":"))


def summary(run: KitRun) -> str:
    """The lines the CLI prints: counts, one line per behaviour, the verdict."""
    divergent = run.scenarios - run.conforming
    lines = [
        f"{run.endpoint}, {run.queue_type} queues, profile {run.profile.name}, "
        f"{_what(run)}: {run.conforming} as the model, "
        f"{divergent} divergent in {len(run.findings)} behaviours",
    ]
    width = max((len(f.key) for f in run.findings), default=0)
    for f in run.findings:
        admitted = _status(f)
        lines.append(f"  {f.key:<{width}}  {f.count:>4}  {admitted:<12}  {_first(f)}")
        lines.append(f"  {'':<{width}}        minimal: {json_line(f.scenario)}")
    verdict = {NOT_ADMITTED: "NOT admitted", NO_VERDICT: "no verdict"}.get(run.verdict, ADMITTED)
    lines.append(f"verdict: {verdict} by profile {run.profile.name}")
    return "\n".join(lines)


def _status(f: Finding) -> str:
    return ADMITTED if f.admitted else "no verdict" if f.no_verdict else "NOT admitted"


def _what(run: KitRun) -> str:
    if run.source == "generated":
        return f"{run.scenarios} scenarios (seed {run.seed})"
    if run.source == "probes":
        return f"{run.scenarios} probes"
    return f"{run.scenarios} {run.source} scenarios"


def _first(f: Finding) -> str:
    """Where the minimal scenario first departs from the model: the op, both outputs."""
    v = f.explanation.strict
    model = _compact(v.allowed[0]) if v.allowed else "?"
    return f"op {v.op_index} {_compact(v.op)}: endpoint {_compact(v.observed)}, model {model}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _aws(f: Finding) -> str:
    """What AWS documents about the behaviour: the cited sentence of each relaxation."""
    if not f.relaxations:
        return "nothing that allows it (no relaxation explains it)"
    parts = []
    for r in RELAXATIONS:
        if r in f.relaxations:
            c = r.citation
            verb = "documents" if r.documented else "documents the opposite"
            parts.append(f'{r.name} ({verb}): "{c.quote}" ([source]({c.url}))')
    return "<br>".join(parts)


def _behaviour_table(run: KitRun, anchor: str) -> list[str]:
    endpoint = run.endpoint
    lines = [
        f"| # | relaxation needed | what AWS documents | what {endpoint} does "
        f"| what this project does | {run.profile.name} admits | scenarios |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, f in enumerate(run.findings, start=1):
        v = f.explanation.strict
        model = _compact(v.allowed[0]) if v.allowed else "?"
        seen = f"op {v.op_index} `{_compact(v.op)}` gives `{_compact(v.observed)}`"
        if f.label is not None:
            seen = f"{f.label}: {seen}"
        ours = f"`{model}`"
        lines.append(
            f"| [{i}](#{anchor}-{i}) | {_cell(f.key)} | {_cell(_aws(f))} | {_cell(seen)} "
            f"| {_cell(ours)} | {'yes' if f.admitted else '**no**'} | {f.count} |"
        )
    return lines


def _behaviour_details(run: KitRun, anchor: str) -> list[str]:
    lines: list[str] = []
    for i, f in enumerate(run.findings, start=1):
        lines += [
            f'<a id="{anchor}-{i}"></a>',
            f"**{i}. {f.key}**" + ("" if f.admitted else f" (not admitted by {run.profile.name})"),
            "",
        ]
        for r in RELAXATIONS:
            if r in f.relaxations:
                lines.append(f"- {r.name}: {r.meaning}.")
        if not f.relaxations:
            lines.append(f"- {_cell(str(f.explanation.relaxed))}.")
        drain = [f"# then the kit's drain: {_compact(f.drain)}"] if f.drain else []
        lines += [
            "",
            "```",
            json_line(f.scenario),
            *drain,
            f"# {run.endpoint}: {_compact(f.outputs)}",
            f"# model:  {_compact(f.model)}",
            "```",
            "",
        ]
    return lines


def markdown(run: KitRun, *, heading: str = "#", anchor: str = "behaviour") -> str:
    """One run as Markdown: the counts, the behaviours table, each minimal scenario."""
    divergent = run.scenarios - run.conforming
    what = {
        "probes": f"The {run.scenarios} probes (scenarios written to show the behaviours "
        "measured when the kit was built)",
        "generated": f"{run.scenarios} generated scenarios of the SQS profile (seed {run.seed})",
    }.get(run.source, f"{run.scenarios} {run.source} scenarios")
    lines = [
        f"{heading} {run.endpoint}, {run.queue_type} queues, {run.source}",
        "",
        f"{what}: {run.conforming} "
        f"gave the model's outputs, {divergent} diverged, in {len(run.findings)} behaviours. "
        f"Profile `{run.profile.name}`: "
        + ("admits every behaviour seen." if run.admitted else "does **not** admit all of them."),
        "",
    ]
    if run.findings:
        lines += _behaviour_table(run, anchor)
        lines += [
            "",
            "Each minimal scenario runs as it is, followed by the drain the kit adds (shown "
            "below it), with `python -m model_tests.harness --target model` (the model's "
            "outputs) and, through the kit, on the endpoint "
            "(`python -m model_tests.conformance --endpoint ... --scenarios-file F`).",
            "",
        ]
        lines += _behaviour_details(run, anchor)
    return "\n".join(lines).rstrip() + "\n"


def relaxations_table() -> str:
    """The relaxations with their meaning and citation, and the profiles that admit each."""
    lines = [
        "| relaxation | meaning | AWS's documentation | profiles |",
        "|---|---|---|---|",
    ]
    for r in RELAXATIONS:
        profiles = ", ".join(p.name for p in PROFILES.values() if r in p.relaxations) or "none"
        c = r.citation
        quote = f'"{c.quote}" ([source]({c.url}))'
        if not r.documented:
            quote = f"documents the opposite: {quote}"
        lines.append(f"| {r.name} | {_cell(r.meaning)} | {_cell(quote)} | {profiles} |")
    return "\n".join(lines) + "\n"


def _same_behaviours(a: KitRun, b: KitRun) -> bool:
    return [(f.key, f.count, f.scenario, f.outputs) for f in a.findings] == [
        (f.key, f.count, f.scenario, f.outputs) for f in b.findings
    ] and a.conforming == b.conforming


#: The hand-written part of ``docs/conformance.md``, emitted by the generator above the tables.
INTRO: Final = """\
The conformance kit runs this project's model-based scenarios against an SQS endpoint through
boto3 and judges what the endpoint did with a *relaxed* oracle: the outputs must be a behaviour
of the spec (`spec/`), relaxed by named relaxations, each resting on a sentence of AWS's
documentation. For every divergence the kit names the smallest set of relaxations that explains
it, or says it is unexplained, and shrinks a scenario that shows it to a minimal one. The strict
profile is this project's contract; `sqs-standard` and `sqs-fifo` are what AWS documents.

```sh
pip install -e '.[conformance]'       # boto3, moto[server]
python -m model_tests.conformance --endpoint moto                 # moto in-process
python -m model_tests.conformance --endpoint moto-server --fifo   # a ThreadedMotoServer over HTTP
python -m model_tests.conformance --endpoint https://sqs.eu-west-1.amazonaws.com --scenarios 20
```

Exit status: 0 when the profile admits everything seen, 1 when some divergence is not
admitted, 2 for an error or when the oracle's search ran out of budget before a verdict ("no
verdict"). `--report PATH` writes a page like the sections below for one endpoint and queue
type. The scenarios of a seed nest: the first *n* of `--scenarios N` are the same for every
`N >= n`, so a short CI run is a prefix of a longer one.

**Nothing lost is admitted.** Every scenario ends with a *drain* the kit adds: time moves past
every timer the scenario set, then receives of 10 (per queue; on a standard queue they hide
what they deliver, on a FIFO queue they use visibility 0 so each group's head comes back)
until every message must have come out, then the dead-letter queue is read. After it, every
message accepted and not deleted, purged or dead-lettered must have been delivered (on a FIFO
queue: every message a drain receive had to deliver), or the run is `lost`, which no profile
admits. A relaxation may delay a message, never lose it: `SHORT_POLL_SAMPLES` lets a receive
pass over a message once, and the next receive of its queue must deliver it (AWS: "if you
have fewer than 1,000 messages in your queue, a subsequent request will return your
messages"), in the drain and everywhere else.

## Running against a real endpoint

A URL endpoint (real SQS, ElasticMQ, LocalStack) is never run in this project's CI; to run the
kit in yours (exit statuses, `--json`, `--junit`, the pytest fixture, `--yes`), see
[conformance-ci.md](conformance-ci.md). Before you run one (details in the docstring of
`model_tests/conformance/sqs.py`):

1. **Credentials and region**: the usual boto3 chain (`AWS_PROFILE`, or `AWS_ACCESS_KEY_ID` and
   `AWS_SECRET_ACCESS_KEY`; the region in `AWS_REGION` or `AWS_DEFAULT_REGION`), and the
   region's URL. The kit prints the account, the region, the queues and a bound on the requests
   before it creates anything, and a URL off this machine needs `--yes`. The
   principal needs `sqs:CreateQueue`, `GetQueueAttributes`, `SendMessage`, `ReceiveMessage`,
   `DeleteMessage`, `ChangeMessageVisibility`, `PurgeQueue`, `DeleteQueue` on queues named
   `kit-*`.
2. **Costs**: every op is one request or more (`purge` two, `dead` two or more), plus two or
   three per queue created and deleted: tens of requests per scenario. Time is real
   (`advance` sleeps), so 20 scenarios take minutes.
3. **Queues**: each scenario creates `kit-<12 hex digits>-<n>` (`.fifo` on FIFO queues; a
   `-dlq` with `max_receives`) and deletes them when it ends, even when it fails. **If a run is
   killed**, delete what is left: `aws sqs list-queues --queue-name-prefix kit-`, then
   `aws sqs delete-queue --queue-url URL` for each.
4. **Purge**: SQS allows one `PurgeQueue` per queue every 60 seconds, and the deletion takes up
   to 60 seconds; the profile keeps purges of a queue 60 s apart, but no relaxation covers a
   message that the purge still deletes or shows in the minute after it.
5. **Time**: `advance` sleeps until the scenario's time (latency taken off); the profile keeps
   every `advance` a second away from a timer, so the ops between two `advance` must take well
   under a second: use a near region.
6. **Polling**: receives short-poll by default, and SQS then samples a subset of its servers: a
   receive may come back short or empty (`SHORT_POLL_SAMPLES`, in both SQS profiles).
   `--wait-time SECONDS` (1..20) long-polls, which queries every server; its cost is that a
   receive that finds nothing waits that long, time the scenario does not count (a timer due
   within it shows its message early): use `--wait-time 1`. moto endpoints refuse it (moto's
   long poll would block on the kit's patched clock, and moto never samples).

A profile admits a behaviour when one of its *smallest* explanations is inside the profile. A
larger set inside it may explain the behaviour too: with short polling, a message hidden for
no documented reason looks like receives that sampled no server holding it. So "not admitted"
names the simplest account of what the endpoint did; check it before calling it a bug.
"""


def conformance_doc(runs: Sequence[KitRun], command: str) -> str:
    """``docs/conformance.md``: the generated header, the intro, the relaxations, then per queue
    type the behaviours on each endpoint (one table when the endpoints agree)."""
    lines = [
        "# Conformance: SQS endpoints against the model",
        "",
        f"<!-- GENERATED by `{command}`; do not edit by hand: regenerate. -->",
        "",
        f"*Generated by `{command}`.*",
        "",
        INTRO,
        "## Relaxations and profiles",
        "",
        relaxations_table(),
    ]
    for p in PROFILES.values():
        names = ", ".join(r.name for r in RELAXATIONS if r in p.relaxations) or "none"
        lines.append(f"- `{p.name}` ({names}): {p.why}.")
    lines.append("")
    for fifo in (False, True):
        kind = "FIFO" if fifo else "Standard"
        if any(r.fifo == fifo for r in runs):
            lines += [f"## {kind} queues", ""]
        for source in ("generated", "probes"):
            group = [r for r in runs if r.fifo == fifo and r.source == source]
            if not group:
                continue
            first = group[0]
            if len(group) > 1 and all(_same_behaviours(first, r) for r in group[1:]):
                names = " and ".join(r.endpoint for r in group)
                lines += [
                    f"{kind} queues, {source}: identical on {names} (the same verdicts, the "
                    "same minimal scenarios, the same outputs); shown once.",
                    "",
                ]
                group = [first]
            for r in group:
                lines.append(markdown(r, heading="###", anchor=section_anchor(r)))
    return "\n".join(lines).rstrip() + "\n"


def section_anchor(run: KitRun) -> str:
    """The anchor prefix of a run's section in ``docs/conformance.md``."""
    return f"{'fifo' if run.fifo else 'std'}-{run.source}-{run.endpoint}"


def probe_scenario(
    ops: list[Any],
    *,
    fifo: bool = False,
    visibility_timeout: int = 1,
    max_receives: int | None = None,
) -> dict[str, Any]:
    """A scenario inside the SQS profile (unbounded) with these ops: how the probes, and the
    tests' hand-written divergences, are written."""
    sc: dict[str, Any] = {"capacity": None, "visibility_timeout": visibility_timeout}
    if fifo:
        sc["fifo"] = True
    if max_receives is not None:
        sc["max_receives"] = max_receives
    return {**sc, "ops": ops}


_REDELIVERED = [["enqueue", "a", "A"], ["reserve"], ["advance", 2], ["reserve"]]
_FIFO_REDELIVERED = [
    ["enqueue", "a", "A", {"group": "g"}],
    ["reserve"],
    ["advance", 2],
    ["reserve"],
]

#: Scenarios written to show each behaviour measured on moto 5.2.5 when the kit was built
#: whatever the generator happens to draw: (what it shows, the scenario).
PROBES: Final[tuple[tuple[str, dict[str, Any]], ...]] = (
    (
        "a stale delete after the redelivery deletes the redelivered copy",
        probe_scenario([*_REDELIVERED, ["ack", "a", 1], ["ack", "a", 2]]),
    ),
    (
        "a stale visibility change acts on the current delivery",
        probe_scenario([*_REDELIVERED, ["extend", "a", 1, 0], ["reserve"]]),
    ),
    (
        "a visibility change of a visible message hides it",
        probe_scenario(
            [
                ["enqueue", "a", "A"],
                ["reserve"],
                ["advance", 2],
                ["extend", "a", 1, 5],
                ["reserve"],
                ["advance", 6],
                ["reserve"],
            ],
        ),
    ),
    (
        "a redelivered message returns to its old place, not the tail",
        probe_scenario(
            [
                ["enqueue", "a", "A"],
                ["reserve"],
                ["enqueue", "b", "B"],
                ["advance", 2],
                ["reserve"],
            ],
        ),
    ),
    (
        "dead-lettering happens on the next receive, not at the deadline",
        probe_scenario(
            [["enqueue", "a", "A"], ["reserve"], ["advance", 2], ["dead"], ["reserve"], ["dead"]],
            max_receives=1,
        ),
    ),
    (
        "a stale delete on a FIFO queue succeeds and deletes the redelivery",
        probe_scenario(fifo=True, ops=[*_FIFO_REDELIVERED, ["ack", "a", 1], ["reserve"]]),
    ),
    (
        "a deduplicated FIFO send answers success",
        probe_scenario(
            fifo=True,
            ops=[
                ["enqueue", "a", "A", {"group": "g", "dedup": "x"}],
                ["enqueue", "b", "B", {"group": "g", "dedup": "x"}],
                ["reserve"],
                ["ack", "a", 1],
                ["reserve"],
            ],
        ),
    ),
    (
        "two messages of a FIFO group received together and released: the later one comes "
        "back first, alone",
        probe_scenario(
            fifo=True,
            ops=[
                ["enqueue", "a", "A", {"group": "g"}],
                ["enqueue", "b", "B", {"group": "g"}],
                ["reserve_batch", 2],
                ["advance", 2],
                ["reserve_batch", 2],
            ],
        ),
    ),
    (
        "a purge forgets the FIFO queue's deduplication ids",
        probe_scenario(
            fifo=True,
            ops=[
                ["enqueue", "a", "A", {"group": "g", "dedup": "x"}],
                ["purge"],
                ["enqueue", "b", "B", {"group": "g", "dedup": "x"}],
                ["reserve"],
            ],
        ),
    ),
)


def probes(fifo: bool) -> list[tuple[str, dict[str, Any]]]:
    """The :data:`PROBES` of one queue type: (what it shows, the scenario)."""
    return [(what, sc) for what, sc in PROBES if bool(sc.get("fifo")) == fifo]
