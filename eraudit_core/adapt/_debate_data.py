"""The debate-distillation training sets (data/debate_train/): read and verify every row.

Why: the debate arms are only the paper's experiment if they are trained on the paper's own
transcripts, unchanged. Each row carries `row_sha256` over its messages and target, so a row
is checked on its own (a changed character anywhere in the prompt is refused), and each row is
checked against the bundled QuALITY-H benchmark: its pair exists, the prompt shows that pair's
monitored question with its two answers in the row's stated order, the target is the correct
answer's letter, and the hidden question never appears in the prompt (the arm must not see
what the audit later asks). The files' own flags saying a transcript happens to contain a
hidden answer's text are counted and reported, never used to drop rows (docs/debate-distillation.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.paths import DATA_DIR
from eraudit_core.types import Pair

DEBATE_DIR = "debate_train"
# arm name -> the reference repository's file it is trained on
DEBATE_FILES: dict[str, str] = {
    "debate-honest": "QuALITY-H-verifier-fullft-train.jsonl",
    "debate-adversarial": "QuALITY-H-verifier-fullft-adversarial-train.jsonl",
}
_TARGET = re.compile(r"Answer: ([AB])")
_HEX64 = re.compile(r"[0-9a-f]{64}")
FLAGS = ("transcript_contains_h_true_text", "transcript_contains_h_false_text")


@dataclass(frozen=True)
class DebateRow:
    """One training row: the judge prompt (user message) and its answer (`Answer: A|B`)."""

    line: int
    row_id: str
    pair_id: str
    prompt: str
    target: str
    row_sha256: str
    contains_h_true: bool
    contains_h_false: bool

    @property
    def letter(self) -> str:
        return self.target[-1]


@dataclass(frozen=True)
class DebateFile:
    """A verified training file: its rows, its digest and what its flags say."""

    path: Path
    sha256: str
    rows: list[DebateRow] = field(repr=False)

    @property
    def pairs(self) -> int:
        return len({r.pair_id for r in self.rows})

    def flag_counts(self) -> dict[str, int]:
        """Rows whose transcript contains a hidden answer's text (reported, not excluded)."""
        return {
            "transcript_contains_h_true_text": sum(r.contains_h_true for r in self.rows),
            "transcript_contains_h_false_text": sum(r.contains_h_false for r in self.rows),
        }

    def describe(self) -> dict[str, Any]:
        return {
            "file": self.path.name,
            "sha256": self.sha256,
            "rows": len(self.rows),
            "pairs": self.pairs,
            "flags": self.flag_counts(),
        }


