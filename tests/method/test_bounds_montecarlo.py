"""Monte Carlo validity of the bounds under data-dependent stopping (docs/design.md §9).

Each replication draws i.i.d. non-degradation outcomes with the true probability p, step by
step, and a stopping rule that sees the bound path decides when to stop; the reported bound at
the stopping time "misses" when it exceeds the truth. A (1 - alpha) confidence sequence must
keep the miss rate <= alpha; we allow 3 Monte Carlo standard errors. Where the miss probability
has a closed form (p ** n for the paper bound), the simulated rate must match it as well.

The simulation is streamed over t and vectorised over replications, so the stopping rules are
genuine (they never look ahead), and fixed seeds keep the test deterministic.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import pytest

from eraudit_core.method import _bounds as B
from tests.method._exceedance import first_exceedance_time

R = 20_000  # replications for the paper and common bounds
R_TOLERANT = 4_000  # replications for the failure-tolerant bound (budget 200)
PS = (0.9, 0.97, 0.995)
CONFIDENCES = (0.8, 0.95)
BUDGET = 100
MEASURED: dict[tuple, float] = {}  # filled as tests run; printed with `pytest -s`

StopRule = Callable[[int, np.ndarray], np.ndarray]


def _rng(*key: float) -> np.random.Generator:
    return np.random.default_rng([20240611, *(round(k * 10_000) for k in key)])


def _se(q: float, n: int) -> float:
    return math.sqrt(q * (1 - q) / n)


def _paper_values(confidence: float, horizon: int) -> np.ndarray:
    """L_t for t = 0..horizon from the library (index t)."""
    return np.array([B.lower_confidence_bound(t, confidence) for t in range(horizon + 1)])


def simulate_paper_bound(
    p: float, confidence: float, horizon: int, stop: StopRule, rng: np.random.Generator, n: int = R
) -> np.ndarray:
    """Reported paper bound at the stopping time of each replication.

    At step t the outcome is drawn, the bound is L_t while every step so far succeeded and 0
    from the first failure on (the engine's rule), and `stop(t, bound)` may end the replication.
    Replications still running at the horizon report their bound there.
    """
    L = _paper_values(confidence, horizon)
    alive = np.ones(n, dtype=bool)  # no failure yet
    stopped = np.zeros(n, dtype=bool)
    reported = np.zeros(n)
    for t in range(1, horizon + 1):
        alive &= rng.random(n) < p
        bound = np.where(alive, L[t], 0.0)
        now = ~stopped & (stop(t, bound) | (t == horizon))
        reported[now] = bound[now]
        stopped |= now
        if not (alive & ~stopped).any():
            break  # the rest have bound 0 forever; they report 0 whenever they stop
    return reported


def never(t: int, bound: np.ndarray) -> np.ndarray:
    return np.zeros(bound.shape, dtype=bool)


def at_target(target: float) -> StopRule:
    """The engine's target rule: stop as soon as L_t >= p* (a failure ends with bound 0)."""
    return lambda t, bound: bound >= target


def above(p: float) -> StopRule:
    """The optional-stopping adversary: stop the first time the bound exceeds the truth."""
    return lambda t, bound: bound > p


def _target_near(p: float) -> float:
    """A target just above the truth: p* = p + (1 - p) / 10."""
    return p + (1 - p) / 10


@pytest.fixture(scope="module", autouse=True)
def _print_measured_rates():
    """Lists the measured miss rates at the end of the module (visible with `pytest -s`)."""
    yield
    for key, miss in sorted(MEASURED.items(), key=str):
        print("MC miss rate", key, f"{miss:.5f}")


def _check(miss: float, alpha: float, closed: float | None, n: int, key: tuple) -> None:
    MEASURED[key] = miss
    assert miss <= alpha + 3 * _se(alpha, n), f"{key}: miss rate {miss:.4f} > alpha {alpha}"
    if closed is not None:
        tol = 3 * _se(closed, n) + 2 / n
        assert abs(miss - closed) <= tol, f"{key}: simulated {miss:.4f} vs closed form {closed:.4f}"


# -- paper bound, one generator ---------------------------------------------------------------
@pytest.mark.parametrize("confidence", CONFIDENCES)
@pytest.mark.parametrize("p", PS)
def test_paper_bound_stop_at_budget(p, confidence):
    alpha = 1 - confidence
    rep = simulate_paper_bound(p, confidence, BUDGET, never, _rng(p, confidence, 1))
    miss = float(np.mean(rep > p))
    # closed form: miss iff all 100 succeed and L_100 > p
    closed = p**BUDGET if B.lower_confidence_bound(BUDGET, confidence) > p else 0.0
    _check(miss, alpha, closed, R, ("paper", p, confidence, "budget 100"))


@pytest.mark.parametrize("confidence", CONFIDENCES)
@pytest.mark.parametrize("p", PS)
def test_paper_bound_stop_at_target_just_above_truth(p, confidence):
    alpha = 1 - confidence
    target = _target_near(p)
    n_star = B.required_successes(target, confidence)
    rep = simulate_paper_bound(p, confidence, n_star, at_target(target), _rng(p, confidence, 2))
    miss = float(np.mean(rep > p))
    # miss iff the first n* steps all succeed (then L_{n*} >= p* > p): p ** n*
    _check(miss, alpha, p**n_star, R, ("paper", p, confidence, f"target p*={target:.4f}"))


@pytest.mark.parametrize("confidence", CONFIDENCES)
@pytest.mark.parametrize("p", PS)
def test_paper_bound_worst_case_adversary_matches_closed_form(p, confidence):
    alpha = 1 - confidence
    T = first_exceedance_time(p, confidence)
    rep = simulate_paper_bound(p, confidence, 10 * T, above(p), _rng(p, confidence, 3))
    miss = float(np.mean(rep > p))
    # the adversary wins iff the first T steps succeed: p ** T <= alpha because L_T > p
    closed = p**T
    assert closed <= alpha
    _check(miss, alpha, closed, R, ("paper", p, confidence, f"adversary (T={T})"))


@pytest.mark.parametrize("p", PS)
def test_negative_control_paper_bound_at_alpha_030_labelled_095_fails(p):
    """The same harness that passes the real bound (confidence 0.95) fails a bound computed at
    alpha' = 0.30 but labelled 0.95, at every p of the real test."""
    confidence, alpha = 0.95, 0.05
    wrong = 0.70  # alpha' = 0.30
    T = first_exceedance_time(p, wrong)
    rep = simulate_paper_bound(p, wrong, 10 * T, above(p), _rng(p, 0.3, 10))
    miss = float(np.mean(rep > p))
    MEASURED[("NEGATIVE paper alpha'=0.30", p, confidence, f"adversary (T={T})")] = miss
    assert miss > alpha + 3 * _se(alpha, R)
    assert abs(miss - p**T) <= 3 * _se(p**T, R) + 2 / R  # and it is the closed form p**T


def test_the_check_has_power_against_an_invalid_bound():
    """Negative control: a bound built with 2 * alpha is caught by the same harness."""
    p, confidence = 0.97, 0.95
    alpha = 1 - confidence
    bad_confidence = 1 - 2 * alpha  # L'_t = (2 alpha) ** (1/t), too optimistic
    T = first_exceedance_time(p, bad_confidence)
    rep = simulate_paper_bound(p, bad_confidence, 10 * T, above(p), _rng(p, confidence, 9))
    miss = float(np.mean(rep > p))
    assert miss > alpha + 3 * _se(alpha, R)


# -- common bound over two generators ---------------------------------------------------------
GENERATOR_PAIRS = ((0.9, 0.97), (0.97, 0.995))


@pytest.mark.parametrize("confidence", CONFIDENCES)
@pytest.mark.parametrize(("p1", "p2"), GENERATOR_PAIRS)
@pytest.mark.parametrize("rule", ["budget", "target", "adversary"])
def test_common_bound_miss_rate(p1, p2, confidence, rule):
    alpha = 1 - confidence
    m = min(p1, p2)
    if rule == "budget":
        horizon, stop = BUDGET, never
        l_budget = B.lower_confidence_bound(BUDGET, confidence)
        closed = (p1 * p2) ** BUDGET if l_budget > m else 0.0
    elif rule == "target":
        target = _target_near(m)
        n_star = B.required_successes(target, confidence)
        horizon, stop, closed = n_star, at_target(target), (p1 * p2) ** n_star
    else:
        # both generators must pass T = first exceedance of min p for the common bound to miss
        T = first_exceedance_time(m, confidence)
        horizon, stop, closed = 10 * T, above(m), (p1 * p2) ** T
    key = (p1, p2, confidence, len(rule))
    r1 = simulate_paper_bound(p1, confidence, horizon, stop, _rng(*key, 1))
    r2 = simulate_paper_bound(p2, confidence, horizon, stop, _rng(*key, 2))
    common = np.array([B.common_bound([a, b]) for a, b in zip(r1, r2, strict=True)])
    np.testing.assert_array_equal(common, np.minimum(r1, r2))
    miss = float(np.mean(common > m))
    _check(miss, alpha, closed, R, ("common", (p1, p2), confidence, rule))


# -- failure-tolerant bound -------------------------------------------------------------------
# p = 0.5 is where the mixture bound is least conservative (its exact worst-case miss rate at
# confidence 0.95 and budget 200 is 0.015; at 0.9 only 0.0019), so that is where a wrong
# confidence level shows: the alpha' = 0.30 bound misses 0.10 of the time there.
TOLERANT_PS = (0.5, 0.8, 0.9, 0.97)
TOLERANT_BUDGET = 200
GRID_FLOOR = 0.5  # the bound never exceeds s / t, so s <= 0.5 t can never exceed p >= 0.5


@functools.cache
def _tolerant_grid(confidence: float) -> np.ndarray:
    """G[t, s] = failure_tolerant_lower_bound(s, t) for s > GRID_FLOOR * t (else 0)."""
    G = np.zeros((TOLERANT_BUDGET + 1, TOLERANT_BUDGET + 1))
    for t in range(1, TOLERANT_BUDGET + 1):
        for s in range(math.floor(GRID_FLOOR * t), t + 1):
            G[t, s] = B.failure_tolerant_lower_bound(s, t, confidence)
    return G


def _tolerant_exceeds(outcomes: np.ndarray, confidence: float, p: float) -> np.ndarray:
    """Per replication: does the running-max bound exceed p within the budget?

    The running max exceeds p at some t iff the point bound does, so the adversary that stops
    at the first exceedance wins exactly on these replications.
    """
    G = _tolerant_grid(confidence)
    S = np.cumsum(outcomes, axis=1)
    t = np.arange(1, outcomes.shape[1] + 1)
    # cells below the grid floor hold 0 and are truly <= s / t <= 0.5 <= p
    return (G[t[None, :], S] > p).any(axis=1)


def _tolerant_exact_miss(p: float, confidence: float) -> float:
    """Exact worst-case miss probability: P(the bound exceeds p at some t <= budget), by
    dynamic programming over the number of successes S_t with the exceeding cells absorbing."""
    G = _tolerant_grid(confidence)
    mass = np.zeros(TOLERANT_BUDGET + 1)
    mass[0] = 1.0
    miss = 0.0
    for t in range(1, TOLERANT_BUDGET + 1):
        new = np.zeros_like(mass)
        new[1:] += mass[:-1] * p
        new += mass * (1 - p)
        hit = G[t] > p
        miss += float(new[hit].sum())
        new[hit] = 0.0
        mass = new
    return miss


@pytest.mark.parametrize("confidence", CONFIDENCES)
@pytest.mark.parametrize("p", TOLERANT_PS)
def test_failure_tolerant_bound_under_stopping_adversary(p, confidence):
    alpha = 1 - confidence
    rng = _rng(p, confidence, 4)
    outcomes = rng.random((R_TOLERANT, TOLERANT_BUDGET)) < p
    exceeded = _tolerant_exceeds(outcomes, confidence, p)
    miss = float(exceeded.mean())
    exact = _tolerant_exact_miss(p, confidence)
    assert exact <= alpha
    _check(miss, alpha, exact, R_TOLERANT, ("tolerant", p, confidence, "adversary, budget 200"))

    # the grid shortcut agrees with the library's own trajectory on sample paths, including
    # the first time the bound exceeds p (where the adversary stops)
    G = _tolerant_grid(confidence)
    for row in list(np.flatnonzero(exceeded)[:5]) + list(np.flatnonzero(~exceeded)[:5]):
        traj = np.array(B.failure_tolerant_trajectory(outcomes[row].tolist(), confidence))
        assert (traj > p).any() == exceeded[row]
        S = np.cumsum(outcomes[row])
        point = G[np.arange(1, TOLERANT_BUDGET + 1), S]
        assert np.array_equal(np.flatnonzero(traj > p)[:1], np.flatnonzero(point > p)[:1])


def test_negative_control_tolerant_bound_at_alpha_030_labelled_095_fails():
    """The harness that passes the real failure-tolerant bound fails one computed at
    alpha' = 0.30 but labelled 0.95 (same p, budget, adversary and replications)."""
    p, alpha, wrong = 0.5, 0.05, 0.70
    outcomes = _rng(p, 0.3, 11).random((R_TOLERANT, TOLERANT_BUDGET)) < p
    miss = float(_tolerant_exceeds(outcomes, wrong, p).mean())
    MEASURED[("NEGATIVE tolerant alpha'=0.30", p, 0.95, "adversary, budget 200")] = miss
    assert miss > alpha + 3 * _se(alpha, R_TOLERANT)
    exact = _tolerant_exact_miss(p, wrong)
    assert abs(miss - exact) <= 3 * _se(exact, R_TOLERANT) + 2 / R_TOLERANT


def test_failure_tolerant_grid_respects_the_rate_ceiling():
    # the grid floor relies on bound(s, t) <= s / t; check it on every computed cell
    grid = _tolerant_grid(0.8)
    t = np.arange(TOLERANT_BUDGET + 1)[:, None]
    s = np.arange(TOLERANT_BUDGET + 1)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(t > 0, s / np.maximum(t, 1), 0.0)
    assert np.all(grid <= rate + 1e-12)
