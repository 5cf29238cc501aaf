"""A loopback server that speaks vLLM's completions protocol over a made-up, exact "model".

Why: vLLM needs a GPU, so the token-id prompts, `prompt_logprobs` keyed by token id and
`return_tokens_as_token_ids` top-k keys (fields of vLLM's CompletionRequest / CompletionResponse,
vllm/entrypoints/openai/completion/protocol.py) are exercised here against a server whose every
log-probability is known exactly: the next-token distribution after a prefix is the
log-softmax of normal draws seeded by a hash of the prefix. The real-server tests run against
llama-cpp-python's server (tests/verifier/test_served_llama.py).

Several prompts in one request, as vLLM takes them (`prompt` a list of token-id lists or of
strings; a flat list of ints is one prompt): one choice per prompt, `index` = the prompt's
position (vLLM's completion serving numbers choices so when n=1), `usage` summed over the
prompts; one bad prompt fails the whole request with 400.

Faults on demand (`mode`): "garbage" answers 200 with non-completion JSON, "html" answers
200 with HTML, "no_prompt_logprobs" ignores prompt_logprobs and echo, "down" answers 503 to
every completion; `busy_next = n` answers the next n completions with 429 + Retry-After: 1.
Faults of the answers themselves (`fault`), switched on at any time (a test flips it mid-run,
after registration passed), on every prompt or only on prompts whose text holds
`fault_trigger`; `label_tokens` names the two labels' token ids: "labels_low" puts both labels
at -12 (valid log-probs, almost no mass), "labels_-1000" at -1000, "top_labels_only" answers a
top-k of only the two labels at -20 and -21 (and reads them so in prompt log-probs), "all_tiny"
sets every entry to -1e39, "nan" the labels to NaN.
Faults of list prompts (`list_mode`): "shuffle" returns the choices in a random order (indexes
right), "refuse" answers a list of two or more with 500 as llama-cpp-python does, "first_only"
answers only the first prompt (and counts only its tokens), "drop" leaves out the last choice, "duplicate" gives the last
choice the first one's index, "swap" labels the first two prompts' answers with each other's
indexes.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from tests._loopback import Loopback, QuietHandler


class ExactModel:
    """log p(token | prefix) for a vocabulary of `vocab` tokens, deterministic per prefix."""

    def __init__(self, vocab: int, salt: str = "m1") -> None:
        self.vocab = vocab
        self.salt = salt

    def logprobs(self, prefix: Sequence[int]) -> np.ndarray:
        seed = hashlib.sha256((self.salt + json.dumps(list(prefix))).encode()).digest()
        rng = np.random.default_rng(int.from_bytes(seed[:8], "little"))
        logits = rng.normal(0.0, 2.0, self.vocab)
        logits -= logits.max()
        return logits - np.log(np.exp(logits).sum())

    def label_logprob(self, prompt: Sequence[int], label: Sequence[int]) -> float:
        total = 0.0
        for i, tok in enumerate(label):
            total += float(self.logprobs(list(prompt) + list(label[:i]))[tok])
        return total


class LabelModel(ExactModel):
    """The exact model with `boost` nats added to the label tokens' logits: its labels carry
    most of the probability (about 0.9 with the default boost over 400 tokens), as a chat
    model's do where it answers, so registration passes at the default minimum label mass."""

    def __init__(self, vocab: int, label_tokens: Sequence[int], salt: str = "m1") -> None:
        super().__init__(vocab, salt)
        self.label_tokens = list(label_tokens)
        self.boost = 10.0

    def logprobs(self, prefix: Sequence[int]) -> np.ndarray:
        lp = super().logprobs(prefix).copy()
        lp[self.label_tokens] += self.boost
        return lp - np.log(np.exp(lp).sum())


FAULTS = ("labels_low", "labels_-1000", "top_labels_only", "all_tiny", "nan")


