"""The capacity search picks the smallest capacity that passes for both arms, skips the
adversarial arm of a capacity whose honest arm failed, and stops (resumably) when a run does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eraudit_core.adapt._fit_search import SEARCH_LOG, search_capacity
from eraudit_core.adapt._fit_training import FitConfig


def _stand_in(outcomes: dict[tuple[str, str], Any], calls: list[tuple[str, str]]):
    """Trains nothing: returns the outcome given for (capacity, arm)."""

    def run(arm: str, work: Path, out_root: Path, *, config: FitConfig, **kw: Any) -> dict:
        calls.append((config.capacity, arm))
        assert kw["resume"] is True and out_root == work / "arms"
        outcome = outcomes[(config.capacity, arm)]
        if outcome == "stopped":
            return {"arm": arm, "status": "stopped"}
        return {"arm": arm, "status": "complete", "fit": {"passed": outcome}}

    return run


def test_smallest_capacity_passing_both_arms_is_chosen(tmp_path: Path) -> None:
    outcomes = {
        ("full-top2", "debate-honest"): False,
        ("full-top4", "debate-honest"): True,
        ("full-top4", "debate-adversarial"): False,
        ("full-top8", "debate-honest"): True,
        ("full-top8", "debate-adversarial"): True,
        ("full-top12", "debate-honest"): True,
        ("full-top12", "debate-adversarial"): True,
    }
    calls: list[tuple[str, str]] = []
    log = search_capacity(
        ["full-top2", "full-top4", "full-top8", "full-top12"],
        tmp_path,
        recipe=FitConfig(seed=3),
        progress=lambda _: None,
        run_arm=_stand_in(outcomes, calls),
    )
    assert log["chosen"] == "full-top8" and log["status"] == "passed"
    # full-top2's adversarial arm never trains (its honest arm failed); full-top12 never runs.
    assert calls == [
        ("full-top2", "debate-honest"),
        ("full-top4", "debate-honest"),
        ("full-top4", "debate-adversarial"),
        ("full-top8", "debate-honest"),
        ("full-top8", "debate-adversarial"),
    ]
    assert json.loads((tmp_path / SEARCH_LOG).read_text())["chosen"] == "full-top8"
    assert log["recipe"]["seed"] == 3 and "capacity" not in log["recipe"]


def test_search_stops_when_a_run_stops_and_none_passing_is_said(tmp_path: Path) -> None:
    calls: list[tuple[str, str]] = []
    outcomes = {
        ("full-top2", "debate-honest"): True,
        ("full-top2", "debate-adversarial"): "stopped",
    }
    log = search_capacity(
        ["full-top2", "full-top4"], tmp_path, recipe=FitConfig(), progress=lambda _: None,
        run_arm=_stand_in(outcomes, calls),
    )  # fmt: skip
    assert log["chosen"] is None and log["status"].startswith("stopped at the deadline")
    assert calls == [("full-top2", "debate-honest"), ("full-top2", "debate-adversarial")]
    log = search_capacity(
        ["full-top2"], tmp_path, recipe=FitConfig(), progress=lambda _: None,
        run_arm=_stand_in({("full-top2", "debate-honest"): False}, []),
    )  # fmt: skip
    assert (log["chosen"], log["status"]) == (None, "no capacity passed")
