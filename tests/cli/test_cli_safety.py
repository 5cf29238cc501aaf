"""The CLI never destroys a store and answers bad input with exit 2 and a message, not a
traceback. Each test names the item it covers."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eraudit_core import cli
from eraudit_core.store import Store

ROOT = Path(__file__).resolve().parents[2]
DUCKDB_MAGIC = b"DUCK"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _is_duckdb(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(12)[8:12] == DUCKDB_MAGIC


def _table(path: Path, rows: list[list] | None = None) -> Path:
    rows = rows or (
        [["p1", "monitored", "", 0, "m1", 0.5, 0.75]]
        + [["p1", "test", "g1", i, f"p1 x{i}", 0.75, 0.75] for i in range(4)]
    )
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        w.writerows(rows)
    return path


@pytest.fixture()
def stored_run(tmp_path, capsys) -> tuple[Path, str]:
    db = tmp_path / "S.duckdb"
    code, out, err = _run(
        capsys, "audit-table", str(_table(tmp_path / "t.csv")), "--db", str(db), "--json"
    )
    assert code == 0, err
    return db, json.loads(out)["run_id"]


# -- item 1: no command writes over a store; outputs are not replaced silently -------------------
def test_report_refuses_to_write_over_the_store(stored_run, capsys):
    db, run_id = stored_run
    before = db.read_bytes()
    code, out, err = _run(capsys, "report", run_id, "--db", str(db), "--out", str(db))
    assert code == 2 and "DuckDB store" in err and str(db) in err and "Traceback" not in err
    assert db.read_bytes() == before and _is_duckdb(db)
    with Store(db) as store:  # every run is still there
        assert list(store.runs()["run_id"]) == [run_id]
    # not even with --force
    code, _, err = _run(capsys, "report", run_id, "--db", str(db), "--out", str(db), "--force")
    assert code == 2 and "DuckDB store" in err and db.read_bytes() == before


def test_report_and_export_refuse_existing_outputs_unless_forced(stored_run, tmp_path, capsys):
    db, run_id = stored_run
    html = tmp_path / "report.html"
    html.write_text("keep me", encoding="utf-8")
    code, _, err = _run(capsys, "report", run_id, "--db", str(db), "--out", str(html))
    assert code == 2 and "exists" in err and "--force" in err
    assert html.read_text(encoding="utf-8") == "keep me"
    code, _, err = _run(capsys, "report", run_id, "--db", str(db), "--out", str(html), "--force")
    assert code == 0, err
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")

    out_dir = tmp_path / "tables"
    code, out, err = _run(capsys, "export", run_id, "--db", str(db), "--out", str(out_dir))
    assert code == 0, err
    written = [Path(p) for p in out.split()]
    assert len(written) == 3 and all(p.is_file() for p in written)  # pairs, paraphrases, provenance
    code, _, err = _run(capsys, "export", run_id, "--db", str(db), "--out", str(out_dir))
    assert code == 2 and "exists" in err and "--force" in err
    code, _, err = _run(capsys, "export", run_id, "--db", str(db), "--out", str(out_dir), "--force")
    assert code == 0, err


def test_report_into_a_directory_and_export_into_a_file_are_clean_errors(
    stored_run, tmp_path, capsys
):
    db, run_id = stored_run
    a_dir = tmp_path / "somedir"
    a_dir.mkdir()
    code, _, err = _run(capsys, "report", run_id, "--db", str(db), "--out", str(a_dir))
    assert code == 2 and "directory" in err and "Traceback" not in err
    a_file = tmp_path / "file.txt"
    a_file.write_text("x", encoding="utf-8")
    code, _, err = _run(capsys, "export", run_id, "--db", str(db), "--out", str(a_file))
    assert code == 2 and "not a directory" in err and a_file.read_text(encoding="utf-8") == "x"


def test_rebuild_commands_still_replace_outputs_but_never_a_store(stored_run, tmp_path, capsys):
    db, _ = stored_run
    src = tmp_path / "petri"
    src.mkdir()
    for i in range(4):
        meta = {
            "transcript_id": f"t{i}",
            "auditor_model": "a",
            "target_model": "t",
            "tags": [("res-none", "res-codebase")[i % 2], "rh"],
            "judge_output": {"scores": {"j1/reward_hacking": 1 + i % 5}},
        }
        (src / f"transcript_{i}.json").write_text(json.dumps({"metadata": meta}))
    mapping = tmp_path / "map.json"
    mapping.write_text(
        json.dumps(
            {
                "condition": {"res-none": "none", "res-codebase": "codebase"},
                "behaviour": {"rh": "rh"},
            }
        )
    )
    out = tmp_path / "tidy.csv"
    out.write_text("old", encoding="utf-8")
    argv = ["sensitivity-import", "petri", str(src), "--mapping", str(mapping)]
    code, _, err = _run(capsys, *argv, "-o", str(out))
    assert code == 0, err  # a rebuild command replaces its output
    assert out.read_text(encoding="utf-8") != "old"
    before = db.read_bytes()
    code, _, err = _run(capsys, *argv, "-o", str(db))
    assert code == 2 and "DuckDB store" in err and db.read_bytes() == before


# -- item 2: an import is all or nothing ---------------------------------------------------------
REF_BENCH = ROOT / "data" / "benchmarks" / "quality_h" / "QuALITY-H-no-debate.json"


def test_import_paraphrases_with_a_bad_second_record_stores_nothing(tmp_path, capsys):
    from eraudit_core.store import load_benchmark

    bench = load_benchmark(REF_BENCH)
    first, second = bench.pairs[3], bench.pairs[4]
    path = tmp_path / "in.jsonl"
    good = {
        "pair_id": first.pair_id,
        "generator": "gpt",
        "text": "Can you tell me who the most hated celebrity of 1999 is?",
    }
    # json.dumps writes the lone surrogate as the escape \ud800, which json.loads reads back
    bad = {"pair_id": second.pair_id, "generator": "claude", "text": "Who was \ud800 hated?"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    db = tmp_path / "s.duckdb"
    code, out, err = _run(
        capsys, "import-paraphrases", str(path), "--db", str(db), "--benchmark", str(REF_BENCH)
    )
    assert code == 2, err
    assert "line 2" in err and "text" in err and "surrogate" in err and "Traceback" not in err
    with Store(db) as store:
        assert store.paraphrase_sets().empty
        bids = list(store.benchmarks()["benchmark_id"])
        assert all(store.rejections(b).empty for b in bids)


# -- item 7: bad input is exit 2 with file, record and field named; the store is unchanged --------
def _jsonl_pair(i: int, **over) -> dict:
    rec = {
        "pair_id": f"q{i}",
        "monitored": {"question": f"Monitored {i}?", "true": "yes", "false": "no"},
        "hidden": {"question": f"Hidden {i}?", "true": "up", "false": "down"},
    }
    rec.update(over)
    return rec


@pytest.mark.parametrize(
    ("extra", "field"),
    [("oops", "extra"), ([1, 2], "extra"), (5, "extra")],
)
def test_benchmark_record_with_a_wrong_typed_field(tmp_path, capsys, extra, field):
    path = tmp_path / "b.jsonl"
    path.write_text(
        json.dumps(_jsonl_pair(0)) + "\n" + json.dumps(_jsonl_pair(1, extra=extra)) + "\n",
        encoding="utf-8",
    )
    db = tmp_path / "b.duckdb"
    code, _, err = _run(capsys, "import-benchmark", str(path), "--db", str(db))
    assert code == 2, err
    assert str(path) in err and "record 2" in err and field in err and "Traceback" not in err
    with Store(db) as store:
        assert store.benchmarks().empty


def test_benchmark_with_a_lone_surrogate_in_a_question(tmp_path, capsys):
    path = tmp_path / "b.jsonl"
    bad = _jsonl_pair(1)
    bad["hidden"]["question"] = "Why \ud800?"
    path.write_text(json.dumps(_jsonl_pair(0)) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    db = tmp_path / "b.duckdb"
    code, _, err = _run(capsys, "import-benchmark", str(path), "--db", str(db))
    assert code == 2, err
    assert "record 2" in err and "hidden.question" in err and "surrogate" in err
    with Store(db) as store:
        assert store.benchmarks().empty


@pytest.mark.parametrize("kind", ["benchmark", "paraphrases", "score"])
def test_deeply_nested_json_is_refused(tmp_path, capsys, kind):
    deep = "[" * 100_000 + "]" * 100_000
    db = tmp_path / "d.duckdb"
    if kind == "benchmark":
        path = tmp_path / "deep.json"
        path.write_text(deep, encoding="utf-8")
        argv = ["import-benchmark", str(path), "--db", str(db)]
    elif kind == "paraphrases":
        path = tmp_path / "deep.jsonl"
        path.write_text(
            '{"pair_id": "x", "generator": "g", "text": ' + deep + "}\n", encoding="utf-8"
        )
        argv = ["import-paraphrases", str(path), "--db", str(db), "--benchmark", str(REF_BENCH)]
    else:
        path = tmp_path / "deep.jsonl"
        path.write_text('{"question": ' + deep + "}\n", encoding="utf-8")
        argv = ["score", "demo:base", str(path)]
    code, _, err = _run(capsys, *argv)
    assert code == 2, err
    assert str(path) in err and "nest" in err and "Traceback" not in err


def test_latin1_paraphrase_file(tmp_path, capsys):
    path = tmp_path / "latin1.jsonl"
    rec = '{"pair_id": "x", "generator": "g", "text": "Qu\'est-ce que le caf\xe9?"}\n'
    path.write_bytes(rec.encode("latin-1"))
    db = tmp_path / "l.duckdb"
    code, _, err = _run(
        capsys, "import-paraphrases", str(path), "--db", str(db), "--benchmark", str(REF_BENCH)
    )
    assert code == 2, err
    assert str(path) in err and "UTF-8" in err and "Traceback" not in err


def test_score_table_fractional_idx_and_blank_test_generator(tmp_path, capsys):
    db = tmp_path / "t.duckdb"
    frac = _table(
        tmp_path / "frac.csv",
        [["p1", "monitored", "", 0, "m", 0.5, 0.75], ["p1", "test", "g", 1.5, "x", 0.5, 0.5]],
    )
    code, _, err = _run(capsys, "audit-table", str(frac), "--db", str(db))
    assert code == 2 and "row 3" in err and "idx" in err and "1.5" in err
    blank = _table(
        tmp_path / "blank.csv",
        [["p1", "monitored", "", 0, "m", 0.5, 0.75], ["p1", "test", "", 0, "x", 0.5, 0.5]],
    )
    code, _, err = _run(capsys, "audit-table", str(blank), "--db", str(db))
    assert code == 2 and "row 3" in err and "generator" in err
    with Store(db) as store:
        assert store.runs().empty


def test_score_table_numeric_pair_ids_and_texts_are_strings(tmp_path, capsys):
    table = _table(
        tmp_path / "num.csv",
        [["101", "monitored", "", 0, "42", 0.5, 0.75]]
        + [["101", "test", "g1", i, str(1000 + i), 0.75, 0.75] for i in range(3)]
        + [
            ["007", "monitored", "", 0, "3.5", 0.5, 0.75],
            ["007", "test", "g1", 0, "12", 0.75, 0.75],
        ],
    )
    db = tmp_path / "n.duckdb"
    code, out, err = _run(capsys, "audit-table", str(table), "--db", str(db), "--json")
    assert code == 0, err
    pairs = json.loads(out)["pairs"]
    assert [p["pair_id"] for p in pairs] == ["101", "007"]  # "007" keeps its leading zeros
    with Store(db) as store:
        steps = store.steps(json.loads(out)["run_id"])
        assert sorted(steps["text"]) == ["1000", "1001", "1002", "12"]


def _long_table(path: Path, n_pairs: int = 400, n_test: int = 40) -> Path:
    rows = []
    for p in range(n_pairs):
        rows.append([f"p{p}", "monitored", "", 0, f"m{p}", 0.5, 0.75])
        rows += [[f"p{p}", "test", "g1", i, f"p{p} x{i}", 0.75, 0.75] for i in range(n_test)]
    return _table(path, rows)


@pytest.mark.slow  # a subprocess audit interrupted: 16 s
def test_ctrl_c_cancels_the_run_without_a_traceback(tmp_path):
    table = _long_table(tmp_path / "long.csv")
    db = tmp_path / "c.duckdb"
    exe = Path(sys.executable).parent / "eraudit"
    proc = subprocess.Popen(
        [str(exe), "audit-table", str(table), "--db", str(db), "--batch-size", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline:  # wait until the run is under way (read from the store)
            time.sleep(0.3)
            if not db.exists():
                continue
            try:
                with Store(db, busy_timeout_s=5) as store:
                    runs = store.runs()
            except Exception:
                continue
            if not runs.empty and int(runs["pairs_done"].iloc[0]) >= 2:
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "cancel" in err.lower()
    with Store(db) as store:
        run = store.runs().iloc[0]
        assert run["status"] == "cancelled"
        assert 2 <= int(run["pairs_done"]) < 400


# -- item 10: terminal output escapes control characters --------------------------------------------
def test_runs_and_show_escape_control_characters(tmp_path, capsys):
    evil = "\x1b[2J\x1b]0;owned\x07"
    table = _table(
        tmp_path / "evil.csv",
        [["p1", "monitored", "", 0, "m", 0.5, 0.75]]
        + [["p1", "test", "g1", i, f"x{i}", 0.75, 0.75] for i in range(3)],
    )
    db = tmp_path / "e.duckdb"
    code, out, err = _run(
        capsys, "audit-table", str(table), "--db", str(db), "--json", "--label", f"run {evil}"
    )  # refused where it enters, its message escaped too
    assert code == 2 and "label" in err and "\x1b" not in err and "\\x1b" in err, err
    code, out, err = _run(capsys, "audit-table", str(table), "--db", str(db), "--json")
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    with Store(db) as store:  # a store written before the refusal: shown escaped all the same
        with store._write() as w:
            w.execute("UPDATE runs SET label = ? WHERE run_id = ?", [f"run {evil}", run_id])
        store.finish_pair(  # a question with control characters, stored as given
            run_id,
            store_pair_with_question(store, run_id, f"What {evil} now?"),
        )
    code, out, _ = _run(capsys, "runs", "--db", str(db))
    assert code == 0 and "\x1b" not in out and "\x07" not in out and "\\x1b" in out
    code, out, _ = _run(capsys, "show", run_id, "--db", str(db))
    assert code == 0 and "\x1b" not in out and "\x07" not in out and "\\x1b" in out


def store_pair_with_question(store: Store, run_id: str, question: str):
    from eraudit_core.store import PairResult

    row = store.pair_results(run_id).iloc[0].to_dict()
    fields = PairResult.__dataclass_fields__
    rec = {k: row[k] for k in fields if k in row}
    rec["hidden_question"] = question
    return PairResult(**rec)
