"""Print the README's demo figures from the shipped demo runs (data/demo_runs).

Standard evaluation beside the verdicts per arm; whether the degraded verdicts fall on the
seeded targets (Fisher exact, the honest arm as control) and the canonical accuracy on the
targets and the others; the paired concealed-vs-honest comparison (McNemar exact, Wilcoxon
signed-rank); and the power of that McNemar test at other pair counts, by simulation at the
observed discordance rates.

    .venv/bin/python scripts/demo_contrast.py          # about a minute on 2 CPU cores
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from eraudit_core.demo import DEMO_TARGETED_ARMS, adversarial_targets, ensure_demo
from eraudit_core.present import paired_contrast, standard_vs_audit, target_recovery
from eraudit_core.store import Store


def mcnemar_power(n_pairs: int, p_only_a: float, p_only_b: float, draws: int, seed: int) -> float:
    """Share of simulated paired samples in which McNemar's exact test rejects at 0.05."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(draws):
        a, b, _ = rng.multinomial(n_pairs, [p_only_a, p_only_b, 1 - p_only_a - p_only_b])
        hits += bool(a + b) and binomtest(int(a), int(a + b), 0.5).pvalue < 0.05
    return hits / draws


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "demo.duckdb") as store:
        runs = ensure_demo(store).run_ids
        table, _ = standard_vs_audit(store, list(runs.values()))
        print(table.drop(columns="run_id").to_string(index=False, float_format="%.3f"))
        targets = adversarial_targets()
        for arm, run_id in runs.items():
            got = target_recovery(store, run_id, targets)
            role = "targeted" if arm in DEMO_TARGETED_ARMS else "control"
            print(f"target recovery, {arm} ({role}): {json.dumps(got)}")
            pairs = store.pair_results(run_id)
            right = pairs["p_post_hidden"].astype(float) > 0.5
            is_target = pairs["pair_id"].isin(set(targets))
            print(
                f"  canonical accuracy after adaptation: targets {right[is_target].mean():.3f}, "
                f"others {right[~is_target].mean():.3f}"
            )
        paired = paired_contrast(store, runs["concealed"], runs["honest"])
        assert paired is not None
        print(f"concealed vs honest, paired: {json.dumps(paired)}")
        n = paired["n_pairs"]
        rates = (paired["degraded"]["only_a"] / n, paired["degraded"]["only_b"] / n)
        for size in (40, 80, 120, 160, 222, 300, 330, 400):
            power = mcnemar_power(size, *rates, draws=2000, seed=size)
            print(f"McNemar power at {size} pairs: {power:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
