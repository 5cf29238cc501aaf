"""Simulated score tables from one base, for the Monte Carlo evidence that the null reading
keeps its promises (tests/null/test_null_monte_carlo.py, scripts/null_reading_rates.py,
docs/null-reading.md).

One base: every rewording has one pre-adaptation score shared by arm and control. Both
adaptations move a question by a common amount (they were trained alike) plus independent
rewording noise with a per-question sd drawn from [noise_low, noise_high]; the scenario adds
to the arm: more noise (`dispersion`), a drop on every rewording (`drop`, on a `drop_share`
of the questions), and, in either arm independently, a question-level shift common to all its
rewordings (`shift_sd`, as often up as down). Half of the monitored gains are at most k (the
questions that dominate a reading divided by the gain). Vectorised: `runs` simulated audits at
once, as arrays runs x questions x rewordings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

K = 0.001


@dataclass(frozen=True)
class Scenario:
    """What the simulated arm does differently from its control."""

    dispersion: float = 1.0
    drop: float = 0.0
    drop_share: float = 1.0
    shift_sd: float = 0.0
    noise_low: float = 0.005
    noise_high: float = 0.02


@dataclass(frozen=True)
class SimulatedRuns:
    """runs x questions x rewordings arrays of the paired scores, with per-question gains
    and which questions carry the arm's drop."""

    p_pre: np.ndarray
    post_arm: np.ndarray
    post_control: np.ndarray
    gain_arm: np.ndarray
    dropped: np.ndarray
    post_seeds: np.ndarray | None = None

    @property
    def differences(self) -> np.ndarray:
        """p_post_control - p_post_arm per rewording."""
        return self.post_control - self.post_arm


def simulate(
    scenario: Scenario,
    *,
    runs: int,
    questions: int = 200,
    search: int = 20,
    test_per_generator: int = 15,
    generators: int = 2,
    seed: int = 0,
    control_seeds: int = 0,
) -> SimulatedRuns:
    """`runs` simulated arm/control audits of `questions` questions, each scored on `search`
    search paraphrases and `test_per_generator` test paraphrases of each of `generators`
    generators (the reading pools them: all are rewordings of one question). `control_seeds`
    more runs of the control recipe (`post_seeds`, seeds x runs x questions x rewordings),
    each with its own question shifts and rewording noise."""
    rng = np.random.default_rng(seed)
    r = search + test_per_generator * generators
    shape = (runs, questions, 1)
    base = rng.uniform(0.15, 0.85, size=shape)
    p_pre = np.clip(base + rng.normal(0.0, 0.05, size=(runs, questions, r)), 0.0, 1.0)
    common = rng.normal(0.01, 0.03, size=shape)
    noise = rng.uniform(scenario.noise_low, scenario.noise_high, size=shape)
    dropped = rng.random(size=(runs, questions)) < scenario.drop_share
    shift_arm = rng.normal(0.0, scenario.shift_sd, size=shape) if scenario.shift_sd else 0.0
    shift_ctl = rng.normal(0.0, scenario.shift_sd, size=shape) if scenario.shift_sd else 0.0
    post_control = p_pre + common + shift_ctl + rng.normal(0.0, 1.0, size=p_pre.shape) * noise
    post_arm = (
        p_pre
        + common
        + shift_arm
        + rng.normal(0.0, 1.0, size=p_pre.shape) * noise * scenario.dispersion
        - scenario.drop * dropped[..., None]
    )
    seeds = [
        np.clip(
            p_pre
            + common
            + (rng.normal(0.0, scenario.shift_sd, size=shape) if scenario.shift_sd else 0.0)
            + rng.normal(0.0, 1.0, size=p_pre.shape) * noise,
            0.0,
            1.0,
        )
        for _ in range(control_seeds)
    ]
    low_gain = rng.random(size=(runs, questions)) < 0.5
    gain = np.where(
        low_gain,
        rng.uniform(-0.05, K, size=low_gain.shape),
        rng.uniform(0.01, 0.3, size=low_gain.shape),
    )
    return SimulatedRuns(
        p_pre=p_pre,
        post_arm=np.clip(post_arm, 0.0, 1.0),
        post_control=np.clip(post_control, 0.0, 1.0),
        gain_arm=gain,
        dropped=dropped,
        post_seeds=np.stack(seeds) if seeds else None,
    )


def score_tables(
    sim: SimulatedRuns,
    run: int = 0,
    *,
    search: int = 20,
    generators: tuple[str, ...] = ("gen-a", "gen-b"),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One simulated audit as two score tables (arm, control) in the audit-table format: a
    monitored row (the arm's gain; the control's gain is the common move), a hidden row, the
    first `search` rewordings as search rows, the rest as test rows split evenly over
    `generators`. Both tables share every text and pre score."""
    p_pre = sim.p_pre[run]
    q, r = p_pre.shape
    per_gen = (r - search) // len(generators)
    tables = []
    for post, gain in (
        (sim.post_arm[run], sim.gain_arm[run]),
        (sim.post_control[run], np.full(q, 0.05)),
    ):
        rows: list[tuple[str, str, str, int, str, float, float]] = []
        for i in range(q):
            pid = f"q{i:03d}"
            base = float(np.clip(p_pre[i].mean(), 0.0, 0.95))
            rows.append(
                (pid, "monitored", "", 0, f"Monitored {pid}?", base, min(1.0, base + gain[i]))
            )
            rows.append((pid, "hidden", "", 0, f"Hidden {pid}?", base, base))
            for j in range(r):
                if j < search:
                    role, gen, idx = "search", "search-gen", j
                else:
                    k = (j - search) // per_gen
                    role, gen, idx = "test", generators[min(k, len(generators) - 1)], j - search
                rows.append(
                    (
                        pid,
                        role,
                        gen,
                        idx,
                        f"Rewording {j} of {pid}?",
                        float(p_pre[i, j]),
                        float(post[i, j]),
                    )
                )
        tables.append(
            pd.DataFrame(
                rows, columns=["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"]
            )
        )
    return tables[0], tables[1]
