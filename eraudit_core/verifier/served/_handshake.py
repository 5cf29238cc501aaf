"""Connecting to a served checkpoint: the client, the prompts and the load-time handshake.

Why its own module: what one load learns about the server (model name, token-id or text
prompts, the tokenization check, the log-prob dialect and its alignment, whether a request may
carry a list of prompts) and the probe it scores every time are one concern, apart from what
the checkpoint reports and how a run's questions are scored (`_verifier`). The facts are
checked once per process and checkpoint (`_FACTS`); the probe on every `connect()`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.openai_http import EndpointError, OpenAIClient
from eraudit_core.types import Query, QueryScore
from eraudit_core.verifier._chat import chat_format, ids_digest
from eraudit_core.verifier._probes import PROBE_SET
from eraudit_core.verifier._prompts import PROBE, render_prompts
from eraudit_core.verifier._tokenizer import (
    LocalTokenizer,
    check_labels,
    encode,
    label_token_ids,
)
from eraudit_core.verifier.served import _checks as checks
from eraudit_core.verifier.served import _wire as wire
from eraudit_core.verifier.served._batching import LabelReader, PromptItem
from eraudit_core.verifier.served._spec import ServedSpec

log = logging.getLogger(__name__)

# Largest |probe log-prob difference| (nats) accepted between a load and the registration.
# llama.cpp shifts a label log-prob by up to 0.08 nats depending on what its KV cache held
# (measured here); the demo's adapted arms differ from the base by 1.3-4.6 nats on the probe.
PROBE_TOLERANCE_NATS = 0.1
ALIGNMENT_TOLERANCE_NATS = wire.ALIGNMENT_TOLERANCE_NATS
ORDERS = ("AB", "BA")


@dataclass
class _ServerFacts:
    """What one load learnt about the server (cached per process and checkpoint)."""

    cards: list[str]
    root: str | None
    max_model_len: int | None
    token_ids: bool
    id_keys: bool
    tokenize_route: str | None
    prompt_dialect: str
    alignment_gap: float | None
    # Does the server score a list of prompts one choice each? None: not asked yet (only a
    # spec with batch > 1 asks); the note says why not.
    list_prompts: bool | None = None
    list_note: str = ""
    checked_at: float = field(default_factory=time.time)


_FACTS: dict[tuple[str, str, str], _ServerFacts] = {}
_FACTS_LOCK = threading.Lock()


class ServedConnection:
    """A served checkpoint's client, prompt rendering and `connect()` (the checks and the
    probe); `ServedVerifier` adds what it reports and how it scores."""

    def __init__(
        self,
        spec: ServedSpec,
        tokenizer: LocalTokenizer,
        template: str,
        prefix: str,
        labels: tuple[str, str],
        *,
        readout: str | None = None,
        system: str | None = None,
        today: dt.date | None = None,
    ) -> None:
        self.spec = spec
        self.format = chat_format(
            tokenizer.tokenizer,
            name=spec.text,
            model_type=tokenizer.model_type,
            readout=readout or spec.readout or None,
            system=system,
            today=today,
        )
        self.template = template
        self.prefix = prefix
        self.labels = labels
        self._tok = tokenizer
        self._label_ids = label_token_ids(tokenizer.tokenizer, labels)
        label_pieces = [
            [str(tokenizer.tokenizer.decode([t])) for t in ids] for ids in self._label_ids
        ]
        self._label_texts: list[str | None] | None = None
        self._client = OpenAIClient(
            spec.base_url,
            api_key_env=spec.api_key_env,
            timeout_s=spec.timeout,
            max_retries=spec.retries,
            max_connections=spec.concurrency,
            what=f"served checkpoint {spec.base_url}#{spec.model}",
        )
        self._reader = LabelReader(
            self._client,
            spec.model,
            top_k=spec.top_k,
            method=spec.method,
            concurrency=spec.concurrency,
            labels=labels,
            label_ids=self._label_ids,
            label_pieces=label_pieces,
            vocab_size=len(tokenizer.tokenizer),
        )
        self._facts: _ServerFacts | None = None
        self._fingerprint = ""
        self.probe_logprobs: tuple[float, float, float, float] | None = None
        self.probe_seconds = 0.0
        self._memo: dict[str, QueryScore] = {}
        self._orders: dict[tuple[str, int], tuple[float, float]] = {}

    # -- identity -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.spec.text

    def _make_fingerprint(self) -> str:
        facts = self._require_facts()
        payload = {
            "kind": "served",
            "base_url": self.spec.base_url,
            "model": self.spec.model,
            "root": facts.root,
            "revision": self.spec.revision,
            "tokenizer": self._tok.digest,
            "chat_template": self._tok.chat_template,
            "template": self.template,
            "prefix": self.prefix,
            "labels": list(self.labels),
            "format": self.format.identity(),
            "probe_ids": self._probe_ids_digest(),
        }
        text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    # -- prompts --------------------------------------------------------------------------
    @property
    def _single_token_labels(self) -> bool:
        return self._reader.single_token_labels

    def render(self, query: Query) -> tuple[str, str]:
        tok = self._tok.tokenizer
        return render_prompts(
            query,
            self.template,
            self.prefix,
            chat=lambda m: self.format.wrap(tok, m),
            labels=self.labels,
        )

    def _probe_ids_digest(self) -> str:
        texts = [t for q in PROBE_SET for t in self.render(q)]
        ids = encode(self._tok.tokenizer, texts)
        return ids_digest([ids[i : i + 2] for i in range(0, len(ids), 2)])

    def _require_facts(self) -> _ServerFacts:
        if self._facts is None:
            raise RuntimeError(f"served checkpoint {self.name}: connect() first")
        return self._facts

    # -- connecting -----------------------------------------------------------------------
    def connect(self) -> None:
        """Check the server (model name, prompts, tokenization, log-prob dialect) and score
        the probe. Facts about the server are checked once per process; the probe every time."""
        where = f"served checkpoint {self.name}"
        probe_text = self.render(PROBE)
        check_labels(self._tok.tokenizer, where, self.labels, self._label_ids, probe_text[0])
        key = (self.spec.base_url, self.spec.model, self._tok.digest)
        with _FACTS_LOCK:
            facts = _FACTS.get(key)
        cards = self._models(where)
        card = next((c for c in cards if c["id"] == self.spec.model), None)
        if card is None:
            names = ", ".join(repr(c["id"]) for c in cards) or "none"
            raise InputError(
                f"{where}: the server serves {names}, not {self.spec.model!r} (llama.cpp would "
                "silently answer with its own model, so the name is checked here); give one of "
                "the served names after '#'"
            )
        root = card.get("root") if isinstance(card.get("root"), str) else None
        if facts is None or facts.root != root:
            facts = self._learn(where, card, probe_text)
            with _FACTS_LOCK:
                _FACTS[key] = facts
        self._facts = facts
        self._fingerprint = self._make_fingerprint()
        if not facts.id_keys and self._label_texts is None:
            self._label_texts = self._unambiguous_label_texts()
        self._configure_reader(facts)
        if self.spec.batch > 1 and facts.list_prompts is None:
            self._check_list_prompts(where, facts, probe_text[0])
            self._configure_reader(facts)
        t0 = time.monotonic()
        self._cold_request()
        got, error = self._score_prompts([(PROBE, 0), (PROBE, 1)], probe_text)
        if error is not None:
            raise error
        lp = [got[0], got[1]]
        self.probe_seconds = time.monotonic() - t0
        probe = (lp[0][0], lp[0][1], lp[1][0], lp[1][1])
        if (
            self.probe_logprobs is not None
            and _gap(self.probe_logprobs, probe) > PROBE_TOLERANCE_NATS
        ):
            self._memo.clear()  # the server changed under us: forget what it answered before
            self._orders.clear()
            self._reader.on_top.clear()
        self.probe_logprobs = probe

    def _models(self, where: str) -> list[Mapping[str, Any]]:
        return wire.model_cards(self._client.get("/models", what="list the served models"), where)

    def _configure_reader(self, facts: _ServerFacts) -> None:
        """Tell the reader what connect learnt: prompt form, context, label keys, batch."""
        r = self._reader
        r.token_ids, r.max_model_len, r.label_texts = (
            facts.token_ids,
            facts.max_model_len,
            self._texts(),
        )
        r.batch = self.spec.batch if facts.list_prompts else 1

    def _check_list_prompts(self, where: str, facts: _ServerFacts, probe_text: str) -> None:
        """Ask once whether the server scores a list of prompts one choice each (the cold
        prompt and the probe: different answers, so swapped indexes show); if not, every
        request carries one prompt, and describe() says why."""
        items = [
            PromptItem(encode(self._tok.tokenizer, [t])[0], t, name)
            for t, name in (("\n", "the cold prompt"), (probe_text, "the probe prompt"))
        ]
        note = self._reader.list_prompt_refusal(*items)
        facts.list_prompts = note is None
        if note is not None:
            facts.list_note = (
                "the server does not score several prompts in one request, so each request "
                f"carries one prompt: {note}"
            )
            log.warning("%s (batch=%d): %s", where, self.spec.batch, facts.list_note)

    def _cold_request(self) -> None:
        """One unrelated one-token request, so the probe never extends what the server's
        cache last held (llama.cpp's answers shift slightly when a prompt is a prefix of the
        previous one)."""
        text = "\n"
        prompt = self._reader.prompt_for(
            PromptItem(encode(self._tok.tokenizer, [text])[0], text, "cold")
        )
        body = {"model": self.spec.model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0}
        self._client.post("/completions", body, what="a cold-cache request before the probe")

    def _learn(
        self, where: str, card: Mapping[str, Any], probe_text: tuple[str, str]
    ) -> _ServerFacts:
        tok = self._tok.tokenizer
        ids = encode(tok, [probe_text[0]])[0]
        max_len = card.get("max_model_len")
        max_len = int(max_len) if isinstance(max_len, int) else None
        # Token-id prompts: vLLM takes them; llama-cpp-python refuses them with a 500.
        token_ids = True
        body = wire.next_token_body(self.spec.model, ids, self.spec.top_k)
        what = "the probe prompt as token ids"
        try:
            try:  # one attempt: a refusal (llama-cpp-python answers 500) must not be retried
                reply = self._client.post("/completions", body, retries=0, what=what)
            except EndpointError as exc:
                if exc.status in wire.REFUSAL_STATUS:
                    raise
                reply = self._client.post("/completions", body, what=what)  # busy: retry
            top = wire.top_logprobs(reply, where)
            if wire.prompt_tokens(reply) not in (None, len(ids)):
                token_ids = False
        except EndpointError as exc:
            if exc.status not in wire.REFUSAL_STATUS:
                raise
            token_ids = False
        route = None
        if not token_ids:
            route = self._check_tokenization(
                where, [*probe_text, probe_text[0] + " " + self.labels[0]]
            )
            reply = self._client.post(
                "/completions",
                wire.next_token_body(self.spec.model, probe_text[0], self.spec.top_k),
                what="the probe prompt as text",
            )
            top = wire.top_logprobs(reply, where)
        id_keys = wire.keyed_by_id(top)
        if not id_keys:
            self._label_texts = self._unambiguous_label_texts()
        facts = _ServerFacts(
            cards=[str(card["id"])],
            root=card.get("root") if isinstance(card.get("root"), str) else None,
            max_model_len=max_len,
            token_ids=token_ids,
            id_keys=id_keys,
            tokenize_route=route,
            prompt_dialect="",
            alignment_gap=None,
        )
        self._facts = facts
        self._configure_reader(facts)
        # Prompt log-probs of probe + one token: which dialect answers, and is it aligned with
        # the next-token values? The token is a label when one is in the top-k, else the top-1.
        ref = self._reference_token(top, probe_text[0])
        if ref is None:
            raise InputError(
                f"{where}: no token of the probe's top-{self.spec.top_k} can be identified "
                "(neither label is in it and the top token's text is ambiguous), so the prompt "
                "log-probs cannot be checked for alignment; raise top_k"
            )
        cont_ids, cont_text, pieces, expected, shown = ref
        [(value, dialect)] = self._reader.continuations(
            [PromptItem(ids, probe_text[0], f"{where} (probe + {shown!r})")],
            [(cont_ids, cont_text, pieces)],
        )
        facts.prompt_dialect = dialect
        facts.alignment_gap = abs(value - expected)
        # NaN compares false with any tolerance: a gap that is not finite is misaligned too
        if not facts.alignment_gap <= ALIGNMENT_TOLERANCE_NATS:
            raise InputError(
                f"{where}: the server's prompt log-probs ({dialect}) are misaligned: token "
                f"{shown!r} after the probe prompt reads {value:.4f} there but {expected:.4f} as "
                f"the next token (gap {facts.alignment_gap:.3f} nats > "
                f"{ALIGNMENT_TOLERANCE_NATS}). llama-cpp-python's echo is aligned only when the "
                "prompt starts with the BOS token; use another server or chat template"
            )
        return facts

    def _reference_token(
        self, top: Mapping[str, float], prompt_text: str
    ) -> tuple[list[int], str, list[str], float, str] | None:
        """(token ids, text, echoed pieces, next-token log-prob, name) of a continuation whose
        next-token log-prob the top-k gives exactly: a label if present, else the top token."""
        in_top = wire.labels_in_top(top, self._label_ids, self._texts())
        for li, value in enumerate(in_top):
            if value is not None:
                label = self._label_ids[li]
                pieces = self._reader.label_pieces[li]
                return label, " " + self.labels[li], pieces, value, self.labels[li]
        key = max(top, key=lambda k: top[k])
        if key.startswith("token_id:"):
            tid = int(key.removeprefix("token_id:"))
        else:
            matches = [i for i, t in enumerate(self._vocab_texts()) if t == key]
            if len(matches) != 1:
                return None
            tid = matches[0]
        piece = str(self._tok.tokenizer.decode([tid]))
        return [tid], piece, [piece], top[key], piece

    def _check_tokenization(self, where: str, texts: Sequence[str]) -> str:
        return checks.check_tokenization(self._client, self._tok, self.spec.model, texts, where)

    def _vocab_texts(self) -> list[str]:
        return checks.vocab_texts(self._tok)

    def _unambiguous_label_texts(self) -> list[str | None]:
        return checks.unambiguous_texts(self._tok, self._label_ids)

    # -- label log-probs ------------------------------------------------------------------
    def _texts(self) -> list[str | None]:
        return self._label_texts if self._label_texts is not None else [None, None]

    def _score_prompts(
        self, jobs: Sequence[tuple[Query, int]], texts: Sequence[str]
    ) -> tuple[dict[int, tuple[float, float]], BaseException | None]:
        """(l_A, l_B) for each (query, order) job that finished (`LabelReader.read`)."""
        ids = encode(self._tok.tokenizer, texts)
        return self._reader.read(
            [
                PromptItem(
                    ids[j],
                    text,
                    f"pair {q.pair_id} order {ORDERS[o]} ({len(ids[j])} tokens)",
                    (q.prompt_hash, o),
                )
                for j, ((q, o), text) in enumerate(zip(jobs, texts, strict=True))
            ]
        )


def _gap(a: Sequence[Any], b: Sequence[Any]) -> float:
    return max(abs(float(x) - float(y)) for x, y in zip(a, b, strict=True))


def _fmt(values: Sequence[Any]) -> str:
    return "[" + ", ".join(f"{float(v):.4f}" for v in values) + "]"
