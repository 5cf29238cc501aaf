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
import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from eraudit_core.audit import (
    AuditConfig,
    epsilon_from_sentence,
    rerun_note,
    run_label_mass,
    run_noise_floor_value,
    selection_note,
)
from eraudit_core.errors import InputError
from eraudit_core.present import _plots as plots
from eraudit_core.present import _story as story
from eraudit_core.present import _views as views
from eraudit_core.present._belief import (
    control_sentence,
    control_summary,
    noise_floor_sentence,
    pair_evidence_frame,
    why_this_verdict,
)
from eraudit_core.present._export import run_provenance
from eraudit_core.present._first_screen import (
    FIRST_SCREEN_CSS,
    first_screen_html,
    legend_html,
    with_paper_count,
    word_diff_html,
)
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


def _pool_sentence(pairs: pd.DataFrame, config: AuditConfig) -> str | None:
    """Which population a bound speaks about: a draw from each test generator's pool."""
    sizes = [
        int(g["available"])
        for gens in pairs.get("generators", pd.Series(dtype=object))
        for g in (gens or [])
    ]
    if not sizes:
        return None
    pool = f"{min(sizes)}" if min(sizes) == max(sizes) else f"{min(sizes)} to {max(sizes)}"
    if config.draw_seed is None:
        return (
            f"The tested paraphrases were taken in the table's order from each test "
            f"generator's pool of M = {pool} paraphrases per question (a score table is not "
            "shuffled by the studio): each bound is about the next paraphrase in that order, "
            "and speaks for the pool only as far as the table's order is as good as random. "
            "It says nothing about rewordings unlike those the generators write."
        )
    return (
        f"Each bound is about a paraphrase drawn at random from a test generator's pool of "
        f"M = {pool} paraphrases per question; the tested paraphrases were drawn uniformly at "
        f"random without replacement (seed {config.draw_seed}). It says nothing about "
        "rewordings unlike those the generators write."
    )


def floor_confidence(value: float, decimals: int = 4) -> str:
    """A confidence printed rounded down (never claims more than it is): 0.99875 -> 0.9987."""
    scaled = math.floor(value * 10**decimals + 1e-9) / 10**decimals
    return f"{scaled:.{decimals}f}".rstrip("0").rstrip(".")


def evidence_counts(pairs: pd.DataFrame, floor: float | None) -> dict[str, int]:
    """Among degraded questions: how many rest on the k floor (amplified), on a drop within
    the scorer's numerical precision, and on a drop below 0.05."""
    deg = pairs[pairs["status"] == "degraded"] if len(pairs) else pairs
    if deg.empty:
        return {"amplified": 0, "within_noise": 0, "small_drop": 0}
    drop = deg["worst_drop"].astype(float) if "worst_drop" in deg else pd.Series(dtype=float)
    amplified = deg["amplified"] if "amplified" in deg else deg["gain"] <= 0.001
    return {
        "amplified": int(amplified.fillna(False).astype(bool).sum()),
        "within_noise": int((drop.abs() <= floor).sum()) if floor is not None else 0,
        "small_drop": int((drop < SMALL_DROP).sum()),
    }


SMALL_DROP = 0.05


