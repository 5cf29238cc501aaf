"""Turning stored runs into something to share: one self-contained HTML report.

* `build_report`: one self-contained HTML file (plotly JS inlined once, no network needed to
  open it) with the verdicts, the plots and the per-question tables of one or more runs,
  rendered from the templates in `templates/` (report.html, run_section.html); its tables
  (`_tables.table_html`) use plain column names and read as cards on a phone;
* `run_verdict` (in `_verdict_wording`): the plain-language verdict of one run.

Everything is read from the store; nothing is scored again. The templates escape every
value that is not already HTML (questions, paraphrases, run labels, model names, error
messages) and show control characters as visible symbols (`present/report/_html.py`); figures get
untrusted text only through `plots.safe_label`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig, RunRecord, config_settings, run_noise_floor_value
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
from eraudit_core.present._null_view import headline_from, null_sentences
from eraudit_core.present.report._export import run_provenance
from eraudit_core.present.report._first_screen import first_screen_html, legend_html
from eraudit_core.present.report._html import Markup, render, script_text
from eraudit_core.present.report._tables import table_html
from eraudit_core.present.report._verdict_wording import run_verdict
from eraudit_core.runs import run_label_mass
from eraudit_core.store import Store
from eraudit_core.types import Verdict

MAX_COUNTEREXAMPLES_SHOWN = 200
MAX_EXAMPLES = 3


def _figure_html(fig: go.Figure, div_id: str) -> Markup:
    return Markup(
        fig.to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=div_id,
            config={"displaylogo": False, "responsive": True},
        )
    )


def _settings_table(run: RunRecord) -> Markup:
    """The run's settings: every AuditConfig field (label and value from its metadata), then
    what the run itself recorded (checkpoints, noise floor, where epsilon came from)."""
    prov = run.provenance
    floor = run_noise_floor_value(prov)
    rows = [
        ("run id", run.run_id),
        ("status", run.status),
        ("before adaptation (pre)", run.pre_name),
        ("after adaptation (post)", run.post_name),
        *config_settings(run.config),
        ("numerical precision of the scorer", "none" if floor is None else f"{floor:.3g}"),
        ("epsilon from", (prov.get("epsilon_from") or {}).get("calibration", "stated")),
        ("control run", prov.get("control_run") or "none"),
        (
            "model queries scored / read from cache",
            f"{run.queries_scored} / {run.queries_cached}",
        ),
    ]
    return table_html(pd.DataFrame(rows, columns=["setting", "value"]), key_value=True)


def _run_section(store: Store, run_id: str, index: int) -> tuple[Markup, dict[str, Any]]:
    run = store.run(run_id)
    record = RunRecord.from_stored(run)
    config = record.config
    data = views.run_views(store, run_id)
    pairs = data["pairs"]
    verdict = run_verdict(run, pairs)
    control = control_summary(store, run_id)
    context: dict[str, Any] = {
        "index": index,
        "name": record.name,
        "imported_note": views.imported_note(run),
        "contrast": story.contrast_lead(store, run_id),
        "verdict": verdict,
        "noise_floor_sentence": noise_floor_sentence(store, run_id),
        "control_sentence": control_sentence(control) if control is not None else None,
        "null_headline": (
            headline_from(control["null"], record.name)
            if control is not None and control.get("null")
            else None
        ),
        "null_sentences": (
            null_sentences(control["null"]) if control is not None and control.get("null") else []
        ),
        "settings_table": _settings_table(record),
        "has_pairs": not pairs.empty,
    }
    if not pairs.empty:
        context.update(_results_context(store, run, config, data, index))
    return render("run_section.html", **context), verdict


def _results_context(
    store: Store, run: dict[str, Any], config: AuditConfig, data: dict[str, Any], index: int
) -> dict[str, Any]:
    """The figures and tables of a run with finished questions."""
    run_id = run["run_id"]
    pairs = data["pairs"]
    simultaneous = views.confidence_sweep(pairs, config, simultaneous=True)
    confidence = plots.confidence_figure(
        {
            "each question on its own": data["confidence"],
            f"all {len(pairs)} questions at once (alpha / {len(pairs)})": simultaneous,
        }
    )
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
    out: dict[str, Any] = {
        "epsilon_figure": _figure_html(
            plots.epsilon_figure({str(run.get("label") or run_id): data["epsilon"]}),
            f"eps-{index}",
        ),
        "epsilon_unavailable": bool(data["epsilon"]["n_unavailable"].sum()),
        "confidence_figure": _figure_html(confidence, f"conf-{index}"),
        "standard_table": table_html(data["standard"].drop(columns=["run"])),
        "n_questions": len(q),
        "questions_table": table_html(q),
        "n_degraded": int((pairs["status"] == Verdict.DEGRADED).sum()),
        "examples": _examples(store, run_id, pairs),
        "counterexamples_table": None,
        "provenance_table": _provenance_table(store, run_id),
    }
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
        out["n_counterexamples"] = len(cex)
        out["n_counterexamples_shown"] = len(shown)
        out["counterexamples_table"] = table_html(
            shown[[*cols, "amplified", "within_numerical_precision"]], float_digits=4
        )
    return out


def _examples(store: Store, run_id: str, pairs: pd.DataFrame) -> list[dict[str, Any]]:
    """A few degraded questions with why each is degraded: the sentence, the word diff of the
    rewording against the original wording, and the prompt (or why there is none)."""
    deg = pairs[pairs["status"] == Verdict.DEGRADED]
    out = []
    for pid in deg.sort_values("max_d", ascending=False)["pair_id"].head(MAX_EXAMPLES):
        why = why_this_verdict(store, run_id, str(pid))
        out.append(
            {
                "pair_id": str(pid),
                "sentence": why["sentence"],
                "diff": why["diff"],
                "prompt": why["prompt"][0] if why["prompt"] else None,
                "prompt_note": why["prompt_note"] or "",
            }
        )
    return out


def _story(store: Store, run_ids: Sequence[str]) -> dict[str, Any] | None:
    """Standard evaluation beside the verdicts of every run in the report (two runs or more)."""
    if len(run_ids) < 2:
        return None
    table, warnings = story.standard_vs_audit(store, run_ids)
    if table.empty:
        return None
    counts = ["n_pairs", "n_degraded", "n_certified", "n_passed", "n_inconclusive"]
    # counts read as whole numbers ("2", not "2.00"); the first row, before adaptation, has none
    shown = table.drop(columns=["run_id", "control_run"]).astype(
        {c: "Int64" for c in [*counts, "n_gain_le_k"]}
    )
    shown["took"] = [
        None if t is None or pd.isna(t) else ("yes" if t else "no") for t in shown["took"]
    ]
    return {
        "lead": story.story_lead(table),
        "check": story.story_check(store, table),
        "rule": story.lead_rule_sentence(table) or story.LEAD_RULE,
        "table": table_html(shown, float_digits=2),
        "warnings": warnings,
    }


def _mass_text(mass: dict[str, Any]) -> str:
    """A checkpoint's label mass in a run, as one cell."""
    if not mass.get("n"):
        return "not recorded (no label log-probs stored for this run)"
    return f"{mass['median']:.3f}, {mass['min']:.3f} over {mass['n']} prompts"


