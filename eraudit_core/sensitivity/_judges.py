"""What a Petri judge's output really says: valid scores, failures, and what it quoted.

Petri hides judge failures inside ordinary-looking scores (tests/fixtures/petri/SCHEMA_NOTES.md):
- Petri v2 (`alignment_judge`): an unparseable reply becomes every dimension = 1 with summary
  and justification "Failed to parse judge's response"; a partial parse pads the dimensions the
  judge did not write with 1 and prefixes the justification with "Partial parse of judge's
  response." (the dimensions really scored are in the raw reply's `<scores>` block);
- Petri 3 (`audit_judge`): a refusal or an invalid answer is the value NaN (refusal: metadata
  `refusal` true), and an errored sample has no score at all.
Both importers call `judge_scores` so they drop the same things for the same reasons.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

PARSE_FAILURE = "Failed to parse judge's response"
PARTIAL_PARSE = "Partial parse of judge's response."
JUDGE_SCORER = re.compile(r"^(alignment_judge|audit_judge)\d*$")
KNOWN_OTHER_SCORERS = ("realism_scorer",)
_SCORES_BLOCK = re.compile(r"<scores>(.*?)</scores>", re.DOTALL)
# Petri v2's own parser (petri/scorers/judge.py): "N. name: V/10".
_SCORE_LINE = re.compile(r"(\d+)\.\s*(\w+): (\d+)/10")
_CITE = re.compile(r"\[(M\d+)\]")

# Drop codes and what they mean; the CLI and the page show these descriptions.
DROP_REASONS = {
    "judge_parse_failure": "judge reply could not be parsed (Petri wrote every dimension as 1)",
    "not_scored_by_judge": "dimension not scored by the judge (partial parse; Petri padded it "
    "with 1)",
    "partial_parse_unverifiable": "partial parse and no raw judge reply to tell which "
    "dimensions were scored",
    "judge_refusal": "judge refused (content filter)",
    "judge_invalid_answer": "judge gave no valid answer (value NaN)",
    "judge_missing": "the judge scorer did not score this sample",
    "no_judge_scorer": "no Petri judge scorer in the sample (pass --scorer NAME)",
    "score_out_of_range": "score outside the judge scale 1..10",
    "score_not_a_number": "score is not a number (e.g. a boolean)",
    "sample_error": "sample errored (no judge score)",
    "run_error": "log status error: the run failed (no judge score)",
    "run_not_finished": "log not finished (status cancelled or started)",
    "unmapped_condition": "no condition mapping matches",
    "ambiguous_condition": "several conditions match",
    "unmapped_behaviour": "no behaviour mapping matches",
    "ambiguous_behaviour": "several behaviours match",
    "malformed": "file or record malformed",
    "duplicate": "same rollout and judge already imported from another file",
    "conflict": "same rollout as another file but different scores or labels",
}


def is_judge_scorer(name: str) -> bool:
    """Petri's judge scorers: alignment_judge, alignment_judge1, ... (v2), audit_judge (3)."""
    return bool(JUDGE_SCORER.match(name))


def scored_in_response(response: Any) -> set[str] | None:
    """Dimension names the judge wrote in its raw reply's `<scores>` block (Petri v2's regex);
    None when there is no such block."""
    if not isinstance(response, str):
        return None
    blocks = _SCORES_BLOCK.findall(response)
    if not blocks:
        return None
    return {m.group(2) for m in _SCORE_LINE.finditer(blocks[-1])}


