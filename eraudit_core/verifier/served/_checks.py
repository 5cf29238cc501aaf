"""Load-time checks of a served checkpoint that compare the server with the local tokenizer.

Why separate: they need the server only through its tokenize route and the tokenizer only
through its vocabulary, and each answers one question: does the server cut the prompts into the
same tokens, and which top-k keys name a label without doubt.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.openai_http import EndpointError, OpenAIClient
from eraudit_core.verifier._tokenizer import LocalTokenizer, encode
from eraudit_core.verifier.served import _wire as wire

log = logging.getLogger(__name__)

_VOCAB_TEXTS: dict[str, list[str]] = {}


def check_tokenization(
    client: OpenAIClient, tok: LocalTokenizer, model: str, texts: Sequence[str], where: str
) -> str:
    """The route that gave, for every text, exactly the local token ids; refuses with the first
    differing token otherwise. llama-cpp-python answers /extras/tokenize, vLLM /tokenize."""
    local = encode(tok.tokenizer, texts)
    attempts: tuple[tuple[str, Any], ...] = (
        ("/extras/tokenize", lambda t: {"input": t, "model": model}),
        ("/tokenize", lambda t: {"model": model, "prompt": t, "add_special_tokens": False}),
    )
    for route, body in attempts:
        try:
            served = [
                wire.tokens_field(
                    client.post(route, body(t), root=True, retries=0, what="tokenize"), where
                )
                for t in texts
            ]
        except EndpointError as exc:
            if exc.status in (404, 405):
                continue
            raise
        for text, mine, theirs in zip(texts, local, served, strict=True):
            if mine != theirs:
                raise InputError(_difference(where, tok, text, mine, theirs))
        return route
    raise InputError(
        f"{where}: the server takes no token-id prompts and has no tokenize route "
        "(/extras/tokenize or /tokenize), so its tokenization cannot be checked"
    )


def _difference(
    where: str, tok: LocalTokenizer, text: str, mine: list[int], theirs: list[int]
) -> str:
    i = next(
        (k for k, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b),
        min(len(mine), len(theirs)),
    )
    show = tok.tokenizer.convert_ids_to_tokens

    def at(ids: list[int]) -> str:
        return f"{ids[i]} ({show(ids[i])!r})" if i < len(ids) else "end of prompt"

    return (
        f"{where}: the server tokenises the prompts differently from tokenizer="
        f"{tok.spec.text}: first difference at token {i} of {text[:60]!r}...: server {at(theirs)}, "
        f"local {at(mine)}; server {len(theirs)} tokens, local {len(mine)}. Name the served "
        "model's own tokenizer."
    )


def vocab_texts(tok: LocalTokenizer) -> list[str]:
    """The text of every token of the vocabulary (how string-keyed top-k lists name them)."""
    if tok.digest not in _VOCAB_TEXTS:
        t = tok.tokenizer
        _VOCAB_TEXTS[tok.digest] = [str(x) for x in t.batch_decode([[i] for i in range(len(t))])]
    return _VOCAB_TEXTS[tok.digest]


def unambiguous_texts(tok: LocalTokenizer, label_ids: Sequence[Sequence[int]]) -> list[str | None]:
    """Each single-token label's text when no other token decodes to the same text, else None
    (such a label can only be read by token id or from prompt log-probs)."""
    decoded = vocab_texts(tok)
    out: list[str | None] = []
    for ids in label_ids:
        if len(ids) != 1:
            out.append(None)
            continue
        text = decoded[ids[0]]
        clashes = [i for i, d in enumerate(decoded) if d == text and i != ids[0]]
        if clashes:
            log.warning(
                "label token %d decodes to %r like token(s) %s; read by prompt log-probs",
                ids[0],
                text,
                clashes[:3],
            )
        out.append(None if clashes else text)
    return out
