"""An imported bundle's rows checked as draws the engine could have made, before any verdict
is derived again from them (`_bundle_check.py` describes the whole check).

Its own module because this is the shape of the evidence, not its meaning: ids, texts and
probabilities cell by cell, each step key once, search and test draws numbered 1..n within the
budgets and the pair's own generators and pools, test texts fresh within a pair, and a done
run holding a result for every pair it started. Every refusal names the bundle member, the row
(counted from 1) and the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.bundles._cells import _generators, _is_null, _num, _whole
from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig
from eraudit_core.paraphrase import normalize_text
from eraudit_core.runs import MAX_LABEL_CHARS, MAX_NAME_CHARS
from eraudit_core.text import check_no_control
from eraudit_core.types import RunStatus, Verdict

STEP_COLUMNS = ("pair_id", "stage", "generator", "t", "text", "p_pre", "p_post", "d")
STEP_COLUMNS_ALL = (*STEP_COLUMNS, "is_counterexample")
PAIR_COLUMNS = ("pair_id", "status", "p_pre_monitored", "p_post_monitored", "generators")
# (member, column) pairs that hold probabilities; NULL allowed where the engine stores none
PROBABILITIES = {
    "run_steps": (("p_pre", False), ("p_post", False)),
    "run_pairs": (
        ("p_pre_monitored", False),
        ("p_post_monitored", False),
        ("p_pre_hidden", True),
        ("p_post_hidden", True),
        ("worst_p_pre", True),
        ("worst_p_post", True),
    ),
    "score_cache": (("p_true", False),),
}


# The longest a cell may be: a label and a checkpoint name as at run creation, an id as a
# name, any other text (a question with its passage, a prompt, a JSON record) far above any a
# real run writes but far below what fills a page or memory.
MAX_CELL_CHARS = {("runs", "label"): MAX_LABEL_CHARS, ("runs", "pre_name"): MAX_NAME_CHARS}
MAX_ID_CHARS = MAX_NAME_CHARS
MAX_TEXT_CHARS = 1_000_000
ID_COLUMNS = ("run_id", "pair_id", "generator", "benchmark_id", "fingerprint", "role", "status")
# (member, column, whole number) cells that count or time something: never negative, never
# inf; NULL allowed (an older bundle, a pair without a stage).
COUNT_COLUMNS = (
    ("runs", "n_pairs", True),
    ("runs", "queries_scored", True),
    ("runs", "queries_cached", True),
    ("runs", "active_seconds", False),
    ("run_pairs", "pair_index", True),
    ("run_pairs", "stage", True),
    ("run_pairs", "n_counterexamples", True),
    ("run_pairs", "n_search", True),
    ("run_pairs", "n_test", True),
    ("run_pairs", "worst_stage", True),
    ("run_pairs", "worst_t", True),
    ("run_steps", "idx", True),
    ("pairs", "pair_index", True),
    ("paraphrases", "idx", True),
    ("benchmarks", "n_pairs", True),
)
# cells that hold JSON: every string inside (keys included) is checked like a text cell
JSON_COLUMNS = (
    ("runs", "config"),
    ("runs", "provenance"),
    ("runs", "source"),
    ("runs", "traffic"),
    ("runs", "phase"),
    ("runs", "imported_from"),
    ("run_pairs", "generators"),
    ("pairs", "extra"),
    ("paraphrases", "provenance"),
    ("checkpoints", "details"),
)


def check_bundle_cells(frames: Mapping[str, pd.DataFrame], source: str) -> None:
    """Every cell of every member is one a run of this tool could hold: the run's status one
    of RUN_STATUSES, texts within their length caps and free of control characters (inside
    JSON cells too, where an escape such as \\u001b decodes to one), counts whole numbers
    >= 0 and seconds finite and >= 0. InputError names member, row and field."""
    runs = frames["runs"]
    for i, status in enumerate(runs.get("status", [])):
        if status not in tuple(RunStatus):
            raise InputError(
                f"{source}: runs.parquet row {i + 1}: field status must be one of "
                f"{', '.join(RunStatus)}, got {str(status)[:80]!r}"
            )
    for member, frame in frames.items():
        for col in frame.columns:
            cap = MAX_CELL_CHARS.get((member, "pre_name" if col == "post_name" else col))
            cap = cap or (MAX_ID_CHARS if col in ID_COLUMNS else MAX_TEXT_CHARS)
            for i, value in enumerate(frame[col]):
                if isinstance(value, str) and len(value) > cap:
                    raise InputError(
                        f"{source}: {member}.parquet row {i + 1}: field {col} is {len(value):,} "
                        f"characters long, more than the {cap:,} allowed"
                    )
    for member, col, whole in COUNT_COLUMNS:
        counted = frames.get(member)
        if counted is None or col not in counted.columns:
            continue
        for i, value in enumerate(counted[col]):
            if _is_null(value):
                continue
            number = _whole(value) if whole else _num(value)
            if (
                isinstance(value, (bool, np.bool_))
                or number is None
                or not (math.isfinite(number) and number >= 0)
            ):
                what = "a whole number >= 0" if whole else "a finite number >= 0"
                raise InputError(
                    f"{source}: {member}.parquet row {i + 1}: field {col} must be {what}, got "
                    f"{value!r}"
                )
    for member, col in JSON_COLUMNS:
        held = frames.get(member)
        if held is None or col not in held.columns:
            continue
        for i, value in enumerate(held[col]):
            if not isinstance(value, str) or value.strip()[:1] not in ("{", "["):
                continue
            try:
                data = json.loads(value)
            except ValueError:
                if (member, col) == ("runs", "source"):
                    continue  # a table run's source is text, checked as text
                raise InputError(
                    f"{source}: {member}.parquet row {i + 1}: field {col} is not JSON"
                ) from None
            _check_json_strings(data, f"{source}: {member}.parquet row {i + 1}", col)


def _check_json_strings(data: Any, where: str, field: str) -> None:
    if isinstance(data, str):
        check_no_control(data, where, field)
    elif isinstance(data, dict):
        for key, value in data.items():
            check_no_control(str(key), where, field)
            _check_json_strings(value, where, f"{field}.{key}")
    elif isinstance(data, list):
        for n, value in enumerate(data):
            _check_json_strings(value, where, f"{field}[{n}]")


def check_bundle_rows(frames: Mapping[str, pd.DataFrame], config: AuditConfig, source: str) -> None:
    """Refuse a bundle whose rows are not draws the engine could have made (module docstring);
    InputError names member, row and field."""
    steps, pairs = frames["run_steps"], frames["run_pairs"]
    _need_columns(steps, "run_steps", STEP_COLUMNS_ALL, source)
    _need_columns(pairs, "run_pairs", PAIR_COLUMNS, source)
    _check_text_cells(frames, source)
    for member, cols in PROBABILITIES.items():
        frame = frames.get(member)
        for col, nullable in cols:
            if frame is not None and col in frame.columns:
                _check_probabilities(frame, member, col, nullable, source)
    pair_ids = _check_ids(pairs, "run_pairs", source)
    if len(set(pair_ids)) != len(pair_ids):
        seen: dict[str, int] = {}
        for i, pid in enumerate(pair_ids):
            if pid in seen:
                raise InputError(
                    f"{source}: run_pairs.parquet row {i + 1}: field pair_id {pid!r} repeats "
                    f"row {seen[pid] + 1}; a pair has one result"
                )
            seen[pid] = i
    for i, status in enumerate(pairs["status"]):
        if status not in tuple(Verdict):
            raise InputError(
                f"{source}: run_pairs.parquet row {i + 1}: field status must be one of "
                f"{', '.join(Verdict)}, got {status!r}"
            )
    _check_ids(steps, "run_steps", source)
    keys = _check_step_rows(steps, source)
    run_status = str(frames["runs"]["status"].iloc[0]) if "status" in frames["runs"] else ""
    known = set(pair_ids)
    pools = _pools(frames.get("paraphrases"))
    by_pair: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        by_pair.setdefault(key[0], []).append(i)
    if run_status == RunStatus.DONE:
        _check_done_run_is_whole(frames["runs"].iloc[0], pair_ids, source)
    for pid, rows in by_pair.items():
        if pid not in known and run_status == RunStatus.DONE:
            raise InputError(
                f"{source}: run_steps.parquet row {rows[0] + 1}: field pair_id {pid!r} has no "
                "result in run_pairs.parquet, yet the run is done"
            )
    # a run of a benchmark drew from stored pools, and its bundle carries them: every draw
    # is checked against them (a score-table run's pools live in its table)
    required = (
        _is_set(frames["runs"]["benchmark_id"].iloc[0])
        if "benchmark_id" in frames["runs"]
        else False
    )
    for i, pair in enumerate(pairs.to_dict("records")):
        rows = by_pair.get(str(pair["pair_id"]), [])
        _check_pair_draws(
            pair, i, [(r, keys[r]) for r in rows], steps, config, pools, source, required
        )


def _is_set(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


# -- row checks -----------------------------------------------------------------------------------
def _need_columns(frame: pd.DataFrame, member: str, cols: tuple[str, ...], source: str) -> None:
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: {member}.parquet: missing column(s) {', '.join(missing)}")


def _check_text_cells(frames: Mapping[str, pd.DataFrame], source: str) -> None:
    """No text cell of any member holds a control character other than tab and newline (a
    failed run's error message, often a server's reply, is shown escaped instead)."""
    for member, frame in frames.items():
        for col in frame.columns:
            if (member, col) == ("runs", "error"):
                continue
            if frame[col].dtype.kind not in "OUST" and str(frame[col].dtype) not in (
                "string",
                "str",
            ):
                continue
            for i, value in enumerate(frame[col]):
                if isinstance(value, str):
                    check_no_control(value, f"{source}: {member}.parquet row {i + 1}", col)


def _check_probabilities(
    frame: pd.DataFrame, member: str, col: str, nullable: bool, source: str
) -> None:
    for i, value in enumerate(frame[col]):
        if nullable and _is_null(value):
            continue
        ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
            value, (bool, np.bool_)
        )
        if not ok or not (math.isfinite(float(value)) and 0.0 <= float(value) <= 1.0):
            raise InputError(
                f"{source}: {member}.parquet row {i + 1}: field {col} must be a probability, a "
                f"finite number in [0, 1], got {value!r}"
            )


def _check_ids(frame: pd.DataFrame, member: str, source: str) -> list[str]:
    out = []
    for i, value in enumerate(frame["pair_id"]):
        if not isinstance(value, str) or not value.strip():
            raise InputError(
                f"{source}: {member}.parquet row {i + 1}: field pair_id must be a non-empty "
                f"string, got {value!r}"
            )
        out.append(value)
    return out


def _check_step_rows(steps: pd.DataFrame, source: str) -> list[tuple[str, int, str, int]]:
    """Each step's key (pair, stage, generator, t), every field of the row checked, each key
    once."""
    keys: list[tuple[str, int, str, int]] = []
    seen: dict[tuple[str, int, str, int], int] = {}
    cols = ["pair_id", "stage", "generator", "t", "text", "d", "is_counterexample"]
    for i, row in enumerate(steps[cols].to_dict("records")):
        where = f"{source}: run_steps.parquet row {i + 1} (pair {row['pair_id']})"
        stage = _whole(row["stage"])
        if stage not in (1, 2):
            raise InputError(f"{where}: field stage must be 1 or 2, got {row['stage']!r}")
        t = _whole(row["t"])
        if t is None or t < 1:
            raise InputError(f"{where}: field t must be a whole number >= 1, got {row['t']!r}")
        gen = row["generator"]
        if not isinstance(gen, str) or not gen.strip():
            raise InputError(f"{where}: field generator must be a non-empty string, got {gen!r}")
        if not isinstance(row["text"], str) or not row["text"].strip():
            raise InputError(f"{where}: field text must be a non-empty string")
        d = row["d"]
        if isinstance(d, (bool, np.bool_)) or _num(d) is None or not math.isfinite(float(d)):
            raise InputError(f"{where}: field d must be a finite number, got {d!r}")
        if not isinstance(row["is_counterexample"], (bool, np.bool_)):
            raise InputError(
                f"{where}: field is_counterexample must be true or false, got "
                f"{row['is_counterexample']!r}"
            )
        key = (row["pair_id"], stage, gen, t)
        if key in seen:
            raise InputError(
                f"{where}: duplicate step key (pair {key[0]}, stage {stage}, generator {gen}, "
                f"t {t}): row {seen[key] + 1} has it already; each draw is stored once"
            )
        seen[key] = i
        keys.append(key)
    return keys


def _check_pair_draws(
    pair: Mapping[Any, Any],
    pair_row: int,
    rows: list[tuple[int, tuple[str, int, str, int]]],
    steps: pd.DataFrame,
    config: AuditConfig,
    pools: Mapping[tuple[str, str, str], set[str]],
    source: str,
    required: bool = False,
) -> None:
    """The steps of one finished pair are the draws its own tests made, in order; with
    `required` (a run of a benchmark, whose bundle carries its pools) every draw is one of its
    pool's, the search stage holds min(search budget, search pool) steps (the engine scores
    the whole budgeted search set) and each generator's recorded pool is the pool's size."""
    pid = str(pair["pair_id"])
    where_pair = f"{source}: run_pairs.parquet row {pair_row + 1} (pair {pid})"
    gens = _generators(pair)
    names = [str(g.get("generator")) for g in gens]
    for j, info in enumerate(gens):
        name = names[j]
        if names.count(name) > 1:
            raise InputError(f"{where_pair}: field generators lists {name} twice")
        if config.test_generators and name not in config.test_generators:
            raise InputError(
                f"{where_pair}: field generators lists {name}, not a test generator of the run "
                f"({', '.join(config.test_generators)})"
            )
        available = _whole(info.get("available"))
        if available is None or available < 0:
            raise InputError(
                f"{where_pair}: field generators ({name}): available must be a whole number "
                f">= 0, got {info.get('available')!r}"
            )
    texts = steps["text"]

    def where(r: int) -> str:
        return f"{source}: run_steps.parquet row {r + 1} (pair {pid})"

    search = sorted((key[3], r, key[2]) for r, key in rows if key[1] == 1)
    for n, (t, r, gen) in enumerate(search, start=1):
        if t != n:
            raise InputError(
                f"{where(r)}: field t is {t} where search step {n} belongs: the search steps "
                f"of a pair run 1..n without gaps or repeats"
            )
        if config.search_generators and gen not in config.search_generators:
            raise InputError(
                f"{where(r)}: field generator {gen!r} is not a search generator of the run "
                f"({', '.join(config.search_generators)})"
            )
        pool = pools.get((pid, gen, "search"), set() if required else None)
        if pool is not None and str(texts.iloc[r]) not in pool:
            raise InputError(
                f"{where(r)}: field text is not one of the {len(pool)} {gen} search "
                "paraphrases the bundle holds for this pair (paraphrases.parquet)"
            )
    if len(search) > config.search_budget:
        r = search[config.search_budget][1]
        raise InputError(
            f"{where(r)}: stage 1 has {len(search)} steps, more than the run's search budget "
            f"({config.search_budget})"
        )
    if required:
        gens_s = config.search_generators or sorted(
            {g for (p, g, role) in pools if p == pid and role == "search"}
        )
        pool_s = set().union(*(pools.get((pid, g, "search"), set()) for g in gens_s))
        want = min(config.search_budget, len(pool_s))
        if len(search) != want:
            raise InputError(
                f"{where_pair}: field n_search: stage 1 holds {len(search)} steps, but the run "
                f"scores its whole search set up to the budget: min(search budget "
                f"{config.search_budget}, {len(pool_s)} search paraphrases in "
                f"paraphrases.parquet) = {want}"
            )
        for j, name in enumerate(names):
            size = len(pools.get((pid, name, "test"), set()))
            if _whole(gens[j].get("available")) != size:
                raise InputError(
                    f"{where_pair}: field generators ({name}): available says "
                    f"{gens[j].get('available')!r}, paraphrases.parquet holds {size} {name} "
                    "paraphrases for this pair"
                )
    search_norm = {normalize_text(str(texts.iloc[r])): r for _, r, _ in search}
    seen_test: dict[str, int] = {}
    for j, name in enumerate(names):
        mine = sorted((key[3], r) for r, key in rows if key[1] == 2 and key[2] == name)
        info = gens[j]
        for n, (t, r) in enumerate(mine, start=1):
            if t != n:
                raise InputError(
                    f"{where(r)}: field t is {t} where draw {n} of generator {name} belongs: "
                    f"a generator's draws run 1..n without gaps or repeats"
                )
            text = str(texts.iloc[r])
            norm = normalize_text(text)
            if norm in seen_test:
                raise InputError(
                    f"{where(r)}: field text repeats row {seen_test[norm] + 1} (up to case and "
                    f"punctuation); stage 2 counts each paraphrase as an independent draw, so "
                    f"field text must be unique within a pair"
                )
            if norm in search_norm:
                raise InputError(
                    f"{where(r)}: field text is the search step at row {search_norm[norm] + 1}; "
                    "stage 2 needs fresh paraphrases, so field text must be unique within a pair"
                )
            seen_test[norm] = r
            pool = pools.get((pid, name, "test"), set() if required else None)
            if pool is not None and text not in pool:
                raise InputError(
                    f"{where(r)}: field text is not one of the {len(pool)} {name} paraphrases "
                    "the bundle holds for this pair (paraphrases.parquet)"
                )
        available = int(info.get("available") or 0)
        limit = min(available, config.test_budget)
        if len(mine) > limit:
            r = mine[limit][1]
            raise InputError(
                f"{where(r)}: generator {name} has {len(mine)} draws, more than its pool of "
                f"{available} paraphrases and test budget of {config.test_budget} allow"
            )
        if "n" in info and _whole(info["n"]) != len(mine):
            raise InputError(
                f"{where_pair}: field generators ({name}): n says {info['n']!r}, the bundle "
                f"holds {len(mine)} steps for it"
            )
    for r, key in rows:
        if key[1] == 2 and key[2] not in names:
            raise InputError(
                f"{where(r)}: field generator {key[2]!r} is not one of the pair's test "
                f"generators ({', '.join(names) or 'none'})"
            )


def _check_done_run_is_whole(run: pd.Series, pair_ids: list[str], source: str) -> None:
    """A done run holds a result for every pair it was started on: none left out (a degraded
    pair dropped from a bundle would leave the rest reading as if it were the whole run)."""
    where = f"{source}: runs.parquet row 1"
    n = _whole(run.get("n_pairs"))
    if n is None:
        raise InputError(
            f"{where}: field n_pairs must be a whole number for a done run, got "
            f"{run.get('n_pairs')!r}"
        )
    if n != len(pair_ids):
        raise InputError(
            f"{where}: field n_pairs says {n}, but run_pairs.parquet holds {len(pair_ids)} "
            "results, and the run is done"
        )
    try:
        started = json.loads(run.get("source") or "")
    except (TypeError, ValueError):
        return
    listed = started.get("pair_ids") if isinstance(started, dict) else None
    if isinstance(listed, list):
        missing = sorted(set(map(str, listed)) - set(pair_ids))
        if missing:
            raise InputError(
                f"{where}: field source lists pair {missing[0]}, which has no result in "
                "run_pairs.parquet, yet the run is done"
            )


def _pools(paraphrases: pd.DataFrame | None) -> dict[tuple[str, str, str], set[str]]:
    """The paraphrase texts a bundle holds per (pair, generator, role); empty for score-table
    runs, whose pools live in the table."""
    if paraphrases is None or paraphrases.empty or "role" not in paraphrases:
        return {}
    return {
        (str(pid), str(gen), str(role)): set(map(str, group["text"]))
        for (pid, gen, role), group in paraphrases.groupby(
            ["pair_id", "generator", "role"], sort=False
        )
    }
