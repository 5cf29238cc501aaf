"""The ER-Audit engine (DESIGN.md §4): degradation score, bounds, two-stage audit, runs.

`AuditEngine` runs stage 1 (counterexample search) and stage 2 (the sequential test) over
`AuditItem`s and writes every step to the store; `run_model_audit` / `launch_audit` start an
audit of real checkpoints described by a `RunRequest` and `resume_run` resumes one;
`read_score_table` + `TableVerifier` audit precomputed probabilities. The math is importable
on its own: `degradation_score`, `lower_confidence_bound`, `common_bound`, `tv_relaxed_bound`,
`failure_tolerant_lower_bound`.
"""

from __future__ import annotations

from eraudit_core.audit._bounds import (
    CONFIDENCE_LEVELS,
    bound_trajectory,
    common_bound,
    failure_tolerant_lower_bound,
    failure_tolerant_trajectory,
    lower_confidence_bound,
    required_successes,
    tv_relaxed_bound,
)
from eraudit_core.audit._bundle import (
    export_run_bundle,
    import_run_bundle,
    read_bundle,
)
from eraudit_core.audit._bundle_check import bundle_config, replay_pair_verdict
from eraudit_core.audit._calibration import (
    DEFAULT_PERCENTILES,
    Calibration,
    calibrate_epsilon,
    epsilon_from,
    run_d_values,
)
from eraudit_core.audit._config import AuditConfig, AuditItem, Range
from eraudit_core.audit._degradation import (
    DEFAULT_K,
    degradation_denominator,
    degradation_score,
    is_amplified,
    is_counterexample,
    monitored_gain,
    probability_drop,
)
from eraudit_core.audit._engine import (
    AuditEngine,
    CachedScorer,
    Progress,
    ProgressCallback,
    create_run_record,
    default_run_label,
    new_run_id,
)
from eraudit_core.audit._evidence import (
    TABLE_PROMPT_NOTE,
    PairEvidence,
    noise_floor_record,
    pair_evidence,
    prompt_texts,
    run_noise_floor_value,
    why_sentence,
    within_noise,
    word_diff,
    word_diff_text,
)
from eraudit_core.audit._exclusion import (
    derive_without,
    excluded_after_seen,
    selection_note,
)
from eraudit_core.audit._inputs import (
    draw_order,
    inputs_key,
    items_digest,
    ordinal,
    paraphrase_set_digests,
    rerun_note,
    run_test_generators,
    tool_version,
)
from eraudit_core.audit._replay import table_steps, verdict_from_steps
from eraudit_core.audit._request import (
    EpsilonSource,
    RunRequest,
    epsilon_source,
    run_provenance_extras,
)
from eraudit_core.audit._run_label_mass import run_label_mass
from eraudit_core.audit._runs import (
    build_items,
    execute_model_run,
    expected_queries,
    launch_audit,
    pool_warnings,
    prepare_model_run,
    register_checkpoint,
    resume_audit,
    resume_run,
    run_model_audit,
)
from eraudit_core.audit._sequential import GeneratorTest
from eraudit_core.audit._settings import (
    DEMO_PRESET,
    config_field,
    config_fields,
    config_settings,
    field_help,
    field_label,
    field_range,
    setting_text,
    verdict_fields,
)
from eraudit_core.audit._table_runs import audit_table_run
from eraudit_core.audit._table_scores import (
    TableVerifier,
    items_from_table,
    read_score_table,
    table_digest,
)
from eraudit_core.audit._verdict import PAIR_STATUSES, PairVerdict, pair_verdict

__all__ = [
    "DEMO_PRESET",
    "EpsilonSource",
    "Range",
    "RunRequest",
    "config_field",
    "config_fields",
    "config_settings",
    "epsilon_source",
    "field_help",
    "field_label",
    "field_range",
    "run_provenance_extras",
    "setting_text",
    "verdict_fields",
    "Calibration",
    "DEFAULT_PERCENTILES",
    "calibrate_epsilon",
    "epsilon_from",
    "run_d_values",
    "audit_table_run",
    "derive_without",
    "excluded_after_seen",
    "selection_note",
    "PairEvidence",
    "TABLE_PROMPT_NOTE",
    "inputs_key",
    "noise_floor_record",
    "ordinal",
    "pair_evidence",
    "prompt_texts",
    "rerun_note",
    "run_noise_floor_value",
    "why_sentence",
    "within_noise",
    "word_diff",
    "word_diff_text",
    "AuditConfig",
    "AuditEngine",
    "AuditItem",
    "CONFIDENCE_LEVELS",
    "CachedScorer",
    "DEFAULT_K",
    "GeneratorTest",
    "PAIR_STATUSES",
    "PairVerdict",
    "Progress",
    "ProgressCallback",
    "TableVerifier",
    "bound_trajectory",
    "bundle_config",
    "build_items",
    "common_bound",
    "create_run_record",
    "default_run_label",
    "degradation_denominator",
    "degradation_score",
    "draw_order",
    "execute_model_run",
    "expected_queries",
    "export_run_bundle",
    "failure_tolerant_lower_bound",
    "failure_tolerant_trajectory",
    "import_run_bundle",
    "is_amplified",
    "is_counterexample",
    "items_digest",
    "items_from_table",
    "launch_audit",
    "lower_confidence_bound",
    "monitored_gain",
    "new_run_id",
    "pair_verdict",
    "paraphrase_set_digests",
    "probability_drop",
    "pool_warnings",
    "prepare_model_run",
    "read_bundle",
    "read_score_table",
    "register_checkpoint",
    "replay_pair_verdict",
    "required_successes",
    "resume_audit",
    "resume_run",
    "run_label_mass",
    "run_model_audit",
    "run_test_generators",
    "table_digest",
    "table_steps",
    "tool_version",
    "tv_relaxed_bound",
    "verdict_from_steps",
]
