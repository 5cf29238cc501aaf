"""What every importer returns, and the one place that collects rows, drops and duplicates.

An importer yields, per rollout and judge, either scores or a drop with a reason code
(`DROP_REASONS`). `Collector` turns those into an `ImportResult`: the tidy table (columns
`TIDY_COLUMNS`, one row per rollout x judge x dimension), the rollout details (one row per
rollout x judge: what the judge wrote, the seed, the task arguments, where it came from;
columns `ROLLOUT_COLUMNS`), every drop with its reason, and notes. A rollout is identified by
what the sample records about itself (Inspect's sample uuid, or run id + sample id + epoch), not
by the file name, so a copied log cannot double it and two judges in two files are merged.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.sensitivity._judges import DROP_REASONS
from eraudit_core.sensitivity._tidy import TIDY_COLUMNS, validate_tidy

IMPORT_DROPPED_COLUMNS = ("rollout", "source", "judge", "code", "reason", "n_scores")
ROLLOUT_COLUMNS = (
    "rollout",
    "judge",
    "scorer",
    "judge_model",
    "behaviour",
    "condition",
    "auditor",
    "target",
    "auditor_model",
    "target_model",
    "source",
    "format",
    "run_id",
    "sample_id",
    "epoch",
    "sample_uuid",
    "transcript_id",
    "seed_instruction",
    "tags",
    "task_args",
    "summary",
    "justification",
    "highlights",
    "n_scores",
    "dimensions_dropped",
    "other_scores",
    "notes",
    # The transcript the judge read ({id, role, text} per message, the kept branch), so a
    # highlight's message ids open the message they cite. Empty for older rollouts files.
    "messages",
)


@dataclass(frozen=True)
class ImportResult:
    """The tidy table, the rollout details beside it, and everything left out with reasons."""

    table: pd.DataFrame
    dropped: pd.DataFrame
    rollouts: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=list(ROLLOUT_COLUMNS))
    )
    notes: tuple[str, ...] = ()

    def drop_summary(self) -> pd.DataFrame:
        """One row per drop code: code, description, rollouts (distinct rollouts affected),
        entries, n_scores (score rows lost, when known), example (a source file),
        example_rollout and example_detail (what that entry says beyond the description)."""
        cols = [
            "code",
            "description",
            "rollouts",
            "entries",
            "n_scores",
            "example",
            "example_rollout",
            "example_detail",
        ]
        if self.dropped.empty:
            return pd.DataFrame(columns=cols)
        d = self.dropped
        if "code" not in d.columns:
            d = d.assign(code="analysis", judge="", n_scores=0)
        out = []
        for code, g in d.groupby("code", sort=False):
            out.append(
                {
                    "code": code,
                    "description": DROP_REASONS.get(str(code), str(g["reason"].iloc[0])),
                    "rollouts": int(g["rollout"].nunique()),
                    "entries": len(g),
                    "n_scores": int(pd.to_numeric(g["n_scores"]).fillna(0).sum()),
                    "example": str(g["source"].iloc[0]),
                    "example_rollout": str(g["rollout"].iloc[0]),
                    "example_detail": _detail(str(g["reason"].iloc[0]), str(code)),
                }
            )
        return pd.DataFrame(out, columns=cols).sort_values(
            ["rollouts", "entries"], ascending=False, kind="stable"
        )


def _detail(reason: str, code: str) -> str:
    """What a drop's reason says beyond its code's description."""
    head = DROP_REASONS.get(code, "")
    if code.startswith(("unmapped_", "ambiguous_")):
        return reason
    return reason[len(head) + 2 :] if head and reason.startswith(head + ": ") else ""


def transcript_messages(messages: Any) -> list[dict[str, Any]] | None:
    """{id, role, text} per message of a transcript, from Inspect ChatMessage objects (a log's
    `sample.messages`) or their JSON dicts (a Petri v2 transcript's `target_messages`); tool
    calls are appended to the text as `[tool call] name(arguments)`. None when absent."""
    if not isinstance(messages, list | tuple) or not messages:
        return None
    out = []
    for m in messages:
        get = m.get if isinstance(m, dict) else lambda k, m=m: getattr(m, k, None)
        content = get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list | tuple):
            parts = [
                p.get("text") if isinstance(p, dict) else getattr(p, "text", None) for p in content
            ]
            text = "\n".join(str(p) for p in parts if p)
        else:
            text = ""
        for call in get("tool_calls") or []:
            cget = call.get if isinstance(call, dict) else lambda k, c=call: getattr(c, k, None)
            text += (
                f"\n[tool call] {cget('function')}({json.dumps(cget('arguments'), default=str)})"
            )
        out.append(
            {"id": str(get("id") or ""), "role": str(get("role") or ""), "text": text.strip()}
        )
    return out


def empty_dropped() -> pd.DataFrame:
    return pd.DataFrame(columns=list(IMPORT_DROPPED_COLUMNS))


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
    return ImportResult(validate_tidy(table, str(path)), empty_dropped())


@dataclass
class _Seen:
    source: str
    labels: tuple[str, str, str, str]
    judges: dict[str, dict[str, float]]


def _same_scores(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(
        (math.isnan(a[k]) and math.isnan(b[k])) or a[k] == b[k] for k in a
    )


class Collector:
    """Gathers one import: scores per (rollout, judge), drops with codes, notes, duplicates."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self._rows: list[dict[str, Any]] = []
        self._rollouts: list[dict[str, Any]] = []
        self._dropped: list[dict[str, Any]] = []
        self._notes: list[str] = []
        self._seen: dict[str, _Seen] = {}

    def drop(
        self,
        rollout: str,
        source: str,
        code: str,
        detail: str = "",
        judge: str = "",
        n_scores: int = 0,
    ) -> None:
        """Record a rollout (or one judge of it, or some of its scores) left out."""
        if code.startswith(("unmapped_", "ambiguous_")) and detail:
            reason = detail  # the mapping's own sentence already says what failed
        else:
            reason = DROP_REASONS.get(code, code) + (f": {detail}" if detail else "")
        if self.strict:
            raise InputError(f"{source}: {reason}")
        self._dropped.append(
            {
                "rollout": rollout,
                "source": source,
                "judge": judge,
                "code": code,
                "reason": reason,
                "n_scores": n_scores,
            }
        )

    def note(self, text: str) -> None:
        if text not in self._notes:
            self._notes.append(text)

    def add(
        self,
        rollout: str,
        source: str,
        labels: tuple[str, str, str, str],
        judge: str,
        scores: dict[str, float],
        details: dict[str, Any],
    ) -> None:
        """Add one judge's scores on one rollout; `labels` = (behaviour, condition, auditor,
        target). A rollout seen before in another file is merged when this judge is new, and
        dropped as a duplicate (same scores) or a conflict (different) otherwise."""
        seen = self._seen.get(rollout)
        if seen is not None:
            if seen.labels != labels:
                self.drop(
                    rollout,
                    source,
                    "conflict",
                    f"{' / '.join(labels)} here but {' / '.join(seen.labels)} in {seen.source}",
                    judge,
                    len(scores),
                )
                return
            if judge in seen.judges:
                same = _same_scores(seen.judges[judge], scores)
                self.drop(
                    rollout,
                    source,
                    "duplicate" if same else "conflict",
                    f"first read from {seen.source}"
                    + ("" if same else "; the scores differ, the first ones were kept"),
                    judge,
                    len(scores),
                )
                return
            if seen.source != source:
                self.note(
                    f"rollout {rollout}: judge {judge} from {source} merged with the "
                    f"judge(s) read from {seen.source}"
                )
        else:
            seen = _Seen(source, labels, {})
            self._seen[rollout] = seen
        seen.judges[judge] = dict(scores)
        behaviour, condition, auditor, target = labels
        for dim, score in scores.items():
            self._rows.append(
                {
                    "rollout": rollout,
                    "behaviour": behaviour,
                    "condition": condition,
                    "auditor": auditor,
                    "target": target,
                    "judge": judge,
                    "dimension": dim,
                    "score": score,
                }
            )
        row: dict[str, Any] = {c: None for c in ROLLOUT_COLUMNS}
        row.update(details)
        row.update(
            {
                "rollout": rollout,
                "judge": judge,
                "behaviour": behaviour,
                "condition": condition,
                "auditor": auditor,
                "target": target,
                "source": source,
                "n_scores": len(scores),
            }
        )
        self._rollouts.append(row)

    def result(self, source: str) -> ImportResult:
        table = pd.DataFrame(self._rows, columns=list(TIDY_COLUMNS))
        if not table.empty:
            table = validate_tidy(table, source)[list(TIDY_COLUMNS)]
        return ImportResult(
            table=table,
            dropped=pd.DataFrame(self._dropped, columns=list(IMPORT_DROPPED_COLUMNS)),
            rollouts=pd.DataFrame(self._rollouts, columns=list(ROLLOUT_COLUMNS)),
            notes=tuple(self._notes),
        )
