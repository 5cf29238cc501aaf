"""The demo's first-launch preparation: the live audit's inputs at once, the finished runs in
a background thread that waits while the user's audit needs the cores."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from eraudit_core import demo
from eraudit_core.store import Store
from ui.demo_preparation import DemoPreparation

WAIT_S = 30.0  # generous: a bound on a hang, never a timing assertion


def test_the_preparation_waits_while_busy_and_never_cancels() -> None:
    busy = threading.Event()
    busy.set()
    reached = threading.Event()
    answers: list[bool] = []

    def prepare(pause):  # type: ignore[no-untyped-def]
        answers.append(pause())  # the engine's should_cancel between two questions
        reached.set()
        return {"run_ids": {"honest": "demo-honest"}}

    prep = DemoPreparation(prepare, busy.is_set, poll_s=0.01).start()
    # held before its first question while busy: nothing prepared, and it says it waits
    assert not reached.wait(0.3)
    assert prep.paused and not prep.finished and prep.result is None
    busy.clear()
    assert prep.wait(WAIT_S)
    assert answers == [False]  # it went on, it did not cancel
    assert prep.result == {"run_ids": {"honest": "demo-honest"}}
    assert not prep.paused and prep.error is None


def test_a_pause_between_questions_holds_the_next_question() -> None:
    busy = threading.Event()
    done: list[int] = []
    first = threading.Event()

    def prepare(pause):  # type: ignore[no-untyped-def]
        for q in range(3):
            pause()
            done.append(q)
            if q == 0:
                busy.set()  # a live audit starts after the first question
                first.set()
        return {}

    prep = DemoPreparation(prepare, busy.is_set, poll_s=0.01).start()
    assert first.wait(WAIT_S)
    assert not prep.wait(0.3)
    assert done == [0] and prep.paused
    busy.clear()
    assert prep.wait(WAIT_S)
    assert done == [0, 1, 2]


def test_a_failed_preparation_is_reported_not_raised() -> None:
    def prepare(pause):  # type: ignore[no-untyped-def]
        raise OSError("data/demo_runs/honest.csv.gz: unreadable")

    prep = DemoPreparation(prepare, lambda: False).start()
    assert prep.wait(WAIT_S)
    assert prep.result is None
    assert prep.error == "OSError: data/demo_runs/honest.csv.gz: unreadable"


def test_demo_start_gives_the_live_questions_without_any_run(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        info = demo.demo_start(store)
        assert store.runs().empty  # no finished run was built
        assert info.n_pairs == 222 and info.paraphrases_stored > 0
        assert len(info.live_pair_ids) == demo.DEMO_LIVE_PAIR_COUNT
        assert info.live_pair_ids == demo.demo_live_pair_ids(store, info.benchmark_id)
        shipped = json.loads(demo.REGISTRATIONS.read_text())["checkpoints"]
        assert set(store.checkpoints()["fingerprint"]) == {c["fingerprint"] for c in shipped}
        # every arm with a shipped table and a complete manifest is still to build
        tables = {p.name.removesuffix(".csv.gz") for p in demo.DEMO_RUNS_DIR.glob("*.csv.gz")}
        assert demo.demo_runs_to_build(store) == [a for a in demo.DEMO_ARMS if a in tables]


def test_runs_to_build_skips_done_runs_and_partial_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"complete": True}))
    (tmp_path / "debate_manifest.json").write_text(json.dumps({"complete": False}))
    for arm in demo.DEMO_ARMS:
        (tmp_path / f"{arm}.csv.gz").write_bytes(b"")
    (tmp_path / "adversarial.csv.gz").unlink()  # no table: nothing to build it from
    monkeypatch.setattr(demo, "DEMO_RUNS_DIR", tmp_path)

    class Runs:
        def runs(self):  # type: ignore[no-untyped-def]
            import pandas as pd

            return pd.DataFrame({"run_id": ["demo-honest"], "status": ["done"]})

    assert demo.demo_runs_to_build(Runs()) == ["concealed"]  # type: ignore[arg-type]
