"""Comparing two runs only when they are comparable, with one exact primary test.

Two runs' verdicts differ for two reasons: the checkpoints, or the settings. A comparison
made across any setting that changes a verdict or a bound measures the settings ("bounds
differ by -0.09, Wilcoxon p = 0.005" came entirely from two epsilons; stop-at-target, pool
sizes and paraphrase texts move bounds as much), so every comparison first checks that these
match; when they do not it says `comparable: false`, lists each difference by name, and gives
no test result.

On comparable runs, paired over the shared questions (each question its own control), ONE
test is fixed in advance as primary: the exact two-sided McNemar test on degraded verdicts (a
binomial test on the discordant questions, not mid-p). When the benchmark knows each
question's story (QuALITY-H), questions of one story are not independent, so `primary` also
carries a story-clustered permutation p-value (the arm labels swapped per story) and the
sentence a reader sees uses it. The other tests (canonical correctness by exact McNemar, bounds
by a paired sign-flip permutation test, exact where feasible: ties among bounds make a normal
approximation wrong) are `secondary`, with Holm-adjusted p-values. docs/null-reading.md
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.method import RunRecord, comparison_fields, stored_setting
from eraudit_core.null import (
    base_difference,
    exact_mcnemar,
    is_table_run,
    null_json,
    null_reading,
    question_stories,
    stored_rewordings,
)
from eraudit_core.present._compare_words import differences_sentence
from eraudit_core.store import Store
from eraudit_core.types import Verdict

LEVEL = 0.05
EXACT_SIGN_FLIPS = 16  # up to 2^16 sign patterns enumerated; beyond, Monte Carlo
MONTE_CARLO = 20_000
PRIMARY_TEST = "exact two-sided McNemar on degraded verdicts (binomial on the discordant)"
CLUSTERED_TEST = "story-clustered permutation (arm labels swapped per story)"


def _sets(run: Mapping[str, Any]) -> dict[str, dict[str, Any]] | None:
    sets = (run.get("provenance") or {}).get("paraphrase_sets")
    return sets if isinstance(sets, dict) else None


def run_differences(store: Store, run_a: str, run_b: str) -> list[dict[str, Any]]:
    """Each setting or input on which two runs differ: {"field", "a", "b"}. Empty when the
    runs are comparable. Fields: the settings compared runs must agree on
    (`comparison_fields`: the verdict settings and the wording; a config stored before a
    setting existed has its declared default), `base` (`base_and_generators`), then
    `generators` (which
    paraphrase sets a run used), `pool_sizes` (paraphrases per set), `paraphrase_sets` (the
    digest of each set's paraphrase TEXTS, for sets of equal size: a score table's
    probabilities are results, not settings) and `questions` (pair ids)."""
    ra, rb = store.run(run_a), store.run(run_b)
    ca, cb = RunRecord.from_stored(ra).config, RunRecord.from_stored(rb).config
    out = [
        {"field": key, "a": a, "b": b}
        for key in comparison_fields()
        if (a := stored_setting(ca, key)) != (b := stored_setting(cb, key))
    ]
    out.extend(base_and_generators(store, run_a, run_b))
    sa, sb = _sets(ra), _sets(rb)
    if sa is not None and sb is not None:
        if set(sa) != set(sb):
            out.append({"field": "generators", "a": sorted(sa), "b": sorted(sb)})
        common = sorted(set(sa) & set(sb))
        size_a = {k: sa[k].get("n_paraphrases") for k in common}
        size_b = {k: sb[k].get("n_paraphrases") for k in common}
        if size_a != size_b:
            differ = [k for k in common if size_a[k] != size_b[k]]
            out.append(
                {
                    "field": "pool_sizes",
                    "a": {k: size_a[k] for k in differ},
                    "b": {k: size_b[k] for k in differ},
                }
            )
        texts = [
            k
            for k in common
            if size_a[k] == size_b[k] and sa[k].get("digest") != sb[k].get("digest")
        ]
        if texts:
            out.append(
                {
                    "field": "paraphrase_sets",
                    "a": {k: sa[k].get("digest") for k in texts},
                    "b": {k: sb[k].get("digest") for k in texts},
                }
            )
    qa = set(store.pair_results(run_a)["pair_id"]) if ra["n_pairs"] else set()
    qb = set(store.pair_results(run_b)["pair_id"]) if rb["n_pairs"] else set()
    if qa != qb:
        out.append(
            {
                "field": "questions",
                "a": len(qa),
                "b": len(qb),
                "only_a": sorted(qa - qb)[:20],
                "only_b": sorted(qb - qa)[:20],
            }
        )
    return out


def base_and_generators(store: Store, run_a: str, run_b: str) -> list[dict[str, Any]]:
    """`base` when two runs do not stand on one pre-adaptation model (model runs: the pre
    checkpoint's fingerprint; score tables: the pre scores of the texts both hold, within
    BASE_TOLERANCE; a table against a model run always differs), and `generators` when the
    paraphrase generators two score tables hold differ (model runs name theirs in their
    provenance, compared below as `generators`)."""
    ra, rb = store.run(run_a), store.run(run_b)
    out: list[dict[str, Any]] = []
    table_a, table_b = is_table_run(ra), is_table_run(rb)
    if table_a != table_b:
        kind = {True: "score table", False: "model run"}
        out.append({"field": "base", "a": kind[table_a], "b": kind[table_b]})
        return out
    if not table_a:
        fa, fb = str(ra.get("pre_fingerprint") or ""), str(rb.get("pre_fingerprint") or "")
        if fa != fb:
            out.append(
                {
                    "field": "base",
                    "a": f"{ra.get('pre_name')} {fa}",
                    "b": f"{rb.get('pre_name')} {fb}",
                }
            )
        return out
    wa, wb = stored_rewordings(store, run_a), stored_rewordings(store, run_b)
    base = base_difference(wa, wb)
    if base is not None:
        out.append({"field": "base", "a": "pre scores", "b": "pre scores", **base})
    ga = sorted({f"{r}:{g}" for r, g in zip(wa["role"], wa["generator"], strict=True)})
    gb = sorted({f"{r}:{g}" for r, g in zip(wb["role"], wb["generator"], strict=True)})
    if ga != gb:
        out.append({"field": "generators", "a": ga, "b": gb})
    return out


def smallest_p(n_discordant: int) -> float:
    """The smallest two-sided p the exact McNemar test can give with n discordant questions:
    2 / 2^n (all one way); above 0.05 when n <= 5, so no outcome could reach 0.05."""
    return 1.0 if n_discordant == 0 else min(1.0, 2.0 * 0.5**n_discordant)


def sign_flip_p(values: Sequence[float] | np.ndarray, *, seed: int = 0) -> tuple[float, float, str]:
    """Two-sided paired permutation p-value of |sum(values)| under random signs: exact over
    all 2^m sign patterns of the m non-zero values when m <= EXACT_SIGN_FLIPS, else Monte
    Carlo ((1 + hits) / (1 + draws), seeded). Returns (p, smallest attainable p, method).
    Ties and zeros need no correction, unlike a normal approximation."""
    v = np.asarray([x for x in values if x != 0], dtype=float)
    m = v.size
    if m == 0:
        return 1.0, 1.0, "exact"
    observed = abs(v.sum())
    tol = 1e-9 * max(1.0, float(np.abs(v).sum()))
    if m <= EXACT_SIGN_FLIPS:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=m)))
        stats = np.abs(signs @ v)
        return float(np.mean(stats >= observed - tol)), 2.0 / 2**m, "exact"
    rng = np.random.default_rng(seed)
    signs = rng.choice((1.0, -1.0), size=(MONTE_CARLO, m))
    hits = int(np.sum(np.abs(signs @ v) >= observed - tol))
    return (1 + hits) / (1 + MONTE_CARLO), 1.0 / (1 + MONTE_CARLO), "monte carlo"


def clustered_test(x: pd.Series, y: pd.Series, stories: Mapping[str, str]) -> dict[str, Any] | None:
    """Story-clustered permutation test of degraded verdicts: per story, the difference
    (degraded in A) - (degraded in B) summed over its questions; under the null the two arms
    are exchangeable within a story, so each story's sum changes sign at random. None when a
    question has no story."""
    if not len(x) or any(pid not in stories for pid in x.index):
        return None
    diff = x.astype(int) - y.astype(int)
    per_story = diff.groupby(diff.index.map(stories)).sum()
    p, smallest, method = sign_flip_p(per_story.to_numpy(float))
    return {
        "test": CLUSTERED_TEST,
        "p": p,
        "n_stories": int(per_story.size),
        "n_questions": int(len(x)),
        "n_stories_discordant": int((per_story != 0).sum()),
        "smallest_p": smallest,
        "method": method,
    }


def _discordance(x: pd.Series, y: pd.Series) -> dict[str, Any]:
    x, y = x.astype(bool), y.astype(bool)
    only_a, only_b = int((x & ~y).sum()), int((~x & y).sum())
    return {
        "both": int((x & y).sum()),
        "only_a": only_a,
        "only_b": only_b,
        "p_value": exact_mcnemar(only_a, only_b),
    }


def paired_tests(
    a: pd.DataFrame, b: pd.DataFrame, stories: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The primary test (exact McNemar on degraded verdicts, with the story-clustered
    permutation p when `stories` covers every question) and the secondary ones (exact
    McNemar on canonical correctness, sign-flip permutation on bounds; Holm-adjusted), over
    the pairs both frames (`run_pairs` rows indexed by pair_id) hold."""
    from statsmodels.stats.multitest import multipletests

    common = a.index.intersection(b.index)
    a, b = a.loc[common], b.loc[common]
    deg_a, deg_b = a["status"] == Verdict.DEGRADED, b["status"] == Verdict.DEGRADED
    degraded = _discordance(deg_a, deg_b)
    n_disc = degraded["only_a"] + degraded["only_b"]
    primary: dict[str, Any] = {
        "test": PRIMARY_TEST,
        "p": degraded["p_value"],
        "only_a": degraded["only_a"],
        "only_b": degraded["only_b"],
        "n_discordant": n_disc,
        "smallest_p": smallest_p(n_disc),
    }
    clustered = clustered_test(deg_a, deg_b, stories or {})
    if clustered is not None:
        primary["clustered"] = clustered
    canonical = _discordance(
        a["p_post_hidden"].astype(float) > 0.5, b["p_post_hidden"].astype(float) > 0.5
    )
    bound_a = a["bound"].astype(float).fillna(0.0)
    bound_b = b["bound"].astype(float).fillna(0.0)
    diff = bound_a - bound_b
    bound_p, _, method = sign_flip_p(diff.to_numpy(float))
    raw = [canonical["p_value"], bound_p]
    holm = [float(p) for p in multipletests(raw, method="holm")[1]]
    secondary = [
        {
            "name": "canonical_correct",
            "test": "exact two-sided McNemar on canonical correctness (p(true) > 0.5)",
            "p": raw[0],
            "p_holm": holm[0],
            "only_a": canonical["only_a"],
            "only_b": canonical["only_b"],
        },
        {
            "name": "bound",
            "test": f"paired sign-flip permutation on bounds ({method})",
            "p": raw[1],
            "p_holm": holm[1],
            "mean_difference": float(diff.mean()) if len(diff) else 0.0,
        },
    ]
    return {
        "n_pairs": len(common),
        "primary": primary,
        "secondary": secondary,
        "degraded": degraded,
        "canonical_correct": {**canonical, "p_holm": holm[0]},
        "bound": {
            "mean_difference": secondary[1]["mean_difference"],
            "p_value": bound_p,
            "p_holm": holm[1],
            "test": secondary[1]["test"],
        },
    }


