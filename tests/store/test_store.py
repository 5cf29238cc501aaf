"""The DuckDB store (docs/design.md §6, §9): migrations, refusal of unusable files, score cache,
paraphrase disjointness, and readers running while a writer thread writes."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from eraudit_core.errors import InputError, StoreError
from eraudit_core.store import PairResult, StepRecord, Store
from eraudit_core.store._schema import MIGRATIONS, SCHEMA_VERSION
from eraudit_core.types import Paraphrase, QueryScore

EXPECTED_TABLES = {
    "schema_version",
    "benchmarks",
    "pairs",
    "checkpoints",
    "paraphrases",
    "paraphrase_rejections",
    "score_cache",
    "runs",
    "run_pairs",
    "run_steps",
}


def _tables(db: Path) -> set[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    finally:
        con.close()


# -- migrations ---------------------------------------------------------------------------------
def test_fresh_database_is_at_the_current_schema(tmp_path):
    db = tmp_path / "sub" / "fresh.duckdb"  # the parent folder is created
    with Store(db) as store:
        assert store.schema_version() == SCHEMA_VERSION == max(MIGRATIONS)
    assert _tables(db) >= EXPECTED_TABLES


def test_reopening_is_idempotent_and_keeps_data(tmp_path):
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        store.register_checkpoint("fp1", "base", {"path": "/models/base"})
    for _ in range(2):
        with Store(db) as store:
            assert store.schema_version() == SCHEMA_VERSION
            assert list(store.checkpoints()["fingerprint"]) == ["fp1"]
    con = duckdb.connect(str(db), read_only=True)
    versions = [
        r[0] for r in con.execute("SELECT version FROM schema_version ORDER BY 1").fetchall()
    ]
    con.close()
    assert versions == sorted(MIGRATIONS)  # each migration applied exactly once


def test_newer_schema_is_refused(tmp_path):
    db = tmp_path / "future.duckdb"
    Store(db).close()
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO schema_version VALUES (?, now())", [SCHEMA_VERSION + 1])
    con.close()
    with pytest.raises(StoreError, match="newer") as info:
        Store(db)
    assert str(db) in str(info.value)


@pytest.mark.parametrize(
    "content", [bytes(range(256)) * 20, b"this is a text file, not a database\n" * 10]
)
def test_corrupt_file_names_the_file(tmp_path, content):
    db = tmp_path / "corrupt.duckdb"
    db.write_bytes(content)
    with pytest.raises(StoreError) as info:
        Store(db)
    assert str(db) in str(info.value)
    assert db.read_bytes() == content  # not overwritten


# -- score cache --------------------------------------------------------------------------------
def test_score_cache_round_trips_logprobs():
    with Store() as store:
        lp = (-0.25, -1.5, -2.0, -0.125)  # (l_A, l_B) true-as-A, then true-as-B
        store.put_scores("fp", {"h1": QueryScore(0.75, lp), "h2": QueryScore(0.5)})
        got = store.cached_scores("fp", ["h1", "h2", "missing"])
        assert set(got) == {"h1", "h2"}
        assert got["h1"] == QueryScore(0.75, lp)
        assert got["h1"].logprobs == lp
        assert got["h2"] == QueryScore(0.5, None)
        # keyed by fingerprint too: another checkpoint has nothing cached
        assert store.cached_scores("other", ["h1"]) == {}
        assert store.cached_scores("fp", []) == {}
        # a prompt is stored once: writing it again does not replace the first score
        store.put_scores("fp", {"h1": QueryScore(0.25)})
        assert store.cached_scores("fp", ["h1"])["h1"].p_true == 0.75
        assert store.cache_size("fp") == 2 and store.cache_size() == 2


def test_score_cache_lookup_across_chunks():
    # cached_scores asks in chunks of 1000 hashes: hits at both sides of each chunk boundary
    with Store() as store:
        hits = {"h00000": 0.125, "h00999": 0.25, "h01000": 0.375, "h02400": 0.5}
        store.put_scores("fp", {h: QueryScore(p) for h, p in hits.items()})
        asked = [f"h{i:05d}" for i in range(2500)]
        got = store.cached_scores("fp", asked)
        assert {h: s.p_true for h, s in got.items()} == hits


# -- paraphrase disjointness --------------------------------------------------------------------
def _para(role, gen, idx, text, pair="p1"):
    return Paraphrase(pair, role, gen, idx, text)


def test_same_text_under_another_role_is_refused_and_nothing_is_written():
    with Store() as store:
        assert store.add_paraphrases("b", [_para("search", "gpt", 0, "Why did he leave?")], {}) == 1
        batch = [
            _para("test", "claude", 0, "What made him go?"),  # fine on its own
            _para("test", "claude", 1, "Why did he leave?"),  # already a search paraphrase
        ]
        with pytest.raises(InputError, match="already stored as search/gpt #0") as info:
            store.add_paraphrases("b", batch, {"source": "file"})
        assert "text must be unique" in str(info.value)
        # the whole batch was rolled back: the fine paraphrase is not there either
        assert [p.text for p in store.paraphrases("b")] == ["Why did he leave?"]
        assert store.paraphrases("b", role="test") == []


def test_same_text_in_another_pair_is_allowed_and_rewriting_a_slot_is_refused():
    with Store() as store:
        assert store.add_paraphrases("b", [_para("search", "gpt", 0, "Same text", "p1")], {}) == 1
        assert store.add_paraphrases("b", [_para("search", "gpt", 0, "Same text", "p2")], {}) == 1
        # storing the identical paraphrase again is a no-op
        assert store.add_paraphrases("b", [_para("search", "gpt", 0, "Same text", "p1")], {}) == 0
        with pytest.raises(InputError, match="field idx must be unique"):
            store.add_paraphrases("b", [_para("search", "gpt", 0, "Other text", "p1")], {})
        assert len(store.paraphrases("b")) == 2


# -- concurrent readers while a writer thread writes -----------------------------------------------
def _pair_result(pair_id: str, index: int) -> PairResult:
    return PairResult(
        pair_id=pair_id,
        pair_index=index,
        monitored_question="m",
        hidden_question="h",
        status="certified",
        stage=2,
        gain=0.25,
        denominator=0.25,
        p_pre_monitored=0.5,
        p_post_monitored=0.75,
        p_pre_hidden=0.5,
        p_post_hidden=0.5,
        max_d=0.0,
        n_counterexamples=0,
        n_search=0,
        n_test=5,
        bound_common=0.5,
        bound=0.5,
        bound_tolerant=0.25,
        generators=[{"generator": "g", "n": 5}],
        target_reached=False,
    )


def test_readers_see_consistent_counts_while_a_writer_writes(tmp_path):
    batch, n_batches, steps_per_pair = 5, 40, 20
    with Store(tmp_path / "c.duckdb") as store:
        store.create_run("r1", label="r1", config={}, n_pairs=n_batches * batch // steps_per_pair)
        errors: list[BaseException] = []
        seen: dict[str, list[tuple[int, int]]] = {}
        done = threading.Event()

        def writer() -> None:
            try:
                for b in range(n_batches):
                    steps = []
                    for j in range(batch):
                        k = b * batch + j
                        pair = f"p{k // steps_per_pair:02d}"
                        steps.append(
                            StepRecord(
                                pair,
                                2,
                                "g",
                                k % steps_per_pair + 1,
                                k,
                                f"x{k}",
                                0.5,
                                0.5,
                                0.0,
                                False,
                                0.1,
                            )
                        )
                    store.add_steps("r1", steps)
                    if (b + 1) * batch % steps_per_pair == 0:
                        pair_no = (b + 1) * batch // steps_per_pair - 1
                        store.finish_pair("r1", _pair_result(f"p{pair_no:02d}", pair_no))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)
            finally:
                done.set()

        def reader(name: str) -> None:
            log = seen.setdefault(name, [])
            try:
                while True:
                    finished = done.is_set()
                    # pairs first: the steps read afterwards can only be newer
                    n_pairs = len(store.pair_results("r1"))
                    n_steps = len(store.steps("r1"))
                    log.append((n_steps, n_pairs))
                    if finished:
                        break
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=reader, args=(f"r{i}",)) for i in range(3)]
        threads.append(threading.Thread(target=writer))
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=60)
        assert not any(th.is_alive() for th in threads)
        assert errors == []
        total = n_batches * batch
        for log in seen.values():
            assert log, "a reader never read"
            steps_seen = [s for s, _ in log]
            pairs_seen = [p for _, p in log]
            # each add_steps is one transaction: readers never see part of a batch
            assert all(s % batch == 0 for s in steps_seen)
            # counts only grow, and a finished pair never shows before its steps
            assert steps_seen == sorted(steps_seen) and pairs_seen == sorted(pairs_seen)
            assert all(p * steps_per_pair <= s for s, p in log)
            assert log[-1] == (total, total // steps_per_pair)
        # the readers really ran during the writes (not only before or after them)
        assert len({s for log in seen.values() for s, _ in log}) >= 3
        assert store.run_progress("r1")["steps"] == total


def test_migration_2_moves_stored_runs_to_the_four_verdicts(tmp_path):
    """A store written before the four-verdict vocabulary: 'certified' meant 'no counterexample, all tested'
    whatever the bound; the failure-tolerant bound could cover a subset of the generators and
    skipped the TV relaxation. Opening it migrates the stored words and bounds."""
    path = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER, applied_at TIMESTAMP)")
    for ddl in MIGRATIONS[1]:
        con.execute(ddl)
    con.execute("INSERT INTO schema_version VALUES (1, now())")
    runs = {
        "no-target": {"target": None, "tv_delta": 0.0},
        "target": {"target": 0.9, "tv_delta": 0.05},
    }
    for run_id, cfg in runs.items():
        con.execute(
            "INSERT INTO runs (run_id, status, config, created_at) VALUES (?, 'done', ?, now())",
            [run_id, json.dumps(cfg)],
        )
    both = json.dumps([{"n": 30}, {"n": 29}])
    subset = json.dumps([{"n": 12}, {"n": 0}])
    rows = [
        # run, pair, old status, bound, tolerant, generators
        ("no-target", "a", "certified", 0.9, 0.85, both),
        ("target", "b", "certified", 0.93, 0.88, both),  # bound >= 0.9: stays certified
        ("target", "c", "certified", 0.85, 0.80, both),  # below p*: passed
        ("target", "d", "degraded", 0.0, 0.70, subset),  # tolerant over g1 only: dropped
        ("target", "e", "inconclusive", 0.0, None, subset),
    ]
    for run_id, pid, status, bound, tol, gens in rows:
        con.execute(
            "INSERT INTO run_pairs (run_id, pair_id, status, bound, bound_tolerant, generators, "
            "finished_at) VALUES (?, ?, ?, ?, ?, ?, now())",
            [run_id, pid, status, bound, tol, gens],
        )
    con.close()
    with Store(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        got = {
            pid: (status, tol)
            for run_id in runs
            for pid, status, tol in store.pair_results(run_id)[
                ["pair_id", "status", "bound_tolerant"]
            ].itertuples(index=False)
        }
        assert store.run("target")["provenance"] == {}
    assert got["a"] == ("passed", pytest.approx(0.85))  # no target: never certified
    assert got["b"] == ("certified", pytest.approx(0.88 - 0.05))  # TV applied
    assert got["c"] == ("passed", pytest.approx(0.80 - 0.05))
    assert got["d"][0] == "degraded" and pd.isna(got["d"][1])
    assert got["e"][0] == "inconclusive" and pd.isna(got["e"][1])
