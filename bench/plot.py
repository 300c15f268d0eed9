"""The benchmark's figure: throughput against thread count, batch throughput against
``queue.Queue``, and time per cycle against load.

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
    """Write a PNG with three panels from the report's ``series`` (see ``bench.suite``)."""
    matplotlib: Any = importlib.import_module("matplotlib")
    matplotlib.use("Agg")  # no display needed
    plt: Any = importlib.import_module("matplotlib.pyplot")

    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(16, 4.5))
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

    # Batches: one group of bars per CPU setting, one bar per system.
    cpus = series["batch_cpus"]
    systems = list(series["batch"].items())
    width = 0.8 / max(len(systems), 1)
    for i, (system, values) in enumerate(systems):
        points = [(x, v) for x, v in enumerate(values) if v is not None]
        if points:
            bx, by = zip(*points, strict=True)
            bars = middle.bar([x + (i - (len(systems) - 1) / 2) * width for x in bx], by, width)
            bars.set_label(system)
            middle.bar_label(bars, [f"{v / 1000:,.0f}K" for v in by], fontsize=8)
    middle.set_xticks(range(len(cpus)), cpus)
    middle.set_ylabel("messages per second (4 producers / 4 consumers)")
    middle.set_title("Batches of 10 vs queue.Queue per message")
    middle.grid(True, axis="y", alpha=0.3)
    middle.margins(y=0.25)  # head room for the legend above the bars
    middle.legend(loc="upper center", ncol=2)

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
