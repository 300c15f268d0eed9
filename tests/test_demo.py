"""The live demo (``python -m examples.demo``) shows what it promises, on the real clock.

The demo makes its race happen by construction (the slow consumer finishes only after its
message was redelivered and deleted by another consumer), so the facts checked here hold on
every run; the bounds on time are generous and decide nothing about correctness.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from examples.demo import POISON, DemoConfig, Summary, Timeline, main, run, use_colour

ROOT = Path(__file__).resolve().parent.parent
ANSI = "\x1b["


def run_demo(**kwargs: object) -> tuple[Summary, Timeline]:
    timeline = Timeline(io.StringIO(), colour=False, quiet=False)
    summary = run(DemoConfig(**kwargs), timeline)  # type: ignore[arg-type]
    return summary, timeline


def test_demo_shows_the_lost_race_the_crash_and_the_dead_letter() -> None:
    before = set(threading.enumerate())
    s, timeline = run_demo()
    orders = DemoConfig().orders
    assert (s.sent, s.orders) == (orders + 1, orders)
    # The slow consumer lost the race: its first delivery's delete returned False ...
    assert s.slow_delivery[1] == 1 and s.slow_delete_result is False
    assert s.slow_delivery in s.late_deletes
    # ... after the message had been redelivered to a worker, which deleted it.
    slow_id = s.slow_delivery[0]
    texts = [(e.thread, e.text) for e in timeline.events]
    assert any(t.startswith("worker") and f"receive {slow_id} (attempt 2" in x for t, x in texts)
    # Without idempotency the effect was applied twice.
    assert slow_id in s.processed_twice and s.duplicates_skipped == 0
    # The crashed consumer's message came back and was processed by someone else.
    crashed_id = s.crashed_delivery[0]
    assert crashed_id != slow_id and s.crashed_delivery[1] == 1
    assert any(t.startswith("worker") and f"receive {crashed_id} (attempt 2" in x for t, x in texts)
    # The poison message died after max_receives deliveries; every order was done.
    assert s.dead_letters == (("poison", DemoConfig().max_receives),)
    assert s.deleted == orders
    assert s.redelivered >= 4 and s.delivered >= s.sent + 4  # 2 + the poison's 2 retries
    assert s.seconds < 10
    # The queue was closed: its sweeper and every demo thread are gone.
    lingering = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert lingering == []


def test_idempotent_consumers_skip_the_duplicate() -> None:
    s, timeline = run_demo(idempotent=True)
    assert s.processed_twice == ()
    assert s.duplicates_skipped >= 1
    assert s.slow_delete_result is False  # the race still happens: only its harm is gone
    assert re.search(
        r"^processed twice: 0 \(\d+ duplicates? skipped\)$", "\n".join(s.lines()), re.M
    )
    assert any("duplicate skipped" in e.text for e in timeline.events)


def test_summary_lines_without_idempotency_count_the_duplicate() -> None:
    s, _ = run_demo(seed=7)
    text = "\n".join(s.lines())
    assert re.search(r"^processed twice: [1-9]", text, re.M)
    assert f"dead-lettered: 1 ({POISON} after 3 receives)" in text
    assert "its late delete returned False" in text


def test_main_prints_a_timeline_and_a_summary_without_colour() -> None:
    out = io.StringIO()
    assert main(["--no-color", "--seed", "3"], out=out) == 0
    text = out.getvalue()
    assert ANSI not in text
    assert re.search(r"^\+ ?\d+\.\d{3}s  producer-1  send order-1$", text, re.M)
    assert "\nsummary\n" in text and "  late deletes returning False: 1" in text


def test_main_quiet_prints_only_the_summary() -> None:
    out = io.StringIO()
    assert main(["--quiet", "--no-color", "--idempotent"], out=out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == "summary" and all(x.startswith("  ") for x in lines[1:])
    assert any(re.fullmatch(r"  processed twice: 0 \(\d+ duplicates? skipped\)", x) for x in lines)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_follows_the_flags_the_terminal_and_no_color() -> None:
    assert use_colour(None, Tty(), {}) is True
    assert use_colour(None, io.StringIO(), {}) is False
    assert use_colour(None, Tty(), {"NO_COLOR": "1"}) is False
    assert use_colour(None, Tty(), {"NO_COLOR": ""}) is True  # set but empty: ignored
    assert use_colour(True, io.StringIO(), {"NO_COLOR": "1"}) is True
    assert use_colour(False, Tty(), {}) is False
    out = Tty()
    assert main(["--quiet"], out=out, environ={}) == 0
    assert ANSI in out.getvalue()
    out = Tty()
    assert main(["--quiet"], out=out, environ={"NO_COLOR": "1"}) == 0
    assert ANSI not in out.getvalue()


def test_bad_arguments_exit_with_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--visibility-timeout", "0"], out=io.StringIO())
    assert e.value.code == 2
    assert "visibility_timeout" in capsys.readouterr().err
    with pytest.raises(ValueError, match="slow_factor"):
        DemoConfig(slow_factor=0.5)


def test_python_dash_m_examples_demo_runs_in_a_few_seconds() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "examples.demo", "--no-color"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    summary = done.stdout.split("\nsummary\n", 1)[1]
    assert "its late delete returned False" in summary
    assert "dead-lettered: 1 (poison after 3 receives)" in summary
    seconds = float(re.search(r"time: ([\d.]+) s", summary).group(1))  # type: ignore[union-attr]
    assert seconds < 10


def test_fifo_demo_shows_group_order_dedup_and_the_slow_consumer_duplicate() -> None:
    """``--fifo`` (issue 15), scripted on a fake clock: every fact holds on every run."""
    from examples.demo import run_fifo

    timeline = Timeline(io.StringIO(), colour=False, quiet=False)
    s = run_fifo(timeline)
    # Group order: each customer's orders in send order; a locked group is skipped.
    alice = [i for i, _ in s.deliveries if i.startswith("alice")]
    assert alice == ["alice-1", "alice-2", "alice-3", "alice-3-late"]
    assert [i for i, _ in s.deliveries[:3]] == ["alice-1", "bob-1", "alice-2"]
    assert s.locked_out == 3
    # A retry within the interval is deduplicated: the earlier id, no new message.
    assert (s.retry_returned, s.messages_before_retry, s.messages_after_retry) == ("alice-3", 2, 2)
    # After the interval the same dedup id makes a second message.
    assert s.late_retry_id == "alice-3-late"
    # The slow consumer's message is redelivered, processed twice; its late delete fails.
    assert (s.slow_id, s.slow_delete_result, s.processed_twice) == ("bob-2", False, ("bob-2",))
    assert ("bob-2", 2) in s.deliveries


def test_python_dash_m_examples_demo_fifo() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "examples.demo", "--fifo", "--quiet"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert "messages 2 -> 2 (deduplicated)" in proc.stdout
    assert "processed twice: 1 (bob-2)" in proc.stdout
