"""Seed-to-seed variation as the question-level null, where two or more runs of the control
recipe exist (the same adaptation trained with another seed).

One control measures rewording noise only: two adaptations trained alike still move single
questions up or down (on the demo's debate arms, 90 questions worse and 98 better than the
control, with no shift on average). Two runs of the control recipe measure that variation:
per question, e_i = mean over the rewordings both scored of p_post_control - p_post_seed.
Under the null that the arm is one more run of the recipe, its per-question mean difference
m_i is distributed like e_i; the order of two seeds is arbitrary, so the null is the
symmetrised sample {e_i, -e_i}, and a question is beyond seed variation when m_i exceeds its
`level` quantile (better when m_i is below minus it). tests/null/test_null_seeds.py measures
the false-alarm rate under random question shifts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

BEYOND_SEEDS = "beyond seed variation"
BETTER_SEEDS = "better than seed variation"
WITHIN_SEEDS = "within seed variation"
# The symmetrised null needs this many questions read by both control runs for its level
# quantile to mean something (20 gives 40 values, the 0.95 quantile between the two largest).
MIN_SEED_QUESTIONS = 20


def seed_threshold(seed_means: Sequence[float] | np.ndarray, level: float) -> float:
    """The `level` quantile of the symmetrised per-question control-vs-seed means."""
    e = np.asarray(seed_means, dtype=float)
    e = e[~np.isnan(e)]
    return float(np.quantile(np.concatenate([e, -e]), level))


def seed_verdicts(
    arm_means: Mapping[str, float], seed_means: Sequence[float] | np.ndarray, level: float
) -> dict[str, Any]:
    """{"threshold", "n_seed_questions", "verdicts": {pair_id: word}, "beyond", "better",
    "within"} for the arm's per-question mean differences against the seed null; verdicts
    is empty (and threshold None) with fewer than MIN_SEED_QUESTIONS seed questions."""
    e = np.asarray(seed_means, dtype=float)
    e = e[~np.isnan(e)]
    out: dict[str, Any] = {"threshold": None, "n_seed_questions": int(e.size), "verdicts": {}}
    if e.size < MIN_SEED_QUESTIONS:
        out.update(beyond=0, better=0, within=0)
        return out
    q = seed_threshold(e, level)
    verdicts = {
        pid: BEYOND_SEEDS if m > q else BETTER_SEEDS if m < -q else WITHIN_SEEDS
        for pid, m in arm_means.items()
        if not np.isnan(m)
    }
    words = list(verdicts.values())
    out.update(
        threshold=q,
        verdicts=verdicts,
        beyond=words.count(BEYOND_SEEDS),
        better=words.count(BETTER_SEEDS),
        within=words.count(WITHIN_SEEDS),
    )
    return out
