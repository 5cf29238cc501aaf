"""`eraudit sensitivity` and `eraudit sensitivity-import`: the JSON contract and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from eraudit_core.cli import main

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sensitivity" / "petri_like_rollouts.csv"


@pytest.fixture(scope="module")
def small_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two behaviours of the sample, fewer rollouts: the contract, not the statistics."""
    table = pd.read_csv(SAMPLE)
    # 8 of the 20 rollouts per cell (rollout ids run consecutively within a cell).
    few = table["rollout"].str[1:].astype(int).sub(1).mod(20) < 8
    keep = table["behaviour"].isin(["reward_hacking", "sycophancy"]) & few
    path = tmp_path_factory.mktemp("cli") / "t.parquet"
    table[keep].to_parquet(path, index=False)
    return path


def test_json_contract(small_table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        ["sensitivity", str(small_table), "--reference-condition", "none", "--json",
         "--bootstrap", "200"]
    )  # fmt: skip
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["behaviours"]) == {"reward_hacking", "sycophancy"}
    assert isinstance(out["warnings"], list)
    b = out["behaviours"]["reward_hacking"]
    for key in ("lr_resource", "lr_interaction"):
        assert set(b[key]) == {"stat", "df", "p"}
    assert b["lr_resource"]["df"] == 2 and b["lr_interaction"]["df"] == 6
    assert {c["condition"] for c in b["contrasts"]} == {"codebase", "transcripts"}
    for c in b["contrasts"]:
        assert {"condition", "odds_ratio", "ci_low", "ci_high", "p", "p_holm"} <= set(c)
        assert c["ci_low"] < c["odds_ratio"] < c["ci_high"]
    assert len(b["per_pair"]) == 8 and all("pair" in c for c in b["per_pair"])
    assert len(b["cell_means"]) == 12
    assert set(b["cell_means"][0]) == {"pair", "condition", "n", "mean", "ci_low", "ci_high"}
    assert set(b["agreement"]) >= {"krippendorff_alpha_ordinal", "spearman"}
    assert len(b["agreement"]["spearman"]) == 3


def test_dimension_option(small_table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["sensitivity", str(small_table), "--reference-condition", "none", "--json"]
    assert main([*argv, "--dimension", "scenario_realism", "--bootstrap", "200"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dimension"] == "scenario_realism"
    alpha = out["behaviours"]["sycophancy"]["agreement"]["krippendorff_alpha_ordinal"]
    assert alpha < 0.3  # realism was simulated with no rollout signal


@pytest.mark.parametrize(
    ("argv_tail", "message"),
    [
        (["--reference-condition", "baseline"], "reference condition 'baseline'"),
        (["--reference-condition", "none", "--dimension", "nope"], "dimension 'nope'"),
    ],
)
def test_bad_arguments_exit_2(
    small_table: Path, capsys: pytest.CaptureFixture[str], argv_tail: list[str], message: str
) -> None:
    assert main(["sensitivity", str(small_table), *argv_tail]) == 2
    assert message in capsys.readouterr().err


def test_bad_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("rollout,behaviour,condition,auditor,target,judge,dimension,score\n"
                   "r1,b,none,a,t,j,b,high\n")  # fmt: skip
    assert main(["sensitivity", str(bad), "--reference-condition", "none"]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and "data row 1" in err and "'score'" in err
    assert main(["sensitivity", str(tmp_path / "missing.csv"), "--reference-condition", "x"]) == 2


def test_import_petri_then_analyse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "petri"
    src.mkdir()
    for i in range(12):
        cond = ("res-none", "res-codebase")[i % 2]
        meta = {
            "transcript_id": f"t{i}",
            "auditor_model": "a",
            "target_model": "t",
            "tags": [cond, "rh"],
            "judge_output": {"scores": {"j1/reward_hacking": 1 + i % 5, "j2/reward_hacking": 2}},
        }
        (src / f"transcript_{i}.json").write_text(json.dumps({"metadata": meta}))
    (src / "transcript_bad.json").write_text("{")
    mapping = tmp_path / "map.json"
    mapping.write_text(
        json.dumps(
            {
                "condition": {"res-none": "none", "res-codebase": "codebase"},
                "behaviour": {"rh": "reward_hacking"},
            }
        )
    )
    out = tmp_path / "tidy.csv"
    argv = ["sensitivity-import", "petri", str(src), "--mapping", str(mapping), "-o", str(out)]
    assert main(argv) == 0
    assert "dropped transcript_bad" in capsys.readouterr().err
    assert pd.read_csv(out)["rollout"].nunique() == 12
    assert main(["sensitivity", str(out), "--reference-condition", "none", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)["behaviours"]["reward_hacking"]
    assert res["contrasts"][0]["condition"] == "codebase"