class FakeVLLM:
    """A threaded HTTP server on 127.0.0.1 serving `model` under `name`."""

    def __init__(
        self,
        tokenizer: Any,
        model: ExactModel,
        name: str = "fake-model",
        max_model_len: int = 4096,
        max_logprobs: int = 20,
        delay_s: float = 0.0,
        api_key: str | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.model = model
        self.name = name
        self.max_model_len = max_model_len
        self.max_logprobs = max_logprobs
        self.delay_s = delay_s
        self.api_key = api_key
        self.mode = ""
        self.list_mode = ""
        self.fault = ""
        self.fault_trigger = ""
        self.label_tokens: list[int] = []
        self.peak_prompts_in_flight = 0
        self._prompts_in_flight = 0
        self.busy_next = 0
        self.completions: list[dict[str, Any]] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(QuietHandler):
            def _authorised(self) -> bool:
                if outer.api_key is None:
                    return True
                if self.headers.get("Authorization") == f"Bearer {outer.api_key}":
                    return True
                self.send_json(401, {"error": {"message": "invalid api key", "code": 401}})
                return False

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                if not self._authorised():
                    return
                if self.path == "/v1/models":
                    card = {
                        "id": outer.name,
                        "object": "model",
                        "root": f"/models/{outer.model.salt}",
                        "max_model_len": outer.max_model_len,
                    }
                    self.send_json(200, {"object": "list", "data": [card]})
                else:
                    self.send_json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                if not self._authorised():
                    return
                body = self.read_json()
                if self.path == "/tokenize":
                    ids = outer.encode(body["prompt"])
                    self.send_json(200, {"count": len(ids), "tokens": ids})
                elif self.path == "/v1/completions":
                    n = len(outer.prompts(body.get("prompt")))
                    with outer._lock:
                        outer.in_flight += 1
                        outer._prompts_in_flight += n
                        outer.peak_in_flight = max(outer.peak_in_flight, outer.in_flight)
                        outer.peak_prompts_in_flight = max(
                            outer.peak_prompts_in_flight, outer._prompts_in_flight
                        )
                        outer.completions.append(body)
                        first = len(outer.completions) == 1
                    try:
                        time.sleep(outer.delay_s)
                        status, answer, headers = outer.complete(body, first)
                    finally:
                        with outer._lock:
                            outer.in_flight -= 1
                            outer._prompts_in_flight -= n
                    self.send_json(status, answer, headers)
                else:
                    self.send_json(404, {"error": {"message": "not found"}})

        self._server = Loopback(Handler)
        self.url = self._server.url

    def close(self) -> None:
        self._server.close()

    def encode(self, prompt: Any) -> list[int]:
        if isinstance(prompt, str):
            return list(self.tokenizer(prompt, add_special_tokens=False).input_ids)
        return [int(t) for t in prompt]

    @staticmethod
    def prompts(prompt: Any) -> list[Any]:
        """The prompts of a request: a string or a flat list of ints is one, a list of strings
        or of token-id lists is several (vLLM's CompletionRequest.prompt)."""
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], str | list):
            return list(prompt)
        return [prompt]

    def _key(self, token: int, as_ids: bool) -> str:
        return f"token_id:{token}" if as_ids else str(self.tokenizer.decode([token]))

    def _top(self, lp: np.ndarray, k: int, as_ids: bool, extra: int | None) -> dict[str, float]:
        order = list(np.argsort(-lp)[:k])
        if extra is not None and extra not in order:
            order.append(extra)
        return {self._key(int(t), as_ids): float(lp[t]) for t in order}

    def complete(self, body: dict[str, Any], first: bool) -> tuple[int, Any, dict[str, str]]:
        if self.mode == "garbage":
            return 200, {"id": "x", "object": "text_completion", "result": "ok"}, {}
        if self.mode == "html":
            return 200, b"<html><body>proxy error page</body></html>", {}
        if self.mode == "down":
            return 503, {"error": {"message": "engine is restarting"}}, {}
        with self._lock:
            busy = self.busy_next > 0
            self.busy_next -= int(busy)
        if busy:
            return 429, {"error": {"message": "too many requests"}}, {"Retry-After": "1"}
        if body.get("model") != self.name:
            return (
                404,
                {"error": {"message": f"The model `{body.get('model')}` does not exist."}},
                {},
            )
        prompts = self.prompts(body["prompt"])
        if len(prompts) > 1 and self.list_mode == "refuse":
            return 500, {"error": {"message": ""}}, {}  # llama-cpp-python's failed assertion
        choices = []
        for index, prompt in enumerate(prompts):
            ids = self.encode(prompt)
            k = body.get("logprobs")
            if k is not None and k > self.max_logprobs:
                msg = f"Requested sample logprobs of {k}, which is greater than max allowed: 20"
                return 400, {"error": {"message": msg, "code": 400}}, {}
            if len(ids) + 1 > self.max_model_len:
                msg = f"This model's maximum context length is {self.max_model_len} tokens"
                return 400, {"error": {"message": msg, "code": 400}}, {}
            choices.append(self._choice(body, ids, index))
        choices = self._list_fault(choices)
        answered = prompts[:1] if self.list_mode == "first_only" else prompts
        n_prompt = sum(len(self.encode(p)) for p in answered)
        usage = {
            "prompt_tokens": n_prompt,
            "completion_tokens": len(answered),
            "total_tokens": n_prompt + len(answered),
        }
        return (
            200,
            {"object": "text_completion", "model": self.name, "choices": choices, "usage": usage},
            {},
        )

    def _list_fault(self, choices: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(choices) < 2 or not self.list_mode:
            return choices
        if self.list_mode == "shuffle":
            out = list(choices)
            random.Random(len(out)).shuffle(out)
            return out if out != choices else out[1:] + out[:1]  # never the order asked
        if self.list_mode == "first_only":
            return choices[:1]
        if self.list_mode == "drop":
            return choices[:-1]
        if self.list_mode == "duplicate":
            return [*choices[:-1], {**choices[-1], "index": choices[0]["index"]}]
        if self.list_mode == "swap":
            a, b = choices[0], choices[1]
            return [{**a, "index": 1}, {**b, "index": 0}, *choices[2:]]
        return choices

    def _faulty(self, prefix: list[int], lp: np.ndarray) -> np.ndarray:
        """The distribution after `prefix` as the armed fault answers it."""
        if not self.fault:
            return lp
        if self.fault_trigger and self.fault_trigger not in self.tokenizer.decode(prefix):
            return lp
        lp = lp.copy()
        if self.fault == "all_tiny":
            lp[:] = -1e39
        elif self.fault == "top_labels_only":
            lp[self.label_tokens] = (-20.0, -21.0)
        elif self.fault == "nan":
            lp[self.label_tokens] = float("nan")
        else:  # the labels nearly or wholly without mass, the rest renormalised around them
            value = {"labels_low": -12.0, "labels_-1000": -1000.0}[self.fault]
            rest = np.ones(len(lp), dtype=bool)
            rest[self.label_tokens] = False
            p = np.exp(lp)
            p[rest] *= (1.0 - len(self.label_tokens) * np.exp(value)) / p[rest].sum()
            lp = np.log(np.where(rest, p, 1.0))
            lp[self.label_tokens] = value
        return lp

    def _choice(self, body: dict[str, Any], ids: list[int], index: int) -> dict[str, Any]:
        k = body.get("logprobs")
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        lp = self._faulty(ids, self.model.logprobs(ids))
        sampled = int(np.nanargmax(lp))
        choice: dict[str, Any] = {"index": index, "text": self.tokenizer.decode([sampled])}
        if k is not None:
            key = f"token_id:{sampled}" if as_ids else self.tokenizer.decode([sampled])
            top = self._top(lp, int(k), as_ids, sampled)
            if self.fault == "top_labels_only" and lp[self.label_tokens[0]] == -20.0:
                top = self._top(lp, 0, as_ids, None)
                top.update({self._key(t, as_ids): float(lp[t]) for t in self.label_tokens})
            choice["logprobs"] = {
                "tokens": [key],
                "token_logprobs": [float(lp[sampled])],
                "top_logprobs": [top],
                "text_offset": [0],
            }
        wants_prompt = body.get("prompt_logprobs") is not None or body.get("echo")
        if wants_prompt and self.mode != "no_prompt_logprobs":
            n = body.get("prompt_logprobs") or body.get("logprobs") or 0
            entries: list[Any] = [None]
            for i in range(1, len(ids)):
                at = self._faulty(ids[:i], self.model.logprobs(ids[:i]))
                top = np.argsort(-at)[: int(n)]
                entries.append(
                    {
                        str(int(t)): {"logprob": float(at[t]), "rank": r + 1, "decoded_token": ""}
                        for r, t in enumerate([ids[i], *[int(x) for x in top if x != ids[i]]])
                    }
                )
            choice["prompt_logprobs"] = entries
        return choice
