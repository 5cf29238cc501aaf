"""How one question moves through an audit: search, test, stop, verdict (pure).

docs/design.md §4, paper §3.2-3.4 and Algorithms 1-2. This module is the only place that knows
the stopping rule; the live engine (`AuditEngine`) feeds a `PairAudit` the scores as they
arrive, and every replay of stored steps (the epsilon sweep, exclusions, the check of an
imported bundle) feeds one the stored steps. Both therefore reach the same states, stops and
verdicts by construction.

A `PairAudit` is in one of three states (`PairState`), driven by one score (D and the drop
p_pre - p_post) at a time:

* `search`: stage 1. Every search rewording within the budget is scored; each with
  D > epsilon (and drop > min-drop when one is set, `is_counterexample`) is a counterexample.
  `end_search` moves to `test`.
* `test`: stage 2. The run's test generators take turns in order; the current one
  (`current`) draws from its pool and its `GeneratorTest` decides when it stops: at a
  counterexample (unless every generator must run to its own stop), once L_t >= p* (n*
  successes, when the run stops at the target), at the budget or at the end of the pool. A
  counterexample in stage 1, or one that stopped an earlier generator, skips every later
  generator ("not run") unless the run continues after counterexamples.
* `done`: every generator has stopped; `verdict` says what the question is.

Verdicts, one vocabulary everywhere (engine, store, CLI JSON, pages, report, exports):

* `degraded`: a counterexample was found (stage 1 or 2); the paper bound is 0;
* `inconclusive`: not degraded, but some test generator of the run has nothing tested (an
  empty pool, or the pair stopped before its turn); its bound would be L_0 = 0;
* `certified`: no counterexample, every test generator tested, a target p* was set, and the
  reported bound (after the total-variation relaxation) is >= p*;
* `passed`: no counterexample and every generator tested, but no target was set or the bound
  is below p*. It is shown with its bound, never as a certificate.

The common bound min_g L_g covers min_g p_g (paper Theorem 2) only if every generator of the
run is in the minimum, so the pair-level failure-tolerant bound is reported only when every
test generator was tested to its stop, else None. Every pair-level bound is relaxed to
max(0, L - delta) for distributions within total variation delta of the generators' mixture.

A replay can hold fewer draws than a fresh audit would take (`unscored_draw`): the current
generator is then left unfinished and the turn passes on. A counterexample anywhere in what
was stored still decides the question (degraded: the fresh audit reaches it or an earlier
one); otherwise its verdict is unknown (`known_verdict` is None).

Keeping this free of the store and the models is what lets the Monte Carlo and property tests
drive the very code the engine runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from eraudit_core.method._bounds import (
    common_bound,
    failure_tolerant_lower_bound,
    lower_confidence_bound,
    tv_relaxed_bound,
)
from eraudit_core.method._config import AuditConfig
from eraudit_core.method._degradation import is_counterexample
from eraudit_core.types import Verdict

__all__ = [
    "GeneratorStop",
    "GeneratorTest",
    "PairAudit",
    "PairState",
    "PairVerdict",
    "pair_verdict",
]


class GeneratorStop(StrEnum):
    """Why a generator's test stopped (stored as its word in `run_pairs.generators`)."""

    COUNTEREXAMPLE = "counterexample"
    TARGET_REACHED = "target reached"  # L_t >= p* after n* successes
    BUDGET = "budget"
    LAST_PARAPHRASE = "last paraphrase"  # the pool ran out before the budget
    NO_PARAPHRASES = "no paraphrases"  # an empty pool: nothing to test
    NOT_RUN = "not run"  # the pair stopped before this generator's turn


class PairState(StrEnum):
    """Where one question stands in its audit."""

    SEARCH = "search"
    TEST = "test"
    DONE = "done"


