"""How a process reaches a store file: briefly, and taking turns with other processes.

DuckDB lets one process at a time hold a database file for writing (any number may hold it
read-only, but not while someone writes). The dashboard and the `eraudit` CLI share one file,
so nobody keeps it open: every store operation ATTACHes the file to a process-wide in-memory
DuckDB, does its work, and DETACHes it (which checkpoints and releases the file lock). ATTACH/DETACH costs about 2 ms for
a read and 5-30 ms for a small write, where opening a fresh DuckDB connection costs 15-60 ms,
which is why the hub exists; operations that follow each other share one short lease.

Inside one process, threads share an attachment (reads join a write attachment; a writer waits
for read-only users to finish and then reattaches read-write). Across processes, a busy file is
retried with exponential backoff and jitter; when it stays busy past the timeout the StoreError
names the process that holds it. A process that writes back to back leaves a gap after each
lease, so a waiting process gets its turn.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import itertools
import math
import os
import random
import re
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from eraudit_core.errors import StoreError

BUSY_TIMEOUT_ENV = "ERAUDIT_BUSY_TIMEOUT"
DEFAULT_BUSY_TIMEOUT_S = 30.0
# Backoff between attempts on a busy file: 2 ms doubling to 25 ms, each with +-50 % jitter
# (a failed attempt costs about a millisecond; short gaps must not be missed).
BACKOFF_FIRST_S = 0.002
BACKOFF_MAX_S = 0.025
# How long an attachment may be shared by operations that follow each other (see _Hub), and
# how long a process that wrote leaves the file free before it attaches to write again.
WRITE_LEASE_S = 0.2
READ_LEASE_S = 0.1
WRITE_GAP_S = 0.05
# An attachment nobody has used for this long is detached before its lease ends (an audit
# scoring with a model leaves the file free while it computes).
IDLE_S = 0.02
_LOCK_WORDS = ("could not set lock", "conflicting lock", "already attached", "unique file handle")
_HOLDER = re.compile(r"held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


MAX_BUSY_TIMEOUT_S = 86_400.0


def default_busy_timeout() -> float:
    """$ERAUDIT_BUSY_TIMEOUT seconds, else 30."""
    raw = os.environ.get(BUSY_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_BUSY_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_BUSY_TIMEOUT_S:  # NaN or inf would wait forever
        raise StoreError(
            f"${BUSY_TIMEOUT_ENV} must be seconds in [0, {MAX_BUSY_TIMEOUT_S:g}], got {raw[:40]!r}"
        )
    return value


def _is_busy(exc: BaseException) -> bool:
    msg = str(exc).lower()
    return any(word in msg for word in _LOCK_WORDS)


def holder_description(message: str) -> str:
    """'process 1234 (eraudit audit --db ...)' from DuckDB's lock message, in plain words."""
    match = _HOLDER.search(message)
    if not match:
        return "another program"
    pid = int(match.group("pid"))
    if pid == os.getpid():
        return f"process {pid} (this process, through another connection)"
    command = match.group("program")
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        args = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
        if args:
            command = " ".join(" ".join([Path(args[0]).name, *args[1:]]).split())[:200]
    except OSError:
        pass
    return f"process {pid} ({command})"


@dataclass
class _Attachment:
    alias: str
    write: bool
    users: int = 0
    state: str = "opening"  # opening -> open -> closing
    opened_at: float = 0.0
    expires_at: float = 0.0
    last_used: float = 0.0

    def due(self) -> float:
        """When an unused attachment is detached: its lease ends, or it sat idle too long."""
        return min(self.expires_at, self.last_used + IDLE_S)


@dataclass
class _PathState:
    writers_waiting: int = 0
    last_write_release: float = 0.0
    last_write_hold: float = 0.0
    attachment: _Attachment | None = None
    in_memory: bool = False
    lock: threading.RLock = field(default_factory=threading.RLock)