def run_verdict(run: dict[str, Any], pairs: pd.DataFrame) -> dict[str, Any]:
    """Headline and sentences that describe one run without statistics jargon.

    Returns {"headline", "sentences", "overview", "kind"}; `kind` is the headline's verdict
    class (degraded / certified / passed / inconclusive). Only `certified` questions (bound
    after the total-variation relaxation >= a target p*) are called certified; a bound without
    a target, or below it, is reported as what it is. The confidence is named as a confidence
    (e.g. 0.95), and the guarantee is stated per question, before results are known.
    """
    config = AuditConfig.from_dict(run["config"])
    ov = views.run_overview(pairs)
    label = str(run.get("label") or run["run_id"])
    pre, post = str(run.get("pre_name") or "before"), str(run.get("post_name") or "after")
    n, n_deg, n_cert, n_pass, n_inc = (
        ov["n_pairs"],
        ov["n_degraded"],
        ov["n_certified"],
        ov["n_passed"],
        ov["n_inconclusive"],
    )
    conf, alpha = f"{config.confidence:g}", 1.0 - config.confidence
    target = None if config.target is None else f"{config.target:g}"
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
    prov = run.get("provenance") or {}
    floor = run_noise_floor_value(prov)
    if config.min_drop > 0:
        sentences.append(
            f"Assumption beyond the paper: a rewording counts only when p(true) also fell by "
            f"more than the minimum drop {config.min_drop:g} (stated by the auditor)."
        )
    if n_deg:
        ev = evidence_counts(pairs, floor)
        sentences.append(
            f"{n_deg} of {n} question(s) ({_pct(n_deg / n)}) are DEGRADED: on a rewording, "
            f"p(true answer) fell by more than epsilon x the monitored gain g (or x k when g "
            f"<= k). Of them, {ev['amplified']} have g <= k = {config.k:g}, so every drop "
            f"counts {1 / config.k:.0f}x; {ev['small_drop']} rest on a drop below "
            f"{SMALL_DROP:g}"
            + (
                f"; {ev['within_noise']} on a drop within the scorer's numerical precision "
                f"{floor:.3g}"
                if floor is not None
                else "; no numerical precision was measured or declared"
            )
            + ". Each is a rewording and a measured drop, shown below; not an estimate of how "
            "often the verifier fails."
        )
    if n_cert:
        sentences.append(
            f"{n_cert} question(s) are CERTIFIED: no counterexample, every test generator "
            f"tested, and the lower bound reached the target p* = {target} at confidence {conf} "
            f"(the lowest certified bound is {_fmt(ov['min_bound_certified'], 2)})."
        )
    if n_pass:
        why = (
            "no target p* was set"
            if target is None
            else f"the bound stayed below the target p* = {target}"
        )
        sentences.append(
            f"{n_pass} question(s) PASSED without a certificate: no counterexample was found and "
            f"every test generator was tested, but {why}. Their bounds (mean "
            f"{_fmt(pairs.loc[pairs['status'] == 'passed', 'bound'].mean(), 2)}) are weaker "
            "statements, shown per question in the table; they are not certificates."
        )
    if n_inc:
        sentences.append(
            f"{n_inc} question(s) are inconclusive: no counterexample was found, but some test "
            "generator has nothing tested for them. Finding no counterexample is not evidence "
            "that a question is safe."
        )
    if n_cert or n_pass:
        sentences.append(
            f"What a bound means: for each question, before its result is known, the chance "
            f"that its bound is wrong is at most {alpha:.3g} (one minus the confidence), so "
            f"across the {n} audited questions the expected number of wrong bounds is at most "
            f"{alpha:.3g} x {n} = {alpha * n:.2g}. It is not a promise about the questions "
            f"picked out afterwards as certified. To make all {n} statements hold at once, "
            f"read every bound at confidence "
            f"{floor_confidence(views.simultaneous_confidence(config.confidence, n))} "
            f"(Bonferroni, {alpha:.3g} / {n}); see 'all questions at once' in the confidence plot."
        )
    pool = _pool_sentence(pairs, config)
    if pool:
        sentences.append(pool)
    eps_from = prov.get("epsilon_from")
    if isinstance(eps_from, dict):
        sentences.append(epsilon_from_sentence(eps_from, config.epsilon))
    rerun = rerun_note(prov)
    if rerun:
        sentences.append(rerun[0].upper() + rerun[1:] + ".")
    if config.tv_delta > 0:
        sentences.append(
            f"Assumption: the paraphrases that matter lie within total-variation distance "
            f"{config.tv_delta:g} of the tested generators' mixture; every bound (including the "
            "failure-tolerant one) was lowered by that much."
        )
    if n == 0:
        kind, headline = "inconclusive", f"{label}: no questions finished yet."
    elif n_deg:
        kind = "degraded"
        assumed = f", min-drop {config.min_drop:g}" if config.min_drop > 0 else ""
        headline = (
            f"{label}: adaptation DEGRADED {n_deg} of {n} hidden question(s) "
            f"(epsilon {config.epsilon:g}{assumed})."
        )
    elif n_cert == n:
        kind = "certified"
        headline = (
            f"{label}: no degradation found; every question certified at p* = {target} with "
            f"confidence {conf} (mean bound {_fmt(ov['mean_bound'], 2)})."
        )
    else:
        kind = "passed" if n_pass + n_cert else "inconclusive"
        parts = [
            f"{c} {w}"
            for c, w in (
                (n_cert, "certified"),
                (n_pass, "passed without a certificate"),
                (n_inc, "inconclusive"),
            )
            if c
        ]
        headline = f"{label}: no counterexample found; " + ", ".join(parts) + f" of {n}."
    headline = with_paper_count(headline, pairs, run["config"])
    if isinstance(eps_from, dict) and eps_from.get("unverified"):
        headline += " Epsilon came from a calibration on an unverified run."
    note = selection_note(run)
    if note:  # a run re-derived after exclusions: the selection comes first, never a certificate
        headline = f"{headline} {note.split('.')[0]}."
        sentences.insert(1, note)
    return {"headline": headline, "sentences": sentences, "overview": ov, "kind": kind}


