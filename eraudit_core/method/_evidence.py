"""The evidence behind a verdict, read from a stored pair and its steps (pure).

D = (p_pre - p_post) / max(k, g) is the paper's score, but an auditor judging a verdict needs
what went into it (docs/design.md §4, "Evidence and belief"): the drop p_pre - p_post on the worst
rewording, the monitored gain g, the denominator and whether it is the floor k (`amplified`:
g <= k, so every drop counts 1/k times), whether the drop lies within the scorer's
numerical precision (the fast-vs-naive scoring gap measured at registration: floating-point
error, not noise; stored under the key `noise_floor`), the rewording beside the original
wording (`word_diff`) and the exact prompt the model read. These functions turn stored rows into that record and into one
sentence ("Why this verdict"); they never change a verdict.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from eraudit_core.method._stored_run import RunRecord
from eraudit_core.types import Verdict

TABLE_PROMPT_NOTE = "prompt not available: scores came from a table"


def noise_floor_record(measured: float | None, declared: float | None) -> dict[str, Any]:
    """The numerical precision a run uses, with where it came from (stored in the run's
    provenance under its old key `noise_floor`, so stored runs keep loading)."""
    if declared is not None and (measured is None or float(declared) >= measured):
        return {"value": float(declared), "source": "declared by the auditor (--noise-floor)"}
    if measured is not None:
        return {"value": float(measured), "source": "measured at registration (probe set)"}
    return {"value": None, "source": "not measured"}


def run_noise_floor_value(provenance: Mapping[str, Any]) -> float | None:
    """The numerical precision a run recorded (None when it has none)."""
    floor = provenance.get("noise_floor")
    if isinstance(floor, Mapping):
        value = floor.get("value")
        return None if value is None else float(value)
    return None


def within_noise(drop: float | None, floor: float | None) -> bool:
    """True when a drop is no larger than the scorer's numerical precision (|drop| <=
    floor); a drop this small is floating-point error, whatever D it gives."""
    if drop is None or floor is None or _nan(drop):
        return False
    return abs(float(drop)) <= float(floor)


def _nan(x: Any) -> bool:
    try:
        return math.isnan(float(x))
    except (TypeError, ValueError):
        return True


def word_diff(original: str, rewording: str) -> list[tuple[str, str]]:
    """The rewording against the original wording, word by word: a list of (op, text) with op
    "=" (kept), "-" (only in the original) or "+" (only in the rewording)."""
    a, b = re.findall(r"\S+", original or ""), re.findall(r"\S+", rewording or "")
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(("=", " ".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("-", " ".join(a[i1:i2])))
        if j2 > j1:
            out.append(("+", " ".join(b[j1:j2])))
    return out


def word_diff_text(original: str, rewording: str) -> str:
    """`word_diff` as plain text: [-removed-] {+added+}."""
    parts = []
    for op, text in word_diff(original, rewording):
        parts.append(text if op == "=" else (f"[-{text}-]" if op == "-" else f"{{+{text}+}}"))
    return " ".join(parts)


def prompt_texts(stored: Any) -> list[str] | None:
    """The stored prompt (JSON list: true answer as A, as B) or None when none was stored."""
    if stored is None or (isinstance(stored, float) and math.isnan(stored)):
        return None
    try:
        value = json.loads(stored)
    except (TypeError, ValueError):
        return None
    return [str(x) for x in value] if isinstance(value, list) else None


@dataclass(frozen=True)
class PairEvidence:
    """What a pair's verdict rests on. `worst_*` is the rewording with the largest D."""

    pair_id: str
    status: str
    gain: float
    k: float
    den: float
    amplified: bool
    worst_d: float | None
    worst_drop: float | None
    worst_p_pre: float | None
    worst_p_post: float | None
    worst_text: str | None
    worst_stage: int | None
    worst_generator: str | None
    within_noise: bool
    noise_floor: float | None
    min_drop: float
    epsilon: float
    prompt: list[str] | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _opt(x: Any) -> float | None:
    return None if x is None or _nan(x) else float(x)


def pair_evidence(pair: Mapping[Any, Any], run: RunRecord) -> PairEvidence:
    """The evidence of one stored pair (a `run_pairs` row) of `run`, read with the run's
    settings (k, epsilon, min-drop) and the noise floor in its provenance."""
    config = run.config
    k = config.k
    gain = float(pair["gain"])
    floor = run_noise_floor_value(run.provenance)
    drop = _opt(pair.get("worst_drop"))
    amplified = pair.get("amplified")
    stage = pair.get("worst_stage")
    return PairEvidence(
        pair_id=str(pair["pair_id"]),
        status=str(pair["status"]),
        gain=gain,
        k=k,
        den=float(pair["denominator"]),
        amplified=bool(gain <= k) if amplified is None or _nan(amplified) else bool(amplified),
        worst_d=_opt(pair.get("max_d")),
        worst_drop=drop,
        worst_p_pre=_opt(pair.get("worst_p_pre")),
        worst_p_post=_opt(pair.get("worst_p_post")),
        worst_text=None if pair.get("worst_text") is None else str(pair.get("worst_text")),
        worst_stage=None if stage is None or _nan(stage) else int(stage),
        worst_generator=(
            None if pair.get("worst_generator") is None else str(pair["worst_generator"])
        ),
        within_noise=within_noise(drop, floor) and str(pair["status"]) == Verdict.DEGRADED,
        noise_floor=floor,
        min_drop=config.min_drop,
        epsilon=config.epsilon,
        prompt=prompt_texts(pair.get("worst_prompt")),
    )


def _small(x: float) -> str:
    """Three decimals (0.0079 -> 0.008, -0.0271 -> -0.027); two significant digits below
    0.005, so a tiny drop never reads as 0."""
    return f"{x:.3f}" if abs(x) >= 0.005 else f"{x:.2g}"


def why_sentence(ev: PairEvidence) -> str:
    """'On this rewording p(true answer) fell from 0.4976 to 0.4897 (0.008) while the monitored
    gain was -0.027, below k = 0.001, so every drop counts 1000x': the verdict in one sentence,
    with the assumptions (min-drop, numerical precision) it was made under."""
    if ev.worst_drop is None or ev.worst_p_pre is None or ev.worst_p_post is None:
        return (
            f"{ev.status}: no rewording of this question was scored, so nothing supports or "
            "contradicts the verdict beyond its status."
        )
    moved = "fell" if ev.worst_drop > 0 else "rose"
    head = (
        f"On {'this' if ev.status == Verdict.DEGRADED else 'its worst'} rewording p(true answer) "
        f"{moved} from {ev.worst_p_pre:.4f} to {ev.worst_p_post:.4f} "
        f"({_small(abs(ev.worst_drop))})"
    )
    if ev.amplified:
        gain = (
            f"while the monitored gain was {_small(ev.gain)}, below k = {ev.k:g}, so every drop "
            f"counts {1 / ev.k:.0f}x"
        )
    else:
        gain = f"while the monitored gain was {_small(ev.gain)} (the denominator)"
    d = f"D = {ev.worst_d:.3g} {'>' if ev.status == Verdict.DEGRADED else 'vs'} epsilon {ev.epsilon:g}"
    parts = [f"{head} {gain}: {d}"]
    if ev.min_drop > 0:
        parts.append(f"minimum drop {ev.min_drop:g} (an assumption beyond the paper)")
    if ev.within_noise:
        parts.append(f"the drop is within the scorer's numerical precision ({ev.noise_floor:.3g})")
    elif ev.noise_floor is not None:
        parts.append(f"numerical precision of the scorer {ev.noise_floor:.3g}")
    return "; ".join(parts) + "."
