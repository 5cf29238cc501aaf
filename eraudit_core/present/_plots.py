"""Plotly figure builders shared by the dashboard and the HTML report (docs/design.md §4 views, §7).

Every builder takes the DataFrames that `eraudit_core.views` or the store return and gives back
a `plotly.graph_objects.Figure`; none computes a bound or reads the database. Axis titles say
what is plotted in words an auditor can read, with the unit or range where there is one.

Untrusted text (questions, paraphrases, run labels, model names) reaches a figure only through
`safe_label`, which escapes it: plotly renders a subset of HTML tags in hover text, legends and
titles, so raw text could otherwise inject markup into the dashboard or the report.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from eraudit_core.text import safe_label
from eraudit_core.types import Verdict

BOUND_AXIS = "lower confidence bound L_t (0 to 1)"
T_AXIS = "paraphrases tested (t)"
# Only `certified` gets the certificate green; `passed` (no target, or a bound below it) is a
# neutral blue so a weak bound never looks like a certificate.
STATUS_COLOURS = {
    "degraded": "#d62728",
    "certified": "#2ca02c",
    "passed": "#4c78a8",
    "inconclusive": "#7f7f7f",
}
STATUS_SYMBOLS = {
    "degraded": "x",
    "certified": "circle",
    "passed": "circle-open",
    "inconclusive": "diamond-open",
}
RUN_COLOURS = ("#1f77b4", "#ff7f0e", "#9467bd", "#17becf", "#8c564b", "#e377c2")
TOLERANT_NOTE = "failure-tolerant bound (beyond the paper)"


def _int_dtick(max_t: object) -> int:
    """Whole-number tick spacing for a step axis (t counts paraphrases, never 1.5 of one)."""
    try:
        top = int(max_t)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        top = 1
    return max(1, -(-top // 10))


def _layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    """Title at the top left (a second line where it holds a <br>, so a phone-wide chart
    does not cut it) and the legend under the axis title, growing downwards: a legend that
    wraps into rows on a narrow chart then never covers the axis."""
    fig.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left"},
        height=height,
        margin={"l": 60, "r": 20, "t": 90 if "<br>" in title else 60, "b": 60},
        legend={"orientation": "h", "yanchor": "top", "y": -0.3, "x": 0.0},
        template="plotly_white",
    )
    return fig


def _empty(title: str, message: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(
        text=html.escape(message), showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper"
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, title, height=260)


def bound_trajectory_figure(
    trajectory: pd.DataFrame,
    *,
    title: str = "Certified lower bound as paraphrases are tested",
    target: float | None = None,
    show_tolerant: bool = True,
    empty_message: str = "No stage-2 steps yet: the sequential test has not started.",
    compact_legend: bool = False,
) -> go.Figure:
    """L_t against t, one line per test generator (columns of `bound_trajectory_frame`).

    Counterexamples are marked with a red cross at the step where they occurred; the bound
    of the paper drops to 0 there. The failure-tolerant bound, when present, is dashed and
    labelled as beyond the paper. `compact_legend` (a phone-wide chart) lists each generator
    once, its dashed line grouped with it, and "counterexample" once; the caller's legend
    title then says what solid and dashed mean.
    """
    if trajectory is None or trajectory.empty:
        return _empty(title, empty_message)
    fig = go.Figure()
    for i, (gen, g) in enumerate(trajectory.groupby("generator", sort=False)):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        g = g.sort_values("t")
        name = safe_label(gen, 40)
        fig.add_trace(
            go.Scatter(
                x=g["t"],
                y=g["bound"].fillna(0.0),
                mode="lines+markers" if len(g) <= 30 else "lines",
                name=name if compact_legend else f"{name}: bound (paper)",
                legendgroup=name if compact_legend else None,
                # Generators with identical histories give identical bounds: draw the earlier
                # ones wider so every line stays visible where they overlap.
                line={"color": colour, "width": max(1.5, 5.0 - 1.5 * i)},
                hovertemplate="t=%{x}<br>bound=%{y:.3f}<extra>" + name + "</extra>",
            )
        )
        if show_tolerant and "bound_tolerant" in g and g["bound_tolerant"].notna().any():
            fig.add_trace(
                go.Scatter(
                    x=g["t"],
                    y=g["bound_tolerant"],
                    mode="lines",
                    name=f"{name}: {TOLERANT_NOTE}",
                    legendgroup=name if compact_legend else None,
                    showlegend=not compact_legend,
                    line={"color": colour, "width": 1.5, "dash": "dash"},
                    hovertemplate="t=%{x}<br>tolerant bound=%{y:.3f}<extra>" + name + "</extra>",
                )
            )
        cex = g[g["is_counterexample"].astype(bool)] if "is_counterexample" in g else g.iloc[0:0]
        if not cex.empty:
            first_cross = not any(t.legendgroup == "counterexample" for t in fig.data)
            fig.add_trace(
                go.Scatter(
                    x=cex["t"],
                    y=[0.0] * len(cex),
                    mode="markers",
                    name="counterexample" if compact_legend else f"{name}: counterexample",
                    legendgroup="counterexample" if compact_legend else None,
                    showlegend=first_cross or not compact_legend,
                    marker={"symbol": "x", "size": 12, "color": STATUS_COLOURS["degraded"]},
                    hovertemplate="counterexample at t=%{x}<extra>" + name + "</extra>",
                )
            )
    if target is not None:
        fig.add_hline(
            y=target,
            line_dash="dot",
            line_color="#555",
            annotation_text=f"target p* = {target:g}",
            annotation_position="bottom right",
        )
    fig.update_xaxes(title_text=T_AXIS, rangemode="tozero", dtick=_int_dtick(trajectory["t"].max()))
    fig.update_yaxes(title_text=BOUND_AXIS, range=[0, 1])
    return _layout(fig, title)


SCATTER_COLOURINGS = ("run", "amplified", "drop")
AMPLIFIED_COLOURS = {True: "#ff7f0e", False: "#4c78a8"}


def _point_colours(g: pd.DataFrame, colour_by: str, run_colour: str) -> Any:
    """Marker colours of one run's points: the run's colour, amplified (g <= k) or not, or
    the worst rewording's drop on a colour scale."""
    if colour_by == "amplified" and "amplified" in g:
        return [AMPLIFIED_COLOURS[bool(a)] for a in g["amplified"].fillna(False)]
    if colour_by == "drop" and "worst_drop" in g:
        return g["worst_drop"].astype(float).fillna(0.0).tolist()
    return run_colour


