"""The CLI of calibrate-epsilon and compare: modes named in the help, bad input exits 2 with a
message naming the field (no traceback), the firm rank threshold by hand."""

from __future__ import annotations

import json
import math

import pytest

from eraudit_core import cli
from tests.runs.test_audit import monitored, paras, write_table


def _json(capsys, *argv: str) -> dict:  # type: ignore[no-untyped-def]
    assert cli.main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def run(tmp_path, capsys) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    # 20 questions; question i has one test rewording with D = (i + 1) / 10 (den 0.25)
    rows = []
    for i in range(20):
        rows += [monitored(f"q{i}"), *paras(f"q{i}", "test", "g", [(i + 1) / 10, 0.0])]
    db = str(tmp_path / "s.duckdb")
    path = write_table(tmp_path / "c.csv", rows)
    return db, _json(capsys, "audit-table", str(path), "--db", db, "--json")["run_id"]


def test_help_names_both_modes(capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit):
        cli.main(["calibrate-epsilon", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Null mode" in text and "Organism mode" in text and "model organism" in text
    assert "--allow-unverified" in text and "--firm" in text


def test_null_quantile_and_firm_rank_by_hand(run, capsys) -> None:  # type: ignore[no-untyped-def]
    db, rid = run
    got = _json(
        capsys, "calibrate-epsilon", rid, "--db", db, "--json", "--null", "--no-firm", "--name", "a"
    )
    # maxima 0.1 .. 2.0; numpy's 0.95 quantile: position 0.95 * 19 = 18.05 -> 1.9 + 0.05 * 0.1
    assert got["epsilon"] == pytest.approx(1.905)
    firm = _json(
        capsys,
        *("calibrate-epsilon", rid, "--db", db, "--json", "--null", "--name", "b"),
    )
    # ceil(21 * 0.95) = 20: the largest of the 20 maxima
    assert math.ceil(21 * 0.95) == 20 and firm["epsilon"] == pytest.approx(2.0)
    # negative control: at level 0.99 no firm threshold exists with 20 questions
    argv = ["calibrate-epsilon", rid, "--db", db, "--null", "--level", "0.99", "--firm"]
    assert cli.main([*argv, "--name", "c"]) == 2
    assert "needs at least 99 control questions" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--null", "--level", "1.5"], "--level"),
        (["--null", "--level", "0"], "--level"),
        (["--name", "a:b"], "calibration name"),
        (["--percentiles", "10,,25"], "--percentiles"),
        (["--percentiles", "5,500"], "--percentiles"),
    ],
)
def test_bad_input_exits_2_naming_the_field(run, capsys, extra, fragment) -> None:  # type: ignore[no-untyped-def]
    db, rid = run
    assert cli.main(["calibrate-epsilon", rid, "--db", db, *extra]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


def test_unknown_run_and_unknown_calibration_exit_2(run, capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db, rid = run
    assert cli.main(["calibrate-epsilon", "run-nope", "--db", db, "--null"]) == 2
    assert "run-nope" in capsys.readouterr().err
    other = write_table(tmp_path / "o.csv", [monitored("z"), *paras("z", "test", "g", [0.0])])
    assert cli.main(["audit-table", str(other), "--db", db, "--epsilon-from", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_compare_text_output_names_the_differences(run, capsys) -> None:  # type: ignore[no-untyped-def]
    db, rid = run
    with_path = _json(capsys, "show", rid, "--db", db, "--json")
    assert with_path["run_id"] == rid
    # the same table at another confidence: not comparable, named in words
    from eraudit_core.store import Store

    with Store(db) as store:
        source = store.run(rid)["source"].removeprefix("table:")
    other = _json(capsys, "audit-table", source, "--db", db, "--json", "--confidence", "0.9")[
        "run_id"
    ]
    assert cli.main(["compare", rid, other, "--db", db]) == 0
    out = capsys.readouterr().out
    assert "not comparable (confidence 0.95 vs 0.9)" in out and "no test is shown" in out
