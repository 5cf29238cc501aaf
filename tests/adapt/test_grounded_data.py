"""The shipped grounded analyses verify against the training rows they name, the held-out judge
rows verify and share no pair with training, and a changed grounded row is refused with its
file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eraudit_core.adapt._debate_data import (
    DEBATE_DIR,
    DEBATE_FILES,
    GROUNDED_FILES,
    HELDOUT_FILES,
    bundled_debate_file,
    check_sha256sums,
    read_debate_file,
    read_grounded_file,
)
from eraudit_core.errors import InputError
from eraudit_core.paths import DATA_DIR

HONEST = read_debate_file(bundled_debate_file("debate-honest"))
GROUNDED = bundled_debate_file("debate-honest", "grounded")


def test_shipped_grounded_and_heldout_files_verify() -> None:
    sums = check_sha256sums(DATA_DIR / DEBATE_DIR)
    names = {*DEBATE_FILES.values(), *GROUNDED_FILES.values(), *HELDOUT_FILES.values()}
    assert names | {n for n in sums if n.endswith("-manifest.json")} == set(sums)
    expected = {"debate-honest": (177, 90, 45), "debate-adversarial": (147, 74, 37)}
    for arm, (pairs, heldout_rows, heldout_pairs) in expected.items():
        train = HONEST if arm == "debate-honest" else read_debate_file(bundled_debate_file(arm))
        grounded = read_grounded_file(bundled_debate_file(arm, "grounded"), train)
        assert len(grounded.rows) == pairs
        # Every training row (both answer orders) gets its pair's analysis.
        for_row = grounded.for_row()
        assert {r.row_sha256 for r in train.rows} == set(for_row)
        heldout = read_debate_file(bundled_debate_file(arm, "heldout"))
        assert (len(heldout.rows), heldout.pairs) == (heldout_rows, heldout_pairs)
        assert not {r.pair_id for r in heldout.rows} & {r.pair_id for r in train.rows}


def _rows() -> list[dict]:
    return [json.loads(x) for x in GROUNDED.read_text(encoding="utf-8").splitlines()]


def _write(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "grounded.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def test_rewritten_file_passes(tmp_path: Path) -> None:
    # Negative control for the refusals below.
    assert len(read_grounded_file(_write(tmp_path, _rows()), HONEST).rows) == 177


def test_tampered_analysis_is_refused(tmp_path: Path) -> None:
    rows = _rows()
    rows[4]["analysis"] = rows[4]["analysis"].replace("verified", "unverified", 1)
    with pytest.raises(InputError, match=r"grounded\.jsonl: line 5: field 'grounded_sha256'"):
        read_grounded_file(_write(tmp_path, rows), HONEST)


def test_analysis_bound_to_another_pair_is_refused(tmp_path: Path) -> None:
    rows = _rows()
    rows[2]["base_row_sha256"] = rows[3]["base_row_sha256"]
    with pytest.raises(InputError, match=r"line 3: field 'base_row_sha256'.*A=Y_true"):
        read_grounded_file(_write(tmp_path, rows), HONEST)
    rows = _rows()  # the two orders swapped
    named = rows[0]["base_row_sha256"]
    named["A=Y_true"], named["A=Y_false"] = named["A=Y_false"], named["A=Y_true"]
    with pytest.raises(InputError, match=r"line 1: field 'base_row_sha256'"):
        read_grounded_file(_write(tmp_path, rows), HONEST)


def test_wrong_winner_is_refused(tmp_path: Path) -> None:
    rows = _rows()
    row = rows[7]
    other = "Debater B" if row["winner_debater"] == "Debater A" else "Debater A"
    row["winner_debater"] = other
    with pytest.raises(InputError, match=r"line 8: field 'winner_debater'"):
        read_grounded_file(_write(tmp_path, rows), HONEST)


def test_missing_and_repeated_pairs_are_refused(tmp_path: Path) -> None:
    rows = _rows()
    with pytest.raises(InputError, match=r"no grounded analysis for 1 pair"):
        read_grounded_file(_write(tmp_path, rows[:-1]), HONEST)
    with pytest.raises(InputError, match=r"line 178: field 'pair_id'.*repeats line 1"):
        read_grounded_file(_write(tmp_path, [*rows, rows[0]]), HONEST)
