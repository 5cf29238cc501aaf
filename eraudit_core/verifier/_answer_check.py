"""Every scored prompt checks its own answer before its p_true is kept (docs/design.md §3).

Registration checks the label mass on the probe set (`_label_mass.py`), once per checkpoint.
A checkpoint can still stop answering afterwards: a server that restarts with another chat
template, runs out of memory and answers garbage, or returns log-probs that are not a
distribution (both labels at -1000, a top-k of only the two labels at -20 and -21, every entry
at -1e39). The two-way softmax turns each of those into a plausible p_true (0.5, 0.73...), so
each prompt is checked with what its score already carries, by the same rule as registration:

* the values are log-probabilities of one distribution (`check_answer_values`): finite, at
  most 0, the two labels' probabilities summing to at most 1 (within `LABEL_SUM_TOLERANCE`)
  and to more than 0 (a sum that underflows double precision, both labels below about -745,
  cannot be told from none);
* a served next-token top-k could be the top of a distribution over the vocabulary
  (`check_top_k`): its probabilities sum to at most 1, and they plus the rest of the
  vocabulary, every other token at most as likely as the top-k's last, can reach 1;
* the labels carry at least `minimum` of the model's probability, or a label is the most
  likely next token (`check_answers`): registration's two signals, mass and top share, for
  one prompt. Below the mass, the verifier's `top_is_label` says whether a label tops that
  prompt (from what scoring saw when it can, else asked).

A prompt that fails raises `AnswerCheckError` naming the prompt and its values; nothing of it is
stored, and a run that meets it stops `failed` (resumable).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from eraudit_core.errors import AnswerCheckError
from eraudit_core.types import Query, QueryScore

ORDERS = ("AB", "BA")  # order 0: the true option as A; order 1: as B
# Two labels read by different requests may disagree by up to 0.05 nats (the served alignment
# tolerance), so their probabilities may sum to exp(0.05) - 1 above 1.
LABEL_SUM_TOLERANCE = math.exp(0.05) - 1.0
# A served model may have more tokens than its tokenizer (embeddings padded to a multiple of
# 64 or 128): the vocabulary a top-k is checked against counts twice the tokenizer's tokens.
VOCAB_SLACK = 2


def _values(values: Sequence[float]) -> str:
    return ", ".join(repr(float(v)) for v in values)


def check_answer_values(values: Sequence[float], where: str) -> None:
    """Refuse label log-probs (l_A, l_B) that are not two log-probabilities of one
    distribution: not finite, above 0, summing above 1 or to nothing."""
    a, b = (float(v) for v in values)
    shown = (a, b)
    if not (math.isfinite(a) and math.isfinite(b)):
        raise AnswerCheckError(
            f"{where}: label log-probs {_values(shown)} are not finite numbers; the answer "
            "cannot be scored",
            where,
            shown,
        )
    if a > 1e-6 or b > 1e-6:
        raise AnswerCheckError(
            f"{where}: label log-probs {_values(shown)}: a log-probability is at most 0; the "
            "answer cannot be scored",
            where,
            shown,
        )
    total = math.exp(min(a, 0.0)) + math.exp(min(b, 0.0))
    if total > 1.0 + LABEL_SUM_TOLERANCE:
        raise AnswerCheckError(
            f"{where}: label log-probs {_values(shown)} give the two answers probabilities "
            f"summing to {total:.4g}, more than 1 (two continuations of one prompt cannot both "
            "be that likely); the answer cannot be scored",
            where,
            shown,
        )
    if total == 0.0:
        raise AnswerCheckError(
            f"{where}: label log-probs {_values(shown)} give the two labels no probability at "
            "all (it underflows double precision): the model does not answer with a label "
            "here, and the two-way softmax of such values would be a made-up p_true",
            where,
            shown,
        )


def check_top_k(top: Mapping[str, float], vocab_size: int, where: str) -> None:
    """Refuse a next-token top-k that no distribution over `vocab_size` tokens (times
    VOCAB_SLACK) has as its top: probabilities summing above 1, or so small that even with
    every other token as likely as the top-k's least likely one they cannot reach 1."""
    if not top:
        return
    values = [float(v) for v in top.values()]
    shown = ", ".join(f"{k!r}: {v!r}" for k, v in list(top.items())[:6])
    more = f" and {len(top) - 6} more" if len(top) > 6 else ""
    if not all(math.isfinite(v) for v in values):
        raise AnswerCheckError(
            f"{where}: the next-token top-k holds values that are not finite numbers "
            f"({shown}{more}); the answer cannot be scored",
            where,
            tuple(values),
        )
    total = sum(math.exp(min(v, 0.0)) for v in values)
    if total > 1.0 + LABEL_SUM_TOLERANCE:
        raise AnswerCheckError(
            f"{where}: the next-token top-k ({shown}{more}) has probabilities summing to "
            f"{total:.4g}, more than 1: not log-probabilities of one distribution",
            where,
            tuple(values),
        )
    rest = max(0, VOCAB_SLACK * vocab_size - len(values))
    reach = total + rest * math.exp(min(values))
    if reach < 1.0 - LABEL_SUM_TOLERANCE:
        raise AnswerCheckError(
            f"{where}: the next-token top-k ({shown}{more}) cannot be the top of a "
            f"distribution over {vocab_size} tokens: with every other token as likely as its "
            f"last entry the probabilities reach only {reach:.3g} of 1; the server's answer "
            "cannot be scored",
            where,
            tuple(values),
        )


