"""Turning stored runs into something to share (DESIGN.md §7 Share, §9 security).

* `run_verdict`: a plain-language verdict for one run, for readers who are not programmers;
* `build_report`: one self-contained HTML file (plotly JS inlined once, no network needed to
  open it) with the verdicts, the plots and the per-question tables of one or more runs;
* `pair_table` / `paraphrase_table` / `export_run`: per-pair and per-paraphrase results as
  CSV or Parquet.

Everything is read from the store; nothing is scored again. Every piece of untrusted text
(questions, paraphrases, run labels, model names, error messages) goes through `html.escape`
before it reaches the HTML, and into figures only through `plots.safe_label`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from eraudit_core.audit import AuditConfig
from eraudit_core.errors import InputError
from eraudit_core.present import _plots as plots
from eraudit_core.present import _views as views
from eraudit_core.store import Store

MAX_COUNTEREXAMPLES_SHOWN = 200


def _fmt(x: Any, digits: int = 3) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if math.isnan(v) else f"{v:.{digits}f}"


def _pct(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


# ---------------------------------------------------------------------------------------------
# Plain-language verdicts


def run_verdict(run: dict[str, Any], pairs: pd.DataFrame) -> dict[str, Any]:
    """Headline and sentences that describe one run without statistics jargon.

    Returns {"headline": str, "sentences": list[str], "overview": dict}. The confidence is
    named as a confidence (e.g. 0.95), never as a significance level.
    """
    config = AuditConfig.from_dict(run["config"])
    ov = views.run_overview(pairs)
    label = str(run.get("label") or run["run_id"])
    pre, post = str(run.get("pre_name") or "before"), str(run.get("post_name") or "after")
    n, n_deg, n_cert, n_inc = (
        ov["n_pairs"],
        ov["n_degraded"],
        ov["n_certified"],
        ov["n_inconclusive"],
    )
    conf = f"{config.confidence:g}"
    sentences = [
        f"Run \u201c{label}\u201d compares the verifier before adaptation ({pre}) with the verifier after "
        f"adaptation ({post}) on {n} hidden question(s) that nobody monitored during adaptation."
    ]
    planned = int(run.get("n_pairs") or n)
    status = str(run.get("status") or "")
    if status != "done" or n < planned:
        sentences.append(
            f"The run is {status or 'unfinished'}: {n} of {planned} questions have a verdict; "
            "the numbers below cover only those."
        )
    sentences.append(
        f"A paraphrase counts as a counterexample when the adapted verifier's confidence in the "
        f"true hidden answer drops by more than {config.epsilon:g} times what it gained on the "
        f"monitored question, or times {config.k:g} if it gained less than that "
        f"(tolerance epsilon = {config.epsilon:g}, k = {config.k:g})."
    )
    if n_deg:
        sentences.append(
            f"{n_deg} of {n} question(s) ({_pct(n_deg / n)}) are DEGRADED: at least one "
            "paraphrase broke the adapted verifier. These are concrete failures, not estimates."
        )
    if n_cert:
        sentences.append(
            f"{n_cert} question(s) passed every test. For each of them we can say, with "
            f"confidence {conf}, that at least {_fmt(ov['min_bound_certified'], 2)} of "
            "paraphrases drawn like the tested ones are not degraded (the lowest bound among "
            "them; see the per-question table for each one)."
        )
    if n_inc:
        sentences.append(
            f"{n_inc} question(s) are inconclusive: no counterexample was found, but the "
            "sequential test did not run to completion. Finding no counterexample is not "
            "evidence that the question is safe."
        )
    if config.tv_delta > 0:
        sentences.append(
            f"Assumption: the paraphrases that matter lie within total-variation distance "
            f"{config.tv_delta:g} of the tested generators; every bound was lowered by that much."
        )
    if n == 0:
        headline = f"{label}: no questions finished yet."
    elif n_deg:
        headline = (
            f"{label}: adaptation DEGRADED {n_deg} of {n} hidden question(s) "
            f"(epsilon {config.epsilon:g})."
        )
    elif n_cert == n:
        headline = (
            f"{label}: no degradation found; every question certified with confidence {conf} "
            f"(mean bound {_fmt(ov['mean_bound'], 2)})."
        )
    else:
        headline = (
            f"{label}: no counterexample found, {n_cert} of {n} question(s) certified with "
            f"confidence {conf}; the rest are inconclusive."
        )
    return {"headline": headline, "sentences": sentences, "overview": ov}


# ---------------------------------------------------------------------------------------------
# The HTML report

_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, Roboto, sans-serif; margin: 2rem auto;
       max-width: 1100px; color: #222; line-height: 1.45; padding: 0 1rem; }
h1 { font-size: 1.7rem; } h2 { border-bottom: 2px solid #ddd; padding-bottom: .2rem; margin-top: 2.2rem; }
.headline { font-size: 1.15rem; font-weight: 600; padding: .7rem 1rem; border-radius: 6px; }
.degraded { background: #fde8e8; border-left: 6px solid #d62728; }
.certified { background: #e8f6e8; border-left: 6px solid #2ca02c; }
.inconclusive { background: #f0f0f0; border-left: 6px solid #7f7f7f; }
table { border-collapse: collapse; font-size: .85rem; margin: .6rem 0; }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f6f6; }
.note { color: #555; font-size: .9rem; }
.beyond { color: #8a5a00; font-size: .85rem; }
details { margin: .6rem 0; }
"""


