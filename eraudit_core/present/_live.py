"""What the live view of a running audit says: progress in scored paraphrases, rate, time left.

Counted from what the store holds, as it is written: every batch of an audit writes its steps
(one per scored paraphrase) with a timestamp, so progress moves with each batch, not only when
a question ends. The rate is read over a moving window of recent batches, and the time left is
the paraphrases still planned at that rate, so one slow or fast question does not swing it.
Elapsed time counts only the stretches the run was running (the store's `active_seconds` and
`resumed_at`), never the time it sat cancelled or interrupted.
"""

from __future__ import annotations

import html
import json
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig, RunRecord
from eraudit_core.present._plots import bound_trajectory_figure
from eraudit_core.present._views import bound_trajectory_frame
from eraudit_core.runs import build_items, items_from_table, read_score_table
from eraudit_core.store import Store
from eraudit_core.types import ACTIVE_RUN_STATUSES, RunStatus

RATE_WINDOW_S = 60.0


def planned_paraphrases(config: AuditConfig, pools: Mapping[str, int] | None = None) -> int:
    """The most paraphrases one question can need under `config`: its search budget plus, per
    test generator, the test budget (or n* when the run stops at p*, if smaller).

    `pools` (generator -> pool size, with "search" for the search set) caps each part at what
    the question has; without it the budgets are the plan."""
    pools = pools or {}
    search = config.search_budget
    if "search" in pools:
        search = min(search, int(pools["search"]))
    cap = config.test_budget
    if config.stop_after is not None:
        cap = min(cap, config.stop_after)
    return search + sum(
        min(cap, int(pools[g])) if g in pools else cap for g in config.test_generators
    )


@dataclass(frozen=True)
class LiveProgress:
    """The live view's numbers (see module docstring). `fraction` is in [0, 1]."""

    scored: int  # paraphrases scored and written so far (every step of the run)
    done_units: int  # planned paraphrases accounted for: finished questions count in full
    total_units: int
    fraction: float
    elapsed_s: float  # time spent running, pauses and cancellations left out
    rate: float | None  # paraphrases per second over the moving window
    time_left_s: float | None  # None when unknown (no rate yet, or the run is not running)


def live_progress(
    *,
    plans: Mapping[str, int],
    finished: Sequence[str],
    steps: pd.DataFrame,
    now: datetime,
    active_seconds: float,
    resumed_at: datetime | None,
    running: bool,
    window_s: float = RATE_WINDOW_S,
) -> LiveProgress:
    """Progress of a run from its stored steps.

    `plans`: pair id -> planned paraphrases (`planned_paraphrases`) for every question of the
    run; `finished`: pair ids with a verdict; `steps`: the run's steps, columns pair_id and
    recorded_at (one row per scored paraphrase); `active_seconds`/`resumed_at`: the store's
    record of the time the run ran (`resumed_at` set while it runs).
    """
    done_set = set(finished)
    counts = steps.groupby("pair_id").size() if not steps.empty else pd.Series(dtype=int)
    total = int(sum(plans.values()))
    done_units = sum(plans[p] for p in plans if p in done_set) + sum(
        min(int(counts.get(p, 0)), plans[p]) for p in plans if p not in done_set
    )
    elapsed = float(active_seconds)
    if resumed_at is not None and running:
        elapsed += max(0.0, (now - resumed_at).total_seconds())
    rate = _window_rate(steps, resumed_at if running else None, window_s)
    left = (total - done_units) / rate if running and rate else None
    return LiveProgress(
        scored=int(len(steps)),
        done_units=int(done_units),
        total_units=total,
        fraction=min(1.0, done_units / total) if total else 0.0,
        elapsed_s=elapsed,
        rate=rate,
        time_left_s=left,
    )


