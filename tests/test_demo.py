"""The live demo (``python -m examples.demo``) shows what it promises, on the real clock.

The demo makes its race happen by construction (the slow consumer finishes only after its
message was redelivered and deleted by another consumer), so the facts checked here hold on
every run; the bounds on time are generous and decide nothing about correctness.
"""

from __future__ import annotations

import io
import os
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
    # The crasher receives before the slow consumer, so the ids are the same on every run.
    assert (crashed_id, slow_id) == ("order-1", "order-2")
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


# -- issue 18: the sweeper on the timeline, and a plain --help ----------------------------------


def test_the_timeline_shows_the_sweepers_releases_and_its_dead_letter() -> None:
    s, timeline = run_demo()
    crashed, slow = s.crashed_delivery[0], s.slow_delivery[0]
    # What the sweeper must have done on every run: release the crashed and the slow
    # consumers' deliveries, release the poison message twice and dead-letter it the third time.
    # (A worker's short job never outlives its visibility timeout, but a loaded machine might
    # make one: more releases are allowed, these are required.)
    required = [
        (crashed, 1, "release"),
        (slow, 1, "release"),
        (POISON, 1, "release"),
        (POISON, 2, "release"),
        (POISON, 3, "dead-letter"),
    ]
    assert set(required) <= set(s.swept)
    assert [x for x in s.swept if x[0] == POISON] == required[2:]
    events = [(e.thread, e.text) for e in timeline.events]
    lines = [x for t, x in events if t == "sweeper"]
    assert len(lines) == len(s.swept)  # one timeline line per firing
    assert any(x.startswith(f"DEAD-LETTERS {POISON}: attempt 3 expired") for x in lines)
    # The sweeper's line comes before the redelivery it made possible: the trace sink runs in
    # the sweep's critical section, before any receive can see the released message.
    for id in (crashed, slow, POISON):
        released = events.index(
            ("sweeper", next(x for x in lines if x.startswith(f"releases {id}:")))
        )
        redelivered = next(k for k, (t, x) in enumerate(events) if f"receive {id} (attempt 2" in x)
        assert released < redelivered
    assert f"sweeper: {len(s.swept) - 1} releases, 1 dead-lettered" in s.lines()


def test_the_sweeper_log_reads_each_firing_from_the_trace() -> None:
    from examples.demo import SweeperLog

    said: list[tuple[str, str]] = []
    seen: list[str] = []
    log = SweeperLog(2, lambda text, kind: said.append((text, kind)), lambda s: seen.append(s[0]))
    steps: list[tuple[str, tuple[object, ...], object, float]] = [
        ("send", ("a", 0.0), True, 0.0),
        ("send", ("d", 5.0), True, 0.0),
        ("receive", (1.0,), ("a", 1, 1.0), 0.0),
        ("expire", (), "a", 1.0),
        ("receive_batch", (2, 1.0), (("a", 2, 2.0),), 1.0),
        ("delete", ("a", 1), False, 1.5),
        ("expire", (), "a", 2.0),
        ("expire", (), "d", 5.0),
    ]
    for step in steps:
        log(step)
    assert log.steps == [("a", 1, "release"), ("a", 2, "dead-letter"), ("d", 0, "visible")]
    assert [k for _, k in said] == ["warn", "bad", ""]
    assert said[0][0].startswith("releases a: attempt 1 expired, back to the tail of the queue")
    assert said[1][0].startswith("DEAD-LETTERS a: attempt 2 expired")
    assert said[2][0] == "d: its delay is over, it joins the tail of the queue"
    assert seen == [s[0] for s in steps]  # every step is passed on


def test_fifo_demo_shows_the_sweepers_release() -> None:
    from examples.demo import run_fifo

    timeline = Timeline(io.StringIO(), colour=False, quiet=False)
    run_fifo(timeline)
    sweeper = [e.text for e in timeline.events if e.thread == "sweeper"]
    assert sweeper == [
        "[clock   355s] releases bob-2: attempt 1 expired, back to its place in its group's "
        "send order (its receipt is stale now)"
    ]


def test_help_is_plain_text() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "examples.demo", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        # Python 3.14's argparse would colour its help when forced to: the demo turns it off.
        env={**os.environ, "FORCE_COLOR": "1", "PYTHON_COLORS": "1"},
    )
    assert (done.returncode, done.stderr) == (0, "")
    text = done.stdout
    assert ANSI not in text
    assert "``" not in text and "**" not in text and ":meth:" not in text
    assert text.startswith("usage: python -m examples.demo")
    assert "Watch at-least-once delivery happen, on the real clock, in about a second." in text
    assert "the sweeper releases" in text and "dead-letters it" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_each_send_is_logged_before_any_receive_of_its_message() -> None:
    # The send's line is written inside the send's critical section (from the queue's trace), a
    # receive's line after the receive returned: so the order holds on every run.
    for kwargs in ({}, {"idempotent": True}, {"seed": 7}):
        _, timeline = run_demo(**kwargs)
        texts = [e.text for e in timeline.events]
        for id in [*(f"order-{k}" for k in range(1, DemoConfig().orders + 1)), POISON]:
            sent = texts.index(f"send {id}")
            received = [k for k, t in enumerate(texts) if re.match(rf"receive {id}\b", t)]
            assert received and sent < min(received), (id, texts)


def test_the_walkthrough_quotes_summary_lines_the_demo_prints() -> None:
    text = " ".join((ROOT / "docs" / "walkthrough.md").read_text().split())
    quoted = re.findall(r"`(processed twice: [^`]+)`", text)
    assert len(quoted) == 2, quoted
    plain, _ = run_demo()
    idempotent, _ = run_demo(idempotent=True)
    printed = {line.strip() for s in (plain, idempotent) for line in s.lines()}
    for line in quoted:
        assert line in printed, (line, sorted(printed))
