"""A run as tables (per-pair and per-paraphrase results, CSV or Parquet) plus its provenance.

Every export names what produced it, so a reader can tell whether two exports (or reports)
came from the same inputs: tool version, both checkpoints' fingerprints, each paraphrase set's
digest, the test-draw seed, the config and the times.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.method import run_noise_floor_value
from eraudit_core.paths import check_output_dir
from eraudit_core.runs import tool_version
from eraudit_core.store import Store
from eraudit_core.text import csv_text
from eraudit_core.types import Verdict

ExportFormat = Literal["csv", "parquet"]
EXPORT_FORMATS: tuple[str, ...] = ("csv", "parquet")

PAIR_COLUMNS = [
    "pair_id",
    "pair_index",
    "status",
    "stage",
    "monitored_question",
    "hidden_question",
    "p_pre_monitored",
    "p_post_monitored",
    "gain",
    "denominator",
    "p_pre_hidden",
    "p_post_hidden",
    "max_d",
    "n_counterexamples",
    "n_search",
    "n_test",
    "bound_common",
    "bound",
    "bound_tolerant",
    "target_reached",
    "generators",
    "amplified",
    "worst_drop",
    "within_noise",
    "worst_stage",
    "worst_generator",
    "worst_text",
    "worst_p_pre",
    "worst_p_post",
    "worst_prompt",
]
PARAPHRASE_COLUMNS = [
    "pair_id",
    "stage",
    "set",
    "generator",
    "t",
    "idx",
    "text",
    "p_pre",
    "p_post",
    "drop",
    "d",
    "is_counterexample",
    "within_noise",
    "bound",
    "bound_tolerant",
    "prompt",
]


# ---------------------------------------------------------------------------------------------
# Tables for export


def run_provenance(store: Store, run_id: str) -> dict[str, Any]:
    """What produced a run: stored provenance plus checkpoints, config and times (JSON-safe)."""
    run = store.run(run_id)
    stored = dict(run.get("provenance") or {})

    def when(v: Any) -> str | None:
        return None if v is None or (isinstance(v, float) and v != v) else str(v)

    return {
        "run_id": run_id,
        "label": run.get("label"),
        "status": run.get("status"),
        "tool_version": stored.pop("tool_version", None) or tool_version(),
        "pre": {"name": run.get("pre_name"), "fingerprint": run.get("pre_fingerprint")},
        "post": {"name": run.get("post_name"), "fingerprint": run.get("post_fingerprint")},
        "config": run["config"],
        "created_at": when(run.get("created_at")),
        "finished_at": when(run.get("finished_at")),
        **stored,
        **({"imported_from": run["imported_from"]} if run.get("imported_from") else {}),
    }


def pair_table(store: Store, run_id: str) -> pd.DataFrame:
    """Per-pair results of a run with flat columns (generators as a JSON string)."""
    df = store.pair_results(run_id)
    if df.empty:
        return pd.DataFrame(columns=["run_id", *PAIR_COLUMNS])
    floor = run_noise_floor_value(store.run(run_id)["provenance"])
    drop = df["worst_drop"].astype(float)
    df = df.assign(
        generators=[json.dumps(g) for g in df["generators"]],
        run_id=run_id,
        within_noise=(drop.abs() <= floor) & (df["status"] == Verdict.DEGRADED)
        if floor is not None
        else False,
    )
    return df[["run_id", *PAIR_COLUMNS]].reset_index(drop=True)


def paraphrase_table(store: Store, run_id: str) -> pd.DataFrame:
    """Every scored paraphrase of a run: set (search/test), generator, t, text, p_pre, p_post, D."""
    df = store.steps(run_id)
    if df.empty:
        return pd.DataFrame(columns=["run_id", *PARAPHRASE_COLUMNS])
    floor = run_noise_floor_value(store.run(run_id)["provenance"])
    drop = df["p_pre"].astype(float) - df["p_post"].astype(float)
    df = df.assign(
        set=df["stage"].map({1: "search", 2: "test"}),
        run_id=run_id,
        drop=drop,
        within_noise=(drop.abs() <= floor) if floor is not None else False,
    )
    return df[["run_id", *PARAPHRASE_COLUMNS]].reset_index(drop=True)


def table_bytes(df: pd.DataFrame, fmt: str) -> bytes:
    """A table as CSV (UTF-8, RFC 4180, formula cells neutralised) or Parquet bytes."""
    if fmt == "csv":
        return csv_text(df).encode("utf-8")
    if fmt == "parquet":
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        return buf.getvalue()
    raise InputError(f"export format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}")


def export_run(
    store: Store, run_id: str, out_dir: str | Path, fmt: str = "csv", *, force: bool = False
) -> list[Path]:
    """Write `<run_id>_pairs.<fmt>`, `<run_id>_paraphrases.<fmt>` and
    `<run_id>_provenance.json` into `out_dir`.

    Existing files are replaced only with `force`; a DuckDB store never is.
    """
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"export format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}")
    store.run(run_id)  # raises InputError naming the run if it does not exist
    safe_id = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)
    names = [f"{safe_id}_{name}.{fmt}" for name in ("pairs", "paraphrases")]
    out = check_output_dir(out_dir, [*names, f"{safe_id}_provenance.json"], force=force)
    tables = [pair_table(store, run_id), paraphrase_table(store, run_id)]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, df in zip(names, tables, strict=True):
        path = out / name
        path.write_bytes(table_bytes(df, fmt))
        written.append(path)
    path = out / f"{safe_id}_provenance.json"
    path.write_text(json.dumps(run_provenance(store, run_id), indent=2, default=str) + "\n")
    written.append(path)
    return written
