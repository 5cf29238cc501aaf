"""A run's rows, read out of one store and written into another (for `eraudit export-run` /
`import-run`).

Reading takes one snapshot: the run, its per-pair results and steps, its whole benchmark
(benchmarks are content-addressed, so a partial copy would be mistaken for the full one
later), the paraphrases of its pairs with their provenance, its two checkpoints and the cached
scores of its prompts. Writing is one transaction that refuses a run id the target already
has and any paraphrase that clashes with what the target stores, so a refused import changes
nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.store._benchmark import CONTENT_COLUMNS, pairs_content_digest
from eraudit_core.store._store import Store, benchmark_slot
from eraudit_core.types import ACTIVE_RUN_STATUSES, Paraphrase, RunStatus

RUN_TABLES = (
    "runs",
    "run_pairs",
    "run_steps",
    "benchmarks",
    "pairs",
    "paraphrases",
    "checkpoints",
    "score_cache",
)

PARAPHRASE_COLUMNS = "benchmark_id, pair_id, role, generator, idx, text, provenance, created_at"
CHECKPOINT_COLUMNS = "fingerprint, name, details, registered_at"
SCORE_COLUMNS = (
    "fingerprint, prompt_hash, p_true, l_a_true_a, l_b_true_a, l_a_true_b, l_b_true_b, scored_at"
)


def read_run_rows(
    store: Store, run_id: str, prompt_hashes: Sequence[str]
) -> dict[str, pd.DataFrame]:
    """Every row a run needs elsewhere, from one consistent read of `store`."""
    store.run(run_id)  # InputError naming the run when it is not there
    with store.reading() as cur:
        run = cur.execute("SELECT * FROM runs WHERE run_id = ?", [run_id]).df()
        bid = run["benchmark_id"].iloc[0]
        fps = [run["pre_fingerprint"].iloc[0] or "", run["post_fingerprint"].iloc[0] or ""]
        rows = {
            "runs": run,
            "run_pairs": cur.execute("SELECT * FROM run_pairs WHERE run_id = ?", [run_id]).df(),
            "run_steps": cur.execute("SELECT * FROM run_steps WHERE run_id = ?", [run_id]).df(),
            "benchmarks": cur.execute(
                "SELECT * FROM benchmarks WHERE benchmark_id = ?", [bid]
            ).df(),
            "pairs": cur.execute("SELECT * FROM pairs WHERE benchmark_id = ?", [bid]).df(),
            "score_cache": cur.execute(
                f"SELECT {SCORE_COLUMNS} FROM score_cache WHERE list_contains(?, fingerprint) "
                "AND list_contains(?, prompt_hash) UNION ALL "
                f"SELECT DISTINCT ON (fingerprint, prompt_hash) {SCORE_COLUMNS} "
                "FROM imported_scores i WHERE list_contains(?, fingerprint) "
                "AND list_contains(?, prompt_hash) AND NOT EXISTS (SELECT 1 FROM score_cache c "
                "WHERE c.fingerprint = i.fingerprint AND c.prompt_hash = i.prompt_hash)",
                [fps, list(prompt_hashes)] * 2,
            ).df(),
        }
        pair_ids = sorted(set(rows["run_pairs"]["pair_id"]) | _source_pair_ids(run))
        # an imported run's pools and checkpoints live apart: read them where they are
        # of the store's own pools, the rows that existed when the run was created: the pools
        # it drew from (a set extended later would not match what the run recorded)
        origin = _origin(run)
        rows["paraphrases"] = cur.execute(
            f"SELECT {PARAPHRASE_COLUMNS} FROM paraphrases WHERE benchmark_id = ? "
            "AND list_contains(?, pair_id) AND created_at <= ? "
            f"UNION ALL SELECT {PARAPHRASE_COLUMNS} "
            "FROM imported_paraphrases WHERE origin = ? AND benchmark_id = ? "
            "AND list_contains(?, pair_id)",
            [
                bid,
                pair_ids,
                pd.Timestamp(run["created_at"].iloc[0]).to_pydatetime(),
                origin,
                bid,
                pair_ids,
            ],
        ).df()
        rows["checkpoints"] = cur.execute(
            f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE list_contains(?, fingerprint) "
            f"UNION ALL SELECT {CHECKPOINT_COLUMNS} FROM imported_checkpoints i "
            "WHERE origin = ? AND list_contains(?, fingerprint) AND NOT EXISTS "
            "(SELECT 1 FROM checkpoints c WHERE c.fingerprint = i.fingerprint)",
            [fps, origin, fps],
        ).df()
    # the copy is not running anywhere: an active run arrives as interrupted
    if rows["runs"]["status"].iloc[0] in ACTIVE_RUN_STATUSES:
        rows["runs"].loc[:, "status"] = RunStatus.INTERRUPTED
    return rows


def _origin(run: pd.DataFrame) -> str | None:
    """The origin an imported run's material is stored under (None for a run of this store)."""
    raw = run["imported_from"].iloc[0] if "imported_from" in run.columns else None
    try:
        imported = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        imported = None
    if not isinstance(imported, dict):
        return None
    return import_origin(imported, str(run["run_id"].iloc[0]))


