"""An imported run's verdicts, recomputed from its own steps (issue 22: a bundle is evidence,
not authority).

A bundle's manifest checksums only show that its files match each other: anyone can edit a
table and recompute them. So before a run is stored, its config goes through the validator a
new run uses, and every pair's degradation scores, verdict and bounds are derived again from
the pair's canonical probabilities and steps (DESIGN.md §4) with the engine's own code
(`degradation_score`, `GeneratorTest`, `pair_verdict`). A bundle whose stored verdicts do not
follow is refused, naming the pair and both readings.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping
from typing import Any

import pandas as pd

from eraudit_core.audit._config import AuditConfig
from eraudit_core.audit._degradation import (
    degradation_denominator,
    degradation_score,
    is_counterexample,
    monitored_gain,
)
from eraudit_core.audit._verdict import PairVerdict, pair_verdict
from eraudit_core.errors import InputError

# Stored floats are compared with this absolute tolerance (Parquet keeps doubles exactly; the
# slack only absorbs a different summation order).
TOLERANCE = 1e-9


def bundle_config(runs: pd.DataFrame, source: str) -> AuditConfig:
    """The run's config through `AuditConfig`'s validator; InputError names the field."""
    raw = runs["config"].iloc[0]
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        raise InputError(f"{source}: runs.parquet: field config is not JSON") from None
    if not isinstance(data, Mapping):
        raise InputError(f"{source}: runs.parquet: field config must be a JSON object")
    try:
        return AuditConfig.from_dict(data)
    except InputError as exc:
        raise InputError(f"{source}: runs.parquet: field config: {exc}") from None


def replay_pair_verdict(
    pair: Mapping[Hashable, Any], steps: pd.DataFrame, config: AuditConfig
) -> tuple[PairVerdict, int]:
    """A pair's verdict and counterexample count, derived from its canonical probabilities and
    its steps exactly as the engine derives them; InputError when the steps contradict
    themselves (a D that is not (p_pre - p_post) / den, a flag that is not D > epsilon, a test
    that goes on after its stop). This is the one place to teach new verdict rules (a minimum
    drop) to the import check."""
    pid = pair["pair_id"]
    gain = monitored_gain(_finite(pair, "p_pre_monitored"), _finite(pair, "p_post_monitored"))
    den = degradation_denominator(gain, config.k)
    for row in steps.to_dict("records"):
        d = degradation_score(_finite(row, "p_pre"), _finite(row, "p_post"), den)
        if not math.isclose(d, float(row["d"]), rel_tol=1e-9, abs_tol=TOLERANCE):
            raise InputError(
                f"pair {pid}, stage {row['stage']} step {row['t']}: stored D {row['d']} is not "
                f"(p_pre - p_post) / den = {d}"
            )
        if bool(row["is_counterexample"]) != is_counterexample(d, config.epsilon):
            raise InputError(
                f"pair {pid}, stage {row['stage']} step {row['t']}: field is_counterexample "
                f"does not follow from D {d} and epsilon {config.epsilon}"
            )
    search = steps[steps["stage"] == 1]
    n_search_cex = int(sum(is_counterexample(float(d), config.epsilon) for d in search["d"]))
    tests = []
    stop_pair = n_search_cex > 0 and not config.continue_after_counterexample
    for info in _generators(pair):
        test = config.generator_test(str(info.get("generator")), int(info.get("available") or 0))
        tests.append(test)
        if stop_pair:
            test.skip()
        mine = steps[(steps["stage"] == 2) & (steps["generator"] == test.generator)]
        for row in mine.sort_values("t").to_dict("records"):
            if test.stop:
                raise InputError(
                    f"pair {pid}, generator {test.generator}: step {row['t']} comes after the "
                    f"test stopped ({test.stop})"
                )
            test.record(not is_counterexample(float(row["d"]), config.epsilon))
        if test.n_counterexamples and not config.continue_after_counterexample:
            stop_pair = True
    verdict = pair_verdict(n_search_cex, tests, target=config.target, tv_delta=config.tv_delta)
    return verdict, n_search_cex + sum(g.n_counterexamples for g in tests)


def check_run_verdicts(frames: Mapping[str, pd.DataFrame], source: str) -> AuditConfig:
    """Refuse a bundle whose pairs' verdicts or bounds do not follow from its own steps."""
    config = bundle_config(frames["runs"], source)
    steps = frames["run_steps"]
    by_pair = dict(tuple(steps.groupby("pair_id", sort=False))) if not steps.empty else {}
    for pair in frames["run_pairs"].to_dict("records"):
        mine = by_pair.get(pair["pair_id"], steps.iloc[0:0])
        try:
            verdict, n_cex = replay_pair_verdict(pair, mine, config)
        except (InputError, ValueError, TypeError, KeyError) as exc:
            raise InputError(f"{source}: the steps do not add up: {exc}") from None
        stored = (pair["status"], _num(pair["bound"]))
        if stored[0] != verdict.status or not _same(stored[1], verdict.bound):
            raise InputError(
                f"{source}: verdicts do not follow from the scores: pair {pair['pair_id']} says "
                f"{stored[0]} {_show(stored[1])}, its steps give {verdict.status} "
                f"{_show(verdict.bound)}"
            )
        for name, want in (
            ("bound_common", verdict.bound_common),
            ("bound_tolerant", verdict.bound_tolerant),
            ("n_counterexamples", n_cex),
        ):
            if not _same(_num(pair.get(name)), want):
                raise InputError(
                    f"{source}: verdicts do not follow from the scores: pair {pair['pair_id']} "
                    f"field {name} says {_show(_num(pair.get(name)))}, its steps give "
                    f"{_show(want)}"
                )
    return config


def _generators(pair: Mapping[Hashable, Any]) -> list[dict[str, Any]]:
    raw = pair.get("generators")
    try:
        gens = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        raise InputError(f"pair {pair['pair_id']}: field generators is not JSON") from None
    if gens is None:
        return []
    if not isinstance(gens, list) or not all(isinstance(g, dict) for g in gens):
        raise InputError(f"pair {pair['pair_id']}: field generators must be a list of objects")
    return gens


def _finite(row: Mapping[Hashable, Any], key: str) -> float:
    value = _num(row.get(key))
    if value is None or not math.isfinite(value):
        raise InputError(f"pair {row.get('pair_id')}: field {key} must be a finite number")
    return value


def _num(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=TOLERANCE)


def _show(x: float | None) -> str:
    return "with no bound" if x is None else f"{x:.3g}"
