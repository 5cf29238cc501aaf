"""Measure the null reading's rates on simulated score tables, each with its Clopper-Pearson
95% interval: the numbers docs/null-reading.md states. The same simulations as
tests/null/test_null_monte_carlo.py, with more simulated audits.

    .venv/bin/python scripts/null_reading_rates.py            # about a minute
    .venv/bin/python scripts/null_reading_rates.py --runs 40 --primary-runs 1000
"""

from __future__ import annotations

import argparse

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from eraudit_core.null import (
    BEYOND,
    K_SIM,
    Scenario,
    more_dispersed,
    null_threshold,
    paired_dispersion,
    paired_t,
    primary_test,
    seed_threshold,
    simulate,
)


def rate(hits: np.ndarray) -> str:
    n, k = int(hits.size), int(hits.sum())
    low, high = proportion_confint(k, n, alpha=0.05, method="beta")
    return f"{k / n:.1%} ({k} of {n}; 95% CI {low:.1%} to {high:.1%})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=40, help="simulated audits per scenario")
    ap.add_argument("--primary-runs", type=int, default=1000, help="simulated audits, primary")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    print("200 questions, 20 search + 15 test paraphrases per generator, 2 generators, 0.95")
    scenarios = {
        "exchangeable": Scenario(),
        "1.25x dispersed": Scenario(dispersion=1.25),
        "1.5x dispersed": Scenario(dispersion=1.5),
        "2x dispersed": Scenario(dispersion=2.0),
        "drop 0.015 everywhere": Scenario(drop=0.015),
        "drop 0.03 everywhere": Scenario(drop=0.03),
        "drop 0.05 on 30%": Scenario(drop=0.05, drop_share=0.3),
    }
    rng = np.random.default_rng(args.seed)
    for i, (name, scenario) in enumerate(scenarios.items()):
        sim = simulate(scenario, runs=args.runs, seed=args.seed + i)
        d = sim.differences
        r = d.shape[-1]
        verdict = paired_t(d.reshape(-1, r)).verdict.reshape(d.shape[:2])
        beyond = verdict == BEYOND
        low_gain = sim.gain_arm <= K_SIM
        print(f"\n{name}")
        if scenario.drop_share < 1:
            print(f"  beyond control, dropped questions:  {rate(beyond[sim.dropped])}")
            print(f"  beyond control, other questions:    {rate(beyond[~sim.dropped])}")
        else:
            print(f"  beyond control:                     {rate(beyond)}")
            print(f"  beyond control where gain <= k:     {rate(beyond[low_gain])}")
        ratio, p = paired_dispersion(
            (sim.post_arm - sim.p_pre).reshape(-1, r),
            (sim.post_control - sim.p_pre).reshape(-1, r),
        )
        print(f"  said to move scores more:           {rate(more_dispersed(ratio, p))}")
        # the calibrated threshold of D (calibrate-epsilon --null, firm) on the same tables
        gain_c = np.where(
            rng.random(sim.gain_arm.shape) < 0.5,
            rng.uniform(-0.05, K_SIM, sim.gain_arm.shape),
            rng.uniform(0.01, 0.3, sim.gain_arm.shape),
        )
        d_arm = ((sim.p_pre - sim.post_arm) / np.maximum(K_SIM, sim.gain_arm)[..., None]).max(-1)
        d_ctl = ((sim.p_pre - sim.post_control) / np.maximum(K_SIM, gain_c)[..., None]).max(-1)
        over = np.stack(
            [d_arm[j] > null_threshold(d_ctl[j], 0.95, firm=True) for j in range(args.runs)]
        )
        target = over[sim.dropped] if scenario.drop_share < 1 else over
        print(f"  calibrated threshold of D (firm):   {rate(target)}")
        if scenario.drop_share == 1:
            print(f"    where gain <= k:                  {rate(over[low_gain])}")
    for name, scenario in (
        ("primary, question shifts sd 0.03", Scenario(shift_sd=0.03)),
        ("primary, shifts sd 0.03 + drop 0.015", Scenario(shift_sd=0.03, drop=0.015)),
        ("primary, shifts sd 0.03 + drop 0.005", Scenario(shift_sd=0.03, drop=0.005)),
    ):
        sim = simulate(scenario, runs=args.primary_runs, seed=args.seed + 100)
        means = sim.differences.mean(axis=-1)
        hits = np.array([primary_test(m)["p"] < 0.05 for m in means])
        print(f"\n{name}: p < 0.05 in {rate(hits)}")
    for name, scenario in (
        ("seed null, question shifts sd 0.03", Scenario(shift_sd=0.03)),
        (
            "seed null, shifts sd 0.03 + drop 0.15 on 30%",
            Scenario(shift_sd=0.03, drop=0.15, drop_share=0.3),
        ),
    ):
        sim = simulate(scenario, runs=args.runs, seed=args.seed + 200, control_seeds=1)
        assert sim.post_seeds is not None
        m = sim.differences.mean(axis=-1)
        e = (sim.post_control - sim.post_seeds[0]).mean(axis=-1)
        hit = np.stack([m[j] > seed_threshold(e[j], 0.95) for j in range(args.runs)])
        if scenario.drop_share < 1:
            print(f"\n{name}: beyond seed variation, dropped {rate(hit[sim.dropped])}")
            print(f"  others {rate(hit[~sim.dropped])}")
        else:
            print(f"\n{name}: beyond seed variation {rate(hit)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