def import_origin(imported_from: Mapping[str, Any], run_id: str) -> str:
    """The name an import's material is kept under: the bundle's file name and its run."""
    return f"{imported_from.get('file') or 'a bundle'} (run {run_id})"


def _source_pair_ids(run: pd.DataFrame) -> set[str]:
    """The pairs a model run was started on (so an unfinished run can be resumed)."""
    try:
        source = json.loads(run["source"].iloc[0] or "")
    except (TypeError, ValueError):
        return set()
    return set(source.get("pair_ids") or []) if isinstance(source, dict) else set()


def write_run_rows(
    store: Store,
    rows: Mapping[str, pd.DataFrame],
    imported_from: Mapping[str, Any] | None = None,
    benchmark_digest: str | None = None,
) -> str:
    """Store a run read by `read_run_rows` (possibly in another store); returns its id.

    One transaction: the run must be new here. Without `imported_from` the rows were derived
    in this store (e.g. a run re-derived after exclusions) and are stored as this store's own.

    With `imported_from` (a bundle) nothing it brings joins what local audits read: its
    paraphrases go to `imported_paraphrases`, its checkpoint rows to `imported_checkpoints`
    and its cached scores to `imported_scores`, each under the import's origin
    (`import_origin`); the run is recorded with `imported_from` and never as running here.
    Its benchmark is matched by content: pairs this store already holds under the id (or one
    of its versions) are reused, other pairs are stored under `<id>@<digest>` with the origin,
    so a bundle never takes a name a later local import would need. A bundle that carries no
    benchmark must name a stored one whose content digest is `benchmark_digest`.
    """
    run = rows["runs"].copy()
    if len(run) != 1:
        raise InputError(f"a run copy holds exactly one run, this one holds {len(run)}")
    run_id = str(run["run_id"].iloc[0])
    for name in ("run_pairs", "run_steps"):
        other = set(rows[name]["run_id"]) - {run_id}
        if other:
            raise InputError(f"table {name} has rows of another run ({sorted(other)[0]})")
    _check_probabilities(rows)
    if run["status"].iloc[0] in ACTIVE_RUN_STATUSES:  # it runs nowhere here, whatever it claims
        run["status"] = RunStatus.INTERRUPTED
    for col in ("owner_pid", "owner_host", "owner_token", "heartbeat_at"):
        if col in run.columns:
            run[col] = pd.Series([None], dtype=object, index=run.index)
    origin = import_origin(imported_from or {}, run_id) if imported_from is not None else None
    if imported_from is not None:
        run["imported_from"] = json.dumps(dict(imported_from), ensure_ascii=False, default=str)
    now = pd.Timestamp.now(tz="UTC").tz_localize(None)
    with store.transaction() as w:
        if w.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchall():
            raise InputError(
                f"run {run_id} is already in {store.path}; importing it again is refused "
                "(delete it there first to replace it)"
            )
        bench = rows["benchmarks"]
        if not bench.empty:
            bid = _store_benchmark(w, bench, rows["pairs"], origin)
            run["benchmark_id"] = bid
            if origin is None:
                _store_own_paraphrases(store, bid, rows["paraphrases"])
            else:
                paras = rows["paraphrases"].copy()
                paras["benchmark_id"] = bid
                paras.insert(0, "origin", origin)
                _insert(w, "imported_paraphrases", paras)
        elif origin is not None and _is_set(run["benchmark_id"].iloc[0]):
            _check_named_benchmark(w, str(run["benchmark_id"].iloc[0]), benchmark_digest)
        ckpts = rows["checkpoints"]
        if origin is None:
            known = {r[0] for r in w.execute("SELECT fingerprint FROM checkpoints").fetchall()}
            _insert(w, "checkpoints", ckpts[~ckpts["fingerprint"].isin(known)])
        else:
            ckpts = ckpts.copy()
            ckpts.insert(0, "origin", origin)
            _insert(w, "imported_checkpoints", ckpts)
        scores = rows["score_cache"].copy()
        scores["origin"] = origin or f"this store (run {run_id})"
        scores["imported_at"] = now
        _insert(w, "imported_scores", scores, or_ignore=True)
        _insert(w, "runs", run)
        _insert(w, "run_pairs", rows["run_pairs"])
        _insert(w, "run_steps", rows["run_steps"])
    return run_id


