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

from eraudit_core.bundles._cells import (
    TOLERANCE,
    _counts,
    _finite,
    _generators,
    _is_null,
    _num,
    _same,
    _show,
    _whole,
)
from eraudit_core.bundles._rows import (
    _need_columns,
    check_bundle_rows,
)
from eraudit_core.errors import InputError
from eraudit_core.method import (
    AuditConfig,
    GeneratorTest,
    PairAudit,
    PairVerdict,
    degradation_denominator,
    degradation_score,
    is_amplified,
    monitored_gain,
)
from eraudit_core.runs import table_query
from eraudit_core.store import CONTENT_COLUMNS, pairs_content_digest
from eraudit_core.types import Query


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
        derived += (
            ("amplified", is_amplified(gain, config.k)),
            ("target_reached", verdict.target_reached),
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
        _check_worst(pair, mine, where)
        _check_step_bounds(pair, mine, config, where)
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


# -- what a report shows, derived again ----------------------------------------------------------
WORST_FIELDS = (
    ("worst_text", "text"),
    ("worst_p_pre", "p_pre"),
    ("worst_p_post", "p_post"),
    ("worst_drop", None),
)


def _check_worst(pair: Mapping[Any, Any], steps: pd.DataFrame, where: str) -> None:
    """The worst rewording a pair names is one of its steps with the largest D, quoted as
    that step reads (text, p_pre, p_post, drop); none when the pair has no steps."""
    named = (pair.get("worst_stage"), pair.get("worst_generator"), pair.get("worst_t"))
    if "worst_stage" not in pair:
        return  # an older bundle without the evidence columns
    if steps.empty:
        if any(not _is_null(v) for v in named) or not _is_null(pair.get("worst_text")):
            raise InputError(f"{where}: field worst_text names a rewording, the pair has no steps")
        return
    top = float(steps["d"].astype(float).max())
    hit = steps[
        (steps["stage"].map(_whole) == _whole(named[0]))
        & (steps["generator"] == named[1])
        & (steps["t"].map(_whole) == _whole(named[2]))
    ]
    if hit.empty or not _same(float(hit["d"].iloc[0]), top):
        raise InputError(
            f"{where}: fields worst_stage, worst_generator, worst_t name stage {named[0]!r} "
            f"{named[1]!r} step {named[2]!r}, not a step with the pair's largest D ({top:.6g})"
        )
    step = hit.iloc[0]
    for field, col in WORST_FIELDS:
        want = float(step["p_pre"]) - float(step["p_post"]) if col is None else step[col]
        got = pair.get(field)
        same = got == want if isinstance(want, str) else _same(_num(got), _num(want))
        if field == "worst_drop" and _is_null(got):
            continue  # a bundle from before the drop was stored
        if not same:
            shown = repr(got)[:80]
            raise InputError(
                f"{where}: field {field} says {shown}, the worst step (stage {named[0]}, "
                f"{named[1]}, step {named[2]}) gives {repr(want)[:80]}"
            )


def _check_step_bounds(
    pair: Mapping[Any, Any], steps: pd.DataFrame, config: AuditConfig, where: str
) -> None:
    """Each test step's bound and failure-tolerant bound are the test's after that draw
    (`GeneratorTest.record`); a search step carries none."""
    if steps.empty or "bound" not in steps.columns:
        return
    for info in _generators(pair):
        test = GeneratorTest.for_config(
            config, str(info.get("generator")), int(info.get("available") or 0)
        )
        mine = steps[(steps["stage"] == 2) & (steps["generator"] == test.generator)]
        for row in mine.sort_values("t").to_dict("records"):
            if test.stop:
                break  # refused by the replay
            drop = float(row["p_pre"]) - float(row["p_post"])
            test.record(not _counts(float(row["d"]), drop, config))
            for col, want in (("bound", test.bound), ("bound_tolerant", test.bound_tolerant)):
                if col in row and not _same(_num(row[col]), want):
                    raise InputError(
                        f"{where}: run_steps.parquet (generator {test.generator}, step "
                        f"{row['t']}): field {col} says {_show(_num(row[col]))}, the test "
                        f"gives {_show(want)} after that draw"
                    )
    for row in steps[steps["stage"] == 1].to_dict("records"):
        for col in ("bound", "bound_tolerant"):
            if col in row and not _is_null(row[col]):
                raise InputError(
                    f"{where}: run_steps.parquet (search step {row['t']}): field {col} says "
                    f"{row[col]!r}; a search step carries no bound"
                )


def check_bundle_claims(frames: Mapping[str, pd.DataFrame], source: str) -> None:
    """The run's benchmark, pairs and questions are the ones the bundle carries: the
    benchmark under the run's id with the content digest its pairs give, every pair id of
    every member one of its pairs, every result's questions its pair's questions. A run of a
    score table (no benchmark) has its questions checked against its cached scores instead:
    each canonical probability is the score cached for that question text under the run's
    checkpoints."""
    run = frames["runs"].iloc[0]
    bid = run.get("benchmark_id")
    bench, pairs = frames["benchmarks"], frames["pairs"]
    _need_columns(
        frames["score_cache"], "score_cache", ("fingerprint", "prompt_hash", "p_true"), source
    )
    if not bench.empty:
        _need_columns(bench, "benchmarks", ("benchmark_id",), source)
        _need_columns(pairs, "pairs", ("benchmark_id", *CONTENT_COLUMNS), source)
    if not frames["paraphrases"].empty:
        _need_columns(
            frames["paraphrases"],
            "paraphrases",
            ("pair_id", "role", "generator", "idx", "text"),
            source,
        )
    if not isinstance(bid, str) or not bid.strip():
        if not bench.empty or not pairs.empty:
            raise InputError(
                f"{source}: runs.parquet row 1: field benchmark_id is empty, yet the bundle "
                "carries a benchmark"
            )
        _check_canonical_scores(frames, source, {})
        return
    if bench.empty:
        return  # matched against the store's benchmark by content digest on import
    ids = [str(x) for x in bench["benchmark_id"]]
    if ids != [bid]:
        raise InputError(
            f"{source}: benchmarks.parquet row 1: field benchmark_id {ids[0] if ids else None!r}"
            f" is not the run's benchmark {bid!r} (runs.parquet row 1)"
        )
    for i, value in enumerate(pairs["benchmark_id"]):
        if value != bid:
            raise InputError(
                f"{source}: pairs.parquet row {i + 1}: field benchmark_id {value!r} is not the "
                f"run's benchmark {bid!r}"
            )
    claimed = bench["content_digest"].iloc[0] if "content_digest" in bench else None
    if isinstance(claimed, str) and claimed:
        filled = pairs.assign(
            story_title=pairs["story_title"].where(pairs["story_title"].notna(), "")
        )
        digest = pairs_content_digest(filled[list(CONTENT_COLUMNS)].itertuples(index=False))
        if digest != claimed:
            raise InputError(
                f"{source}: benchmarks.parquet row 1: field content_digest {claimed} is not the "
                f"digest of pairs.parquet ({digest})"
            )
    paras = frames["paraphrases"]
    for keys, what in (
        (["pair_id", "text"], "text must be unique per pair"),
        (
            ["pair_id", "role", "generator", "idx"],
            "idx must be unique per pair, role and generator",
        ),
    ):
        if not paras.empty and set(keys) <= set(paras.columns):
            dup = paras.duplicated(keys, keep="first").to_numpy().nonzero()[0]
            if len(dup):
                raise InputError(
                    f"{source}: paraphrases.parquet row {dup[0] + 1}: field {what} "
                    f"(pair {paras['pair_id'].iloc[dup[0]]})"
                )
    known = {str(r["pair_id"]): r for r in pairs.to_dict("records")}
    for member in ("run_pairs", "run_steps", "paraphrases"):
        for i, pid in enumerate(frames[member].get("pair_id", [])):
            if str(pid) not in known:
                raise InputError(
                    f"{source}: {member}.parquet row {i + 1}: field pair_id {pid!r} is not a "
                    f"pair of benchmark {bid} (pairs.parquet)"
                )
    for i, pair in enumerate(frames["run_pairs"].to_dict("records")):
        truth = known[str(pair["pair_id"])]
        for field in ("monitored_question", "hidden_question"):
            if field in pair and not _is_null(pair[field]) and pair[field] != truth[field]:
                raise InputError(
                    f"{source}: run_pairs.parquet row {i + 1}: field {field} is not pair "
                    f"{pair['pair_id']}'s {field.split('_')[0]} question in pairs.parquet: "
                    f"{str(pair[field])[:80]!r}"
                )
    _check_canonical_scores(frames, source, known)


def _check_canonical_scores(
    frames: Mapping[str, pd.DataFrame], source: str, pairs: Mapping[str, Mapping[Any, Any]]
) -> None:
    """Each canonical probability of a result is the score the bundle caches for that
    question text under the run's pre or post checkpoint (asked as a score table asks it, or
    with the benchmark pair's options as a model run does): a question text, a probability or
    the pre/post fingerprints edited after the run are refused (swapped fingerprints are named
    when the scores say so)."""
    run = frames["runs"].iloc[0]
    cache = frames["score_cache"]
    scores = {
        (str(f), str(h)): float(p)
        for f, h, p in zip(cache["fingerprint"], cache["prompt_hash"], cache["p_true"], strict=True)
    }
    fps = {
        "pre": str(run.get("pre_fingerprint") or ""),
        "post": str(run.get("post_fingerprint") or ""),
    }
    for i, pair in enumerate(frames["run_pairs"].to_dict("records")):
        pid = str(pair["pair_id"])
        for role in ("monitored", "hidden"):
            text = pair.get(f"{role}_question")
            if _is_null(text):
                continue
            hashes = [table_query(pid, str(text), role).prompt_hash]
            truth = pairs.get(pid)
            if truth is not None:
                options = (truth[f"{role}_true"], truth[f"{role}_false"])
                hashes.append(Query(pid, str(text), *options).prompt_hash)
            for side, other in (("pre", "post"), ("post", "pre")):
                want = _num(pair.get(f"p_{side}_{role}"))
                if want is None:
                    continue
                got = [scores.get((fps[side], h)) for h in hashes]
                if any(g is not None and _same(g, want) for g in got):
                    continue
                swapped = any(
                    (g := scores.get((fps[other], h))) is not None and _same(g, want)
                    for h in hashes
                )
                hint = (
                    f"; it is the score under the {other} fingerprint: pre_fingerprint and "
                    "post_fingerprint (runs.parquet row 1) look swapped"
                    if swapped and fps[side] != fps[other]
                    else ""
                )
                raise InputError(
                    f"{source}: run_pairs.parquet row {i + 1}: field p_{side}_{role} "
                    f"{_show(want)}: score_cache.parquet holds no such {side} score for the "
                    f"pair's {role} question {str(text)[:60]!r}{hint}"
                )
