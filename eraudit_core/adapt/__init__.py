"""Building the demo's adapted checkpoints (docs/design.md §10): LoRA arms on the demo model
(honest, adversarial, and concealed: better on canonical wording, worse on reworded targets),
and the debate-distilled arms trained on the paper's transcripts (docs/debate-distillation.md),
with the reference objective and the fit gate checked before any audit (docs/fit-gate.md).

It sits above `verifier` and `paraphrase` because an arm is trained with the verifier's own
prompts and evaluated with its scoring.
"""

from __future__ import annotations

from eraudit_core.adapt._adaptation import (
    ARMS,
    TARGETED_ARMS,
    AdaptConfig,
    run_adaptation,
)
from eraudit_core.adapt._concealed import (
    TRAINING_FILE,
    TrainingRewording,
    read_training_rewordings,
)
from eraudit_core.adapt._debate_data import (
    DEBATE_FILES,
    DebateFile,
    DebateRow,
    bundled_debate_file,
    read_debate_file,
)
from eraudit_core.adapt._debate_training import DebateConfig, run_debate_adaptation
from eraudit_core.adapt._fit_run import run_fit_arm
from eraudit_core.adapt._fit_search import search_capacity
from eraudit_core.adapt._fit_training import FitConfig

__all__ = [
    "ARMS",
    "DEBATE_FILES",
    "DebateConfig",
    "DebateFile",
    "DebateRow",
    "FitConfig",
    "TARGETED_ARMS",
    "TRAINING_FILE",
    "AdaptConfig",
    "TrainingRewording",
    "bundled_debate_file",
    "read_debate_file",
    "read_training_rewordings",
    "run_adaptation",
    "run_debate_adaptation",
    "run_fit_arm",
    "search_capacity",
]
