"""Import Petri v2 transcript JSON (`save_transcripts`: transcript_<time>_<sample uuid>.json).

Schema: tests/fixtures/petri/SCHEMA_NOTES.md §1. The scores are `metadata.judge_output.scores`:
bare dimension keys with one scorer, `<scorer>/<dimension>` keys with several (judges
`alignment_judge`, `alignment_judge1`, ... and non-judge scorers such as `realism_scorer`).
The summary, justification, raw reply and highlights are the first judge's only, so a later
judge's parse failure leaves no marker here: such a judge is kept, with a note, when every
dimension is 1 (its Inspect log does carry the marker).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.sensitivity._import import Collector, ImportResult, transcript_messages
from eraudit_core.sensitivity._judges import (
    KNOWN_OTHER_SCORERS,
    is_judge_scorer,
    judge_scores,
    v2_highlights,
)
from eraudit_core.sensitivity._mapping import RolloutContext, TagMapping

DEFAULT_V2_JUDGE = "alignment_judge"
SEED_ID_KEYS = ("seed_id", "sample_id", "seed")
# The sample uuid Petri puts at the end of the file name (a 22-character shortuuid).
_UUID_IN_NAME = re.compile(r"_([0-9A-Za-z]{22})\.json$")


def _split_scores(scores: dict[str, Any], bare_judge: str) -> dict[str, dict[str, Any]]:
    """{scorer: {dimension: value}} in the order Petri wrote them; bare keys -> bare_judge."""
    groups: dict[str, dict[str, Any]] = {}
    for key, value in scores.items():
        scorer, dim = str(key).rsplit("/", 1) if "/" in str(key) else (bare_judge, str(key))
        groups.setdefault(scorer, {})[dim] = value
    return groups


def _judge_groups(groups: dict[str, dict[str, Any]], scorers: Sequence[str] | None) -> list[str]:
    if scorers:
        return [g for g in groups if g in scorers]
    petri = [g for g in groups if is_judge_scorer(g)]
    return petri or [g for g in groups if g not in KNOWN_OTHER_SCORERS]


def _transcript(
    data: Any,
    path: Path,
    mapping: TagMapping,
    default_judge: str,
    scorers: Sequence[str] | None,
    aliases: dict[str, str],
    out: Collector,
) -> None:
    source = str(path)
    m = _UUID_IN_NAME.search(path.name)
    if not isinstance(data, dict) or not isinstance(data.get("metadata"), dict):
        out.drop(path.stem, source, "malformed", "field 'metadata': missing or not an object")
        return
    meta = data["metadata"]
    transcript_id = str(meta["transcript_id"]) if meta.get("transcript_id") else None
    rollout = m.group(1) if m else (transcript_id or path.stem)
    if transcript_id is not None:
        # A copy under another name has the same transcript id: same rollout.
        rollout = aliases.setdefault(transcript_id, rollout)
    for name in ("auditor_model", "target_model"):
        if not isinstance(meta.get(name), str) or not meta[name].strip():
            out.drop(rollout, source, "malformed", f"field 'metadata.{name}': missing or empty")
            return
    tags = meta.get("tags") or []
    if not isinstance(tags, list):
        out.drop(rollout, source, "malformed", "field 'metadata.tags': not a list")
        return
    seed_id = next((str(meta[k]) for k in SEED_ID_KEYS if meta.get(k)), None)
    seed_text = meta.get("seed_instruction") or meta.get("description")
    ctx = RolloutContext(
        tags=tuple(str(t) for t in tags),
        seed_id=seed_id,
        seed_text=str(seed_text) if seed_text else None,
        directories=path.resolve().parent.parts,
    )
    condition, behaviour, code, reason = mapping.resolve_context(ctx)
    if code:
        out.drop(rollout, source, code, reason or "")
        return
    assert condition is not None and behaviour is not None
    judge_output = meta.get("judge_output")
    scores = judge_output.get("scores") if isinstance(judge_output, dict) else None
    if not scores:
        out.drop(rollout, source, "judge_missing", "metadata.judge_output.scores is empty or null")
        return
    if not isinstance(scores, dict):
        out.drop(
            rollout, source, "malformed", "field 'metadata.judge_output.scores': not an object"
        )
        return
    assert isinstance(judge_output, dict)
    bare_judge = str(judge_output.get("judge_model") or meta.get("judge_model") or default_judge)
    groups = _split_scores(scores, bare_judge)
    judges = _judge_groups(groups, scorers)
    other = {f"{g}/{k}": v for g in groups if g not in judges for k, v in groups[g].items()}
    if other:
        names = sorted({k.split("/")[0] for k in other})
        out.note(
            f"scorer(s) {', '.join(names)} are not judges: their values are kept in the "
            "rollouts file (other_scores), not in the score table"
        )
    if not judges:
        out.drop(rollout, source, "no_judge_scorer", f"scorers present: {', '.join(groups)}")
        return
    labels = (behaviour, condition, str(meta["auditor_model"]), str(meta["target_model"]))
    common = {
        "format": "petri-v2-transcript",
        "transcript_id": transcript_id,
        "sample_uuid": m.group(1) if m else None,
        "sample_id": seed_id,
        "seed_instruction": ctx.seed_text,
        "tags": list(ctx.tags),
        "auditor_model": str(meta["auditor_model"]),
        "target_model": str(meta["target_model"]),
        "other_scores": other or None,
        "messages": transcript_messages(data.get("target_messages")),
    }
    for i, judge in enumerate(judges):
        first = i == 0
        texts = judge_output if first else {}
        js = judge_scores(
            groups[judge],
            summary=texts.get("summary"),
            justification=texts.get("justification"),
            response=texts.get("response"),
            marker_known=first,
        )
        if js.failure:
            out.drop(rollout, source, js.failure, js.detail, judge, len(groups[judge]))
            continue
        for drop_code, dims in js.dropped.items():
            out.drop(rollout, source, drop_code, ", ".join(dims)[:300], judge, len(dims))
        for n in js.notes:
            out.note(f"rollout {rollout} judge {judge}: {n}")
        details = {
            **common,
            "scorer": judge if "/" in "".join(scores) else None,
            "summary": texts.get("summary"),
            "justification": texts.get("justification"),
            "highlights": v2_highlights(texts.get("highlights")),
            "dimensions_dropped": js.dropped or None,
            "notes": js.notes
            or (None if first else ["summary, justification and highlights are the first judge's"]),
        }
        out.add(rollout, source, labels, judge, js.scores, details)


def import_petri_transcripts(
    directory: str | Path,
    mapping: TagMapping,
    default_judge: str = DEFAULT_V2_JUDGE,
    strict: bool = False,
    scorers: Sequence[str] | None = None,
) -> ImportResult:
    """Read every `*.json` transcript under a Petri v2 output directory (recursively).

    `scorers` names the judge scorers among the `<scorer>/` key prefixes (default: Petri's
    `alignment_judge*`, or every prefix but known non-judge scorers when none is Petri's);
    bare keys belong to `default_judge`. Judge failures, padded dimensions and out-of-range
    values are dropped with reasons; with `strict`, the first drop raises InputError.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"{directory}: not a directory of Petri transcripts")
    files = sorted(directory.rglob("*.json"))
    if not files:
        raise InputError(f"{directory}: no .json transcript files found")
    out = Collector(strict=strict)
    aliases: dict[str, str] = {}
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            out.drop(path.stem, str(path), "malformed", f"malformed JSON: {exc}")
            continue
        _transcript(data, path, mapping, default_judge, scorers, aliases, out)
    return out.result(str(directory))
