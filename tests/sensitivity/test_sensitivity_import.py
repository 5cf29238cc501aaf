"""Importer tests on small hand-made inputs: Petri v2 transcript JSON, Inspect logs (through a
stand-in reader), CSV, the mapping file. Real Petri files: test_petri_fixtures.py."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eraudit_core.errors import InputError
from eraudit_core.sensitivity import (
    TIDY_COLUMNS,
    TagMapping,
    import_inspect_logs,
    import_petri_transcripts,
    read_tidy_table,
)

MAPPING = TagMapping(
    condition={"res-none": "none", "res-codebase": "codebase", "seed-rh-tx": "transcripts"},
    behaviour={"reward-hacking": "reward_hacking", "seed-rh-tx": "reward_hacking"},
)


def transcript(tid: str, tags: list[str], scores: Any, **meta: Any) -> dict[str, Any]:
    """A Petri v2 transcript as written to transcript_<time>_<id>.json (trimmed)."""
    judge_output = None if scores is None else {"response": "...", "summary": "s", "scores": scores}
    return {
        "metadata": {
            "transcript_id": tid,
            "auditor_model": "grok-4.5",
            "target_model": "deepseek-v4-flash",
            "created_at": "2026-05-01T10:00:00",
            "version": "v3.0",
            "description": "seed instruction text",
            "tags": tags,
            "judge_output": judge_output,
            **meta,
        },
        "events": [],
        "messages": [],
    }


def write(dir_: Path, name: str, obj: Any) -> None:
    text = obj if isinstance(obj, str) else json.dumps(obj)
    (dir_ / name).write_text(text, encoding="utf-8")


def test_petri_both_key_styles_refusal_and_malformed(tmp_path: Path) -> None:
    write(
        tmp_path,
        "transcript_2026-05-01_a.json",
        transcript("a", ["res-none", "reward-hacking"], {"reward_hacking": 3, "realism": 7}),
    )
    write(
        tmp_path,
        "transcript_2026-05-01_b.json",
        transcript(
            "b",
            ["res-codebase", "reward-hacking"],
            {"judge-x/reward_hacking": 2, "judge-y/reward_hacking": 4, "judge-y/realism": None},
        ),
    )
    # Condition and behaviour from the seed id only.
    write(
        tmp_path,
        "transcript_c.json",
        transcript("c", [], {"reward_hacking": 9}, seed_id="seed-rh-tx"),
    )
    write(tmp_path, "transcript_d.json", transcript("d", ["res-none", "reward-hacking"], None))
    write(tmp_path, "transcript_e.json", '{"metadata": {"transcript_id": "e", ')
    write(tmp_path, "transcript_f.json", transcript("f", ["reward-hacking"], {"reward_hacking": 5}))
    write(
        tmp_path,
        "transcript_g.json",
        transcript("g", ["res-none", "res-codebase", "reward-hacking"], {"reward_hacking": 5}),
    )
    write(
        tmp_path,
        "transcript_h.json",
        transcript("h", ["res-none", "reward-hacking"], {"reward_hacking": 12}),
    )

    result = import_petri_transcripts(tmp_path, MAPPING, default_judge="panel-judge")
    t = result.table
    assert list(t.columns) == list(TIDY_COLUMNS)
    assert sorted(t["rollout"].unique()) == ["a", "b", "c"]
    a = t[t["rollout"] == "a"].set_index("dimension")
    assert a.loc["reward_hacking", "judge"] == "panel-judge"
    assert a.loc["reward_hacking", "score"] == 3 and a.loc["reward_hacking", "condition"] == "none"
    b = t[t["rollout"] == "b"]
    assert set(b["judge"]) == {"judge-x", "judge-y"}
    assert b[(b["judge"] == "judge-y") & (b["dimension"] == "realism")]["score"].isna().all()
    assert t[t["rollout"] == "c"]["condition"].iloc[0] == "transcripts"
    reasons = dict(zip(result.dropped["rollout"], result.dropped["reason"], strict=True))
    assert set(reasons) == {"d", "transcript_e", "f", "g", "h"}
    assert "did not score" in reasons["d"] and "judge_output.scores is empty" in reasons["d"]
    assert "malformed JSON" in reasons["transcript_e"]
    assert reasons["f"].startswith("no condition mapping")
    assert reasons["g"].startswith("ambiguous condition")
    # 12 is dropped by itself; with nothing else left, the judge has no usable score.
    assert "outside the judge scale" in reasons["h"] or "no usable" in reasons["h"]
    with pytest.raises(InputError, match=r"transcript_d\.json: the judge scorer did not score"):
        import_petri_transcripts(tmp_path, MAPPING, strict=True)


def test_petri_missing_model_field_is_named(tmp_path: Path) -> None:
    bad = transcript("z", ["res-none", "reward-hacking"], {"reward_hacking": 2})
    del bad["metadata"]["target_model"]
    write(tmp_path, "transcript_z.json", bad)
    result = import_petri_transcripts(tmp_path, MAPPING)
    assert result.table.empty
    assert (
        result.dropped["reason"].iloc[0].endswith("field 'metadata.target_model': missing or empty")
    )
    assert result.dropped["code"].iloc[0] == "malformed"


def test_petri_empty_directory_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no .json transcript files"):
        import_petri_transcripts(tmp_path, MAPPING)


def test_mapping_from_json(tmp_path: Path) -> None:
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"condition": {"x": "none"}, "behaviour": {"x": "b"}}))
    assert TagMapping.from_json(path).resolve(["x"]) == ("none", "b", None)
    path.write_text(json.dumps({"condition": {"x": 1}, "behaviour": {}}))
    with pytest.raises(InputError, match=r"map\.json: field 'condition\.x'"):
        TagMapping.from_json(path)


@settings(max_examples=40, deadline=None)
@given(
    scores=st.dictionaries(
        st.text("abcdefgh_/", min_size=1, max_size=12).filter(
            lambda k: not k.startswith("/") and not k.endswith("/")
        ),
        st.one_of(st.none(), st.integers(1, 10), st.floats(1, 10)),
        min_size=1,
        max_size=6,
    )
)
def test_petri_scores_round_trip(tmp_path_factory: pytest.TempPathFactory, scores: dict) -> None:
    """Every score key lands as one row with its judge/dimension split; values are kept."""
    d = tmp_path_factory.mktemp("p")
    write(d, "t.json", transcript("t", ["res-none", "reward-hacking"], scores))
    # One judge whose every value is None (refused every dimension) keeps its NaN rows.
    result = import_petri_transcripts(d, MAPPING, default_judge="J")
    t = result.table
    assert len(t) == len(scores) and result.dropped.empty
    for key, value in scores.items():
        judge, dim = key.rsplit("/", 1) if "/" in key else ("J", key)
        row = t[(t["judge"] == judge) & (t["dimension"] == dim)]
        assert len(row) == 1
        got = row["score"].iloc[0]
        assert (np.isnan(got) and value is None) or got == pytest.approx(value)


def fake_inspect(monkeypatch: pytest.MonkeyPatch, logs: dict[str, Any]) -> None:
    """Stand in for inspect_ai.log.read_eval_log with objects shaped like EvalLog."""
    mod = types.ModuleType("inspect_ai.log")
    mod.read_eval_log = lambda path, header_only=False: logs[Path(path).name][0]  # type: ignore[attr-defined]
    mod.read_eval_log_samples = lambda path, **kw: iter(logs[Path(path).name][1])  # type: ignore[attr-defined]
    pkg = types.ModuleType("inspect_ai")
    pkg.log = mod  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "inspect_ai", pkg)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", mod)


def ns(**kw: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**kw)


def score(value: Any) -> types.SimpleNamespace:
    return ns(value=value, answer=None, explanation="because", metadata={})


def test_inspect_logs_through_reader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    roles = {
        "auditor": ns(model="openai/gpt-5.6"),
        "target": ns(model="grok-4.5"),
        "judge": ns(model="judge-m"),
    }
    samples = [
        ns(
            id="seed-rh-tx",
            epoch=1,
            metadata={},
            input="seed text",
            scores={"audit_judge": score({"reward_hacking": 6, "realism": 8})},
        ),
        ns(
            id="s2",
            epoch=1,
            metadata={"tags": ["res-none", "reward-hacking"]},
            input="seed text",
            scores={"audit_judge": score(None)},
        ),
        ns(
            id="s3",
            epoch=2,
            metadata={"tags": ["res-codebase", "reward-hacking"]},
            input="seed text",
            scores={"audit_judge": score({"reward_hacking": 1})},
        ),
    ]
    log = ns(eval=ns(model_roles=roles, tags=[], run_id="R", task_args={}, scorers=[]),
             status="success", error=None, tags=None)  # fmt: skip
    fake_inspect(monkeypatch, {"run.eval": (log, samples)})
    (tmp_path / "run.eval").write_bytes(b"")
    result = import_inspect_logs([tmp_path / "run.eval"], MAPPING)
    t = result.table
    # No sample uuid (older logs): run id / sample id / epoch, never the file name.
    assert set(t["rollout"]) == {"R/seed-rh-tx/1", "R/s3/2"}
    # Provider stripped, as Petri v2 transcripts write model names.
    assert set(t["judge"]) == {"judge-m"} and set(t["auditor"]) == {"gpt-5.6"}
    assert t[t["rollout"] == "R/s3/2"]["condition"].iloc[0] == "codebase"
    assert list(result.dropped["rollout"]) == ["R/s2/1"]
    assert result.dropped["code"].iloc[0] == "judge_missing"


def test_inspect_missing_package_is_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    with pytest.raises(InputError, match="needs the package inspect_ai"):
        import_inspect_logs(["x.eval"], MAPPING)


def test_read_tidy_table_csv_parquet_and_errors(tmp_path: Path) -> None:
    table = pd.DataFrame(
        {
            "rollout": ["1", "1", "2"],
            "behaviour": "b",
            "condition": ["none", "none", "codebase"],
            "auditor": "a",
            "target": "t",
            "judge": ["j1", "j2", "j1"],
            "dimension": "b",
            "score": [3, None, 4],
        }
    )
    table.to_csv(tmp_path / "t.csv", index=False)
    table.to_parquet(tmp_path / "t.parquet", index=False)
    for name in ("t.csv", "t.parquet"):
        got = read_tidy_table(tmp_path / name).table
        assert got["rollout"].tolist() == ["1", "1", "2"]
        assert np.isnan(got["score"].iloc[1])
    with pytest.raises(InputError, match="file not found"):
        read_tidy_table(tmp_path / "nope.csv")
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match=r"bad\.parquet: cannot be read"):
        read_tidy_table(tmp_path / "bad.parquet")
    table.drop(columns=["score"]).to_csv(tmp_path / "noscore.csv", index=False)
    with pytest.raises(InputError, match=r"noscore\.csv: missing column\(s\) score"):
        read_tidy_table(tmp_path / "noscore.csv")


def test_one_bad_value_drops_only_that_value(tmp_path: Path) -> None:
    """A boolean score or one outside 1..10 drops that value, not the whole transcript."""
    scores = {"reward_hacking": 4, "flag": True, "gratitude": 0, "other": 11}
    write(tmp_path, "t.json", transcript("t", ["res-none", "reward-hacking"], scores))
    result = import_petri_transcripts(tmp_path, MAPPING)
    assert result.table["dimension"].tolist() == ["reward_hacking"]
    got = dict(zip(result.dropped["code"], result.dropped["reason"], strict=True))
    assert set(got) == {"score_not_a_number", "score_out_of_range"}
    assert "flag=True" in got["score_not_a_number"]
    assert "gratitude=0" in got["score_out_of_range"] and "other=11" in got["score_out_of_range"]


def test_inspect_folder_with_other_json_is_not_an_error(tmp_path: Path) -> None:
    """A folder may hold Petri transcripts beside the logs: those are noted, not fatal; a file
    named on the command line that is not a log is an error naming it."""
    write(tmp_path, "transcript_x.json", transcript("x", [], {"a": 1}))
    result = import_inspect_logs([tmp_path], MAPPING)
    assert result.table.empty and result.dropped["code"].tolist() == ["malformed"]
    assert "not an Inspect eval log" in result.dropped["reason"].iloc[0]
    with pytest.raises(InputError, match=r"transcript_x\.json: cannot be read as an Inspect"):
        import_inspect_logs([tmp_path / "transcript_x.json"], MAPPING)
