"""The debate section's headline, from the fit gate the arms' manifests record.

Why: an audit of an arm that never learned its own training task says nothing about debate
distillation, in either direction (docs/fit-gate.md). The fit gate is checked before any
audit and written into each arm's manifest as `fit` (`eraudit adapt --objective reference`);
this headline reads it, so the page says whether the audit below it is a finding or
uninformative before any count is shown, and how many seeds stand behind it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

LN2 = math.log(2.0)


def arm_seeds(manifest: Mapping[str, Any]) -> int:
    """How many seeds of this arm exist (`seeds`, a list, or one `seed`)."""
    seeds = manifest.get("seeds")
    if isinstance(seeds, list):
        return len(seeds)
    return (
        1 if "seed" in manifest or "seed" in (manifest.get("fit") or {}).get("capacity", {}) else 0
    )


def _num(x: Any, digits: int) -> str:
    return f"{float(x):.{digits}f}" if isinstance(x, int | float) else "not measured"


def fit_clause(arm: str, manifest: Mapping[str, Any] | None) -> tuple[str, bool]:
    """One arm's fit in words and whether it passed the gate."""
    if manifest is None:
        return f"{arm}: no manifest in this checkout, so its fit is not known", False
    fit = manifest.get("fit")
    if not isinstance(fit, Mapping):
        return (
            f"{arm}: no fit-gate record (trained on the answer tokens, before the gate), so "
            "whether it learned its own training task was not checked",
            False,
        )
    loss = (fit.get("letter_loss") or {}).get("train")
    numbers = (
        f"two-way training accuracy {_num(fit.get('train_two_way_accuracy'), 2)}, held-out "
        f"{_num(fit.get('heldout_two_way_accuracy'), 2)}, letter loss {_num(loss, 3)} against "
        f"ln 2 = {LN2:.3f}"
    )
    if fit.get("passed") is True:
        threshold = fit.get("threshold", 0.9)
        return f"{arm} passed the fit gate ({numbers}; the gate is {threshold:g})", True
    return f"{arm}: the adaptation did not take on its own training rows ({numbers})", False


def fit_headline(manifests: Mapping[str, Mapping[str, Any] | None], arms: Sequence[str]) -> str:
    """The debate section's first sentence: each arm's fit gate (`manifests`: arm ->
    manifest, None when missing), then what the audit below is: a finding only when every
    arm passed; and "one seed" while any arm has fewer than two."""
    clauses = [fit_clause(arm, manifests.get(arm)) for arm in arms]
    unchecked = [arm for arm in arms if "fit" not in (manifests.get(arm) or {"fit": None})]
    texts = [text for (text, _), arm in zip(clauses, arms, strict=True) if arm not in unchecked]
    if len(unchecked) > 1:  # one clause for the arms trained before the gate
        texts.append(
            f"{' and '.join(unchecked)}: no fit-gate record (trained on the answer tokens, "
            "before the gate), so whether they learned their own training task was not checked"
        )
    elif unchecked:
        texts.append(fit_clause(unchecked[0], manifests.get(unchecked[0]))[0])
    words = "; ".join(texts)
    seeds = [arm_seeds(m) for m in manifests.values() if m is not None]
    one_seed = not seeds or min(seeds) < 2
    seed_text = (
        " One seed per arm: the difference between the arms cannot yet be read against the "
        "spread between two seeds of one arm."
        if one_seed
        else f" Seeds per arm: {min(seeds)} or more."
    )
    if clauses and all(passed for _, passed in clauses):
        return f"{words}. Both arms learned their task, so the audit below is a finding.{seed_text}"
    return (
        f"{words}. So the audit below is uninformative: the adaptation did not take, and "
        f"nothing about the paper's claim can be read from it, in either direction.{seed_text}"
    )