def row_digest(messages: Any, target: Any) -> str:
    """The files' own row digest: sha256 of the canonical JSON of [messages, target]."""
    text = json.dumps([messages, target], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def bundled_debate_file(arm: str) -> Path:
    """The shipped training file of a debate arm."""
    if arm not in DEBATE_FILES:
        raise InputError(f"arm: expected one of {sorted(DEBATE_FILES)}, got {arm!r}")
    return DATA_DIR / DEBATE_DIR / DEBATE_FILES[arm]


def check_sha256sums(folder: Path) -> dict[str, str]:
    """Verify every file listed in `folder/SHA256SUMS`; return name -> digest."""
    sums = folder / "SHA256SUMS"
    if not sums.is_file():
        raise InputError(f"{sums}: no such file")
    out: dict[str, str] = {}
    for n, line in enumerate(sums.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split(maxsplit=1)
        if len(parts) != 2 or not _HEX64.fullmatch(parts[0]):
            raise InputError(f"{sums}: line {n}: expected '<sha256>  <file name>'")
        digest, name = parts[0], parts[1].lstrip("*").strip()
        actual = _file_sha256(folder / name)
        if actual != digest:
            raise InputError(f"{sums}: line {n}: {name} has sha256 {actual}, expected {digest}")
        out[name] = digest
    return out


def read_debate_file(path: Path, pairs: Sequence[Pair] | None = None) -> DebateFile:
    """Every row of a training file, verified; refusals name the file, line and field.

    `pairs`: the benchmark the rows must belong to (default: the bundled QuALITY-H).
    """
    if pairs is None:
        from eraudit_core.store import load_bundled_benchmark

        pairs = load_bundled_benchmark().pairs
    by_id = {p.pair_id: p for p in pairs}
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    rows: list[DebateRow] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = _check_row(path, n, line, by_id)
        if row.row_id in seen:
            raise InputError(
                f"{path}: line {n}: field 'row_id': {row.row_id!r} repeats line {seen[row.row_id]}"
            )
        seen[row.row_id] = n
        rows.append(row)
    if not rows:
        raise InputError(f"{path}: no rows")
    return DebateFile(path, hashlib.sha256(raw).hexdigest(), rows)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _check_row(path: Path, n: int, line: str, pairs: Mapping[str, Pair]) -> DebateRow:
    where = f"{path}: line {n}"
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where} is not valid JSON ({exc.msg})") from None
    if not isinstance(rec, dict):
        raise InputError(f"{where} is not a JSON object")

    def need(key: str, kind: type) -> Any:
        value = rec.get(key)
        if not isinstance(value, kind):
            raise InputError(f"{where}: field {key!r} missing or not {kind.__name__}")
        return value

    messages = need("messages", list)
    target = need("target", str)
    digest = need("row_sha256", str)
    if not _HEX64.fullmatch(digest):
        raise InputError(f"{where}: field 'row_sha256' is not 64 lowercase hex digits")
    actual = row_digest(messages, target)
    if actual != digest:
        raise InputError(
            f"{where}: field 'row_sha256' does not match the row's messages and target "
            f"(recomputed {actual}): the row was changed"
        )
    pair_id = need("pair_id", str)
    pair = pairs.get(pair_id)
    if pair is None:
        raise InputError(f"{where}: field 'pair_id': {pair_id!r} is not a pair of the benchmark")
    if not (
        len(messages) == 2
        and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages)
        and [m.get("role") for m in messages] == ["user", "assistant"]
    ):
        raise InputError(f"{where}: field 'messages': expected a user then an assistant message")
    prompt, answer = messages[0]["content"], messages[1]["content"]
    match = _TARGET.fullmatch(target)
    if match is None:
        raise InputError(f"{where}: field 'target': expected 'Answer: A' or 'Answer: B'")
    if answer != target:
        raise InputError(
            f"{where}: field 'messages': the assistant says {answer!r}, not {target!r}"
        )
    letter = match.group(1)
    if rec.get("target_letter", letter) != letter:
        raise InputError(f"{where}: field 'target_letter' disagrees with target {target!r}")
    order = need("answer_order", dict)
    if sorted(order) != ["A", "B"] or sorted(order.values()) != ["Y_false", "Y_true"]:
        raise InputError(f"{where}: field 'answer_order': expected A and B to Y_true and Y_false")
    if order[letter] != "Y_true":
        raise InputError(
            f"{where}: field 'target': {target!r} names {order[letter]}, not the correct answer"
        )
    m = pair.monitored
    options = {"Y_true": m.true_option, "Y_false": m.false_option}
    shown = f"Question: {m.question}\nA: {options[order['A']]}\nB: {options[order['B']]}\n"
    if shown not in prompt:
        raise InputError(
            f"{where}: field 'messages': the prompt does not show pair {pair_id}'s monitored "
            "question with its answers in the row's answer_order"
        )
    if _norm(pair.hidden.question) in _norm(prompt):
        raise InputError(
            f"{where}: field 'messages': the prompt contains the hidden question of {pair_id}"
        )
    flags = []
    for key in FLAGS:
        value = rec.get(key, False)
        if not isinstance(value, bool):
            raise InputError(f"{where}: field {key!r} is not true/false")
        flags.append(value)
    row_id = rec.get("row_id", f"{pair_id}|{order['A']}")
    if not isinstance(row_id, str):
        raise InputError(f"{where}: field 'row_id' is not a string")
    return DebateRow(n, row_id, pair_id, prompt, target, digest, flags[0], flags[1])


def _file_sha256(path: Path) -> str:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
