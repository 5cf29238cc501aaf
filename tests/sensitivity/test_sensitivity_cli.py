"""`eraudit sensitivity` and `eraudit sensitivity-import`: the JSON contract and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from eraudit_core.cli import main
from eraudit_core.sensitivity import TIDY_COLUMNS

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
    assert out["dimensions"] == {
        "reward_hacking": "scenario_realism",
        "sycophancy": "scenario_realism",
    }
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
    err = capsys.readouterr().err
    assert "malformed: 1 rollout(s)" in err and "transcript_bad.json" in err
    assert pd.read_csv(out)["rollout"].nunique() == 12
    assert main(["sensitivity", str(out), "--reference-condition", "none", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)["behaviours"]["reward_hacking"]
    assert res["contrasts"][0]["condition"] == "codebase"


def test_default_dimension_is_not_null(
    small_table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--json` names the dimension also when the default one is used (never null)."""
    argv = ["sensitivity", str(small_table), "--reference-condition", "none", "--json"]
    assert main([*argv, "--bootstrap", "200"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dimension"] == "per-behaviour"
    assert out["dimensions"] == {"reward_hacking": "reward_hacking", "sycophancy": "sycophancy"}


# --------------------------------------------------------------------------------------------
# On the real Petri fixtures (tests/fixtures/petri), in the README's environment
# --------------------------------------------------------------------------------------------

FIX = ROOT / "tests" / "fixtures" / "petri"
ERAUDIT = Path(sys.executable).parent / "eraudit"
P3_MAP = {
    "condition": {
        "lean": {"task_args": {"enable_prefill": False}},
        "rich": {"task_args": {"enable_prefill": True}},
    },
    "behaviour": {"sycophancy": "unprompted_sycophancy", "censorship": "concerning"},
}


def run_eraudit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ERAUDIT), *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def test_done_when_import_inspect_then_analyse(tmp_path: Path) -> None:
    """The issue's done-when sequence, as a user runs it, in the project venv."""
    (tmp_path / "M.json").write_text(json.dumps(P3_MAP))
    logs = str(FIX / "petri3_logs")
    imp = run_eraudit("sensitivity-import", "inspect", logs, "--mapping", "M.json", "-o", "T.csv",
                      cwd=tmp_path)  # fmt: skip
    assert imp.returncode == 0, imp.stderr
    # Drop reasons, counted, with an example file each, on a successful run too.
    assert "imported 7 rollouts (266 scores" in imp.stderr
    for line in ("run_error: 4 rollout(s)", "duplicate: 2 rollout(s), 76 scores",
                 "sample_error: 1 rollout(s)", "judge_invalid_answer: 1 rollout(s)",
                 "judge_refusal: 1 rollout(s)"):  # fmt: skip
        assert line in imp.stderr
    assert imp.stderr.count("e.g. ") == 5
    assert "RuntimeError('scripted auditor failure" in imp.stderr
    assert pd.read_csv(tmp_path / "T.csv").columns.tolist() == list(TIDY_COLUMNS)
    side = tmp_path / "T.rollouts.jsonl"
    assert len(side.read_text().splitlines()) == 7
    res = run_eraudit("sensitivity", "T.csv", "--reference-condition", "lean", "--json",
                      "--bootstrap", "200", cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out["behaviours"]) == {"concerning", "unprompted_sycophancy"}
    assert out["dimension"] == "per-behaviour"
    warnings = "\n".join(out["warnings"])
    # Tiny data: the warnings say so in plain words.
    assert "too few for the tests and odds ratios to be reliable" in warnings
    assert "single judge" in warnings and "has rollouts in one condition only" in warnings
    syc = out["behaviours"]["unprompted_sycophancy"]
    assert syc["lr_interaction"] is None  # one pair modelled: no df=0 test printed
    assert syc["n_modelled"] == 3


def test_import_json_report_and_nothing_imported(tmp_path: Path) -> None:
    (tmp_path / "M.json").write_text(json.dumps(P3_MAP))
    errored = [str(p) for p in sorted((FIX / "petri3_logs" / "errors").glob("*.eval"))][1:]
    r = run_eraudit("sensitivity-import", "inspect", *errored, "--mapping", "M.json",
                    "-o", "E.csv", "--json", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2
    report = json.loads(r.stdout)
    assert report["rollouts"] == 0 and report["table"] is None
    assert [(d["code"], d["rollouts"]) for d in report["dropped"]] == [("run_error", 4)]
    assert report["dropped"][0]["example"].endswith(".eval")
    assert sum("log status is error" in n for n in report["notes"]) == 2
    assert "no rollout could be imported (4 dropped; reasons above)" in r.stderr
    assert "judge refusal or scorer not run" not in r.stderr
    assert not (tmp_path / "E.csv").exists()


def test_scorer_flag_on_petri_v2_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mapping = tmp_path / "M.json"
    mapping.write_text(json.dumps({"condition": {"x": {"directory": "v2_inspect_logs"}},
                                   "behaviour": {"sycophancy": "concerning", "censorship": "concerning"}}))  # fmt: skip
    logs = str(FIX / "v2_inspect_logs")
    out = tmp_path / "T.parquet"
    assert (
        main(["sensitivity-import", "inspect", logs, "--mapping", str(mapping), "-o", str(out)])
        == 0
    )
    err = capsys.readouterr().err
    assert "judges: judge-1, judge-2" in err and "judge_parse_failure: 2 rollout(s)" in err
    assert (tmp_path / "T.rollouts.jsonl").exists()
    argv = ["sensitivity-import", "inspect", logs, "--mapping", str(mapping), "-o", str(out),
            "--scorer", "audit_judge"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "judge_missing: 4 rollout(s)" in err and "scorers: alignment_judge" in err


def test_rollouts_file_round_trip(tmp_path: Path) -> None:
    from eraudit_core.errors import InputError
    from eraudit_core.sensitivity import (
        ROLLOUT_COLUMNS,
        TagMapping,
        import_inspect_logs,
        read_rollouts,
        rollouts_behind,
        write_import,
    )

    result = import_inspect_logs([FIX / "petri3_logs"], TagMapping.from_dict(P3_MAP))
    table_path, side = write_import(result, tmp_path / "T.parquet")
    assert side.name == "T.rollouts.jsonl"
    back = read_rollouts(side)
    assert back.columns.tolist() == list(ROLLOUT_COLUMNS)
    assert back["summary"].tolist() == result.rollouts["summary"].tolist()
    assert back["highlights"].iloc[0] == result.rollouts["highlights"].iloc[0]
    behind = rollouts_behind(pd.read_parquet(table_path), "unprompted_sycophancy",
                             condition="lean", pair="auditor-a -> target-x")  # fmt: skip
    # lean / auditor-a, sycophancy seed: the lean log and the sample-error log (PROVENANCE.md).
    assert sorted(behind["score"]) == [1.0, 2.0]
    assert set(behind["judge_scores"]) == {"judge-j=2", "judge-j=1"}
    (tmp_path / "bad.jsonl").write_text('{"rollout": "r", "judge": "j"}\n{"rollout": 3}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl: line 2, field 'rollout'"):
        read_rollouts(tmp_path / "bad.jsonl")
