"""Reading exact label log-probs from a completions server, several prompts to a request.

Why its own module: how prompts are grouped into requests, and how a reply's choices are
matched back to the prompts that asked for them, is one concern apart from what a served
checkpoint is (`_verifier`, `_handshake`) and what one answer means (`_wire`).

`batch=N` puts up to N prompts into one `/completions` request as a list (vLLM's
CompletionRequest takes `prompt: list[list[int]] | list[str]`, and numbers its `choices` by
the prompt's position when n=1, one choice per prompt). A choice is matched to its prompt by its
`index`, never by its place in the list: the reply must hold exactly one choice for each index
0..N-1, else the request is refused with a clear error. Each of the `concurrency` requests in
flight carries its own group, so batch=8 with concurrency=8 keeps up to 64 prompts in flight.

Servers that refuse a list (llama-cpp-python 0.3.36 answers HTTP 500: its server asserts a
list holds at most one prompt) or answer it wrongly are found once, at connect
(`list_prompt_refusal`), and then get one prompt a request.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.openai_http import EndpointError, OpenAIClient
from eraudit_core.verifier._answer_check import check_top_k
from eraudit_core.verifier.served import _wire as wire


@dataclass(frozen=True)
class PromptItem:
    """One rendered prompt: its local token ids, its text and how errors name it."""

    ids: list[int]
    text: str
    where: str
    key: Any = None  # (prompt hash, order) of a scored prompt: `on_top` remembers it by this


class ChoiceMismatch(EndpointError):
    """A reply whose choices do not match the prompts of the request one to one."""


def request_prompt(prompts: Sequence[wire.Prompt]) -> wire.Prompts:
    """One prompt as itself (the format every server takes), several as a list."""
    return prompts[0] if len(prompts) == 1 else list(prompts)  # type: ignore[return-value]


def split_reply(resp: Any, n: int, where: str) -> list[Any]:
    """The reply to a request of `n` prompts as `n` one-choice replies, in prompt order.

    Each choice goes to the prompt its `index` names; the reply must hold exactly one choice for
    each of 0..n-1 (a server that answers only the first prompt, drops or repeats an index is
    refused, never matched by order)."""
    if n == 1:
        return [resp]
    choices = resp.get("choices") if isinstance(resp, Mapping) else None
    if not isinstance(choices, list):
        raise EndpointError(f"{where}: malformed completion, no choices ({str(resp)[:200]})")
    if len(choices) != n:
        raise ChoiceMismatch(
            f"{where}: the server answered {len(choices)} choices for {n} prompts sent in one "
            "request (it does not score a list of prompts one choice each)"
        )
    by_index: dict[int, Any] = {}
    repeated: set[int] = set()
    for pos, choice in enumerate(choices):
        index = choice.get("index") if isinstance(choice, Mapping) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
            raise ChoiceMismatch(
                f"{where}: choices[{pos}] has index {index!r}; a request of {n} prompts needs "
                f"each of 0..{n - 1} once"
            )
        if index in by_index:
            repeated.add(index)
        by_index[index] = choice
    if repeated:
        missing = sorted(set(range(n)) - set(by_index))
        raise ChoiceMismatch(
            f"{where}: choice index {', '.join(map(str, sorted(repeated)))} appears more than "
            f"once and {', '.join(map(str, missing))} not at all among the {n} choices: the "
            "answers cannot be matched to the prompts"
        )
    return [{"choices": [by_index[i]]} for i in range(n)]


def _top_gap(a: Mapping[str, float], b: Mapping[str, float]) -> float | None:
    """Largest |difference| over the tokens two top-k lists share, or None when their top
    tokens differ (two different prompts' answers)."""
    if not a or not b or max(a, key=a.__getitem__) != max(b, key=b.__getitem__):
        return None
    return max(abs(a[k] - b[k]) for k in a.keys() & b.keys())


class LabelReader:
    """(l_A, l_B) of rendered prompts: next-token top-k first, prompt log-probs for labels not
    in it, `batch` prompts a request and `concurrency` requests in flight.

    What connect learns about the server is set on it (`token_ids`, `max_model_len`,
    `label_texts`, `batch`: the prompts a request actually gets). Counters are cumulative for
    the live panel: `traffic()` tells prompts and requests apart."""

    def __init__(
        self,
        client: OpenAIClient,
        model: str,
        *,
        top_k: int,
        method: str,
        concurrency: int,
        labels: tuple[str, str],
        label_ids: list[list[int]],
        label_pieces: list[list[str]],
        vocab_size: int,
    ) -> None:
        self.client = client
        self.server = wire.server_address(client.base_url)
        self.model = model
        self.top_k = top_k
        self.method = method
        self.labels = labels
        self.label_ids = label_ids
        self.label_pieces = label_pieces
        self.vocab_size = vocab_size
        # {(prompt hash, order): is a label the most likely next token}, for every scored
        # prompt whose top-k was read (the per-prompt label check's second signal)
        self.on_top: dict[Any, bool] = {}
        self.token_ids = True
        self.max_model_len: int | None = None
        self.label_texts: list[str | None] = [None, None]
        self.batch = 1
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="served")
        self._lock = threading.Lock()
        self._prompts_done = 0
        self._prompts_in_flight = 0
        self._fallbacks = 0

    @property
    def single_token_labels(self) -> bool:
        return all(len(ids) == 1 for ids in self.label_ids)

    def counts(self) -> dict[str, int]:
        """Prompts scored, prompts whose requests are in flight, labels read by prompt
        log-probs (cumulative)."""
        with self._lock:
            return {
                "prompts": self._prompts_done,
                "prompts_in_flight": self._prompts_in_flight,
                "fallbacks": self._fallbacks,
            }

    def prompt_for(self, item: PromptItem) -> wire.Prompt:
        return item.ids if self.token_ids else item.text

    def _check_length(self, item: PromptItem) -> None:
        if self.max_model_len is not None and len(item.ids) + 1 > self.max_model_len:
            raise InputError(
                f"{self._where(item)}: the prompt is {len(item.ids)} tokens; with the one generated "
                f"token it exceeds the server's context of {self.max_model_len} tokens"
            )

    @staticmethod
    def _check_count(reply: Any, items: Sequence[PromptItem], where: str) -> None:
        """usage.prompt_tokens against the local count (summed over the prompts of a batched
        request, which is what vLLM reports)."""
        got = wire.prompt_tokens(reply)
        expected = sum(len(it.ids) for it in items)
        if got is not None and got != expected:
            raise InputError(
                f"{where}: the server evaluated {got} prompt tokens where the local tokenizer "
                f"has {expected}: it tokenises the prompt differently (or adds a BOS token)"
            )

    def _name(self, items: Sequence[PromptItem]) -> str:
        if len(items) == 1:
            return self._where(items[0])
        return (
            f"server {self.server}: {len(items)} prompts in one request, {items[0].where} to "
            f"{items[-1].where}"
        )

    def _where(self, item: PromptItem) -> str:
        """The prompt, and the server that answered it (HOST:PORT)."""
        return f"server {self.server}: {item.where}"

    def _post(self, items: Sequence[PromptItem], body: dict[str, Any], **kw: Any) -> list[Any]:
        where = self._name(items)
        for it in items:
            self._check_length(it)
        reply = self.client.post("/completions", body, what=where, **kw)
        replies = split_reply(reply, len(items), where)  # first: a short reply has short usage
        self._check_count(reply, items, where)
        return replies

    def next_token_tops(self, items: Sequence[PromptItem], **kw: Any) -> list[dict[str, float]]:
        """The next-token top-k of each prompt, all in one request."""
        prompt = request_prompt([self.prompt_for(it) for it in items])
        replies = self._post(items, wire.next_token_body(self.model, prompt, self.top_k), **kw)
        tops = []
        for r, it in zip(replies, items, strict=True):
            top = wire.top_logprobs(r, self._where(it))
            check_top_k(top, self.vocab_size, self._where(it))
            tops.append(top)
        return tops

    def continuations(
        self, items: Sequence[PromptItem], conts: Sequence[tuple[list[int], str, list[str]]]
    ) -> list[tuple[float, str]]:
        """Summed prompt log-prob of each continuation (token ids, text, echoed pieces) after
        its prompt, all in one request, and the dialect that answered."""
        full = [
            PromptItem(it.ids + ids, it.text + text, it.where)
            for it, (ids, text, _) in zip(items, conts, strict=True)
        ]
        prompt = request_prompt([self.prompt_for(it) for it in full])
        replies = self._post(full, wire.prompt_logprob_body(self.model, prompt))
        return [
            wire.read_prompt_logprobs(r, len(it.ids), ids, pieces, self._where(it))
            for r, it, (ids, _, pieces) in zip(replies, items, conts, strict=True)
        ]

    def _group(self, items: Sequence[PromptItem]) -> list[tuple[float, float]]:
        """(l_A, l_B) for a group of at most `batch` prompts: one next-token request, then
        prompt log-probs (up to `batch` a request) for the labels it did not give."""
        n = len(items)
        with self._lock:
            self._prompts_in_flight += n
        try:
            values: list[list[float | None]] = [[None, None] for _ in items]
            if self.method == "auto" and self.single_token_labels:
                tops = self.next_token_tops(items)
                values = [wire.labels_in_top(t, self.label_ids, self.label_texts) for t in tops]
                self._remember_tops(items, tops)
            missing = [(i, li) for i in range(n) for li in (0, 1) if values[i][li] is None]
            for start in range(0, len(missing), self.batch):
                chunk = missing[start : start + self.batch]
                got = self.continuations(
                    [
                        PromptItem(items[i].ids, items[i].text, f"{items[i].where}, label {li}")
                        for i, li in chunk
                    ],
                    [
                        (self.label_ids[li], " " + self.labels[li], self.label_pieces[li])
                        for _, li in chunk
                    ],
                )
                for (i, li), (value, _) in zip(chunk, got, strict=True):
                    values[i][li] = value
            with self._lock:
                self._fallbacks += len(missing)
                self._prompts_done += n
            return [
                wire.check_label_logprobs(v, self._where(it))  # type: ignore[arg-type]
                for v, it in zip(values, items, strict=True)
            ]
        finally:
            with self._lock:
                self._prompts_in_flight -= n

    def read(
        self, items: Sequence[PromptItem]
    ) -> tuple[dict[int, tuple[float, float]], BaseException | None]:
        """(l_A, l_B) for each item that finished, all groups in flight together (up to
        `concurrency`); on a failure no new request is sent, those already sent finish, and
        the first error is returned with them."""
        groups = [
            list(range(s, min(s + self.batch, len(items))))
            for s in range(0, len(items), self.batch)
        ]
        futures: dict[Future[list[tuple[float, float]]], list[int]] = {
            self._pool.submit(self._group, [items[j] for j in g]): g for g in groups
        }
        out: dict[int, tuple[float, float]] = {}
        error: BaseException | None = None
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                try:
                    out.update(zip(futures[fut], fut.result(), strict=True))
                except BaseException as exc:  # stop sending more; keep what finishes
                    if error is None:
                        error = exc
                        for other in pending:
                            other.cancel()
        return out, error

    def _remember_tops(self, items: Sequence[PromptItem], tops: Sequence[dict[str, float]]) -> None:
        """Keep, per scored prompt, whether its most likely next token is a label."""
        for it, top in zip(items, tops, strict=True):
            if it.key is None or not top:
                continue
            first = max(top, key=lambda k: top[k])
            hits = wire.labels_in_top({first: top[first]}, self.label_ids, self.label_texts)
            with self._lock:
                self.on_top[it.key] = any(h is not None for h in hits)

    def list_prompt_refusal(self, first: PromptItem, second: PromptItem) -> str | None:
        """None when the server answers a list of two prompts with one choice each, the second
        equal to what it answers that prompt alone; else why not (then: one prompt a request).

        `first` and `second` should differ (their top tokens), so a server that answers the
        first prompt twice, or swaps the indexes, is caught."""
        alone = self.next_token_tops([second])[0]
        pair = [first, second]
        try:  # one attempt: llama-cpp-python's refusal is a 500, which is not worth retrying
            tops = self.next_token_tops(pair, retries=0)
        except ChoiceMismatch as exc:
            return str(exc)
        except EndpointError as exc:
            if exc.status in wire.REFUSAL_STATUS:
                return f"it answered a list of two prompts with HTTP {exc.status}"
            tops = self.next_token_tops(pair)  # busy (429, 503...): retry as usual
        gap = _top_gap(tops[1], alone)
        if gap is None or gap > wire.ALIGNMENT_TOLERANCE_NATS:
            shown = "other top tokens" if gap is None else f"a gap of {gap:.3f} nats"
            return (
                "in a list of two prompts, the answer indexed as the second differs from that "
                f"prompt's answer alone ({shown}): the choices' indexes cannot be trusted"
            )
        return None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
