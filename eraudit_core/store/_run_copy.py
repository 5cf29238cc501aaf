"""A run's rows, read out of one store and written into another (for `eraudit export-run` /
`import-run`, issue 13 item 6).

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

import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.store._run_tables import ACTIVE_STATUSES
from eraudit_core.store._store import Store
from eraudit_core.types import Paraphrase

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
            "checkpoints": cur.execute(
                "SELECT * FROM checkpoints WHERE list_contains(?, fingerprint)", [fps]
            ).df(),
            "score_cache": cur.execute(
                "SELECT * FROM score_cache WHERE list_contains(?, fingerprint) "
                "AND list_contains(?, prompt_hash)",
                [fps, list(prompt_hashes)],
            ).df(),
        }
        pair_ids = sorted(set(rows["run_pairs"]["pair_id"]) | _source_pair_ids(run))
        rows["paraphrases"] = cur.execute(
            "SELECT * FROM paraphrases WHERE benchmark_id = ? AND list_contains(?, pair_id)",
            [bid, pair_ids],
        ).df()
    # the copy is not running anywhere: an active run arrives as interrupted
    if rows["runs"]["status"].iloc[0] in ACTIVE_STATUSES:
        rows["runs"].loc[:, "status"] = "interrupted"
    return rows


def _source_pair_ids(run: pd.DataFrame) -> set[str]:
    """The pairs a model run was started on (so an unfinished run can be resumed)."""
    try:
        source = json.loads(run["source"].iloc[0] or "")
    except (TypeError, ValueError):
        return set()
    return set(source.get("pair_ids") or []) if isinstance(source, dict) else set()


def write_run_rows(store: Store, rows: Mapping[str, pd.DataFrame]) -> str:
    """Store a run read by `read_run_rows` (possibly in another store); returns its id.

    One transaction: the run must be new here, the benchmark is added unless it is already
    stored (then it must have the run's pairs), paraphrases already stored identically are
    skipped and clashing ones refused, checkpoints and cached scores are added if missing.
    """
    run = rows["runs"]
    if len(run) != 1:
        raise InputError(f"a run copy holds exactly one run, this one holds {len(run)}")
    run_id = str(run["run_id"].iloc[0])
    for name in ("run_pairs", "run_steps"):
        other = set(rows[name]["run_id"]) - {run_id}
        if other:
            raise InputError(f"table {name} has rows of another run ({sorted(other)[0]})")
    with store.transaction() as w:
        if w.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone():
            raise InputError(
                f"run {run_id} is already in {store.path}; importing it again is refused "
                "(delete it there first to replace it)"
            )
        bench = rows["benchmarks"]
        if not bench.empty:
            bid = str(bench["benchmark_id"].iloc[0])
            stored = {
                r[0] for r in w.execute(
                    "SELECT pair_id FROM pairs WHERE benchmark_id = ?", [bid]
                ).fetchall()
            }  # fmt: skip
            if stored:
                missing = set(rows["pairs"]["pair_id"]) - stored
                if missing:
                    raise InputError(
                        f"benchmark {bid} is stored here without pair(s) the run needs, e.g. "
                        f"{sorted(missing)[0]}"
                    )
            else:
                _insert(w, "benchmarks", bench)
                _insert(w, "pairs", rows["pairs"])
            for prov, group in rows["paraphrases"].groupby("provenance", dropna=False, sort=False):
                paras = [
                    Paraphrase(
                        str(r["pair_id"]),
                        r["role"],
                        str(r["generator"]),
                        int(r["idx"]),
                        str(r["text"]),
                    )
                    for r in group.to_dict("records")
                ]
                provenance = json.loads(prov) if isinstance(prov, str) and prov else {}
                store.add_paraphrases(
                    bid, paras, provenance if isinstance(provenance, dict) else {}
                )
        known = {r[0] for r in w.execute("SELECT fingerprint FROM checkpoints").fetchall()}
        ckpts = rows["checkpoints"]
        _insert(w, "checkpoints", ckpts[~ckpts["fingerprint"].isin(known)])
        _insert(w, "score_cache", rows["score_cache"], or_ignore=True)
        _insert(w, "runs", run)
        _insert(w, "run_pairs", rows["run_pairs"])
        _insert(w, "run_steps", rows["run_steps"])
    return run_id


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
    cur.execute(f"{verb} INTO {table} ({', '.join(cols)}) SELECT {', '.join(cols)} FROM _copy")
    cur.unregister("_copy")
