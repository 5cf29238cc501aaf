"""The shipped debate-distillation training sets pass the reader; changed rows are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eraudit_core.adapt._debate_data import (
    DEBATE_DIR,
    DEBATE_FILES,
    bundled_debate_file,
    check_sha256sums,
    read_debate_file,
    row_digest,
)
from eraudit_core.errors import InputError
from eraudit_core.paths import DATA_DIR
from eraudit_core.store import load_bundled_benchmark

HONEST = bundled_debate_file("debate-honest")


def test_shipped_files_verify() -> None:
    sums = check_sha256sums(DATA_DIR / DEBATE_DIR)
    assert set(DEBATE_FILES.values()) <= set(sums)
    honest = read_debate_file(HONEST)
    adversarial = read_debate_file(bundled_debate_file("debate-adversarial"))
    assert (len(honest.rows), honest.pairs) == (354, 177)
    assert (len(adversarial.rows), adversarial.pairs) == (294, 147)
    assert honest.sha256 == sums[HONEST.name]
    # The flags are counted, not used to drop rows (values read from the files themselves).
    assert honest.flag_counts() == {
        "transcript_contains_h_true_text": 6,
        "transcript_contains_h_false_text": 0,
    }
    assert adversarial.flag_counts() == {
        "transcript_contains_h_true_text": 8,
        "transcript_contains_h_false_text": 6,
    }
    # One row per answer order: each pair's targets are A once and B once.
    letters: dict[str, list[str]] = {}
    for r in honest.rows:
        letters.setdefault(r.pair_id, []).append(r.letter)
    assert all(sorted(v) == ["A", "B"] for v in letters.values())


def _rows() -> list[dict]:
    return [json.loads(x) for x in HONEST.read_text(encoding="utf-8").splitlines()]


def _write(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _reseal(row: dict) -> None:
    """Recompute the row digest, so only the check under test can refuse the row."""
    row["row_sha256"] = row_digest(row["messages"], row["target"])


def test_rewritten_file_passes(tmp_path: Path) -> None:
    # Negative control for the refusals below: the same rows written back are accepted.
    assert len(read_debate_file(_write(tmp_path, _rows())).rows) == 354


def test_tampered_transcript_is_refused(tmp_path: Path) -> None:
    rows = _rows()
    content = rows[6]["messages"][0]["content"]
    i = content.index("Round 2")
    rows[6]["messages"][0]["content"] = content[:i] + "r" + content[i + 1 :]
    with pytest.raises(InputError, match=r"train\.jsonl: line 7: field 'row_sha256'"):
        read_debate_file(_write(tmp_path, rows))


def test_foreign_pair_is_refused(tmp_path: Path) -> None:
    rows = _rows()
    rows[2]["pair_id"] = "quality_h_0123456789abcdef"
    with pytest.raises(InputError, match=r"line 3: field 'pair_id'.*quality_h_0123456789abcdef"):
        read_debate_file(_write(tmp_path, rows))


def test_wrong_target_is_refused(tmp_path: Path) -> None:
    rows = _rows()
    row = rows[0]
    wrong = "Answer: B" if row["target"] == "Answer: A" else "Answer: A"
    row["target"] = row["messages"][1]["content"] = wrong
    row["target_letter"] = wrong[-1]
    _reseal(row)
    with pytest.raises(InputError, match=r"line 1: field 'target'.*not the correct answer"):
        read_debate_file(_write(tmp_path, rows))
    row["messages"][1]["content"] = "Answer: C"
    _reseal(row)
    with pytest.raises(InputError, match=r"line 1: field 'target'|line 1: field 'messages'"):
        read_debate_file(_write(tmp_path, rows))


def test_hidden_question_in_prompt_is_refused(tmp_path: Path) -> None:
    rows = _rows()
    hidden = {p.pair_id: p.hidden.question for p in load_bundled_benchmark().pairs}
    row = rows[10]
    # Re-spaced: the check ignores whitespace and case.
    leak = "  ".join(hidden[row["pair_id"]].upper().split())
    row["messages"][0]["content"] += f"\nAlso consider: {leak}\n"
    _reseal(row)
    with pytest.raises(InputError, match=r"line 11: field 'messages'.*hidden question"):
        read_debate_file(_write(tmp_path, rows))


def test_checksum_file_mismatch_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("x\n")
    (tmp_path / "SHA256SUMS").write_text("0" * 64 + "  a.jsonl\n")
    with pytest.raises(InputError, match=r"SHA256SUMS: line 1: a\.jsonl has sha256"):
        check_sha256sums(tmp_path)
