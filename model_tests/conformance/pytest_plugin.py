"""A pytest plugin: the conformance kit in a user's own test suite, against their endpoint.

Load it from the ``conftest.py`` at the root of the tests (no entry point to install)::

    pytest_plugins = ["model_tests.conformance.pytest_plugin"]

and use the ``sqs_conformance`` fixture::

    def test_our_queue_conforms(sqs_conformance):
        sqs_conformance.check(queue={"visibility_timeout": 30, "max_receives": 5}, scenarios=20)

:meth:`Conformance.check` runs a :class:`~model_tests.conformance.job.Job` (the CLI's run:
generated scenarios for a seed, or the user's own with ``given=`` or ``scenarios_file=``, the
``queue`` attributes set on each, judged by the profile) and fails the test with the kit's
summary unless the outcome's status is 0; :meth:`Conformance.run` returns the
:class:`Result` instead. The endpoint is the call's ``endpoint=``, else the ``--sqs-endpoint``
option, else the ``SQS_CONFORMANCE_ENDPOINT`` environment variable; an endpoint that is not
local needs ``yes=True`` or ``--sqs-yes``, as the CLI's ``--yes``. Each job's findings,
account, region and plan print as the CLI prints them (pytest shows them for a failed test).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

import pytest

from model_tests.conformance.job import Job, run_job
from model_tests.conformance.output import CONFORMS, VERDICTS, Outcome
from model_tests.conformance.report import summary

#: The environment variable that names the endpoint when no option or argument does.
ENDPOINT_VARIABLE: Final = "SQS_CONFORMANCE_ENDPOINT"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sqs-conformance", "the SQS conformance kit")
    group.addoption(
        "--sqs-endpoint",
        default=None,
        help="the endpoint sqs_conformance runs on: impl, impl-fifo, moto, moto-server or an "
        f"http(s) URL (default: ${ENDPOINT_VARIABLE})",
    )
    group.addoption(
        "--sqs-yes",
        action="store_true",
        help="let sqs_conformance run on an endpoint that is not local",
    )


@dataclass(frozen=True, slots=True)
class Result:
    """One job's :class:`~model_tests.conformance.output.Outcome`, and its report as text."""

    outcome: Outcome

    @property
    def status(self) -> int:
        """The CLI's exit status: 0 conforms, 1 not admitted, 2 an error or no verdict."""
        return self.outcome.status

    @property
    def admitted(self) -> bool:
        return self.status == CONFORMS

    @property
    def text(self) -> str:
        lines = [summary(r) for r in self.outcome.runs]
        if self.outcome.error is not None:
            lines.append(f"error: {self.outcome.error}")
        lines.append(f"status {self.status}: {VERDICTS[self.status]}")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Conformance:
    """The fixture's value: runs the kit on ``endpoint`` (see the module docstring)."""

    endpoint: str | None = None
    yes: bool = False

    def run(
        self,
        endpoint: str | None = None,
        *,
        queue: Mapping[str, Any] | None = None,
        given: Sequence[Mapping[str, Any]] | None = None,
        scenarios_file: str | os.PathLike[str] | None = None,
        scenarios: int = 20,
        seed: int = 0,
        fifo: bool = False,
        profile: str | None = None,
        probes: bool = False,
        yes: bool | None = None,
        shrink: bool = True,
        wait_time: int = 0,
    ) -> Result:
        """Run the kit once (the arguments as :class:`~model_tests.conformance.job.Job`'s);
        the :class:`Result`, whatever it is."""
        chosen = endpoint or self.endpoint
        if not chosen:
            raise pytest.UsageError(
                f"sqs_conformance: no endpoint: pass endpoint=..., --sqs-endpoint or set "
                f"{ENDPOINT_VARIABLE}"
            )
        job = Job(
            endpoint=chosen,
            fifo=fifo,
            profile=profile,
            scenarios=scenarios,
            seed=seed,
            given=given,
            scenarios_file=None if scenarios_file is None else os.fspath(scenarios_file),
            queue=dict(queue or {}),
            probes=probes,
            yes=self.yes if yes is None else yes,
            shrink=shrink,
            wait_time=wait_time,
        )
        outcome = run_job(job)
        if outcome.interrupted:
            # The queues are deleted by now; Ctrl-C stops the test session as it would have.
            raise KeyboardInterrupt(outcome.error)
        return Result(outcome)

    def check(self, endpoint: str | None = None, **kwargs: Any) -> Result:
        """:meth:`run`, and fail the test with the kit's report unless the status is 0."""
        result = self.run(endpoint, **kwargs)
        if not result.admitted:
            pytest.fail(result.text, pytrace=False)
        return result

    def on(self, endpoint: str) -> Conformance:
        """The same fixture on another endpoint."""
        return replace(self, endpoint=endpoint)


@pytest.fixture
def sqs_conformance(request: pytest.FixtureRequest) -> Conformance:
    """Run the conformance kit from a test: ``sqs_conformance.check(...)``."""
    option = request.config.getoption("--sqs-endpoint")
    endpoint = option or os.environ.get(ENDPOINT_VARIABLE) or None
    return Conformance(endpoint, bool(request.config.getoption("--sqs-yes")))
