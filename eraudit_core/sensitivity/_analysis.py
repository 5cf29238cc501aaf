"""Auditor-configuration sensitivity: the analysis of the Petri paper, appendices A and B (docs/design.md §8).

Does an audit's verdict depend on how the auditor was configured? Per behaviour, each rollout's
judge scores are averaged over the judge panel and treated as an ordered outcome Y_i. A
cumulative-logit (proportional-odds) model

    P(Y_i <= k) = sigma(theta_k - eta_{r,p}),   eta_{r,p} = beta_r + gamma_p + delta_{r,p}

(reference condition and reference pair pinned to 0; positive beta moves mass to higher scores)
is fitted by maximum likelihood with statsmodels' OrderedModel, three times: pair only,
additive (resource + pair) and full (with the interaction). From these:

- Type II likelihood-ratio tests, 2 (L1 - L0) ~ chi2(df): resource main effect (additive vs
  pair only) and resource x pair interaction (full vs additive);
- Wald contrasts of each condition vs the reference from the additive fit, as odds ratios
  exp(beta) with 95% CIs exp(beta +- 1.96 se), Holm-corrected over the contrasts of a behaviour;
- per-pair contrasts from stratified fits (one model per pair, resource only, no correction);
- cell means of the panel score with 95% percentile-bootstrap CIs (seeded);
- judge agreement: ordinal Krippendorff alpha over (rollout x judge) and pairwise Spearman.

Pitfalls handled: score levels that never occur (levels are the observed values of the subset
being fitted), constant outcomes (no fit, a warning), separation (flagged from non-overlapping
groups or huge estimates), empty cells (interaction columns dropped, warned), a pair seen in a
single condition (left out of the models, as the paper left out refusal-only pairs), a single
judge (no agreement statistic). Every rollout left out is listed with its reason.

Input is the tidy table with columns `TIDY_COLUMNS` (one row per rollout x judge x dimension);
an optional `pair` column overrides the pair label built from auditor and target.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from eraudit_core.errors import InputError
from eraudit_core.sensitivity._ordinal import (
    dummies,
    fit_cumulative_logit,
    full_rank,
    lr_test,
    non_overlap,
    wald_contrast,
)
from eraudit_core.sensitivity._results import (
    Agreement,
    BehaviourResult,
    CellMean,
    Contrast,
    LRTest,
    SensitivityResult,
    SpearmanPair,
)
from eraudit_core.sensitivity._tidy import panel_scores, validate_tidy

# Fewer rollouts than this in some modelled condition: the fits are flagged as unreliable.
FEW_ROLLOUTS = 5

# --------------------------------------------------------------------------------------------
# Cell means and agreement
# --------------------------------------------------------------------------------------------


def bootstrap_cell_means(
    panel: pd.DataFrame,
    pairs: Sequence[str],
    conditions: Sequence[str],
    n_boot: int = 2000,
    seed: int = 0,
) -> list[CellMean]:
    """Mean panel score per (pair, condition) with a 95% percentile-bootstrap CI.

    Each cell is resampled with replacement `n_boot` times; the CI is the 2.5th and 97.5th
    percentiles of the resampled means. Cell k (in pair-major order) uses the generator
    seeded with (seed, k), so a cell's CI does not depend on which other cells exist.
    """
    out: list[CellMean] = []
    for k, (pair, cond) in enumerate(itertools.product(pairs, conditions)):
        y = panel.loc[(panel["pair"] == pair) & (panel["condition"] == cond), "score"]
        values = y.to_numpy(dtype=float)
        if len(values) == 0:
            continue
        rng = np.random.default_rng([seed, k])
        idx = rng.integers(0, len(values), size=(n_boot, len(values)))
        means = values[idx].mean(axis=1)
        lo, hi = np.percentile(means, [2.5, 97.5])
        out.append(CellMean(pair, cond, len(values), float(values.mean()), float(lo), float(hi)))
    return out


def judge_agreement(scores: pd.DataFrame) -> tuple[Agreement, list[str]]:
    """Ordinal Krippendorff alpha and pairwise Spearman from rows (rollout, judge, score).

    Alpha uses every rollout with two or more judge scores (missing scores allowed), with the
    observed score values as the ordinal value domain. Spearman uses, per judge pair, the
    rollouts both judges scored.
    """
    notes: list[str] = []
    scores = scores.dropna(subset=["score"])
    wide = scores.pivot(index="rollout", columns="judge", values="score")
    judges = tuple(str(j) for j in wide.columns)
    if len(judges) < 2:
        notes.append("single judge: agreement statistics need two or more judges")
        return Agreement(judges, len(wide), None, ()), notes
    alpha: float | None = None
    pairable = wide[wide.notna().sum(axis=1) >= 2]
    domain = np.unique(pairable.to_numpy()[np.isfinite(pairable.to_numpy())])
    if len(pairable) < 2:
        notes.append(
            f"{len(pairable)} rollout(s) scored by two or more judges: Krippendorff alpha undefined"
        )
    elif len(domain) < 2:
        notes.append("all judges gave the same score everywhere: Krippendorff alpha undefined")
    else:
        alpha = float(
            krippendorff.alpha(
                reliability_data=pairable.to_numpy().T,
                value_domain=domain,
                level_of_measurement="ordinal",
            )
        )
        if len(pairable) < FEW_ROLLOUTS * 2:
            notes.append(
                f"Krippendorff alpha rests on only {len(pairable)} rollouts scored by two or "
                "more judges: not informative"
            )
    pairs: list[SpearmanPair] = []
    for a, b in itertools.combinations(judges, 2):
        both = wide[[a, b]].dropna()
        n = len(both)
        if n < 3 or both[a].nunique() < 2 or both[b].nunique() < 2:
            notes.append(f"Spearman {a} ~ {b} undefined (n={n} or a constant judge)")
            pairs.append(SpearmanPair(a, b, None, None, n))
            continue
        res = stats.spearmanr(both[a], both[b])
        pairs.append(SpearmanPair(a, b, float(res.statistic), float(res.pvalue), n))
    return Agreement(judges, len(wide), alpha, tuple(pairs)), notes


# --------------------------------------------------------------------------------------------
# The analysis
# --------------------------------------------------------------------------------------------


def analyse_behaviour(
    panel: pd.DataFrame,
    judge_rows: pd.DataFrame,
    behaviour: str,
    dimension: str,
    reference_condition: str,
    reference_pair: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> BehaviourResult:
    """The appendix-A models and appendix-B agreement for one behaviour's panel scores."""
    notes: list[str] = []
    conditions = [reference_condition] + sorted(
        c for c in panel["condition"].unique() if c != reference_condition
    )
    if reference_condition not in set(panel["condition"]):
        conditions = sorted(panel["condition"].unique())
    pairs_all = sorted(panel["pair"].unique())
    cells = bootstrap_cell_means(panel, pairs_all, conditions, n_boot=n_boot, seed=seed)
    seen = {(c.pair, c.condition) for c in cells}
    for p, c in itertools.product(pairs_all, conditions):
        if (p, c) not in seen:
            notes.append(f"empty cell: pair {p}, condition {c} has no rollouts")
    for c in cells:
        if c.n == 1:
            notes.append(f"cell {c.pair} / {c.condition} has one rollout: its CI is a point")
    agreement, agree_notes = judge_agreement(judge_rows)
    notes.extend(agree_notes)
    levels = tuple(float(v) for v in np.unique(panel["score"]))

    def result(
        n_modelled: int,
        ref_pair: str | None,
        pairs: Sequence[str],
        lr_res: LRTest | None = None,
        lr_int: LRTest | None = None,
        contrasts: Sequence[Contrast] = (),
        per_pair: Sequence[Contrast] = (),
    ) -> BehaviourResult:
        return BehaviourResult(
            behaviour=behaviour,
            dimension=dimension,
            n_rollouts=len(panel),
            n_modelled=n_modelled,
            reference_condition=reference_condition,
            reference_pair=ref_pair,
            conditions=tuple(conditions),
            pairs=tuple(pairs),
            score_levels=levels,
            lr_resource=lr_res,
            lr_interaction=lr_int,
            contrasts=tuple(contrasts),
            per_pair=tuple(per_pair),
            cell_means=tuple(cells),
            agreement=agreement,
            warnings=tuple(dict.fromkeys(notes)),
        )

    if reference_condition not in set(panel["condition"]):
        notes.append(
            f"reference condition {reference_condition!r} has no rollouts: no models fitted"
        )
        return result(0, None, pairs_all)
    # A pair seen in one condition only says nothing about the resource effect.
    n_cond = panel.groupby("pair")["condition"].nunique()
    single = sorted(n_cond[n_cond < 2].index)
    for p in single:
        notes.append(f"pair {p} has rollouts in one condition only: left out of the models")
    data = panel[~panel["pair"].isin(single)].reset_index(drop=True)
    pairs = sorted(data["pair"].unique())
    if reference_pair is not None and reference_pair in pairs:
        pairs = [reference_pair] + [p for p in pairs if p != reference_pair]
    elif reference_pair is not None:
        notes.append(f"reference pair {reference_pair!r} not modelled; using {pairs[0]!r}")
    if len(data) == 0 or data["score"].nunique() < 2:
        notes.append("constant outcome (one score level): no models fitted")
        return result(len(data), pairs[0] if pairs else None, pairs)
    conds_model = [c for c in conditions if c in set(data["condition"])]
    y = data["score"].to_numpy(dtype=float)
    x_res = dummies(data["condition"], conds_model, "condition")
    x_pair = dummies(data["pair"], pairs, "pair")
    x_int = pd.DataFrame(
        {
            f"{rc}:{pc}": x_res[rc] * x_pair[pc]
            for rc, pc in itertools.product(x_res.columns, x_pair.columns)
        },
        index=data.index,
    )
    x_full, dropped_int = full_rank(pd.concat([x_res, x_pair, x_int], axis=1))
    x_add = x_full[[c for c in x_full.columns if c in x_res.columns or c in x_pair.columns]]
    x_pair_only = x_add[[c for c in x_add.columns if c in x_pair.columns]]
    if dropped_int:
        notes.append(f"interaction terms not estimable (empty cells): {', '.join(dropped_int)}")
    df_int = x_full.shape[1] - x_add.shape[1]
    fits = {
        "pair-only": fit_cumulative_logit(y, x_pair_only),
        "additive": fit_cumulative_logit(y, x_add),
    }
    if df_int > 0:  # with no estimable interaction term the full model is the additive one
        fits["full"] = fit_cumulative_logit(y, x_full)
    for name, f in fits.items():
        if not f.converged:
            notes.append(f"{name} fit did not converge: its estimates are unreliable")
        notes.extend(f"{name} fit: {n}" for n in f.notes)
    lr_res = lr_test(fits["additive"], fits["pair-only"], x_add.shape[1] - x_pair_only.shape[1])
    lr_int = lr_test(fits["full"], fits["additive"], df_int) if df_int > 0 else None
    if df_int == 0:
        notes.append(
            "no condition x pair interaction test: "
            + ("one pair modelled" if len(pairs) < 2 else "no interaction term is estimable")
        )
    per_condition = data["condition"].value_counts()
    if per_condition.min() < FEW_ROLLOUTS:
        notes.append(
            f"only {len(data)} rollouts modelled (fewest in one condition: "
            f"{int(per_condition.min())}): too few for the tests and odds ratios to be reliable"
        )
    ref_y = data.loc[data["condition"] == reference_condition, "score"].to_numpy(dtype=float)
    contrasts: list[Contrast] = []
    for cond in conds_model[1:]:
        col = f"condition[{cond}]"
        if col not in x_add.columns:
            continue
        cy = data.loc[data["condition"] == cond, "score"].to_numpy(dtype=float)
        contrasts.append(wald_contrast(fits["additive"], col, cond, None, non_overlap(cy, ref_y)))
    finite = [i for i, c in enumerate(contrasts) if np.isfinite(c.p)]
    if finite:
        adj = multipletests([contrasts[i].p for i in finite], method="holm")[1]
        for i, p_adj in zip(finite, adj, strict=True):
            c = contrasts[i]
            contrasts[i] = Contrast(**{**c.__dict__, "p_holm": float(p_adj)})
    for c in contrasts:
        if c.separation:
            notes.append(f"possible separation: pooled contrast {c.condition} (estimate unstable)")
    per_pair = _per_pair_contrasts(data, pairs, conds_model, reference_condition, notes)
    return result(len(data), pairs[0], pairs, lr_res, lr_int, contrasts, per_pair)


