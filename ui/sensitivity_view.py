"""Inputs of the Auditor-sensitivity page: the bundled sample, an upload, or stored runs.

The analysis itself is `eraudit_core.sensitivity.analyse`; this module only reads the inputs
and caches the result per input content, so a rerun of the page does not refit the models.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from eraudit_core.errors import InputError
from eraudit_core.paths import DATA_DIR
from ui import state

SAMPLE = DATA_DIR / "sensitivity" / "petri_like_rollouts.csv"
MAX_UPLOAD_BYTES = 50 * 1024 * 1024


def read_upload(filename: str, data: bytes) -> pd.DataFrame:
    """A tidy table from uploaded CSV/Parquet bytes (validated; errors name row and field)."""
    from eraudit_core.sensitivity import read_tidy_table

    if len(data) > MAX_UPLOAD_BYTES:
        raise InputError(f"{filename}: more than {MAX_UPLOAD_BYTES / 1e6:.0f} MB; nothing was read")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(filename).name
        path.write_bytes(data)
        try:
            return read_tidy_table(path).table
        except InputError as exc:
            raise InputError(str(exc).replace(str(path), filename)) from exc


def read_sample() -> pd.DataFrame:
    from eraudit_core.sensitivity import read_tidy_table

    return read_tidy_table(SAMPLE).table


def runs_table(run_ids: list[str], outcome: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Stored ER-Audit runs as a tidy table: condition = test generators, pair = checkpoints."""
    from eraudit_core.sensitivity import outcomes_from_run_pairs

    store = state.get_store()
    frames = []
    for rid in run_ids:
        run = store.run(rid)
        pairs = store.pair_results(rid)
        if pairs.empty:
            continue
        gens = run["config"].get("test_generators") or []
        frames.append(
            pairs.assign(
                run_id=rid,
                run_label=run.get("label") or rid,
                generator_condition="+".join(gens) or "default",
                checkpoint_pair=f"{run.get('pre_name')} -> {run.get('post_name')}",
            )
        )
    if not frames:
        raise InputError("the chosen runs have no finished questions")
    return outcomes_from_run_pairs(pd.concat(frames, ignore_index=True), outcome=outcome)


@st.cache_data(show_spinner="Fitting the cumulative-logit models...", max_entries=16)
def _analyse(digest: str, _table: pd.DataFrame, reference: str, n_boot: int):  # type: ignore[no-untyped-def]
    from eraudit_core.sensitivity import analyse

    return analyse(_table, reference_condition=reference, n_boot=n_boot, source="table")


def analyse_cached(table: pd.DataFrame, reference: str, n_boot: int):  # type: ignore[no-untyped-def]
    digest = hashlib.sha256(
        pd.util.hash_pandas_object(table, index=False).values.tobytes()
    ).hexdigest()
    return _analyse(digest, table, reference, n_boot)
