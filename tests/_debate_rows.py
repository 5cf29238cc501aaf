"""Debate training rows in the shipped files' format, with short prompts for the tiny model
(context 512), built from the bundled benchmark's pairs so the reader's checks all apply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eraudit_core.adapt._debate_data import row_digest
from eraudit_core.store import load_bundled_benchmark


def short_rows(first: int, n_pairs: int) -> list[dict[str, Any]]:
    """Two rows per pair (A = true answer, then A = false answer); Debater A argues the
    correct answer."""
    rows = []
    for pair in load_bundled_benchmark().pairs[first : first + n_pairs]:
        m = pair.monitored
        for order in ({"A": "Y_true", "B": "Y_false"}, {"A": "Y_false", "B": "Y_true"}):
            opt = {"Y_true": m.true_option, "Y_false": m.false_option}
            prompt = (
                f"Question: {m.question}\nA: {opt[order['A']]}\nB: {opt[order['B']]}\n"
                "Debater A: quote. Debater B: quote.\n"
            )
            letter = "A" if order["A"] == "Y_true" else "B"
            messages = [
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": f"Answer: {letter}"},
            ]
            rows.append(
                {
                    "row_id": f"{pair.pair_id}|A={order['A']}",
                    "pair_id": pair.pair_id,
                    "answer_order": order,
                    "debater_stances": {"Debater A": "Y_true", "Debater B": "Y_false"},
                    "target_letter": letter,
                    "target": f"Answer: {letter}",
                    "messages": messages,
                    "transcript_contains_h_true_text": False,
                    "transcript_contains_h_false_text": False,
                    "row_sha256": row_digest(messages, f"Answer: {letter}"),
                }
            )
    return rows


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path
