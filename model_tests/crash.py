"""Crash the durable endpoint for real and judge what comes back against the model.

A :class:`CrashRun` starts ``python -m sqs_endpoint --data FILE --clock fake`` as a process of
its own, drives one queue (standard or FIFO) with a seeded load of sends, batch sends,
receives, deletes and clock advances over plain AWS JSON 1.0 (:class:`RawSqs`, so the point
where the process dies is the test's, not a client library's retries), and kills it with
SIGKILL at a seeded point: between two operations, or after writing a request and before
reading its answer, either at once (so the kill may land before, inside or after the
operation or its commit) or once the answer has arrived unread. No kill waits on the wall
clock: the points are events of the run. Then it starts the endpoint again on the same file,
and again, as many times as asked.

The judge is the executable spec (``spec``), in lockstep with the run: every answered
operation is applied to the spec's state and its answer compared (the bodies and attempts
delivered, the deduplicated sends, the deletes). The one operation the kill may have cut off
is unknown: the run keeps two candidate states, with and without it. After each restart the
contract's crash rule (docs/contract.md section 9) says what must be there: a candidate's
queue unchanged, every receipt handed out before dead. The run checks that directly: each
handle live in the model is refused as expired; then it drains the queue (receive ten and
delete, until empty; then advance past the visibility timeout, so what was in flight at the
crash comes back; again until nothing comes), and the same drain on a candidate must deliver
the same bodies with the same attempts, in the same order. The clock must resume at the
candidate's time. Any difference raises :class:`CrashRunError` naming the seed, the kill and
what differed.
"""

from __future__ import annotations

import http.client
import json
import random
import re
import select
import signal
import subprocess
import sys
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import spec
from spec import Config, Receipt, State

__all__ = ["CrashRun", "CrashRunError", "RawSqs", "start_endpoint"]

#: The queue's visibility timeout (seconds) and the advance that expires every delivery.
VT: Final = 30
ADVANCE: Final = VT + 1
#: Bound on every wait of the run (a process that neither answers nor dies fails the run).
BOUND: Final = 60.0
_URL: Final = re.compile(r"SQS endpoint on (http://\S+)")


class CrashRunError(AssertionError):
    """The recovered endpoint is not what the model's crash rule allows."""


