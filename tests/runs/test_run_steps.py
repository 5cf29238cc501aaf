"""A run's worker reports its steps to the store (for the live panel's "Step:" line), and a
checkpoint's registration results are kept per fingerprint so a second audit does not redo
them."""

from __future__ import annotations

import datetime as dt
import math
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest

from eraudit_core.errors import CancelledError
from eraudit_core.runs import register_checkpoint
from eraudit_core.runs._step_reporter import StepReporter
from eraudit_core.store import Store
from eraudit_core.types import Query, QueryScore


class CountingVerifier:
    """A verifier whose label mass is `mass` on every prompt; counts every probe it scores."""

    def __init__(self, mass: float, fingerprint: str = "fp-counting") -> None:
        self.mass, self.fingerprint, self.calls = mass, fingerprint, 0
        self.format = SimpleNamespace(readout=SimpleNamespace(name="plain"), detected="plain")
        self.name = "counting"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    def score(self, queries: list[Query]) -> list[QueryScore]:
        self.calls += len(queries)
        la = math.log(self.mass * 0.6)
        lb = math.log(self.mass * 0.4)
        return [QueryScore(0.6, (la, lb, lb, la)) for _ in queries]

    def top_is_label(self, queries: list[Query]) -> list[bool]:
        self.calls += len(queries)
        return [True] * (2 * len(queries))


def test_a_second_registration_reuses_the_stored_label_mass_and_floor() -> None:
    store = Store()
    steps: list[str] = []
    first = CountingVerifier(0.9)
    details = register_checkpoint(store, first, "c", step=steps.append)
    assert first.calls > 0 and details["label_mass"]["median"] == pytest.approx(0.9)
    assert steps == ["registering c: label-mass check", "registering c: precision probe"]
    again, steps2 = CountingVerifier(0.9), []
    details2 = register_checkpoint(store, again, "c", step=steps2.append)
    assert again.calls == 0 and steps2 == []  # nothing scored the second time
    assert details2["label_mass"] == details["label_mass"]
    assert details2["noise_floor"] == details["noise_floor"]
    # Negative control: a minimum the stored mass does not reach is measured again (here it
    # passes on its top share, which the first registration never needed to ask).
    strict = CountingVerifier(0.9)
    details3 = register_checkpoint(store, strict, "c", min_label_mass=0.95)
    assert strict.calls > 0 and details3["label_mass"]["top_share"] == 1.0


def test_a_stored_low_mass_passes_again_only_by_its_top_share() -> None:
    store = Store()
    low = CountingVerifier(0.3, fingerprint="fp-low")
    details = register_checkpoint(store, low, "low")
    assert details["label_mass"]["top_share"] == 1.0  # passed on its top share
    again = CountingVerifier(0.3, fingerprint="fp-low")
    register_checkpoint(store, again, "low")
    assert again.calls == 0
    # Negative control: another fingerprint is measured.
    other = CountingVerifier(0.3, fingerprint="fp-other")
    register_checkpoint(store, other, "other")
    assert other.calls > 0


def test_the_reporter_writes_the_step_its_origin_and_where_the_time_went() -> None:
    store = Store()
    store.create_run("r1", label="x", config={}, n_pairs=1)
    origin = dt.datetime(2026, 1, 2, 3, 4, 5)
    # the worker starts 3.25 s after the click, loads for 7.25 s, scores for 1.5 s
    clock = [origin + dt.timedelta(seconds=s) for s in (3.25, 10.5, 12.0)]
    with mock.patch("eraudit_core.runs._step_reporter._utcnow", side_effect=clock):
        step = StepReporter(store, "r1", origin)
        step("loading demo:base weights")
        phase = store.run_progress("r1")["phase"]
        assert phase["step"] == "loading demo:base weights"
        assert phase["origin"] == "2026-01-02T03:04:05"
        assert phase["since"] == "2026-01-02T03:04:08.250000"
        step("scoring question 1 of 1: counterexample search")
        step(None)
    phase = store.run_progress("r1")["phase"]
    assert phase["step"] is None
    assert phase["log"] == [
        {"step": "starting", "seconds": 3.25},
        {"step": "loading demo:base weights", "seconds": 7.25},
        {"step": "scoring question 1 of 1: counterexample search", "seconds": 1.5},
    ]


def test_a_cancel_while_loading_stops_at_the_next_step() -> None:
    store = Store()
    store.create_run("r2", label="x", config={}, n_pairs=1)
    asked = {"cancel": False}
    step = StepReporter(store, "r2", should_cancel=lambda: asked["cancel"])
    step("loading demo:base weights")  # not cancelled: goes on
    asked["cancel"] = True
    with pytest.raises(CancelledError, match="cancelled while loading demo:concealed"):
        step("loading demo:concealed")
    # the store's flag stops a run not yet claimed, asked from another process
    other = StepReporter(store, "r2")
    other.watch_store = True
    other("a")
    store.request_cancel("r2")
    with pytest.raises(CancelledError):
        other("b")
