"""The project's forged-bundle generator: how an attacker holding the source edits a run
bundle so that it agrees with itself (every checksum and row count in the manifest, every
pair row replayed from the edited steps), shared by the bundle trust tests.

`tampered` applies an edit and recomputes; `write_frames` writes frames and a manifest that
matches them; `refused` imports a forgery and checks it is refused with exit 2, no traceback,
the given words in the message, and the store left exactly as it was.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import duckdb
import pandas as pd

from eraudit_core.bundles import bundle_config, replay_pair_verdict
from eraudit_core.cli import main
from eraudit_core.method import degradation_denominator, is_counterexample, monitored_gain
from eraudit_core.store import RUN_TABLES, Store
from tests._synthetic import build_synthetic_store

Frames = dict[str, pd.DataFrame]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def read_frames(bundle: Path) -> tuple[dict[str, bytes], Frames]:
    with zipfile.ZipFile(bundle) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    frames = {name: pd.read_parquet(io.BytesIO(members[f"{name}.parquet"])) for name in RUN_TABLES}
    return members, frames


def write_frames(members: dict[str, bytes], frames: Frames, out: Path) -> Path:
    """The bundle with `frames`, every checksum and row count in the manifest recomputed."""
    manifest = json.loads(members["manifest.json"])
    members = dict(members)
    for name, frame in frames.items():
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False)
        members[f"{name}.parquet"] = buf.getvalue()
        manifest["tables"][name]["sha256"] = hashlib.sha256(buf.getvalue()).hexdigest()
        manifest["tables"][name]["rows"] = len(frame)
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out


def recompute(frames: Frames, available: dict[str, int] | None = None) -> None:
    """What an attacker with the source does after editing steps: D, flags, and every pair
    field derived again with the project's replay, so the bundle agrees with itself."""
    run_id = str(frames["runs"]["run_id"].iloc[0])
    config = bundle_config(frames["runs"], run_id)
    steps, pairs = frames["run_steps"], frames["run_pairs"]
    for i in pairs.index:
        pair = pairs.loc[i].to_dict()
        gens = json.loads(pair["generators"])
        for g in gens:
            g["available"] = (available or {}).get(g["generator"], g["available"])
        pair["generators"] = gens
        gain = monitored_gain(float(pair["p_pre_monitored"]), float(pair["p_post_monitored"]))
        den = degradation_denominator(gain, config.k)
        mask = steps["pair_id"] == pair["pair_id"]
        drop = steps.loc[mask, "p_pre"].astype(float) - steps.loc[mask, "p_post"].astype(float)
        steps.loc[mask, "prob_drop"] = drop
        steps.loc[mask, "d"] = drop / den
        steps.loc[mask, "is_counterexample"] = [
            is_counterexample(d, config.epsilon, x, config.min_drop)
            for d, x in zip(drop / den, drop, strict=True)
        ]
        tests: list = []
        verdict, n_cex = replay_pair_verdict(pair, steps[mask], config, tests)
        mine = steps[mask]
        n_search_cex = n_cex - sum(t.n_counterexamples for t in tests)
        updates = {
            "status": verdict.status,
            "bound": verdict.bound,
            "bound_common": verdict.bound_common,
            "bound_tolerant": verdict.bound_tolerant,
            "target_reached": verdict.target_reached,
            "n_counterexamples": n_cex,
            "n_search": int((mine["stage"] == 1).sum()),
            "n_test": sum(t.n for t in tests),
            "max_d": float(mine["d"].max()) if len(mine) else None,
            "gain": gain,
            "denominator": den,
            "stage": 1 if n_search_cex else (2 if any(t.n for t in tests) else None),
            "generators": json.dumps([t.to_dict() for t in tests]),
        }
        for col, value in updates.items():
            pairs.loc[i, col] = value


def store_snapshot(db: Path) -> dict[str, list]:
    """Every row of every table, for a before/after comparison."""
    if not db.exists():
        return {}
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [r[0] for r in con.execute("SHOW TABLES").fetchall()]
        return {n: con.execute(f"SELECT * FROM {n} ORDER BY ALL").fetchall() for n in names}
    finally:
        con.close()


def tampered(
    bundle: Path,
    tmp_path: Path,
    edit: Callable[[Frames], dict[str, int] | None],
    name: str = "tampered.zip",
    *,
    after: Callable[[Frames], None] | None = None,
    manifest: Callable[[dict], None] | None = None,
) -> tuple[Path, Frames]:
    """`bundle` with `edit` applied to its frames and every pair row recomputed; `edit` may
    return the pool sizes (`available`) a forged pair records per generator. `after` edits
    the recomputed frames (a claim the replay would have set right), `manifest` the manifest
    (kept in step with an edited runs table)."""
    members, frames = read_frames(bundle)
    available = edit(frames)
    recompute(frames, available)
    if after is not None:
        after(frames)
    if manifest is not None:
        data = json.loads(members["manifest.json"])
        manifest(data)
        members = {**members, "manifest.json": json.dumps(data).encode()}
    return write_frames(members, frames, tmp_path / name), frames


def refused(capsys, bad: Path, db: Path, *says: str) -> str:  # type: ignore[no-untyped-def]
    """Import `bad` into `db`: exit 2, no traceback, every one of `says` in the message, and
    every row of `db` as it was."""
    before = store_snapshot(db)
    code, _, err = run_cli(capsys, "import-run", str(bad), "--db", str(db))
    assert code == 2, err
    assert "Traceback" not in err
    for s in says:
        assert s in err, err
    assert store_snapshot(db) == before
    return err


def _table(path: Path, n_test: int = 8) -> Path:
    """p1 passes (8 test draws, none degraded); p2 is degraded at its third test draw."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        for p in ("p1", "p2"):
            w.writerow([p, "monitored", "", 0, f"m {p}", 0.5, 0.9])
            w.writerow([p, "search", "s", 0, f"{p} search", 0.7, 0.7])
            for i in range(n_test):
                post = 0.4 if (p == "p2" and i == 2) else 0.69
                w.writerow([p, "test", "g1", i, f"{p} draw number {i}", 0.7, post])
    return path


def build_bundles(tmp: Path) -> dict[str, Path]:
    """A score-table run (target 0.8, which 8 clean draws do not reach) and a synthetic
    benchmark run (with its paraphrase pools), each exported once: {"table", "model"}."""
    db = tmp / "gpu.duckdb"
    code = main(
        ["audit-table", str(_table(tmp / "scores.csv")), "--epsilon", "0.5", "--target", "0.8",
         "--db", str(db), "--json"]
    )  # fmt: skip
    assert code == 0
    with Store(db) as store:
        info = build_synthetic_store(store, n_pairs=2, n_search=2, n_test=4, arms=("honest",))
        table_run = str(
            store.runs().loc[lambda r: r["source"].str.startswith("table:"), "run_id"].iloc[0]
        )
    out = {}
    for name, run_id in (("table", table_run), ("model", info.run_ids["honest"])):
        out[name] = tmp / f"{name}.zip"
        assert main(["export-run", run_id, "--db", str(db), "--out", str(out[name])]) == 0
    return out
