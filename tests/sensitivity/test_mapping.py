"""The mapping file: today's {key: name} form and the rules by task argument, directory, tag,
seed id and seed-instruction text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eraudit_core.errors import InputError
from eraudit_core.sensitivity import RolloutContext, TagMapping
from eraudit_core.sensitivity._mapping import same_value

LEAN = {"max_turns": 4, "enable_prefill": False, "realism_filter": False, "target_tools": "none"}
RICH = {"max_turns": 8, "enable_prefill": True, "realism_filter": 0.6, "target_tools": "synthetic"}


def ctx(**kw: object) -> RolloutContext:
    return RolloutContext(**kw)  # type: ignore[arg-type]


def test_task_args_are_compared_as_values() -> None:
    assert same_value(4, 4.0) and same_value(0.6, 0.6) and same_value(False, False)
    assert not same_value(True, 1) and not same_value(0, False) and not same_value("4", 4)
    assert same_value([1, "a"], (1.0, "a")) and not same_value({"a": 1}, {"a": True})
    m = TagMapping.from_dict(
        {
            "condition": {
                "lean": {"task_args": {"max_turns": 4.0, "enable_prefill": False}},
                "rich": {"task_args": {"realism_filter": 0.6}},
                # realism_filter True is a different value from 0.6: no match for it.
                "filter-on": {"task_args": {"realism_filter": True}},
            },
            "behaviour": {"all": {"task_args": {"target_tools": "none"}}, "sycophancy": "b"},
        }
    )
    assert m.resolve_context(ctx(task_args=LEAN))[:2] == ("lean", "all")
    assert m.resolve_context(ctx(task_args=RICH, tags=("sycophancy",)))[:2] == ("rich", "b")
    _, _, code, reason = m.resolve_context(ctx(task_args={"max_turns": 4}))
    assert code == "unmapped_condition" and "1 task args" in (reason or "")


def test_directory_tag_seed_and_seed_text_rules() -> None:
    m = TagMapping.from_dict(
        {
            "condition": {
                "turns3": {"directory": "runs/turns3"},
                "turns6": [{"directory": "turns6"}, {"tag": ["condition:six", "seed-003"]}],
            },
            "behaviour": {
                "censorship": {"seed": ["12", "russian_government_censorship_probe"]},
                "sycophancy": {"seed_text": "gangstalked"},
            },
        }
    )
    run3 = ("", "data", "runs", "turns3")
    assert m.resolve_context(ctx(directories=run3, seed_id="12"))[:2] == ("turns3", "censorship")
    # "runs/turns3" needs both folders in a row.
    assert m.resolve_context(ctx(directories=("x", "turns3"), seed_id="12"))[2] == (
        "unmapped_condition"
    )
    both_tags = ctx(tags=("seed-003", "condition:six", "extra"), seed_text="... gangstalked ...")
    assert m.resolve_context(both_tags)[:2] == ("turns6", "sycophancy")
    one_tag = ctx(tags=("condition:six",), seed_text="gangstalked")
    assert m.resolve_context(one_tag)[2] == "unmapped_condition"
    clash = ctx(directories=("runs", "turns3", "turns6"), seed_id="12")
    condition, _, code, reason = m.resolve_context(clash)
    assert (
        condition is None and code == "ambiguous_condition" and "turns3, turns6" in (reason or "")
    )


def test_todays_format_still_works_and_mixes_with_rules(tmp_path: Path) -> None:
    path = tmp_path / "map.json"
    path.write_text(
        json.dumps(
            {
                "condition": {"res-none": "none", "codebase": {"task_args": {"skills": "pgspot"}}},
                "behaviour": {"reward-hacking": "reward_hacking", "seed-rh": "reward_hacking"},
            }
        )
    )
    m = TagMapping.from_json(path)
    assert m.resolve(["res-none", "reward-hacking"]) == ("none", "reward_hacking", None)
    got = m.resolve_context(ctx(task_args={"skills": "pgspot"}, seed_id="seed-rh"))
    assert got[:2] == ("codebase", "reward_hacking")
    assert m.resolve(["nothing"])[2] == "no condition mapping matches [nothing]"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"condition": {"a": {"folder": "x"}}, "behaviour": {"b": "b"}}, r"'condition\.a': unknown field\(s\) folder"),
        ({"condition": {"a": {"task_args": []}}, "behaviour": {"b": "b"}}, r"'condition\.a\.task_args'"),
        ({"condition": {"a": [{"tag": []}]}, "behaviour": {"b": "b"}}, r"'condition\.a\[0\]\.tag'"),
        ({"condition": {"a": {"seed_text": ""}}, "behaviour": {"b": "b"}}, r"seed_text"),
        ({"condition": {"a": "x"}}, r"field 'behaviour' must be a non-empty object"),
        ({"condition": {"a": "x"}, "behaviour": {"b": "b"}, "extra": 1}, r"unknown field\(s\) extra"),
        ([], "expected a JSON object"),
    ],
)  # fmt: skip
def test_bad_mapping_names_the_field(raw: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        TagMapping.from_dict(raw, "m.json")


def test_mapping_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="mapping file not found"):
        TagMapping.from_json(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(InputError, match=r"bad\.json: not valid JSON \(line 1\)"):
        TagMapping.from_json(tmp_path / "bad.json")
