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


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m sqs_endpoint",
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
        "--config", type=pathlib.Path, help="TOML file of queues to create at start ([[queue]])"
    )
    p.add_argument(
        "--clock",
        choices=("real", "fake"),
        default="real",
        help="real: time runs; fake: frozen until advanced (POST /_control/clock/advance)",
    )
    p.add_argument("--record", type=pathlib.Path, help="directory to record every queue's trace in")
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT,
        metavar="SECONDS",
        help="close a connection that sends no request for this long "
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
    "sqs-endpoint: the endpoint needs botocore (the 'server' extra): "
    "pip install '.[server]' in a clone of sqs-queue-reference (or from its git URL)"
)


def _has_botocore() -> bool:
    try:
        import botocore.loaders  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Run the endpoint until Ctrl-C or SIGTERM; the exit status (also a console script's)."""
    args = parser().parse_args(argv)
    if not _has_botocore():
        print(MISSING_EXTRA, file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    if not 0 <= args.port <= 65535:
        print(
            f"python -m sqs_endpoint: --port must be in 0..65535, got {args.port}", file=sys.stderr
        )
        return 2
    try:
        check_limits(args.idle_timeout, args.header_timeout, args.max_connections)
    except ValueError as e:
        print(f"python -m sqs_endpoint: --{str(e).replace('_', '-')}", file=sys.stderr)
        return 2
    try:
        endpoint = serve(
            args.host,
            args.port,
            clock=args.clock,
            config=args.config,
            record=args.record,
            idle_timeout=args.idle_timeout,
            header_timeout=args.header_timeout,
            max_connections=args.max_connections,
        )
    except ConfigError as e:
        print(f"python -m sqs_endpoint: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(
            f"python -m sqs_endpoint: cannot listen on {args.host}:{args.port}: {e}",
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
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        endpoint.close()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
