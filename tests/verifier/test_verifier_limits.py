"""Checkpoint specs with an adapter on the demo base and the length limits
(item 8): questions over the stated maximum are refused at import, prompts over the model's
context are refused with both lengths instead of being scored silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eraudit_core.cli import main as cli_main
from eraudit_core.errors import InputError
from eraudit_core.store import Store
from eraudit_core.text import MAX_QUESTION_CHARS
from eraudit_core.types import Query
from eraudit_core.verifier import CheckpointSpec, load_verifier
from eraudit_core.verifier._spec import DEMO_ADAPTERS
from tests._tiny_model import build_tiny_adapter, build_tiny_checkpoint


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def adapter(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_adapter(tiny, tmp_path_factory.mktemp("adapter") / "lora")


# -- item 5 --------------------------------------------------------------------------------------
def test_demo_base_plus_an_adapter_directory_is_accepted(adapter: Path) -> None:
    spec = CheckpointSpec.parse(f"demo:base+{adapter}")
    assert (spec.kind, spec.path, spec.adapter) == ("demo", "base", str(adapter.resolve()))
    assert CheckpointSpec.parse(spec.text) == spec
    # the bundled arms spelled out the long way are the same checkpoints as their short names
    long_form = CheckpointSpec.parse(f"demo:base+{DEMO_ADAPTERS / 'honest'}")
    assert long_form == CheckpointSpec.parse("demo:honest") and long_form.text == "demo:honest"
    with pytest.raises(InputError, match="already carries an adapter"):
        CheckpointSpec.parse(f"demo:honest+{adapter}")
    with pytest.raises(InputError, match="not found"):
        CheckpointSpec.parse(f"demo:base+{adapter}-missing")


def test_the_spelling_the_tool_suggests_for_a_bare_adapter_parses(adapter: Path) -> None:
    with pytest.raises(InputError) as info:
        CheckpointSpec.parse(str(adapter))
    suggested = str(info.value).split("(e.g. ")[1].rstrip(")")
    assert suggested == f"demo:base+{adapter}"
    assert CheckpointSpec.parse(suggested).adapter == str(adapter.resolve())


# -- item 8 --------------------------------------------------------------------------------------
def test_a_prompt_longer_than_the_context_is_refused_with_the_lengths(tiny: Path) -> None:
    v = load_verifier(str(tiny))
    short = Query("ok", "Why did the author leave the city?", "money", "love")
    long = Query("too-long", "Why " + "really " * 700 + "?", "money", "love")
    with pytest.raises(InputError) as info:
        v.score([short, long])
    msg = str(info.value)
    assert "too-long" in msg and "512" in msg and "tokens" in msg
    n = int(msg.split(" tokens")[0].split()[-1])
    assert n > 512
    assert v.score([short])[0].p_true > 0  # the short one alone is fine


def test_cli_score_refuses_an_overlong_prompt(tiny: Path, tmp_path: Path, capsys) -> None:
    rows = tmp_path / "q.jsonl"
    rows.write_text(
        json.dumps(
            {"question": "Why " + "really " * 400 + "?", "true_option": "a", "false_option": "b"}
        )
    )
    assert cli_main(["score", str(tiny), str(rows)]) == 2
    err = capsys.readouterr().err
    assert "context" in err and "512" in err


def _bench(path: Path, question: str) -> Path:
    rec = {
        "pair_id": "long",
        "monitored": {"question": "Monitored?", "true": "yes", "false": "no"},
        "hidden": {"question": question, "true": "up", "false": "down"},
    }
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    return path


def test_questions_over_the_stated_maximum_are_refused_at_import(tmp_path: Path, capsys) -> None:
    db = tmp_path / "l.duckdb"
    ok = _bench(tmp_path / "ok.jsonl", "x" * MAX_QUESTION_CHARS)
    assert cli_main(["import-benchmark", str(ok), "--db", str(db)]) == 0
    capsys.readouterr()
    path = _bench(tmp_path / "long.jsonl", "x" * (MAX_QUESTION_CHARS + 1))
    assert cli_main(["import-benchmark", str(path), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "hidden.question" in err and str(MAX_QUESTION_CHARS) in err and str(path) in err
    with Store(db) as store:
        assert len(store.benchmarks()) == 1


def test_paraphrases_over_the_stated_maximum_are_refused_at_import(tmp_path: Path, capsys) -> None:
    from eraudit_core.paraphrase import read_paraphrase_candidates

    path = tmp_path / "p.jsonl"
    path.write_text(
        json.dumps({"pair_id": "a", "generator": "g", "text": "y" * (MAX_QUESTION_CHARS + 1)})
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=f"line 1.*text.*{MAX_QUESTION_CHARS}"):
        read_paraphrase_candidates(path)
