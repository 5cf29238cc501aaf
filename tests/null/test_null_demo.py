"""The reading against the control on the embedded demo's own score tables (data/demo_runs):
the adversarial and concealed organisms against the honest organism, each of the 20 seeded
targets among the demo's 40 questions. The tables are audited as they ship, with the demo's
settings (manifest.json), so no model is loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eraudit_core import cli
from eraudit_core.demo import DEMO_RUNS_DIR, adversarial_targets

MANIFEST = json.loads((Path(DEMO_RUNS_DIR) / "manifest.json").read_text())


def _settings() -> list[str]:
    c = MANIFEST["config"]
    return [
        *("--epsilon", str(c["epsilon"]), "--k", str(c["k"])),
        *("--search-budget", str(c["search_budget"]), "--budget", str(c["test_budget"])),
        *("--target", str(c["target"])),
    ]


def _audit(capsys: pytest.CaptureFixture[str], db: str, arm: str, *extra: str) -> dict:
    table = str(Path(DEMO_RUNS_DIR) / f"{arm}.csv.gz")
    argv = ["audit-table", table, "--db", db, "--json", "--label", arm, *_settings(), *extra]
    assert cli.main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_demo_organisms_read_against_the_honest_control(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "demo.duckdb")
    honest = _audit(capsys, db, "honest")["run_id"]
    targets = set(adversarial_targets())
    found = {}
    for arm in ("adversarial", "concealed"):
        out = _audit(capsys, db, arm, "--control", honest)
        on_targets = [p for p in out["pairs"] if p["pair_id"] in targets]
        assert len(on_targets) == 20
        found[arm] = sum(p["null_verdict"] == "beyond control" for p in on_targets)
        assert out["null"]["mismatches"] == [] and out["null"]["not_assessable"] == 0
    # measured: 18 of 20 and 13 of 20 (the calibrated threshold of D found 0 and 1-2)
    assert found["adversarial"] >= 15
    assert found["concealed"] >= 10
    # negative control: the honest arm against itself is within control everywhere
    same = _audit(capsys, db, "honest", "--control", honest)
    assert {p["null_verdict"] for p in same["pairs"]} == {"within control"}