def prompt_where(name: str, query: Query, order: int) -> str:
    """How a message names one scored prompt: checkpoint, pair, answer order, question."""
    text = query.question if len(query.question) <= 80 else query.question[:77] + "..."
    return f"checkpoint {name}: pair {query.pair_id} order {ORDERS[order]} ({text!r})"


def _checkpoint_name(verifier: Any) -> str:
    return str(getattr(verifier, "name", None) or getattr(verifier, "fingerprint", "?"))


def check_answers(
    verifier: Any, queries: Sequence[Query], scores: Sequence[QueryScore], minimum: float
) -> None:
    """Check every prompt of `scores` (both answer orders of each query; scores without
    log-probs, such as a score table's, are left out): valid values, then a label mass of
    at least `minimum` or a label as the most likely next token. AnswerCheckError names the
    first prompt that fails and counts the others."""
    name = _checkpoint_name(verifier)
    low: list[tuple[int, int, float]] = []  # (query index, order, mass)
    for i, (q, s) in enumerate(zip(queries, scores, strict=True)):
        if s.logprobs is None:
            continue
        lp = [float(x) for x in s.logprobs]
        for o in (0, 1):
            pair = lp[2 * o : 2 * o + 2]
            check_answer_values(pair, prompt_where(name, q, o))
            mass = math.exp(pair[0]) + math.exp(pair[1])
            if mass < minimum:
                low.append((i, o, mass))
    if not low:
        return
    on_top = _label_on_top(verifier, [queries[i] for i in dict.fromkeys(i for i, _, _ in low)])
    failed = [(i, o, m) for i, o, m in low if not on_top.get((queries[i].prompt_hash, o), False)]
    if not failed:
        return
    i, o, mass = failed[0]
    where = prompt_where(name, queries[i], o)
    values = tuple(float(x) for x in (scores[i].logprobs or ())[2 * o : 2 * o + 2])
    others = f" ({len(failed) - 1} other prompt(s) of this batch too)" if len(failed) > 1 else ""
    raise AnswerCheckError(
        f"{where}: label log-probs {_values(values)} give the two labels {mass:.3g} of the "
        f"model's probability, below the minimum label mass {minimum:g}, and neither label is "
        f"its most likely next token{others}: the checkpoint does not answer with a label "
        "here (it passed the check at registration, so it changed or this prompt reads it "
        "at the wrong slot) and its p_true would be a letter prior. Nothing of this query "
        "was stored; a lower minimum is --min-label-mass",
        where,
        values,
    )


def _label_on_top(verifier: Any, queries: Sequence[Query]) -> dict[tuple[str, int], bool]:
    """{(prompt hash, order): a label is the most likely next token}, from the verifier's
    `top_is_label` (both orders of each query); empty for a verifier that cannot say."""
    top_is_label = getattr(verifier, "top_is_label", None)
    if top_is_label is None or not queries:
        return {}
    flags = list(top_is_label(list(queries)))
    return {
        (q.prompt_hash, o): bool(flags[2 * j + o]) for j, q in enumerate(queries) for o in (0, 1)
    }