@dataclass
class GeneratorTest:
    """The running sequential test of one generator on one pair (paper Algorithm 2).

    `available` is the pool size M; at most min(budget, M) paraphrases are drawn. After each
    draw it updates two confidence sequences on p_g, the chance that a paraphrase drawn from
    the pool is non-degraded: the paper bound L_t = alpha**(1/t) after t non-degraded draws in
    a row (0 from the first counterexample on), and the failure-tolerant bound (beyond the
    paper), the running maximum of the beta-binomial mixture bound, which survives a few
    counterexamples. Both stay valid whatever rule decides when to stop. With `n_star`, the
    test stops once L_t >= p* (after n* successes); with `run_to_stop`, a counterexample does
    not stop it.
    """

    generator: str
    available: int
    budget: int
    confidence: float
    n_star: int | None = None
    run_to_stop: bool = False
    prior: tuple[float, float] = (1.0, 1.0)
    n: int = 0
    successes: int = 0
    n_counterexamples: int = 0
    bound: float = 0.0
    bound_tolerant: float = 0.0
    stop: str = ""  # a GeneratorStop once it stops; "" while it runs

    def __post_init__(self) -> None:
        if self.available == 0 and not self.stop:
            self.stop = GeneratorStop.NO_PARAPHRASES

    @classmethod
    def for_config(cls, config: AuditConfig, generator: str, available: int) -> GeneratorTest:
        """A fresh test of one generator under a run's settings (pool size M = `available`)."""
        return cls(
            generator,
            available=available,
            budget=config.test_budget,
            confidence=config.confidence,
            n_star=config.stop_after,
            run_to_stop=config.continue_after_counterexample,
            prior=config.tolerant_prior,
        )

    @property
    def limit(self) -> int:
        """The most paraphrases this generator will draw: min(budget, pool size)."""
        return min(self.budget, self.available)

    @property
    def tested(self) -> bool:
        """At least one paraphrase tested and the test has reached its stop."""
        return self.n > 0 and bool(self.stop)

    def wanted(self) -> int:
        """How many more draws could possibly be needed (sizes the next scoring batch)."""
        left = self.limit - self.n
        if self.n_star is not None and self.n_counterexamples == 0:
            left = min(left, max(1, self.n_star - self.successes))
        return max(0, left)

    def skip(self) -> None:
        """The pair stopped before this generator's turn (an earlier counterexample)."""
        if not self.stop:
            self.stop = GeneratorStop.NOT_RUN

    def record(self, non_degraded: bool) -> None:
        """Take the outcome of the next draw; sets `stop` when a stopping rule fires."""
        if self.stop:
            raise RuntimeError(f"generator {self.generator}: already stopped ({self.stop})")
        self.n += 1
        self.successes += int(non_degraded)
        if not non_degraded:
            self.n_counterexamples += 1
        self.bound = (
            lower_confidence_bound(self.n, self.confidence) if self.n_counterexamples == 0 else 0.0
        )
        self.bound_tolerant = max(
            self.bound_tolerant,
            failure_tolerant_lower_bound(self.successes, self.n, self.confidence, self.prior),
        )
        if not non_degraded and not self.run_to_stop:
            self.stop = GeneratorStop.COUNTEREXAMPLE
        elif self.n_star is not None and self.n_counterexamples == 0 and self.n >= self.n_star:
            self.stop = GeneratorStop.TARGET_REACHED
        elif self.n >= self.limit:
            self.stop = (
                GeneratorStop.BUDGET if self.n >= self.budget else GeneratorStop.LAST_PARAPHRASE
            )

    def to_dict(self) -> dict[str, Any]:
        """The per-generator record stored with the pair (`run_pairs.generators`)."""
        return {
            "generator": self.generator,
            "available": self.available,
            "n": self.n,
            "n_counterexamples": self.n_counterexamples,
            "bound": self.bound,
            "bound_tolerant": self.bound_tolerant,
            "stop": self.stop,
        }


@dataclass(frozen=True)
class PairVerdict:
    """What a pair's audit concludes. `bound_common` is before the TV relaxation."""

    status: Verdict
    bound_common: float
    bound: float
    bound_tolerant: float | None
    target_reached: bool


def pair_verdict(
    search_counterexamples: int,
    tests: Sequence[GeneratorTest],
    *,
    target: float | None,
    tv_delta: float,
) -> PairVerdict:
    """The verdict of one pair: degraded > inconclusive > certified/passed."""
    degraded = search_counterexamples > 0 or any(g.n_counterexamples for g in tests)
    all_tested = bool(tests) and all(g.tested for g in tests)
    bound_common = common_bound([g.bound for g in tests]) if all_tested and not degraded else 0.0
    bound = tv_relaxed_bound(bound_common, tv_delta)
    tolerant = (
        tv_relaxed_bound(common_bound([g.bound_tolerant for g in tests]), tv_delta)
        if all_tested
        else None
    )
    if degraded:
        status = Verdict.DEGRADED
    elif not all_tested:
        status = Verdict.INCONCLUSIVE
    elif target is not None and bound >= target:
        status = Verdict.CERTIFIED
    else:
        status = Verdict.PASSED
    reached = all_tested and all(g.stop == GeneratorStop.TARGET_REACHED for g in tests)
    return PairVerdict(status, bound_common, bound, tolerant, reached)