def start_endpoint(data: Path, module: str = "sqs_endpoint") -> tuple[Any, str]:
    """``python -m sqs_endpoint --port 0 --clock fake --data DATA --data-sync normal`` (a
    killed process, not a machine, is what the run crashes): the process and its URL.
    ``module``: another module that runs the endpoint (``model_tests.crash_mutants``)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            module,
            "--port",
            "0",
            "--clock",
            "fake",
            "--data",
            str(data),
            "--data-sync",
            "normal",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = _URL.search(line)
    if m is None:
        proc.kill()
        _, err = proc.communicate(timeout=BOUND)
        raise RuntimeError(f"the endpoint did not start: {line!r} {err!r}")
    return proc, m.group(1)


class RawSqs:
    """A one-connection AWS JSON 1.0 client: a request can be written and its answer read
    later, so a kill can fall between the two."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        assert parts.hostname is not None and parts.port is not None
        self.url = url
        self._conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=BOUND)

    def write(self, op: str, params: dict[str, Any]) -> None:
        body = json.dumps(params).encode()
        self._conn.request(
            "POST",
            "/",
            body,
            {
                "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Target": f"AmazonSQS.{op}",
            },
        )

    def read(self) -> tuple[int, dict[str, Any]]:
        resp = self._conn.getresponse()
        data = resp.read()
        return resp.status, json.loads(data) if data else {}

    def call(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        self.write(op, params)
        status, out = self.read()
        if status != 200:
            raise CrashRunError(f"{op} {params} answered {status} {out}")
        return out

    def wait_answer(self) -> bool:
        """Wait, at most :data:`BOUND` seconds, until the answer to the request written last
        starts to arrive, and read none of it: whether it did."""
        sock = self._conn.sock
        if sock is None:
            return False
        ready, _, _ = select.select([sock], [], [], BOUND)
        return bool(ready)

    def write_control(self, path: str, body: dict[str, Any] | None = None) -> None:
        self._conn.request(
            "POST" if body is not None else "GET",
            f"/_control/clock{path}",
            json.dumps(body).encode() if body is not None else None,
            {"Content-Type": "application/json"},
        )

    def control(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        self.write_control(path, body)
        resp = self._conn.getresponse()
        out: dict[str, Any] = json.loads(resp.read())
        return out

    def close(self) -> None:
        self._conn.close()


@dataclass
class _Model:
    """One candidate of the model: the spec's state, its time, and the client's view of it
    (each handle the client holds -> the spec receipt it names; MessageId -> spec id)."""

    state: State
    now: float
    handles: dict[str, Receipt] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)


@dataclass
class CrashRun:
    """One seeded run: ``ops`` operations per life of the endpoint, ``crashes`` kills, of
    the endpoint that ``python -m MODULE`` runs."""

    data: Path
    seed: int
    fifo: bool = False
    ops: int = 40
    crashes: int = 2
    module: str = "sqs_endpoint"
    log: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.queue = "jobs.fifo" if self.fifo else "jobs"
        self.sent = 0

    # -- the run -----------------------------------------------------------------------------------

    def run(self) -> None:
        """The whole run; :class:`CrashRunError` if anything differs from the model."""
        model = _Model(spec.initial(Config(fifo=self.fifo)), 0.0)
        proc, url = start_endpoint(self.data, self.module)
        try:
            client = RawSqs(url)
            attrs = {"VisibilityTimeout": str(VT)}
            if self.fifo:
                attrs["FifoQueue"] = "true"
            self.url = client.call("CreateQueue", {"QueueName": self.queue, "Attributes": attrs})[
                "QueueUrl"
            ]
            for life in range(self.crashes):
                candidates = self._load(client, model, proc)
                proc.wait(timeout=BOUND)
                client.close()
                proc, url = start_endpoint(self.data, self.module)
                client = RawSqs(url)
                model = self._judge_restart(client, candidates, life)
            self._drain_and_compare(client, [model])
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=BOUND)

    def _fail(self, what: str) -> CrashRunError:
        tail = "\n  ".join(self.log[-12:])
        return CrashRunError(
            f"seed {self.seed} ({'FIFO' if self.fifo else 'standard'}): {what}\n  {tail}"
        )

    # -- the load, in lockstep with the spec ---------------------------------------------------

    def _load(self, client: RawSqs, model: _Model, proc: Any) -> list[_Model]:
        """``ops`` operations, each applied to the model and compared; then the kill. The
        candidates the kill leaves: the model without and with the operation it cut off."""
        kill_at = self.rng.randrange(self.ops)
        mid_op = self.rng.random() < 0.6
        for k in range(self.ops):
            op, params = self._next_op(model)
            if k == kill_at:
                after = self._apply(model, op, params, None)
                answered = False
                if mid_op:
                    if op == "advance":
                        client.write_control("/advance", {"seconds": ADVANCE})
                    else:
                        client.write(op, params)
                    # Where the kill lands: as soon as the request is written (before or
                    # inside the operation or its commit), or once the answer has arrived,
                    # unread (the commit made, the client told).
                    if self.rng.random() < 0.5:
                        answered = client.wait_answer()
                when = "after the answer to" if answered else "during" if mid_op else "before"
                self.log.append(f"kill {when} {op} {params}")
                proc.send_signal(signal.SIGKILL)
                return [model, after] if mid_op else [model]
            status: int
            out: dict[str, Any]
            if op == "advance":
                status, out = 200, client.control("/advance", {"seconds": ADVANCE})
            else:
                client.write(op, params)
                status, out = client.read()
            self.log.append(f"{op} {params} -> {status} {out}")
            expected = self._apply(model, op, params, (status, out))
            model.state, model.now = expected.state, expected.now
            model.handles, model.ids = expected.handles, expected.ids
        raise AssertionError("unreachable: the kill comes within the load")

    def _next_op(self, model: _Model) -> tuple[str, dict[str, Any]]:
        r = self.rng.random()
        if r < 0.35:
            return "SendMessage", self._send_params()
        if r < 0.45:
            entries = [
                {"Id": f"e{i}", **self._send_params(entry=True)}
                for i in range(self.rng.randint(1, 3))
            ]
            return "SendMessageBatch", {"QueueUrl": self.url, "Entries": entries}
        if r < 0.75:
            return "ReceiveMessage", {
                "QueueUrl": self.url,
                "MaxNumberOfMessages": self.rng.randint(1, 3),
                "VisibilityTimeout": VT,
                "AttributeNames": ["ApproximateReceiveCount"],
            }
        if r < 0.93 and model.handles:
            handle = self.rng.choice(sorted(model.handles))
            return "DeleteMessage", {"QueueUrl": self.url, "ReceiptHandle": handle}
        return "advance", {}

    def _send_params(self, entry: bool = False) -> dict[str, Any]:
        self.sent += 1
        p: dict[str, Any] = {"MessageBody": f"b{self.seed}x{self.sent}"}
        if not entry:
            p["QueueUrl"] = self.url
        if self.fifo:
            p["MessageGroupId"] = self.rng.choice(["g0", "g1"])
            p["MessageDeduplicationId"] = f"d{self.rng.randrange(max(1, self.sent // 2 + 1))}"
        return p

    # -- the model's step ------------------------------------------------------------------------

    def _apply(
        self,
        model: _Model,
        op: str,
        params: dict[str, Any],
        answer: tuple[int, dict[str, Any]] | None,
    ) -> _Model:
        """The model after ``op``; with ``answer`` (the endpoint's), compared with it."""
        m = replace(model, handles=dict(model.handles), ids=dict(model.ids))
        if op == "advance":
            m.now += ADVANCE
            m.state, _ = spec.expire(m.state, m.now)
        elif op == "SendMessage":
            got = self._spec_send(m, params)
            if answer is not None:
                self._expect(answer[0] == 200, f"{op} answered {answer}")
                m.ids[answer[1]["MessageId"]] = got
        elif op == "SendMessageBatch":
            got_ids = [self._spec_send(m, e) for e in params["Entries"]]
            if answer is not None:
                self._expect(answer[0] == 200 and not answer[1].get("Failed"), f"{answer}")
                for e, got in zip(answer[1]["Successful"], got_ids, strict=True):
                    m.ids[e["MessageId"]] = got
        elif op == "ReceiveMessage":
            m.state, ds = spec.receive_batch(m.state, m.now, params["MaxNumberOfMessages"], VT)
            if answer is not None:
                msgs = answer[1].get("Messages", [])
                seen = [(x["Body"], int(x["Attributes"]["ApproximateReceiveCount"])) for x in msgs]
                want = [(self._body(m.state, d.id), d.attempt) for d in ds]
                self._expect(seen == want, f"received {seen}, the model delivers {want}")
                for x, d in zip(msgs, ds, strict=True):
                    m.handles[x["ReceiptHandle"]] = d.receipt
        elif op == "DeleteMessage":
            receipt = m.handles.pop(params["ReceiptHandle"])
            m.state, ok = spec.delete(m.state, receipt)
            if answer is not None:
                self._expect((answer[0] == 200) == ok, f"delete answered {answer}, model {ok}")
        return m

    def _spec_send(self, m: _Model, p: dict[str, Any]) -> str:
        sid = p["MessageBody"]
        if self.fifo:
            m.state, got = spec.send(
                m.state,
                sid,
                p["MessageBody"],
                None,
                m.now,
                p["MessageGroupId"],
                p["MessageDeduplicationId"],
            )
        else:
            m.state, got = spec.send(m.state, sid, p["MessageBody"], None, m.now)
        return got if isinstance(got, str) else sid

    @staticmethod
    def _body(state: State, id: str) -> str:
        return id  # the spec's id of a message is its (unique) body

    def _expect(self, ok: bool, what: str) -> None:
        if not ok:
            raise self._fail(what)

    # -- after a restart: the crash rule ---------------------------------------------------------

    def _judge_restart(self, client: RawSqs, candidates: list[_Model], life: int) -> _Model:
        """The candidate the recovered endpoint is (its clock, its dead receipts); the queue
        itself is compared by the final drain, on the candidates still possible then."""
        now = float(client.control("")["now"])
        fits = [c for c in candidates if c.now == now]
        if not fits:
            raise self._fail(
                f"restart {life + 1}: the clock resumed at {now}, the model says "
                f"{sorted({c.now for c in candidates})}"
            )
        for c in fits:
            c.state = spec.recover(c.state)  # the crash rule: every receipt of before is dead
        for handle, receipt in sorted(fits[0].handles.items()):
            self._expect(not spec.delete(fits[0].state, receipt)[1], "the model kept a receipt")
            status, out = self._raw(client, "DeleteMessage", handle)
            self._expect(
                status == 400 and "expired" in out.get("message", out.get("Message", "")),
                f"restart {life + 1}: a handle of before the crash answered {status} {out}",
            )
        for c in fits:
            c.handles.clear()
        self.log.append(f"restart {life + 1}: now {now}, {len(fits)} candidate(s)")
        if len(fits) == 1:
            return fits[0]
        return self._pick(client, fits)

    def _raw(self, client: RawSqs, op: str, handle: str) -> tuple[int, dict[str, Any]]:
        client.write(op, {"QueueUrl": self.url, "ReceiptHandle": handle})
        return client.read()

    def _pick(self, client: RawSqs, fits: list[_Model]) -> _Model:
        """Which candidate the endpoint is: the one whose counts it shows (the drain at the
        end then compares everything)."""
        attrs = client.call(
            "GetQueueAttributes", {"QueueUrl": self.url, "AttributeNames": ["All"]}
        )["Attributes"]
        shown = (
            int(attrs["ApproximateNumberOfMessages"]),
            int(attrs["ApproximateNumberOfMessagesNotVisible"]),
        )
        for c in fits:
            if (len(c.state.visible), len(c.state.in_flight)) == shown:
                return c
        raise self._fail(f"the recovered counts {shown} fit no candidate")

    def _drain_and_compare(self, client: RawSqs, candidates: Sequence[_Model]) -> None:
        """Drain the endpoint and each candidate alike; one candidate must deliver the same."""
        seen = self._drain_endpoint(client)
        for c in candidates:
            if self._drain_model(c) == seen:
                return
        raise self._fail(
            f"the drain delivered {seen}; the model: {[self._drain_model(c) for c in candidates]}"
        )

    def _drain_endpoint(self, client: RawSqs) -> list[list[tuple[str, int]]]:
        rounds: list[list[tuple[str, int]]] = []
        for _ in range(64):
            got: list[tuple[str, int]] = []
            while True:
                msgs = client.call(
                    "ReceiveMessage",
                    {
                        "QueueUrl": self.url,
                        "MaxNumberOfMessages": 10,
                        "VisibilityTimeout": VT,
                        "AttributeNames": ["ApproximateReceiveCount"],
                    },
                ).get("Messages", [])
                if not msgs:
                    break
                got += [(x["Body"], int(x["Attributes"]["ApproximateReceiveCount"])) for x in msgs]
                client.call(
                    "DeleteMessageBatch",
                    {
                        "QueueUrl": self.url,
                        "Entries": [
                            {"Id": f"e{i}", "ReceiptHandle": x["ReceiptHandle"]}
                            for i, x in enumerate(msgs)
                        ],
                    },
                )
            rounds.append(got)
            if not got and len(rounds) > 1 and not rounds[-2]:
                return rounds
            client.control("/advance", {"seconds": ADVANCE})
        raise self._fail("the drain did not end")

    def _drain_model(self, c: _Model) -> list[list[tuple[str, int]]]:
        state, now = c.state, c.now
        rounds: list[list[tuple[str, int]]] = []
        for _ in range(64):
            got: list[tuple[str, int]] = []
            while True:
                state, ds = spec.receive_batch(state, now, 10, VT)
                if not ds:
                    break
                got += [(d.id, d.attempt) for d in ds]
                state, _ = spec.delete_batch(state, [d.receipt for d in ds])
            rounds.append(got)
            if not got and len(rounds) > 1 and not rounds[-2]:
                return rounds
            now += ADVANCE
            state, _ = spec.expire(state, now)
        raise self._fail("the model's drain did not end")
