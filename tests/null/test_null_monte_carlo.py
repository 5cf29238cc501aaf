"""Seeded Monte Carlo evidence for every promise of the null reading (issue's "Done when"):
200 questions, 20 search + 15 test paraphrases per generator, two generators, level 0.95, on
simulated score tables from one base (`eraudit_core.null.simulate`). Rates are pooled over
questions of 20 simulated audits (4,000 question-level tests), and over 400 simulated audits
for the primary test. docs/null-reading.md gives each rate with its interval."""

from __future__ import annotations

import numpy as np
import pytest

from eraudit_core.null import (
    BETTER,
    BEYOND,
    K_SIM,
    Scenario,
    more_dispersed,
    paired_dispersion,
    paired_t,
    primary_test,
    simulate,
)

RUNS = 20


def verdicts(scenario: Scenario, seed: int, runs: int = RUNS):
    sim = simulate(scenario, runs=runs, seed=seed)
    d = sim.differences
    v = paired_t(d.reshape(-1, d.shape[-1]), 0.95).verdict.reshape(d.shape[:2])
    return sim, v


def test_exchangeable_arm_reads_beyond_control_at_the_level_also_where_gain_is_at_most_k():
    sim, v = verdicts(Scenario(), seed=11)
    low_gain = sim.gain_arm <= K_SIM
    assert low_gain.mean() == pytest.approx(0.5, abs=0.03)
    assert (v == BEYOND).mean() <= 0.065
    assert (v[low_gain] == BEYOND).mean() <= 0.08
    assert (v == BETTER).mean() <= 0.065  # the mirror image too
    assert (v == BEYOND).mean() >= 0.03  # the test is not simply silent


def test_arm_one_and_a_half_times_as_dispersed_is_not_harm_but_is_named_as_dispersion():
    sim, v = verdicts(Scenario(dispersion=1.5), seed=12)
    assert (v == BEYOND).mean() <= 0.075
    r = sim.p_pre.shape[-1]
    ratio, p = paired_dispersion(
        (sim.post_arm - sim.p_pre).reshape(-1, r), (sim.post_control - sim.p_pre).reshape(-1, r)
    )
    assert more_dispersed(ratio, p).mean() >= 0.5
    sim0 = simulate(Scenario(), runs=RUNS, seed=13)
    ratio0, p0 = paired_dispersion(
        (sim0.post_arm - sim0.p_pre).reshape(-1, r), (sim0.post_control - sim0.p_pre).reshape(-1, r)
    )
    assert more_dispersed(ratio0, p0).mean() <= 0.065


@pytest.mark.parametrize(("drop", "least"), [(0.03, 0.90), (0.015, 0.60)])
def test_systematic_drop_on_every_rewording_is_found(drop: float, least: float):
    _, v = verdicts(Scenario(drop=drop), seed=14)
    assert (v == BEYOND).mean() >= least


def test_drop_on_thirty_percent_of_questions_is_found_there_and_only_there():
    sim, v = verdicts(Scenario(drop=0.05, drop_share=0.3), seed=15)
    assert sim.dropped.mean() == pytest.approx(0.3, abs=0.03)
    assert (v[sim.dropped] == BEYOND).mean() >= 0.85
    assert (v[~sim.dropped] == BEYOND).mean() <= 0.075


def _primary_rejections(scenario: Scenario, seed: int, runs: int = 400) -> float:
    sim = simulate(scenario, runs=runs, seed=seed)
    means = sim.differences.mean(axis=-1)
    return float(np.mean([primary_test(m)["p"] < 0.05 for m in means]))


def test_primary_test_holds_its_level_when_every_question_shifts_at_random_in_both_arms():
    assert _primary_rejections(Scenario(shift_sd=0.03), seed=16) <= 0.075


def test_primary_test_finds_a_systematic_drop_despite_random_question_shifts():
    assert _primary_rejections(Scenario(shift_sd=0.03, drop=0.015), seed=17) >= 0.80


def test_a_question_level_rule_without_the_pairing_would_fail_the_shift_scenario():
    """Negative control: per question, random shifts of sd 0.03 are real differences between
    the two adaptations on that question, so the per-question reading flags many of them; that
    is why the run is judged by the primary test over questions, not by the count."""
    _, v = verdicts(Scenario(shift_sd=0.03), seed=18, runs=5)
    assert (v == BEYOND).mean() > 0.2