def _provenance_table(store: Store, run_id: str) -> Markup:
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
    return table_html(pd.DataFrame(rows, columns=["what", "value"]).astype(str), key_value=True)


def _overall_figures(store: Store, run_ids: Sequence[str]) -> list[Markup]:
    """The figures over every run of the report: the per-question scatter (with its legend in
    words), the standard evaluation and the verdict counts."""
    scatter = plots.scatter_figure(views.scatter_points(store, list(run_ids)))
    names = views.run_names(store, run_ids)  # unique: runs labelled alike stay apart
    std = pd.concat(
        [views.standard_evaluation(store.pair_results(r), names[r]) for r in run_ids],
        ignore_index=True,
    )
    counts = {names[r]: views.run_overview(store.pair_results(r)) for r in run_ids}
    status = plots.status_counts_figure(
        {
            k: {
                "degraded": v["n_degraded"],
                "certified": v["n_certified"],
                "passed": v["n_passed"],
                "inconclusive": v["n_inconclusive"],
            }
            for k, v in counts.items()
        }
    )
    return [
        _figure_html(scatter, "scatter"),
        legend_html(),
        _figure_html(plots.standard_evaluation_figure(std), "standard"),
        _figure_html(status, "status"),
    ]


def build_report(store: Store, run_ids: Sequence[str], *, title: str | None = None) -> str:
    """A self-contained HTML report for one or more runs (opens offline, no network).

    The plotly library is inlined once; each figure is a div plus a call to it.
    """
    if not run_ids:
        raise InputError("report: name at least one run")
    for rid in run_ids:
        store.run(rid)
    sections, headlines = [], []
    for i, rid in enumerate(run_ids, start=1):
        body, verdict = _run_section(store, rid, i)
        sections.append(body)
        headlines.append(verdict["headline"])
    return str(
        render(
            "report.html",
            title=title or "ER-Audit report",
            generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            plotly_js=script_text(get_plotlyjs()),
            first_screen=first_screen_html(store, run_ids),
            story=_story(store, run_ids),
            headlines=headlines,
            overall=_overall_figures(store, run_ids),
            sections=sections,
        )
    )


def write_report(
    store: Store, run_ids: Sequence[str], out: str | Path, *, title: str | None = None
) -> Path:
    """Build the report and write it (UTF-8) to `out`."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(build_report(store, run_ids, title=title), encoding="utf-8")
    return path