def _batches(steps: pd.DataFrame) -> pd.Series:
    """Paraphrases per written batch (steps share the timestamp of their batch), by time."""
    if steps.empty:
        return pd.Series(dtype=int)
    return steps.groupby(pd.to_datetime(steps["recorded_at"])).size().sort_index()


def _window_rate(steps: pd.DataFrame, since: datetime | None, window_s: float) -> float | None:
    """Paraphrases per second over the batches of the `window_s` seconds up to the last one
    (of this running stretch, from `since`): the work of every batch after the first, over the
    time from the first to the last. With one batch, its work over the time since the stretch
    began. Measured up to the last batch, not to now, so the rate holds between batches."""
    batches = _batches(steps)
    if batches.empty:
        return None
    if since is not None:
        batches = batches[batches.index >= pd.Timestamp(since)]
    if batches.empty:
        return None
    last = batches.index[-1]
    recent = batches[batches.index >= last - pd.Timedelta(seconds=window_s)]
    if len(recent) >= 2:
        span = (recent.index[-1] - recent.index[0]).total_seconds()
        return float(recent.iloc[1:].sum()) / span if span > 0 else None
    if since is not None:
        span = (last - pd.Timestamp(since)).total_seconds()
        return float(batches.sum()) / span if span > 0 else None
    return None


def run_plans(store: Store, run: Mapping[str, Any]) -> dict[str, int]:
    """pair id -> planned paraphrases for every question of a stored run.

    The run's recorded inputs (a model run's benchmark and pair ids, or a score table) give
    each question's pool sizes; when they cannot be read (a run from another machine, a table
    that moved), the budgets are the plan and questions not yet started get placeholder ids.
    """
    config = RunRecord.from_stored(run).config
    items = _recorded_items(store, run, config)
    if items is not None:
        return {
            it.pair_id: planned_paraphrases(
                config,
                {"search": len(it.search), **{g: len(p) for g, p in it.tests.items()}},
            )
            for it in items
        }
    plan = planned_paraphrases(config)
    known = list(store.pair_results(run["run_id"])["pair_id"])
    known += [p for p in store.steps(run["run_id"])["pair_id"].unique() if p not in known]
    n = max(int(run.get("n_pairs") or 0), len(known))
    return {**{str(p): plan for p in known}, **{f"#{i}": plan for i in range(len(known), n)}}


def run_question_texts(store: Store, run: Mapping[str, Any]) -> dict[str, str]:
    """pair id -> hidden question, from the run's recorded inputs (empty when unreadable), so
    a question can be named before its verdict is stored."""
    items = _recorded_items(store, run, RunRecord.from_stored(run).config) or []
    return {it.pair_id: " ".join(it.hidden.question.split()) for it in items}


def _recorded_items(store: Store, run: Mapping[str, Any], config: AuditConfig) -> list[Any] | None:
    source = str(run.get("source") or "")
    try:
        if source.startswith("table:"):
            table = read_score_table(source.removeprefix("table:"))
            return list(items_from_table(table, source=source)[0])
        if source.startswith("{"):
            spec = json.loads(source)
            return build_items(store, spec["benchmark_id"], spec["pair_ids"], config)[0]
    except (InputError, OSError, KeyError, ValueError):
        return None
    return None


# -- the worker's step ---------------------------------------------------------------------------
SCORING = "scoring"


def _when(value: Any) -> datetime | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError):
        return None
    if stamp is pd.NaT:
        return None
    return stamp.tz_convert(None).to_pydatetime() if stamp.tzinfo else stamp.to_pydatetime()


