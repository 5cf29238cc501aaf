"""A checkpoint served by an OpenAI-compatible server (vLLM, llama-cpp-python) as a verifier.

Prompts are rendered and encoded locally with the spec's tokenizer, exactly as the local
backend does (docs/design.md §3), and sent as token ids where the server takes them (vLLM) or as
text where it does not (llama-cpp-python), after checking once per checkpoint that the
server's tokenizer gives the same ids (`_handshake`). Label log-probabilities are exact, never
guessed: read from the next-token top-k when a label is in it, else from the prompt log-probs
of prompt + label (`_wire`). Many requests are in flight at once (`concurrency`), each carrying
up to `batch` prompts (`_batching`), and the questions of one `score` call are scored together.

Identity (`fingerprint`): the server URL, the served model name and the path it reports, the
tokenizer digest, the chat template, the prompt template, answer prefix and labels, and an
optional `revision`. The same URL and name can serve other weights after a restart, so every
load also scores a fixed probe question; its log-probs are stored when the checkpoint is first
registered and compared on every later load (`check_registration`): a server that now answers
differently is refused before any cached score is reused.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from eraudit_core.errors import IncompleteScores, InputError
from eraudit_core.types import Query, QueryScore
from eraudit_core.verifier._answer_check import check_top_k
from eraudit_core.verifier._prompts import PROBE
from eraudit_core.verifier._tokenizer import encode, load_tokenizer
from eraudit_core.verifier.served import _wire as wire
from eraudit_core.verifier.served._handshake import (
    ORDERS,
    PROBE_TOLERANCE_NATS,
    ServedConnection,
    _fmt,
    _gap,
)
from eraudit_core.verifier.served._spec import ServedSpec


class ServedVerifier(ServedConnection):
    """Implements `types.Verifier` over HTTP; `connect()` runs the checks and the probe."""

    io_bound = True  # the engine may score pre and post at the same time

    # -- identity -------------------------------------------------------------------------
    @property
    def fingerprint(self) -> str:
        if not self._fingerprint:
            raise RuntimeError(f"served checkpoint {self.name}: connect() first")
        return self._fingerprint

    def describe(self) -> dict[str, Any]:
        facts = self._require_facts()
        return {
            "name": self.name,
            "spec": self.spec.text,
            "kind": "served",
            "base_url": self.spec.base_url,
            "model": self.spec.model,
            "served_root": facts.root,
            "max_model_len": facts.max_model_len,
            "tokenizer": self._tok.spec.text,
            "tokenizer_source": self._tok.source,
            "api_key_env": self.spec.api_key_env,
            "prompts_sent_as": "token ids" if facts.token_ids else "text",
            "tokenization_checked_with": facts.tokenize_route,
            "label_logprobs": (
                "next-token top-k when both labels are in it, else "
                if self.spec.method == "auto" and self._single_token_labels
                else ""
            )
            + f"prompt log-probs ({facts.prompt_dialect})",
            "echo_alignment_gap_nats": facts.alignment_gap,
            "concurrency": self.spec.concurrency,
            "prompts_per_request": self._reader.batch,
            "prompts_per_request_note": facts.list_note or None,
            "template": self.template,
            "prefix": self.prefix,
            "labels": list(self.labels),
            "label_tokens": self._label_ids,
            "label_handling": (
                "single token each"
                if self._single_token_labels
                else "several tokens: log-probabilities summed"
            ),
            "chat_template": self._tok.chat_template is not None,
            **self.format.describe(),
            "probe_ids_digest": self._probe_ids_digest(),
            "probe": {
                "query": PROBE.question,
                "logprobs": list(self.probe_logprobs or ()),
                "tolerance_nats": PROBE_TOLERANCE_NATS,
                "seconds": round(self.probe_seconds, 3),
            },
            "fingerprint": self.fingerprint,
        }

    def check_registration(self, registered: Mapping[str, Any], registered_at: Any = None) -> None:
        """Refuse when the probe now answers differently from when this fingerprint was
        registered: the server runs other weights under the same name, and cached scores
        would be wrong for it."""
        before = (registered.get("probe") or {}).get("logprobs") or []
        now = list(self.probe_logprobs or ())
        if len(before) != 4 or len(now) != 4:
            return
        gap = _gap(before, now)
        if gap > PROBE_TOLERANCE_NATS:
            when = f" on {registered_at}" if registered_at is not None else ""
            raise InputError(
                f"checkpoint {self.name}: the server at {self.spec.base_url} now serves "
                f"different weights under {self.spec.model!r} than when fingerprint "
                f"{self.fingerprint} was registered{when}: the probe question's label "
                f"log-probs moved by {gap:.3f} nats (tolerance {PROBE_TOLERANCE_NATS}; "
                f"registered {_fmt(before)}, now {_fmt(now)}). Its cached scores belong to the "
                "old weights. If the weights changed on purpose, add ;revision=NAME to the spec "
                "to start a new cache."
            )

    def traffic(self) -> dict[str, int]:
        """For the live panel: `in_flight` counts HTTP requests in flight (each carries up to
        `batch` prompts), `prompts_in_flight` the prompts in them; `requests`, `retries`,
        `failures`, `prompts` (scored) and `fallbacks` (labels read by prompt log-probs) are
        cumulative."""
        t = self._client.traffic()
        return {
            "in_flight": t.in_flight,
            "requests": t.requests,
            "retries": t.retries,
            "failures": t.failures,
            **self._reader.counts(),
        }

    # -- scoring --------------------------------------------------------------------------
    def score(self, queries: Sequence[Query]) -> list[QueryScore]:
        """Scores in the order given; every prompt of the call is in flight together (up to
        `concurrency` requests of `batch` prompts). On a failure, `IncompleteScores` carries the queries that did finish."""
        from eraudit_core.verifier._kernels import scores_from_logprobs

        keys = [q.prompt_hash for q in queries]
        todo: dict[str, Query] = {}
        for k, q in zip(keys, queries, strict=True):
            if k not in self._memo and k not in todo:
                todo[k] = q
        jobs = [
            (q, o) for q in todo.values() for o in (0, 1) if (q.prompt_hash, o) not in self._orders
        ]
        texts = [self.render(q)[o] for q, o in jobs]
        got, error = self._score_prompts(jobs, texts)
        for j, values in got.items():
            q, o = jobs[j]
            self._orders[(q.prompt_hash, o)] = values
        import torch

        complete = [
            (k, q) for k, q in todo.items() if (k, 0) in self._orders and (k, 1) in self._orders
        ]
        if complete:
            lp = torch.tensor(
                [[self._orders[(k, 0)], self._orders[(k, 1)]] for k, _ in complete],
                dtype=torch.float32,
            )
            for (k, _), s in zip(complete, scores_from_logprobs(lp), strict=True):
                self._memo[k] = s
        if error is not None:
            done = {i: self._memo[k] for i, k in enumerate(keys) if k in self._memo}
            raise IncompleteScores(
                f"served checkpoint {self.name}: {len(done)} of {len(keys)} questions scored "
                f"before a request failed: {error}",
                done,
            ) from error
        return [self._memo[k] for k in keys]

    def forget(self, queries: Sequence[Query]) -> None:
        """Drop what this process kept of `queries` (scores, label reads, top flags): answers
        the answer check refused are asked again, so a server that heals is heard."""
        for q in queries:
            self._memo.pop(q.prompt_hash, None)
            for o in (0, 1):
                self._orders.pop((q.prompt_hash, o), None)
                self._reader.on_top.pop((q.prompt_hash, o), None)

    def knows_top(self, query: Query) -> bool:
        """Whether both answer orders of `query` were scored here with their top-k read."""
        return all((query.prompt_hash, o) in self._reader.on_top for o in (0, 1))

    def top_is_label(self, queries: Sequence[Query]) -> list[bool]:
        """For each prompt (both answer orders of each query): is the server's most likely next
        token a label? Read from the top-k that scored the prompt when there was one, else
        one next-token request a prompt; a label of several tokens never counts (the label
        check's second signal, `_label_mass.py`, `_answer_check.py`)."""
        facts = self._require_facts()
        out: list[bool] = []
        for q in queries:
            for o, text in enumerate(self.render(q)):
                known = self._reader.on_top.get((q.prompt_hash, o))
                if known is not None:
                    out.append(known)
                    continue
                prompt: Any = encode(self._tok.tokenizer, [text])[0] if facts.token_ids else text
                where = f"served checkpoint {self.name}: pair {q.pair_id} order {ORDERS[o]}"
                top = wire.top_logprobs(
                    self._client.post(
                        "/completions",
                        wire.next_token_body(self.spec.model, prompt, self.spec.top_k),
                        what=where,
                    ),
                    where,
                )
                check_top_k(top, self._reader.vocab_size, where)
                first = max(top, key=lambda k: top[k])
                hits = wire.labels_in_top({first: top[first]}, self._label_ids, self._texts())
                out.append(any(h is not None for h in hits))
        return out

    def close(self) -> None:
        self._reader.close()
        self._client.close()


_VERIFIERS: dict[tuple[Any, ...], ServedVerifier] = {}
_VERIFIERS_LOCK = threading.Lock()


def load_served(
    spec: ServedSpec,
    *,
    template: str,
    prefix: str,
    labels: tuple[str, str],
    trust_remote_code: bool = False,
    readout: str | None = None,
    system: str | None = None,
    today: dt.date | None = None,
) -> ServedVerifier:
    """A connected served verifier (one object per process and spec, so what it has scored
    is not asked again); every call re-runs the probe against the server."""
    if spec.api_key_env:
        import os

        if not os.environ.get(spec.api_key_env):
            raise InputError(
                f"served checkpoint {spec.text}: the environment variable {spec.api_key_env} "
                "(named by api_key_env) is not set"
            )
    if readout:
        spec = spec.with_options(readout=readout)
    key = (spec.text, template, prefix, labels, system, today)
    with _VERIFIERS_LOCK:
        verifier = _VERIFIERS.get(key)
        if verifier is None:
            tokenizer = load_tokenizer(spec.tokenizer_spec, trust_remote_code)
            verifier = ServedVerifier(
                spec, tokenizer, template, prefix, labels, system=system, today=today
            )
            _VERIFIERS[key] = verifier
    verifier.connect()
    return verifier
