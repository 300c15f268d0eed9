"""``python -m sqs_endpoint``: run the SQS endpoint until Ctrl-C.

It binds 127.0.0.1 by default (only this machine can reach it) and checks no credentials or
signatures: any access key a client sends is accepted. Point a client at the URL it prints,
e.g. ``boto3.client("sqs", endpoint_url="http://127.0.0.1:9324", region_name="us-east-1",
aws_access_key_id="x", aws_secret_access_key="x")``.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import pathlib
import signal
import sys
import threading
from types import FrameType

from sqs_endpoint.endpoint import ConfigError, serve
from sqs_endpoint.http import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    check_limits,
)
from sqs_endpoint.journal import DataFileError


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


#: The console script (pyproject.toml's ``[project.scripts]``) and the same command from a clone.
SCRIPT = "sqs-endpoint"
MODULE_COMMAND = "python -m sqs_endpoint"


def prog() -> str:
    """How the endpoint was started: its console script, or ``python -m``; what its usage and
    its one-line errors are prefixed with."""
    return SCRIPT if pathlib.Path(sys.argv[0]).name == SCRIPT else MODULE_COMMAND


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog(),
        description=(
            "An SQS endpoint over this project's model-checked queues: AWS JSON 1.0 and the "
            "query protocol, for unmodified SQS clients. No credentials are checked."
        ),
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine)"
    )
    p.add_argument(
        "--port", type=int, default=9324, help="port to listen on (default 9324; 0: any)"
    )
    p.add_argument(
        "--config",
        type=pathlib.Path,
        metavar="FILE",
        help="TOML file of queues to create at start ([[queue]])",
    )
    p.add_argument(
        "--clock",
        choices=("real", "fake"),
        default="real",
        help="real (default): time runs; fake: frozen until advanced "
        "(POST /_control/clock/advance)",
    )
    p.add_argument(
        "--record",
        type=pathlib.Path,
        metavar="DIR",
        help="directory to record every queue's trace in",
    )
    p.add_argument(
        "--data",
        type=pathlib.Path,
        metavar="FILE",
        help="keep the queues in FILE (SQLite; created if missing): every answered operation "
        "is written first, and a restart on the same file carries on from it (default: in "
        "memory, gone when the endpoint stops)",
    )
    p.add_argument(
        "--data-sync",
        choices=("full", "normal"),
        default="full",
        help="full (default): an answered operation survives a power cut; normal: a crash of "
        "the endpoint's process (faster)",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT,
        metavar="SECONDS",
        help="close a connection that sends no request, or reads no answer, for this long "
        f"(default {DEFAULT_IDLE_TIMEOUT:g}; a waiting long poll is not idle)",
    )
    p.add_argument(
        "--header-timeout",
        type=float,
        default=DEFAULT_HEADER_TIMEOUT,
        metavar="SECONDS",
        help="answer 408 and close when a request's head and body take longer "
        f"(default {DEFAULT_HEADER_TIMEOUT:g})",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help="past N open connections, answer 503 ServiceUnavailable and close "
        f"(default {DEFAULT_MAX_CONNECTIONS})",
    )
    p.add_argument("--verbose", action="store_true", help="log each failure with its traceback")
    return p


#: The one line ``main`` prints when the ``server`` extra (botocore, for its SQS service model)
#: is not installed: the package itself imports without it, the endpoint cannot start.
MISSING_EXTRA = (
    "the endpoint needs botocore (the 'server' extra): "
    "pip install '.[server]' in a clone of sqs-queue-reference (or from its git URL)"
)


#: Open files the process needs beside its connections (the listening socket, the event loop's
#: selector and wakeup pipe, stdio, a trace file per queue with --record, and the connections
#: past the cap that are being answered 503).
FILES_BESIDE_CONNECTIONS = 256


def raise_file_limit(wanted: int) -> int | None:
    """Raise this process's soft limit on open files to ``wanted`` (at most the hard limit), as
    servers do at start: a connection is an open file, and a soft limit of 1024 (common) would
    stop accepting long before the default cap on connections. The limit now, or None where
    there is no such limit to read (not Unix)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return soft
    new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    except (ValueError, OSError):  # above what the system allows a process (macOS)
        return soft
    return new


def _has_botocore() -> bool:
    try:
        import botocore.loaders  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Run the endpoint until Ctrl-C or SIGTERM; the exit status (also a console script's)."""
    args = parser().parse_args(argv)
    name = prog()
    if not _has_botocore():
        print(f"{name}: {MISSING_EXTRA}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    if not 0 <= args.port <= 65535:
        print(f"{name}: --port must be in 0..65535, got {args.port}", file=sys.stderr)
        return 2
    try:
        check_limits(args.idle_timeout, args.header_timeout, args.max_connections)
    except ValueError as e:
        print(f"{name}: --{str(e).replace('_', '-')}", file=sys.stderr)
        return 2
    wanted = args.max_connections + FILES_BESIDE_CONNECTIONS
    files = raise_file_limit(wanted)
    if files is not None and files < wanted:
        # Past the open-file limit a new connection waits in the kernel's queue, unanswered,
        # instead of being answered 503 (docs/server.md, "Connection limits"): said at start.
        print(
            f"{name}: warning: the open-file limit ({files}) is below --max-connections "
            f"{args.max_connections} + {FILES_BESIDE_CONNECTIONS}: once it is reached a new "
            "connection waits unanswered instead of being answered 503; raise it (ulimit -n) "
            "or lower --max-connections",
            file=sys.stderr,
            flush=True,
        )
    try:
        endpoint = serve(
            args.host,
            args.port,
            clock=args.clock,
            config=args.config,
            record=args.record,
            data=args.data,
            data_sync=args.data_sync,
            idle_timeout=args.idle_timeout,
            header_timeout=args.header_timeout,
            max_connections=args.max_connections,
        )
    except (ConfigError, DataFileError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(
            f"{name}: cannot listen on {args.host}:{args.port}: {e}",
            file=sys.stderr,
        )
        return 1
    stop = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    try:
        where = (
            "this machine only"
            if _loopback(args.host)
            else "WARNING: other machines too, and no credentials are checked"
        )
        print(f"SQS endpoint on {endpoint.url} (bound to {endpoint.host}: {where})", flush=True)
        print(
            f"clock: {args.clock}; time control under {endpoint.url}/_control/clock; "
            "no credentials or signatures are checked; Ctrl-C stops it",
            flush=True,
        )
        if args.data is not None:
            print(
                f"data: {args.data} ({endpoint.recovered} journal entries replayed; "
                f"sync {args.data_sync}); the clock resumed at {endpoint.now():g}",
                flush=True,
            )
        # Woken at least once a second: a signal is handled only when the main thread runs.
        while not stop.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        endpoint.close()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