def compare_runs(store: Store, run_a: str, run_b: str) -> dict[str, Any]:
    """`eraudit compare`: {"run_a", "run_b", "comparable", "differences", "null"} (`null`: A
    read against B as its control, docs/null-reading.md) and, when comparable, the
    per-question disagreements, `primary` and `secondary`."""
    differences = run_differences(store, run_a, run_b)
    out: dict[str, Any] = {
        "run_a": run_a,
        "run_b": run_b,
        "comparable": not differences,
        "differences": differences,
        "null": null_json(null_reading(store, run_a, run_b)),
    }
    if differences:
        return out
    a = store.pair_results(run_a).set_index("pair_id")
    b = store.pair_results(run_b).set_index("pair_id")
    common = a.index.intersection(b.index)
    if common.empty:
        out.update(comparable=False, differences=[{"field": "questions", "a": 0, "b": 0}])
        return out
    differ = common[(a.loc[common, "status"] != b.loc[common, "status"]).to_numpy()]
    out["disagreements"] = [
        {"pair_id": str(pid), "a": str(a.loc[pid, "status"]), "b": str(b.loc[pid, "status"])}
        for pid in differ
    ]
    out.update(paired_tests(a, b, question_stories(store, run_a)))
    return out


def format_p(p: float) -> str:
    """A p-value for readers: three decimals, or "p < 0.001"."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def chance_clause(primary: Mapping[str, Any]) -> str:
    """What the primary test says, in words: "4 disagreements, all one way: too few for a
    test at 0.05", or "with 10 against 6 disagreements this could be chance (exact test p =
    0.45)". Uses the story-clustered p when there is one."""
    a, b = int(primary["only_a"]), int(primary["only_b"])
    n = a + b
    clustered = primary.get("clustered")
    if clustered and clustered.get("n_stories", 0) >= clustered.get("n_questions", 0):
        clustered = None  # one question a story: the clustered test is the exact test
    smallest = clustered["smallest_p"] if clustered else primary["smallest_p"]
    if n == 0:
        return "the two agree on every question's degraded verdict"
    if smallest > LEVEL:
        unit = "disagreement" if n == 1 else "disagreements"
        way = "all one way" if a == 0 or b == 0 else f"{a} against {b}"
        why = (
            f" (spread over {clustered['n_stories_discordant']} stories)"
            if clustered and primary["smallest_p"] <= LEVEL
            else ""
        )
        return f"{n} {unit}, {way}{why}: too few for a test at {LEVEL:g}"
    if clustered:
        p = float(clustered["p"])
        test = (
            f"story-clustered permutation test {format_p(p)}; exact test {format_p(primary['p'])}"
        )
    else:
        p = float(primary["p"])
        test = f"exact test {format_p(p)}"
    verdict = "this is unlikely to be chance" if p < LEVEL else "this could be chance"
    return f"with {a} against {b} disagreements {verdict} ({test})"


