"""The plumbing every store table shares: sessions on the file, transactions, migrations.

Several processes share one store (the dashboard, `eraudit` commands in terminals, an audit
on a GPU box): a store holds the file only for the length of one operation or transaction
(`_access.StoreFile`), so store objects are cheap and may live as long as their process.
Writes are transactions, rolled back whole on error; `transaction()` groups several writes
into one, and `reading()` gives several reads one attachment of the file.

The schema is versioned: `MIGRATIONS[n]` takes a database from version n-1 to n, and opening a
store applies whatever is missing, in one transaction each. A database from a newer version of
the tool is refused rather than guessed at.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from eraudit_core.errors import InputError, StoreError
from eraudit_core.store._access import StoreFile
from eraudit_core.store._schema import MIGRATIONS, SCHEMA_VERSION


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _filtered(select: str, **equal_to: Any) -> tuple[str, list[Any]]:
    """`select` plus `WHERE col = ?` for every filter that is not None (column names are ours)."""
    used = {col: val for col, val in equal_to.items() if val is not None}
    where = " AND ".join(f"{col} = ?" for col in used)
    return (f"{select} WHERE {where}" if where else select), list(used.values())


# Inserts of up to this many rows go as one VALUES statement, larger ones as a DataFrame scan.
SMALL_INSERT_ROWS = 64


class Tables:
    """Opening, migrating and reaching one store file; the table methods live in subclasses."""

    def __init__(self, path: str | Path = ":memory:", busy_timeout_s: float | None = None) -> None:
        """Open (creating or migrating) the store at `path`; `busy_timeout_s` is how long an
        operation waits for another process to let go of the file ($ERAUDIT_BUSY_TIMEOUT,
        default 30 s) before it raises a StoreError naming that process."""
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._file = StoreFile(self.path, busy_timeout_s)
        self._migrate()

    # -- connection plumbing -------------------------------------------------------------
    @contextmanager
    def _read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        try:
            with self._file.reading() as cur:
                yield cur
        except duckdb.Error as exc:
            raise self._error(exc) from exc

    @contextmanager
    def _write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction; rolled back whole on any error (nested calls join the outer one)."""
        try:
            with self._file.transaction() as cur:
                yield cur
        except duckdb.Error as exc:
            raise self._error(exc) from exc

    def _error(self, exc: duckdb.Error) -> Exception:
        if isinstance(exc, duckdb.ConstraintException):
            return InputError(f"{self.path}: {exc}")
        return StoreError(f"{self.path}: {exc}")

    def transaction(self) -> Any:
        """`with store.transaction() as tx:` several writes that commit (or not) together;
        Store methods called inside join it. `tx` is a cursor for the rare raw statement."""
        return self._write()

    def reading(self) -> Any:
        """`with store.reading():` several reads on one attachment of the file."""
        return self._read()

    def _df(self, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
        with self._read() as cur:
            return cur.execute(sql, list(params)).df()

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._read() as cur:
            return cur.execute(sql, list(params)).fetchall()

    def close(self) -> None:
        """Nothing is held between operations; an in-memory store is discarded."""
        self._file.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema --------------------------------------------------------------------------
    def _version(self, cur: duckdb.DuckDBPyConnection) -> int:
        try:
            has = cur.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
                "AND table_name = 'schema_version'"
            ).fetchall()[0][0]
            if not has:
                return 0
            row = cur.execute("SELECT max(version) FROM schema_version").fetchone()
        except duckdb.Error as exc:
            raise StoreError(f"{self.path}: not a usable ER-Audit database: {exc}") from exc
        return int(row[0]) if row and row[0] is not None else 0

    def _migrate(self) -> None:
        if self.path != ":memory:" and Path(self.path).is_file():
            with self._read() as cur:  # most opens find the schema current: read-only
                current = self._version(cur)
            if current == SCHEMA_VERSION:
                return
        with self._write() as w:
            w.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER, applied_at TIMESTAMP)"
            )
            current = self._version(w)
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {current} is newer than this tool's "
                f"({SCHEMA_VERSION}); upgrade ER-Audit Studio to open it"
            )
        for version in sorted(v for v in MIGRATIONS if v > current):
            with self._write() as w:
                if self._version(w) >= version:  # another process migrated meanwhile
                    continue
                for ddl in MIGRATIONS[version]:
                    w.execute(ddl)
                w.execute("INSERT INTO schema_version VALUES (?, ?)", [version, _now()])

    def schema_version(self) -> int:
        return int(self._rows("SELECT max(version) FROM schema_version")[0][0])

    def _insert_frame(self, table: str, frame: pd.DataFrame, or_ignore: bool = False) -> None:
        """Bulk insert through DuckDB's DataFrame scan (row-by-row executemany is ~1000x slower)."""
        verb = "INSERT OR IGNORE" if or_ignore else "INSERT"
        if len(frame) <= SMALL_INSERT_ROWS:  # a batch of an audit: plain VALUES is faster
            rows = frame.astype(object).where(frame.notna(), None).itertuples(index=False)
            values = [v for row in rows for v in row]
            marks = "(" + ", ".join("?" * len(frame.columns)) + ")"
            if values:
                with self._write() as w:
                    w.execute(
                        f"{verb} INTO {table} VALUES {', '.join([marks] * len(frame))}", values
                    )
            return
        with self._write() as w:
            # no unregister after a failed insert: the aborted transaction would refuse it
            # and hide the real error; the registration ends with the session's cursor
            w.register("_frame", frame)
            w.execute(f"{verb} INTO {table} SELECT * FROM _frame")
            w.unregister("_frame")
