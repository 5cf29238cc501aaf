"""Seed-to-seed variation as the question-level null (`eraudit_core.null._seeds`): with a
second run of the control recipe, a question is read against the two controls' disagreement.
Seeded Monte Carlo on simulated tables where every adaptation shifts each question by its own
random amount (sd 0.03), and the CLI on simulated score tables."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from eraudit_core import cli
from eraudit_core.null import (
    BEYOND,
    BEYOND_SEEDS,
    MIN_SEED_QUESTIONS,
    Scenario,
    paired_t,
    score_tables,
    seed_threshold,
    seed_verdicts,
    simulate,
)


def _rates(scenario: Scenario, seed: int, runs: int = 10) -> tuple[float, float, np.ndarray]:
    sim = simulate(scenario, runs=runs, seed=seed, control_seeds=1)
    assert sim.post_seeds is not None
    m = sim.differences.mean(axis=-1)
    e = (sim.post_control - sim.post_seeds[0]).mean(axis=-1)
    beyond = np.stack(
        [
            np.array(list(seed_verdicts(dict(enumerate(m[j])), e[j], 0.95)["verdicts"].values()))
            == BEYOND_SEEDS
            for j in range(runs)
        ]
    )
    rewording = paired_t(sim.differences.reshape(-1, sim.differences.shape[-1])).verdict
    return float(beyond.mean()), float(np.mean(rewording == BEYOND)), beyond


def test_seed_null_holds_its_level_under_random_question_shifts_where_one_control_cannot():
    seeds_rate, rewording_rate, _ = _rates(Scenario(shift_sd=0.03), seed=31)
    assert seeds_rate <= 0.075  # 5% expected
    assert rewording_rate > 0.2  # one control reads those shifts as differences


def test_seed_null_still_finds_a_large_drop():
    sim = simulate(
        Scenario(shift_sd=0.03, drop=0.15, drop_share=0.3), runs=10, seed=32, control_seeds=1
    )
    assert sim.post_seeds is not None
    m, e = sim.differences.mean(axis=-1), (sim.post_control - sim.post_seeds[0]).mean(axis=-1)
    hit = np.stack([m[j] > seed_threshold(e[j], 0.95) for j in range(10)])
    assert hit[sim.dropped].mean() >= 0.85
    assert hit[~sim.dropped].mean() <= 0.075


def test_too_few_seed_questions_give_no_seed_verdict():
    got = seed_verdicts({"a": 0.5}, np.zeros(MIN_SEED_QUESTIONS - 1), 0.95)
    assert got["threshold"] is None and got["verdicts"] == {}


def test_cli_control_seed_is_recorded_and_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    sim = simulate(
        Scenario(shift_sd=0.03), runs=1, questions=MIN_SEED_QUESTIONS + 5, seed=33, control_seeds=1
    )
    assert sim.post_seeds is not None
    arm, control = score_tables(sim)
    seeded = type(sim)(sim.p_pre, sim.post_seeds[0], sim.post_control, sim.gain_arm, sim.dropped)
    seed_table, _ = score_tables(seeded)
    db = str(tmp_path / "s.duckdb")
    common = ["--search-budget", "20", "--budget", "15", "--db", db, "--json"]
    ids = {}
    for name, table in (("control", control), ("seed", seed_table)):
        path = tmp_path / f"{name}.csv"
        table.to_csv(path, index=False)
        assert cli.main(["audit-table", str(path), *common]) == 0
        ids[name] = json.loads(capsys.readouterr().out)["run_id"]
    path = tmp_path / "arm.csv"
    arm.to_csv(path, index=False)
    argv = ["audit-table", str(path), *common, "--control", ids["control"]]
    assert cli.main([*argv, "--control-seed", ids["seed"]]) == 0
    out = json.loads(capsys.readouterr().out)
    seed_null = out["null"]["seed_null"]
    assert seed_null["runs"] == [ids["seed"]] and seed_null["threshold"] > 0
    assert ids["seed"] in out["null"]["covers"]
    assert all("seed_verdict" in p["null_detail"] for p in out["pairs"])
    # show reads against the seeds the run recorded; a seed without a control is refused
    shown = cli.main(["show", out["run_id"], "--db", db, "--json"])
    assert shown == 0 and json.loads(capsys.readouterr().out)["null"]["seed_null"] is not None
    assert cli.main(["audit-table", str(path), *common, "--control-seed", ids["seed"]]) == 2