def step_line(
    phase: Mapping[str, Any] | None,
    status: str,
    now: datetime,
    created_at: Any = None,
    scoring: str | None = None,
) -> str | None:
    """ "Step: <what> (<N> s)" for a pending or running run: what its worker does now (as it
    wrote it to the store), N the whole seconds since the click that started it (the step's
    `origin`, else the run's creation). None once the run stopped: a cancelled, failed or
    finished run has no current step. A `shown_status` of "cancelling" or "resuming" is its
    own step. `scoring` names what a running run does when its worker reports no step (an
    audit started outside the dashboard): "scoring question 2 of 3"."""
    if status == "cancelling":
        return "Step: cancelling, the run stops after the batch it is scoring"
    if status == "resuming":
        return "Step: resuming, loading the checkpoints"
    if status not in ACTIVE_RUN_STATUSES:
        return None
    phase = phase or {}
    what = phase.get("step") or (
        "starting" if status == RunStatus.PENDING else scoring or "finishing"
    )
    origin = _when(phase.get("origin")) or _when(created_at)
    seconds = max(0, int((now - origin).total_seconds())) if origin is not None else 0
    return f"Step: {what} ({seconds} s)"


def shown_status(
    status: str, *, cancel_requested: bool = False, resuming_here: bool = False
) -> str:
    """The status a page shows for a run, ahead of what the store says while a click takes
    effect: "cancelling" from the moment a cancel is asked until the worker stops after its
    batch, "resuming" from a Resume click until the worker has loaded its checkpoints and
    claims the run (`resuming_here`: this process's worker for the run is alive and was not
    asked to stop). Otherwise the stored status."""
    if status in ACTIVE_RUN_STATUSES:
        return "cancelling" if cancel_requested else status
    return "resuming" if resuming_here else status


def step_times(phase: Mapping[str, Any] | None) -> pd.DataFrame:
    """Where a run's time went: one row per finished step (step, seconds), in order."""
    log = list((phase or {}).get("log") or [])
    return pd.DataFrame(
        [{"step": str(e.get("step")), "seconds": float(e.get("seconds") or 0.0)} for e in log],
        columns=["step", "seconds"],
    )


def loading_seconds(phase: Mapping[str, Any] | None) -> float | None:
    """Seconds from the click to the first scoring step of a run (loading and registering its
    checkpoints), or None when it never reached scoring."""
    times = step_times(phase)
    scoring = times["step"].str.startswith(SCORING)
    if not scoring.any():
        return None
    first = int(scoring.to_numpy().argmax())
    return float(times["seconds"].iloc[:first].sum())


def loading_left(
    phase: Mapping[str, Any] | None,
    earlier: Sequence[Mapping[str, Any] | None],
    now: datetime,
    created_at: Any = None,
) -> float | None:
    """While a run loads (no scoring step yet), the seconds left by the latest earlier run of
    the same checkpoints that reached scoring on this machine (its loading time, stored in its
    steps, minus the time since this run's click); None without such a run or once scoring."""
    steps = step_times(phase)
    current = str((phase or {}).get("step") or "")
    if current.startswith(SCORING) or steps["step"].str.startswith(SCORING).any():
        return None
    for other in earlier:
        took = loading_seconds(other)
        if took is not None:
            origin = _when((phase or {}).get("origin")) or _when(created_at)
            since = (now - origin).total_seconds() if origin is not None else 0.0
            return max(0.0, took - since)
    return None


# -- the live chart ------------------------------------------------------------------------------
# px. The plot area keeps its height whatever the title and legend hold: the top margin holds
# two title lines, the bottom one the x axis title and the legend (its two-line title and up
# to two rows of entries at 390 px). With the step line above it, the chart is on screen at
# 390x844 and 1400x900.
PLOT_HEIGHT = 208
TITLE_ROOM, AXIS_ROOM, LEGEND_ROOM = 56, 36, 76
LIVE_CHART_HEIGHT = TITLE_ROOM + PLOT_HEIGHT + AXIS_ROOM + LEGEND_ROOM
SOLID_AND_DASHED = "solid: the paper's bound<br>dashed: failure-tolerant bound (beyond the paper)"


def test_cap(config: AuditConfig) -> int:
    """The most paraphrases one test generator can draw under `config` (its x axis)."""
    cap = config.test_budget
    return min(cap, config.stop_after) if config.stop_after is not None else cap


