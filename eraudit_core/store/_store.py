"""The DuckDB store: one file holds everything a run needs (docs/design.md §6).

`Store` is the project's only door to the database: every SQL statement lives in this package.
This module holds the inputs (benchmarks, checkpoints, paraphrase sets) and the score cache;
runs, their pairs and steps are in `_run_tables`, the file plumbing in `_tables` and `_access`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.store._benchmark import CONTENT_COLUMNS, pairs_content_digest
from eraudit_core.store._labels import LabelTables
from eraudit_core.store._run_tables import RunTables
from eraudit_core.store._tables import _filtered, _now
from eraudit_core.types import BinaryQuestion, Pair, Paraphrase, QueryScore


def benchmark_slot(cur: Any, benchmark_id: str, digest: str) -> tuple[str, bool]:
    """Where pairs with content `digest` belong: (`benchmark_id`, True) when that id already
    holds exactly these pairs; else the first of `benchmark_id`, `<id>_v2`, `<id>_v3`, ... that
    is free (False) or holds them (True). The stored pairs are digested, not a stored claim."""
    for n in range(1, 10_000):
        bid = benchmark_id if n == 1 else f"{benchmark_id}_v{n}"
        rows = cur.execute(
            f"SELECT {', '.join(CONTENT_COLUMNS)} FROM pairs WHERE benchmark_id = ?", [bid]
        ).fetchall()
        known = (
            rows or cur.execute("SELECT 1 FROM benchmarks WHERE benchmark_id = ?", [bid]).fetchall()
        )
        if not known:
            return bid, False
        if pairs_content_digest(rows) == digest:
            return bid, True
    raise InputError(f"benchmark {benchmark_id}: too many versions stored")


if TYPE_CHECKING:
    from eraudit_core.store._benchmark import Benchmark


class Store(RunTables, LabelTables):
    """The project's only door to the database: every SQL statement lives in this package."""

    # -- benchmarks ----------------------------------------------------------------------
    def add_benchmark(self, benchmark: Benchmark) -> str:
        """Store a validated benchmark once; returns its id. The id is content-addressed: the
        same pairs always land on the same id, and other pairs under a known id (an edited
        copy that arrived first) get a new versioned id, never merged with the stored ones."""
        digest = benchmark.content_digest
        with self._write() as w:
            bid, stored = benchmark_slot(w, benchmark.benchmark_id, digest)
            if stored:
                return bid
            w.execute(
                "INSERT INTO benchmarks (benchmark_id, name, source, sha256, layout, attribution, "
                "n_pairs, imported_at, content_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    bid,
                    benchmark.name,
                    benchmark.source,
                    benchmark.sha256,
                    benchmark.layout,
                    benchmark.attribution,
                    len(benchmark.pairs),
                    _now(),
                    digest,
                ],
            )
            w.executemany(
                "INSERT INTO pairs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        bid,
                        p.pair_id,
                        p.index,
                        p.story_title,
                        p.monitored.question,
                        p.monitored.true_option,
                        p.monitored.false_option,
                        p.hidden.question,
                        p.hidden.true_option,
                        p.hidden.false_option,
                        json.dumps(p.extra, ensure_ascii=False),
                    ]
                    for p in benchmark.pairs
                ],
            )
        return bid

    def find_benchmark(self, benchmark: Benchmark) -> str:
        """The id `add_benchmark` gives (or gave) these pairs, without storing anything."""
        with self._read() as cur:
            return benchmark_slot(cur, benchmark.benchmark_id, benchmark.content_digest)[0]

    def benchmarks(self) -> pd.DataFrame:
        return self._df("SELECT * FROM benchmarks ORDER BY imported_at")

    def pairs(self, benchmark_id: str) -> list[Pair]:
        rows = self._rows(
            "SELECT pair_id, pair_index, story_title, monitored_question, monitored_true, "
            "monitored_false, hidden_question, hidden_true, hidden_false, extra FROM pairs "
            "WHERE benchmark_id = ? ORDER BY pair_index",
            [benchmark_id],
        )
        if not rows:
            raise InputError(f"benchmark {benchmark_id!r} is not in the store {self.path}")
        return [
            Pair(
                r[0],
                r[1],
                r[2] or "",
                BinaryQuestion(r[3], r[4], r[5]),
                BinaryQuestion(r[6], r[7], r[8]),
                json.loads(r[9]) if r[9] else {},
            )
            for r in rows
        ]

    # -- checkpoints ---------------------------------------------------------------------
    def register_checkpoint(self, fingerprint: str, name: str, details: Mapping[str, Any]) -> None:
        with self._write() as w:
            w.execute("DELETE FROM checkpoints WHERE fingerprint = ?", [fingerprint])
            w.execute(
                "INSERT INTO checkpoints VALUES (?, ?, ?, ?)",
                [fingerprint, name, json.dumps(dict(details), default=str), _now()],
            )

    def checkpoints(self, *, origin: str | None = None) -> pd.DataFrame:
        """Checkpoints this store registered (what a local audit reuses: label mass, noise
        floor); with `origin`, the rows an import brought under it (kept apart)."""
        if origin is None:
            return self._df("SELECT * FROM checkpoints ORDER BY registered_at")
        return self._df(
            "SELECT * EXCLUDE (origin) FROM imported_checkpoints WHERE origin = ? "
            "ORDER BY registered_at",
            [origin],
        )

    # -- paraphrases ---------------------------------------------------------------------
    def add_paraphrases(
        self,
        benchmark_id: str,
        paraphrases: Sequence[Paraphrase],
        provenance: Mapping[str, Any],
    ) -> int:
        """Store paraphrases once each; returns how many were new.

        A paraphrase already stored with the same (pair, role, generator, idx) and text is
        skipped; the same text under another role or generator is refused, which is what keeps
        search and test sets disjoint. Checked in bulk, all or nothing.
        """
        if not paraphrases:
            return 0
        frame = pd.DataFrame(
            [(p.pair_id, p.role, p.generator, int(p.idx), p.text) for p in paraphrases],
            columns=["pair_id", "role", "generator", "idx", "text"],
        ).drop_duplicates()
        slot = ["pair_id", "role", "generator", "idx"]
        for keys, what in (
            (["pair_id", "text"], "text must be unique per pair"),
            (slot, "idx must be unique per pair, role and generator"),
        ):
            dup = frame[frame.duplicated(keys, keep=False)]
            if not dup.empty:
                r = dup.iloc[0]
                raise InputError(
                    f"paraphrase of pair {r.pair_id} ({r.role}/{r.generator} #{r.idx}) clashes "
                    f"with another in the same batch; field {what}: {str(r.text)[:80]!r}"
                )
        prov = json.dumps(dict(provenance), ensure_ascii=False, default=str)
        with self._write() as w:
            w.register("_new", frame)
            try:
                rows = w.execute(
                    "SELECT n.pair_id, n.role, n.generator, n.idx, n.text, o.role, o.generator, "
                    "o.idx, o.text = n.text FROM _new n JOIN paraphrases o ON "
                    "o.benchmark_id = ? AND o.pair_id = n.pair_id AND (o.text = n.text OR "
                    "(o.role = n.role AND o.generator = n.generator AND o.idx = n.idx)) "
                    "WHERE NOT (o.text = n.text AND o.role = n.role AND "
                    "o.generator = n.generator AND o.idx = n.idx) LIMIT 1",
                    [benchmark_id],
                ).fetchall()
                if rows:
                    pid, role, gen, idx, text, o_role, o_gen, o_idx, same_text = rows[0]
                    if same_text:
                        raise InputError(
                            f"paraphrase of pair {pid} ({role}/{gen} #{idx}) is already stored "
                            f"as {o_role}/{o_gen} #{o_idx}; field text must be unique per pair: "
                            f"{str(text)[:80]!r}"
                        )
                    raise InputError(
                        f"pair {pid} already has {role}/{gen} #{idx} with other text; field idx "
                        f"must be unique per pair, role and generator"
                    )
                before = w.execute(
                    "SELECT count(*) FROM paraphrases WHERE benchmark_id = ?", [benchmark_id]
                ).fetchall()
                w.execute(
                    "INSERT INTO paraphrases SELECT ?, n.pair_id, n.role, n.generator, n.idx, "
                    "n.text, ?, ? FROM _new n WHERE NOT EXISTS (SELECT 1 FROM paraphrases o "
                    "WHERE o.benchmark_id = ? AND o.pair_id = n.pair_id AND o.text = n.text)",
                    [benchmark_id, prov, _now(), benchmark_id],
                )
                after = w.execute(
                    "SELECT count(*) FROM paraphrases WHERE benchmark_id = ?", [benchmark_id]
                ).fetchall()
            finally:  # after a failed statement the aborted transaction refuses this: ignore
                with contextlib.suppress(Exception):
                    w.unregister("_new")
        return int(after[0][0]) - int(before[0][0])

    def add_rejections(self, benchmark_id: str, rejections: Iterable[Any]) -> int:
        """Keep every rejected candidate with its reason (objects with pair_id, generator,
        text, reason attributes)."""
        rows = [
            [benchmark_id, r.pair_id, r.generator, r.text, r.reason, _now()] for r in rejections
        ]
        if rows:
            with self._write() as w:
                w.executemany("INSERT INTO paraphrase_rejections VALUES (?, ?, ?, ?, ?, ?)", rows)
        return len(rows)

    def paraphrases(
        self,
        benchmark_id: str,
        pair_id: str | None = None,
        role: str | None = None,
        generator: str | None = None,
        *,
        origin: str | None = None,
    ) -> list[Paraphrase]:
        """This store's own paraphrases (what a local audit draws from); with `origin`, those
        an import brought under that origin instead (kept apart, never drawn from)."""
        table = "paraphrases" if origin is None else "imported_paraphrases"
        sql, params = _filtered(
            f"SELECT pair_id, role, generator, idx, text FROM {table}",
            origin=origin,
            benchmark_id=benchmark_id,
            pair_id=pair_id,
            role=role,
            generator=generator,
        )
        rows = self._rows(sql + " ORDER BY pair_id, role, generator, idx", params)
        return [Paraphrase(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def paraphrase_sets(self, benchmark_id: str | None = None) -> pd.DataFrame:
        """Counts per (benchmark, role, generator): what a run can be configured with."""
        where = "WHERE benchmark_id = ?" if benchmark_id else ""
        return self._df(
            "SELECT benchmark_id, role, generator, count(DISTINCT pair_id) AS n_pairs, "
            f"count(*) AS n_paraphrases FROM paraphrases {where} "
            "GROUP BY ALL ORDER BY benchmark_id, role, generator",
            [benchmark_id] if benchmark_id else [],
        )

    def rejections(self, benchmark_id: str, pair_id: str | None = None) -> pd.DataFrame:
        sql, params = _filtered(
            "SELECT * FROM paraphrase_rejections", benchmark_id=benchmark_id, pair_id=pair_id
        )
        return self._df(sql + " ORDER BY created_at", params)

    # -- score cache ---------------------------------------------------------------------
    def cached_scores(
        self, fingerprint: str, prompt_hashes: Sequence[str], *, imported: bool = False
    ) -> dict[str, QueryScore]:
        """Scores this store computed itself; with `imported`, also those that arrived in
        imported bundles (docs/design.md §6: kept apart, read only when the user asks)."""
        if not prompt_hashes:
            return {}
        cols = "prompt_hash, p_true, l_a_true_a, l_b_true_a, l_a_true_b, l_b_true_b"
        sql = f"SELECT {cols} FROM score_cache WHERE fingerprint = ? AND list_contains(?, prompt_hash)"
        if imported:
            sql = (
                f"SELECT {cols} FROM imported_scores WHERE fingerprint = ? AND "
                f"list_contains(?, prompt_hash) UNION ALL {sql}"
            )
        found: dict[str, QueryScore] = {}
        chunk = 1000
        with self._read() as cur:
            for start in range(0, len(prompt_hashes), chunk):
                part = list(prompt_hashes[start : start + chunk])
                params = [fingerprint, part] * (2 if imported else 1)
                rows = cur.execute(sql, params).fetchall()
                for r in rows:
                    logprobs = None if r[2] is None else (r[2], r[3], r[4], r[5])
                    found[r[0]] = QueryScore(r[1], logprobs)
        return found

    def cache_size(self, fingerprint: str | None = None) -> int:
        if fingerprint is None:
            return int(self._rows("SELECT count(*) FROM score_cache")[0][0])
        return int(
            self._rows("SELECT count(*) FROM score_cache WHERE fingerprint = ?", [fingerprint])[0][
                0
            ]
        )
