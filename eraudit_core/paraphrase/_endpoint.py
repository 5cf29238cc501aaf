"""Paraphrases from an OpenAI-compatible chat endpoint: the real path for strong generators.

HTTP goes through the project's one OpenAI-compatible client (`eraudit_core.openai_http`:
pooled connections, timeouts, retries with backoff and Retry-After, a request budget), the same
one the served verifier uses; its behaviour is tested against a real loopback server.

The prompt is the project's own (`PARAPHRASE_SYSTEM_PROMPT`): it states the meaning-preservation
rules of the ER-Audit paper (appendix D.3) and asks for a JSON list of strings. Only the
question is sent, never the answer options.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.openai_http import EndpointError, OpenAIClient, check_base_url
from eraudit_core.paraphrase._registry import register_generator

__all__ = ["EndpointError", "EndpointParaphraseGenerator", "parse_paraphrase_list"]

ENDPOINT_VERSION = "1"
PROMPT_VERSION = "1"

PARAPHRASE_SYSTEM_PROMPT = """You write paraphrases of a reading-comprehension question for an \
audit of a verifier model. Rules:
1. Use the question as the only source. Do not answer it, do not add context, examples, \
outside references or clues, and do not hint at any answer.
2. Preserve the meaning exactly: the same target, premises, scope, referents, attribution, \
names, numbers, quotations, negations and logical relations. Do not narrow or widen what is \
asked, do not turn a hypothesis into a fact, and keep any ambiguity or error of the original.
3. Vary the wording and the sentence structure naturally: reorder clauses, move attribution or \
temporal clauses, change voice or the interrogative form. Do not rely on a template and do not \
only swap synonyms.
4. Each paraphrase is one complete question on its own, different from the original and from \
the others.
Output only a JSON array of strings, one paraphrase each, with no labels, explanations or \
answers."""

USER_TEMPLATE = "Write {k} different paraphrases of this question.\n\nQuestion: {question}"


def prompt_fingerprint() -> str:
    """Short hash of the prompt texts, stored with the settings so prompt edits are visible."""
    payload = (PARAPHRASE_SYSTEM_PROMPT + "\x00" + USER_TEMPLATE).encode("utf-8")
    return hashlib.sha256(payload).hexdigest()[:12]


def parse_paraphrase_list(content: str) -> list[str]:
    """The paraphrases in a model reply: a JSON array of strings (code fences tolerated), else
    one per non-empty line with list numbering or bullets removed."""
    text = content.strip()
    fenced = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.S)
    if fenced:
        text = fenced.group(1)
    start, end = text.find("["), text.rfind("]")
    if start >= 0 and end > start:
        try:
            items = json.loads(text[start : end + 1])
        except json.JSONDecodeError:
            items = None
        if isinstance(items, list) and all(isinstance(i, str) for i in items):
            return [i.strip() for i in items if i.strip()]
    lines = []
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s*", "", line).strip().strip('"').strip()
        if line and not line.startswith(("[", "]", "```")):
            lines.append(line)
    return lines


@register_generator("endpoint", offline=False)
class EndpointParaphraseGenerator:
    """An OpenAI-compatible chat endpoint (vLLM, llama.cpp server, hosted APIs) with our prompt."""

    kind = "endpoint"
    version = ENDPOINT_VERSION

    def __init__(
        self,
        base_url: str,
        model: str,
        name: str = "endpoint",
        api_key_env: str | None = "OPENAI_API_KEY",
        temperature: float = 1.0,
        batch_size: int = 20,
        max_requests: int = 100,
        max_retries: int = 4,
        timeout_s: float = 60.0,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        base_url = check_base_url(base_url, "endpoint generator")
        if not model:
            raise InputError("endpoint generator: model must be named")
        for label, value in (("batch_size", batch_size), ("max_requests", max_requests)):
            if int(value) < 1:
                raise InputError(f"endpoint generator: {label} must be >= 1, got {value!r}")
        if max_retries < 0 or timeout_s <= 0 or backoff_s < 0:
            raise InputError("endpoint generator: max_retries, backoff_s >= 0 and timeout_s > 0")
        if not 0.0 <= temperature <= 2.0:
            raise InputError(
                f"endpoint generator: temperature must lie in [0, 2], got {temperature}"
            )
        self.base_url = base_url
        self.model = model
        self._name = name
        self.api_key_env = api_key_env
        self.temperature = float(temperature)
        self.batch_size = int(batch_size)
        self.max_requests = int(max_requests)
        self.max_retries = int(max_retries)
        self.timeout_s = float(timeout_s)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self._client = OpenAIClient(
            base_url,
            api_key_env=api_key_env,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
            max_backoff_s=self.max_backoff_s,
            jitter=False,  # one request at a time: the plain doubling is easier to reason about
            max_connections=1,
            max_requests=self.max_requests,
            sleep=sleep,
            what="endpoint generator",
        )

    @property
    def requests_made(self) -> int:
        return self._client.traffic().requests

    @property
    def name(self) -> str:
        return self._name

    def settings(self) -> dict[str, Any]:
        """Settings for provenance; the key's variable name is recorded, never its value."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "temperature": self.temperature,
            "batch_size": self.batch_size,
            "max_requests": self.max_requests,
            "max_retries": self.max_retries,
            "timeout_s": self.timeout_s,
            "prompt_version": PROMPT_VERSION,
            "prompt_sha": prompt_fingerprint(),
        }

    def generate(self, pair_id: str, question: str, n: int) -> list[str]:
        """Ask in batches of `batch_size` until `n` distinct texts arrive or a batch adds none."""
        out: list[str] = []
        seen: set[str] = set()
        while len(out) < n:
            k = min(self.batch_size, n - len(out))
            batch = self._complete(question, k)
            fresh = [t for t in batch if t not in seen]
            if not fresh:
                break
            for t in fresh:
                seen.add(t)
                out.append(t)
        return out[:n]

    def _complete(self, question: str, k: int) -> list[str]:
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": PARAPHRASE_SYSTEM_PROMPT},
                {"role": "user", "content": USER_TEMPLATE.format(k=k, question=question)},
            ],
            "temperature": self.temperature,
        }
        reply = self._client.post(
            "/chat/completions", body, what=f"{k} paraphrases from model {self.model}"
        )
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise EndpointError(
                f"{self.base_url}: malformed chat response, no choices[0].message.content "
                f"({str(reply)[:200]})"
            ) from exc
        if not isinstance(content, str):
            raise EndpointError(f"{self.base_url}: message content is not text: {content!r:.200}")
        return parse_paraphrase_list(content)
