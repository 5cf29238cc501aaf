"""The analysis read as findings: one sentence per behaviour, strongest evidence first.

An auditor opening the page wants the answer before the tables: which behaviour the resource
condition moves, in which direction, by how much and how surely. These helpers only word what
`analyse` computed (no statistic is computed here), so the page, the CLI and a report agree.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from eraudit_core.sensitivity._results import BehaviourResult, Contrast, SensitivityResult

SIGNIFICANCE = 0.05
SCI_BELOW = 1e-4
POOLED_LABEL = "all pairs"

GLOSSARY: tuple[tuple[str, str], ...] = (
    (
        "Odds ratio (OR)",
        "How much a condition multiplies the odds of a higher judge score than under the "
        "reference condition: 1 is no effect, 2 doubles the odds, 0.5 halves them.",
    ),
    (
        "Cumulative logit",
        "The model fitted per behaviour: judge scores are ordered levels (1 < 2 < ...), and one "
        "odds ratio per condition shifts the whole score distribution up or down, with the "
        "auditor-target pair as a second factor.",
    ),
    (
        "LR test",
        "Likelihood-ratio test: does adding the condition (or its interaction with the pair) "
        "explain the scores better than leaving it out? A small p says it does.",
    ),
    (
        "Holm",
        "A correction for testing several conditions against the reference at once: each "
        "p-value is raised so that the chance of any false finding stays at 5%.",
    ),
    (
        "Separation",
        "A condition whose rollouts all score at one end, so the odds ratio runs to infinity "
        "and its interval is not trustworthy; such estimates are drawn hollow.",
    ),
    (
        "Krippendorff alpha",
        "Agreement between judges on the ordinal scores: 1 is perfect, 0 is chance.",
    ),
)


def format_p(p: float | None) -> str:
    """A p-value as people read it: 4 decimals at most, scientific notation below 1e-4."""
    if p is None or not math.isfinite(p):
        return "n/a"
    if p < SCI_BELOW:
        return f"{p:.1e}"
    return f"{p:.4f}".rstrip("0").rstrip(".") if p < 0.1 else f"{p:.3f}"


def _p_phrase(p: float | None) -> str:
    if p is not None and math.isfinite(p) and p < SCI_BELOW:
        return "p < 1e-4"
    return f"p = {format_p(p)}"


def _human(name: str) -> str:
    return str(name).replace("_", "-")


def _strongest(b: BehaviourResult) -> Contrast | None:
    """The pooled contrast with the smallest Holm p (finite estimates only)."""
    finite = [c for c in b.contrasts if math.isfinite(c.odds_ratio) and c.odds_ratio > 0]
    if not finite:
        return None
    return min(finite, key=lambda c: (c.p_holm if c.p_holm is not None else c.p, -abs(c.log_odds)))


def evidence_key(b: BehaviourResult) -> tuple[float, float]:
    """Sort key, strongest evidence first: the LR test of the condition, then the smallest
    Holm p of its contrasts (a behaviour without either sorts last)."""
    lr = b.lr_resource.p if b.lr_resource is not None and math.isfinite(b.lr_resource.p) else 2.0
    c = _strongest(b)
    holm = c.p_holm if c is not None and c.p_holm is not None else 2.0
    return (lr, holm)


def by_evidence(result: SensitivityResult) -> list[str]:
    """Behaviour names, the strongest evidence of a condition effect first."""
    return sorted(result.behaviours, key=lambda n: evidence_key(result.behaviours[n]))


def finding(b: BehaviourResult) -> str:
    """One line per behaviour, e.g. "Under transcripts, reward-hacking scores are higher than
    under none: odds ratio 11.3 (95% CI 6.1 to 21.0), Holm p < 1e-4"."""
    c = _strongest(b)
    what = _human(b.behaviour)
    if c is None:
        return f"{what}: no condition could be compared with {b.reference_condition}."
    p = c.p_holm if c.p_holm is not None else c.p
    numbers = (
        f"odds ratio {c.odds_ratio:.3g} (95% CI {c.ci_low:.3g} to {c.ci_high:.3g}), "
        f"Holm {_p_phrase(p)}"
    )
    caveat = "; separation, so the estimate is unreliable" if c.separation else ""
    if p is None or not p < SIGNIFICANCE:
        return (
            f"No clear effect of the condition on {what} scores: the strongest, "
            f"{c.condition} vs {b.reference_condition}, has {numbers}{caveat}."
        )
    way = "higher" if c.odds_ratio > 1 else "lower"
    return (
        f"Under {c.condition}, {what} scores are {way} than under {b.reference_condition}: "
        f"{numbers}{caveat}."
    )


# -- citations: a cited message inside its transcript ----------------------------------------------

_REF = re.compile(r"\[M(\d+)\]")


def message_refs(text: str) -> list[tuple[str, int | None]]:
    """A judge's text split at its `[M<n>]` references: (piece, None) for plain text and
    (reference, n) for each reference, n the message's 1-based place in the transcript (as
    Petri numbers them), so a page can make each reference open that message."""
    out: list[tuple[str, int | None]] = []
    pos = 0
    for m in _REF.finditer(str(text)):
        if m.start() > pos:
            out.append((text[pos : m.start()], None))
        out.append((m.group(0), int(m.group(1))))
        pos = m.end()
    if pos < len(text):
        out.append((text[pos:], None))
    return out


def _spans(text: str, quotes: Sequence[str]) -> list[tuple[str, bool]]:
    """`text` cut into (piece, highlighted) where any quote occurs (whitespace-insensitive
    matching is not attempted: a quote is highlighted where it occurs verbatim)."""
    marks = [False] * len(text)
    for q in quotes:
        q = str(q or "").strip()
        if not q:
            continue
        start = text.find(q)
        while start >= 0:
            for i in range(start, start + len(q)):
                marks[i] = True
            start = text.find(q, start + len(q))
    pieces: list[tuple[str, bool]] = []
    for ch, mark in zip(text, marks, strict=True):
        if pieces and pieces[-1][1] == mark:
            pieces[-1] = (pieces[-1][0] + ch, mark)
        else:
            pieces.append((ch, mark))
    return pieces


def transcript_window(
    messages: object,
    message: str | int,
    quotes: Sequence[str] = (),
    around: int = 2,
) -> list[dict[str, Any]] | None:
    """The cited message with the `around` turns before and after it, in transcript order:
    one dict per turn with "number" (M<n>, 1-based), "id", "role", "cited" and "pieces"
    ((text, highlighted) pairs: the quoted span of the cited message highlighted, or all of
    it when the highlight quotes nothing that occurs in it). `message` is a message id or a
    1-based number (an [M<n>] reference). None when the message is not in the transcript."""
    turns = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    if isinstance(message, int):
        at = message - 1 if 1 <= message <= len(turns) else None
    else:
        at = next((i for i, m in enumerate(turns) if str(m.get("id")) == str(message)), None)
    if at is None:
        return None
    out = []
    for i in range(max(0, at - around), min(len(turns), at + around + 1)):
        text = str(turns[i].get("text") or "")
        cited = i == at
        pieces = _spans(text, quotes) if cited else [(text, False)]
        if cited and not any(mark for _, mark in pieces):
            pieces = [(text, True)]
        out.append(
            {
                "number": f"M{i + 1}",
                "id": str(turns[i].get("id") or ""),
                "role": str(turns[i].get("role") or ""),
                "cited": cited,
                "pieces": pieces,
            }
        )
    return out
