"""What the live panel and the comparison say, decided outside Streamlit: the status shown
while a click takes effect, the chart's fixed axes, the note before the sequential test, the
plain-words reasons two runs are not comparable, and the demo's shipped registrations."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from eraudit_core import demo
from eraudit_core.method import AuditConfig
from eraudit_core.present import (
    LIVE_CHART_HEIGHT,
    PLOT_HEIGHT,
    differences_in_words,
    live_bound_figure,
    search_note,
    shown_status,
    step_line,
)
from eraudit_core.store import Store

CONFIG = AuditConfig(epsilon=0.5, search_budget=2, test_budget=20, test_generators=("rules",))


@pytest.mark.parametrize(
    ("status", "cancel", "here", "shown"),
    [
        ("running", False, False, "running"),
        ("running", True, False, "cancelling"),
        ("pending", True, False, "cancelling"),
        ("cancelled", True, True, "resuming"),  # Resume clicked, checkpoints still loading
        ("cancelled", True, False, "cancelled"),
        ("interrupted", False, True, "resuming"),
        ("done", False, False, "done"),
    ],
)
def test_the_status_shown_follows_the_click(status, cancel, here, shown) -> None:  # type: ignore[no-untyped-def]
    assert shown_status(status, cancel_requested=cancel, resuming_here=here) == shown


def test_cancelling_and_resuming_are_steps_of_their_own() -> None:
    now = pd.Timestamp("2026-12-01 12:00:00").to_pydatetime()
    assert step_line(None, "cancelling", now).startswith("Step: cancelling")
    assert step_line(None, "resuming", now) == "Step: resuming, loading the checkpoints"
    assert step_line(None, "cancelled", now) is None


def _steps(n_search: int, n_test: int, cex_in_search: bool = False) -> pd.DataFrame:
    rows = [
        {"stage": 1, "generator": "search", "t": i + 1, "bound": None, "bound_tolerant": None,
         "d": 1.5 if cex_in_search else 0.1 * (i + 1), "is_counterexample": cex_in_search}
        for i in range(n_search)
    ] + [
        {"stage": 2, "generator": "rules", "t": t, "bound": 0.05 ** (1 / t),
         "bound_tolerant": None, "d": 0.0, "is_counterexample": False}
        for t in range(1, n_test + 1)
    ]  # fmt: skip
    cols = ["stage", "generator", "t", "bound", "bound_tolerant", "d", "is_counterexample"]
    return pd.DataFrame(rows, columns=cols)


@pytest.mark.parametrize("n_test", [0, 1, 2, 9, 20])
def test_the_live_chart_keeps_its_axes_and_height_as_it_grows(n_test: int) -> None:
    fig = live_bound_figure(_steps(2, n_test), title="Which ship?", config=CONFIG)
    assert list(fig.layout.xaxis.range) == [0, 20.5]
    assert list(fig.layout.yaxis.range) == [0, 1.05]
    assert fig.layout.height == LIVE_CHART_HEIGHT and fig.layout.title.text == "Which ship?"
    assert fig.layout.margin.b == LIVE_CHART_HEIGHT - PLOT_HEIGHT - fig.layout.margin.t
    points = sum(len(t.x) for t in fig.data if t.name == "rules")
    assert points == n_test


def _two_generators_tolerant() -> pd.DataFrame:
    rows = [
        {"stage": 2, "generator": gen, "t": t, "bound": 0.05 ** (1 / t),
         "bound_tolerant": 0.04 ** (1 / t), "d": 0.0, "is_counterexample": gen == "b" and t == 9}
        for gen in ("a-long-generator-name", "b") for t in range(1, 10)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_the_live_legend_sits_under_the_plot_and_says_what_the_line_styles_mean() -> None:
    """At 390 px the legend inside the plot (four entries of up to 50 characters) covered the
    curves where they climb. It sits under the x axis in a bottom margin of fixed size (the
    plot keeps its height as entries come), names each generator once (its dashed
    failure-tolerant line toggles with it), and its title says what solid and dashed mean only
    when a dashed line is drawn."""
    cfg = AuditConfig(epsilon=0.5, search_budget=2, test_budget=20, test_generators=("a", "b"))
    fig = live_bound_figure(_two_generators_tolerant(), title="q", config=cfg)
    legend = fig.layout.legend
    assert legend.orientation == "h" and legend.yref == "container" and legend.y == 0
    shown = [t.name for t in fig.data if t.showlegend is not False]
    assert shown == ["a-long-generator-name", "b", "counterexample"]
    dashed = [t for t in fig.data if t.line is not None and t.line.dash == "dash"]
    assert len(dashed) == 2 and {t.legendgroup for t in dashed} == {"a-long-generator-name", "b"}
    assert "dashed: failure-tolerant bound (beyond the paper)" in legend.title.text
    assert "solid: the paper's bound" in legend.title.text
    plain = live_bound_figure(_steps(2, 5), title="q", config=CONFIG)
    assert "dashed" not in (plain.layout.legend.title.text or "")
    for f in (fig, plain):
        assert f.layout.height == LIVE_CHART_HEIGHT and f.layout.margin.b == fig.layout.margin.b


def test_stop_at_target_caps_the_axis_at_n_star() -> None:
    cfg = AuditConfig(
        epsilon=0.5, search_budget=2, test_budget=40, target=0.85, test_generators=("rules",)
    )
    fig = live_bound_figure(_steps(2, 3), title="q", config=cfg)
    assert fig.layout.xaxis.range[1] == cfg.stop_after + 0.5 < 40


def test_before_the_sequential_test_the_chart_says_where_the_search_stands() -> None:
    assert "Scoring the original wording" in search_note(_steps(0, 0), 0.5)
    clean = search_note(_steps(2, 0), 0.5)
    assert "2 rewording(s) scored, largest D 0.2 (epsilon 0.5)" in clean
    degraded = search_note(_steps(1, 0, cex_in_search=True), 0.5)
    assert degraded.startswith("Degraded in the counterexample search: D 1.5 > epsilon 0.5")
    fig = live_bound_figure(_steps(1, 0, cex_in_search=True), title="q", config=CONFIG)
    assert fig.layout.annotations[0].text.startswith("Degraded in the counterexample search")


def test_the_search_note_is_wrapped_into_lines_a_phone_shows_whole() -> None:
    """Plotly never wraps an annotation: a fixed-width box cut the note at both ends (seen at
    1400x900). The note comes in short lines, the box as wide as they are, and no word is lost."""
    fig = live_bound_figure(_steps(2, 0), title="q", config=CONFIG)
    note = fig.layout.annotations[0]
    assert note.width is None
    lines = note.text.split("<br>")
    assert len(lines) > 1 and max(len(line) for line in lines) <= 44
    assert " ".join(lines) == search_note(_steps(2, 0), CONFIG.epsilon)


def test_a_long_question_titles_the_chart_in_two_lines_a_phone_shows_whole() -> None:
    """A one-line title of 90 characters ran off the chart at 390 px; it comes in at most two
    lines short enough for a phone, with an ellipsis when the question is longer."""
    question = (
        "Why does the author say that the imposing the ban was a contradiction by whom it "
        "was imposed, according to the passage, and what followed from it?"
    )
    fig = live_bound_figure(_steps(2, 3), title=question, config=CONFIG)
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) == 2 and max(len(line) for line in lines) <= 44
    assert lines[-1].endswith("\u2026")
    assert fig.layout.margin.t >= 52  # room for the second line


def test_reasons_two_runs_are_not_comparable_are_plain_words() -> None:
    words = differences_in_words(
        [
            {"field": "epsilon", "a": 0.5, "b": 2.0},
            {"field": "confidence", "a": 0.95, "b": 0.9},
            {"field": "questions", "a": 40, "b": 222, "only_a": ["p1"], "only_b": ["p2"]},
            {"field": "generators", "a": ["rules"], "b": ["echo", "rules"]},
            {"field": "pool_sizes", "a": {"rules": 40}, "b": {"rules": 20}},
            {"field": "paraphrase_sets", "a": {"rules": "d1"}, "b": {"rules": "d2"}},
        ]
    )
    assert words == [
        "Tolerance epsilon: 0.5 in the left run, 2.0 in the right.",
        "Confidence: 0.95 in the left run, 0.9 in the right.",
        "They audited different questions: 40 in the left run, 222 in the right.",
        "They drew paraphrases from different sets: rules in the left run, echo, rules in the "
        "right.",
        "Their paraphrase sets hold different numbers of rewordings (rules: 40 against 20).",
        "The rewordings of rules differ in their text between the two runs.",
    ]
    text = " ".join(words)
    for field in ("pool_sizes", "paraphrase_sets", "epsilon ", "d1"):
        assert field not in text


def test_the_demo_ships_its_registrations_and_keeps_a_measured_one(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    shipped = tmp_path / "checkpoints.json"
    entries = [
        {"fingerprint": "f-base", "name": "demo:base", "details": {"noise_floor": 1e-6}},
        {"fingerprint": "f-post", "name": "demo:concealed", "details": {"noise_floor": 2e-6}},
    ]
    shipped.write_text(json.dumps({"checkpoints": entries}), encoding="utf-8")
    monkeypatch.setattr(demo, "REGISTRATIONS", shipped)
    with Store(tmp_path / "s.duckdb") as store:
        store.register_checkpoint("f-post", "demo:concealed", {"noise_floor": 9e-6})
        assert demo.ensure_demo_registrations(store) == 1  # only the one not yet registered
        assert demo.ensure_demo_registrations(store) == 0
        rows = store.checkpoints().set_index("fingerprint")
        assert json.loads(rows.loc["f-base", "details"]) == {"noise_floor": 1e-6}
        assert json.loads(rows.loc["f-post", "details"]) == {"noise_floor": 9e-6}
    monkeypatch.setattr(demo, "REGISTRATIONS", tmp_path / "absent.json")
    with Store(tmp_path / "t.duckdb") as store:
        assert demo.ensure_demo_registrations(store) == 0


def test_a_run_without_a_reported_step_says_which_question_it_scores() -> None:
    now = pd.Timestamp("2026-12-01 12:00:10").to_pydatetime()
    made = pd.Timestamp("2026-12-01 12:00:00")
    line = step_line({}, "running", now, made, "scoring question 2 of 3")
    assert line == "Step: scoring question 2 of 3 (10 s)"
    reported = {"step": "scoring question 1 of 3: sequential test"}
    assert step_line(reported, "running", now, made, "scoring question 2 of 3").startswith(
        "Step: scoring question 1 of 3: sequential test"
    )
