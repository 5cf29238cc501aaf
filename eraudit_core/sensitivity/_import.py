"""Importers into the sensitivity tidy table (DESIGN.md §8): CSV/Parquet, Petri, Inspect logs.

Every importer returns an `ImportResult`: the tidy table (columns `TIDY_COLUMNS`, one row per
rollout x judge x dimension, score NaN for a judge's refusal on one dimension) and `dropped`
(rollout, source, reason) listing every rollout left out, so nothing vanishes silently.

Petri transcripts carry no resource condition or behaviour; the user supplies a `TagMapping`
from transcript tags or seed ids to those names.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.sensitivity._tidy import DROPPED_COLUMNS, TIDY_COLUMNS, validate_tidy

INSPECT_SCORER = "audit_judge"
SEED_ID_KEYS = ("seed_id", "sample_id", "seed")


@dataclass(frozen=True)
class ImportResult:
    """A tidy table and the rollouts that did not make it into it, with reasons."""

    table: pd.DataFrame
    dropped: pd.DataFrame


@dataclass(frozen=True)
class TagMapping:
    """Maps a transcript's tags or seed id to its resource condition and behaviour.

    Keys are exact tag strings or seed ids; a transcript must match exactly one condition and
    one behaviour (several keys naming the same value are fine).
    """

    condition: Mapping[str, str] = field(default_factory=dict)
    behaviour: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, path: str | Path) -> TagMapping:
        """Read {"condition": {key: name}, "behaviour": {key: name}} from a JSON file."""
        path = Path(path)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise InputError(f"{path}: mapping file not found") from exc
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not valid JSON (line {exc.lineno}): {exc.msg}") from exc
        if not isinstance(raw, dict):
            raise InputError(f"{path}: expected a JSON object with 'condition' and 'behaviour'")
        for name in ("condition", "behaviour"):
            part = raw.get(name)
            if not isinstance(part, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in part.items()
            ):
                raise InputError(f"{path}: field '{name}' must map strings to strings")
        return cls(condition=dict(raw["condition"]), behaviour=dict(raw["behaviour"]))

    def resolve(self, keys: Iterable[str]) -> tuple[str | None, str | None, str | None]:
        """(condition, behaviour, reason); reason is set when either cannot be decided."""
        keys = list(keys)
        out: list[str | None] = []
        for name, table in (("condition", self.condition), ("behaviour", self.behaviour)):
            hits = sorted({table[k] for k in keys if k in table})
            if len(hits) != 1:
                shown = ", ".join(keys) if keys else "none"
                if hits:
                    reason = f"ambiguous {name}: tags/seed id [{shown}] map to {', '.join(hits)}"
                else:
                    reason = f"no {name} mapping for tags/seed id [{shown}]"
                return None, None, reason
            out.append(hits[0])
        return out[0], out[1], None


def _dropped(rows: list[dict[str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(DROPPED_COLUMNS))


def read_tidy_table(path: str | Path) -> ImportResult:
    """Read a tidy CSV or Parquet table and validate it (errors name the file, row, field)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            table = pd.read_parquet(path)
        elif path.suffix.lower() in (".csv", ".txt"):
            table = pd.read_csv(path, dtype={c: str for c in TIDY_COLUMNS if c != "score"})
        else:
            raise InputError(f"{path}: expected a .csv or .parquet file")
    except InputError:
        raise
    except Exception as exc:  # pandas/pyarrow raise many types on a broken file
        raise InputError(f"{path}: cannot be read as a table: {exc}") from exc
    return ImportResult(validate_tidy(table, str(path)), _dropped([]))