def _per_pair_contrasts(
    data: pd.DataFrame,
    pairs: Sequence[str],
    conditions: Sequence[str],
    reference_condition: str,
    notes: list[str],
) -> list[Contrast]:
    """Stratified fits: one resource-only cumulative-logit model per pair, no correction."""
    out: list[Contrast] = []
    for pair in pairs:
        sub = data[data["pair"] == pair].reset_index(drop=True)
        present = [c for c in conditions if c in set(sub["condition"])]
        if reference_condition not in present or len(present) < 2:
            notes.append(f"pair {pair}: no per-pair contrasts (reference condition missing)")
            continue
        if sub["score"].nunique() < 2:
            notes.append(f"pair {pair}: constant outcome, no per-pair fit")
            continue
        x = dummies(sub["condition"], present, "condition")
        fit = fit_cumulative_logit(sub["score"].to_numpy(dtype=float), x)
        if not fit.converged:
            notes.append(f"pair {pair}: per-pair fit did not converge")
        ref_y = sub.loc[sub["condition"] == reference_condition, "score"].to_numpy(dtype=float)
        for cond in present[1:]:
            cy = sub.loc[sub["condition"] == cond, "score"].to_numpy(dtype=float)
            c = wald_contrast(fit, f"condition[{cond}]", cond, pair, non_overlap(cy, ref_y))
            if c.separation:
                notes.append(f"possible separation: pair {pair}, condition {cond}")
            out.append(c)
    return out


