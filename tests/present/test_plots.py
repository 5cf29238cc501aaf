"""Figure builders: readable axes, one trace per run/generator, escaped untrusted text."""

from __future__ import annotations

import pandas as pd
import pytest

from eraudit_core import method, present
from eraudit_core.present._plots import STATUS_SYMBOLS
from eraudit_core.store import Store
from eraudit_core.text import safe_label
from tests import _synthetic as synthetic

EVIL = '<img src=x onerror="alert(1)"><script>alert(2)</script>'


@pytest.fixture(scope="module")
def store() -> Store:
    s = Store(":memory:")
    s.info = synthetic.build_synthetic_store(s, n_pairs=4, n_search=2, n_test=5, seed=1)  # type: ignore[attr-defined]
    return s


def test_bound_trajectory_axes_and_traces() -> None:
    outcomes = [True] * 6 + [False]
    traj = pd.DataFrame(
        {
            "generator": ["g1"] * 7 + ["g2"] * 3,
            "t": [*range(1, 8), 1, 2, 3],
            "bound": [
                *method.bound_trajectory(outcomes, 0.95),
                *method.bound_trajectory([True] * 3, 0.95),
            ],
            "bound_tolerant": [
                *method.failure_tolerant_trajectory(outcomes, 0.95),
                *[0.1, 0.2, 0.3],
            ],
            "d": [0.0] * 6 + [0.5] + [0.0] * 3,
            "is_counterexample": [False] * 6 + [True] + [False] * 3,
        }
    )
    fig = present.bound_trajectory_figure(traj, target=0.9)
    assert fig.layout.xaxis.title.text == "paraphrases tested (t)"
    assert "0 to 1" in fig.layout.yaxis.title.text
    assert tuple(fig.layout.yaxis.range) == (0, 1)
    names = [t.name for t in fig.data]
    assert names == [
        "g1: bound (paper)",
        f"g1: {present.TOLERANT_NOTE}",
        "g1: counterexample",
        "g2: bound (paper)",
        f"g2: {present.TOLERANT_NOTE}",
    ]
    assert "beyond the paper" in present.TOLERANT_NOTE
    # The paper bound after 6 successes at confidence 0.95 is 0.05 ** (1/6) = 0.6069.
    assert fig.data[0].y[5] == pytest.approx(0.05 ** (1 / 6))
    assert fig.data[0].y[6] == 0.0
    assert list(fig.data[2].x) == [7]


def test_empty_inputs_give_a_message_not_an_error() -> None:
    for fig in (
        present.bound_trajectory_figure(pd.DataFrame()),
        present.scatter_figure(pd.DataFrame()),
        present.epsilon_figure({}),
        present.confidence_figure({}),
        present.paraphrase_d_figure(pd.DataFrame()),
    ):
        assert len(fig.data) == 0
        assert fig.layout.annotations and fig.layout.annotations[0].text


def test_scatter_one_trace_per_run_with_click_ids(store: Store) -> None:
    info = store.info  # type: ignore[attr-defined]
    pts = present.scatter_points(store, list(info.run_ids.values()))
    fig = present.scatter_figure(pts, epsilon=0.1)
    runs = [t for t in fig.data if t.legendgroup != "markers"]
    assert [t.name for t in runs] == ["synthetic: honest arm", "synthetic: adversarial arm"]
    # every marker shape drawn is explained in the legend, and only those
    legend = {t.name for t in fig.data if t.legendgroup == "markers"}
    shown = set(pts["status"])
    assert legend == {
        f"{symbol.replace('-open', ' (hollow)')}: {status}"
        for status, symbol in STATUS_SYMBOLS.items()
        if status in shown
    }
    assert legend  # negative control: the figure has questions, so the legend is not empty
    for trace in runs:
        run_ids = {c[0] for c in trace.customdata}
        assert len(run_ids) == 1 and run_ids <= set(info.run_ids.values())
        assert {c[1] for c in trace.customdata} == set(info.pair_ids)
    assert "after adaptation" in fig.layout.xaxis.title.text
    assert "degradation" in fig.layout.yaxis.title.text


def test_untrusted_text_is_escaped_in_figures() -> None:
    pts = pd.DataFrame(
        {
            "run_id": ["r"],
            "run_label": [EVIL],
            "pair_id": ["p"],
            "hidden_question": [EVIL],
            "p_post_hidden": [0.4],
            "max_d": [0.2],
            "status": ["degraded"],
            "bound": [0.0],
        }
    )
    html = present.scatter_figure(pts).to_html(include_plotlyjs=False)
    assert "<script>alert(2)" not in html and "<img src=x" not in html
    assert safe_label(EVIL).startswith("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;")


def test_sweep_figures_from_views(store: Store) -> None:
    rid = store.info.run_ids["adversarial"]  # type: ignore[attr-defined]
    data = present.run_views(store, rid)
    eps = present.epsilon_figure({"adv": data["epsilon"]})
    assert eps.layout.xaxis.title.text.startswith("tolerance epsilon")
    # counts and mean bounds, plus the not-judgeable series: at epsilon 1.5 and 2 one pair's
    # stored draws end before a fresh audit at that tolerance would stop, so its verdict is
    # unknown there
    assert list(data["epsilon"]["n_unavailable"]) == [0] * 8 + [1, 1]
    assert [t.name for t in eps.data] == ["adv", "adv", "adv: not judgeable"]
    conf = present.confidence_figure({"adv": data["confidence"]})
    assert list(conf.data[0].x) == ["0.8", "0.85", "0.9", "0.95", "0.99", "0.999"]
    assert list(conf.data[0].y) == pytest.approx(list(data["confidence"]["mean_bound"]))
    std = present.standard_evaluation_figure(data["standard"].assign(run="adv"))
    assert [t.name for t in std.data] == ["monitored questions", "hidden questions"]


def test_scatter_zooms_past_far_outliers_and_says_so() -> None:
    import pandas as pd

    from eraudit_core.present import scatter_figure

    d = [0.1, -0.2, 0.3, 0.0, 0.2, 0.4, -0.1, 72.8]  # one question with a k-floored denominator
    points = pd.DataFrame(
        {
            "run_id": "r",
            "run_label": "run",
            "pair_id": [f"p{i}" for i in range(len(d))],
            "hidden_question": "q",
            "p_post_hidden": 0.5,
            "max_d": d,
            "status": "certified",
            "bound": 0.5,
        }
    )
    fig = scatter_figure(points, epsilon=0.5)
    lo, hi = fig.layout.yaxis.range
    assert lo < -0.2 and 0.5 < hi < 72.8  # the bulk and epsilon are in view, the outlier is not
    assert any("1 question(s) beyond this axis" in a.text for a in fig.layout.annotations)
    calm = scatter_figure(points.iloc[:-1], epsilon=0.5)
    assert calm.layout.yaxis.range is None
