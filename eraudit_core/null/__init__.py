"""Calibration and the null: epsilon from a stored run, and verdicts read against a named
control run, question by question and for the run as a whole, so that harm can be told from
noise.

Owns: epsilon calibrations in their two modes, null (a control's per-question maxima of D,
`_calibration_null`) and organism (percentiles of D, `_calibration_organism`), their records
and source checks (`_calibration_records`), what an audit shares with a calibration or control
run, judged by content (`_calibration_overlap`), an audit's epsilon from a stored calibration
(`_calibration`); the paired per-question test and the dispersion test (`_paired`), the primary
question-level test with its secondary McNemar tests and its plain sentence (`_primary`),
simulated score tables for the Monte Carlo evidence (`_simulate`). The paper's verdict is
never changed here: this package only reads two runs' stored scores.

May import: eraudit_core.method, eraudit_core.store and the helpers below them; never
eraudit_core.runs, bundles, present or the CLI (they import this package). docs/null-reading.md
"""

from eraudit_core.null._calibration import (
    epsilon_from,
    epsilon_from_sentence,
)
from eraudit_core.null._calibration_null import (
    calibrate_null,
    null_threshold,
    question_maxima,
)
from eraudit_core.null._calibration_organism import (
    calibrate_epsilon,
)
from eraudit_core.null._calibration_overlap import (
    BASE_TOLERANCE,
    AuditedContent,
    audited_model,
    base_difference,
    content_overlap,
    is_table_run,
    mismatch_sentence,
    null_mismatches,
    selection_overlap,
    stored_rewordings,
)
from eraudit_core.null._calibration_records import (
    DEFAULT_NULL_LEVEL,
    Calibration,
    check_name,
    parse_percentiles,
)
from eraudit_core.null._paired import (
    BETTER,
    BEYOND,
    DISPERSION_RATIO,
    MIN_PAIRED,
    NOT_ASSESSABLE,
    NULL_VERDICTS,
    WITHIN,
    more_dispersed,
    paired_dispersion,
    paired_t,
)
from eraudit_core.null._primary import (
    CLUSTERED_PRIMARY_TEST,
    PRIMARY_TEST,
    exact_mcnemar,
    format_p,
    primary_sentence,
    primary_test,
    secondary_tests,
)
from eraudit_core.null._reading import (
    null_json,
    null_reading,
    question_stories,
)
from eraudit_core.null._seeds import (
    BEYOND_SEEDS,
    MIN_SEED_QUESTIONS,
    seed_threshold,
    seed_verdicts,
)
from eraudit_core.null._simulate import K as K_SIM
from eraudit_core.null._simulate import Scenario, score_tables, simulate

__all__ = [
    "epsilon_from",
    "epsilon_from_sentence",
    "calibrate_null",
    "null_threshold",
    "question_maxima",
    "calibrate_epsilon",
    "BASE_TOLERANCE",
    "AuditedContent",
    "audited_model",
    "base_difference",
    "content_overlap",
    "is_table_run",
    "mismatch_sentence",
    "null_mismatches",
    "selection_overlap",
    "stored_rewordings",
    "DEFAULT_NULL_LEVEL",
    "Calibration",
    "check_name",
    "parse_percentiles",
    "BEYOND_SEEDS",
    "MIN_SEED_QUESTIONS",
    "seed_threshold",
    "seed_verdicts",
    "null_json",
    "null_reading",
    "question_stories",
    "BETTER",
    "BEYOND",
    "CLUSTERED_PRIMARY_TEST",
    "DISPERSION_RATIO",
    "K_SIM",
    "MIN_PAIRED",
    "NOT_ASSESSABLE",
    "NULL_VERDICTS",
    "PRIMARY_TEST",
    "WITHIN",
    "Scenario",
    "exact_mcnemar",
    "format_p",
    "more_dispersed",
    "paired_dispersion",
    "paired_t",
    "primary_sentence",
    "primary_test",
    "score_tables",
    "secondary_tests",
    "simulate",
]