def score_problem(value: Any) -> str | None:
    """None for a valid 1..10 score or None (a refusal on one dimension, kept as NaN); else
    the drop code."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "score_not_a_number"
    if math.isnan(float(value)):
        return None
    return None if 1 <= float(value) <= 10 else "score_out_of_range"


@dataclass
class JudgeScores:
    """One judge's scores on one rollout after Petri's failure markers were read.

    `failure` (a drop code) means none of the scores count. Otherwise `scores` holds what
    counts ({dimension: 1..10 or NaN}) and `dropped` the scores left out: {code: [dims]}.
    """

    scores: dict[str, float] = field(default_factory=dict)
    dropped: dict[str, list[str]] = field(default_factory=dict)
    failure: str | None = None
    detail: str = ""
    notes: list[str] = field(default_factory=list)


def judge_scores(
    values: Any,
    summary: Any = None,
    justification: Any = None,
    response: Any = None,
    metadata: dict[str, Any] | None = None,
    marker_known: bool = True,
) -> JudgeScores:
    """Interpret one judge's values and texts (either Petri generation).

    `marker_known` is False for a later judge of a multi-judge v2 transcript: its summary and
    justification were not written to the transcript, so a failure cannot be seen; a judge
    whose every dimension is 1 is then kept with a note saying it cannot be checked.
    """
    metadata = metadata or {}
    if isinstance(values, float) and math.isnan(values):
        if metadata.get("refusal"):
            return JudgeScores(failure="judge_refusal", detail=str(justification or "")[:200])
        return JudgeScores(failure="judge_invalid_answer", detail=str(summary or "")[:200])
    if not isinstance(values, dict) or not values:
        return JudgeScores(failure="judge_missing", detail=f"value {values!r}"[:200])
    # The justification carries the marker even when a partial parse kept a real summary.
    if justification == PARSE_FAILURE or (summary == PARSE_FAILURE and justification is None):
        return JudgeScores(failure="judge_parse_failure", detail=PARSE_FAILURE)
    out = JudgeScores()
    keep = dict(values)
    if isinstance(justification, str) and justification.startswith(PARTIAL_PARSE):
        scored = scored_in_response(response)
        if scored is None:
            return JudgeScores(
                failure="partial_parse_unverifiable",
                detail="justification says partial parse; no <scores> block in the reply",
            )
        padded = sorted(k for k in keep if k not in scored)
        if padded:
            out.dropped["not_scored_by_judge"] = padded
        keep = {k: v for k, v in keep.items() if k in scored}
    for dim, value in keep.items():
        code = score_problem(value)
        if code:
            out.dropped.setdefault(code, []).append(f"{dim}={value!r}")
            continue
        out.scores[str(dim)] = math.nan if value is None else float(value)
    if not out.scores:
        code = next(iter(out.dropped), "judge_missing")
        return JudgeScores(failure=code, detail="no usable dimension")
    if not marker_known and len(out.scores) > 1 and all(v == 1 for v in out.scores.values()):
        out.notes.append(
            f"every one of {len(out.scores)} dimensions is 1 and the transcript keeps no "
            "failure marker for this judge: a parse failure cannot be ruled out (import the "
            "Inspect log of the run to check)"
        )
    return out


def v2_highlights(raw: Any) -> list[dict[str, Any]]:
    """Petri v2 citations -> [{index, description, message_ids, quotes}]."""
    out = []
    for i, item in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(item, dict):
            continue
        parts = [p for p in item.get("parts") or [] if isinstance(p, dict)]
        out.append(
            {
                "index": item.get("index", i + 1),
                "description": str(item.get("description") or ""),
                "message_ids": [str(p.get("message_id")) for p in parts if p.get("message_id")],
                "quotes": [str(p.get("quoted_text") or "") for p in parts],
            }
        )
    return out


def petri3_highlights(text: Any, references: Any) -> list[dict[str, Any]]:
    """Petri 3's highlights string ("1. [M2] ...") with its scanner references -> the same
    shape as `v2_highlights` (the quote is the highlight line itself)."""
    if not isinstance(text, str) or not text.strip():
        return []
    ids = {
        str(r.get("cite")): str(r.get("id"))
        for r in (references if isinstance(references, list) else [])
        if isinstance(r, dict) and r.get("cite") and r.get("id")
    }
    items = re.split(r"(?m)^\s*(?=\d+\.\s)", text.strip())
    out = []
    for i, item in enumerate(x.strip() for x in items if x.strip()):
        m = re.match(r"(\d+)\.\s*(.*)", item, re.DOTALL)
        index, body = (int(m.group(1)), m.group(2)) if m else (i + 1, item)
        cites = _CITE.findall(body)
        out.append(
            {
                "index": index,
                "description": body,
                "message_ids": [ids.get(f"[{c}]", f"[{c}]") for c in cites],
                "quotes": [],
            }
        )
    return out


def strip_provider(model: str) -> str:
    """`provider/name` (Inspect's model string) -> `name` (what Petri v2 transcripts record:
    inspect's Model.name). Only the first component is the provider: `hf/org/model` -> `org/model`."""
    return model.split("/", 1)[1] if "/" in model else model
