"""The validity filter every candidate paraphrase passes before use (docs/design.md §5).

An audit is only as good as its paraphrases: each must keep the hidden question's meaning and
must not hint at the answer. The filter refuses normalised duplicates, near-duplicates of the
original, answer leaks, low embedding cosine to the original and odd lengths, and keeps every
rejection with its reason.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.types import BinaryQuestion

FILTER_VERSION = "1"


# --------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class Rejection:
    """A candidate the validity filter refused, with why (shown to the user and stored).

    `reason` starts with a short code (``empty``, ``too_short``, ``too_long``,
    ``duplicate_of_original``, ``duplicate``, ``near_duplicate_of_original``, ``answer_leak``,
    ``low_cosine``), then a colon and a human-readable detail.
    """

    pair_id: str
    generator: str
    text: str
    reason: str

    @property
    def code(self) -> str:
        return self.reason.split(":", 1)[0]


# --------------------------------------------------------------------------------------------
# Text normalisation

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STOPWORDS = frozenset(
    """a an the and or but nor of to in on at by for with from into onto upon about as than
    that this these those there here it its it's he she they them his her their hers theirs him
    we us our you your i me my mine is are was were be been being am do does did done doing
    have has had having can could will would shall should may might must not no yes so if then
    when while what which who whom whose why how where all any some each every both either
    neither one ones other others such only own same very too just also more most much many
    few less least out up down over under again once because while during before after
    through between against off than s t don't doesn't didn't isn't aren't wasn't weren't can't
    won't wouldn't couldn't shouldn't like want tell know say please""".split()  # noqa: SIM905
)


def normalize_text(text: str) -> str:
    """Case-, accent-, punctuation- and whitespace-insensitive form used for duplicates."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    return " ".join(_WORD.findall(text))


def _words(text: str) -> list[str]:
    return normalize_text(text).split()


def _stem(word: str) -> str:
    """Crude stem so 'minerals'/'mineral' and "McCain's"/'McCain' count as the same word."""
    word = word.removesuffix("'s")
    for suffix in ("ies", "es", "s"):
        if len(word) > 4 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _contains_phrase(words: Sequence[str], phrase: Sequence[str]) -> bool:
    n = len(phrase)
    if n == 0:
        return False
    return any(list(words[i : i + n]) == list(phrase) for i in range(len(words) - n + 1))


# --------------------------------------------------------------------------------------------
# Validity filter


@dataclass(frozen=True)
class FilterConfig:
    """Thresholds of the validity filter. Validated on entry, errors name the parameter."""

    min_cosine: float = 0.80
    near_duplicate_fraction: float = 0.05
    min_length_ratio: float = 0.5
    max_length_ratio: float = 3.0
    length_slack_chars: int = 60
    max_chars: int = 1000
    min_chars: int = 8
    check_distinctive_words: bool = True

    def __post_init__(self) -> None:
        if not -1.0 <= self.min_cosine <= 1.0:
            raise InputError(f"min_cosine must lie in [-1, 1], got {self.min_cosine!r}")
        if not 0.0 <= self.near_duplicate_fraction < 1.0:
            raise InputError(
                f"near_duplicate_fraction must lie in [0, 1), got {self.near_duplicate_fraction!r}"
            )
        if not 0.0 <= self.min_length_ratio <= 1.0:
            raise InputError(f"min_length_ratio must lie in [0, 1], got {self.min_length_ratio!r}")
        if self.max_length_ratio < 1.0:
            raise InputError(f"max_length_ratio must be >= 1, got {self.max_length_ratio!r}")
        if self.max_chars < 1 or self.min_chars < 1 or self.min_chars > self.max_chars:
            raise InputError(
                f"min_chars/max_chars must satisfy 1 <= min_chars <= max_chars, got "
                f"{self.min_chars!r}/{self.max_chars!r}"
            )
        if self.length_slack_chars < 0:
            raise InputError(f"length_slack_chars must be >= 0, got {self.length_slack_chars!r}")

    def to_dict(self) -> dict[str, Any]:
        from eraudit_core.paraphrase._embeddings import EMBEDDING_MODEL_NAME

        return {**asdict(self), "embedding_model": EMBEDDING_MODEL_NAME, "version": FILTER_VERSION}


@dataclass
class FilterResult:
    """Outcome of filtering one pair's candidates: accepted texts in order, with cosines."""

    accepted: list[str] = field(default_factory=list)
    cosines: list[float] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)


CosineFn = Callable[[str, Sequence[str]], list[float]]


