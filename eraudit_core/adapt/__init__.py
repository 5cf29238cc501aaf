"""Building the demo's adapted checkpoints (DESIGN.md §10): LoRA arms on the demo model.

It sits above `verifier` and `paraphrase` because an arm is trained with the verifier's own
prompts and evaluated with its scoring.
"""

from __future__ import annotations

from eraudit_core.adapt._adaptation import (
    ARMS,
    AdaptConfig,
    run_adaptation,
)

__all__ = [
    "ARMS",
    "AdaptConfig",
    "run_adaptation",
]
