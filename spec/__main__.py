"""Command line for the spec: ``python -m spec explore`` prints the reachable-state figures.

``python -m spec explore --html out.html`` writes the graph at the same bounds as one
self-contained page to step through in a browser (:mod:`spec.html`); ``--trace FILE`` adds a
counterexample TLC printed (``docs/diagrams/*.trace``), steppable on the page, read by the TLA+
layer (:func:`tla.explorer.load_trace`).

This module is the command line, not the library: no module imports it, so it may sit above
both layers. The library modules of ``spec`` import nothing of ``tla`` (``tla`` imports
``spec``; ``tests/test_layers.py`` keeps it so).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spec.explore import Bounds, explore
from spec.html import Counterexample, GraphSpec, page
from spec.state import DEDUP_INTERVAL
from tla.explorer import load_trace


def _optional_int(text: str) -> int | None:
    return None if text.lower() in ("none", "null", "inf") else int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spec", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("explore", help="breadth-first search of every reachable state")
    ex.add_argument("--ids", type=int, default=2, help="number of message ids (default 2)")
    ex.add_argument("--capacity", type=_optional_int, default=2, help="capacity, or none")
    ex.add_argument("--max-receives", type=_optional_int, default=None, help="dead-letter bound")
    ex.add_argument("--max-attempt", type=int, default=2, help="deliveries explored per message")
    ex.add_argument(
        "--vt", type=_optional_int, nargs="+", default=[1], help="visibility timeouts (none ok)"
    )
    ex.add_argument("--extend", type=int, nargs="*", default=[], help="change_visibility values")
    ex.add_argument("--max-time", type=int, default=2, help="the clock runs 0..max-time")
    ex.add_argument(
        "--batch", type=int, default=1, help="largest batch explored (default 1: no batches)"
    )
    ex.add_argument(
        "--delays", type=int, nargs="+", default=[0], help="delays a send may ask for (default 0)"
    )
    ex.add_argument("--fifo", action="store_true", help="a FIFO queue (QueueFifo.tla's twin)")
    ex.add_argument(
        "--groups", nargs="+", default=[], help="FIFO groups, each a string of ids (e.g. ab c)"
    )
    ex.add_argument(
        "--dedup", nargs="+", default=[], help="FIFO ids sent with one dedup id (e.g. ac)"
    )
    ex.add_argument(
        "--dedup-interval", type=int, default=int(DEDUP_INTERVAL), help="FIFO dedup window"
    )
    ex.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write the graph as one self-contained page to explore in a browser",
    )
    ex.add_argument(
        "--trace",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="with --html: a TLC counterexample to step through on the page (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.trace and args.html is None:
        parser.error("--trace needs --html")

    try:
        bounds = Bounds(
            ids=tuple("abcdefghijklmnopqrstuvwxyz"[: args.ids]),
            capacity=args.capacity,
            max_receives=args.max_receives,
            max_attempt=args.max_attempt,
            visibility_timeouts=tuple(args.vt),
            extend_timeouts=tuple(args.extend),
            max_time=args.max_time,
            batch=args.batch,
            delays=tuple(args.delays),
            fifo=args.fifo,
            groups=tuple(tuple(g) for g in args.groups),
            dedup=tuple(tuple(d) for d in args.dedup),
            dedup_interval=args.dedup_interval,
        )
    except ValueError as e:
        parser.error(str(e))
    if args.html is not None and (status := _write_html(args.html, bounds, args.trace)) != 0:
        return status
    g = explore(bounds)
    print(f"bounds:       {bounds}")
    print(f"states:       {g.states}")
    print(f"transitions:  {len(g.edges)}")
    print(f"depth:        {g.depth}")
    print(f"seconds:      {g.seconds:.2f}")
    if g.violations:
        print("invariant violated:")
        for reason in g.violations:
            print(f"  {reason}")
        print("trace: " + " -> ".join(g.trace))
        return 1
    order = "GroupOrder DedupWindow" if bounds.fifo else "FifoVisible"
    print(
        f"invariants:   OneState CapacityBound OneLiveReceipt AttemptsCount {order} "
        "IdsReserved DelayHonoured BatchAtomic hold in every state and step"
    )
    return 0


def _write_html(path: Path, bounds: Bounds, traces: list[Path]) -> int:
    """Write the page; 2 (and a message naming the file) if a trace cannot be read."""
    cexs: list[Counterexample] = []
    for n, trace in enumerate(traces):
        key = "".join(c if c.isalnum() else "_" for c in trace.stem.lower())
        key = key if key[:1].isalpha() else f"trace_{key}"
        if key in {c.key for c in cexs}:
            key = f"{key}_{n}"
        try:
            cexs.append(load_trace(trace.read_text(encoding="utf-8"), key, title=trace.name))
        except (OSError, ValueError) as e:
            print(f"python -m spec explore: --trace {trace}: {e}", file=sys.stderr)
            return 2
    kind = "FIFO queue" if bounds.fifo else "standard queue"
    text = page([GraphSpec("fifo" if bounds.fifo else "std", kind, bounds)], cexs)
    path.write_text(text, encoding="utf-8")
    print(f"html:         {path} ({len(text.encode())} bytes, {len(cexs)} counterexamples)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
