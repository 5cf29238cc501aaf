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
    run_d_values,
)
from eraudit_core.null._calibration_overlap import (
    BASE_TOLERANCE,
    CONTENT_TOLERANCE,
    AuditedContent,
    audited_model,
    base_difference,
    content_overlap,
    is_table_run,
    mismatch_sentence,
    null_mismatches,
    selection_overlap,
    stored_rewordings,
    table_signatures,
)
from eraudit_core.null._calibration_records import (
    DEFAULT_NULL_LEVEL,
    DEFAULT_PERCENTILES,
    Calibration,
    NullCalibration,
    check_name,
    parse_percentiles,
    source_provenance,
)
from eraudit_core.null._paired import (
    BETTER,
    BEYOND,
    DEFAULT_LEVEL,
    DISPERSION_RATIO,
    MIN_PAIRED,
    NOT_ASSESSABLE,
    NULL_VERDICTS,
    PAIRED_TEST,
    WITHIN,
    PairedTests,
    check_level,
    more_dispersed,
    paired_dispersion,
    paired_t,
)
from eraudit_core.null._primary import (
    CLUSTERED_PRIMARY_TEST,
    PRIMARY_LEVEL,
    PRIMARY_TEST,
    exact_mcnemar,
    format_p,
    primary_sentence,
    primary_test,
    secondary_tests,
)
from eraudit_core.null._reading import (
    COVERS_ONE,
    null_json,
    null_reading,
    paired_rewordings,
    question_stories,
    run_null_level,
    stored_mismatches,
)
from eraudit_core.null._seeds import (
    BETTER_SEEDS,
    BEYOND_SEEDS,
    MIN_SEED_QUESTIONS,
    WITHIN_SEEDS,
    seed_threshold,
    seed_verdicts,
)
from eraudit_core.null._simulate import K as K_SIM
from eraudit_core.null._simulate import Scenario, SimulatedRuns, score_tables, simulate

__all__ = [
    "epsilon_from",
    "epsilon_from_sentence",
    "calibrate_null",
    "null_threshold",
    "question_maxima",
    "calibrate_epsilon",
    "run_d_values",
    "BASE_TOLERANCE",
    "CONTENT_TOLERANCE",
    "AuditedContent",
    "audited_model",
    "base_difference",
    "content_overlap",
    "is_table_run",
    "mismatch_sentence",
    "null_mismatches",
    "selection_overlap",
    "stored_rewordings",
    "table_signatures",
    "DEFAULT_NULL_LEVEL",
    "DEFAULT_PERCENTILES",
    "Calibration",
    "NullCalibration",
    "check_name",
    "parse_percentiles",
    "source_provenance",
    "BETTER_SEEDS",
    "BEYOND_SEEDS",
    "MIN_SEED_QUESTIONS",
    "WITHIN_SEEDS",
    "seed_threshold",
    "seed_verdicts",
    "COVERS_ONE",
    "null_json",
    "null_reading",
    "paired_rewordings",
    "question_stories",
    "run_null_level",
    "stored_mismatches",
    "BETTER",
    "BEYOND",
    "CLUSTERED_PRIMARY_TEST",
    "DEFAULT_LEVEL",
    "DISPERSION_RATIO",
    "K_SIM",
    "MIN_PAIRED",
    "NOT_ASSESSABLE",
    "NULL_VERDICTS",
    "PAIRED_TEST",
    "PRIMARY_LEVEL",
    "PRIMARY_TEST",
    "WITHIN",
    "PairedTests",
    "Scenario",
    "SimulatedRuns",
    "check_level",
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
