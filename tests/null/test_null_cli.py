"""`--control` on audit-table and show: each pair's null verdict and detail, the run's null
object, and the refusal of a control that does not stand on the audit's base, generators,
budgets or k. Simulated score tables from one base (`eraudit_core.null.score_tables`)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from eraudit_core import cli
from eraudit_core.errors import InputError
from eraudit_core.null import (
    NULL_VERDICTS,
    AuditedContent,
    Scenario,
    content_overlap,
    epsilon_from,
    score_tables,
    simulate,
)
from eraudit_core.present import build_report, escape, null_headline
from eraudit_core.store import Store

N = 30
COMMON = ["--search-budget", "20", "--budget", "15", "--k", "0.001", "--epsilon", "0.5"]


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert cli.main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("null")
    sim = simulate(Scenario(drop=0.05, drop_share=0.3), runs=1, questions=N, seed=5)
    arm, control = score_tables(sim)
    paths = {"arm": tmp / "arm.csv", "control": tmp / "control.csv"}
    arm.to_csv(paths["arm"], index=False)
    control.to_csv(paths["control"], index=False)
    paths["db"] = tmp / "s.duckdb"
    paths["dropped"] = [f"q{i:03d}" for i in range(N) if sim.dropped[0, i]]  # type: ignore[assignment]
    return paths


def _control(tables: dict, capsys: pytest.CaptureFixture[str]) -> str:
    with Store(tables["db"]) as store:
        runs = store.runs()
    if not runs.empty and (runs["label"] == "control").any():
        return str(runs.loc[runs["label"] == "control", "run_id"].iloc[0])
    out = _json(
        capsys,
        "audit-table",
        str(tables["control"]),
        "--db",
        str(tables["db"]),
        "--json",
        "--label",
        "control",
        *COMMON,
    )
    return str(out["run_id"])


def test_audit_table_with_a_control_gives_every_pair_a_null_verdict_and_the_run_a_reading(
    tables: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    ctl = _control(tables, capsys)
    out = _json(
        capsys,
        "audit-table",
        str(tables["arm"]),
        "--db",
        str(tables["db"]),
        "--json",
        "--control",
        ctl,
        *COMMON,
    )
    null = out["null"]
    assert {"control", "level", "beyond", "better", "within", "not_assessable", "primary"} <= set(
        null
    )
    assert null["control"] == ctl and null["level"] == 0.95
    assert {"test", "p", "interval"} <= set(null["primary"])
    assert null["beyond"] + null["better"] + null["within"] + null["not_assessable"] == N
    for pair in out["pairs"]:
        assert pair["null_verdict"] in NULL_VERDICTS
        detail = pair["null_detail"]
        assert detail["n_paired"] == 50 and len(detail["interval"]) == 2
        assert 0.0 <= detail["p_beyond"] <= 1.0 and "gain" in detail and "gain_control" in detail
    dropped = set(tables["dropped"])
    beyond = {p["pair_id"] for p in out["pairs"] if p["null_verdict"] == "beyond control"}
    assert dropped and dropped <= beyond  # a 0.05 drop is found on every question that has it
    assert len(beyond - dropped) <= 3  # and rarely elsewhere (5% of 21 questions expected)
    shown = _json(capsys, "show", out["run_id"], "--db", str(tables["db"]), "--json")
    assert shown["null"]["beyond"] == null["beyond"]
    assert [p["null_verdict"] for p in shown["pairs"]] == [p["null_verdict"] for p in out["pairs"]]
    # the headline leads with the reading; the report carries it and the words beside it
    with Store(tables["db"]) as store:
        headline = null_headline(store, out["run_id"])
        html = build_report(store, [out["run_id"]])
    assert headline is not None and f"{null['beyond']} worse than the control" in headline
    assert str(escape(headline)) in html and "Holm-adjusted" in html
    # the control itself names no control: its pairs carry no reading
    own = _json(capsys, "show", ctl, "--db", str(tables["db"]), "--json")
    assert own["null"] is None and own["pairs"][0]["null_verdict"] is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ("base", "base"),
        ("generator", "test_generators"),
        ("budget", "test_budget"),
        ("k", "k"),
        ("paraphrase", "paraphrases"),
    ],
)
def test_a_control_that_does_not_match_the_audit_exits_2_naming_the_difference(
    tables: dict, capsys: pytest.CaptureFixture[str], tmp_path: Path, change: str, field: str
) -> None:
    ctl = _control(tables, capsys)
    arm = pd.read_csv(tables["arm"], keep_default_na=False)
    options = list(COMMON)
    if change == "base":
        arm["p_pre"] = (arm["p_pre"] * 0.98).round(9)
    elif change == "generator":
        arm.loc[arm["generator"] == "gen-b", "generator"] = "gen-c"
    elif change == "budget":
        options[options.index("--budget") + 1] = "10"
    elif change == "k":
        options[options.index("--k") + 1] = "0.01"
    else:
        first = arm.index[arm["role"] == "test"][0]
        arm.loc[first, "text"] = "A rewording the control never scored?"
    path = tmp_path / "changed.csv"
    arm.to_csv(path, index=False)
    argv = ["audit-table", str(path), "--db", str(tables["db"]), "--control", ctl, *options]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"{field}:" in err and ctl in err


def test_compare_names_the_base_and_the_generator_set(
    tables: dict, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ctl = _control(tables, capsys)
    arm = pd.read_csv(tables["arm"], keep_default_na=False)
    arm["p_pre"] = (arm["p_pre"] * 0.98).round(9)
    arm.loc[arm["generator"] == "gen-b", "generator"] = "gen-c"
    path = tmp_path / "other-base.csv"
    arm.to_csv(path, index=False)
    other = _json(capsys, "audit-table", str(path), "--db", str(tables["db"]), "--json", *COMMON)
    got = _json(capsys, "compare", other["run_id"], ctl, "--db", str(tables["db"]), "--json")
    fields = [d["field"] for d in got["differences"]]
    assert got["comparable"] is False and "base" in fields and "generators" in fields
    # negative control: the arm on the same base and generators is comparable
    same = _json(
        capsys, "audit-table", str(tables["arm"]), "--db", str(tables["db"]), "--json", *COMMON
    )
    assert _json(capsys, "compare", same["run_id"], ctl, "--db", str(tables["db"]), "--json")[
        "comparable"
    ]


def test_the_selection_guard_is_not_slipped_by_a_tiny_change_or_a_dropped_row(
    tables: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    ctl = _control(tables, capsys)
    assert (
        cli.main(
            [
                "calibrate-epsilon",
                ctl,
                "--db",
                str(tables["db"]),
                "--null",
                "--name",
                "sel",
                "--force",
            ]
        )
        == 0
    )
    capsys.readouterr()
    same = pd.read_csv(tables["control"], keep_default_na=False)
    nudged = same.assign(p_post=same["p_post"] + 1e-12)
    dropped = same.drop(index=same.index[same["role"] == "test"][0])
    settings = {"k": 0.001, "search_budget": 20, "test_budget": 15}
    with Store(tables["db"]) as store:
        for table in (nudged, dropped):
            assert content_overlap(table, store.table_rows(ctl)) == N
            with pytest.raises(InputError, match="selection"):
                epsilon_from(
                    store, "sel", AuditedContent(table=table, settings=settings), settings=settings
                )
        # negative control: another arm on the same questions is not the calibration's content
        arm = pd.read_csv(tables["arm"], keep_default_na=False)
        assert content_overlap(arm, store.table_rows(ctl)) == 0


def test_a_null_calibration_made_with_other_generators_is_refused(
    tables: dict, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ctl = _control(tables, capsys)
    db = str(tables["db"])
    assert (
        cli.main(["calibrate-epsilon", ctl, "--db", db, "--null", "--name", "gen", "--force"]) == 0
    )
    capsys.readouterr()
    arm = pd.read_csv(tables["arm"], keep_default_na=False)
    arm.loc[arm["generator"] == "gen-b", "generator"] = "gen-c"
    path = tmp_path / "three.csv"
    arm.to_csv(path, index=False)
    common = [c for c in COMMON if c != "--epsilon" and c != "0.5"]
    assert cli.main(["audit-table", str(path), "--db", db, "--epsilon-from", "gen", *common]) == 2
    assert "test_generators:" in capsys.readouterr().err
