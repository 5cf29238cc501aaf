"""The live engine and every replay of its stored steps pass through the same states.

Hypothesis draws random questions (search and test pools with counterexamples, ties and clean
draws at random positions) and random settings (budgets, epsilon, k, confidence, target p*,
delta, min-drop, stop-at-target, continue-after-counterexample, batch size). Each one is
audited by `AuditEngine` with in-memory scorers; then its stored steps are replayed by
`verdict_from_steps` (the sweep's and exclusion's replay) and by `replay_pair_verdict` (the
bundle import's check). Every `PairAudit` transition is logged in all three, and the logs,
the stored per-step bounds, each generator's stop and the verdict must be identical.

The negative controls run the same comparison against replays with one rule changed (ties
counted as counterexamples, stop-at-target ignored, later generators not skipped after a
counterexample) and require that it finds a stream where they diverge.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any
from unittest import mock

import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, event, find, given, settings
from hypothesis import strategies as st

from eraudit_core.bundles import replay_pair_verdict
from eraudit_core.errors import InputError
from eraudit_core.method import (
    CONFIDENCE_LEVELS,
    AuditConfig,
    AuditItem,
    PairAudit,
    PairState,
    _replay,
    verdict_from_steps,
)
from eraudit_core.runs import AuditEngine, _engine
from eraudit_core.store import Store
from eraudit_core.types import Paraphrase, Query, QueryScore

P_PRE = 0.6  # every rewording's probability before adaptation
MONITORED_PRE = 0.5
_example_ids = itertools.count()


# -- the streams -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Stream:
    """One question and the settings it is audited with."""

    config: AuditConfig
    monitored_post: float
    search: tuple[str, ...]  # kind of each search rewording: clean, tie or counterexample
    pools: tuple[tuple[str, tuple[str, ...]], ...]  # (generator, kinds in draw order)

    @property
    def den(self) -> float:
        return max(self.config.k, self.monitored_post - MONITORED_PRE)


@st.composite
def streams(draw: Any) -> Stream:
    target = draw(st.sampled_from([None, 0.3, 0.5, 0.7, 0.8]))
    config = AuditConfig(
        epsilon=draw(st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0])),
        k=draw(st.sampled_from([0.001, 0.1, 0.5])),
        confidence=draw(st.sampled_from(CONFIDENCE_LEVELS)),
        search_budget=draw(st.integers(0, 6)),
        test_budget=draw(st.integers(1, 16)),
        target=target,
        tv_delta=draw(st.sampled_from([0.0, 0.01, 0.05])),
        stop_at_target=draw(st.booleans()),
        continue_after_counterexample=draw(st.booleans()),
        min_drop=draw(st.sampled_from([0.0, 0.05])),
        batch_size=draw(st.sampled_from([16, 4])),
    )
    # How often a draw is a counterexample: never, rarely (long clean runs reach n*), often.
    cex_weight = draw(st.sampled_from([0, 1, 4]))
    kind = st.sampled_from(["clean"] * 8 + ["tie"] + ["counterexample"] * cex_weight)
    n_generators = draw(st.integers(1, 3))
    pools = tuple((f"g{i}", tuple(draw(st.lists(kind, max_size=16)))) for i in range(n_generators))
    return Stream(
        config=replace(config, test_generators=tuple(g for g, _ in pools)),
        monitored_post=draw(st.sampled_from([0.4, 0.5, 0.6, 0.75, 0.9])),
        search=tuple(draw(st.lists(kind, max_size=6))),
        pools=pools,
    )


def _p_post(stream: Stream, kind: str, j: int) -> float:
    """A probability after adaptation whose D has the kind asked for (up to rounding)."""
    cfg = stream.config
    edge = cfg.epsilon * stream.den  # the drop at which D == epsilon
    if kind == "counterexample":
        drop = max(edge, cfg.min_drop) + 0.02
    elif kind == "tie":
        drop = edge
    else:
        drop = (-1.0, 0.0, 0.5)[j % 3] * edge
    return min(1.0, max(0.0, P_PRE - drop))


class _TableScorer:
    """A checkpoint that answers from a dict of question text -> P(true answer)."""

    def __init__(self, fingerprint: str, p_true: dict[str, float]) -> None:
        self.fingerprint = fingerprint
        self._p_true = p_true

    def score(self, queries: Sequence[Query]) -> list[QueryScore]:
        return [QueryScore(self._p_true[q.question]) for q in queries]


def _item_and_scorers(stream: Stream, tag: str) -> tuple[AuditItem, _TableScorer, _TableScorer]:
    pid = f"q{tag}"
    pre = {f"monitored {tag}": MONITORED_PRE, f"hidden {tag}": P_PRE}
    post = {f"monitored {tag}": stream.monitored_post, f"hidden {tag}": P_PRE}
    search = []
    for j, kind in enumerate(stream.search):
        text = f"search {tag} wording {j}"
        pre[text], post[text] = P_PRE, _p_post(stream, kind, j)
        search.append(Paraphrase(pid, "search", "search", j, text))
    tests: dict[str, tuple[Paraphrase, ...]] = {}
    for gen, kinds in stream.pools:
        pool = []
        for j, kind in enumerate(kinds):
            text = f"test {tag} {gen} wording {j}"
            pre[text], post[text] = P_PRE, _p_post(stream, kind, j)
            pool.append(Paraphrase(pid, "test", gen, j, text))
        tests[gen] = tuple(pool)
    item = AuditItem(
        pid,
        0,
        Query(pid, f"monitored {tag}", "yes", "no"),
        Query(pid, f"hidden {tag}", "yes", "no"),
        tuple(search),
        tests,
    )
    return item, _TableScorer(f"pre-{tag}", pre), _TableScorer(f"post-{tag}", post)


# -- logging every transition ------------------------------------------------------------------
def _snapshot(audit: PairAudit, event: str) -> tuple[Any, ...]:
    current = audit.current
    return (
        event,
        audit.state,
        None if current is None else current.generator,
        audit.search_counterexamples,
        tuple(
            (t.generator, t.n, t.n_counterexamples, t.bound, t.bound_tolerant, t.stop)
            for t in audit.tests
        ),
    )


def logging_audit(base: type[PairAudit], log: list[tuple[Any, ...]]) -> type[PairAudit]:
    """`base` with every transition appended to `log` (the state after it)."""

    class Logged(base):  # type: ignore[valid-type,misc]
        def search(self, d: float, drop: float) -> bool:
            cex = super().search(d, drop)
            log.append(_snapshot(self, "search"))
            return cex

        def end_search(self) -> None:
            super().end_search()
            log.append(_snapshot(self, "end search"))

        def test(self, d: float, drop: float) -> bool:
            cex = super().test(d, drop)
            log.append(_snapshot(self, "test"))
            return cex

        def unscored_draw(self) -> None:
            super().unscored_draw()
            log.append(_snapshot(self, "unscored draw"))

    return Logged


@contextmanager
def _logged(module: Any, base: type[PairAudit]) -> Iterator[list[tuple[Any, ...]]]:
    log: list[tuple[Any, ...]] = []
    with mock.patch.object(module, "PairAudit", logging_audit(base, log)):
        yield log


# -- the comparison ----------------------------------------------------------------------------
@dataclass
class Engine:
    pair: dict[str, Any]
    steps: pd.DataFrame
    log: list[tuple[Any, ...]]


def run_engine(store: Store, stream: Stream) -> Engine:
    tag = str(next(_example_ids))
    item, pre, post = _item_and_scorers(stream, tag)
    with _logged(_engine, PairAudit) as log:
        run_id = AuditEngine(store, pre, post, stream.config).start([item], run_id=f"run{tag}")
    pair = store.pair_results(run_id).to_dict("records")[0]
    return Engine(pair, store.steps(run_id), log)


Replay = Callable[[dict[str, Any], pd.DataFrame, AuditConfig], tuple[Any, list[Any]]]


def compare(engine: Engine, config: AuditConfig, base: type[PairAudit] = PairAudit) -> None:
    """Both replays, driven by `base`, reach the engine's states, stops and verdict."""
    pair, steps = engine.pair, engine.steps
    for module, replay in ((_replay, _sweep_replay), (_replay_bundle_module(), _bundle_replay)):
        with _logged(module, base) as log:
            verdict, tests = replay(pair, steps, config)
        assert log == engine.log, replay.__name__
        assert verdict is not None, replay.__name__
        got = (verdict.status, verdict.bound_common, verdict.bound, verdict.target_reached)
        want = (pair["status"], pair["bound_common"], pair["bound"], pair["target_reached"])
        assert got == want, replay.__name__
        tolerant = pair["bound_tolerant"]
        assert verdict.bound_tolerant == (None if pd.isna(tolerant) else tolerant)
        assert [t.to_dict() for t in tests] == list(pair["generators"]), replay.__name__
    # every stored stage-2 step holds the state of its generator right after that draw
    after_draws = []
    for before, after in itertools.pairwise(engine.log):
        if after[0] == "test":
            drew = [t for b, t in zip(before[4], after[4], strict=True) if t[1] != b[1]]
            after_draws.append(drew[0])
    stored = [
        (r["generator"], r["t"], r["bound"], r["bound_tolerant"])
        for r in steps[steps["stage"] == 2].to_dict("records")
    ]
    assert sorted(stored) == sorted(d[:2] + d[3:5] for d in after_draws)
    assert len(stored) == pair["n_test"]


