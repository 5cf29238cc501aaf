"""What the served backend sends to an OpenAI-compatible completions server, and how it reads
exact label log-probabilities out of the answers (docs/design.md §3).

Two kinds of request, both on the legacy `/completions` route with `max_tokens` 1 (llama-cpp-
python treats 0 as "generate to the end of the context") and `temperature` 0:

- next token: the prompt alone with `logprobs: K`; the answer's `top_logprobs[0]` holds the
  exact log-softmax of the K likeliest next tokens. A label found there is exact; a label
  outside the top K is not guessed, it is asked for with the second kind.
- prompt log-probs: prompt + label, asking for the log-probabilities of the prompt's own
  tokens: vLLM's `prompt_logprobs` (keyed by token id) or, on servers without it, `echo` with
  `logprobs` (llama-cpp-python). The label's tokens are the prompt's last ones, read from the
  end of the list (llama-cpp-python drops BOS-id tokens from echoed lists, so positions from
  the start are unreliable), and summed when a label is several tokens.

vLLM gets `return_tokens_as_token_ids`, so its top-k keys name token ids ("token_id:330");
servers that ignore it (llama-cpp-python) key by the token's text, which is matched only when
no other token of the vocabulary decodes to the same text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from eraudit_core.openai_http import EndpointError
from eraudit_core.verifier._answer_check import LABEL_SUM_TOLERANCE as LABEL_SUM_TOLERANCE
from eraudit_core.verifier._answer_check import check_answer_values

Prompt = str | list[int]
Prompts = Prompt | list[str] | list[list[int]]  # one prompt, or several in one request

# How servers refuse a request they cannot parse (token-id prompts on llama-cpp-python: 500).
REFUSAL_STATUS = frozenset({400, 415, 422, 500})
# Largest |difference| between a label's prompt log-prob and its next-token log-prob on the
# probe: a misaligned echo (llama-cpp-python without a leading BOS) is off by nats, not this.
ALIGNMENT_TOLERANCE_NATS = 0.05


def server_address(base_url: str) -> str:
    """HOST:PORT of a server URL (what an operator greps their fleet for)."""
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    if parts.port is not None:
        return f"{parts.hostname}:{parts.port}"
    return str(parts.hostname or base_url)


def check_label_logprobs(values: Sequence[float], where: str) -> tuple[float, float]:
    """(l_A, l_B) when both are log-probabilities of one distribution (`check_answer_values`:
    finite, at most 0, summing to at most 1 within LABEL_SUM_TOLERANCE and to more than 0);
    AnswerCheckError naming `where` (the server and the prompt) otherwise: a server answering
    -inf, NaN, -1000 or 0.0 for both labels would give a p_true of NaN or 0.5."""
    check_answer_values(values, where)
    a, b = (float(v) for v in values)
    return a, b


def next_token_body(model: str, prompt: Prompts, top_k: int) -> dict[str, Any]:
    return {
        "model": model,
        "prompt": prompt,
        "max_tokens": 1,
        "temperature": 0.0,
        "logprobs": int(top_k),
        "return_tokens_as_token_ids": True,
    }


def prompt_logprob_body(model: str, prompt: Prompts) -> dict[str, Any]:
    """Both dialects in one body: vLLM answers `prompt_logprobs`, llama-cpp-python ignores that
    field and answers `echo`."""
    return {
        "model": model,
        "prompt": prompt,
        "max_tokens": 1,
        "temperature": 0.0,
        "echo": True,
        "logprobs": 1,
        "prompt_logprobs": 1,
        "return_tokens_as_token_ids": True,
    }


def _choice(resp: Any, where: str) -> Mapping[str, Any]:
    try:
        choice = resp["choices"][0]
    except (KeyError, IndexError, TypeError):
        raise EndpointError(
            f"{where}: malformed completion, no choices[0] ({str(resp)[:200]})"
        ) from None
    if not isinstance(choice, Mapping):
        raise EndpointError(f"{where}: malformed completion, choices[0] is not an object")
    return choice


def prompt_tokens(resp: Any) -> int | None:
    """usage.prompt_tokens, when the server reports it."""
    try:
        value = resp["usage"]["prompt_tokens"]
    except (KeyError, TypeError):
        return None
    return int(value) if isinstance(value, int) else None


def completion_tokens(resp: Any) -> int:
    try:
        value = resp["usage"]["completion_tokens"]
    except (KeyError, TypeError):
        return 1
    return int(value) if isinstance(value, int) else 1


def _finite(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EndpointError(f"{where}: log-probability {value!r} is not a number")
    value = float(value)
    if math.isnan(value) or value > 1e-6:
        raise EndpointError(f"{where}: {value!r} is not a log-probability (must be <= 0)")
    return min(value, 0.0)


def top_logprobs(resp: Any, where: str) -> dict[str, float]:
    """The next-token top-k of a next-token answer: {key: log-prob}."""
    choice = _choice(resp, where)
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, Mapping):
        raise EndpointError(
            f"{where}: the server returned no logprobs for the next token (it must support "
            "`logprobs` on /completions)"
        )
    tops = logprobs.get("top_logprobs")
    if not isinstance(tops, list) or not tops or not isinstance(tops[0], Mapping):
        raise EndpointError(f"{where}: malformed logprobs, no top_logprobs[0] object")
    if not tops[0]:
        # Every request here asks for at least one log-prob, so an empty top-k is a broken
        # server, not a distribution; reading it would leave nothing to score or align against.
        raise EndpointError(
            f"{where}: the server returned an empty top-k (top_logprobs[0] is {{}}) although "
            "the request asked for `logprobs`"
        )
    return {str(k): _finite(v, where) for k, v in tops[0].items()}


def id_key(token_id: int) -> str:
    return f"token_id:{token_id}"


def keyed_by_id(top: Mapping[str, float]) -> bool:
    return bool(top) and all(k.startswith("token_id:") for k in top)


def labels_in_top(
    top: Mapping[str, float],
    label_ids: Sequence[Sequence[int]],
    label_texts: Sequence[str | None],
) -> list[float | None]:
    """Each single-token label's exact log-prob when it is in the top-k, else None.

    `label_texts[i]` is the label's unambiguous text key, or None when another token decodes to
    the same text (then only token-id keys can identify it).
    """
    by_id = keyed_by_id(top)
    out: list[float | None] = []
    for ids, text in zip(label_ids, label_texts, strict=True):
        if len(ids) != 1:
            out.append(None)
        elif by_id:
            out.append(top.get(id_key(ids[0])))
        else:
            out.append(top.get(text) if text is not None else None)
    return out


def read_prompt_logprobs(
    resp: Any, n_prompt: int, label: Sequence[int], label_pieces: Sequence[str], where: str
) -> tuple[float, str]:
    """The summed log-prob of the label tokens that end a prompt + label request, and which
    dialect answered ("prompt_logprobs" or "echo")."""
    choice = _choice(resp, where)
    plp = choice.get("prompt_logprobs")
    if isinstance(plp, list) and plp:
        n_total = n_prompt + len(label)
        if len(plp) != n_total:
            raise EndpointError(
                f"{where}: prompt_logprobs has {len(plp)} entries for a prompt of {n_total} tokens"
            )
        total = 0.0
        for pos, tok in zip(range(n_prompt, n_total), label, strict=True):
            entry = plp[pos]
            if not isinstance(entry, Mapping):
                raise EndpointError(f"{where}: prompt_logprobs[{pos}] is not an object")
            found = entry.get(str(tok), entry.get(tok))  # type: ignore[call-overload]
            if isinstance(found, Mapping):
                found = found.get("logprob")
            if found is None:
                raise EndpointError(
                    f"{where}: prompt_logprobs[{pos}] lacks the prompt's own token {tok}"
                )
            total += _finite(found, where)
        return total, "prompt_logprobs"
    logprobs = choice.get("logprobs")
    tokens = logprobs.get("tokens") if isinstance(logprobs, Mapping) else None
    values = logprobs.get("token_logprobs") if isinstance(logprobs, Mapping) else None
    end = len(tokens) - completion_tokens(resp) if isinstance(tokens, list) else 0
    start = end - len(label)
    if not isinstance(values, list) or start < 1:
        raise EndpointError(
            f"{where}: the server returned no prompt log-probs: neither vLLM's prompt_logprobs "
            "nor echo with logprobs. Exact label log-probabilities need one of them (vLLM, "
            "llama-cpp-python's server with --logits_all true)"
        )
    assert isinstance(tokens, list)
    if len(tokens) != len(values):
        raise EndpointError(f"{where}: echoed tokens and token_logprobs differ in length")
    total = 0.0
    for i, piece in zip(range(start, end), label_pieces, strict=True):
        got = str(tokens[i])
        if got != piece and got != id_key(label[i - start]):
            raise EndpointError(
                f"{where}: echoed token {i} is {got!r} where the label token {piece!r} was "
                "expected (the server tokenises or aligns the prompt differently)"
            )
        total += _finite(values[i], where)
    return total, "echo"


def model_cards(resp: Any, where: str) -> list[Mapping[str, Any]]:
    try:
        data = resp["data"]
    except (KeyError, TypeError):
        raise EndpointError(f"{where}: malformed /models answer ({str(resp)[:200]})") from None
    if not isinstance(data, list) or not all(
        isinstance(c, Mapping) and isinstance(c.get("id"), str) for c in data
    ):
        raise EndpointError(f"{where}: malformed /models answer: data must list models with ids")
    return data


def tokens_field(resp: Any, where: str) -> list[int]:
    tokens = resp.get("tokens") if isinstance(resp, Mapping) else None
    if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
        raise EndpointError(f"{where}: malformed tokenize answer, no list of token ids")
    return [int(t) for t in tokens]
