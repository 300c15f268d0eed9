"""docs/server.md says what the code does: every flag of ``sqs-endpoint`` with its default, every
key of a ``--config`` file, every connection limit with its default, the ``serve()`` keywords,
and the TLA+ actions the page names for a long poll whose client left.

Each figure is read from the code (the argument parser, ``sqs_endpoint.http``'s ``DEFAULT_*``,
``sqs_endpoint.__main__.FILES_BESIDE_CONNECTIONS``, ``sqs_endpoint.endpoint.QUEUE_KEYS``,
``serve``'s signature, ``tla/AsyncQueue.tla``'s ``Next``), never copied into this file, so a
change on either side that the other does not follow fails; the page's example config is
started as written.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import re
from pathlib import Path

import pytest

import sqs_endpoint
from sqs_endpoint.__main__ import FILES_BESIDE_CONNECTIONS, parser
from sqs_endpoint.endpoint import QUEUE_KEYS, ConfigError, load_config
from sqs_endpoint.http import DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "server.md").read_text(encoding="utf-8")
#: Each connection limit: its flag, its serve() keyword, its default.
LIMITS = [
    ("--idle-timeout", "idle_timeout", DEFAULT_IDLE_TIMEOUT),
    ("--header-timeout", "header_timeout", DEFAULT_HEADER_TIMEOUT),
    ("--max-connections", "max_connections", DEFAULT_MAX_CONNECTIONS),
]


def section(title: str) -> str:
    """The text of the page's ``## title`` section, up to the next ``## ``."""
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", PAGE, flags=re.DOTALL | re.M)
    assert found, f"docs/server.md has no section {title!r}"
    return found.group(1)


def flags() -> list[argparse.Action]:
    return [a for a in parser()._actions if a.option_strings and a.dest != "help"]


def shown(value: object) -> str:
    """A default as the page writes it: 60.0 as 60, 4096 as 4096."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def test_every_flag_is_named_in_running_it_with_its_default() -> None:
    text = " ".join(section("Running it").split())
    for action in flags():
        flag = max(action.option_strings, key=len)
        assert f"`{flag}" in text, f"docs/server.md, Running it, does not name {flag}"
        if action.default not in (None, False):
            default = shown(action.default)
            assert re.search(rf"`{re.escape(flag)}[^`]*`[^`]*\(default `?{default}\b", text), (
                f"Running it does not give {flag}'s default {default}"
            )


def test_the_connection_limits_table_gives_each_flag_keyword_and_default() -> None:
    rows = {
        cells[1]: cells[2]
        for line in section("Connection limits").splitlines()
        if line.startswith("| ") and len(cells := [c.strip() for c in line.split("|")[1:-1]]) == 4
    }
    for flag, keyword, default in LIMITS:
        cell = f"`{flag}` / `{keyword}`"
        assert cell in rows, f"no row for {cell}: {sorted(rows)}"
        unit = " s" if isinstance(default, float) else ""
        assert rows[cell] == f"{shown(default)}{unit}", (cell, rows[cell])
    # The open files the command makes room for beside the connections.
    text = " ".join(section("Connection limits").split())
    assert f"`--max-connections` + {FILES_BESIDE_CONNECTIONS} " in text


def test_the_serve_signature_on_the_page_is_serves() -> None:
    written = re.search(r"`serve\((.*?)\)`", " ".join(PAGE.split()))
    assert written, "docs/server.md gives no serve(...) signature"
    documented = {}
    for part in written.group(1).split(", "):
        name, _, default = part.partition("=")
        if name != "*":
            documented[name] = default
    real = inspect.signature(sqs_endpoint.serve).parameters
    for name, default in documented.items():
        assert name in real, f"serve() has no parameter {name}"
        assert ast.literal_eval(default) == real[name].default, (name, default)
    public = {n for n in real if n not in ("service", "max_body")}  # for tests, not users
    assert public == set(documented), sorted(public ^ set(documented))


def test_every_config_key_is_documented_and_no_other() -> None:
    text = section("Running it as a service")
    documented = re.findall(r"^  - `(\w+)` \((?:required|optional)", text, flags=re.M)
    assert documented == list(QUEUE_KEYS)
    # Each documented key is taken; a key the page does not list stops the start.
    load_config({"queue": [{"name": "q", "attributes": {"DelaySeconds": 1}, "tags": {"t": 1}}]})
    with pytest.raises(ConfigError, match="unknown key 'colour'"):
        load_config({"queue": [{"name": "q", "colour": "red"}]})


def test_the_tla_actions_named_for_a_poll_whose_client_left_are_the_models() -> None:
    text = " ".join(section("Long polls and clients that leave").split())
    spec = (ROOT / "tla" / "AsyncQueue.tla").read_text(encoding="utf-8")
    nxt = spec.split("\nNext ==", 1)[1].split("\n\n", 1)[0]
    for action in ("Cancel", "Withdraw", "PassOn"):
        assert f"`{action}`" in text, action
        assert re.search(rf"\b{action}\(t\)", nxt), f"{action} is not an action of Next"
    for model in ("AsyncQueue", "AsyncQueueNoPassOn"):
        assert f"-m tla --model {model}`" in text, model
        assert (ROOT / "tla" / f"{model}.cfg").is_file(), model


def test_the_example_config_starts_an_endpoint_with_its_queues(tmp_path: Path) -> None:
    (block,) = re.findall(r"^```toml\n(.*?)^```$", PAGE, flags=re.DOTALL | re.M)
    path = tmp_path / "queues.toml"
    path.write_text(block, encoding="utf-8")
    with sqs_endpoint.serve(port=0, clock="fake", config=path) as ep:
        assert ep.queues() == ["jobs.fifo", "orders", "orders-dead"]
        url = f"{ep.url}/000000000000/orders"
        got = ep.call("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})
        assert got["Attributes"]["VisibilityTimeout"] == "30"
        assert "orders-dead" in got["Attributes"]["RedrivePolicy"]
        tags = ep.call("ListQueueTags", {"QueueUrl": f"{ep.url}/000000000000/jobs.fifo"})
        assert tags["Tags"] == {"team": "billing"}
