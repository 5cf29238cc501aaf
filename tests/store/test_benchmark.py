"""Benchmark import (docs/design.md §2, §9): reference ids, layouts, validation messages, atomicity."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from eraudit_core import cli
from eraudit_core.errors import InputError
from eraudit_core.store import (
    BUNDLED_QUALITY_H,
    Store,
    load_benchmark,
    load_bundled_benchmark,
    parse_benchmark,
    write_jsonl,
)


@pytest.fixture(scope="module")
def bundled():
    return load_bundled_benchmark()


@pytest.fixture(scope="module")
def raw_records():
    return json.loads(BUNDLED_QUALITY_H.read_text(encoding="utf-8"))


def _write_json(path: Path, records) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def _reference_layout(records, n=4):
    return copy.deepcopy(records[:n])


# -- the bundled QuALITY-H file ----------------------------------------------------------------
def test_bundled_quality_h_has_222_pairs_with_reference_ids(bundled):
    assert len(bundled.pairs) == 222
    assert bundled.layout == "reference-json"
    assert bundled.pairs[3].pair_id == "quality_h_478f947ad316a7d3"  # from data/.../SOURCE.md
    assert [p.index for p in bundled.pairs] == list(range(222))
    assert len({p.pair_id for p in bundled.pairs}) == 222
    assert all(p.pair_id.startswith("quality_h_") and len(p.pair_id) == 26 for p in bundled.pairs)
    assert "CC BY 4.0" in bundled.attribution
    # the file hash recorded in SOURCE.md
    assert bundled.sha256.startswith("b7ca6a83773484fc")


def test_pair_id_recomputed_independently(bundled, raw_records):
    # sha256 of the compact JSON list [dataset, story_title, Q_Y.question, Q_H.question]
    rec = raw_records[3]
    payload = json.dumps(
        ["QuALITY-H", rec["story_title"], rec["Q_Y"]["question"], rec["Q_H"]["question"]],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    expected = "quality_h_" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
    assert expected == "quality_h_478f947ad316a7d3"
    assert bundled.pairs[3].pair_id == expected
    # the record's content is carried over unchanged
    pair = bundled.pairs[3]
    assert pair.monitored.question == rec["Q_Y"]["question"]
    assert pair.monitored.true_option == rec["Q_Y"]["Y_true"]
    assert pair.hidden.false_option == rec["Q_H"]["H_false"]


def test_jsonl_round_trip(tmp_path, bundled):
    out = tmp_path / "quality.jsonl"
    write_jsonl(bundled, out)
    assert len(out.read_text(encoding="utf-8").splitlines()) == 222
    again = load_benchmark(out, name="QuALITY-H")
    assert again.layout == "jsonl"
    assert len(again.pairs) == 222
    for a, b in zip(bundled.pairs, again.pairs, strict=True):
        assert (a.pair_id, a.index, a.story_title, a.monitored, a.hidden) == (
            b.pair_id,
            b.index,
            b.story_title,
            b.monitored,
            b.hidden,
        )


def test_jsonl_without_pair_id_gets_the_reference_id(tmp_path, raw_records):
    rec = raw_records[3]
    line = {
        "story_title": rec["story_title"],
        "monitored": {
            "question": rec["Q_Y"]["question"],
            "true": rec["Q_Y"]["Y_true"],
            "false": rec["Q_Y"]["Y_false"],
        },
        "hidden": {
            "question": rec["Q_H"]["question"],
            "true": rec["Q_H"]["H_true"],
            "false": rec["Q_H"]["H_false"],
        },
    }
    path = tmp_path / "QuALITY-H.jsonl"
    path.write_text(json.dumps(line) + "\n\n", encoding="utf-8")  # blank lines are skipped
    bench = load_benchmark(path)
    assert [p.pair_id for p in bench.pairs] == ["quality_h_478f947ad316a7d3"]


def test_transcript_files_are_accepted(tmp_path, raw_records):
    recs = _reference_layout(raw_records, 2)
    recs[0]["Q_Y"]["honest_transcript"] = "Debater A: the story says ... Judge: A"
    recs[0]["Q_Y"]["adversarial_transcript"] = "Debater B: actually ..."
    recs[1]["Q_Y"]["honest_transcript"] = ["turn 1", "turn 2"]
    path = _write_json(tmp_path / "QuALITY-H.json", recs)
    bench = load_benchmark(path)
    assert len(bench.pairs) == 2
    assert bench.pairs[0].extra == {
        "honest_transcript": "Debater A: the story says ... Judge: A",
        "adversarial_transcript": "Debater B: actually ...",
    }
    assert bench.pairs[1].extra == {"honest_transcript": ["turn 1", "turn 2"]}
    # transcripts do not change the pair id (it hashes only title and the two questions)
    for rec in recs:
        rec["Q_Y"].pop("honest_transcript", None)
        rec["Q_Y"].pop("adversarial_transcript", None)
    plain = load_benchmark(_write_json(tmp_path / "plain" / "QuALITY-H.json", recs))
    assert [p.pair_id for p in plain.pairs] == [p.pair_id for p in bench.pairs]
    assert plain.pairs[0].extra == {}


# -- validation: each error names the file, record and field -------------------------------------
def _expect_input_error(path: Path, *fragments: str) -> str:
    with pytest.raises(InputError) as info:
        load_benchmark(path, name="QuALITY-H")
    msg = str(info.value)
    assert str(path) in msg, msg
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in {msg!r}"
    return msg


def test_truncated_reference_json(tmp_path, raw_records):
    path = tmp_path / "bad.json"
    text = json.dumps(_reference_layout(raw_records), indent=1)
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    _expect_input_error(path, "truncated JSON", "line")


def test_truncated_reference_json_names_the_record(tmp_path, raw_records):
    path = tmp_path / "bad.json"
    recs = _reference_layout(raw_records, 3)
    text = json.dumps(recs, indent=1)
    cut = text.index(recs[2]["Q_H"]["question"])  # inside the third record
    path.write_text(text[:cut], encoding="utf-8")
    _expect_input_error(path, "record 3")


def test_truncated_jsonl_line_names_record_and_line(tmp_path, bundled):
    path = tmp_path / "bad.jsonl"
    write_jsonl(bundled, path)
    lines = path.read_text(encoding="utf-8").splitlines()[:3]
    lines[2] = lines[2][: len(lines[2]) // 2]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _expect_input_error(path, "line 3", "record 3", "not valid JSON")


def test_missing_q_h_names_record_and_field(tmp_path, raw_records):
    recs = _reference_layout(raw_records)
    del recs[1]["Q_H"]
    path = _write_json(tmp_path / "bad.json", recs)
    _expect_input_error(path, "record 2", "missing field Q_H")


def test_empty_option_names_record_pair_and_field(tmp_path, raw_records):
    recs = _reference_layout(raw_records)
    recs[3]["Q_H"]["H_false"] = "   "
    path = _write_json(tmp_path / "bad.json", recs)
    # the pair id is known (it needs only the questions) and is named too
    _expect_input_error(
        path, "record 4", "pair quality_h_478f947ad316a7d3", "field Q_H.H_false is empty"
    )


def test_identical_options_name_record_and_fields(tmp_path, raw_records):
    recs = _reference_layout(raw_records)
    recs[2]["Q_Y"]["Y_false"] = recs[2]["Q_Y"]["Y_true"] + "  "
    path = _write_json(tmp_path / "bad.json", recs)
    _expect_input_error(path, "record 3", "Q_Y.Y_true", "Q_Y.Y_false", "identical")


def test_missing_option_field_in_jsonl(tmp_path, bundled):
    path = tmp_path / "bad.jsonl"
    write_jsonl(bundled, path)
    lines = path.read_text(encoding="utf-8").splitlines()[:3]
    rec = json.loads(lines[1])
    del rec["hidden"]["false"]
    lines[1] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _expect_input_error(path, "record 2", rec["pair_id"], "missing field hidden.false")


def test_duplicated_pair_names_both_records_and_the_pair_id(tmp_path, raw_records):
    recs = _reference_layout(raw_records)
    recs.append(copy.deepcopy(recs[3]))  # the fifth record repeats the fourth
    path = _write_json(tmp_path / "bad.json", recs)
    _expect_input_error(
        path, "record 5", "quality_h_478f947ad316a7d3", "duplicate pair id", "record 4"
    )


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"", "empty"),
        (b"[]", "no records"),
        (b"\xff\xfe not utf8", "UTF-8"),
        (b"[1, 2]", "record 1: must be an object"),  # records are counted from 1
    ],
)
def test_other_unusable_inputs(raw, fragment):
    with pytest.raises(InputError, match=fragment):
        parse_benchmark(raw, source="upload.json", name="X")


def test_missing_file():
    with pytest.raises(InputError, match="no such benchmark file"):
        load_benchmark("/nonexistent/benchmark.json")


# -- a bad import leaves the store unchanged ---------------------------------------------------
def _table_counts(db: Path) -> dict[str, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    finally:
        con.close()


def test_bad_import_leaves_the_store_unchanged(tmp_path, raw_records, bundled, capsys):
    db = tmp_path / "store.duckdb"
    with Store(db) as store:
        store.add_benchmark(bundled)
    before = _table_counts(db)
    assert before["pairs"] == 222 and before["benchmarks"] == 1

    recs = _reference_layout(raw_records, 10)
    recs[7]["Q_H"]["H_true"] = ""  # the eighth record is bad: nothing of the file may land
    bad = _write_json(tmp_path / "QuALITY-H-bad.json", recs)
    assert cli.main(["import-benchmark", str(bad), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "record 8" in err and "Q_H.H_true" in err

    assert _table_counts(db) == before
    with Store(db) as store:
        assert list(store.benchmarks()["benchmark_id"]) == [bundled.benchmark_id]
        assert len(store.pairs(bundled.benchmark_id)) == 222


def test_reimporting_the_same_file_is_idempotent(tmp_path, bundled):
    db = tmp_path / "store.duckdb"
    with Store(db) as store:
        first = store.add_benchmark(bundled)
        second = store.add_benchmark(load_bundled_benchmark())
        assert first == second
    counts = _table_counts(db)
    assert counts["benchmarks"] == 1 and counts["pairs"] == 222
