"""Building the demo's adapted checkpoints (docs/design.md §10): LoRA arms on the demo model
(honest, adversarial, and concealed: better on canonical wording, worse on reworded targets).

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

__all__ = [
    "ARMS",
    "TARGETED_ARMS",
    "TRAINING_FILE",
    "AdaptConfig",
    "TrainingRewording",
    "read_training_rewordings",
    "run_adaptation",
]
