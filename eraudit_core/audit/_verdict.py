"""A pair's verdict and bounds from its stage-1 result and its generators' tests (pure).

docs/design.md §4. One vocabulary everywhere (engine, store, CLI JSON, pages, report, exports):

* `degraded`: a counterexample was found (stage 1 or 2); the paper bound is 0;
* `inconclusive`: not degraded, but some test generator of the run has nothing tested (an
  empty pool, or the pair stopped before its turn); its bound would be L_0 = 0;
* `certified`: no counterexample, every test generator tested, a target p* was set, and the
  reported bound (after the total-variation relaxation) is >= p*;
* `passed`: no counterexample and every generator tested, but no target was set or the bound
  is below p*. It is shown with its bound, never as a certificate.

Bounds. The common bound min_g L_g covers min_g p_g (paper Theorem 2) only if every generator
of the run is in the minimum: a minimum over the generators that happened to run can miss
badly (a generator with p = 0.3 left out after another's counterexample). So the pair-level
failure-tolerant bound is reported only when every test generator was tested to its stop,
else None. Every pair-level bound is relaxed to max(0, L - delta) for distributions within
total variation delta of the generators' mixture.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eraudit_core.audit._bounds import common_bound, tv_relaxed_bound
from eraudit_core.audit._sequential import GeneratorTest
from eraudit_core.types import PAIR_STATUSES

__all__ = ["PAIR_STATUSES", "PairVerdict", "pair_verdict"]


@dataclass(frozen=True)
class PairVerdict:
    """What a pair's audit concludes. `bound_common` is before the TV relaxation."""

    status: str
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
    """The verdict of one pair (docs/design.md §4): degraded > inconclusive > certified/passed."""
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
        status = "degraded"
    elif not all_tested:
        status = "inconclusive"
    elif target is not None and bound >= target:
        status = "certified"
    else:
        status = "passed"
    reached = all_tested and all(g.stop == "target reached" for g in tests)
    return PairVerdict(status, bound_common, bound, tolerant, reached)
