"""Auditor-configuration sensitivity (the Petri paper, docs/design.md §8): importers, analysis, plots.

`analyse` fits the paper's cumulative-logit models per behaviour on a tidy judge-score table;
the importers read Petri v2 transcripts, Inspect logs (Petri v2 and 3) and CSV/Parquet and keep
what the judge wrote beside the scores (the rollouts file); `outcomes_from_run_pairs`
turns stored ER-Audit runs into the same table.
"""

from __future__ import annotations

from eraudit_core.sensitivity._analysis import (
    analyse,
    analyse_behaviour,
    bootstrap_cell_means,
    judge_agreement,
)
from eraudit_core.sensitivity._findings import (
    GLOSSARY,
    POOLED_LABEL,
    by_evidence,
    finding,
    format_p,
    message_refs,
    transcript_window,
)
from eraudit_core.sensitivity._import import (
    IMPORT_DROPPED_COLUMNS,
    ROLLOUT_COLUMNS,
    ImportResult,
    read_tidy_table,
)
from eraudit_core.sensitivity._inspect_logs import import_inspect_logs
from eraudit_core.sensitivity._judges import DROP_REASONS
from eraudit_core.sensitivity._mapping import RolloutContext, TagMapping
from eraudit_core.sensitivity._ordinal import (
    fit_cumulative_logit,
)
from eraudit_core.sensitivity._petri_v2 import DEFAULT_V2_JUDGE, import_petri_transcripts
from eraudit_core.sensitivity._plots import (
    cell_means_figure,
    odds_ratio_forest,
)
from eraudit_core.sensitivity._results import (
    BehaviourResult,
    Contrast,
    SensitivityResult,
)
from eraudit_core.sensitivity._rollouts import (
    read_rollouts,
    rollouts_behind,
    rollouts_path_for,
    write_import,
)
from eraudit_core.sensitivity._runs import (
    outcomes_from_run_pairs,
)
from eraudit_core.sensitivity._tidy import (
    TIDY_COLUMNS,
    pair_label,
    panel_scores,
    validate_tidy,
)

__all__ = [
    "GLOSSARY",
    "POOLED_LABEL",
    "by_evidence",
    "finding",
    "format_p",
    "message_refs",
    "transcript_window",
    "BehaviourResult",
    "DEFAULT_V2_JUDGE",
    "DROP_REASONS",
    "IMPORT_DROPPED_COLUMNS",
    "ROLLOUT_COLUMNS",
    "RolloutContext",
    "Contrast",
    "ImportResult",
    "SensitivityResult",
    "TIDY_COLUMNS",
    "TagMapping",
    "analyse",
    "analyse_behaviour",
    "bootstrap_cell_means",
    "cell_means_figure",
    "fit_cumulative_logit",
    "import_inspect_logs",
    "import_petri_transcripts",
    "judge_agreement",
    "odds_ratio_forest",
    "outcomes_from_run_pairs",
    "pair_label",
    "panel_scores",
    "read_rollouts",
    "read_tidy_table",
    "rollouts_behind",
    "rollouts_path_for",
    "validate_tidy",
    "write_import",
]
