"""What the kit writes for a CI job: the exit status, ``--json`` and ``--junit`` files.

A run of the CLI ends in an :class:`Outcome`: the kit's runs (:class:`report.KitRun`, one per
set of scenarios: the generated or given ones, the probes), or the error that stopped it. Its
:attr:`Outcome.status` is the process's exit status:

- :data:`CONFORMS` (0): every behaviour seen is admitted by the profile;
- :data:`NOT_ADMITTED` (1): some divergence is not admitted (a definite verdict: it wins over
  a missing one);
- :data:`NO_VERDICT` (2): the kit could not judge: an error (the endpoint refused or crashed,
  a refused argument or scenario file), or a run the oracle could not decide within its search
  budget (:func:`no_verdict`).

:func:`json_document` is the run as data (profile, endpoint, seed, scenario count, verdicts,
each finding with its minimal scenario and outputs); :func:`junit_document` is JUnit XML as
GitLab, Jenkins and others read it: a ``testsuite`` per run with one ``testcase`` for the
scenarios that gave the model's outputs, one per finding and one per probe; a finding not
admitted is a ``failure``, one without a verdict (or the error that stopped the run) an
``error``. Both are written even when the run failed, so the job's artefacts say why.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from model_tests.conformance import oracle, report
from model_tests.conformance.oracle import RELAXATIONS
from model_tests.conformance.report import Finding, KitRun

CONFORMS: Final = 0
NOT_ADMITTED: Final = 1
NO_VERDICT: Final = 2
#: Names of the statuses, as the JSON document gives them.
VERDICTS: Final = {CONFORMS: "conforms", NOT_ADMITTED: "not admitted", NO_VERDICT: "no verdict"}
#: The ``format`` field of the JSON document; changes when a field changes meaning.
JSON_FORMAT: Final = "model_tests.conformance/1"
#: Characters XML 1.0 cannot hold (replaced by ``\\uXXXX`` in the JUnit file).
_NOT_XML: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def no_verdict(finding: Finding) -> bool:
    """Whether the oracle gave up on ``finding`` (its search outgrew the budget) instead of
    judging it (:attr:`report.Finding.no_verdict`)."""
    return finding.no_verdict


def finding_status(finding: Finding) -> int:
    """:data:`CONFORMS` for an admitted finding, else :data:`NOT_ADMITTED` or
    :data:`NO_VERDICT`."""
    if no_verdict(finding):
        return NO_VERDICT
    return CONFORMS if finding.admitted else NOT_ADMITTED


def run_status(run: KitRun) -> int:
    """The status of :attr:`report.KitRun.verdict`: a definite "not admitted" wins over
    "no verdict"."""
    return {
        report.ADMITTED: CONFORMS,
        report.NOT_ADMITTED: NOT_ADMITTED,
        oracle.NO_VERDICT: NO_VERDICT,
    }[run.verdict]


@dataclass(frozen=True, slots=True)
class Outcome:
    """Everything one CLI invocation found: its runs, or the error that stopped it.

    ``probes`` gives, for the index of each probe run in ``runs``, the labels of every probe it
    ran (a probe that gave the model's outputs has no finding, but is a test case). ``context``
    holds what was said before the run (account, region, the plan), for the JSON document.
    """

    runs: tuple[KitRun, ...] = ()
    probes: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    error: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)
    #: Whether Ctrl-C (or SIGTERM) stopped the run: its error says so too.
    interrupted: bool = False

    @property
    def status(self) -> int:
        """The exit status (see the module docstring)."""
        statuses = {run_status(r) for r in self.runs}
        if NOT_ADMITTED in statuses:
            return NOT_ADMITTED
        if self.error is not None or NO_VERDICT in statuses:
            return NO_VERDICT
        return CONFORMS

    @property
    def verdict(self) -> str:
        if self.error is not None and self.status != NOT_ADMITTED:
            return "error"
        return VERDICTS[self.status]


# -- JSON ----------------------------------------------------------------------------------------


def _names(relaxations: frozenset[Any]) -> list[str]:
    return [r.name for r in RELAXATIONS if r in relaxations]


def _finding(f: Finding) -> dict[str, Any]:
    strict = f.explanation.strict
    return {
        "key": f.key,
        "label": f.label,
        "count": f.count,
        "verdict": {
            CONFORMS: "admitted",
            NOT_ADMITTED: "not admitted",
            NO_VERDICT: "no verdict",
        }[finding_status(f)],
        "admitted": f.admitted,
        "explanations": [_names(s) for s in f.explanation.sets],
        "first_divergence": {
            "op_index": strict.op_index,
            "op": strict.op,
            "observed": strict.observed,
            "allowed": list(strict.allowed),
        },
        "scenario": f.scenario,
        "drain": f.drain,
        "outputs": f.outputs,
        "model": f.model,
    }


def _run(run: KitRun) -> dict[str, Any]:
    return {
        "endpoint": run.endpoint,
        "queue_type": run.queue_type,
        "profile": run.profile.name,
        "profile_relaxations": _names(run.profile.relaxations),
        "source": run.source,
        "seed": run.seed,
        "scenarios": run.scenarios,
        "conforming": run.conforming,
        "divergent": run.scenarios - run.conforming,
        "verdict": VERDICTS[run_status(run)],
        "findings": [_finding(f) for f in run.findings],
    }


def json_document(outcome: Outcome) -> dict[str, Any]:
    """The outcome as JSON data (see the module docstring)."""
    return {
        "format": JSON_FORMAT,
        "status": outcome.status,
        "verdict": outcome.verdict,
        "error": outcome.error,
        **dict(outcome.context),
        "runs": [_run(r) for r in outcome.runs],
    }


def write_json(path: str, outcome: Outcome) -> None:
    with open(path, "w", encoding="utf-8") as out:
        json.dump(json_document(outcome), out, indent=1)
        out.write("\n")


# -- JUnit ---------------------------------------------------------------------------------------


def _text(x: str) -> str:
    """``x`` with every character XML 1.0 cannot hold written as ``\\uXXXX``."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", x)


