"""The ER-Audit method (docs/design.md §4, docs/math.md): what a verdict is and how it is reached.

Owns: the degradation score and the counterexample rule (`_degradation`), the lower confidence
bounds (`_bounds`), the audit settings declared once (`_setting_spec`, `AuditConfig` in
`_config`, presets and readers in `_settings`), the typed stored run (`RunRecord`), the one
state machine a question moves through, search -> test -> stop -> verdict (`PairAudit` in
`_pair_audit`), the verdict re-derived from stored steps (`_replay`), and the pure readings of a
verdict's evidence and of whether the adaptation took (`_evidence`, `_manipulation`).

May import: eraudit_core.verifier (the label-mass floor), eraudit_core.types and
eraudit_core.errors; never the store, runs, bundles, the null reading or anything above them.
Everything here is pure: scores and settings in, numbers and verdicts out.
"""

from __future__ import annotations

from eraudit_core.method._bounds import (
    CONFIDENCE_LEVELS,
    bound_trajectory,
    common_bound,
    failure_tolerant_lower_bound,
    failure_tolerant_trajectory,
    lower_confidence_bound,
    required_successes,
    tv_relaxed_bound,
)
from eraudit_core.method._config import (
    AuditConfig,
    AuditItem,
)
from eraudit_core.method._degradation import (
    DEFAULT_K,
    degradation_denominator,
    degradation_score,
    is_amplified,
    is_counterexample,
    monitored_gain,
    probability_drop,
)
from eraudit_core.method._evidence import (
    TABLE_PROMPT_NOTE,
    noise_floor_record,
    pair_evidence,
    prompt_texts,
    run_noise_floor_value,
    why_sentence,
    within_noise,
    word_diff,
    word_diff_text,
)
from eraudit_core.method._manipulation import (
    ManipulationCheck,
    manipulation_check,
    manipulation_json,
    run_manipulation,
)
from eraudit_core.method._pair_audit import (
    GeneratorStop,
    GeneratorTest,
    PairAudit,
    PairState,
    PairVerdict,
    pair_verdict,
)
from eraudit_core.method._replay import (
    table_steps,
    verdict_from_steps,
)
from eraudit_core.method._setting_spec import (
    Cli,
    Kind,
    Range,
    Section,
    Setting,
    setting,
)
from eraudit_core.method._settings import (
    DEMO,
    DEMO_PRESET,
    PRESETS,
    Override,
    Preset,
    cli_fields,
    comparison_fields,
    config_settings,
    control_fields,
    field_help,
    field_label,
    form_fields,
    make_config,
    null_threshold_fields,
    setting_named,
    settings,
    stored_setting,
    valid_text,
    verdict_fields,
)
from eraudit_core.method._stored_run import (
    RunRecord,
)

__all__ = [
    "AuditConfig",
    "AuditItem",
    "CONFIDENCE_LEVELS",
    "Cli",
    "DEFAULT_K",
    "DEMO",
    "DEMO_PRESET",
    "GeneratorStop",
    "GeneratorTest",
    "Kind",
    "ManipulationCheck",
    "Override",
    "PRESETS",
    "PairAudit",
    "PairState",
    "PairVerdict",
    "Preset",
    "Range",
    "RunRecord",
    "Section",
    "Setting",
    "TABLE_PROMPT_NOTE",
    "bound_trajectory",
    "cli_fields",
    "common_bound",
    "comparison_fields",
    "config_settings",
    "control_fields",
    "degradation_denominator",
    "degradation_score",
    "failure_tolerant_lower_bound",
    "failure_tolerant_trajectory",
    "field_help",
    "field_label",
    "form_fields",
    "is_amplified",
    "is_counterexample",
    "lower_confidence_bound",
    "make_config",
    "manipulation_check",
    "manipulation_json",
    "monitored_gain",
    "noise_floor_record",
    "null_threshold_fields",
    "pair_evidence",
    "pair_verdict",
    "probability_drop",
    "prompt_texts",
    "required_successes",
    "run_manipulation",
    "run_noise_floor_value",
    "setting",
    "setting_named",
    "settings",
    "stored_setting",
    "table_steps",
    "tv_relaxed_bound",
    "valid_text",
    "verdict_fields",
    "verdict_from_steps",
    "why_sentence",
    "within_noise",
    "word_diff",
    "word_diff_text",
]
