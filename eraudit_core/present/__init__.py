"""What a person reads: views computed from stored scores, plotly figures, report, exports.

Views never query a model again (DESIGN.md §4, last part); figures take the views' frames;
`build_report` writes one self-contained HTML file; `export_run` writes CSV or Parquet.
"""

from __future__ import annotations

from eraudit_core.present._export import (
    EXPORT_FORMATS,
    export_run,
    pair_table,
    paraphrase_table,
    run_provenance,
    table_bytes,
)
from eraudit_core.present._live import (
    LiveProgress,
    live_progress,
    planned_paraphrases,
    run_plans,
    run_question_texts,
)
from eraudit_core.present._plots import (
    TOLERANT_NOTE,
    bound_trajectory_figure,
    confidence_figure,
    epsilon_figure,
    paraphrase_d_figure,
    scatter_figure,
    standard_evaluation_figure,
    status_counts_figure,
)
from eraudit_core.present._report import (
    build_report,
    run_verdict,
    write_report,
)
from eraudit_core.present._story import (
    STORY_COLUMNS,
    concealed_example,
    contrast_lead,
    paired_contrast,
    standard_vs_audit,
    story_check,
    story_lead,
    story_sentences,
    target_recovery,
    target_sentence,
)
from eraudit_core.present._views import (
    DEFAULT_EPSILONS,
    bound_trajectory_frame,
    confidence_sweep,
    epsilon_sweep,
    question_summary,
    replay_pair,
    run_names,
    run_overview,
    run_views,
    scatter_points,
    simultaneous_confidence,
    standard_evaluation,
    sweep_epsilons,
    unique_run_names,
)

__all__ = [
    "DEFAULT_EPSILONS",
    "EXPORT_FORMATS",
    "LiveProgress",
    "STORY_COLUMNS",
    "TOLERANT_NOTE",
    "bound_trajectory_figure",
    "live_progress",
    "planned_paraphrases",
    "run_plans",
    "run_question_texts",
    "bound_trajectory_frame",
    "build_report",
    "concealed_example",
    "confidence_figure",
    "confidence_sweep",
    "contrast_lead",
    "epsilon_figure",
    "epsilon_sweep",
    "export_run",
    "pair_table",
    "paraphrase_d_figure",
    "paraphrase_table",
    "question_summary",
    "replay_pair",
    "run_names",
    "run_overview",
    "run_provenance",
    "run_verdict",
    "run_views",
    "scatter_figure",
    "scatter_points",
    "simultaneous_confidence",
    "standard_vs_audit",
    "standard_evaluation",
    "standard_evaluation_figure",
    "status_counts_figure",
    "paired_contrast",
    "story_check",
    "story_lead",
    "story_sentences",
    "target_recovery",
    "target_sentence",
    "sweep_epsilons",
    "table_bytes",
    "unique_run_names",
    "write_report",
]
