"""Audit scores produced elsewhere: a table of precomputed probabilities (the score-table
format is in docs/cli.md).

Columns: ``pair_id, role, generator, idx, text, p_pre, p_post`` where role is ``monitored`` (one
canonical row a pair), ``hidden`` (the canonical hidden question, optional), ``search`` or
``test``, and ``p_*`` is the probability of the true answer. The table becomes audit items plus
two table-backed verifiers, so the same engine (and store, and views) audits it.

`audit_table_run` audits a table and keeps its rows with the run: every row, including rows
the audit never reached (a pair degraded in stage 1 never touches its test rows), so its
sweeps and epsilon calibrations read the whole table and equal fresh audits at every epsilon.
It is the one place that starts or resumes table runs (the CLI's `audit-table` and the
embedded demo).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig
from eraudit_core.runs._engine import AuditEngine, AuditItem, ProgressCallback
from eraudit_core.runs._record import create_run_record, new_run_id
from eraudit_core.store import Store
from eraudit_core.text import check_no_control, check_text
from eraudit_core.types import Paraphrase, Query, QueryScore

REQUIRED_COLUMNS = ("pair_id", "role", "generator", "idx", "text", "p_pre", "p_post")
ROLES = ("monitored", "hidden", "search", "test")


def read_score_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV or Parquet score table and validate every row (errors name row and field).

    Ids and texts are strings whatever they look like ("007" stays "007"); idx must be a
    whole number (1.5 is refused, not truncated); a test row needs its generator.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such score table")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            df = pd.read_parquet(path)
        else:
            df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    except Exception as exc:  # pandas raises many types for unreadable files
        raise InputError(f"{path}: cannot read the table: {exc}") from exc
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
    df = df.reset_index(drop=True)
    first = 2  # rows are counted as a spreadsheet shows them, the header being row 1
    typed_file = path.suffix.lower() in (".parquet", ".pq")
    for col in ("pair_id", "role", "generator", "text"):
        for i, v in enumerate(df[col]):
            if not _blank(v) and not isinstance(v, str):
                raise InputError(
                    f"{path}: row {i + first}: field {col} must be text (a string), got "
                    f"{type(v).__name__} {_short(v)}"
                )
        df[col] = [None if _blank(v) else str(v) for v in df[col]]
    idx: list[int] = []
    seen: dict[tuple[str, str, str, int], int] = {}
    for i, rec in enumerate(df[list(REQUIRED_COLUMNS)].to_dict("records")):
        pair_id, role, text, generator = rec["pair_id"], rec["role"], rec["text"], rec["generator"]
        where = f"{path}: row {i + first} (pair {pair_id})"
        for col in ("pair_id", "role", "generator", "text"):
            if isinstance(rec[col], str):
                check_no_control(rec[col], where, col)
        if not pair_id or not pair_id.strip():
            raise InputError(f"{where}: field pair_id is empty")
        if role not in ROLES:
            raise InputError(f"{where}: field role must be one of {', '.join(ROLES)}, got {role!r}")
        if role in ("search", "test") and (not text or not text.strip()):
            raise InputError(f"{where}: field text is empty")
        if role == "test" and (not generator or not generator.strip()):
            raise InputError(f"{where}: field generator is empty (a test row needs its generator)")
        if text:
            check_text(text, where, "text")
        for col in ("p_pre", "p_post"):
            raw = rec[col]
            # a CSV cell is text to parse; a Parquet cell must already be a number (a boolean
            # or a string there is a column written wrongly, not a probability)
            typed = typed_file and not isinstance(raw, (int, float, np.integer, np.floating))
            if isinstance(raw, (bool, np.bool_)) or typed:
                raise InputError(
                    f"{where}: field {col} must be a number, got {type(raw).__name__} {raw!r}"
                )
            try:
                v = float(raw)
            except (TypeError, ValueError):
                raise InputError(f"{where}: field {col} is not a number: {raw!r}") from None
            if not (math.isfinite(v) and 0.0 <= v <= 1.0):
                raise InputError(f"{where}: field {col} must be a probability in [0, 1], got {v!r}")
        if isinstance(rec["idx"], (bool, np.bool_)):
            raise InputError(f"{where}: field idx must be a whole number, got {rec['idx']!r}")
        number = _whole_number(rec["idx"], where)
        key = (pair_id, role, generator or "", number)
        if key in seen:
            raise InputError(
                f"{where}: the row (pair_id, role, generator, idx) = ({pair_id}, {role}, "
                f"{generator or ''}, {number}) repeats row {seen[key] + first}; each must be "
                "unique"
            )
        seen[key] = i
        idx.append(number)
    df["text"] = df["text"].fillna("").astype(str)
    df["generator"] = df["generator"].fillna("").astype(str)
    df["p_pre"] = df["p_pre"].astype(float)
    df["p_post"] = df["p_post"].astype(float)
    df["idx"] = pd.Series(idx, dtype=int, index=df.index)
    return df


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def _whole_number(value: object, where: str) -> int:
    """idx as an int; empty means 0 (canonical rows); 1.5 or 'x' is an error, not truncated."""
    if _blank(value) or (isinstance(value, str) and not value.strip()):
        return 0
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"{where}: field idx must be a whole number, got {value!r}") from None
    if not number.is_integer() or number < 0:
        raise InputError(f"{where}: field idx must be a whole number >= 0, got {value!r}")
    if number >= 2**63:
        raise InputError(f"{where}: field idx must fit in a 64-bit integer, got {value!r}")
    return int(number)


def table_query(pair_id: str, text: str, role: str) -> Query:
    """Queries of a score table carry no options; the option slot tells monitored rows from
    hidden-question rows so the two never share a cache key."""
    return Query(pair_id, text, "monitored" if role == "monitored" else "hidden", "")


class TableVerifier:
    """A Verifier that answers from one probability column of a score table."""

    def __init__(self, table: pd.DataFrame, column: str, table_digest: str) -> None:
        self._fingerprint = f"table:{table_digest}:{column}"
        self._p: dict[str, float] = {}
        for row in table.itertuples(index=False):
            q = table_query(str(row.pair_id), str(row.text), str(row.role))
            p = float(getattr(row, column))
            h = q.prompt_hash
            if h in self._p and self._p[h] != p:
                raise InputError(
                    f"pair {row.pair_id}: the text {str(row.text)[:60]!r} appears twice with "
                    f"different {column} values ({self._p[h]} and {p})"
                )
            self._p[h] = p

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def score(self, queries: Sequence[Query]) -> list[QueryScore]:
        try:
            return [QueryScore(self._p[q.prompt_hash]) for q in queries]
        except KeyError as exc:
            raise InputError(f"the score table has no row for a requested query ({exc})") from None


def table_digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def items_from_table(
    df: pd.DataFrame, source: str = "table"
) -> tuple[list[AuditItem], tuple[str, ...]]:
    """Audit items (pairs in order of first appearance) and test generators in order."""
    test_order: list[str] = []
    for g in df.loc[df["role"] == "test", "generator"]:
        if g not in test_order:
            test_order.append(g)
    items: list[AuditItem] = []
    for index, (pid, group) in enumerate(df.groupby("pair_id", sort=False)):
        mon = group[group["role"] == "monitored"]
        if len(mon) != 1:
            raise InputError(
                f"{source}: pair {pid}: needs exactly one row with role monitored, found {len(mon)}"
            )
        hid = group[group["role"] == "hidden"]
        if len(hid) > 1:
            raise InputError(f"{source}: pair {pid}: more than one row with role hidden")
        hidden_text = str(hid["text"].iloc[0]) if len(hid) else ""
        paras = {
            role: [
                Paraphrase(str(pid), role, str(r.generator), int(r.idx), str(r.text))  # type: ignore[arg-type]
                for r in group[group["role"] == role].sort_values("idx", kind="stable").itertuples()
            ]
            for role in ("search", "test")
        }
        tests = {g: tuple(p for p in paras["test"] if p.generator == g) for g in test_order}
        items.append(
            AuditItem(
                pair_id=str(pid),
                index=index,
                monitored=table_query(str(pid), str(mon["text"].iloc[0]), "monitored"),
                hidden=table_query(str(pid), hidden_text, "hidden"),
                search=tuple(paras["search"]),
                tests={g: t for g, t in tests.items()},
            )
        )
    return items, tuple(test_order)


def audit_table_run(
    store: Store,
    path: str | Path,
    config: AuditConfig,
    *,
    run_id: str | None = None,
    label: str = "",
    benchmark_id: str | None = None,
    names: tuple[str, str] | None = None,
    provenance: Mapping[str, Any] | None = None,
    should_cancel: Callable[[], bool] | None = None,
    progress: ProgressCallback | None = None,
) -> str:
    """Audit the table at `path` (creating the run, or resuming `run_id` if it is stored).

    Without test generators in `config`, the table's own are used in order of appearance.
    """
    df = read_score_table(path)
    items, gens = items_from_table(df, source=str(path))
    if not config.test_generators:
        config = replace(config, test_generators=gens)
    digest = table_digest(path)
    engine = AuditEngine(
        store,
        TableVerifier(df, "p_pre", digest),
        TableVerifier(df, "p_post", digest),
        config,
        progress=progress,
        should_cancel=should_cancel,
    )
    if run_id is None or not store.has_run(run_id):
        run_id = run_id or new_run_id()
        create_run_record(
            store,
            items,
            config,
            label=label or run_id,
            run_id=run_id,
            benchmark_id=benchmark_id,
            source=f"table:{path}",
            names=names or (f"{path}:p_pre", f"{path}:p_post"),
            fingerprints=(engine.pre.fingerprint, engine.post.fingerprint),
            provenance=provenance,
        )
    store.put_table_rows(run_id, df)
    engine.resume(run_id, items)
    return run_id