def _is_set(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_named_benchmark(cur: Any, benchmark_id: str, digest: str | None) -> None:
    """A bundle without its benchmark names one this store holds with the same content."""
    if not digest:
        raise InputError(
            f"the bundle carries no benchmark and names none by content digest; its run "
            f"names benchmark {benchmark_id!r}"
        )
    bid, stored = benchmark_slot(cur, benchmark_id, digest)
    if not stored or bid != benchmark_id:
        raise InputError(
            f"the bundle carries no benchmark and this store holds no benchmark "
            f"{benchmark_id!r} with content digest {digest}"
        )


def _store_own_paraphrases(store: Store, bid: str, paraphrases: pd.DataFrame) -> None:
    """Paraphrases of a run derived in this store, added to its own sets (clashes refused)."""
    for prov, group in paraphrases.groupby("provenance", dropna=False, sort=False):
        paras = [
            Paraphrase(
                str(r["pair_id"]), r["role"], str(r["generator"]), int(r["idx"]), str(r["text"])
            )
            for r in group.to_dict("records")
        ]
        provenance = json.loads(prov) if isinstance(prov, str) and prov else {}
        store.add_paraphrases(bid, paras, provenance if isinstance(provenance, dict) else {})


# What the store's CHECK constraints would say, checked here because DuckDB cannot add a
# constraint to an existing table (docs/evidence.md): (table, column, NULL allowed).
PROBABILITY_COLUMNS = (
    ("run_steps", "p_pre", False),
    ("run_steps", "p_post", False),
    ("run_pairs", "p_pre_monitored", True),
    ("run_pairs", "p_post_monitored", True),
    ("run_pairs", "p_pre_hidden", True),
    ("run_pairs", "p_post_hidden", True),
    ("score_cache", "p_true", False),
)


def _check_probabilities(rows: Mapping[str, pd.DataFrame]) -> None:
    """Every probability of a run copy a finite number in [0, 1] (and the step stages 1 or
    2), whoever built the rows; InputError names table, row and field."""
    for table, col, nullable in PROBABILITY_COLUMNS:
        frame = rows.get(table)
        if frame is None or col not in frame.columns or frame.empty:
            continue
        values = pd.to_numeric(frame[col], errors="coerce").astype(float)
        bad = ~values.between(0.0, 1.0)  # NaN and +-inf fall outside too
        if nullable:
            bad &= frame[col].notna()
        if bool(bad.any()):
            i = int(bad.to_numpy().nonzero()[0][0])
            raise InputError(
                f"table {table} row {i + 1}: field {col} must be a probability in [0, 1], got "
                f"{frame[col].iloc[i]!r}"
            )
    steps = rows.get("run_steps")
    if steps is not None and not steps.empty and "stage" in steps.columns:
        bad = ~pd.to_numeric(steps["stage"], errors="coerce").isin([1, 2])
        if bool(bad.any()):
            i = int(bad.to_numpy().nonzero()[0][0])
            raise InputError(
                f"table run_steps row {i + 1}: field stage must be 1 or 2, got "
                f"{steps['stage'].iloc[i]!r}"
            )


def _store_benchmark(
    cur: Any, bench: pd.DataFrame, pairs: pd.DataFrame, origin: str | None = None
) -> str:
    """The id the bundle's benchmark lives under here: the stored id (or version) that holds
    these very pairs, else a new one: the next free version for rows of this store, or
    `<id>@<digest[:12]>` marked with `origin` for an import."""
    claimed = str(bench["benchmark_id"].iloc[0])
    pairs = pairs.copy()
    pairs["story_title"] = pairs["story_title"].where(pairs["story_title"].notna(), "")
    digest = pairs_content_digest(pairs[list(CONTENT_COLUMNS)].itertuples(index=False))
    bid, stored = benchmark_slot(cur, claimed, digest)
    if not stored and origin is not None:
        bid, stored = benchmark_slot(cur, f"{claimed.split('@')[0]}@{digest[:12]}", digest)
    if not stored:
        bench = bench.iloc[:1].copy()
        bench.loc[:, "benchmark_id"] = bid
        bench["content_digest"] = digest
        bench.loc[:, "n_pairs"] = len(pairs)
        bench["origin"] = origin
        pairs.loc[:, "benchmark_id"] = bid
        _insert(cur, "benchmarks", bench)
        _insert(cur, "pairs", pairs)
    return bid


def _insert(cur, table: str, frame: pd.DataFrame, or_ignore: bool = False) -> None:  # type: ignore[no-untyped-def]
    """Insert by column name: a copy from an older schema leaves newer columns empty."""
    if frame.empty:
        return
    columns = [r[0] for r in cur.execute(f"DESCRIBE {table}").fetchall()]
    unknown = [c for c in frame.columns if c not in columns]
    if unknown:
        raise InputError(f"table {table}: unknown column(s) {', '.join(unknown)}")
    cols = [c for c in columns if c in frame.columns]
    verb = "INSERT OR IGNORE" if or_ignore else "INSERT"
    cur.register("_copy", frame[cols])
    try:
        cur.execute(f"{verb} INTO {table} ({', '.join(cols)}) SELECT {', '.join(cols)} FROM _copy")
    except duckdb.ConstraintException as exc:
        # a key twice, or a NULL where the store needs a value: the rows' fault, not the
        # store's. The transaction is aborted now; the caller's rollback drops the view too.
        first = str(exc).splitlines()[0].replace("Constraint Error: ", "")
        raise InputError(f"table {table}: a row the store refuses ({first})") from None
    cur.unregister("_copy")
