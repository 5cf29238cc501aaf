"""The null reading: verdicts read against a named control run, question by question and for
the run as a whole, so that harm can be told from noise.

Owns: the paired per-question test and the dispersion test (`_paired`), the primary
question-level test with its secondary McNemar tests and its plain sentence (`_primary`),
simulated score tables for the Monte Carlo evidence (`_simulate`). The paper's verdict is
never changed here: this package only reads two runs' stored scores.

May import: eraudit_core.audit, eraudit_core.store and the helpers below them; never
eraudit_core.present or the CLI (they import this package). docs/null-reading.md
"""

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
from eraudit_core.null._request import (
    FULL_BUDGETS_NOTE,
    check_control,
    full_budgets,
    request_with_control,
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
    "BETTER_SEEDS",
    "BEYOND_SEEDS",
    "MIN_SEED_QUESTIONS",
    "WITHIN_SEEDS",
    "seed_threshold",
    "seed_verdicts",
    "FULL_BUDGETS_NOTE",
    "check_control",
    "full_budgets",
    "request_with_control",
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
