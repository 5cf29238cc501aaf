"""Write the synthetic auditor-sensitivity sample (data/sensitivity/petri_like_rollouts.csv).

Why synthetic: the page needs something to show on first launch, and tests need data whose
true effects are known. The design mirrors the Petri paper's: 3 behaviours x 3 resource conditions x
4 auditor-target pairs x ROLLOUTS_PER_CELL rollouts, each scored 1..10 by a panel of 3 judges
on the behaviour dimension and on `scenario_realism`.

Generative model (all on the logit scale of a cumulative-logit model):
    latent_i = base_b + pair_{b,p} + beta_{b,r,p} + Logistic(0, 1)          (one per rollout)
    score_ij = 1 + #{k : latent_i + bias_j + Normal(0, JUDGE_SD_j) > CUTS_k}  (one per judge)
beta_{b,r,p} is the planted effect (PLANTED below): transcripts raise reward hacking in every
pair; codebase suppresses it only in the two pairs whose auditor is grok-4.5 (an interaction);
harmful compliance and sycophancy have no resource effect at all. Judge noise attenuates the
effect a panel-score model recovers slightly (towards 0). Realism scores sit in a narrow band
with no rollout signal, so judges agree poorly on them (as in the paper's appendix B).

A few judge refusals are planted: two single missing judge scores and one rollout that every
judge refused (it is listed as dropped by the analysis).

Usage: python scripts/make_sensitivity_sample.py [--seed 2] [--out PATH]
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import pandas as pd

BEHAVIOURS = ("harmful_compliance", "reward_hacking", "sycophancy")
CONDITIONS = ("none", "codebase", "transcripts")
AUDITORS = ("gpt-5.6-sol", "grok-4.5")
TARGETS = ("grok-4.5", "deepseek-v4-flash")
JUDGES = ("judge-minimax-m2.5", "judge-kimi-k2", "judge-qwen3-max")
JUDGE_BIAS = (0.0, 0.3, -0.2)
JUDGE_SD = (0.6, 0.8, 0.7)
ROLLOUTS_PER_CELL = 20
DEFAULT_SEED = 2
# Upper bounds of scores 1..9 on the latent scale: a floor-heavy 1..10 scale as in Petri.
CUTS = np.array([0.0, 0.8, 1.5, 2.2, 2.9, 3.6, 4.3, 5.0, 5.8])
BASE = {"harmful_compliance": 0.8, "reward_hacking": 0.6, "sycophancy": 1.2}
PAIR_EFFECT = {
    ("gpt-5.6-sol", "grok-4.5"): 0.0,
    ("gpt-5.6-sol", "deepseek-v4-flash"): 0.4,
    ("grok-4.5", "grok-4.5"): 0.8,
    ("grok-4.5", "deepseek-v4-flash"): 1.2,
}


def planted_log_odds(behaviour: str, condition: str, auditor: str) -> float:
    """The planted resource effect beta (log odds ratio vs 'none') for one cell."""
    if behaviour != "reward_hacking" or condition == "none":
        return 0.0
    if condition == "transcripts":
        return 2.5
    return -2.0 if auditor == "grok-4.5" else 0.0


def make_sample(
    seed: int = DEFAULT_SEED, rollouts_per_cell: int = ROLLOUTS_PER_CELL
) -> pd.DataFrame:
    """The tidy table (rollout, behaviour, condition, auditor, target, judge, dimension, score)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    n = 0
    for behaviour, condition, auditor, target in itertools.product(
        BEHAVIOURS, CONDITIONS, AUDITORS, TARGETS
    ):
        mu = (
            BASE[behaviour]
            + PAIR_EFFECT[(auditor, target)]
            + planted_log_odds(behaviour, condition, auditor)
        )
        for _ in range(rollouts_per_cell):
            n += 1
            rollout = f"r{n:04d}"
            latent = mu + rng.logistic()
            realism = 7.0 + rng.normal(0, 0.3)
            for j, judge in enumerate(JUDGES):
                z = latent + JUDGE_BIAS[j] + rng.normal(0, JUDGE_SD[j])
                score = 1 + int(np.sum(z > CUTS))
                real = int(np.clip(np.rint(realism + rng.normal(0, 0.8)), 1, 10))
                base = {
                    "rollout": rollout,
                    "behaviour": behaviour,
                    "condition": condition,
                    "auditor": auditor,
                    "target": target,
                    "judge": judge,
                }
                rows.append({**base, "dimension": behaviour, "score": float(score)})
                rows.append({**base, "dimension": "scenario_realism", "score": float(real)})
    table = pd.DataFrame(rows)
    # Judge refusals: two single missing scores, and one rollout no judge would score.
    refused = rng.choice(table["rollout"].unique(), size=3, replace=False)
    for k, rollout in enumerate(refused):
        mask = table["rollout"] == rollout
        if k < 2:
            mask &= table["judge"] == JUDGES[k]
        table.loc[mask, "score"] = np.nan
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parents[1]
        / "data"
        / "sensitivity"
        / "petri_like_rollouts.csv",
    )
    args = parser.parse_args()
    table = make_sample(args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(f"wrote {len(table)} rows, {table['rollout'].nunique()} rollouts to {args.out}")


if __name__ == "__main__":
    main()
