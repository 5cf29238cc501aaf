"""The label-mass check: is the label read where the model writes its answer? (docs/design.md §3)

The label softmax normalises over the two labels only, so it returns a valid-looking p_true
even where the model would write neither label: at a Harmony channel marker, say, where " A"
and " B" get tail probabilities. The full-vocabulary probability of the two labels at the read
position (their sum; a label of several tokens counts with its joint probability) tells the two
apart: near 1 where the model answers, near 0 at a wrong slot. Both backends' label log-probs are
full-vocabulary log-probs (the local model's log-softmax, a server's returned log-probs), so the
mass of every scored prompt follows from what is stored with its score: exp(l_A) + exp(l_B).

Registration scores the fixed probe set and refuses a checkpoint whose median label mass over
those prompts is below a threshold (default 0.5), naming the readout profile to try.

Mass alone also refuses checkpoints read at the right slot: a fine-tune on the two-way label loss
(the demo's honest arm) keeps " A" and " B" as its two most likely tokens but spreads the rest of
its probability over " C", " D"...: median mass 0.28, where a wrong slot gives ~1e-16. So below
the threshold a second signal decides: the share of probe prompts whose most likely next token is
a label. At the answer slot it is (near) 1; at a channel marker or an open think block the top
token is the marker. A checkpoint passes when more than half of the probe prompts have a label
on top (`top_share` > 0.5, kept in the summary with the mass). Measured on the demo model:
honest and concealed arms 1.0 at the answer slot; with the "Answer:" prefix left out, 0.5.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.types import QueryScore
from eraudit_core.verifier._probes import PROBE_SET
from eraudit_core.verifier._readout import PROFILES

MIN_LABEL_MASS = 0.5
MIN_TOP_SHARE = 0.5  # below the mass threshold, a label must top more than this share of probes


def prompt_label_masses(logprobs: Sequence[float]) -> tuple[float, float]:
    """(mass with the true option as A, mass with it as B) from (l_A, l_B, l_A, l_B)."""
    if len(logprobs) != 4:
        raise ValueError(f"need the four label log-probs of a query, got {len(logprobs)}")
    la1, lb1, la2, lb2 = (float(x) for x in logprobs)
    return math.exp(la1) + math.exp(lb1), math.exp(la2) + math.exp(lb2)


def summarise_label_mass(masses: Iterable[float]) -> dict[str, Any]:
    """{"median", "min", "n"} over per-prompt label masses (n prompts; None when empty)."""
    values = [float(m) for m in masses if m is not None and math.isfinite(float(m))]
    if not values:
        return {"median": None, "min": None, "n": 0}
    return {"median": statistics.median(values), "min": min(values), "n": len(values)}


def scores_label_mass(scores: Iterable[QueryScore]) -> dict[str, Any]:
    """The label-mass summary of scored queries (both orders of each; scores without
    log-probs, such as precomputed tables, are left out)."""
    masses: list[float] = []
    for s in scores:
        if s.logprobs is not None:
            masses.extend(prompt_label_masses(s.logprobs))
    return summarise_label_mass(masses)


def probe_label_mass(verifier: Any) -> dict[str, Any]:
    """The label mass of the probe set (8 questions, 16 prompts) under `verifier`."""
    return scores_label_mass(verifier.score(list(PROBE_SET)))


def probe_top_share(verifier: Any) -> float | None:
    """The share of probe prompts whose most likely next token is a label; None for a verifier
    that cannot say (one without `top_is_label`, such as a score table)."""
    top_is_label = getattr(verifier, "top_is_label", None)
    if top_is_label is None:
        return None
    flags = top_is_label(list(PROBE_SET))
    return sum(flags) / len(flags) if flags else None


def _answers_there(median: float, minimum: float, verifier: Any) -> tuple[bool, float | None]:
    """(passes, top_share): the mass reaches `minimum`, or else a label tops more than half of
    the probe prompts; the share is asked for only when the mass falls short."""
    if median >= minimum:
        return True, None
    share = probe_top_share(verifier)
    return share is not None and share > MIN_TOP_SHARE, share


def check_label_mass(
    verifier: Any, minimum: float = MIN_LABEL_MASS, summary: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The probe set's label mass; InputError when its median is below `minimum` and the labels
    are not the most likely next token on most probe prompts (then `top_share` is added).

    The message names the profile to try: for a local checkpoint every other profile is
    scored on the probes (same model in memory): the profile detected from its chat template
    when it passes, else the best one; for a served one the detected profile, when it is not
    the one used.
    """
    if not 0.0 <= minimum <= 1.0:
        raise InputError(f"min_label_mass: must lie in [0, 1], got {minimum}")
    summary = summary or probe_label_mass(verifier)
    median = summary["median"]
    if median is None:
        return summary
    passes, share = _answers_there(median, minimum, verifier)
    if share is not None:
        summary = {**summary, "top_share": share}
    if passes:  # low mass passes only where it answers, its probability spread over other tokens
        return summary
    on_top = (
        ""
        if share is None
        else f", and a label is its most likely next token on only {share:.0%} of them"
    )
    fmt = verifier.format
    hint = _profile_to_try(verifier, minimum)
    raise InputError(
        f"checkpoint {verifier.name}: read with readout {fmt.readout.name!r}, the two labels get "
        f"a median {median:.3g} (min {summary['min']:.3g}) of the model's probability over "
        f"the {summary['n']} probe prompts, below the minimum label mass {minimum:g}{on_top}: "
        "the label is not read where this model writes its answer, and its p_true would be a "
        f"letter prior. {hint} (`eraudit readouts` lists the profiles; a lower minimum is "
        "--min-label-mass)"
    )


def _profile_to_try(verifier: Any, minimum: float) -> str:
    current = verifier.format.readout.name
    with_readout = getattr(verifier, "with_readout", None)
    if with_readout is None:
        detected = verifier.format.detected
        if detected != current:
            return f"Try ;readout={detected} (detected from its chat template)."
        return "Try another readout profile with ;readout=NAME."
    # The profile detected from the chat template first: when it passes, it is the one to try.
    detected = verifier.format.detected
    order = [detected] + [n for n in PROFILES if n != detected]
    tried: list[tuple[bool, float, str]] = []
    for name in order:
        if name == current:
            continue
        try:
            other = with_readout(name)
            median = probe_label_mass(other)["median"]
        except InputError:
            continue  # e.g. labels that do not continue this profile's prefill cleanly
        if median is None:
            continue
        passes, _ = _answers_there(median, minimum, other)
        if name == detected and passes:
            return f"Try ;readout={name} (detected from its chat template; median label mass {median:.3g} there)."
        tried.append((passes, median, name))
    if not tried:
        return "No other readout profile could be scored."
    passes, best, name = max(tried)
    if passes:
        return f"Try ;readout={name} (median label mass {best:.3g} there)."
    return (
        f"No profile reaches it (best: {name}, median {best:.3g}); check the answer prefix "
        "and labels (--prompt-template, --prefix)."
    )
