"""A run read against the control it names: every question's null verdict and the run's
primary test, from the two runs' stored scores.

The rewordings both runs scored are paired by question and text (`audit.stored_rewordings`:
every row of a score table, the scored steps of a model run). A control that does not stand on
the run's base, generators, budgets, k or paraphrases (`audit.null_mismatches`) gives no
reading: its mismatches are returned instead. With one control the reading covers rewording
noise, not seed-to-seed variation: `COVERS_ONE` says so wherever the reading is shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.method import RunRecord, control_fields, stored_setting
from eraudit_core.null._calibration_overlap import (
    BASE_TOLERANCE,
    AuditedContent,
    is_table_run,
    null_mismatches,
    stored_rewordings,
)
from eraudit_core.null._paired import (
    BETTER,
    BEYOND,
    DEFAULT_LEVEL,
    MIN_PAIRED,
    NOT_ASSESSABLE,
    PAIRED_TEST,
    WITHIN,
    check_level,
    more_dispersed,
    paired_dispersion,
    paired_t,
)
from eraudit_core.null._primary import primary_test, secondary_tests
from eraudit_core.null._seeds import seed_verdicts
from eraudit_core.store import Store
from eraudit_core.types import Verdict

COVERS_ONE = (
    "one control run: the reading covers rewording noise, not seed-to-seed variation (a "
    "second run of the control recipe with another seed would measure that)"
)


def covers_seeds(control: str, seeds: Sequence[str]) -> str:
    """What a reading with other runs of the control recipe covers, naming which is which."""
    return (
        f"{1 + len(seeds)} runs of the control recipe ({control}; {', '.join(seeds)}): each "
        f"question's null verdict reads the rewording noise against {control}; its seed "
        "verdict reads it against the disagreement of those runs (seed-to-seed variation)"
    )


# Settings the paper's verdicts depend on beyond the ones a control must match: the secondary
# McNemar tests compare verdicts only when these agree too.
VERDICT_KEYS = ("epsilon", "confidence", "target", "min_drop", "tv_delta")
NULL_SETTINGS_KEYS = control_fields()


def question_stories(store: Store, run_id: str) -> dict[str, str]:
    """pair_id -> story (context) title when the run's benchmark knows it, else {}."""
    bench = store.run(run_id).get("benchmark_id")
    if not bench:
        return {}
    try:
        pairs = store.pairs(str(bench))
    except InputError:  # the benchmark is not in this store (an imported run)
        return {}
    return {p.pair_id: str(p.story_title) for p in pairs if str(p.story_title or "").strip()}


def run_null_level(run: Mapping[str, Any]) -> float:
    """The level a run fixed for its null reading before it ran (provenance `null_level`),
    else DEFAULT_LEVEL."""
    level = (run.get("provenance") or {}).get("null_level")
    return check_level(level) if level is not None else DEFAULT_LEVEL


def stored_mismatches(store: Store, run_id: str, control: str) -> list[dict[str, Any]]:
    """`null_mismatches` of a stored run against a stored control."""
    run = store.run(run_id)
    config = RunRecord.from_stored(run).config
    settings = {k: stored_setting(config, k) for k in NULL_SETTINGS_KEYS}
    if is_table_run(run):
        rows = store.table_rows(run_id)
        audited = AuditedContent(
            table=rows if not rows.empty else stored_rewordings(store, run_id),
            settings={k: v for k, v in settings.items() if not k.endswith("generators")},
        )
    else:
        audited = AuditedContent(
            pre_spec=str(run.get("pre_name") or ""),
            pre_fingerprints=tuple(f for f in [str(run.get("pre_fingerprint") or "")] if f),
            settings=settings,
        )
    return null_mismatches(store, control, audited)


def paired_rewordings(store: Store, run_id: str, control: str) -> pd.DataFrame:
    """The rewordings both runs scored, matched by question and text, with both runs' pre
    and post scores (columns pair_id, role, generator, text, p_pre, p_post_arm, p_pre_control,
    p_post_control). Texts whose pre scores differ beyond BASE_TOLERANCE are left out: they
    are not the same rewording on the same base."""
    a = stored_rewordings(store, run_id)
    c = stored_rewordings(store, control)
    m = a.merge(
        c[["pair_id", "text", "p_pre", "p_post"]],
        on=["pair_id", "text"],
        suffixes=("", "_control"),
    ).rename(columns={"p_post": "p_post_arm", "p_pre_control": "p_pre_control"})
    return m[(m["p_pre"] - m["p_pre_control"]).abs() <= BASE_TOLERANCE].reset_index(drop=True)