MAX_BOOT = 100_000  # bootstrap resamples per cell: more only costs time


def analyse(
    table: pd.DataFrame,
    reference_condition: str,
    dimension: str | None = None,
    reference_pair: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    source: str = "<table>",
) -> SensitivityResult:
    """Run the seed-003 analysis on every behaviour of a tidy table.

    Raises InputError when the table is malformed or the reference condition never occurs.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise InputError(f"seed must be a whole number in [0, 2**32), got {seed!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or not 100 <= n_boot <= MAX_BOOT:
        raise InputError(f"bootstrap resamples must lie in [100, {MAX_BOOT}], got {n_boot!r}")
    tidy = validate_tidy(table, source)
    if tidy.empty:
        raise InputError(f"{source}: the table has no rows")
    if reference_condition not in set(tidy["condition"]):
        found = ", ".join(sorted(tidy["condition"].unique()))
        raise InputError(
            f"{source}: field 'condition': reference condition {reference_condition!r} "
            f"does not occur (found: {found})"
        )
    if dimension is not None and dimension not in set(tidy["dimension"]):
        raise InputError(f"{source}: field 'dimension': no rows with dimension {dimension!r}")
    panel, dropped = panel_scores(tidy, dimension)
    if reference_pair is not None and reference_pair not in set(panel["pair"]):
        found = ", ".join(sorted(panel["pair"].unique())[:8])
        raise InputError(
            f"{source}: reference pair {reference_pair!r} does not occur (found: {found}); "
            "write it as 'auditor -> target'"
        )
    results: dict[str, BehaviourResult] = {}
    all_notes: list[str] = []
    if len(dropped):
        all_notes.append(
            f"{len(dropped)} rollout(s) left out of the analysis, each listed with its "
            "reason under 'Dropped rollouts' (the result's dropped table)"
        )
    for behaviour in sorted(tidy["behaviour"].unique()):
        dim = dimension or behaviour
        pb = panel[panel["behaviour"] == behaviour].reset_index(drop=True)
        rows = tidy[(tidy["behaviour"] == behaviour) & (tidy["dimension"] == dim)]
        if pb.empty and dimension is None and rows.empty:
            present = sorted(tidy.loc[tidy["behaviour"] == behaviour, "dimension"].unique())
            shown = ", ".join(present[:8]) + (", ..." if len(present) > 8 else "")
            all_notes.append(
                f"{behaviour}: no dimension is named like the behaviour (dimensions: {shown}); "
                "name the behaviour after the dimension to analyse, or pass --dimension"
            )
            continue
        if pb.empty:
            all_notes.append(f"{behaviour}: no scored rollouts, not analysed")
            continue
        res = analyse_behaviour(
            pb,
            rows[["rollout", "judge", "score"]],
            behaviour,
            dim,
            reference_condition,
            reference_pair,
            n_boot=n_boot,
            seed=seed,
        )
        results[behaviour] = res
        all_notes.extend(f"{behaviour}: {w}" for w in res.warnings)
    return SensitivityResult(
        reference_condition=reference_condition,
        dimension=dimension,
        behaviours=results,
        dropped=dropped,
        warnings=tuple(all_notes),
    )
