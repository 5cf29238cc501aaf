"""The plotting helpers draw exactly what the analysis returned."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import pytest

from eraudit_core.sensitivity import analyse, cell_means_figure, odds_ratio_forest


@pytest.fixture(scope="module")
def result():
    rng = np.random.default_rng(0)
    rows = []
    for k in range(90):
        cond = ("none", "codebase", "transcripts")[k % 3]
        aud = ("a1", "a2")[k // 45]
        score = int(np.clip(3 + (2 if cond == "transcripts" else 0) + rng.integers(-2, 3), 1, 10))
        for judge in ("j1", "j2"):
            rows.append(
                {
                    "rollout": f"r{k}",
                    "behaviour": "rh",
                    "condition": cond,
                    "auditor": aud,
                    "target": "t",
                    "judge": judge,
                    "dimension": "rh",
                    "score": float(min(10, score + (judge == "j2"))),
                }
            )
    return analyse(pd.DataFrame(rows), "none", n_boot=200).behaviours["rh"]


def test_cell_means_figure_matches_cells(result) -> None:
    fig = cell_means_figure(result)
    assert [t.name for t in fig.data] == ["none", "codebase", "transcripts"]
    frame = result.cell_means_frame()
    for trace in fig.data:
        cells = frame[frame["condition"] == trace.name]
        assert list(trace.x) == [html.escape(p) for p in cells["pair"]]  # plotly shows &gt; as >
        np.testing.assert_allclose(trace.y, cells["mean"])
        np.testing.assert_allclose(np.array(trace.y) + trace.error_y.array, cells["ci_high"])
        np.testing.assert_allclose(np.array(trace.y) - trace.error_y.arrayminus, cells["ci_low"])


def test_forest_plot_matches_contrasts(result) -> None:
    fig = odds_ratio_forest(result)
    assert fig.layout.xaxis.type == "log"
    shown = {
        (html.unescape(y), round(x, 9)) for t in fig.data for x, y in zip(t.x, t.y, strict=True)
    }
    expected = {(f"pooled: {c.condition}", round(c.odds_ratio, 9)) for c in result.contrasts}
    expected |= {(f"{c.pair}:<br>{c.condition}", round(c.odds_ratio, 9)) for c in result.per_pair}
    assert shown == expected
    pooled_only = odds_ratio_forest(result, include_per_pair=False)
    assert sum(len(t.x) for t in pooled_only.data) == len(result.contrasts)