def _matrix(frame: pd.DataFrame, column: str, order: list[str]) -> np.ndarray:
    pos = frame.groupby("pair_id", sort=False).cumcount()
    wide = frame.assign(_pos=pos).pivot(index="pair_id", columns="_pos", values=column)
    return wide.reindex(order).to_numpy(dtype=float)


def _detail(tests: Any, disp: tuple[np.ndarray, np.ndarray], i: int, level: float) -> dict:
    n = int(tests.n[i])
    out: dict[str, Any] = {"test": PAIRED_TEST, "n_paired": n}
    if n < MIN_PAIRED:
        out["reason"] = (
            f"{n} paired rewording{'s' * (n != 1)}; the test needs at least {MIN_PAIRED}"
            + ("" if n else " (the two runs share no scored rewording of this question)")
        )
        return out
    ratio, p_disp = float(disp[0][i]), float(disp[1][i])
    out.update(
        mean_difference=float(tests.mean[i]),
        t=float(tests.t[i]) if np.isfinite(tests.t[i]) else None,
        df=n - 1,
        p_beyond=float(tests.p_beyond[i]),
        p_better=float(tests.p_better[i]),
        interval=[float(tests.low[i]), float(tests.high[i])],
        interval_level=round(2 * level - 1, 6),
        sd_ratio=ratio if np.isfinite(ratio) else None,
        p_dispersion=p_disp,
        more_dispersed=bool(more_dispersed(np.array([ratio]), np.array([p_disp]), level)[0]),
    )
    return out


def _seed_reading(
    store: Store,
    control: str,
    seeds: Sequence[str],
    arm_means: dict[str, float],
    level: float,
) -> dict[str, Any]:
    """The arm's per-question means read against the disagreement of the control with each
    other run of its recipe (`_seeds.py`); seeds that are not stored or do not match the
    control are listed as refused, with why."""
    used, refused, pooled = [], [], []
    for seed in seeds:
        if not store.has_run(seed):
            refused.append({"run": seed, "why": "not in this store"})
            continue
        mismatches = stored_mismatches(store, seed, control)
        if mismatches:
            refused.append({"run": seed, "why": ", ".join(d["field"] for d in mismatches)})
            continue
        m = paired_rewordings(store, control, seed)
        means = (m["p_post_arm"] - m["p_post_control"]).groupby(m["pair_id"]).mean()
        pooled.append(means.to_numpy(float))
        used.append(seed)
    got = seed_verdicts(arm_means, np.concatenate(pooled) if pooled else [], level)
    return {"runs": used, "refused": refused, **got}