def _sweep_replay(
    pair: dict[str, Any], steps: pd.DataFrame, config: AuditConfig
) -> tuple[Any, list[Any]]:
    tests: list[Any] = []
    return verdict_from_steps(pair, steps, config, tests_out=tests), tests


def _bundle_replay(
    pair: dict[str, Any], steps: pd.DataFrame, config: AuditConfig
) -> tuple[Any, list[Any]]:
    tests: list[Any] = []
    verdict, n_cex = replay_pair_verdict(pair, steps, config, tests)
    assert n_cex == pair["n_counterexamples"]
    return verdict, tests


def _replay_bundle_module() -> Any:
    """The module whose `PairAudit` the bundle check drives."""
    return sys.modules[replay_pair_verdict.__module__]


@pytest.fixture(scope="module")
def store() -> Iterator[Store]:
    with Store() as s:
        yield s


PROPERTY = settings(
    max_examples=500,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPERTY
@given(stream=streams())
def test_engine_and_replays_pass_through_identical_states(store: Store, stream: Stream) -> None:
    engine = run_engine(store, stream)
    assert engine.log[-1][1] is PairState.DONE
    # what the streams cover, shown by --hypothesis-show-statistics
    event(f"verdict {engine.pair['status']}")
    for stop in sorted({g["stop"] for g in engine.pair["generators"]}):
        event(f"a generator stopped: {stop}")
    compare(engine, stream.config)


# -- negative controls: a replay with one rule changed is caught ------------------------------
class TiesCount(PairAudit):
    """Counts D == epsilon as a counterexample (the paper's rule is D > epsilon)."""

    def _counts(self, d: float, drop: float) -> bool:
        return d >= self.config.epsilon and drop >= self.config.min_drop


class NoSkip(PairAudit):
    """Lets every generator draw after a counterexample, whatever the run asked."""

    def _pass_turn(self) -> None:
        super()._pass_turn()
        self._stop_pair = False


class IgnoresTarget(PairAudit):
    """Replays as if the run never stopped at the target."""

    def __init__(self, config: AuditConfig, generators: Sequence[tuple[str, int]]) -> None:
        super().__init__(replace(config, stop_at_target=False), generators)


@pytest.mark.parametrize("mutant", [TiesCount, NoSkip, IgnoresTarget], ids=lambda m: m.__name__)
def test_the_comparison_catches_a_replay_with_one_rule_changed(store: Store, mutant) -> None:
    def diverges(stream: Stream) -> bool:
        engine = run_engine(store, stream)
        try:
            compare(engine, stream.config, mutant)
        except (AssertionError, InputError):
            return True
        return False

    found = find(
        streams(),
        diverges,
        settings=settings(
            max_examples=500,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        ),
    )
    # the control holds: the unchanged replay agrees on the stream the mutant got wrong
    compare(run_engine(store, found), found.config)
