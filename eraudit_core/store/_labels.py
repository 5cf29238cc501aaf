"""An auditor's labels on scored rewordings: "not meaning-preserving" or a note.

Labels are append-only records with who made them and when, so a later reader sees how a
rewording came to be doubted. A label points at one step of one run (pair, stage, generator,
t) and keeps the rewording's text, so it still reads right if the run is copied elsewhere.
"""

from __future__ import annotations

import uuid
from typing import Any

import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.store._tables import Tables, _filtered, _now

NOT_MEANING_PRESERVING = "not meaning-preserving"
NOTE = "note"
PARAPHRASE_LABELS = (NOT_MEANING_PRESERVING, NOTE)
LABEL_COLUMNS = [
    "label_id",
    "run_id",
    "pair_id",
    "stage",
    "generator",
    "t",
    "text",
    "label",
    "note",
    "author",
    "created_at",
]


class LabelTables(Tables):
    """Labels on the steps of a run (append-only)."""

    def add_paraphrase_label(
        self,
        run_id: str,
        pair_id: str,
        *,
        stage: int,
        generator: str,
        t: int,
        label: str,
        author: str,
        note: str = "",
    ) -> str:
        """Record a label on one scored rewording; returns the label's id. The step must be
        stored (InputError naming run, pair and step otherwise)."""
        if label not in PARAPHRASE_LABELS:
            raise InputError(
                f"label: {label!r} is not one of {', '.join(repr(x) for x in PARAPHRASE_LABELS)}"
            )
        if not author.strip():
            raise InputError("label: author is empty (say who made the label)")
        if label == NOTE and not note.strip():
            raise InputError("label: a note needs its text")
        where = f"run {run_id}, pair {pair_id}, stage {stage}, generator {generator}, t {t}"
        found = self._rows(
            "SELECT text FROM run_steps WHERE run_id = ? AND pair_id = ? AND stage = ? "
            "AND generator = ? AND t = ?",
            [run_id, pair_id, int(stage), generator, int(t)],
        )
        if not found:
            raise InputError(f"label: no scored rewording at {where}")
        label_id = uuid.uuid4().hex
        with self._write() as w:
            w.execute(
                f"INSERT INTO paraphrase_labels ({', '.join(LABEL_COLUMNS)}) "
                f"VALUES ({', '.join('?' for _ in LABEL_COLUMNS)})",
                [
                    label_id,
                    run_id,
                    pair_id,
                    int(stage),
                    generator,
                    int(t),
                    found[0][0],
                    label,
                    note.strip() or None,
                    author.strip(),
                    _now(),
                ],
            )
        return label_id

    def paraphrase_labels(self, run_id: str, pair_id: str | None = None) -> pd.DataFrame:
        """Every label on the steps of a run (oldest first); columns LABEL_COLUMNS."""
        sql, params = _filtered(
            f"SELECT {', '.join(LABEL_COLUMNS)} FROM paraphrase_labels",
            run_id=run_id,
            pair_id=pair_id,
        )
        return self._df(sql + " ORDER BY created_at, label_id", params)

    def labelled_invalid(self, run_id: str) -> list[dict[str, Any]]:
        """The steps of a run labelled not meaning-preserving: one record per step (pair_id,
        stage, generator, t, text, author, created_at of its first such label)."""
        labels = self.paraphrase_labels(run_id)
        bad = labels[labels["label"] == NOT_MEANING_PRESERVING]
        bad = bad.drop_duplicates(["pair_id", "stage", "generator", "t"], keep="first")
        cols = ["pair_id", "stage", "generator", "t", "text", "author", "created_at"]
        return [
            {
                **{str(k): v for k, v in r.items()},
                "stage": int(r["stage"]),
                "t": int(r["t"]),
                "created_at": str(r["created_at"]),
            }
            for r in bad[cols].to_dict("records")
        ]