def scatter_figure(
    points: pd.DataFrame,
    *,
    epsilon: float | None = None,
    colour_by: str = "run",
    title: str = "Per question: confidence after adaptation<br>vs worst degradation found",
) -> go.Figure:
    """x = p_post(H_true | canonical hidden question), y = max D; one trace per run.

    `points` has the columns of `views.scatter_points`. Each point carries
    customdata = [run_id, pair_id] so a click can open that question. `colour_by`: "run"
    (one colour a run), "amplified" (orange where g <= k, so every drop counts 1/k times) or
    "drop" (the worst rewording's drop p_pre - p_post on a colour scale).
    """
    if colour_by not in SCATTER_COLOURINGS:
        raise ValueError(f"colour_by must be one of {SCATTER_COLOURINGS}, got {colour_by!r}")
    if points is None or points.empty:
        return _empty(title, "No finished questions in the selected run(s) yet.")
    fig = go.Figure()
    for i, (_run_id, g) in enumerate(points.groupby("run_id", sort=False)):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        label = safe_label(g["run_label"].iloc[0], 50)
        drops = g["worst_drop"] if "worst_drop" in g else [float("nan")] * len(g)
        amp = g["amplified"] if "amplified" in g else [None] * len(g)
        hover = [
            f"{safe_label(q, 90)}<br>status: {html.escape(str(s))}<br>worst drop: {d:.4f}"
            + ("<br>amplified (g <= k)" if a else "")
            for q, s, d, a in zip(g["hidden_question"], g["status"], drops, amp, strict=True)
        ]
        marker_colour = _point_colours(g, colour_by, colour)
        scale = (
            {"colorscale": "Reds", "cmin": 0.0, "colorbar": {"title": "drop"}, "showscale": i == 0}
            if colour_by == "drop"
            else {}
        )
        fig.add_trace(
            go.Scatter(
                x=g["p_post_hidden"],
                y=g["max_d"],
                mode="markers",
                name=label,
                marker={
                    "color": marker_colour,
                    **scale,
                    "size": 9,
                    "symbol": [STATUS_SYMBOLS.get(str(s), "circle") for s in g["status"]],
                    "line": {"width": 1, "color": "#333"},
                },
                customdata=list(zip(g["run_id"], g["pair_id"], strict=True)),
                text=hover,
                hovertemplate="%{text}<br>P(true) after: %{x:.3f}<br>max D: %{y:.3f}"
                "<extra>" + label + "</extra>",
            )
        )
    present = set(points["status"].astype(str))
    for status, symbol in STATUS_SYMBOLS.items():  # the marker shapes, explained in the legend
        if status in present:
            fig.add_trace(
                go.Scatter(
                    x=[None],
                    y=[None],
                    mode="markers",
                    name=f"{symbol.replace('-open', ' (hollow)')}: {status}",
                    legendgroup="markers",
                    marker={"symbol": symbol, "size": 9, "color": "#777", "line": {"width": 1}},
                    hoverinfo="skip",
                )
            )
    if epsilon is not None:
        fig.add_hline(
            y=epsilon,
            line_dash="dot",
            line_color=STATUS_COLOURS["degraded"],
            annotation_text=f"epsilon = {epsilon:g} (above: counterexample)",
            annotation_position="top left",
        )
    fig.add_vline(x=0.5, line_dash="dot", line_color="#999")
    fig.update_xaxes(
        title_text="P(true answer) after adaptation,<br>original hidden question (0 to 1)",
        range=[-0.02, 1.02],
    )
    fig.update_yaxes(title_text="largest degradation D found")
    fig.update_layout(clickmode="event+select", showlegend=True)
    _focus_d_axis(fig, points["max_d"], epsilon)
    _layout(fig, title, height=500)
    # two title lines at the left and the two-line axis note at the right stay apart on a phone
    fig.update_layout(margin={"t": 110})
    return fig


