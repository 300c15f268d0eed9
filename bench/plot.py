"""The benchmark's figure: throughput against thread count, time per cycle against load.

matplotlib is optional (``pip install matplotlib``): :func:`available` says whether it is
installed, so ``python -m bench --plot`` can refuse at once, before measuring anything.
"""

from __future__ import annotations

import importlib
from typing import Any

from bench.cycle import optional


def available() -> bool:
    return optional("matplotlib") is not None


def plot(series: dict[str, Any], path: str, title: str) -> None:
    """Write a PNG with two panels from the report's ``series`` (see ``bench.suite``)."""
    matplotlib: Any = importlib.import_module("matplotlib")
    matplotlib.use("Agg")  # no display needed
    plt: Any = importlib.import_module("matplotlib.pyplot")

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    labels = [f"{p}/{c}" for p, c in series["threads"]]
    xs = list(range(len(labels)))
    highest = 0.0
    for system, values in series["throughput"].items():
        points = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        if points:
            style = "--" if system.endswith("one CPU") else "-"  # pinned runs: dashed
            left.plot(*zip(*points, strict=True), marker="o", linestyle=style, label=system)
            highest = max(highest, *(v for _, v in points))
    left.set_xticks(xs, labels)
    left.set_yscale("log")
    left.set_xlabel("producer / consumer threads")
    left.set_ylabel("cycles per second (send + receive + delete)")
    left.set_title("Cycle throughput (higher is better)")
    left.grid(True, which="both", alpha=0.3)
    left.set_ylim(top=highest * 30)  # head room for the legend above the lines
    left.legend(loc="upper center", ncol=2)

    for system, values in series["cycle_time_us"].items():
        right.plot(series["in_flight"], values, marker="o", label=system)
    right.set_xscale("log")
    right.set_ylim(bottom=0)
    right.set_xlabel("messages in flight (queue.Queue: items queued)")
    right.set_ylabel("µs per cycle, one thread")
    right.set_title("Time per cycle against load (flat is good)")
    right.grid(True, which="both", alpha=0.3)
    right.legend()

    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
