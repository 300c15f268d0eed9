"""The project's own queue as an endpoint of the kit, and which endpoints are local.

``--endpoint impl`` (``impl-fifo`` for FIFO queues) runs the kit's scenarios on
:class:`model_tests.targets.ImplTarget`: ``impl.Queue`` (``impl.FifoQueue``) in this process,
on an ``impl.FakeClock`` that ``advance`` moves, through the same :class:`model_tests.targets.
Target` interface that :class:`model_tests.conformance.sqs.SqsTarget` implements over boto3. The
judge needs nothing else: a function from a scenario to its outputs. Its default profile is
``strict`` (this project's contract), so the run is the kit's self-check: the project's queue
must give the model's outputs on every scenario of the SQS profile.

:data:`LOCAL_TARGETS` maps each such name to the target's constructor; a test may add one (a
broken queue) to see the CLI judge it. :func:`is_local` says which endpoints need no ``--yes``:
these, moto, moto-server, this project's server and a URL on the loopback host.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Final
from urllib.parse import urlsplit

from model_tests.conformance.sqs import NAMED_ENDPOINTS
from model_tests.scenario_format import QueueConfig, Scenario
from model_tests.targets import ImplTarget, Output, Target, run_scenario

#: In-process targets the CLI takes as ``--endpoint``: name -> constructor.
LOCAL_TARGETS: Final[dict[str, Callable[[QueueConfig], Target]]] = {
    "impl": ImplTarget,
    "impl-fifo": ImplTarget,
}
#: The local targets whose queues are FIFO whatever ``--fifo`` says.
FIFO_TARGETS: Final = frozenset({"impl-fifo"})
#: Host names of a URL endpoint that are this machine.
LOOPBACK_NAMES: Final = frozenset({"localhost", "localhost.localdomain"})


def is_target(endpoint: str) -> bool:
    """Whether ``endpoint`` names an in-process target (:data:`LOCAL_TARGETS`)."""
    return endpoint in LOCAL_TARGETS


def runner(endpoint: str) -> Callable[[Scenario], list[Output]]:
    """The kit's runner for the in-process target ``endpoint``: a scenario on fresh queues."""
    make = LOCAL_TARGETS[endpoint]

    def run(scenario: Scenario) -> list[Output]:
        return run_scenario(scenario, make)

    return run


def is_local(endpoint: str) -> bool:
    """Whether ``endpoint`` runs on this machine: an in-process target, moto, moto-server, this
    project's server (``sqs_endpoint``, ``server-real``), or an http(s) URL whose host is
    ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if is_target(endpoint) or endpoint in NAMED_ENDPOINTS:
        return True
    if not endpoint.startswith(("http://", "https://")):
        return False
    host = (urlsplit(endpoint).hostname or "").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
