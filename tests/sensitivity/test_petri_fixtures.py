"""The importers on files written by Petri's own code (tests/fixtures/petri, see PROVENANCE.md).

Expected values come from the generators' manifests (`v2_manifest.json`, `petri3_manifest.json`:
what each rollout's scripted judge did and what an importer should do with it), never from the
importer's own output.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from eraudit_core.sensitivity import (
    TIDY_COLUMNS,
    TagMapping,
    import_inspect_logs,
    import_petri_transcripts,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "petri"
V2 = json.loads((FIX / "v2_manifest.json").read_text())
P3 = json.loads((FIX / "petri3_manifest.json").read_text())
N_DIMS = 38  # Petri's default judge dimensions (SCHEMA_NOTES.md)
# PROVENANCE.md: realism_multi_judge_audit runs alignment_judge(model=judge-1), then judge-2.
V2_JUDGE_MODEL = {"alignment_judge": "judge-1", "alignment_judge1": "judge-2"}
# The manifest's bumped_scores are judge-1's; judge-2 was scripted with concerning 5
# (PROVENANCE.md, realism_multi_judge rows; generate/gen_petri2.py judge_script("judge-2", ...)).
V2_BUMPED_BY_SCORER = {"alignment_judge1": {"concerning": 5}}

P3_MAPPING = TagMapping.from_dict(
    {
        "condition": {
            "lean": {"task_args": {"max_turns": 4, "enable_prefill": False}},
            "rich": {"task_args": {"max_turns": 8, "enable_prefill": True}},
        },
        "behaviour": {"sycophancy": "sycophancy", "censorship": "censorship"},
    }
)
V2_MAPPING = TagMapping.from_dict(
    {
        "condition": {
            "turns3": {"directory": "turns3"},
            "turns6": {"directory": "turns6"},
            "realism_multi_judge": {"directory": "realism_multi_judge"},
        },
        "behaviour": {"sycophancy": "sycophancy", "censorship": "censorship"},
    }
)


def codes(result: Any, rollout: str) -> list[str]:
    d = result.dropped
    return sorted(d.loc[d["rollout"] == rollout, "code"])


def check_scores(t: pd.DataFrame, judge: str, bumped: dict[str, int], n: int = N_DIMS) -> None:
    """n dimensions from this judge: the bumped ones as scripted, every other one 1."""
    rows = t[t["judge"] == judge].set_index("dimension")["score"]
    assert len(rows) == n
    for dim, value in rows.items():
        assert value == bumped.get(str(dim), 1), (judge, dim)


# --------------------------------------------------------------------------------------------
# Petri 3 .eval logs (zstd, inspect_ai 0.3.285)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def petri3() -> Any:
    return import_inspect_logs([FIX / "petri3_logs"], P3_MAPPING)


def test_petri3_every_rollout_as_the_manifest_says(petri3: Any) -> None:
    t = petri3.table
    assert list(t.columns) == list(TIDY_COLUMNS)
    originals = [e for e in P3 if "copy_of" not in e]
    for e in originals:
        uuid, mode = e["sample_uuid"], e["judge_mode"]
        mine = t[t["rollout"] == uuid]
        if mode == "ok":
            check_scores(mine, "judge-j", e["bumped_scores"])
            assert set(mine["condition"]) == {e["condition"]}
            assert set(mine["auditor"]) == {e["auditor"].split("/", 1)[1]}
            assert set(mine["behaviour"]) <= {"sycophancy", "censorship"}
            continue
        assert mine.empty, uuid
        expected = {
            "invalid": "judge_invalid_answer",
            "refusal": "judge_refusal",
            "error": "run_error" if e["log_status"] == "error" else "sample_error",
        }[mode]
        assert expected in codes(petri3, uuid), (uuid, codes(petri3, uuid))
    n_ok = sum(e["judge_mode"] == "ok" for e in originals)
    assert t["rollout"].nunique() == n_ok == 7
    assert len(t) == n_ok * N_DIMS


def test_petri3_byte_copy_adds_nothing(petri3: Any) -> None:
    copies = [e for e in P3 if "copy_of" in e]
    assert copies
    for e in copies:
        assert (petri3.table["rollout"] == e["sample_uuid"]).sum() == N_DIMS
        assert codes(petri3, e["sample_uuid"]) == ["duplicate"]


def test_petri3_errored_logs_say_so(petri3: Any) -> None:
    d = petri3.dropped
    for e in P3:
        if e["log_status"] != "error":
            continue
        row = d[d["rollout"] == e["sample_uuid"]].iloc[0]
        assert row["code"] == "run_error"
        assert e["sample_error"].split("(")[0] in row["reason"]  # e.g. RuntimeError, CancelledError
        assert "judge refusal" not in row["reason"]
    assert any("log status is error" in n for n in petri3.notes)
    summary = petri3.drop_summary().set_index("code")
    assert summary.loc["run_error", "rollouts"] == sum(e["log_status"] == "error" for e in P3)
    assert summary.loc["sample_error", "example"].endswith(".eval")


def test_petri3_rollout_details_keep_what_the_judge_wrote(petri3: Any) -> None:
    """Summary, justification, highlight message ids and task args, compared with the log
    read directly through inspect_ai (not through the importer)."""
    from inspect_ai.log import read_eval_log

    e = next(x for x in P3 if x["judge_mode"] == "ok" and x["condition"] == "rich")
    log = read_eval_log(str(FIX / e["file"]))
    sample = next(s for s in log.samples or [] if s.uuid == e["sample_uuid"])
    score = (sample.scores or {})["audit_judge"]
    row = petri3.rollouts[petri3.rollouts["rollout"] == e["sample_uuid"]].iloc[0]
    assert row["summary"] == (score.metadata or {})["summary"]
    assert row["justification"] == score.explanation
    refs = {r["id"] for r in (score.metadata or {})["scanner_references"]}
    ids = {m for h in row["highlights"] for m in h["message_ids"]}
    assert ids and ids <= refs
    for key, value in e["task_args"].items():
        assert row["task_args"][key] == value
    assert row["seed_instruction"] == sample.input
    assert row["run_id"] == e["eval_run_id"] and row["sample_id"] == e["seed_id"]


# --------------------------------------------------------------------------------------------
# Petri v2 transcripts (save_transcripts)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def v2t() -> Any:
    return import_petri_transcripts(FIX / "v2_transcripts", V2_MAPPING)


def test_v2_transcripts_as_the_manifest_says(v2t: Any) -> None:
    t = v2t.table
    expected_rows = 0
    for e in V2:
        uuid, mode = e["sample_uuid"], e["judge_mode"]
        mine = t[t["rollout"] == uuid]  # the sample uuid from the file name is the identity
        assert set(mine["condition"]) <= {e["condition_dir"]}
        assert set(mine["auditor"]) <= {e["auditor"]}
        if isinstance(mode, dict):  # several judges: prefixed keys, judge = scorer name
            for scorer, m in mode.items():
                # judge-2's failure leaves no marker in the transcript: kept, with a note.
                bumped = V2_BUMPED_BY_SCORER.get(scorer, e["bumped_scores"])
                check_scores(mine, scorer, bumped if m == "ok" else {})
                expected_rows += N_DIMS
            assert codes(v2t, uuid) == []
            other = v2t.rollouts.loc[v2t.rollouts["rollout"] == uuid, "other_scores"].iloc[0]
            assert other == {f"realism_scorer/{k}": v for k, v in e["realism_scorer"].items()}
            assert not mine["dimension"].isin(e["realism_scorer"]).any()
        elif mode == "ok":
            check_scores(mine, "alignment_judge", e["bumped_scores"])
            expected_rows += N_DIMS
        elif mode == "partial":
            # PROVENANCE.md: the judge wrote 5 of 38 (3 of them 1 by itself); 33 padded.
            check_scores(mine, "alignment_judge", e["bumped_scores"], n=5)
            d = v2t.dropped[v2t.dropped["rollout"] == uuid]
            assert list(d["code"]) == ["not_scored_by_judge"] and d["n_scores"].iloc[0] == 33
            expected_rows += 5
        elif mode == "zero":
            rows = mine.set_index("dimension")["score"]
            assert len(rows) == N_DIMS - 1 and "unprompted_gratitude" not in rows
            assert codes(v2t, uuid) == ["score_out_of_range"]
            expected_rows += N_DIMS - 1
        elif mode == "garbage":
            assert mine.empty and codes(v2t, uuid) == ["judge_parse_failure"]
    assert len(t) == expected_rows


def test_v2_later_judge_failure_is_flagged_not_hidden(v2t: Any) -> None:
    e = next(
        x for x in V2 if isinstance(x["judge_mode"], dict) and "garbage" in x["judge_mode"].values()
    )
    assert any(e["sample_uuid"] in n and "cannot be ruled out" in n for n in v2t.notes)
    notes = v2t.rollouts.set_index(["rollout", "judge"]).loc[
        (e["sample_uuid"], "alignment_judge1"), "notes"
    ]
    assert any("cannot be ruled out" in n for n in notes)


def test_v2_transcript_details(v2t: Any) -> None:
    e = next(x for x in V2 if x["judge_mode"] == "partial")
    raw = json.loads((FIX / e["file"]).read_text())["metadata"]
    row = v2t.rollouts[v2t.rollouts["rollout"] == e["sample_uuid"]].iloc[0]
    assert row["summary"] == raw["judge_output"]["summary"]
    assert row["justification"].startswith("Partial parse of judge's response.")
    assert row["seed_instruction"] == raw["seed_instruction"]
    assert row["transcript_id"] == raw["transcript_id"]
    want = [p["message_id"] for h in raw["judge_output"]["highlights"] for p in h["parts"]]
    assert [m for h in row["highlights"] for m in h["message_ids"]] == want


def test_v2_transcript_copy_under_another_name_adds_nothing(tmp_path: Path) -> None:
    src = FIX / "v2_transcripts" / "turns3"
    dst = tmp_path / "turns3"
    shutil.copytree(src, dst)
    first = next(iter(sorted(dst.glob("*.json"))))
    shutil.copy(first, dst / "zz_renamed_copy.json")
    result = import_petri_transcripts(tmp_path, V2_MAPPING)
    single = import_petri_transcripts(FIX / "v2_transcripts" / "turns3", V2_MAPPING)
    assert len(result.table) == len(single.table)
    assert "duplicate" in set(result.dropped["code"])


# --------------------------------------------------------------------------------------------
# Petri v2 Inspect logs (scorer alignment_judge, inspect_ai 0.3.154)
# --------------------------------------------------------------------------------------------


def test_v2_inspect_logs_import_with_detected_scorer() -> None:
    result = import_inspect_logs([FIX / "v2_inspect_logs"], V2_MAPPING)
    t = result.table
    in_logs = [e for e in V2 if e["inspect_log"]]
    assert in_logs
    for e in in_logs:
        uuid, mode = e["sample_uuid"], e["judge_mode"]
        mine = t[t["rollout"] == uuid]  # same identity as the transcript of that sample
        modes = mode if isinstance(mode, dict) else {"alignment_judge": mode}
        for scorer, m in modes.items():
            judge = V2_JUDGE_MODEL[scorer]
            if m == "ok":
                check_scores(mine, judge, V2_BUMPED_BY_SCORER.get(scorer, e["bumped_scores"]))
            else:  # the log keeps judge-2's marker that the transcript lost
                assert m == "garbage" and mine[mine["judge"] == judge].empty
                d = result.dropped
                assert "judge_parse_failure" in set(
                    d.loc[(d["rollout"] == uuid) & (d["judge"] == judge), "code"]
                )
    assert result.table["judge"].isin(V2_JUDGE_MODEL.values()).all()
    assert any("realism_scorer" in n for n in result.notes)


def test_scorer_option() -> None:
    only2 = import_inspect_logs([FIX / "v2_inspect_logs"], V2_MAPPING, scorer="alignment_judge1")
    assert set(only2.table["judge"]) == {"judge-2"}
    wrong = import_inspect_logs([FIX / "v2_inspect_logs"], V2_MAPPING, scorer="audit_judge")
    assert wrong.table.empty
    assert set(wrong.dropped["code"]) == {"judge_missing"}
    assert "scorers: alignment_judge" in wrong.dropped["reason"].iloc[0]


def test_two_judges_in_two_files_are_merged_and_conflicts_refused(tmp_path: Path) -> None:
    """A log re-scored by a second judge (written with inspect_ai's own writer) merges into
    the same rollouts; the same judge with other scores is a conflict, not a second rollout."""
    from inspect_ai.log import read_eval_log, write_eval_log

    src = FIX / "petri3_logs" / "lean" / Path(P3[0]["file"]).name
    log = read_eval_log(str(src))
    assert log.eval.model_roles is not None
    log.eval.model_roles["judge"].model = "mockllm/judge-k"
    for s in log.samples or []:
        for sc in (s.scores or {}).values():
            if isinstance(sc.value, dict):
                sc.value = {k: min(10, int(v) + 1) for k, v in sc.value.items()}
    write_eval_log(log, str(tmp_path / "rescored.eval"))
    log.eval.model_roles["judge"].model = "mockllm/judge-j"
    write_eval_log(log, str(tmp_path / "conflict.eval"))
    merged = import_inspect_logs([src, tmp_path / "rescored.eval"], P3_MAPPING)
    assert merged.table["rollout"].nunique() == 2
    assert set(merged.table["judge"]) == {"judge-j", "judge-k"}
    assert any("merged" in n for n in merged.notes)
    clash = import_inspect_logs([src, tmp_path / "conflict.eval"], P3_MAPPING)
    assert len(clash.table) == 2 * N_DIMS
    assert set(clash.dropped["code"]) == {"conflict"}


def test_unmapped_rollouts_name_what_was_looked_at() -> None:
    mapping = TagMapping.from_dict(
        {"condition": {"lean": {"task_args": {"max_turns": 4}}}, "behaviour": {"sycophancy": "s"}}
    )
    result = import_inspect_logs([FIX / "petri3_logs" / "rich"], mapping)
    assert result.table.empty
    unmapped = result.dropped[result.dropped["code"] == "unmapped_condition"]
    assert len(unmapped) == 4  # both rich logs, 2 samples each (mapping comes before the judge)
    assert "task args" in unmapped["reason"].iloc[0] and "rich" in unmapped["reason"].iloc[0]


def test_bundled_petri_example_is_the_import_of_the_fixtures(tmp_path: Path) -> None:
    """data/sensitivity/petri3_example.* (the page's example) is what the importer makes of the
    fixtures today: rebuild with the command in data/sensitivity/README.md when this fails."""
    from eraudit_core.sensitivity import read_rollouts, read_tidy_table, write_import

    data = FIX.parents[2] / "data" / "sensitivity"
    mapping = TagMapping.from_json(data / "petri3_example_mapping.json")
    result = import_inspect_logs([FIX / "petri3_logs"], mapping)
    _, side = write_import(result, tmp_path / "petri3_example.csv")
    pd.testing.assert_frame_equal(
        read_tidy_table(tmp_path / "petri3_example.csv").table,
        read_tidy_table(data / "petri3_example.csv").table,
    )
    root = str(FIX.parents[2]) + "/"
    fresh = read_rollouts(side).assign(source=lambda f: f["source"].str.replace(root, ""))
    pd.testing.assert_frame_equal(fresh, read_rollouts(data / "petri3_example.rollouts.jsonl"))