def _focus_d_axis(fig: go.Figure, max_d: pd.Series, epsilon: float | None) -> None:
    """Zoom the D axis to where most questions are when a few are far away.

    With the k floor a question whose monitored gain is <= 0 can have D in the tens; left to
    autorange, those squash every other point onto the epsilon line. A point is far when it
    lies more than 20 median absolute deviations (at least 5 units of D) from the median; the
    far points stay in the figure (double-click shows them) and an annotation counts them.
    """
    d = pd.to_numeric(max_d, errors="coerce").dropna()
    if len(d) < 5:
        return
    med = float(d.median())
    mad = float((d - med).abs().median())
    far = (d - med).abs() > 20 * max(mad, 0.25)
    outside = int(far.sum())
    if not outside:
        return
    kept = d[~far]
    eps = med if epsilon is None else float(epsilon)
    lo, hi = min(float(kept.min()), eps), max(float(kept.max()), eps)
    pad = 0.1 * max(hi - lo, 1.0)
    lo, hi = lo - pad, hi + pad
    fig.update_yaxes(range=[lo, hi])
    fig.add_annotation(
        text=f"{outside} question(s) beyond this axis (D {d.min():.3g} to {d.max():.3g});<br>"
        "double-click the chart to show all",
        xref="paper",
        yref="paper",
        x=1.0,
        y=1.01,
        showarrow=False,
        xanchor="right",
        yanchor="bottom",
        align="right",
        font={"size": 11, "color": "#555"},
    )