def primary_sentence(got: Mapping[str, Any], name_a: str, name_b: str) -> str:
    """The lead sentence of a comparison, from its primary test: 'The concealed arm degraded
    4 more hidden questions than its control the honest arm; with 10 against 6 disagreements
    this could be chance (exact test p = 0.454).'"""
    if not got.get("comparable"):
        return differences_sentence(got.get("differences") or [])
    pr = got["primary"]
    more = int(pr["only_a"]) - int(pr["only_b"])
    if more > 0:
        head = f"{name_a} degraded {more} more hidden question{'s' * (more != 1)} than {name_b}"
    elif more < 0:
        head = f"{name_a} degraded {-more} fewer hidden question{'s' * (more != -1)} than {name_b}"
    else:
        head = f"{name_a} degraded as many hidden questions as {name_b}"
    return f"{head}; {chance_clause(pr)}."


def compare_sentences(got: Mapping[str, Any], name_a: str = "A", name_b: str = "B") -> list[str]:
    """A comparable comparison in a few lines: the primary result first, then the secondary
    tests labelled as such with their Holm-adjusted p-values."""
    lines = [
        f"{got['run_a']} (A) vs {got['run_b']} (B): comparable, {got['n_pairs']} shared "
        f"questions; verdicts differ on {len(got['disagreements'])}",
        "Primary (fixed in advance): " + primary_sentence(got, name_a, name_b),
    ]
    pr = got["primary"]
    lines.append(
        f"  degraded only in A: {pr['only_a']}, only in B: {pr['only_b']} "
        f"({PRIMARY_TEST}, {format_p(pr['p'])})"
    )
    if pr.get("clustered"):
        c = pr["clustered"]
        lines.append(
            f"  {c['test']} over {c['n_stories']} stories: {format_p(c['p'])} ({c['method']})"
        )
    for s in got["secondary"]:
        detail = (
            f"right only in A: {s['only_a']}, only in B: {s['only_b']}"
            if s["name"] == "canonical_correct"
            else f"mean difference A - B {s['mean_difference']:+.3f}"
        )
        lines.append(
            f"  secondary, {s['name']}: {detail} ({s['test']}, {format_p(s['p'])}, "
            f"Holm-adjusted {format_p(s['p_holm'])})"
        )
    return lines


