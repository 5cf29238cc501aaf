"""Running audits: the engine that drives `PairAudit` with live scores, and the runs it stores.

Owns: the engine (`AuditEngine` in `_engine`, scores through the cache in `_scorer_cache`),
starting and resuming audits of checkpoints (`_launch`, `_checkpoints`, `_items`), the
description of one audit (`RunRequest` in `_request`, also when it names a control), a run's
inputs, seeded draws and digests (`_inputs`), the pending run record (`_record`), the live step
and traffic written for pages that poll (`_step_reporter`, `_traffic`, `_pace_gate`), score-table
audits (`_table_scores`), a run re-derived without excluded rewordings
(`_exclusion`) and a run's label mass and prompts (`_label_mass`).

May import: eraudit_core.null (epsilon calibrations and the control's mismatches),
eraudit_core.method, eraudit_core.verifier, eraudit_core.paraphrase, eraudit_core.store and the
helpers below them; never eraudit_core.bundles, present, sensitivity, demo, adapt or the CLI.
"""

from __future__ import annotations

from eraudit_core.runs._checkpoints import (
    register_checkpoint,
)
from eraudit_core.runs._engine import (
    AuditEngine,
    Progress,
)
from eraudit_core.runs._exclusion import (
    derive_without,
    excluded_after_seen,
    selection_note,
)
from eraudit_core.runs._inputs import (
    draw_order,
    inputs_key,
    ordinal,
    rerun_note,
    tool_version,
)
from eraudit_core.runs._items import (
    build_items,
    expected_queries,
)
from eraudit_core.runs._label_mass import (
    run_label_mass,
    run_prompt_hashes,
)
from eraudit_core.runs._launch import (
    launch_audit,
    prepare_model_run,
    resume_audit,
    resume_run,
    run_model_audit,
)
from eraudit_core.runs._record import (
    MAX_LABEL_CHARS,
    MAX_NAME_CHARS,
    default_run_label,
    new_run_id,
)
from eraudit_core.runs._request import (
    FULL_BUDGETS_NOTE,
    EpsilonSource,
    RunRequest,
    check_control,
    epsilon_source,
    request_with_control,
    run_provenance_extras,
    with_control_origin,
)
from eraudit_core.runs._scorer_cache import (
    CachedScorer,
)
from eraudit_core.runs._table_scores import (
    TableVerifier,
    audit_table_run,
    items_from_table,
    read_score_table,
    table_digest,
    table_query,
)

__all__ = [
    "MAX_LABEL_CHARS",
    "MAX_NAME_CHARS",
    "table_query",
    "AuditEngine",
    "CachedScorer",
    "EpsilonSource",
    "FULL_BUDGETS_NOTE",
    "Progress",
    "RunRequest",
    "TableVerifier",
    "audit_table_run",
    "build_items",
    "check_control",
    "default_run_label",
    "derive_without",
    "draw_order",
    "epsilon_source",
    "excluded_after_seen",
    "expected_queries",
    "inputs_key",
    "items_from_table",
    "launch_audit",
    "new_run_id",
    "ordinal",
    "prepare_model_run",
    "read_score_table",
    "register_checkpoint",
    "request_with_control",
    "rerun_note",
    "resume_audit",
    "resume_run",
    "run_label_mass",
    "run_model_audit",
    "run_prompt_hashes",
    "run_provenance_extras",
    "selection_note",
    "table_digest",
    "tool_version",
    "with_control_origin",
]