def epsilon_figure(
    sweeps: Mapping[str, pd.DataFrame],
    *,
    title: str = "How the verdict depends<br>on the tolerance epsilon",
) -> go.Figure:
    """Two panels per run label: questions with a counterexample, and mean bound, vs epsilon.

    `sweeps` maps a run label to `views.epsilon_sweep` output.
    """
    sweeps = {k: v for k, v in sweeps.items() if v is not None and not v.empty}
    if not sweeps:
        return _empty(title, "No finished questions to sweep over.")
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("Questions with<br>a counterexample", "Mean bound<br>(degraded = 0)"),
        horizontal_spacing=0.12,
    )
    for i, (label, df) in enumerate(sweeps.items()):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        name = safe_label(label, 50)
        unavailable = df["n_unavailable"] if "n_unavailable" in df else [0] * len(df)
        fig.add_trace(
            go.Scatter(
                x=df["epsilon"],
                y=df["n_with_counterexample"],
                mode="lines+markers",
                name=name,
                legendgroup=name,
                line={"color": colour},
                customdata=list(unavailable),
                hovertemplate="epsilon=%{x}<br>questions with a counterexample=%{y}"
                "<br>not decidable from stored scores=%{customdata}<extra>" + name + "</extra>",
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=df["epsilon"],
                y=df["mean_bound"],
                mode="lines+markers",
                name=name,
                legendgroup=name,
                showlegend=False,
                line={"color": colour},
                hovertemplate="epsilon=%{x}<br>mean bound=%{y:.3f}<extra>" + name + "</extra>",
            ),
            row=1,
            col=2,
        )
        if any(int(u) for u in unavailable):
            fig.add_trace(
                go.Scatter(
                    x=df["epsilon"],
                    y=list(unavailable),
                    mode="lines+markers",
                    name=f"{name}: not judgeable",
                    legendgroup=name,
                    line={"color": colour, "dash": "dot"},
                    marker={"symbol": "x"},
                    hovertemplate="epsilon=%{x}<br>questions not judgeable from stored "
                    "scores=%{y}<extra>" + name + "</extra>",
                ),
                row=1,
                col=1,
            )
    fig.update_xaxes(title_text="tolerance epsilon")
    fig.update_yaxes(title_text="number of questions", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="mean bound", range=[0, 1], row=1, col=2)
    _layout(fig, title)
    fig.update_layout(margin={"t": 140})  # the two-line title above the two-line panel titles
    return fig


def confidence_figure(
    sweeps: Mapping[str, pd.DataFrame],
    *,
    title: str = "Mean bound at other confidence levels<br>(degraded = 0)",
) -> go.Figure:
    """Mean bound per curve at confidence 0.8 ... 0.999 (`views.confidence_sweep` output).

    A curve can be a run per question, or the same run read simultaneously (alpha / N)."""
    sweeps = {k: v for k, v in sweeps.items() if v is not None and not v.empty}
    if not sweeps:
        return _empty(title, "No finished questions yet.")
    fig = go.Figure()
    for i, (label, df) in enumerate(sweeps.items()):
        name = safe_label(label, 50)
        fig.add_trace(
            go.Scatter(
                x=[f"{c:g}" for c in df["confidence"]],
                y=df["mean_bound"],
                mode="lines+markers",
                name=name,
                line={"color": RUN_COLOURS[i % len(RUN_COLOURS)]},
                hovertemplate="confidence %{x}<br>mean bound=%{y:.3f}<extra>" + name + "</extra>",
            )
        )
    fig.update_xaxes(title_text="confidence level<br>(e.g. 0.95 = 95% confidence)", type="category")
    fig.update_yaxes(title_text="mean lower bound (0 to 1)", range=[0, 1])
    return _layout(fig, title)