def _table_html(df: pd.DataFrame, float_digits: int = 3) -> str:
    """An escaped HTML table (pandas escapes cell text with escape=True)."""
    return df.to_html(
        index=False,
        escape=True,
        border=0,
        na_rep="n/a",
        float_format=lambda v: f"{v:.{float_digits}f}",
    )


def _figure_html(fig: go.Figure, div_id: str) -> str:
    return fig.to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=div_id,
        config={"displaylogo": False, "responsive": True},
    )


def _run_section(store: Store, run_id: str, index: int) -> tuple[str, dict[str, Any]]:
    run = store.run(run_id)
    config = AuditConfig.from_dict(run["config"])
    data = views.run_views(store, run_id)
    pairs = data["pairs"]
    verdict = run_verdict(run, pairs)
    ov = verdict["overview"]
    kind = (
        "degraded" if ov["n_degraded"] else ("certified" if ov["n_certified"] else "inconclusive")
    )
    esc = html.escape
    parts = [
        f"<h2>Run {index}: {esc(str(run.get('label') or run_id))}</h2>",
        f'<p class="headline {kind}">{esc(verdict["headline"])}</p>',
        "<ul>" + "".join(f"<li>{esc(s)}</li>" for s in verdict["sentences"]) + "</ul>",
    ]
    settings = pd.DataFrame(
        [
            ("run id", run_id),
            ("status", run.get("status")),
            ("before adaptation (pre)", run.get("pre_name")),
            ("after adaptation (post)", run.get("post_name")),
            ("confidence", f"{config.confidence:g}"),
            ("tolerance epsilon", f"{config.epsilon:g}"),
            ("k (smallest gain used as denominator)", f"{config.k:g}"),
            ("search budget per question", config.search_budget),
            ("test budget per generator", config.test_budget),
            ("target p*", "none" if config.target is None else f"{config.target:g}"),
            ("total-variation assumption delta", f"{config.tv_delta:g}"),
            ("test generators", ", ".join(config.test_generators) or "(all in the store)"),
            (
                "model queries scored / read from cache",
                f"{run.get('queries_scored')} / {run.get('queries_cached')}",
            ),
        ],
        columns=["setting", "value"],
    )
    parts.append(
        "<details><summary>Settings of this run</summary>" + _table_html(settings) + "</details>"
    )
    if pairs.empty:
        parts.append('<p class="note">No question of this run has finished yet.</p>')
        return "\n".join(parts), verdict
    parts.append(
        _figure_html(
            plots.epsilon_figure({str(run.get("label") or run_id): data["epsilon"]}), f"eps-{index}"
        )
    )
    if data["epsilon"]["n_unavailable"].sum():
        parts.append(
            '<p class="note">Some epsilon values need scores this run did not collect '
            "(it stopped early); those questions are left out of that point rather than guessed.</p>"
        )
    parts.append(
        _figure_html(
            plots.confidence_figure({str(run.get("label") or run_id): data["confidence"]}),
            f"conf-{index}",
        )
    )
    parts.append("<h3>Standard evaluation (original questions only)</h3>")
    std = data["standard"].drop(columns=["run"])
    parts.append(_table_html(std))
    q = data["questions"].copy()
    q = q[
        [
            "pair_index",
            "status",
            "hidden_question",
            "p_pre_hidden",
            "p_post_hidden",
            "gain",
            "max_d",
            "n_counterexamples",
            "bound",
            "bound_tolerant",
            "n_test",
        ]
    ]
    q = q.rename(columns={"bound_tolerant": "bound_tolerant (beyond the paper)"})
    parts.append(
        f"<details><summary>All {len(q)} questions</summary>"
        '<p class="beyond">The failure-tolerant bound is beyond the paper: it does not drop to '
        "0 at the first counterexample (a beta-binomial mixture confidence sequence).</p>"
        + _table_html(q)
        + "</details>"
    )
    steps = store.steps(run_id)
    cex = steps[steps["is_counterexample"].astype(bool)] if not steps.empty else steps
    if not cex.empty:
        shown = cex.sort_values("d", ascending=False).head(MAX_COUNTEREXAMPLES_SHOWN)
        shown = shown.assign(set=shown["stage"].map({1: "search", 2: "test"}))
        parts.append(
            f"<details><summary>Counterexamples ({len(cex)}; the {len(shown)} largest D shown)"
            "</summary>"
            + _table_html(shown[["pair_id", "set", "generator", "text", "p_pre", "p_post", "d"]])
            + "</details>"
        )
    return "\n".join(parts), verdict