class _Hub:
    """One in-memory DuckDB per process; store files are attached while someone uses them.

    An attachment is a short lease: operations that start within `WRITE_LEASE_S` (writes) or
    `READ_LEASE_S` (reads) of the attach, each less than `IDLE_S` after the previous one
    ended, share it, so an audit commits batch after batch without reattaching (each commit
    is durable on its own). Once the lease is over or idle, the last user detaches, and a
    process that wrote leaves the file free for `WRITE_GAP_S` before it attaches for writing
    again: the gap a waiting process (retrying every few milliseconds) gets in by. A janitor
    thread detaches leases nobody is using.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._paths: dict[str, _PathState] = {}
        self._janitor: threading.Thread | None = None
        self._stopping = False

    def _connection(self) -> duckdb.DuckDBPyConnection:
        with self._cond:
            if self._con is None:
                self._con = duckdb.connect(":memory:")
            return self._con

    def state(self, key: str) -> _PathState:
        with self._cond:
            return self._paths.setdefault(key, _PathState())

    def cursor(self) -> duckdb.DuckDBPyConnection:
        con = self._connection()
        with self._cond:  # creating cursors from several threads at once is not safe
            return con.cursor()

    def _execute(self, sql: str) -> None:
        cur = self.cursor()
        try:
            cur.execute(sql)
        finally:
            cur.close()

    # -- in-memory stores: attached once, for the life of their Store --------------------
    def attach_memory(self, key: str) -> None:
        st = self.state(key)
        alias = "m_" + hashlib.sha1(key.encode()).hexdigest()[:16]
        self._execute(f"ATTACH ':memory:' AS {alias}")
        with self._cond:
            st.in_memory = True
            st.attachment = _Attachment(alias, True, users=1, state="open")

    def detach_memory(self, key: str) -> None:
        with self._cond:
            st = self._paths.pop(key, None)
        if st and st.attachment:
            self._execute(f"DETACH {st.attachment.alias}")

    # -- files ---------------------------------------------------------------------------
    def acquire(self, key: str, path: str, write: bool, deadline: float) -> str:
        """Attach `path` (or join its lease) and return its alias; waits while it is busy."""
        st = self.state(key)
        counted = False
        try:
            while True:
                with self._cond:
                    action, a = self._decide(st, write)
                    if action == "join":
                        return a.alias
                    if action == "wait":
                        if write and not counted:
                            st.writers_waiting += 1
                            counted = True
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            raise StoreError(
                                f"{path} is busy: other work in this process kept it for "
                                "longer than the store's busy timeout"
                            )
                        self._cond.wait(min(remaining, 0.05))
                        continue
                if action == "detach":
                    self._detach(st, a)
                    continue
                return self._open(st, a, path, write, deadline)
        finally:
            if counted:
                with self._cond:
                    st.writers_waiting -= 1

    def _decide(self, st: _PathState, write: bool) -> tuple[str, _Attachment]:
        """Under the lock: join the current lease, open a new one, close an idle unusable
        one, or wait."""
        a = st.attachment
        if a is None:
            a = _Attachment(_alias(write), write, users=1)
            st.attachment = a
            return "attach", a
        if st.in_memory:
            a.users += 1
            return "join", a
        if a.state != "open":
            return "wait", a
        now = time.monotonic()
        idle_too_long = a.users == 0 and now >= a.due()
        usable = (a.write or not write) and now < a.expires_at and not idle_too_long
        if usable and not (st.writers_waiting and not a.write):
            a.users += 1
            return "join", a
        if a.users == 0:
            a.state = "closing"
            return "detach", a
        return "wait", a

    def _open(self, st: _PathState, a: _Attachment, path: str, write: bool, deadline: float) -> str:
        try:
            if write:  # after a write lease, leave the file to others for a moment
                gap = min(st.last_write_hold, WRITE_GAP_S)
                pause = st.last_write_release + gap - time.monotonic()
                if pause > 0:
                    time.sleep(min(pause, 1.0))
            self._attach(path, a.alias, write, deadline)
        except BaseException:
            with self._cond:
                st.attachment = None
                self._cond.notify_all()
            raise
        with self._cond:
            now = time.monotonic()
            a.state, a.opened_at, a.last_used = "open", now, now
            a.expires_at = now + (WRITE_LEASE_S if write else READ_LEASE_S)
            self._cond.notify_all()
        return a.alias

    def release(self, key: str) -> None:
        st = self.state(key)
        with self._cond:
            a = st.attachment
            if a is None or st.in_memory:
                return
            a.users -= 1
            if a.users > 0:
                return
            a.last_used = time.monotonic()
            if a.last_used < a.expires_at and not st.writers_waiting:
                self._start_janitor()
                self._cond.notify_all()
                return
            a.state = "closing"
        self._detach(st, a)

    def let_go(self, key: str) -> None:
        """Detach now if nobody in this process is using the file (a Store closing)."""
        st = self.state(key)
        with self._cond:
            a = st.attachment
            if a is None or st.in_memory or a.state != "open" or a.users:
                return
            a.state = "closing"
        self._detach(st, a)

    def _detach(self, st: _PathState, a: _Attachment) -> None:
        try:
            self._execute(f"DETACH {a.alias}")  # checkpoints, then releases the file lock
        finally:
            with self._cond:
                if a.write:
                    now = time.monotonic()
                    st.last_write_hold = now - a.opened_at
                    st.last_write_release = now
                st.attachment = None
                self._cond.notify_all()

    def _start_janitor(self) -> None:
        if self._janitor is None and not self._stopping:
            self._janitor = threading.Thread(target=self._sweep, name="store-janitor", daemon=True)
            self._janitor.start()

    def _sweep(self) -> None:
        """Detach leases that ran out with nobody using them."""
        while True:
            with self._cond:
                if self._stopping:
                    return
                now = time.monotonic()
                due = [
                    st
                    for st in self._paths.values()
                    if st.attachment is not None
                    and not st.in_memory
                    and st.attachment.state == "open"
                    and st.attachment.users == 0
                    and st.attachment.due() <= now
                ]
                closing = []
                for st in due:
                    assert st.attachment is not None
                    st.attachment.state = "closing"
                    closing.append((st, st.attachment))
                if not due:
                    pending = [
                        st.attachment.due() if st.attachment.users == 0 else st.attachment.expires_at
                        for st in self._paths.values()
                        if st.attachment is not None and st.attachment.state == "open"
                        and not st.in_memory
                    ]  # fmt: skip
                    self._cond.wait(max(0.005, min(pending) - now) if pending else None)
                    continue
            for st, a in closing:
                # a janitor must not die; a failed DETACH is retried by the next ATTACH
                with contextlib.suppress(Exception):
                    self._detach(st, a)

    def close_all(self) -> None:
        """At exit: stop the janitor (a daemon thread must not be inside DuckDB when the
        interpreter kills it), then detach every idle attachment, so the files are
        checkpointed and free."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            janitor = self._janitor
        if janitor is not None:
            janitor.join(timeout=10)
        for key in list(self._paths):
            self.let_go(key)

    def _attach(self, path: str, alias: str, write: bool, deadline: float) -> None:
        sql = f"ATTACH '{path.replace(chr(39), chr(39) * 2)}' AS {alias}"
        if not write:
            sql += " (READ_ONLY)"
        delay = BACKOFF_FIRST_S
        started = time.monotonic()
        # an alias left behind by an interrupted DETACH would block the ATTACH
        self._execute(f"DETACH DATABASE IF EXISTS {alias}")
        while True:
            cur = self.cursor()
            try:
                cur.execute(sql)
                return
            except duckdb.Error as exc:
                if not _is_busy(exc):
                    raise StoreError(f"{path}: cannot open the database: {exc}") from exc
                if time.monotonic() >= deadline:
                    waited = time.monotonic() - started
                    raise StoreError(
                        f"{path} is busy: {holder_description(str(exc))} has held it for the "
                        f"last {waited:.0f} s. ER-Audit itself holds a store only for short "
                        "transactions, so this is a long import or a program outside ER-Audit "
                        "(a duckdb shell, an older version of the dashboard); try again when "
                        f"it is done, or raise ${BUSY_TIMEOUT_ENV} (seconds) to wait longer."
                    ) from exc
            finally:
                cur.close()
            time.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, BACKOFF_MAX_S)


