"""Audit a score table and keep its rows with the run.

A table run stores every row of its table, including rows the audit never reached (a pair
degraded in stage 1 never touches its test rows), so its sweeps and epsilon calibrations read
the whole table and equal fresh audits at every epsilon. One place starts or resumes table
runs (the CLI's `audit-table` and the embedded demo).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from eraudit_core.method._config import AuditConfig
from eraudit_core.runs._engine import AuditEngine, ProgressCallback
from eraudit_core.runs._record import create_run_record, new_run_id
from eraudit_core.runs._table_scores import (
    TableVerifier,
    items_from_table,
    read_score_table,
    table_digest,
)
from eraudit_core.store import Store


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
