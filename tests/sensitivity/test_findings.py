"""The sensitivity analysis read as findings: p-value formatting, the
one-line finding, strongest evidence first, readable log-axis ticks, the transcript messages a
judge's citation opens."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from eraudit_core.paths import DATA_DIR
from eraudit_core.sensitivity import (
    analyse,
    by_evidence,
    finding,
    format_p,
    odds_ratio_forest,
    read_rollouts,
    read_tidy_table,
    rollouts_path_for,
)
from eraudit_core.sensitivity._import import transcript_messages
from eraudit_core.sensitivity._plots import log_ticks

SAMPLE = DATA_DIR / "sensitivity" / "petri_like_rollouts.csv"
PETRI_EXAMPLE = DATA_DIR / "sensitivity" / "petri3_example.csv"


@pytest.fixture(scope="module")
def sample_result():  # type: ignore[no-untyped-def]
    return analyse(read_tidy_table(SAMPLE).table, reference_condition="none", n_boot=100)


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (3e-14, "3.0e-14"),
        (9.99e-5, "1.0e-04"),
        (1e-4, "0.0001"),
        (0.0032, "0.0032"),
        (0.04, "0.04"),
        (0.43, "0.430"),
        (None, "n/a"),
        (math.nan, "n/a"),
    ],
)
def test_format_p(p: float | None, text: str) -> None:
    assert format_p(p) == text


def test_opens_on_the_planted_effect_and_words_it(sample_result) -> None:  # type: ignore[no-untyped-def]
    """The file's one planted condition effect (reward_hacking, transcripts OR 12.2) comes
    first; the two null behaviours read as no clear effect (negative controls)."""
    order = by_evidence(sample_result)
    assert order[0] == "reward_hacking"
    line = finding(sample_result.behaviours["reward_hacking"])
    b = sample_result.behaviours["reward_hacking"]
    transcripts = next(c for c in b.contrasts if c.condition == "transcripts")
    assert line.startswith("Under transcripts, reward-hacking scores are higher than under none")
    assert f"odds ratio {transcripts.odds_ratio:.3g}" in line and "Holm p < 1e-4" in line
    for null in ("harmful_compliance", "sycophancy"):
        assert finding(sample_result.behaviours[null]).startswith("No clear effect")
    lr = [sample_result.behaviours[n].lr_resource.p for n in order]
    assert lr == sorted(lr)


def test_finding_direction_and_separation(sample_result) -> None:  # type: ignore[no-untyped-def]
    b = sample_result.behaviours["reward_hacking"]
    lower = [replace(c, odds_ratio=1 / c.odds_ratio, log_odds=-c.log_odds, separation=True)
             for c in b.contrasts]  # fmt: skip
    line = finding(replace(b, contrasts=tuple(lower)))
    assert "scores are lower than" in line and "unreliable" in line
    assert finding(replace(b, contrasts=())).endswith("could be compared with none.")


def test_log_ticks_read_as_numbers() -> None:
    assert log_ticks([0.3, 4.0, 1.0]) == [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
    assert log_ticks([0.001, 500.0]) == [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    assert log_ticks([math.inf, -1.0]) == [1.0]


def test_forest_plot_uses_the_readable_ticks(sample_result) -> None:  # type: ignore[no-untyped-def]
    fig = odds_ratio_forest(sample_result.behaviours["reward_hacking"])
    ticks = list(fig.layout.xaxis.tickvals)
    assert ticks and list(fig.layout.xaxis.ticktext) == [f"{t:g}" for t in ticks]
    assert 1.0 in ticks


def test_transcript_messages_from_objects_and_dicts() -> None:
    class Call:
        function, arguments = "send_message", {"text": "hi"}

    class Msg:
        id, role, content, tool_calls = (
            "m1",
            "assistant",
            [type("P", (), {"text": "Hello"})()],
            [Call()],
        )

    dicts = [{"id": "m2", "role": "user", "content": [{"type": "text", "text": "Q?"}]}]
    assert transcript_messages([Msg()]) == [
        {"id": "m1", "role": "assistant",
         "text": 'Hello\n[tool call] send_message({"text": "hi"})'},
    ]  # fmt: skip
    assert transcript_messages(dicts) == [{"id": "m2", "role": "user", "text": "Q?"}]
    assert transcript_messages(None) is None and transcript_messages([]) is None


def test_bundled_example_keeps_the_messages_its_highlights_cite() -> None:
    """Every citation resolves in the kept transcript, except on rollouts whose auditor could
    roll back (task arg enable_rollback): Petri 3 may cite a message of a discarded branch."""
    rollouts = read_rollouts(rollouts_path_for(PETRI_EXAMPLE))
    found, missing = [], []
    for row in rollouts.itertuples():
        ids = {m["id"] for m in row.messages or []}
        for h in row.highlights or []:
            for mid in h.get("message_ids") or []:
                (found if mid in ids else missing).append(row.task_args["enable_rollback"])
    assert len(found) >= 10
    assert not any(missing_rollback is False for missing_rollback in missing)


def test_old_rollouts_file_without_messages_still_reads(tmp_path: Path) -> None:
    line = {"rollout": "r1", "judge": "j", "summary": "s"}
    path = tmp_path / "t.rollouts.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    frame = read_rollouts(path)
    assert "messages" in frame.columns and pd.isna(frame["messages"].iloc[0])
