"""Stage 2 for one test generator: the sequential test as a small state machine (pure).

docs/design.md §4, paper Algorithm 2. Paraphrases x_1, x_2, ... are drawn at random from the
generator's pool; after each one the test records whether it degraded (D > epsilon) and
updates two bounds on p_g, the chance that a paraphrase drawn from the pool is non-degraded:

* the paper bound L_t = alpha**(1/t) after t non-degraded draws in a row, 0 from the first
  counterexample on;
* the failure-tolerant bound (beyond the paper), the running maximum of the beta-binomial
  mixture confidence sequence, which survives a few counterexamples.

Both are confidence sequences, so they stay valid whatever rule decides when to stop. The
rules here: a counterexample (unless every generator must run to its own stop), the target
(n* successes, when the user asked to stop early there), the budget, or the end of the pool.

Keeping this free of the store and the models is what lets the Monte Carlo tests drive the very
code the engine runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eraudit_core.audit._bounds import failure_tolerant_lower_bound, lower_confidence_bound

# Why a generator stopped; "" while it is still running.
STOPS = (
    "counterexample",
    "target reached",
    "budget",
    "last paraphrase",
    "no paraphrases",
    "not run",
)


@dataclass
class GeneratorTest:
    """The running sequential test of one generator on one pair.

    `available` is the pool size M; at most min(budget, M) paraphrases are drawn. With
    `stop_at_target`, the test stops once L_t >= p* (after n* successes). With
    `run_to_stop`, a counterexample does not stop it (the paper bound is then 0, the
    failure-tolerant bound keeps counting).
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
    stop: str = ""

    def __post_init__(self) -> None:
        if self.available == 0 and not self.stop:
            self.stop = "no paraphrases"

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
        """The pair stopped before this generator's turn (default mode, earlier counterexample)."""
        if not self.stop:
            self.stop = "not run"

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
            self.stop = "counterexample"
        elif self.n_star is not None and self.n_counterexamples == 0 and self.n >= self.n_star:
            self.stop = "target reached"
        elif self.n >= self.limit:
            self.stop = "budget" if self.n >= self.budget else "last paraphrase"

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
