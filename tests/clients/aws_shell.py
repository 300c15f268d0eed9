"""Many ``aws`` commands in one process: the AWS CLI's own driver, fed one command per line.

The ``aws`` executable of aws-cli v1 is ``awscli.clidriver.main()``: build the driver, run the
command line, return its exit status. Starting it costs seconds per command on a busy machine,
so tests/test_server_clients_awscli.py runs it here instead, unmodified: each line read from
standard input is a JSON list of the arguments after ``aws``; each answer written to standard
output is one JSON line ``{"rc": ..., "stdout": ..., "stderr": ...}``. Run it with the
interpreter that has awscli (``.venv-clients/bin/python``); it ends at the end of its input.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

from awscli.clidriver import create_clidriver  # type: ignore[import-not-found, unused-ignore]


def main() -> int:
    for line in sys.stdin:
        args = json.loads(line)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            # A driver per command, as the aws executable makes one per run.
            rc = create_clidriver().main(args)
        answer = {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
