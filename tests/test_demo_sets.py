"""The demo's run sets: the debate-distilled pair leads, each arm is read against its own
set's control, and a build stopped part-way is never shown as a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eraudit_core import demo
from eraudit_core.errors import InputError
from eraudit_core.store import Store


def test_the_debate_pair_is_listed_last_so_the_lead_rule_picks_it() -> None:
    assert demo.DEMO_ARMS[-1] == "debate-adversarial"
    assert demo.run_set_of("debate-adversarial").control == "debate-honest"
    assert demo.run_set_of("concealed").control == "honest"
    for run_set in demo.DEMO_RUN_SETS.values():
        assert run_set.control in run_set.arms
    assert "model organism" in demo.demo_run_label("concealed")
    assert "debate-distilled" in demo.demo_run_label("debate-honest")
    with pytest.raises(KeyError):
        demo.run_set_of("nobody")


def test_a_partial_build_is_never_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = {"complete": False, "pairs_done": 30, "pair_ids": [f"p{i}" for i in range(222)]}
    (tmp_path / "debate_manifest.json").write_text(json.dumps(manifest))
    for arm in demo.DEBATE_ARMS:  # present, but must not be read
        (tmp_path / f"{arm}.csv.gz").write_bytes(b"not a table")
    monkeypatch.setattr(demo, "DEMO_RUNS_DIR", tmp_path)
    info = demo.DemoInfo("bench", 0, 0)
    with Store(tmp_path / "s.duckdb") as store:
        demo._ensure_run_set(store, "bench", demo.DEMO_RUN_SETS["debate"], {}, info, None)
        assert store.runs().empty
    assert info.run_ids == {}
    assert "30 of 222 pairs scored" in info.notes[0]
    # Negative control: without the flag the same folder is read (and its broken table
    # refused), so the test above really exercised the partial-build branch.
    manifest["complete"] = True
    (tmp_path / "debate_manifest.json").write_text(json.dumps(manifest))
    with Store(tmp_path / "t.duckdb") as store, pytest.raises(InputError, match="debate-honest"):
        demo._ensure_run_set(store, "bench", demo.DEMO_RUN_SETS["debate"], {}, info, None)
