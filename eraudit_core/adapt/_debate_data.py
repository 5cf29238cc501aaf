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
# arm -> the grounded analyses of its training pairs (teacher-written, audited by the reference)
GROUNDED_FILES: dict[str, str] = {
    "debate-honest": "QuALITY-H-verifier-fullft-train-grounded.jsonl",
    "debate-adversarial": "QuALITY-H-verifier-fullft-adversarial-train-grounded.jsonl",
}
# arm -> the reference's held-out judge rows (other stories; never the audit's questions)
HELDOUT_FILES: dict[str, str] = {
    "debate-honest": "QuALITY-H-verifier-fullft-eval.jsonl",
    "debate-adversarial": "QuALITY-H-verifier-fullft-adversarial-eval.jsonl",
}
ORIENTATIONS = ("A=Y_true", "A=Y_false")
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
    orientation: str = ""
    stances: tuple[tuple[str, str], ...] = ()

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


@dataclass(frozen=True)
class GroundedRow:
    """One grounded analysis: the text trained with the language-model loss, and the two
    training rows (one per answer order) it belongs to, by their `row_sha256`."""

    line: int
    pair_id: str
    analysis: str
    grounded_sha256: str
    base_rows: tuple[tuple[str, str], ...]  # (orientation, row_sha256)
    winner: str


@dataclass(frozen=True)
class GroundedFile:
    """A verified grounded file: every analysis bound to rows of its training file."""

    path: Path
    sha256: str
    rows: list[GroundedRow] = field(repr=False)

    def for_row(self) -> dict[str, str]:
        """Training row digest -> the analysis trained after that row's judge prompt."""
        return {digest: g.analysis for g in self.rows for _, digest in g.base_rows}

    def describe(self) -> dict[str, Any]:
        return {"file": self.path.name, "sha256": self.sha256, "pairs": len(self.rows)}


def row_digest(messages: Any, target: Any) -> str:
    """The files' own row digest: sha256 of the canonical JSON of [messages, target]."""
    text = json.dumps([messages, target], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def bundled_debate_file(arm: str, kind: str = "train") -> Path:
    """A shipped file of a debate arm: its training rows (`train`), the grounded analyses of
    its training pairs (`grounded`) or the reference's held-out judge rows (`heldout`)."""
    files = {"train": DEBATE_FILES, "grounded": GROUNDED_FILES, "heldout": HELDOUT_FILES}
    if kind not in files:
        raise InputError(f"debate file kind: expected one of {sorted(files)}, got {kind!r}")
    if arm not in DEBATE_FILES:
        raise InputError(f"arm: expected one of {sorted(DEBATE_FILES)}, got {arm!r}")
    return DATA_DIR / DEBATE_DIR / files[kind][arm]


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
    raw, text = _read_text(path)
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


def read_grounded_file(path: Path, base: DebateFile) -> GroundedFile:
    """Every grounded analysis of `path`, each verified against the training rows it names.

    A row passes when `grounded_sha256` is the sha256 of its `analysis`, `base_row_sha256`
    names, for each answer order, the `row_sha256` of a row of `base` of the same pair and
    that order, its `winner_debater` argues the correct answer in those rows and the analysis
    concludes for that debater. Every pair of `base` needs exactly one analysis. Refusals name
    the file, line and field.
    """
    path = Path(path)
    raw, text = _read_text(path)
    by_digest = {r.row_sha256: r for r in base.rows}
    rows: list[GroundedRow] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = _check_grounded(f"{path}: line {n}", n, line, by_digest)
        if row.pair_id in seen:
            raise InputError(
                f"{path}: line {n}: field 'pair_id': {row.pair_id!r} repeats line "
                f"{seen[row.pair_id]}"
            )
        seen[row.pair_id] = n
        rows.append(row)
    missing = sorted({r.pair_id for r in base.rows} - set(seen))
    if missing:
        raise InputError(
            f"{path}: no grounded analysis for {len(missing)} pair(s) of {base.path.name}, "
            f"first {missing[0]}"
        )
    return GroundedFile(path, hashlib.sha256(raw).hexdigest(), rows)


def _json_object(where: str, line: str) -> dict[str, Any]:
    """One JSONL line as a JSON object, or an InputError naming the file and line."""
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where} is not valid JSON ({exc.msg})") from None
    if not isinstance(rec, dict):
        raise InputError(f"{where} is not a JSON object")
    return rec


def _check_grounded(where: str, n: int, line: str, base: Mapping[str, DebateRow]) -> GroundedRow:
    rec = _json_object(where, line)

    def need(key: str, kind: type) -> Any:
        value = rec.get(key)
        if not isinstance(value, kind) or not value:
            raise InputError(f"{where}: field {key!r} missing, empty or not {kind.__name__}")
        return value

    pair_id = need("pair_id", str)
    analysis = need("analysis", str)
    digest = need("grounded_sha256", str)
    actual = hashlib.sha256(analysis.encode("utf-8")).hexdigest()
    if actual != digest:
        raise InputError(
            f"{where}: field 'grounded_sha256' does not match the analysis (recomputed "
            f"{actual}): the analysis was changed"
        )
    named = need("base_row_sha256", dict)
    if sorted(named) != sorted(ORIENTATIONS):
        raise InputError(f"{where}: field 'base_row_sha256': expected keys {list(ORIENTATIONS)}")
    winner = need("winner_debater", str)
    for orientation in ORIENTATIONS:
        row = base.get(named[orientation]) if isinstance(named[orientation], str) else None
        if row is None or row.pair_id != pair_id or row.orientation != orientation:
            raise InputError(
                f"{where}: field 'base_row_sha256': {orientation} names "
                f"{str(named[orientation])[:16]}..., not a {orientation} row of pair "
                f"{pair_id} in the training file"
            )
        if row.stances and dict(row.stances).get(winner) != "Y_true":
            raise InputError(
                f"{where}: field 'winner_debater': {winner!r} does not argue the correct "
                f"answer in training line {row.line}"
            )
    if f"Conclusion: {winner} presents the stronger case." not in analysis:
        raise InputError(f"{where}: field 'analysis' does not conclude for {winner!r}")
    base_rows = tuple((o, str(named[o])) for o in ORIENTATIONS)
    return GroundedRow(n, pair_id, analysis, digest, base_rows, winner)


def _read_text(path: Path) -> tuple[bytes, str]:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    raw = path.read_bytes()
    try:
        return raw, raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _nbsp(text: str) -> str:
    """No-break spaces as spaces: one held-out prompt keeps a U+00A0 where the bundled
    benchmark's copy of the same answer has a space."""
    return text.replace("\xa0", " ")


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _check_row(path: Path, n: int, line: str, pairs: Mapping[str, Pair]) -> DebateRow:
    where = f"{path}: line {n}"
    rec = _json_object(where, line)

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
    if _nbsp(shown) not in _nbsp(prompt):
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
    stances = rec.get("debater_stances", {})
    if not isinstance(stances, dict) or not all(isinstance(v, str) for v in stances.values()):
        raise InputError(f"{where}: field 'debater_stances' is not an object of strings")
    return DebateRow(
        n,
        row_id,
        pair_id,
        prompt,
        target,
        digest,
        flags[0],
        flags[1],
        f"A={order['A']}",
        tuple(sorted(stances.items())),
    )


def _file_sha256(path: Path) -> str:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
