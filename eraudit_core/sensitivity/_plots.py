"""Plotly figures for the auditor-sensitivity analysis; the dashboard page only calls these.

Pure functions of a `BehaviourResult`: no computation beyond laying out what the analysis
returned, so the page and the HTML report show the same numbers.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

from eraudit_core.sensitivity._results import BehaviourResult, Contrast
from eraudit_core.text import safe_label

PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#9D755D")


def cell_means_figure(result: BehaviourResult) -> go.Figure:
    """Mean panel score per auditor-target pair (x), one marker colour per condition, with the
    95% percentile-bootstrap CI as error bars. Cells with no rollouts are simply absent."""
    fig = go.Figure()
    for i, cond in enumerate(result.conditions):
        cells = [c for c in result.cell_means if c.condition == cond]
        if not cells:
            continue
        fig.add_trace(
            go.Scatter(
                x=[safe_label(c.pair) for c in cells],
                y=[c.mean for c in cells],
                mode="markers",
                name=safe_label(cond),
                marker={"size": 10, "color": PALETTE[i % len(PALETTE)]},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [c.ci_high - c.mean for c in cells],
                    "arrayminus": [c.mean - c.ci_low for c in cells],
                },
                customdata=[[c.n, c.ci_low, c.ci_high] for c in cells],
                hovertemplate=(
                    "%{x}<br>"
                    + safe_label(cond).replace("%", "%%")
                    + ": mean %{y:.2f} [%{customdata[1]:.2f}, "
                    "%{customdata[2]:.2f}], n=%{customdata[0]}<extra></extra>"
                ),
            )
        )
    fig.update_layout(
        # a <br> in each long title and label, so a phone-wide chart does not cut them
        title=f"{safe_label(result.behaviour)}: mean judge score<br>by pair and condition "
        "(95% bootstrap CI)",
        scattermode="group",
        xaxis_title="auditor -> target",
        yaxis_title=f"panel-averaged {safe_label(result.dimension)} score",
        yaxis_range=[0.5, 10.5],
        legend={
            "title": {"text": "condition:", "side": "left"},
            "orientation": "h",
            "yanchor": "bottom",
            "y": 1.0,
        },
        margin={"t": 130},
    )
    return fig


def _or_text(c: Contrast) -> str:
    flag = " (separation?)" if c.separation else ""
    p = f"p={c.p:.3g}" + (f", Holm {c.p_holm:.3g}" if c.p_holm is not None else "")
    return f"OR {c.odds_ratio:.3g} [{c.ci_low:.3g}, {c.ci_high:.3g}], {p}{flag}"


def log_ticks(values: list[float]) -> list[float]:
    """Tick values for a log axis that read as numbers: 1-2-5 steps over at most two
    decades, whole decades over more (plotly's own minor labels read "2 5 0.1 2 5 1")."""
    finite = [v for v in values if math.isfinite(v) and v > 0]
    if not finite:
        return [1.0]
    lo, hi = math.floor(math.log10(min(finite))), math.ceil(math.log10(max(finite)))
    steps = (1.0, 2.0, 5.0) if hi - lo <= 2 else (1.0,)
    if hi - lo > 8:  # very wide intervals: every other decade
        return [10.0**e for e in range(lo, hi + 1, 2)]
    ticks = [m * 10.0**e for e in range(lo, hi + 1) for m in steps]
    return [round(t, 12) for t in ticks if 10.0**lo <= t <= 10.0**hi]


def odds_ratio_forest(result: BehaviourResult, include_per_pair: bool = True) -> go.Figure:
    """Forest plot of odds ratios vs the reference condition on a log axis, with 95% Wald CIs:
    the pooled (additive-model) contrasts first, then each pair's stratified contrasts. A
    contrast flagged for separation is drawn hollow; non-finite estimates are left out."""
    rows: list[tuple[str, Contrast]] = [
        (f"pooled: {safe_label(c.condition)}", c) for c in result.contrasts
    ]
    if include_per_pair:
        rows += [
            (f"{safe_label(c.pair)}:<br>{safe_label(c.condition)}", c) for c in result.per_pair
        ]
    rows = [
        (label, c)
        for label, c in rows
        if all(math.isfinite(v) and v > 0 for v in (c.odds_ratio, c.ci_low, c.ci_high))
    ]
    fig = go.Figure()
    colour = {cond: PALETTE[i % len(PALETTE)] for i, cond in enumerate(result.conditions)}
    for cond in result.conditions[1:]:
        sel = [(label, c) for label, c in rows if c.condition == cond]
        if not sel:
            continue
        fig.add_trace(
            go.Scatter(
                x=[c.odds_ratio for _, c in sel],
                y=[label for label, _ in sel],
                mode="markers",
                name=safe_label(cond),
                marker={
                    "size": 10,
                    "color": colour[cond],
                    "symbol": ["diamond-open" if c.separation else "diamond" for _, c in sel],
                },
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": [c.ci_high - c.odds_ratio for _, c in sel],
                    "arrayminus": [c.odds_ratio - c.ci_low for _, c in sel],
                },
                text=[_or_text(c) for _, c in sel],
                hovertemplate="%{y}<br>%{text}<extra></extra>",
            )
        )
    fig.add_vline(x=1.0, line_dash="dash", line_color="grey")
    ticks = log_ticks([v for _, c in rows for v in (c.ci_low, c.ci_high)] + [1.0])
    fig.update_layout(
        title=f"{safe_label(result.behaviour)}: odds ratio<br>vs "
        f"{safe_label(result.reference_condition)} (95% CI)",
        xaxis_type="log",
        xaxis={"tickvals": ticks, "ticktext": [f"{t:g}" for t in ticks]},
        xaxis_title="odds ratio of a higher<br>judge score (log scale)",
        yaxis={"autorange": "reversed"},
        legend={
            "title": {"text": "condition:", "side": "left"},
            "orientation": "h",
            "yanchor": "bottom",
            "y": 1.0,
        },
        height=max(420, 44 * len(rows) + 200),
        margin={"t": 110},
    )
    return fig
