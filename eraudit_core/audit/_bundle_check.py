"""An imported run checked before it is stored: every row a draw the engine could have made,
every verdict derived again from those draws (a bundle is evidence, not authority).

A bundle's manifest checksums only show that its files match each other: anyone can edit a
table and recompute them, and anyone with the source can recompute the pair rows too. So the
bundle is checked the way `audit-table` checks a table, then replayed:

* rows: ids are non-empty strings, every text is free of control characters, every probability
  (steps, canonical questions, cached scores) a finite number in [0, 1], every D finite;
* draws: a step key (pair, stage, generator, t) appears once; stage is 1 or 2; the search steps
  of a pair are t = 1..n (n within the search budget and equal to the pair's n_search); per test
  generator t runs 1..n without gaps or repeats, the generator is one of the pair's own, n is at
  most its recorded pool size and the test budget and equals what the pair records; test texts
  are distinct within the pair (up to case and punctuation, as the engine requires) and none is
  a search text; when the bundle carries the pair's paraphrases, every test text is one of the
  generator's pool;
* verdicts: D, the counterexample flag, each generator's test and stop, the pair's verdict,
  bounds, counts, stage and max D are derived with the engine's own code (`degradation_score`,
  `GeneratorTest`, `pair_verdict`; docs/evidence.md) and must match what the bundle says.

Every refusal names the bundle member (`run_steps.parquet`, ...), the row (counted from 1) and
the field.

The row and draw checks live in `_bundle_rows.py` and the cell readers they share with the
replay in `_bundle_cells.py`; this module derives the verdicts again. Every name stays
importable from here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from eraudit_core.audit._bundle_cells import (
    TOLERANCE,
    _counts,
    _finite,
    _generators,
    _num,
    _same,
    _show,
)
from eraudit_core.audit._bundle_cells import _is_null as _is_null
from eraudit_core.audit._bundle_cells import _whole as _whole
from eraudit_core.audit._bundle_rows import (
    PAIR_COLUMNS,
    PROBABILITIES,
    STEP_COLUMNS,
    STEP_COLUMNS_ALL,
    check_bundle_rows,
)
from eraudit_core.audit._bundle_rows import _check_done_run_is_whole as _check_done_run_is_whole
from eraudit_core.audit._bundle_rows import _check_ids as _check_ids
from eraudit_core.audit._bundle_rows import _check_pair_draws as _check_pair_draws
from eraudit_core.audit._bundle_rows import _check_probabilities as _check_probabilities
from eraudit_core.audit._bundle_rows import _check_step_rows as _check_step_rows
from eraudit_core.audit._bundle_rows import _check_text_cells as _check_text_cells
from eraudit_core.audit._bundle_rows import _need_columns as _need_columns
from eraudit_core.audit._bundle_rows import _pools as _pools
from eraudit_core.audit._config import AuditConfig
from eraudit_core.audit._degradation import (
    degradation_denominator,
    degradation_score,
    monitored_gain,
)
from eraudit_core.audit._pair_audit import GeneratorTest, PairAudit, PairVerdict
from eraudit_core.errors import InputError

__all__ = [
    "PAIR_COLUMNS",
    "PROBABILITIES",
    "STEP_COLUMNS",
    "STEP_COLUMNS_ALL",
    "TOLERANCE",
    "bundle_config",
    "check_bundle_rows",
    "check_run_verdicts",
    "replay_pair_verdict",
]


def bundle_config(
    runs: pd.DataFrame, run_id: str | None = None, *, source: str = "bundle"
) -> AuditConfig:
    """The config of run `run_id` in a `runs` table (its only row when `run_id` is None),
    through `AuditConfig`'s validator; InputError names the field."""
    rows = runs if run_id is None else runs[runs["run_id"] == run_id]
    if len(rows) != 1:
        raise InputError(
            f"{source}: runs.parquet: holds {len(rows)} rows for run {run_id!r}, not one"
        )
    raw = rows["config"].iloc[0]
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        raise InputError(f"{source}: runs.parquet row 1: field config is not JSON") from None
    if not isinstance(data, Mapping):
        raise InputError(f"{source}: runs.parquet row 1: field config must be a JSON object")
    try:
        return AuditConfig.from_dict(data)
    except InputError as exc:
        raise InputError(f"{source}: runs.parquet row 1: field config: {exc}") from None