def _score_value(value: Any) -> float | None:
    """A judge score as float, NaN for an explicit refusal (None); None if not a score."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    v = float(value)
    return v if 1 <= v <= 10 else None


def _split_key(key: str, default_judge: str) -> tuple[str, str]:
    """'scorer/dimension' -> (scorer, dimension); a bare 'dimension' -> (default_judge, it)."""
    if "/" in key:
        judge, dim = key.rsplit("/", 1)
        return judge, dim
    return default_judge, key


def _petri_record(
    data: Any, rollout_hint: str, mapping: TagMapping, default_judge: str
) -> tuple[list[dict[str, Any]], str | None]:
    """Rows of one Petri v2 transcript, or the reason it is dropped."""
    if not isinstance(data, dict) or not isinstance(data.get("metadata"), dict):
        return [], "field 'metadata': missing or not an object"
    meta = data["metadata"]
    rollout = str(meta.get("transcript_id") or rollout_hint)
    for name in ("auditor_model", "target_model"):
        if not isinstance(meta.get(name), str) or not meta[name].strip():
            return [], f"field 'metadata.{name}': missing or empty"
    tags = meta.get("tags") or []
    if not isinstance(tags, list):
        return [], "field 'metadata.tags': not a list"
    keys = [str(t) for t in tags] + [str(meta[k]) for k in SEED_ID_KEYS if meta.get(k)]
    condition, behaviour, reason = mapping.resolve(keys)
    if reason:
        return [], reason
    judge_output = meta.get("judge_output")
    scores = judge_output.get("scores") if isinstance(judge_output, dict) else None
    if not scores:
        return [], "no judge scores (metadata.judge_output.scores missing: judge refusal?)"
    if not isinstance(scores, dict):
        return [], "field 'metadata.judge_output.scores': not an object"
    judge_default = str(
        (judge_output or {}).get("judge_model") or meta.get("judge_model") or default_judge
    )
    rows = []
    for key, value in scores.items():
        score = _score_value(value)
        if score is None:
            return [], f"field 'metadata.judge_output.scores.{key}': {value!r} is not 1..10"
        judge, dim = _split_key(str(key), judge_default)
        rows.append(
            {
                "rollout": rollout,
                "behaviour": behaviour,
                "condition": condition,
                "auditor": meta["auditor_model"],
                "target": meta["target_model"],
                "judge": judge,
                "dimension": dim,
                "score": score,
            }
        )
    return rows, None


def import_petri_transcripts(
    directory: str | Path,
    mapping: TagMapping,
    default_judge: str = "judge",
    strict: bool = False,
) -> ImportResult:
    """Read every `*.json` transcript in a Petri v2 output directory (recursively).

    Reads metadata.auditor_model, metadata.target_model, metadata.tags (and a seed id when
    present) and metadata.judge_output.scores, whose keys are bare dimensions (the judge is
    judge_output.judge_model, else `default_judge`) or "scorer/dimension" (the scorer names
    the judge). A transcript with no scores (judge refusal), unmapped tags or a malformed body
    is dropped with its reason; with `strict` the first such problem raises InputError.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"{directory}: not a directory of Petri transcripts")
    files = sorted(directory.rglob("*.json"))
    if not files:
        raise InputError(f"{directory}: no .json transcript files found")
    rows: list[dict[str, Any]] = []
    dropped: list[dict[str, str]] = []
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            reason = f"malformed JSON: {exc}"
            if strict:
                raise InputError(f"{path}: {reason}") from exc
            dropped.append({"rollout": path.stem, "source": str(path), "reason": reason})
            continue
        new, problem = _petri_record(data, path.stem, mapping, default_judge)
        if problem:
            reason = problem
            if strict:
                raise InputError(f"{path}: {reason}")
            rollout = path.stem
            if isinstance(data, dict) and isinstance(data.get("metadata"), dict):
                rollout = str(data["metadata"].get("transcript_id") or path.stem)
            dropped.append({"rollout": rollout, "source": str(path), "reason": reason})
            continue
        rows.extend(new)
    table = pd.DataFrame(rows, columns=list(TIDY_COLUMNS))
    if not table.empty:
        table = validate_tidy(table, str(directory))[list(TIDY_COLUMNS)]
    return ImportResult(table, _dropped(dropped))


def _role_model(log: Any, role: str) -> str | None:
    roles = getattr(getattr(log, "eval", None), "model_roles", None) or {}
    cfg = roles.get(role)
    if cfg is None:
        return None
    return str(getattr(cfg, "model", cfg))


def import_inspect_logs(
    paths: Iterable[str | Path],
    mapping: TagMapping,
    scorer: str = INSPECT_SCORER,
) -> ImportResult:
    """Read Petri 3 (inspect_petri) Inspect eval logs through `inspect_ai.log.read_eval_log`.

    Per sample: `sample.scores[scorer].value` is {dimension: 1..10} (None on a judge refusal);
    auditor, target and judge models come from the eval's model roles (else the sample's
    metadata); tags from sample metadata "tags" plus the eval's tags, and the sample id as the
    seed id, resolved through `mapping`. Needs the optional `inspect_ai` package.
    """
    try:
        from inspect_ai.log import read_eval_log
    except ImportError as exc:
        raise InputError(
            "reading Inspect logs needs the optional package inspect_ai (pip install inspect-ai)"
        ) from exc
    rows: list[dict[str, Any]] = []
    dropped: list[dict[str, str]] = []
    for path in paths:
        try:
            log = read_eval_log(str(path))
        except Exception as exc:  # inspect raises its own types on a broken log
            raise InputError(f"{path}: cannot be read as an Inspect eval log: {exc}") from exc
        eval_tags = [str(t) for t in (getattr(log.eval, "tags", None) or [])]
        auditor_role = _role_model(log, "auditor")
        target_role = _role_model(log, "target")
        judge = _role_model(log, "judge") or scorer
        for sample in log.samples or []:
            meta = dict(getattr(sample, "metadata", None) or {})
            rollout = f"{Path(str(path)).stem}:{sample.id}:{getattr(sample, 'epoch', 1)}"
            auditor = auditor_role or meta.get("auditor_model")
            target = target_role or meta.get("target_model")
            if not auditor or not target:
                dropped.append(
                    {"rollout": rollout, "source": str(path), "reason": "no auditor/target model"}
                )
                continue
            keys = [str(t) for t in (meta.get("tags") or [])] + eval_tags + [str(sample.id)]
            condition, behaviour, reason = mapping.resolve(keys)
            score = (getattr(sample, "scores", None) or {}).get(scorer)
            value = getattr(score, "value", None)
            if reason is None and not isinstance(value, dict):
                reason = f"no '{scorer}' scores (judge refusal or scorer not run)"
            if reason:
                dropped.append({"rollout": rollout, "source": str(path), "reason": reason})
                continue
            assert isinstance(value, dict)
            bad = [k for k, v in value.items() if _score_value(v) is None]
            if bad:
                dropped.append(
                    {
                        "rollout": rollout,
                        "source": str(path),
                        "reason": f"score '{bad[0]}' is {value[bad[0]]!r}, not 1..10",
                    }
                )
                continue
            for dim, v in value.items():
                rows.append(
                    {
                        "rollout": rollout,
                        "behaviour": behaviour,
                        "condition": condition,
                        "auditor": str(auditor),
                        "target": str(target),
                        "judge": judge,
                        "dimension": str(dim),
                        "score": _score_value(v),
                    }
                )
    table = pd.DataFrame(rows, columns=list(TIDY_COLUMNS))
    if not table.empty:
        table = validate_tidy(table, "inspect logs")[list(TIDY_COLUMNS)]
    return ImportResult(table, _dropped(dropped))