def standard_evaluation_figure(
    table: pd.DataFrame, *, title: str = "Standard evaluation on the original questions"
) -> go.Figure:
    """Accuracy per run, checkpoint and task (`views.standard_evaluation`, concatenated)."""
    if table is None or table.empty or table["n"].sum() == 0:
        return _empty(title, "No finished questions yet.")
    fig = go.Figure()
    table = table.assign(
        group=[
            f"{safe_label(r, 30)}<br>{c}"
            for r, c in zip(table["run"], table["checkpoint"], strict=True)
        ]
    )
    for task, colour in (("monitored", "#1f77b4"), ("hidden", "#ff7f0e")):
        sub = table[table["task"] == task]
        fig.add_trace(
            go.Bar(
                x=sub["group"],
                y=sub["accuracy"],
                name=f"{task} questions",
                marker_color=colour,
                customdata=sub["mean_task_probability"],
                hovertemplate="accuracy=%{y:.3f}<br>mean P(true)=%{customdata:.3f}<extra>"
                + task
                + "</extra>",
            )
        )
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text="run and checkpoint<br>(pre = before adaptation, post = after)")
    fig.update_yaxes(title_text="accuracy (P(true) > 0.5)", range=[0, 1])
    _layout(fig, title)
    # above the bars: under them the run names, turned upright on a narrow chart, take the room
    fig.update_layout(legend={"yanchor": "bottom", "y": 1.02}, margin={"t": 90})
    return fig


def status_counts_figure(
    counts: Mapping[str, Mapping[str, int]], *, title: str = "Verdicts per run"
) -> go.Figure:
    """Stacked bars of degraded / certified / passed / inconclusive questions per run."""
    if not counts:
        return _empty(title, "No runs selected.")
    labels = [safe_label(k, 40) for k in counts]
    fig = go.Figure()
    for status in Verdict:
        fig.add_trace(
            go.Bar(
                x=labels,
                y=[int(c.get(status, 0)) for c in counts.values()],
                name=status,
                marker_color=STATUS_COLOURS[status],
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="run")
    fig.update_yaxes(title_text="number of hidden questions", rangemode="tozero")
    return _layout(fig, title, height=360)


def paraphrase_d_figure(
    steps: pd.DataFrame,
    *,
    epsilon: float | None = None,
    title: str = "Degradation score of every paraphrase tested",
) -> go.Figure:
    """D per scored paraphrase in test order (stage 1 search, then stage 2 per generator)."""
    if steps is None or steps.empty:
        return _empty(title, "No paraphrases scored for this question.")
    fig = go.Figure()
    for i, ((stage, gen), g) in enumerate(steps.groupby(["stage", "generator"], sort=False)):
        name = f"{'search' if str(stage) == '1' else 'test'}: {safe_label(gen, 30)}"
        fig.add_trace(
            go.Scatter(
                x=g["t"],
                y=g["d"],
                mode="markers",
                name=name,
                marker={
                    "color": RUN_COLOURS[i % len(RUN_COLOURS)],
                    "symbol": ["x" if c else "circle" for c in g["is_counterexample"]],
                    "size": 8,
                },
                text=[safe_label(t, 90) for t in g["text"]],
                hovertemplate="%{text}<br>t=%{x}<br>D=%{y:.3f}<extra>" + name + "</extra>",
            )
        )
    if epsilon is not None:
        fig.add_hline(
            y=epsilon,
            line_dash="dot",
            line_color=STATUS_COLOURS["degraded"],
            annotation_text=f"epsilon = {epsilon:g}",
        )
    fig.update_xaxes(title_text="position in its set (t)", dtick=_int_dtick(steps["t"].max()))
    fig.update_yaxes(title_text="degradation score D")
    return _layout(fig, title, height=380)