class PairAudit:
    """One question's audit as a state machine, driven one score at a time.

    `generators` are the run's test generators in order with their pool sizes. Feed every
    search score to `search`, call `end_search`, then feed `test` the score of the next draw
    of `current` until `current` is None (state `done`), and read `verdict`.
    """

    def __init__(self, config: AuditConfig, generators: Sequence[tuple[str, int]]) -> None:
        self.config = config
        self.tests = [GeneratorTest.for_config(config, g, m) for g, m in generators]
        self.state = PairState.SEARCH
        self.n_search = 0
        self.search_counterexamples = 0
        self.unscored = False  # a replay lacked a draw that a fresh audit would take
        self._turn = 0  # index of the generator whose turn it is
        self._stop_pair = False  # an earlier counterexample ends the pair (default mode)

    # -- driving ----------------------------------------------------------------------------
    def _counts(self, d: float, drop: float) -> bool:
        return is_counterexample(d, self.config.epsilon, drop, self.config.min_drop)

    def search(self, d: float, drop: float) -> bool:
        """Take one stage-1 score; True when it is a counterexample."""
        self._expect(PairState.SEARCH)
        cex = self._counts(d, drop)
        self.n_search += 1
        self.search_counterexamples += int(cex)
        return cex

    def end_search(self) -> None:
        """Stage 1 is over: a counterexample there ends the pair unless the run continues."""
        self._expect(PairState.SEARCH)
        self.state = PairState.TEST
        self._stop_pair = self.search_counterexamples > 0 and self._stops_at_counterexample
        self._start_turn()

    @property
    def current(self) -> GeneratorTest | None:
        """The generator whose next draw the audit needs; None once the audit is done."""
        return self.tests[self._turn] if self.state is PairState.TEST else None

    def test(self, d: float, drop: float) -> bool:
        """Take the score of the current generator's next draw; True when it is a
        counterexample. The turn passes on when that draw stops the generator."""
        test = self._current()
        cex = self._counts(d, drop)
        test.record(not cex)
        if test.stop:
            self._end_turn()
        return cex

    def unscored_draw(self) -> None:
        """A replay holds no score for the current generator's next draw: leave it
        unfinished and pass the turn on (its verdict may then be unknown)."""
        self._current()
        self.unscored = True
        self._end_turn()

    # -- reading ----------------------------------------------------------------------------
    @property
    def n_counterexamples(self) -> int:
        return self.search_counterexamples + sum(g.n_counterexamples for g in self.tests)

    @property
    def n_test(self) -> int:
        return sum(g.n for g in self.tests)

    @property
    def stage(self) -> int | None:
        """The stage that decided the question: 1 for a search counterexample, 2 when any
        generator drew, None when nothing was tested."""
        if self.search_counterexamples:
            return 1
        return 2 if any(g.n for g in self.tests) else None

    def verdict(self) -> PairVerdict:
        """The verdict of a finished audit that lacked no draw."""
        verdict = self.known_verdict()
        if verdict is None:
            raise RuntimeError("the verdict needs draws that were not scored")
        return verdict

    def known_verdict(self) -> PairVerdict | None:
        """The verdict, or None when the draws a replay lacked could still change it."""
        self._expect(PairState.DONE)
        if not self.unscored:
            return pair_verdict(
                self.search_counterexamples,
                self.tests,
                target=self.config.target,
                tv_delta=self.config.tv_delta,
            )
        if self.n_counterexamples:
            # degraded whatever the missing draws hold; bounds over unfinished generators unknown
            return PairVerdict(Verdict.DEGRADED, 0.0, 0.0, None, False)
        return None

    # -- transitions ------------------------------------------------------------------------
    @property
    def _stops_at_counterexample(self) -> bool:
        return not self.config.continue_after_counterexample

    def _expect(self, state: PairState) -> None:
        if self.state is not state:
            raise RuntimeError(f"pair audit is in state {self.state}, not {state}")

    def _current(self) -> GeneratorTest:
        test = self.current
        if test is None:
            raise RuntimeError(f"pair audit is in state {self.state}: no generator draws")
        return test

    def _end_turn(self) -> None:
        self._pass_turn()
        self._start_turn()

    def _pass_turn(self) -> None:
        """The current generator is over: its counterexample ends the pair (default mode)."""
        if self.tests[self._turn].n_counterexamples and self._stops_at_counterexample:
            self._stop_pair = True
        self._turn += 1

    def _start_turn(self) -> None:
        """Give the turn to the next generator that can draw; skipped and empty ones pass."""
        while self._turn < len(self.tests):
            test = self.tests[self._turn]
            if self._stop_pair and not self.unscored:
                test.skip()
            if not test.stop:
                return
            self._pass_turn()
        self.state = PairState.DONE
