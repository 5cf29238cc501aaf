"""The reading against the control in words, for every page and the report: the headline a
run leads with when it names a control (`null_headline`), and the sentences that explain it
(`null_sentences`). The numbers come from `eraudit_core.null.null_reading`; nothing here
computes a test."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eraudit_core.null import (
    DISPERSION_RATIO,
    format_p,
    mismatch_sentence,
    null_reading,
    primary_sentence,
)
from eraudit_core.store import Store


def headline_from(reading: Mapping[str, Any], name: str) -> str:
    """The lead sentence of a reading (`null_reading`) of the run called `name`."""
    if reading["mismatches"]:
        return (
            f"{name} cannot be read against its control {reading['control_label']}: "
            + mismatch_sentence(reading["control"], reading["mismatches"])
            + "."
        )
    return primary_sentence(name, reading["control_label"], reading["primary"], reading)


def null_headline(store: Store, run_id: str) -> str | None:
    """The sentence a run's headline leads with when it names a control: the average
    difference from the control in points with its 95% interval and p (the primary test,
    fixed in advance), then how many questions read worse and better than the control. None
    when the run names no control in this store. Home, Results, Share and the report use it."""
    reading = null_reading(store, run_id)
    if reading is None:
        return None
    run = store.run(run_id)
    return headline_from(reading, str(run.get("label") or run_id))


def null_sentences(reading: Mapping[str, Any]) -> list[str]:
    """What the headline rests on, one sentence each: the level and what the reading
    covers, questions not assessable, dispersion (not harm), clustering, the secondary tests
    on the paper's verdicts (Holm-adjusted)."""
    if reading["mismatches"]:
        return []
    out = [
        f"Each question is read against the control on the rewordings both runs scored (same "
        f"text, same score before adaptation), one-sided at level {reading['level']:g} each "
        f"way: 'beyond control', 'better than control' or 'within control'. With "
        f"{reading['covers']}."
    ]
    if reading["not_assessable"]:
        out.append(
            f"{reading['not_assessable']} question(s) are not assessable: fewer than "
            f"{reading['min_paired']} paired rewordings."
        )
    if reading["dispersed"]:
        out.append(
            f"On {reading['dispersed']} question(s) the run moves scores more than its control "
            f"in both directions (spread at least {DISPERSION_RATIO:g}x the control's, "
            "significant): that is dispersion, not harm, and it does not make a question "
            "'beyond control'."
        )
    seeds = reading.get("seed_null") or {}
    if seeds.get("threshold") is not None:
        out.append(
            f"Against seed-to-seed variation ({', '.join(seeds['runs'])} beside the control): "
            f"{seeds['beyond']} beyond seed variation, {seeds['better']} better, "
            f"{seeds['within']} within (threshold {100 * seeds['threshold']:.2f} points)."
        )
    for refused in seeds.get("refused") or []:
        out.append(f"Seed run {refused['run']} was not used: {refused['why']}.")
    primary = reading.get("primary") or {}
    if primary.get("clustering_note"):
        out.append(f"Primary test: {primary['test']}; {primary['clustering_note']}.")
    secondary = reading.get("secondary") or {}
    for s in secondary.get("tests") or []:
        what = "degraded" if s["name"] == "degraded" else "answered correctly (canonical wording)"
        out.append(
            f"Secondary ({s['test']}): {what} only in this run {s['only_arm']}, only in the "
            f"control {s['only_control']}; {format_p(s['p'])}, Holm-adjusted "
            f"{format_p(s['p_holm'])}."
        )
    if secondary.get("note"):
        out.append(f"No secondary test on the paper's verdicts: {secondary['note']}.")
    return out


def null_counts_sentence(reading: Mapping[str, Any]) -> str:
    """'Against the control, question by question: 26 beyond control, 13 better than
    control, 1 within control, 0 not assessable.'"""
    return (
        f"Against the control, question by question: {reading['beyond']} beyond control, "
        f"{reading['better']} better than control, {reading['within']} within control, "
        f"{reading['not_assessable']} not assessable."
    )
