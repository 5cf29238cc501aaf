"""The live view's numbers (present.live_progress), against hand-computed values.

Progress counts planned paraphrases (finished questions in full, running ones by their written
steps); the rate is the work of the batches after the first over the time from the first to the
last, within the window; time left is what is still planned at that rate; elapsed time counts
only the stretches the run was running.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pandas as pd
import pytest

from eraudit_core.method import AuditConfig
from eraudit_core.present import live_progress, planned_paraphrases

T0 = datetime(2026, 12, 1, 12, 0, 0)


def steps_at(*batches: tuple[str, float, int]) -> pd.DataFrame:
    """Steps of batches (pair id, seconds after T0, paraphrases in the batch)."""
    rows = [
        {"pair_id": pid, "recorded_at": T0 + timedelta(seconds=t)}
        for pid, t, n in batches
        for _ in range(n)
    ]
    return pd.DataFrame(rows, columns=["pair_id", "recorded_at"])


def test_planned_paraphrases_by_hand() -> None:
    cfg = AuditConfig(
        search_budget=20, test_budget=40, target=0.8, confidence=0.95, test_generators=("a", "b")
    )
    assert cfg.stop_after == 14  # ceil(ln 0.05 / ln 0.8) = ceil(13.43)
    assert planned_paraphrases(cfg) == 20 + 14 + 14
    # Pools cap each part: 5 search paraphrases, generator a holds 9, b is larger than n*.
    assert planned_paraphrases(cfg, {"search": 5, "a": 9, "b": 100}) == 5 + 9 + 14
    # Negative control: without stopping at p*, the test budget is the cap.
    free = AuditConfig(search_budget=20, test_budget=40, target=0.8, stop_at_target=False,
                       test_generators=("a", "b"))  # fmt: skip
    assert planned_paraphrases(free) == 20 + 40 + 40


def test_progress_rate_and_time_left_by_hand() -> None:
    plans = {"p1": 10, "p2": 10, "p3": 10}
    # p1 finished after 4 steps (degraded early); p2 has 6 steps in three batches so far.
    steps = steps_at(("p1", 2, 4), ("p2", 4, 2), ("p2", 6, 2), ("p2", 8, 2))
    live = live_progress(
        plans=plans,
        finished=["p1"],
        steps=steps,
        now=T0 + timedelta(seconds=9),
        active_seconds=0.0,
        resumed_at=T0,
        running=True,
    )
    assert live.scored == 10
    assert live.done_units == 10 + 6 and live.total_units == 30
    assert live.fraction == pytest.approx(16 / 30)
    # Batches at 2, 4, 6, 8 s: the work after the first (6 paraphrases) over 6 s.
    assert live.rate == pytest.approx(1.0)
    assert live.time_left_s == pytest.approx((30 - 16) / 1.0)
    assert live.elapsed_s == pytest.approx(9.0)


def test_rate_holds_between_batches_and_uses_the_window() -> None:
    steps = steps_at(("p", 0, 2), ("p", 10, 2), ("p", 100, 2), ("p", 102, 2))
    common = dict(plans={"p": 100}, finished=[], active_seconds=0.0, resumed_at=T0, running=True)
    at = [
        live_progress(steps=steps, now=T0 + timedelta(seconds=s), **common)  # type: ignore[arg-type]
        for s in (103, 130)
    ]
    # Within 60 s of the last batch only the batches at 100 and 102 s count: 2 paraphrases / 2 s.
    assert at[0].rate == pytest.approx(1.0)
    # Later polls with no new batch give the same rate and estimate (nothing grows by waiting).
    assert at[1].rate == at[0].rate and at[1].time_left_s == at[0].time_left_s
    # Negative control: a window of 200 s takes every batch: 6 paraphrases over 102 s.
    wide = live_progress(steps=steps, now=T0 + timedelta(seconds=103), window_s=200, **common)  # type: ignore[arg-type]
    assert wide.rate == pytest.approx(6 / 102)


def test_elapsed_and_rate_leave_out_time_spent_cancelled() -> None:
    # Ran 30 s, sat cancelled, resumed at 1000 s: 2 batches since then.
    steps = steps_at(("p", 10, 5), ("p", 30, 5), ("p", 1010, 2), ("p", 1012, 2))
    live = live_progress(
        plans={"p": 100},
        finished=[],
        steps=steps,
        now=T0 + timedelta(seconds=1015),
        active_seconds=30.0,
        resumed_at=T0 + timedelta(seconds=1000),
        running=True,
    )
    assert live.elapsed_s == pytest.approx(30.0 + 15.0)
    assert live.rate == pytest.approx(2 / 2)
    # One batch since resuming: its work over the time since the resumption.
    one = live_progress(
        plans={"p": 100},
        finished=[],
        steps=steps.iloc[:12],
        now=T0 + timedelta(seconds=1011),
        active_seconds=30.0,
        resumed_at=T0 + timedelta(seconds=1000),
        running=True,
    )
    assert one.rate == pytest.approx(2 / 10)
    # Negative control: the wall clock since the first step would be 1005 s, not 45 s.
    assert live.elapsed_s < 1005 - 10


def test_stopped_run_has_no_time_left_and_empty_run_no_rate() -> None:
    steps = steps_at(("p", 1, 2), ("p", 2, 2))
    stopped = live_progress(
        plans={"p": 10}, finished=[], steps=steps, now=T0 + timedelta(seconds=50),
        active_seconds=2.0, resumed_at=None, running=False,
    )  # fmt: skip
    assert stopped.time_left_s is None and stopped.elapsed_s == 2.0
    empty = live_progress(
        plans={"p": 10}, finished=[], steps=steps.iloc[:0], now=T0, active_seconds=0.0,
        resumed_at=T0, running=True,
    )  # fmt: skip
    assert empty.rate is None and empty.time_left_s is None and empty.fraction == 0.0


# -- the worker's step line ---------------------------------------------------------------------


def test_step_line_counts_whole_seconds_from_the_click() -> None:
    from eraudit_core.present import step_line

    phase = {"origin": T0.isoformat(), "step": "loading demo:base weights", "log": []}
    now = T0 + timedelta(seconds=12.9)
    assert step_line(phase, "pending", now) == "Step: loading demo:base weights (12 s)"
    assert step_line(phase, "running", now + timedelta(seconds=5)).endswith("(17 s)")
    # no step written yet: starting, counted from the run's creation (the click)
    assert step_line(None, "pending", now, created_at=T0) == "Step: starting (12 s)"
    # Negative control: a stopped run has no current step (a cancelled one never reads
    # pending or loading)
    for status in ("cancelled", "failed", "done", "interrupted"):
        assert step_line(phase, status, now) is None


def test_where_the_time_went_and_the_loading_estimate() -> None:
    from eraudit_core.present import loading_left, loading_seconds, step_times

    earlier = {
        "origin": T0.isoformat(),
        "step": None,
        "log": [
            {"step": "starting", "seconds": 1.0},
            {"step": "loading demo:base weights", "seconds": 20.0},
            {"step": "registering demo:base: label-mass check", "seconds": 9.0},
            {"step": "scoring question 1 of 3: counterexample search", "seconds": 40.0},
            {"step": "scoring question 2 of 3: counterexample search", "seconds": 30.0},
        ],
    }
    times = step_times(earlier)
    assert times["seconds"].sum() == pytest.approx(100.0) and len(times) == 5
    assert loading_seconds(earlier) == pytest.approx(30.0)
    now = T0 + timedelta(seconds=12)
    loading = {"origin": T0.isoformat(), "step": "loading demo:base weights", "log": []}
    assert loading_left(loading, [None, earlier], now) == pytest.approx(18.0)
    # Negative controls: once scoring, or without an earlier run that reached scoring, no
    # loading estimate
    scoring = {**loading, "step": "scoring question 1 of 3: counterexample search"}
    assert loading_left(scoring, [earlier], now) is None
    never = {**earlier, "log": earlier["log"][:3]}
    assert loading_seconds(never) is None and loading_left(loading, [never], now) is None