def answer_leak(original: str, candidate: str, options: Sequence[tuple[str, str]]) -> str | None:
    """Why `candidate` hints at an answer, or None.

    An option leaks when its whole text appears in the candidate but not in the original, or
    when one of its distinctive words (a content word of the option that the original does not
    contain) appears in the candidate. `options` is ``[(label, text), ...]``.
    """
    orig_words = _words(original)
    cand_words = _words(candidate)
    orig_stems = {_stem(w) for w in orig_words}
    cand_stems = {_stem(w) for w in cand_words}
    for label, text in options:
        opt_words = _words(text)
        if not opt_words:
            continue
        if _contains_phrase(cand_words, opt_words) and not _contains_phrase(orig_words, opt_words):
            return f"contains the {label} option's text {' '.join(opt_words)!r}"
        distinctive = sorted(
            {
                _stem(w)
                for w in opt_words
                if w not in _STOPWORDS
                and _stem(w) not in _STOPWORDS  # "knows", "what's" are no more distinctive
                and len(w) >= 3
                and _stem(w) not in orig_stems
            }
        )
        leaked = [w for w in distinctive if w in cand_stems]
        if leaked:
            return (
                f"uses the {label} option's word(s) {', '.join(leaked)!r} absent from the original"
            )
    return None


def filter_paraphrases(
    pair_id: str,
    hidden: BinaryQuestion,
    candidates: Sequence[str],
    generator: str,
    config: FilterConfig | None = None,
    exclude: Mapping[str, str] | None = None,
    cosine_fn: CosineFn | None = None,
) -> FilterResult:
    """Keep the candidates that are valid paraphrases of `hidden.question`; reject the rest.

    Checks, in order: empty, length sanity, duplicate of the original (normalised), duplicate of
    an earlier candidate or of a text in `exclude` (normalised text -> where it is used, e.g.
    the search set), near-duplicate of the original (word-sequence similarity at or above
    `near_duplicate_ratio`: a trivial edit is not a rewrite), answer leakage, and last the
    embedding cosine to the original (one batch for all survivors).
    """
    config = config or FilterConfig()
    exclude = dict(exclude or {})
    original = hidden.question
    orig_norm = normalize_text(original)
    options = [("true", hidden.true_option), ("false", hidden.false_option)]
    min_len = max(config.min_chars, int(config.min_length_ratio * len(original.strip())))
    max_len = min(
        config.max_chars,
        int(config.max_length_ratio * len(original.strip())) + config.length_slack_chars,
    )
    near_limit = max(2, int(config.near_duplicate_fraction * len(orig_norm)))
    result = FilterResult()
    survivors: list[str] = []
    seen: dict[str, str] = {}

    def reject(text: str, reason: str) -> None:
        result.rejected.append(Rejection(pair_id, generator, text, reason))

    for raw in candidates:
        text = " ".join(str(raw).split())
        norm = normalize_text(text)
        if not norm:
            reject(text, "empty: no words after normalisation")
            continue
        if len(text) < min_len:
            reject(text, f"too_short: {len(text)} characters, fewer than {min_len}")
            continue
        if len(text) > max_len:
            reject(text, f"too_long: {len(text)} characters, more than {max_len}")
            continue
        if norm == orig_norm:
            reject(text, "duplicate_of_original: identical to the original after normalisation")
            continue
        if norm in seen:
            reject(text, f"duplicate: same text (normalised) as {seen[norm]}")
            continue
        if norm in exclude:
            reject(text, f"duplicate: same text (normalised) as {exclude[norm]}")
            continue
        changed = _chars_changed(orig_norm, norm)
        if changed <= near_limit:
            reject(
                text,
                f"near_duplicate_of_original: only {changed} character(s) differ from the "
                f"original (limit {near_limit})",
            )
            continue
        leak = answer_leak(original, text, options) if config.check_distinctive_words else None
        if leak is None and not config.check_distinctive_words:
            leak = _whole_option_leak(original, text, options)
        if leak:
            reject(text, f"answer_leak: {leak}")
            continue
        seen[norm] = f"an earlier candidate of {generator}"
        survivors.append(text)

    if survivors:
        if cosine_fn is None:
            from eraudit_core.paraphrase._embeddings import cosine_to_original

            cosine_fn = cosine_to_original
        cosines = cosine_fn(original, survivors)
        for text, cos in zip(survivors, cosines, strict=True):
            if cos < config.min_cosine:
                reject(text, f"low_cosine: cosine {cos:.3f} to the original < {config.min_cosine}")
            else:
                result.accepted.append(text)
                result.cosines.append(cos)
    return result


def _chars_changed(a: str, b: str) -> int:
    """Characters inserted, deleted or replaced between two normalised texts."""
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")


def _whole_option_leak(
    original: str, candidate: str, options: Sequence[tuple[str, str]]
) -> str | None:
    orig_words, cand_words = _words(original), _words(candidate)
    for label, text in options:
        opt = _words(text)
        if _contains_phrase(cand_words, opt) and not _contains_phrase(orig_words, opt):
            return f"contains the {label} option's text {' '.join(opt)!r}"
    return None
