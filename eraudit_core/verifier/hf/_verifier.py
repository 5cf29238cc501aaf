"""Local Hugging Face backend: loading with checks, and the verifier class.

The scoring kernels it runs (the fast and naive label log-probabilities, p_true from them) are
in `eraudit_core.verifier._kernels` (docs/design.md §3, §9), beside the served backend that
reads them too; they are re-exported here for the modules that import them from this one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from eraudit_core.errors import InputError
from eraudit_core.types import Query, QueryScore
from eraudit_core.verifier._chat import chat_format, ids_digest
from eraudit_core.verifier._hf_files import check_adapter_dir, dir_digest, resolve_device_dtype
from eraudit_core.verifier._kernels import (
    fast_label_logprobs,
    naive_label_logprobs,
    scores_from_logprobs,
    shared_prefix_length,
)
from eraudit_core.verifier._probes import PROBE_SET
from eraudit_core.verifier._prompts import PROBE, render_prompts
from eraudit_core.verifier._readout import get_readout
from eraudit_core.verifier._spec import CheckpointSpec
from eraudit_core.verifier._tokenizer import check_labels, encode, label_token_ids
from eraudit_core.verifier.hf._models import LoadedBase, load_base

# The kernels are re-exported: `_shared_trunk` and older callers import them from here.
__all__ = [
    "HFVerifier",
    "fast_label_logprobs",
    "load",
    "naive_label_logprobs",
    "scores_from_logprobs",
    "shared_prefix_length",
]


def load(
    spec: CheckpointSpec,
    *,
    device: str | None,
    dtype: str | None,
    trust_remote_code: bool,
    template: str,
    prefix: str,
    labels: tuple[str, str],
    batch_size: int,
    share_base: bool,
    readout: str | None = None,
    system: str | None = None,
    today: dt.date | None = None,
) -> HFVerifier:
    dev, dt = resolve_device_dtype(device, dtype)
    adapter = Path(spec.adapter) if spec.adapter else None
    if adapter is not None:
        if not adapter.is_dir():
            raise InputError(f"adapter {adapter}: directory not found")
        check_adapter_dir(adapter)
    base = load_base(spec.base, dev, dt, trust_remote_code, share_base)
    adapter_name = base.add_adapter(adapter) if adapter is not None else None
    verifier = HFVerifier(
        spec,
        base,
        adapter_name,
        template,
        prefix,
        labels,
        batch_size,
        readout=readout or spec.readout,
        system=system,
        today=today,
    )
    verifier.run_load_checks()
    return verifier


class HFVerifier:
    """A checkpoint answering binary questions by label softmax (implements types.Verifier)."""

    def __init__(
        self,
        spec: CheckpointSpec,
        base: LoadedBase,
        adapter_name: str | None,
        template: str,
        prefix: str,
        labels: tuple[str, str],
        batch_size: int,
        *,
        readout: str | None = None,
        system: str | None = None,
        today: dt.date | None = None,
    ) -> None:
        if readout is not None and readout != spec.readout:
            spec = replace(spec, readout=get_readout(readout).name)
        self.spec = spec
        self._base = base
        self._adapter_name = adapter_name
        self.template = template
        self.prefix = prefix
        self.labels = labels
        self.batch_size = batch_size
        self._memo: dict[str, QueryScore] = {}
        # {prompt hash: (is a label the most likely next token, order AB, order BA)} for the
        # queries scored in this process (the per-prompt label check's second signal)
        self._tops: dict[str, tuple[bool, bool]] = {}
        tok = base.tokenizer
        self._label_ids = label_token_ids(tok, labels)
        self._pad_id = int(
            tok.pad_token_id
            if tok.pad_token_id is not None
            else (tok.eos_token_id if tok.eos_token_id is not None else 0)
        )
        self._chat_template = getattr(tok, "chat_template", None)
        config = getattr(base.model, "config", None)
        self.format = chat_format(
            tok,
            name=spec.text,
            model_type=getattr(config, "model_type", None),
            readout=readout,
            system=system,
            today=today,
        )
        adapter_digest = (
            dir_digest(Path(spec.adapter), ["adapter_model.safetensors", "adapter_config.json"])
            if spec.adapter
            else None
        )
        payload = {
            "weights": base.weights_digest,
            "adapter": adapter_digest,
            "tokenizer": base.tokenizer_digest,
            "chat_template": self._chat_template,
            "template": template,
            "prefix": prefix,
            "labels": list(labels),
            "dtype": str(base.dtype),  # bf16 and fp32 scores differ: keep their caches apart
            "format": self.format.identity(),
            # the exact token ids of the probe prompts: any change in what is read changes this
            "probe_ids": ids_digest(self._encode(PROBE_SET)),
        }
        self._fingerprint = hashlib.sha256(
            json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
        ).hexdigest()[:32]
        self.forward_calls = 0

    # -- identity -------------------------------------------------------------------------
    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def name(self) -> str:
        return self.spec.text

    def describe(self) -> dict[str, Any]:
        model = self._base.model
        n_params = sum(p.numel() for n, p in model.named_parameters() if "lora_" not in n)
        n_adapter = 0
        if self._adapter_name is not None:
            n_adapter = sum(
                p.numel() for n, p in model.named_parameters() if f".{self._adapter_name}." in n
            )
        return {
            "name": self.name,
            "spec": self.spec.text,
            "path": str(self._base.model_dir),
            "kind": self.spec.kind,
            "base": self.spec.base.text,
            "adapter": self.spec.adapter,
            "device": self._base.device,
            "dtype": str(self._base.dtype).removeprefix("torch."),
            "template": self.template,
            "prefix": self.prefix,
            "labels": list(self.labels),
            "label_tokens": self._label_ids,
            "label_handling": (
                "single token each"
                if all(len(x) == 1 for x in self._label_ids)
                else "several tokens: teacher-forced, log-probabilities summed"
            ),
            "chat_template": self._chat_template is not None,
            **self.format.describe(),
            "probe_ids_digest": ids_digest(self._encode(PROBE_SET)),
            "parameters": int(n_params),
            "adapter_parameters": int(n_adapter),
            "fingerprint": self.fingerprint,
            "shared_base_with": sorted(a for a in self._base.adapters if a != self.spec.adapter),
        }

    # -- prompts --------------------------------------------------------------------------
    def _chat(self, message: str) -> str:
        return self.format.wrap(self._base.tokenizer, message)

    def with_readout(self, readout: str) -> HFVerifier:
        """The same checkpoint (same model in memory) read with another readout profile."""
        return HFVerifier(
            self.spec,
            self._base,
            self._adapter_name,
            self.template,
            self.prefix,
            self.labels,
            self.batch_size,
            readout=readout,
            system=self.format.system,
            today=self.format.pinned_date,
        )

    def render(self, query: Query) -> tuple[str, str]:
        """The exact texts the model continues (true as A, true as B)."""
        return render_prompts(
            query, self.template, self.prefix, chat=self._chat, labels=self.labels
        )

    def _encode(self, queries: Sequence[Query]) -> list[list[list[int]]]:
        ids = encode(self._base.tokenizer, [t for q in queries for t in self.render(q)])
        groups = [[ids[2 * i], ids[2 * i + 1]] for i in range(len(queries))]
        limit = self.context_length
        if limit is not None:
            label = max(len(x) for x in self._label_ids)
            for q, g in zip(queries, groups, strict=True):
                n = max(len(p) for p in g) + label
                if n > limit:
                    raise InputError(
                        f"checkpoint {self.name}: the prompt for {q.pair_id} ({q.question[:60]!r}"
                        f"...) is {n} tokens with its answer label, longer than the model's "
                        f"context of {limit} tokens; shorten the question or use a model with a "
                        "longer context (it was not scored)"
                    )
        return groups

    @property
    def context_length(self) -> int | None:
        """The most tokens the model was built to attend to (its position limit), if known."""
        config = getattr(self._base.model, "config", None)
        for key in ("max_position_embeddings", "n_positions", "max_sequence_length"):
            value = getattr(config, key, None)
            if isinstance(value, int) and value > 0:
                return value
        return None

    # -- model ----------------------------------------------------------------------------
    def _activate(self) -> Any:
        """The model with this verifier's adapter active (or all adapters off)."""
        import contextlib

        model = self._base.model
        if self._adapter_name is not None:
            model.set_adapter(self._adapter_name)
            return model, contextlib.nullcontext()
        if hasattr(model, "disable_adapter") and self._base.adapters:
            return model, model.disable_adapter()
        return model, contextlib.nullcontext()

    def label_logprobs(
        self, queries: Sequence[Query], *, naive: bool = False, tops: torch.Tensor | None = None
    ) -> torch.Tensor:
        """[queries, 2 orders, 2 labels] log-probs; `naive=True` runs the reference path.
        `tops` ([queries, 2] bool, fast path only) is filled with whether a label is each
        prompt's most likely next token."""
        groups = self._encode(queries)
        with self._base.lock:
            model, ctx = self._activate()
            with ctx:
                self.forward_calls += 1
                if naive:
                    lp = naive_label_logprobs(
                        model, groups, self._label_ids, device=self._base.device
                    )
                else:
                    lp = fast_label_logprobs(
                        model,
                        groups,
                        self._label_ids,
                        batch_size=self.batch_size,
                        pad_id=self._pad_id,
                        device=self._base.device,
                        tops=tops,
                    )
        if not torch.isfinite(lp).all():
            raise InputError(
                f"checkpoint {self.name}: the model produced NaN or infinite logits "
                "(broken weights or a dtype overflow; try dtype=float32)"
            )
        return lp

    def score(self, queries: Sequence[Query]) -> list[QueryScore]:
        """Scores in the order given; queries already scored in this process are not re-run."""
        keys = [q.prompt_hash for q in queries]
        todo: dict[str, Query] = {}
        for k, q in zip(keys, queries, strict=True):
            if k not in self._memo and k not in todo:
                todo[k] = q
        if todo:
            tops = torch.zeros((len(todo), 2), dtype=torch.bool)
            fresh = scores_from_logprobs(self.label_logprobs(list(todo.values()), tops=tops))
            self._memo.update(zip(todo.keys(), fresh, strict=True))
            self.remember_tops(todo.keys(), tops)
        return [self._memo[k] for k in keys]

    def remember_tops(self, keys: Iterable[str], tops: torch.Tensor) -> None:
        """Keep, per prompt hash, whether a label tops each answer order ([n, 2] bool); the
        first answer kept for a prompt stays, as its memoised score does."""
        for k, row in zip(keys, tops.tolist(), strict=True):
            self._tops.setdefault(k, (bool(row[0]), bool(row[1])))

    def top_is_label(self, queries: Sequence[Query]) -> list[bool]:
        """For each prompt (both answer orders of each query): is the model's most likely next
        token at the read position the first token of a label? The label-mass check's second
        signal (`_label_mass.py`, `_answer_check.py`): what scoring saw when it scored the
        query in this process, else one prompt at a time, full-vocabulary logits."""
        if all(q.prompt_hash in self._tops for q in queries):
            return [flag for q in queries for flag in self._tops[q.prompt_hash]]
        firsts = {lab[0] for lab in self._label_ids}
        out: list[bool] = []
        with self._base.lock:
            model, ctx = self._activate()
            with ctx, torch.inference_mode():
                for group in self._encode(queries):
                    for prompt in group:
                        ids = torch.tensor(
                            [list(prompt)], dtype=torch.long, device=self._base.device
                        )
                        logits = model(input_ids=ids, logits_to_keep=1).logits[0, -1]
                        out.append(int(torch.argmax(logits)) in firsts)
        return out

    def score_naive(self, queries: Sequence[Query]) -> list[QueryScore]:
        """The reference computation (benchmarks and tests); never memoised."""
        return scores_from_logprobs(self.label_logprobs(queries, naive=True))

    # -- checks ---------------------------------------------------------------------------
    def run_load_checks(self) -> None:
        """Labels tokenise cleanly after the prefix; a probe prompt gives finite logits.

        The probe runs once per weights in memory, adapter and prompt format: the dashboard
        loads the one-click audit's pair while Home is read and again when the audit starts,
        and the second probe (0.3 s a checkpoint on two cores) would tell nothing new. Every
        scoring call still refuses NaN or infinite logits."""
        probe = self.render(PROBE)
        check_labels(self._base.tokenizer, self.name, self.labels, self._label_ids, probe[0])
        key = (self._adapter_name, probe, tuple(map(tuple, self._label_ids)))
        if key in self._base.probed:
            return
        self.label_logprobs([PROBE])  # raises on NaN / inf
        self._base.probed.add(key)