DIFF_SORTS = ("disagreements first", "benchmark order", "largest D change", "largest bound change")


def verdict_diff(store: Store, run_a: str, run_b: str) -> pd.DataFrame:
    """Two runs per question, side by side (outer join on the question): columns pair_id,
    pair_index, question, verdict_a, verdict_b, d_a, d_b, bound_a, bound_b, agree. A question
    only one run finished has no verdict (None) on the other side and does not agree."""
    cols = ["pair_id", "pair_index", "hidden_question", "status", "max_d", "bound"]
    a, b = store.pair_results(run_a), store.pair_results(run_b)
    a = a[cols] if not a.empty else pd.DataFrame(columns=cols)
    b = b[cols] if not b.empty else pd.DataFrame(columns=cols)
    m = a.merge(b, on="pair_id", how="outer", suffixes=("_a", "_b"))
    out = pd.DataFrame(
        {
            "pair_id": m["pair_id"],
            "pair_index": m["pair_index_a"].fillna(m["pair_index_b"]),
            "question": m["hidden_question_a"].fillna(m["hidden_question_b"]),
            "verdict_a": m["status_a"].astype(object).where(m["status_a"].notna(), None),
            "verdict_b": m["status_b"].astype(object).where(m["status_b"].notna(), None),
            "d_a": m["max_d_a"].astype(float),
            "d_b": m["max_d_b"].astype(float),
            "bound_a": m["bound_a"].astype(float),
            "bound_b": m["bound_b"].astype(float),
        }
    )
    out["agree"] = out["verdict_a"].notna() & (out["verdict_a"] == out["verdict_b"])
    return out.sort_values("pair_index", kind="stable").reset_index(drop=True)


def sort_diff(diff: pd.DataFrame, how: str, *, disagreements_only: bool = False) -> pd.DataFrame:
    """`verdict_diff` rows filtered to disagreements if asked, in the order `how` (DIFF_SORTS)."""
    if how not in DIFF_SORTS:
        raise ValueError(f"sort: {how!r} is not one of {', '.join(DIFF_SORTS)}")
    d = diff[~diff["agree"]] if disagreements_only else diff
    key = {
        "disagreements first": d["agree"].astype(int),
        "benchmark order": d["pair_index"],
        "largest D change": -(d["d_a"] - d["d_b"]).abs().fillna(np.inf),
        "largest bound change": -(d["bound_a"] - d["bound_b"]).abs().fillna(np.inf),
    }[how]
    order = d.assign(_k=key).sort_values(["_k", "pair_index"], kind="stable").index
    return d.loc[order].reset_index(drop=True)
