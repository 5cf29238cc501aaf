"""The scoring-noise floor of a checkpoint: how far p(true) moves when nothing but the
computation changes (docs/design.md §4, "Evidence and belief").

A drop in p(true) no larger than this floor cannot be told apart from scoring noise, so every
counterexample whose drop is within it is marked (never hidden; the verdict stays the
paper's). Measured on the fixed probe set (`PROBE_SET`) at registration:

* a local checkpoint: scoring twice on CPU in float32 is bit-identical (a floor of 0 would be a
  toy), so the probes are scored along two paths that batch differently, the fast batched path
  against the naive one-prompt-at-a-time reference (`naive=True`, as bench/scoring.py does);
  on a GPU in half precision this is where kernel and padding differences show;
* a served checkpoint: its probe scores against those of its first registration (the server's
  kernels, batching and any change since), via `served_drift`.

The floor is the largest |dp| over the probes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eraudit_core.types import Query
from eraudit_core.verifier._probes import PROBE_SET


def _max_abs_gap(a: Sequence[float], b: Sequence[float]) -> float:
    return float(max((abs(float(x) - float(y)) for x, y in zip(a, b, strict=True)), default=0.0))


def measure_noise_floor(verifier: Any, probes: Sequence[Query] = PROBE_SET) -> dict[str, Any]:
    """{"value": max |dp|, "method", "n_probes", "probe_p"} for a loaded checkpoint.

    A verifier with `label_logprobs(queries, naive=...)` (the local backend) compares its fast
    path with its naive reference path; any other records its probe scores (`probe_p`) so a
    later registration can measure its drift (`served_drift`), with a floor of 0 until then.
    """
    from_paths = getattr(verifier, "label_logprobs", None)
    if from_paths is not None:
        from eraudit_core.verifier._kernels import scores_from_logprobs

        fast = [s.p_true for s in scores_from_logprobs(from_paths(list(probes)))]
        naive = [s.p_true for s in scores_from_logprobs(from_paths(list(probes), naive=True))]
        return {
            "value": _max_abs_gap(fast, naive),
            "method": "probe set: fast batched path vs naive one-prompt reference path",
            "n_probes": len(probes),
            "probe_p": fast,
        }
    now = [s.p_true for s in verifier.score(list(probes))]
    return {
        "value": 0.0,
        "method": "probe set scored at first registration (drift measured on re-registration)",
        "n_probes": len(probes),
        "probe_p": now,
    }


def served_drift(
    registered: Mapping[str, Any], verifier: Any, probes: Sequence[Query] = PROBE_SET
) -> dict[str, Any] | None:
    """The floor of a served checkpoint re-registered: the larger of its stored floor and the
    largest |dp| between its probe scores now and at its first registration. None when the
    registration stored no probe scores."""
    before = (registered.get("noise_floor") or {}).get("probe_p")
    if not before or len(before) != len(probes):
        return None
    now = [s.p_true for s in verifier.score(list(probes))]
    old = float((registered.get("noise_floor") or {}).get("value") or 0.0)
    return {
        "value": max(old, _max_abs_gap(before, now)),
        "method": "probe set: served scores now vs at first registration",
        "n_probes": len(probes),
        "probe_p": list(before),
    }


def run_noise_floor(details: Sequence[Mapping[str, Any]]) -> float | None:
    """The floor an audit run uses: the larger of its checkpoints' (None if none measured)."""
    values = [
        float(d["noise_floor"]["value"])
        for d in details
        if isinstance(d.get("noise_floor"), Mapping) and d["noise_floor"].get("value") is not None
    ]
    return max(values) if values else None