def null_reading(
    store: Store,
    run_id: str,
    control: str | None = None,
    level: float | None = None,
    seeds: Sequence[str] | None = None,
) -> dict[str, Any] | None:
    """The run read against `control` (default: the control its provenance names): {"control",
    "control_label", "level", "beyond", "better", "within", "not_assessable", "dispersed",
    "min_paired", "covers", "primary", "secondary", "mismatches", "pairs"} where `pairs` maps
    each finished question to {"null_verdict", "null_detail"}. `seeds` (default: the run's
    provenance `control_seeds`): other runs of the control recipe; with one that matches the
    control, `seed_null` reads each question against their disagreement too (`seed_verdict`
    in a pair's detail) and `covers` says so. None when no control is named or the control
    is not in this store."""
    run = store.run(run_id)
    control = control or (run.get("provenance") or {}).get("control_run")
    if not control or not store.has_run(str(control)):
        return None
    control = str(control)
    level = check_level(level) if level is not None else run_null_level(run)
    crun = store.run(control)
    arm_pairs = store.pair_results(run_id)
    ctl_pairs = store.pair_results(control)
    order = [str(p) for p in arm_pairs["pair_id"]] if not arm_pairs.empty else []
    out: dict[str, Any] = {
        "control": control,
        "control_label": str(crun.get("label") or control),
        "level": level,
        "min_paired": MIN_PAIRED,
        "covers": COVERS_ONE,
        "mismatches": stored_mismatches(store, run_id, control),
    }
    counts = dict.fromkeys(("beyond", "better", "within", "not_assessable"), 0)
    if out["mismatches"]:
        out.update(counts, not_assessable=len(order), dispersed=0, primary=None, secondary=None)
        reason = (
            "the control does not match this run ("
            + ", ".join(d["field"] for d in out["mismatches"])
            + ")"
        )
        out["pairs"] = {
            pid: {"null_verdict": NOT_ASSESSABLE, "null_detail": {"reason": reason}}
            for pid in order
        }
        return out
    paired = paired_rewordings(store, run_id, control)
    paired = paired[paired["pair_id"].isin(order)]
    d = _matrix(paired.assign(d=paired["p_post_control"] - paired["p_post_arm"]), "d", order)
    if d.shape[1] == 0:
        d = np.full((len(order), 1), np.nan)
    tests = paired_t(d, level)
    arm_move = _matrix(paired.assign(m=paired["p_post_arm"] - paired["p_pre"]), "m", order)
    ctl_move = _matrix(
        paired.assign(m=paired["p_post_control"] - paired["p_pre_control"]), "m", order
    )
    disp = paired_dispersion(arm_move, ctl_move) if d.size else (np.array([]), np.array([]))
    gains_c = dict(zip(ctl_pairs["pair_id"].astype(str), ctl_pairs["gain"], strict=True))
    pairs: dict[str, Any] = {}
    for i, (pid, gain) in enumerate(zip(order, arm_pairs["gain"], strict=True)):
        detail = _detail(tests, disp, i, level)
        detail.update(gain=_num(gain), gain_control=_num(gains_c.get(pid)))
        pairs[pid] = {"null_verdict": str(tests.verdict[i]), "null_detail": detail}
    verdicts = [p["null_verdict"] for p in pairs.values()]
    for key, word in (
        ("beyond", BEYOND),
        ("better", BETTER),
        ("within", WITHIN),
        ("not_assessable", NOT_ASSESSABLE),
    ):
        counts[key] = sum(v == word for v in verdicts)
    assessable = tests.n >= MIN_PAIRED
    stories = question_stories(store, run_id)
    primary = primary_test(
        tests.mean[assessable],
        stories=[stories[p] for p, ok in zip(order, assessable, strict=True) if ok]
        if stories and all(p in stories for p in order)
        else None,
    )
    out.update(counts)
    out["dispersed"] = sum(bool(p["null_detail"].get("more_dispersed")) for p in pairs.values())
    seeds = list(
        seeds if seeds is not None else (run.get("provenance") or {}).get("control_seeds") or []
    )
    out["seed_null"] = None
    if seeds:
        arm_means = {
            p: float(m) for p, m, ok in zip(order, tests.mean, assessable, strict=True) if ok
        }
        reading = _seed_reading(store, control, seeds, arm_means, level)
        out["seed_null"] = {k: v for k, v in reading.items() if k != "verdicts"}
        for pid, word in reading["verdicts"].items():
            pairs[pid]["null_detail"]["seed_verdict"] = word
        if reading["threshold"] is not None:
            out["covers"] = covers_seeds(control, reading["runs"])
    out["primary"] = primary
    out["secondary"] = _secondary(run, crun, arm_pairs, ctl_pairs)
    out["pairs"] = pairs
    return out


def _num(x: Any) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(f) else f


def _secondary(
    run: Mapping[str, Any], crun: Mapping[str, Any], a: pd.DataFrame, c: pd.DataFrame
) -> dict[str, Any]:
    """The paper's verdicts of arm and control by exact McNemar (Holm-adjusted), when the
    verdict settings agree; else which settings differ."""
    arm, control = RunRecord.from_stored(run).config, RunRecord.from_stored(crun).config
    differ = [k for k in VERDICT_KEYS if getattr(arm, k) != getattr(control, k)]
    if differ:
        return {"tests": None, "note": f"the paper's verdicts use other {', '.join(differ)}"}
    a, c = a.set_index("pair_id"), c.set_index("pair_id")
    common = a.index.intersection(c.index)
    a, c = a.loc[common], c.loc[common]
    tests = secondary_tests(
        (
            (a["status"] == Verdict.DEGRADED).to_numpy(),
            (c["status"] == Verdict.DEGRADED).to_numpy(),
        ),
        (
            (a["p_post_hidden"].astype(float) > 0.5).to_numpy(),
            (c["p_post_hidden"].astype(float) > 0.5).to_numpy(),
        ),
    )
    return {"tests": tests, "note": None}


def null_json(reading: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The run-level object of the JSON outputs (everything but the per-pair entries)."""
    if reading is None:
        return None
    return {k: v for k, v in reading.items() if k != "pairs"}
