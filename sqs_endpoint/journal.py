"""The durable endpoint's store: a journal of what the Service did, in one SQLite file.

``sqs_endpoint --data FILE`` (``serve(data=FILE)``) keeps its queues in memory, as always, and
writes each operation that changed them to ``FILE`` before its answer leaves; a restart on the
same file replays the journal and carries on (``Service.recover``; docs/contract.md section 9
has the rules, ``tla/QueueDurable.tla`` the model).

WHAT IS WRITTEN. The Service's state is a function of its inputs: each operation's request, the
time it ran at, and the moments the queues' timers fired. Everything else it would draw at
random (message ids, move task ids) comes from a generator seeded by the file's secret
(:class:`IdSource`), and the epoch of its timestamps is the file's. So the journal holds, in
the order they took effect:

- ``op``: an operation that changed something (a ``SendMessage``, a ``ReceiveMessage`` that
  delivered, a ``CreateQueue``...): its name, its validated request, the base URL it was made
  to, the time, and what it did (``check``: the ids sent, the deliveries made), which the
  replay compares;
- ``sweep``: a queue's timers fired (``impl.AsyncQueue.record_sweeps``): its name and the time;
- ``clock``: the clock was moved (an advance of the fake clock): the time it moved to, which a
  restart resumes from;
- ``recover``: a restart: the receipts handed out before it are dead from here on.

Each entry also keeps how many ids the :class:`IdSource` had drawn when it began, so a replay
draws the same ids even where an operation that failed drew one.

An operation runs within one turn of the event loop (the endpoint's clock is pinned per turn,
``ServerClock(pinned=True)``), so each entry has one time, and entries are appended in the
order their steps took effect. :meth:`Journal.commit` writes what was appended in one
transaction; the Service commits at the end of every operation, before the answer is sent,
so an answered send or delete is on disk (``synchronous=FULL``: through a power cut too;
``"normal"``: through a crash of the process, not of the machine). A sweep no answer has
depended on yet may be lost: after the restart its timers fire again.

THE FILE. SQLite in WAL mode, ``PRAGMA application_id`` :data:`APPLICATION_ID`, ``user_version``
:data:`VERSION`, tables ``meta`` (the secret, the epoch, the creation time) and ``journal``. It
is held open exclusively: a second endpoint on the same file is refused. A file that is not
SQLite, another application's database, a newer version or a damaged file raises
:class:`DataFileError` naming the file and what is wrong, and is left as it was.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pathlib
import secrets
import sqlite3
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "APPLICATION_ID",
    "VERSION",
    "DataFileError",
    "Entry",
    "IdSource",
    "Journal",
    "Sync",
]

#: ``PRAGMA application_id`` of a data file: "SQSE".
APPLICATION_ID: Final = 0x53515345
#: ``PRAGMA user_version``: the journal's format.
VERSION: Final = 1

Sync = Literal["full", "normal"]

_SCHEMA: Final = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE journal (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL, "
    "now REAL NOT NULL, wall REAL NOT NULL, ids INTEGER NOT NULL, params TEXT, base TEXT, "
    '"check" TEXT)',
)
_KINDS: Final = frozenset({"op", "sweep", "clock", "recover"})


class DataFileError(Exception):
    """A data file that cannot be used (not SQLite, not this endpoint's, a newer version,
    damaged, in use, or a journal that does not replay); the message names the file."""


@dataclass(frozen=True)
class Entry:
    """One journal entry (see the module docstring): ``kind`` is ``op``, ``sweep``, ``clock``
    or ``recover``; ``name`` the operation's or the queue's name; ``now`` the endpoint's clock;
    ``wall`` the epoch time it was written at; ``ids`` how many ids the :class:`IdSource` had
    drawn when it began; ``params``, ``base`` and ``check`` an operation's request, base URL
    and outcome."""

    seq: int
    kind: str
    name: str
    now: float
    wall: float
    ids: int
    params: dict[str, Any] | None = None
    base: str | None = None
    check: Any = None


class IdSource:
    """Message and task ids: random UUIDs (version 4 in form) drawn from a generator seeded
    by ``secret``, so a replay of the same operations draws the same ids. ``secret`` None: a
    fresh random UUID each time (the in-memory endpoint)."""

    def __init__(self, secret: bytes | None) -> None:
        self._secret = secret
        #: How many ids were drawn: the replay of an entry starts from the count it recorded.
        self.drawn = 0

    def __call__(self) -> str:
        if self._secret is None:
            return str(uuid.uuid4())
        self.drawn += 1
        digest = hashlib.sha256(self._secret + self.drawn.to_bytes(8, "big")).digest()
        return str(uuid.UUID(bytes=digest[:16], version=4))


def _encode(value: Any) -> Any:
    # The validated request holds blobs as bytes (binary message attributes): JSON has none.
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$bytes"}:
            return base64.b64decode(value["$bytes"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


class Journal:
    """The journal of one data file, open for this endpoint alone (see the module docstring).

    ``path``: the file (created if it does not exist or is empty); ``sync``: ``"full"`` (the
    default: a committed entry survives a power cut) or ``"normal"`` (it survives a crash of
    the process; faster). :class:`DataFileError` if the file cannot be used; ``TypeError`` or
    ``ValueError`` naming a bad argument."""

    def __init__(self, path: str | os.PathLike[str], *, sync: Sync = "full") -> None:
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"path must be a path, got {type(path).__name__}")
        if sync not in ("full", "normal"):
            raise ValueError(f"sync must be 'full' or 'normal', got {sync!r}")
        self.path = pathlib.Path(path)
        self.sync: Sync = sync
        self._pending: list[
            tuple[str, str, float, float, int, str | None, str | None, str | None]
        ] = []
        self._conn = self._open()
        meta = dict(self._conn.execute("SELECT key, value FROM meta"))
        try:
            #: The seed of the file's ids, the epoch time of the clock's 0, when it was made.
            self.secret = bytes.fromhex(meta["secret"])
            self.epoch0 = float(meta["epoch0"])
            self.created = float(meta["created"])
        except (KeyError, ValueError) as e:
            self._conn.close()
            raise self._error(f"its meta table is incomplete ({e})") from None

    # -- opening ---------------------------------------------------------------------------------

    def _error(self, what: str) -> DataFileError:
        return DataFileError(f"{self.path}: {what}")

    def _open(self) -> sqlite3.Connection:
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        if not fresh and not self.path.is_file():
            raise self._error("not a regular file")
        if not fresh:
            with self.path.open("rb") as f:
                head = f.read(16)
            if head != b"SQLite format 3\x00":
                raise self._error("not an SQLite database (not a data file of sqs_endpoint)")
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as e:
            raise self._error(f"cannot be opened: {e}") from None
        try:
            if not fresh:
                self._check(conn)
            conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode != "wal":
                raise self._error(f"cannot be put in WAL mode (journal_mode {mode})")
            conn.execute(f"PRAGMA synchronous={self.sync.upper()}")
            # Take the exclusive lock now: a second endpoint on this file fails here.
            conn.execute("BEGIN IMMEDIATE")
            if fresh:
                self._create(conn)
            conn.execute("COMMIT")
        except sqlite3.OperationalError as e:
            conn.close()
            if "locked" in str(e):
                raise self._error("in use by another endpoint (the database is locked)") from None
            raise self._error(f"cannot be used: {e}") from None
        except sqlite3.DatabaseError as e:
            conn.close()
            raise self._error(f"damaged: {e}") from None
        except DataFileError:
            conn.close()
            raise
        return conn

    def _check(self, conn: sqlite3.Connection) -> None:
        # Read only: a foreign or newer file must be left as it was found.
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        if app != APPLICATION_ID:
            raise self._error(
                f"another application's SQLite database (application_id {app:#x}, "
                f"sqs_endpoint's is {APPLICATION_ID:#x})"
            )
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != VERSION:
            raise self._error(
                f"a data file of version {version}; this sqs_endpoint reads version {VERSION}"
            )
        check = conn.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise self._error(f"damaged (quick_check: {check})")

    def _create(self, conn: sqlite3.Connection) -> None:
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={VERSION}")
        wall = time.time()
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [("secret", secrets.token_hex(16)), ("epoch0", repr(wall)), ("created", repr(wall))],
        )

    # -- reading ---------------------------------------------------------------------------------

    def entries(self) -> Iterator[Entry]:
        """Every committed entry, in order. :class:`DataFileError` for one that cannot be read."""
        rows = self._conn.execute(
            'SELECT seq, kind, name, now, wall, ids, params, base, "check" FROM journal '
            "ORDER BY seq"
        )
        for seq, kind, name, now, wall, ids, params, base, check in rows:
            if kind not in _KINDS or not isinstance(name, str):
                raise self._error(f"journal entry {seq} is not an entry of this format")
            try:
                yield Entry(
                    seq,
                    kind,
                    name,
                    float(now),
                    float(wall),
                    int(ids),
                    None if params is None else _decode(json.loads(params)),
                    base,
                    None if check is None else json.loads(check),
                )
            except (ValueError, TypeError) as e:
                raise self._error(f"journal entry {seq} cannot be read: {e}") from None

    def last(self) -> Entry | None:
        """The last committed entry, or None for an empty journal."""
        last: Entry | None = None
        for last in self.entries():  # noqa: B007 - the loop is the read
            pass
        return last

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM journal").fetchone()[0])

    # -- writing ---------------------------------------------------------------------------------

    def append(
        self,
        kind: str,
        name: str,
        now: float,
        ids: int,
        params: dict[str, Any] | None = None,
        base: str | None = None,
        check: Any = None,
    ) -> None:
        """Add an entry to the next :meth:`commit` (nothing is written yet)."""
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {sorted(_KINDS)}, got {kind!r}")
        self._pending.append(
            (
                kind,
                name,
                float(now),
                time.time(),
                ids,
                None if params is None else json.dumps(_encode(params), separators=(",", ":")),
                base,
                None if check is None else json.dumps(check, separators=(",", ":")),
            )
        )

    @property
    def pending(self) -> int:
        """How many entries wait for the next :meth:`commit`."""
        return len(self._pending)

    def commit(self) -> None:
        """Write the appended entries in one transaction. On failure (``sqlite3.Error``, e.g. a
        full disk) they stay appended, for the next commit, and the error propagates."""
        if not self._pending:
            return
        conn = self._conn
        if conn is None:
            raise self._error("closed: nothing more can be written")
        try:
            conn.execute("BEGIN")
            conn.executemany(
                'INSERT INTO journal (kind, name, now, wall, ids, params, base, "check") '
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                self._pending,
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._pending.clear()

    def abandon(self) -> None:
        """Close the file without writing what is appended: what a killed process leaves
        (``Endpoint.restart(crash=True)``). Idempotent."""
        self._pending.clear()
        self.close()

    def close(self) -> None:
        """Commit what is appended and close the file. Idempotent."""
        conn = self._conn
        if conn is None:
            return
        try:
            self.commit()
        finally:
            conn.close()
            self._conn = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r}, sync={self.sync!r})"