def replay_pair_verdict(
    pair: Mapping[Any, Any],
    steps: pd.DataFrame,
    config: AuditConfig,
    tests_out: list[GeneratorTest] | None = None,
) -> tuple[PairVerdict, int]:
    """A pair's verdict and counterexample count, derived from its canonical probabilities and
    its steps exactly as the engine derives them; InputError when the steps contradict
    themselves (a D that is not (p_pre - p_post) / den, a flag that is not D > epsilon with the
    run's minimum drop, a test that goes on after its stop or ends before it). When `tests_out`
    is a list, each generator's replayed test is appended to it.

    Steps under a stage other than 1 or 2, or a generator the pair does not list, are refused
    by `check_bundle_rows`; here they would simply not count, so call that first.
    """
    pid = pair["pair_id"]
    gain = monitored_gain(_finite(pair, "p_pre_monitored"), _finite(pair, "p_post_monitored"))
    den = degradation_denominator(gain, config.k)
    for row in steps.to_dict("records"):
        p_pre, p_post = _finite(row, "p_pre"), _finite(row, "p_post")
        d = degradation_score(p_pre, p_post, den)
        if not math.isclose(d, float(row["d"]), rel_tol=1e-9, abs_tol=TOLERANCE):
            raise InputError(
                f"pair {pid}, stage {row['stage']} step {row['t']}: stored D {row['d']} is not "
                f"(p_pre - p_post) / den = {d}"
            )
        if bool(row["is_counterexample"]) != _counts(d, p_pre - p_post, config):
            raise InputError(
                f"pair {pid}, stage {row['stage']} step {row['t']}: field is_counterexample "
                f"does not follow from D {d}, epsilon {config.epsilon} and min-drop "
                f"{config.min_drop}"
            )
    audit = PairAudit(
        config,
        [(str(g.get("generator")), int(g.get("available") or 0)) for g in _generators(pair)],
    )
    search = steps[steps["stage"] == 1]
    for d, a, b in zip(search["d"], search["p_pre"], search["p_post"], strict=True):
        audit.search(float(d), float(a) - float(b))
    audit.end_search()
    for test in audit.tests:
        mine = steps[(steps["stage"] == 2) & (steps["generator"] == test.generator)]
        for row in mine.sort_values("t").to_dict("records"):
            if audit.current is not test:
                raise InputError(
                    f"pair {pid}, generator {test.generator}: step {row['t']} comes after the "
                    f"test stopped ({test.stop})"
                )
            audit.test(float(row["d"]), float(row["p_pre"]) - float(row["p_post"]))
        if audit.current is test:
            raise InputError(
                f"pair {pid}, generator {test.generator}: the steps end after {test.n} draws, "
                "before the test reached a stop, yet the pair is finished"
            )
    if tests_out is not None:
        tests_out.extend(audit.tests)
    return audit.verdict(), audit.n_counterexamples


def check_run_verdicts(frames: Mapping[str, pd.DataFrame], source: str) -> AuditConfig:
    """Refuse a bundle whose rows are not engine draws (`check_bundle_rows`) or whose pairs'
    verdicts, bounds and counts do not follow from its own steps."""
    config = bundle_config(frames["runs"], source=source)
    check_bundle_rows(frames, config, source)
    steps = frames["run_steps"]
    by_pair = dict(tuple(steps.groupby("pair_id", sort=False))) if not steps.empty else {}
    for i, pair in enumerate(frames["run_pairs"].to_dict("records")):
        where = f"{source}: run_pairs.parquet row {i + 1} (pair {pair['pair_id']})"
        mine = by_pair.get(pair["pair_id"], steps.iloc[0:0])
        tests: list[GeneratorTest] = []
        try:
            verdict, n_cex = replay_pair_verdict(pair, mine, config, tests)
        except (InputError, ValueError, TypeError, KeyError) as exc:
            raise InputError(f"{source}: the steps do not add up: {exc}") from None
        stored = (pair["status"], _num(pair["bound"]))
        if stored[0] != verdict.status or not _same(stored[1], verdict.bound):
            raise InputError(
                f"{source}: verdicts do not follow from the scores: pair {pair['pair_id']} says "
                f"{stored[0]} {_show(stored[1])}, its steps give {verdict.status} "
                f"{_show(verdict.bound)}"
            )
        s1 = mine[mine["stage"] == 1] if not mine.empty else mine
        n_search_cex = n_cex - sum(g.n_counterexamples for g in tests)
        gain = monitored_gain(float(pair["p_pre_monitored"]), float(pair["p_post_monitored"]))
        derived: tuple[tuple[str, float | None], ...] = (
            ("bound_common", verdict.bound_common),
            ("bound_tolerant", verdict.bound_tolerant),
            ("n_counterexamples", n_cex),
            ("n_search", len(s1)),
            ("n_test", sum(g.n for g in tests)),
            ("max_d", float(mine["d"].astype(float).max()) if len(mine) else None),
            ("gain", gain),
            ("denominator", degradation_denominator(gain, config.k)),
            ("stage", 1 if n_search_cex else (2 if any(g.n for g in tests) else None)),
        )
        for name, want in derived:
            if name not in pair and name not in ("bound_common", "bound_tolerant"):
                continue  # an older bundle without the column
            if not _same(_num(pair.get(name)), want):
                raise InputError(
                    f"{source}: verdicts do not follow from the scores: pair {pair['pair_id']} "
                    f"field {name} says {_show(_num(pair.get(name)))}, its steps give "
                    f"{_show(want)}"
                )
        for info, test in zip(_generators(pair), tests, strict=True):
            for name, want_v in (
                ("n", test.n),
                ("n_counterexamples", test.n_counterexamples),
                ("stop", test.stop),
            ):
                if name in info and info[name] != want_v:
                    raise InputError(
                        f"{where}: field generators ({test.generator}): {name} says "
                        f"{info[name]!r}, its steps give {want_v!r}"
                    )
    return config