# ---------------------------------------------------------------------------------------------
# The HTML report

_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, Roboto, sans-serif; margin: 2rem auto;
       max-width: 1100px; color: #222; line-height: 1.45; padding: 0 1rem; }
h1 { font-size: 1.7rem; } h2 { border-bottom: 2px solid #ddd; padding-bottom: .2rem; margin-top: 2.2rem; }
.headline { font-size: 1.15rem; font-weight: 600; padding: .7rem 1rem; border-radius: 6px; }
.degraded { background: #fde8e8; border-left: 6px solid #d62728; }
.certified { background: #e8f6e8; border-left: 6px solid #2ca02c; }
.passed { background: #e9eff7; border-left: 6px solid #4c78a8; }
.inconclusive { background: #f0f0f0; border-left: 6px solid #7f7f7f; }
table { border-collapse: collapse; font-size: .85rem; margin: .6rem 0; display: block;
        max-width: 100%; overflow-x: auto; }
td { overflow-wrap: anywhere; } pre { white-space: pre-wrap; overflow-wrap: anywhere; }
.plotly-graph-div { max-width: 100%; }
@media (max-width: 600px) { body { margin: 1rem auto; padding: 0 .6rem; } }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f6f6; }
.note { color: #555; font-size: .9rem; }
.beyond { color: #8a5a00; font-size: .85rem; }
details { margin: .6rem 0; }
table.example td, table.example th { width: 50%; font-size: .95rem; }
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
    kind = verdict["kind"]
    esc = html.escape
    note = views.imported_note(run)
    parts = [
        f"<h2>Run {index}: {esc(str(run.get('label') or run_id))}</h2>",
        f'<p class="headline imported">Run {esc(note)}</p>' if note else "",
        _contrast_html(store, run_id),
        f'<p class="headline {kind}">{esc(verdict["headline"])}</p>',
        "<ul>" + "".join(f"<li>{esc(s)}</li>" for s in verdict["sentences"]) + "</ul>",
        f'<p class="note">{esc(noise_floor_sentence(store, run_id))}</p>',
    ]
    control = control_summary(store, run_id)
    if control is not None:
        parts.append(f'<p class="note"><b>Control.</b> {esc(control_sentence(control))}</p>')
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
            (
                "stop a generator early at the target",
                "yes" if config.stop_at_target and config.target is not None else "no",
            ),
            (
                "run every generator to its own stop (failure-tolerant bound)",
                "yes" if config.continue_after_counterexample else "no",
            ),
            (
                "test draws",
                "random from each pool, seed " + str(config.draw_seed)
                if config.draw_seed is not None
                else "score-table order",
            ),
            ("total-variation assumption delta", f"{config.tv_delta:g}"),
            ("minimum drop (assumption beyond the paper)", f"{config.min_drop:g}"),
            (
                "numerical precision of the scorer",
                "none"
                if run_noise_floor_value(run["provenance"]) is None
                else f"{run_noise_floor_value(run['provenance']):.3g}",
            ),
            (
                "epsilon from",
                (run["provenance"].get("epsilon_from") or {}).get("calibration", "stated"),
            ),
            ("control run", run["provenance"].get("control_run") or "none"),
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
            "(it stopped early); those questions are counted as 'not judgeable' at that "
            "epsilon (their own series) rather than guessed.</p>"
        )
    simultaneous = views.confidence_sweep(pairs, config, simultaneous=True)
    parts.append(
        _figure_html(
            plots.confidence_figure(
                {
                    "each question on its own": data["confidence"],
                    f"all {len(pairs)} questions at once (alpha / {len(pairs)})": simultaneous,
                }
            ),
            f"conf-{index}",
        )
    )
    parts.append("<h3>Standard evaluation (original questions only)</h3>")
    std = data["standard"].drop(columns=["run"])
    parts.append(_table_html(std))
    ev = pair_evidence_frame(store, run_id).set_index("pair_id")
    q = data["questions"].copy()
    q = q.assign(
        worst_drop=q["pair_id"].map(ev["worst_drop"]),
        amplified=q["pair_id"].map(ev["amplified"]),
        within_noise=q["pair_id"].map(ev["within_noise"]),
    )
    q = q[
        [
            "pair_index",
            "status",
            "hidden_question",
            "p_pre_hidden",
            "p_post_hidden",
            "gain",
            "max_d",
            "worst_drop",
            "amplified",
            "within_noise",
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
        "0 at the first counterexample (a beta-binomial mixture confidence sequence). It is "
        "shown only where every test generator was tested; elsewhere it would cover only some "
        "generators.</p>" + _table_html(q) + "</details>"
    )
    parts.append(_examples_html(store, run_id, pairs))
    steps = store.steps(run_id)
    cex = steps[steps["is_counterexample"].astype(bool)] if not steps.empty else steps
    if not cex.empty:
        floor = run_noise_floor_value(run["provenance"])
        shown = cex.sort_values("d", ascending=False).head(MAX_COUNTEREXAMPLES_SHOWN)
        drop = shown["p_pre"].astype(float) - shown["p_post"].astype(float)
        shown = shown.assign(
            set=shown["stage"].map({1: "search", 2: "test"}),
            drop=drop,
            amplified=shown["pair_id"].map(ev["amplified"]),
            within_numerical_precision=(drop.abs() <= floor) if floor is not None else False,
        )
        cols = ["pair_id", "set", "generator", "text", "p_pre", "p_post", "drop", "d"]
        parts.append(
            f"<details><summary>Counterexamples ({len(cex)}; the {len(shown)} largest D shown)"
            "</summary>"
            + _table_html(shown[[*cols, "amplified", "within_numerical_precision"]], float_digits=4)
            + "</details>"
        )
    parts.append(_provenance_html(store, run_id))
    return "\n".join(parts), verdict


MAX_EXAMPLES = 3


def _examples_html(store: Store, run_id: str, pairs: pd.DataFrame) -> str:
    """A few degraded questions with why each is degraded: the sentence, the rewording beside
    the original wording (word diff), and the prompt (or why there is none)."""
    deg = pairs[pairs["status"] == "degraded"]
    if deg.empty:
        return ""
    esc = html.escape
    out = [f"<h3>Why these verdicts ({min(MAX_EXAMPLES, len(deg))} of {len(deg)} degraded)</h3>"]
    for pid in deg.sort_values("max_d", ascending=False)["pair_id"].head(MAX_EXAMPLES):
        why = why_this_verdict(store, run_id, str(pid))
        diff = word_diff_html(why["diff"])
        prompt = (
            f"<details><summary>Prompt the adapted model read</summary><pre>"
            f"{esc(why['prompt'][0])}</pre></details>"
            if why["prompt"]
            else f'<p class="note">{esc(why["prompt_note"] or "")}</p>'
        )
        out.append(
            f"<p><b>{esc(str(pid))}</b>: {esc(why['sentence'])}</p>"
            f'<p class="note">Original wording vs rewording: {diff}</p>{prompt}'
        )
    return "\n".join(out)


def _contrast_html(store: Store, run_id: str) -> str:
    """The lead of a run whose standard evaluation hides what the audit found: the contrast in
    plain words and one question, its canonical wording beside the paraphrase that failed."""
    lead = story.contrast_lead(store, run_id)
    if lead is None:
        return ""
    esc = html.escape
    kind = "degraded" if lead["supported"] else "passed"
    out = f'<p class="headline {kind}">{esc(lead["sentence"])}</p>'
    out += f'<p class="note">{esc(lead["check"])}</p>'
    ex = lead["example"]
    if ex:
        out += (
            '<table class="example"><tr><th>Canonical wording (standard evaluation)</th>'
            f"<th>A paraphrase the audit found ({esc(ex['generator'])})</th></tr>"
            f"<tr><td>{esc(ex['hidden_question'])}</td><td>{esc(ex['paraphrase'])}</td></tr>"
            f"<tr><td>p(true answer) {_fmt(ex['p_pre_hidden'], 2)} before, "
            f"<b>{_fmt(ex['p_post_hidden'], 2)}</b> after adaptation: answered correctly</td>"
            f"<td>p(true answer) {_fmt(ex['p_pre_paraphrase'], 2)} before, "
            f"<b>{_fmt(ex['p_post_paraphrase'], 2)}</b> after adaptation</td></tr></table>"
        )
    return out


def _story_html(store: Store, run_ids: Sequence[str]) -> str:
    """Standard evaluation beside the verdicts of every run in the report (two runs or more)."""
    if len(run_ids) < 2:
        return ""
    table, warnings = story.standard_vs_audit(store, run_ids)
    if table.empty:
        return ""
    esc = html.escape
    shown = table.drop(columns=["run_id"]).rename(
        columns={
            "hidden_accuracy": "hidden accuracy (standard evaluation)",
            "hidden_mtp": "hidden MTP",
        }
    )
    lead = story.story_lead(table)
    out = f"<p><b>{esc(lead)}</b></p>" if lead else ""
    check = story.story_check(store, table)
    if check:
        out += f'<p class="note">{esc(check)}</p>'
    if lead:
        out += f'<p class="note">{esc(story.LEAD_RULE)}</p>'
    out += _table_html(shown.drop(columns=["control_run"]), float_digits=2)
    out += "".join(f'<p class="note">Note: {esc(w)}.</p>' for w in warnings)
    return out


def _mass_text(mass: dict[str, Any]) -> str:
    """A checkpoint's label mass in a run, as one cell (DESIGN.md §3)."""
    if not mass.get("n"):
        return "not recorded (no label log-probs stored for this run)"
    return f"{mass['median']:.3f}, {mass['min']:.3f} over {mass['n']} prompts"


def _provenance_html(store: Store, run_id: str) -> str:
    """What produced the run, so two readers can tell whether they saw the same inputs."""
    prov = run_provenance(store, run_id)
    rows = [
        ("tool version", prov.get("tool_version")),
        (
            "before adaptation (pre)",
            f"{prov['pre']['name']} (fingerprint {prov['pre']['fingerprint']})",
        ),
        (
            "after adaptation (post)",
            f"{prov['post']['name']} (fingerprint {prov['post']['fingerprint']})",
        ),
        ("benchmark", prov.get("benchmark_id")),
        ("inputs digest (questions, sets, draws)", prov.get("inputs_digest")),
        ("test-draw seed", prov.get("draw_seed")),
        ("run created / finished", f"{prov.get('created_at')} / {prov.get('finished_at')}"),
    ]
    for side, mass in run_label_mass(store, run_id).items():
        rows.append((f"label mass ({side}): median, min over prompts", _mass_text(mass)))
    for name, info in (prov.get("paraphrase_sets") or {}).items():
        rows.append(
            (
                f"paraphrase set {name}",
                f"digest {info['digest']}, {info['n_paraphrases']} paraphrases",
            )
        )
    rows.append(("config", json.dumps(prov["config"], sort_keys=True)))
    table = pd.DataFrame(rows, columns=["what", "value"]).astype(str)
    return "<details><summary>Provenance</summary>" + _table_html(table) + "</details>"


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
    overall.append(legend_html())
    names = views.run_names(store, run_ids)  # unique: runs labelled alike stay apart
    std = pd.concat(
        [views.standard_evaluation(store.pair_results(r), names[r]) for r in run_ids],
        ignore_index=True,
    )
    overall.append(_figure_html(plots.standard_evaluation_figure(std), "standard"))
    counts = {names[r]: views.run_overview(store.pair_results(r)) for r in run_ids}
    overall.append(
        _figure_html(
            plots.status_counts_figure(
                {
                    k: {
                        "degraded": v["n_degraded"],
                        "certified": v["n_certified"],
                        "passed": v["n_passed"],
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
<style>{_CSS}{FIRST_SCREEN_CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script>
</head><body>
<h1>{esc(title)}</h1>
{first_screen_html(store, run_ids)}
<h2>Details</h2>
<p class="note">Generated {esc(now)} by ER-Audit Studio from the stored scores of {len(run_ids)} run(s).
ER-Audit asks whether adapting (fine-tuning) a verifier model quietly made it worse on related
questions nobody monitored. For each hidden question it searches paraphrases for a
counterexample; if none is found it runs a sequential test that gives a lower bound, at a stated
confidence, on the share of paraphrases on which the adapted model is not worse. Verdicts:
<b>degraded</b> (a counterexample was found), <b>certified</b> (no counterexample and the bound
reached the target p*), <b>passed</b> (no counterexample, but no target or a bound below it: not
a certificate), <b>inconclusive</b> (some test generator has nothing tested).</p>
<h2>Summary</h2>
{_story_html(store, run_ids)}
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