# Characters per line of the chart's title and note: inside a phone's plot at their fonts.
NOTE_LINE_CHARS = 44


def search_note(pair_steps: pd.DataFrame, epsilon: float) -> str:
    """What the live chart says before the sequential test of a question starts: where the
    counterexample search stands, or why no bound will be drawn."""
    search = pair_steps[pair_steps["stage"] == 1] if not pair_steps.empty else pair_steps
    if search.empty:
        return "Scoring the original wording and the first rewordings of this question..."
    worst = float(search["d"].max())
    if search["is_counterexample"].astype(bool).any():
        return (
            f"Degraded in the counterexample search: D {worst:.2g} > epsilon {epsilon:g} on a "
            "rewording, so the bound is 0 and no sequential test runs."
        )
    return (
        f"Counterexample search: {len(search)} rewording(s) scored, largest D {worst:.2g} "
        f"(epsilon {epsilon:g}); the bound appears here when the sequential test has scored "
        "its first rewordings."
    )


def live_bound_figure(
    pair_steps: pd.DataFrame,
    *,
    title: str,
    config: AuditConfig,
) -> go.Figure:
    """The live panel's chart of one question: the bound of each test generator as it is
    tested, on axes fixed for the whole run (t from 0 to the test cap, bound from 0 to 1) and a
    fixed height, so the chart grows point by point instead of rescaling at every poll. Before
    the sequential test it shows the same empty axes and `search_note`."""
    traj = bound_trajectory_frame(pair_steps) if not pair_steps.empty else pd.DataFrame()
    if traj.empty:
        fig = go.Figure()
        # Plotly never wraps an annotation, and a fixed-width box cuts it: short lines, as wide
        # as a phone's plot area
        lines = textwrap.wrap(search_note(pair_steps, config.epsilon), NOTE_LINE_CHARS)
        fig.add_annotation(
            text="<br>".join(html.escape(line) for line in lines),
            showarrow=False, x=0.5, y=0.55, xref="paper", yref="paper",
        )  # fmt: skip
    else:
        fig = bound_trajectory_figure(traj, title=title, target=config.target, compact_legend=True)
    dashed = any(t.line is not None and t.line.dash == "dash" for t in fig.data)
    x_max = max(test_cap(config), int(traj["t"].max()) if not traj.empty else 0)
    # Plotly wraps no title either: at most two short lines, so a phone shows it whole; the top
    # margin always holds two, so the plot keeps its size from one question to the next
    lines = textwrap.wrap(
        title,
        NOTE_LINE_CHARS,
        max_lines=2,
        placeholder=" \u2026",
        break_long_words=False,  # `title` is escaped: never split an entity
        break_on_hyphens=False,
    )
    fig.update_layout(
        title={"text": "<br>".join(lines), "font": {"size": 13}, "x": 0.0, "xanchor": "left"},
        height=LIVE_CHART_HEIGHT,
        margin={"l": 44, "r": 8, "t": TITLE_ROOM, "b": AXIS_ROOM + LEGEND_ROOM},
        # under the x axis, at the chart's bottom edge: inside the plot it covered the curves
        # at 390 px, and the fixed bottom margin keeps the plot's height as entries come
        legend={
            "orientation": "h",
            "xanchor": "left",
            "x": 0.0,
            "yref": "container",
            "yanchor": "bottom",
            "y": 0,
            "font": {"size": 10},
            "title": {
                "text": SOLID_AND_DASHED if dashed else "solid: the paper's bound",
                "side": "top",
                "font": {"size": 10},
            },
        },
        template="plotly_white",
        uirevision=title,
    )
    fig.update_xaxes(range=[0, x_max + 0.5], visible=True, title={"text": "paraphrases tested (t)"})
    fig.update_yaxes(range=[0, 1.05], visible=True, title={"text": "lower bound"})
    return fig