_ALIASES = itertools.count()
_MEMORY_STORES = itertools.count()


def _alias(write: bool) -> str:
    return f"{'w' if write else 'r'}_{os.getpid()}_{next(_ALIASES)}"


_HUB = _Hub()
atexit.register(_HUB.close_all)
_local = threading.local()


@dataclass
class _Session:
    cursor: duckdb.DuckDBPyConnection
    write: bool
    in_transaction: bool = False


class StoreFile:
    """Sessions on one store file: `session(write=...)` yields a cursor whose default database
    is the store; nested sessions of one thread share the outer one."""

    def __init__(self, path: str, busy_timeout_s: float | None = None) -> None:
        self.path = path
        self.in_memory = path == ":memory:"
        self.key = f":memory:{next(_MEMORY_STORES)}" if self.in_memory else os.path.realpath(path)
        self.busy_timeout_s = default_busy_timeout() if busy_timeout_s is None else busy_timeout_s
        if self.in_memory:  # lives until closed, or until this object is garbage-collected
            _HUB.attach_memory(self.key)
            self._finalizer = weakref.finalize(self, _HUB.detach_memory, self.key)

    def close(self) -> None:
        """Discard an in-memory store; let go of a file nobody in this process is using."""
        if self.in_memory:
            self._finalizer()
        else:
            _HUB.let_go(self.key)

    def _sessions(self) -> dict[str, _Session]:
        sessions = getattr(_local, "sessions", None)
        if sessions is None:
            sessions = _local.sessions = {}
        return sessions

    @contextmanager
    def session(self, write: bool) -> Iterator[_Session]:
        sessions = self._sessions()
        outer = sessions.get(self.key)
        if outer is not None:
            if write and not outer.write:
                raise RuntimeError(f"{self.path}: a write inside a read-only session")
            yield outer
            return
        alias = _HUB.acquire(self.key, self.path, write, time.monotonic() + self.busy_timeout_s)
        try:
            cur = _HUB.cursor()
            try:
                cur.execute(f"USE {alias}")
                sess = _Session(cur, write)
                sessions[self.key] = sess
                try:
                    yield sess
                finally:
                    sessions.pop(self.key, None)
            finally:
                cur.close()
        finally:
            _HUB.release(self.key)

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One write transaction; rolled back whole on any error. Nested ones join the outer."""
        with self.session(write=True) as sess:
            if sess.in_transaction:
                yield sess.cursor
                return
            cur = sess.cursor
            with _HUB.state(self.key).lock:  # one writer at a time inside this process
                cur.execute("BEGIN TRANSACTION")
                sess.in_transaction = True
                try:
                    yield cur
                except BaseException:
                    sess.in_transaction = False
                    cur.execute("ROLLBACK")
                    raise
                sess.in_transaction = False
                cur.execute("COMMIT")

    @contextmanager
    def reading(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read session (joins an enclosing write session of the same thread)."""
        with self.session(write=False) as sess:
            yield sess.cursor