def _compact(x: object) -> str:
    return json.dumps(x, separators=(",", ":"))


def _details(f: Finding) -> str:
    strict = f.explanation.strict
    return "\n".join(
        [
            f"behaviour: {f.key} ({f.count} scenario(s))",
            f"first divergence: op {strict.op_index} {_compact(strict.op)}: the endpoint gave "
            f"{_compact(strict.observed)}, the model allows "
            f"{' or '.join(_compact(a) for a in strict.allowed) or 'nothing'}",
            f"minimal scenario: {_compact(f.scenario)}",
            f"then the kit's drain: {_compact(f.drain)}",
            f"endpoint: {_compact(f.outputs)}",
            f"model:    {_compact(f.model)}",
            f"relaxed: {f.explanation.relaxed}",
        ]
    )


def _case(
    suite: ET.Element, classname: str, name: str, status: int, message: str, body: str
) -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=_text(name))
    if status == NOT_ADMITTED:
        ET.SubElement(case, "failure", message=_text(message), type="NotAdmitted").text = _text(
            body
        )
    elif status == NO_VERDICT:
        ET.SubElement(case, "error", message=_text(message), type="NoVerdict").text = _text(body)
    elif body:
        ET.SubElement(case, "system-out").text = _text(body)


def _suite(root: ET.Element, run: KitRun, probes: Sequence[str] | None) -> None:
    name = f"{run.endpoint}, {run.queue_type} queues, profile {run.profile.name}, {run.source}"
    suite = ET.SubElement(root, "testsuite", name=_text(name))
    props = ET.SubElement(suite, "properties")
    for key, value in (
        ("endpoint", run.endpoint),
        ("queue_type", run.queue_type),
        ("profile", run.profile.name),
        ("source", run.source),
        ("seed", str(run.seed)),
        ("scenarios", str(run.scenarios)),
    ):
        ET.SubElement(props, "property", name=key, value=_text(value))
    classname = f"conformance.{run.queue_type}.{run.source}"
    profile = run.profile.name

    def finding_case(f: Finding, name: str) -> None:
        status = finding_status(f)
        message = {
            NOT_ADMITTED: f"{f.key}: not admitted by profile {profile}",
            NO_VERDICT: f"{f.key}: no verdict (the oracle's search outgrew its budget)",
        }.get(status, f"{f.key}: admitted by profile {profile}")
        _case(suite, classname, name, status, message, _details(f))

    if probes is None:
        _case(
            suite,
            classname,
            "scenarios that gave the model's outputs",
            CONFORMS,
            "",
            f"{run.conforming} of {run.scenarios} scenarios gave the model's outputs",
        )
        for i, f in enumerate(run.findings, start=1):
            finding_case(f, f"finding {i}: {f.key}")
    else:
        by_label = {f.label: f for f in run.findings}
        for label in probes:
            found = by_label.get(label)
            if found is None:
                _case(suite, classname, f"probe: {label}", CONFORMS, "", "gave the model's outputs")
            else:
                finding_case(found, f"probe: {label}")
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(c.find("failure") is not None for c in cases)))
    suite.set("errors", str(sum(c.find("error") is not None for c in cases)))
    suite.set("skipped", "0")


def junit_document(outcome: Outcome) -> str:
    """The outcome as JUnit XML (see the module docstring)."""
    root = ET.Element("testsuites", name="model_tests.conformance")
    for i, run in enumerate(outcome.runs):
        _suite(root, run, outcome.probes.get(i))
    if outcome.error is not None:
        suite = ET.SubElement(root, "testsuite", name="conformance kit")
        case = ET.SubElement(suite, "testcase", classname="conformance", name="the run")
        first = outcome.error.splitlines()[0] if outcome.error else "error"
        ET.SubElement(case, "error", message=_text(first), type="Error").text = _text(outcome.error)
        suite.set("tests", "1")
        suite.set("failures", "0")
        suite.set("errors", "1")
        suite.set("skipped", "0")
    suites = root.findall("testsuite")
    for attr in ("tests", "failures", "errors"):
        root.set(attr, str(sum(int(s.get(attr, "0")) for s in suites)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: str, outcome: Outcome) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write(junit_document(outcome))
