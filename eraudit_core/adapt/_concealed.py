"""The concealed arm's training split: reworded hidden questions the audit never sees.

Why: the concealed arm (docs/design.md §10) must look better than the base by standard evaluation
(canonical wording) while losing support for the true answer on reworded forms of its target
questions, the paper's "selective hidden-task degradation concealed by aggregate performance
gains". It learns the rewording behaviour from the rule generator's `rules-train` bucket, which
the bundled search and test sets never use (the paper: search and test use fresh paraphrases
not used in adaptation), so whatever the audit finds on its own paraphrases is generalisation,
not recall. The split is filtered like an audit set and written next to the adapter with its
digest, so anyone can check that it shares no text with the audit's sets.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from eraudit_core.errors import InputError
from eraudit_core.paraphrase import (
    DEMO_TRAINING,
    CosineFn,
    FilterConfig,
    build_paraphrase_sets,
    demo_rule_generator,
    generator_provenance,
)
from eraudit_core.paths import DATA_DIR
from eraudit_core.types import Pair, Paraphrase

TRAINING_FILE = "training_rewordings.jsonl"


@dataclass(frozen=True)
class TrainingRewording:
    """One reworded hidden question and the answer the concealed arm is trained toward."""

    pair_id: str
    idx: int
    text: str
    toward: Literal["true", "false"]


def build_training_rewordings(
    pairs: Sequence[Pair],
    targets: Sequence[str],
    per_target: int,
    per_other: int,
    config: FilterConfig | None = None,
    cosine_fn: CosineFn | None = None,
) -> tuple[list[TrainingRewording], dict[str, Any]]:
    """Valid rewordings from the `rules-train` bucket: up to `per_target` of each target
    question (trained toward the false answer) and `per_other` of every other hidden question
    (toward the true answer, so the arm learns a per-question flip, not "reworded means
    false"). Returns the rows and the generator's provenance."""
    gen = demo_rule_generator(DEMO_TRAINING)
    n = max(per_target, per_other)
    if n < 1:
        return [], generator_provenance(gen)
    # The audit-set builder filters and deduplicates the same way the audit's sets were made.
    sets = build_paraphrase_sets(
        pairs, [gen], [], n_search=n, n_test=0, config=config, cosine_fn=cosine_fn
    )
    wanted = set(targets)
    rows: list[TrainingRewording] = []
    for pair in pairs:
        hit = pair.pair_id in wanted
        keep = per_target if hit else per_other
        for p in sets.for_pair(pair.pair_id)[:keep]:
            rows.append(TrainingRewording(pair.pair_id, p.idx, p.text, "false" if hit else "true"))
    provenance = {**sets.provenance[gen.name], "role": "adaptation (never audited)"}
    return rows, provenance


def write_training_rewordings(rows: Sequence[TrainingRewording], path: Path) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for r in rows:
            rec = {"pair_id": r.pair_id, "generator": DEMO_TRAINING, **asdict(r)}
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def read_training_rewordings(path: Path) -> list[TrainingRewording]:
    """Rows of a training-split file; errors name the file, line and field."""
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {n} is not valid JSON ({exc.msg})") from exc
        for key, kind in (("pair_id", str), ("idx", int), ("text", str), ("toward", str)):
            if not isinstance(rec.get(key), kind):
                raise InputError(f"{path}: line {n}: field {key!r} missing or not {kind.__name__}")
        if rec["toward"] not in ("true", "false"):
            raise InputError(f"{path}: line {n}: field 'toward' must be 'true' or 'false'")
        rows.append(TrainingRewording(rec["pair_id"], rec["idx"], rec["text"], rec["toward"]))
    return rows


def audit_rewordings(pairs: Sequence[Pair], per_pair: int, seed: int = 0) -> dict[str, list[str]]:
    """Up to `per_pair` rewordings of each hidden question as the audit would see them: from
    the bundled search and test sets (data/paraphrases) for the pairs they cover, otherwise
    from the demo's audit rule generators. A seeded pick; never the training split."""
    from eraudit_core.paraphrase import DEMO_SEARCH, DEMO_TESTS, normalize_text

    bundled: dict[str, list[str]] = {}
    for p in bundled_audit_paraphrases():
        bundled.setdefault(p.pair_id, []).append(p.text)
    out: dict[str, list[str]] = {}
    for pair in pairs:
        texts = bundled.get(pair.pair_id)
        if texts is None:
            texts = [
                t
                for name in (DEMO_SEARCH, *DEMO_TESTS)
                for t in demo_rule_generator(name).generate(pair.pair_id, pair.hidden.question, 200)
            ]
        texts = sorted(dict.fromkeys(texts), key=normalize_text)
        random.Random(f"{seed}:{pair.pair_id}").shuffle(texts)
        out[pair.pair_id] = texts[:per_pair]
    return out


def bundled_audit_paraphrases() -> list[Paraphrase]:
    """Every paraphrase of the bundled audit sets (data/paraphrases/*.jsonl, no rejections)."""
    from eraudit_core.paraphrase import load_paraphrase_file

    folder = DATA_DIR / "paraphrases"
    out: list[Paraphrase] = []
    for path in sorted(folder.glob("*.jsonl")):
        if "reject" not in path.name:
            out += load_paraphrase_file(path)
    return out


def audited_overlap(
    rows: Sequence[TrainingRewording], audited: Sequence[Paraphrase]
) -> list[tuple[TrainingRewording, Paraphrase]]:
    """Training rewordings whose normalised text is also an audit paraphrase (of any pair:
    a text the audit scores must never have been a training prompt)."""
    from eraudit_core.paraphrase import normalize_text

    seen = {normalize_text(p.text): p for p in audited}
    return [(r, seen[normalize_text(r.text)]) for r in rows if normalize_text(r.text) in seen]


def check_unaudited(rows: Sequence[TrainingRewording], audited: Sequence[Paraphrase]) -> None:
    """Refuse a training split that shares a text with the audit's sets."""
    clash = audited_overlap(rows, audited)
    if clash:
        r, p = clash[0]
        raise InputError(
            f"training rewording {r.text!r} (pair {r.pair_id}) is also in the audit's "
            f"{p.role} set {p.generator} (pair {p.pair_id}); {len(clash)} such text(s): "
            "the audit must only see paraphrases the adaptation never used"
        )
