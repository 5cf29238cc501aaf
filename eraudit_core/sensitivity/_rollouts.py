"""The rollouts file beside a tidy table, and the rollouts behind a cell or an odds ratio.

`eraudit sensitivity-import ... -o T.csv` writes the scores to T.csv (`TIDY_COLUMNS`, as
before) and what the judge wrote to `T.rollouts.jsonl`: one JSON object per rollout x judge
with the fields `ROLLOUT_COLUMNS` (summary, justification, highlights with message ids, seed
instruction, task arguments, source file, identity). JSON Lines because highlights are nested
and every reader (pandas, jq, a text editor) opens it. An auditor reads these rows to check
what a number in the analysis stands for.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.sensitivity._import import ROLLOUT_COLUMNS, ImportResult
from eraudit_core.sensitivity._tidy import panel_scores, validate_tidy
from eraudit_core.text import csv_safe_frame

ROLLOUTS_SUFFIX = ".rollouts.jsonl"


def rollouts_path_for(table_path: str | Path) -> Path:
    """T.csv / T.parquet -> T.rollouts.jsonl in the same folder."""
    p = Path(table_path)
    return p.with_name(p.stem + ROLLOUTS_SUFFIX)


def _plain(value: Any) -> Any:
    """JSON-safe: NaN and infinities -> None, tuples -> lists, unknown objects -> str."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    if hasattr(value, "item"):  # numpy scalars
        return _plain(value.item())
    return str(value)


def write_import(result: ImportResult, out: str | Path) -> tuple[Path, Path]:
    """Write the tidy table (.csv or .parquet) and its rollouts file; returns both paths."""
    out = Path(out)
    if out.suffix.lower() in (".parquet", ".pq"):
        result.table.to_parquet(out, index=False)
    elif out.suffix.lower() == ".csv":
        csv_safe_frame(result.table).to_csv(out, index=False)
    else:
        raise InputError(f"{out}: the output must be a .csv or .parquet file")
    side = rollouts_path_for(out)
    with side.open("w", encoding="utf-8") as fh:
        for row in result.rollouts.to_dict(orient="records"):
            fh.write(json.dumps(_plain(row), ensure_ascii=False, allow_nan=False) + "\n")
    return out, side


def read_rollouts(path: str | Path, name: str | None = None) -> pd.DataFrame:
    """Read a rollouts file; errors name the file, the line and the field."""
    path = Path(path)
    shown = name or str(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise InputError(f"{shown}: file not found") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{shown}: not UTF-8 text") from exc
    rows = []
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except RecursionError:
            raise InputError(f"{shown}: line {i}: the JSON is nested too deeply") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{shown}: line {i}: not valid JSON: {exc.msg}") from exc
        if not isinstance(obj, dict):
            raise InputError(f"{shown}: line {i}: expected a JSON object")
        for key in ("rollout", "judge"):
            if not isinstance(obj.get(key), str) or not obj[key]:
                raise InputError(f"{shown}: line {i}, field '{key}': missing or not a string")
        rows.append(obj)
    frame = pd.DataFrame(rows)
    for col in ROLLOUT_COLUMNS:
        if col not in frame.columns:
            frame[col] = None
    return frame[list(ROLLOUT_COLUMNS)]


def rollouts_behind(
    table: pd.DataFrame,
    behaviour: str,
    dimension: str | None = None,
    condition: str | None = None,
    pair: str | None = None,
) -> pd.DataFrame:
    """The rollouts the analysis used for one behaviour, optionally one condition and one
    pair: columns rollout, condition, pair, score (panel mean, the modelled outcome),
    n_judges, judge_scores ("judge=score; ..."). A cell is (pair, condition); a pooled odds
    ratio is every pair of that condition and of the reference condition."""
    tidy = validate_tidy(table, "table")
    tidy = tidy[tidy["behaviour"] == behaviour]
    dim = dimension or behaviour
    panel, _ = panel_scores(tidy, dim)
    if condition is not None:
        panel = panel[panel["condition"] == condition]
    if pair is not None:
        panel = panel[panel["pair"] == pair]
    rows = tidy[(tidy["dimension"] == dim) & tidy["rollout"].isin(panel["rollout"])]
    texts: dict[str, list[str]] = {}
    for r in rows.sort_values("judge").itertuples(index=False):
        score = "n/a" if pd.isna(r.score) else f"{float(r.score):g}"  # type: ignore[arg-type]
        texts.setdefault(str(r.rollout), []).append(f"{r.judge}={score}")
    per_judge = pd.Series({k: "; ".join(v) for k, v in texts.items()}, name="judge_scores")
    out = panel.merge(per_judge, left_on="rollout", right_index=True, how="left")
    cols = ["rollout", "condition", "pair", "score", "n_judges", "judge_scores"]
    return out[cols].sort_values(["condition", "pair", "rollout"]).reset_index(drop=True)
