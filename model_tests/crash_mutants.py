"""The durable endpoint's tempting bug, as a runnable endpoint: answer first, write after.

``python -m model_tests.crash_mutants --data FILE ...`` runs ``python -m sqs_endpoint`` with
:class:`AnswerFirstService` in place of the Service: each operation is answered before its
journal entry is committed (the commit waits for the next operation), which is
``tla/QueueDurableAnswerFirst.cfg``'s counterexample in Python. A crash after an answer loses
the operation the client was told had happened; ``tests/test_endpoint_crash.py`` shows that
:class:`model_tests.crash.CrashRun` catches it.
"""

from __future__ import annotations

import sys
from typing import Any

from sqs_endpoint import endpoint as endpoint_module
from sqs_endpoint.service import Service

__all__ = ["AnswerFirstService", "main"]


class AnswerFirstService(Service):
    """Commits what an operation journaled only when the next operation starts."""

    async def call(
        self, operation: str, params: dict[str, Any], *, base_url: str
    ) -> dict[str, Any]:
        journal = self.journal
        if journal is not None and self._replaying is None:
            journal.commit()  # the previous operation's entries, one answer too late
            late, journal.commit = journal.commit, lambda: None  # type: ignore[method-assign]
            try:
                return await super().call(operation, params, base_url=base_url)
            finally:
                journal.commit = late  # type: ignore[method-assign]
        return await super().call(operation, params, base_url=base_url)


def main(argv: list[str] | None = None) -> int:
    """``python -m sqs_endpoint`` with :class:`AnswerFirstService`."""
    setattr(endpoint_module, "Service", AnswerFirstService)  # noqa: B010 - what the start builds
    from sqs_endpoint.__main__ import main as endpoint_main

    return endpoint_main(argv)


if __name__ == "__main__":
    sys.exit(main())