def build_report(store: Store, run_ids: Sequence[str], *, title: str | None = None) -> str:
    """A self-contained HTML report for one or more runs (opens offline, no network).

    The plotly library is inlined once; each figure is a div plus a call to it.
    """
    if not run_ids:
        raise InputError("report: name at least one run")
    for rid in run_ids:
        store.run(rid)
    sections = []
    verdicts = []
    for i, rid in enumerate(run_ids, start=1):
        body, verdict = _run_section(store, rid, i)
        sections.append(body)
        verdicts.append(verdict["headline"])
    esc = html.escape
    title = title or "ER-Audit report"
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    summary = "".join(f"<li>{esc(v)}</li>" for v in verdicts)
    overall = []
    scatter = plots.scatter_figure(views.scatter_points(store, list(run_ids)))
    overall.append(_figure_html(scatter, "scatter"))
    std = pd.concat(
        [
            views.standard_evaluation(store.pair_results(r), str(store.run(r).get("label") or r))
            for r in run_ids
        ],
        ignore_index=True,
    )
    overall.append(_figure_html(plots.standard_evaluation_figure(std), "standard"))
    counts = {}
    for r in run_ids:
        run = store.run(r)
        counts[str(run.get("label") or r)] = views.run_overview(store.pair_results(r))
    overall.append(
        _figure_html(
            plots.status_counts_figure(
                {
                    k: {
                        "degraded": v["n_degraded"],
                        "certified": v["n_certified"],
                        "inconclusive": v["n_inconclusive"],
                    }
                    for k, v in counts.items()
                }
            ),
            "status",
        )
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{_CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script>
</head><body>
<h1>{esc(title)}</h1>
<p class="note">Generated {esc(now)} by ER-Audit Studio from the stored scores of {len(run_ids)} run(s).
ER-Audit asks whether adapting (fine-tuning) a verifier model quietly made it worse on related
questions nobody monitored. For each hidden question it searches paraphrases for a
counterexample; if none is found it runs a sequential test that gives a lower bound, at a stated
confidence, on the share of paraphrases on which the adapted model is not worse.</p>
<h2>Summary</h2>
<ul>{summary}</ul>
{"".join(overall)}
{"".join(sections)}
<p class="note">Self-contained file: all plots are embedded and it needs no network to open.</p>
</body></html>
"""


def write_report(
    store: Store, run_ids: Sequence[str], out: str | Path, *, title: str | None = None
) -> Path:
    """Build the report and write it (UTF-8) to `out`."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(build_report(store, run_ids, title=title), encoding="utf-8")
    return path
