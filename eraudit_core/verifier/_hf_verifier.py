"""Local Hugging Face backend: loading with checks, and fast label-softmax scoring.

Why the scoring is shaped this way (docs/design.md §3, §9): every prompt of an audit starts with the
same chat-template header, and the two answer orders of one query share everything up to the
options. So the shared header is run once, each query's own shared part once per query, and only
the order-specific tails are run per order, reusing the key/value cache of what came before.
Batches are sorted by length (little padding), only the last position's logits are computed,
and all of it runs under `torch.inference_mode`. `naive_label_logprobs` is the reference: one
prompt at a time, full-vocabulary logits at every position; the two must agree to 1e-4.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from eraudit_core.errors import InputError
from eraudit_core.types import Query, QueryScore
from eraudit_core.verifier._chat import chat_format, ids_digest
from eraudit_core.verifier._hf_files import check_adapter_dir, dir_digest, resolve_device_dtype
from eraudit_core.verifier._hf_models import LoadedBase, load_base
from eraudit_core.verifier._probes import PROBE_SET
from eraudit_core.verifier._prompts import PROBE, render_prompts
from eraudit_core.verifier._readout import get_readout
from eraudit_core.verifier._spec import CheckpointSpec
from eraudit_core.verifier._tokenizer import check_labels, encode, label_token_ids


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


# ---------------------------------------------------------------------------------------------
# scoring


def _lcp(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def shared_prefix_length(prompts: Sequence[Sequence[int]]) -> int:
    """How many leading tokens every prompt shares, leaving each at least its last token to
    run (the position whose logits are read)."""
    n = min(len(p) for p in prompts) - 1
    for p in prompts[1:]:
        n = min(n, _lcp(prompts[0], p))
    return n


def _kv_select(kv: list[tuple[torch.Tensor, torch.Tensor]], index: torch.Tensor) -> Any:
    from transformers import DynamicCache

    legacy: Any = tuple((k.index_select(0, index), v.index_select(0, index)) for k, v in kv)
    return DynamicCache.from_legacy_cache(legacy)


def _kv_tensors(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(layer.keys, layer.values) for layer in cache.layers]


def _forward(
    model: Any,
    rows: list[list[int]],
    pad_id: int,
    past: list[tuple[torch.Tensor, torch.Tensor]] | None,
    past_mask: torch.Tensor | None,
    row_parent: torch.Tensor | None,
    keep: int,
    device: str,
) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]:
    """Run left-padded rows on top of an optional cache; return (last `keep` logits, kv, mask).

    The attention mask covers cache + new tokens, so padding may sit between a shared prefix and
    a row's own tokens; position ids count real tokens only, which makes the result equal to
    running each row unpadded.
    """
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    new_mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r) :] = torch.tensor(r, dtype=torch.long)
            new_mask[i, width - len(r) :] = 1
    if past is not None and past_mask is not None and row_parent is not None:
        mask = torch.cat([past_mask.index_select(0, row_parent), new_mask], dim=1)
        cache = _kv_select(past, row_parent.to(device))
    else:
        mask, cache = new_mask, None
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -width:]
    out = model(
        input_ids=ids.to(device),
        attention_mask=mask.to(device),
        position_ids=positions.to(device),
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=keep,
    )
    return out.logits[:, -keep:, :].float(), _kv_tensors(out.past_key_values), mask


def fast_label_logprobs(
    model: Any,
    groups: Sequence[Sequence[Sequence[int]]],
    labels: Sequence[Sequence[int]],
    *,
    batch_size: int,
    pad_id: int,
    device: str,
    share_prefix: bool = True,
) -> torch.Tensor:
    """log p(label | prompt) for every prompt of every group: tensor [groups, members, labels].

    A group is the prompts of one query (its two answer orders). A label of several tokens is
    teacher-forced and its token log-probabilities are summed (docs/design.md §3).
    """
    if not groups:
        return torch.empty((0, 0, len(labels)), dtype=torch.float32)
    n_members = len(groups[0])
    out = torch.empty((len(groups), n_members, len(labels)), dtype=torch.float32)
    single = all(len(lab) == 1 for lab in labels)
    prompts = [p for g in groups for p in g]
    # Stage 1: the prefix every prompt shares (chat header), computed once.
    shared = 0
    if share_prefix:
        shared = shared_prefix_length(prompts)
    root: list[tuple[torch.Tensor, torch.Tensor]] | None = None
    root_mask: torch.Tensor | None = None
    with torch.inference_mode():
        if shared > 0:
            _, root, root_mask = _forward(
                model, [list(prompts[0][:shared])], pad_id, None, None, None, 1, device
            )
        order = sorted(range(len(groups)), key=lambda i: -max(len(p) for p in groups[i]))
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            # Stage 2: what the members of one group share beyond the common prefix.
            cuts = []
            for gi in batch:
                cut = shared_prefix_length(groups[gi])
                cuts.append(max(cut, shared) if share_prefix else 0)
            past, past_mask = root, root_mask
            parents = torch.zeros(len(batch), dtype=torch.long) if root is not None else None
            stage2 = [list(groups[gi][0][shared:cut]) for gi, cut in zip(batch, cuts, strict=True)]
            if share_prefix and any(stage2) and (root is not None or all(stage2)):
                _, past, past_mask = _forward(
                    model, stage2, pad_id, past, past_mask, parents, 1, device
                )
                parents = torch.arange(len(batch), dtype=torch.long)
            # Stage 3: each member's own tail (plus all but the last token of a long label).
            rows: list[list[int]] = []
            row_parent: list[int] = []
            reads: list[tuple[int, int, int]] = []  # (group, member, label or -1 for all)
            keep = 1
            for bi, (gi, cut) in enumerate(zip(batch, cuts, strict=True)):
                for mi, p in enumerate(groups[gi]):
                    if single:
                        rows.append(list(p[cut:]))
                        row_parent.append(bi)
                        reads.append((gi, mi, -1))
                    else:
                        for li, lab in enumerate(labels):
                            rows.append(list(p[cut:]) + list(lab[:-1]))
                            row_parent.append(bi)
                            reads.append((gi, mi, li))
                            keep = max(keep, len(lab))
            if parents is None:
                parent_index = None
            else:
                parent_index = parents.index_select(0, torch.tensor(row_parent, dtype=torch.long))
            logits, _, _ = _forward(
                model, rows, pad_id, past, past_mask, parent_index, keep, device
            )
            logp = torch.log_softmax(logits, dim=-1).cpu()
            for r, (gi, mi, li) in enumerate(reads):
                if li < 0:
                    for lj, lab in enumerate(labels):
                        out[gi, mi, lj] = logp[r, -1, lab[0]]
                else:
                    lab = labels[li]
                    steps = logp[r, keep - len(lab) :, :]
                    out[gi, mi, li] = sum(steps[t, tok] for t, tok in enumerate(lab))
    return out


def naive_label_logprobs(
    model: Any,
    groups: Sequence[Sequence[Sequence[int]]],
    labels: Sequence[Sequence[int]],
    *,
    device: str,
) -> torch.Tensor:
    """Reference: each prompt alone, full-vocabulary logits at every position, no cache reuse."""
    n_members = len(groups[0]) if groups else 0
    out = torch.empty((len(groups), n_members, len(labels)), dtype=torch.float32)
    single = all(len(lab) == 1 for lab in labels)
    with torch.inference_mode():
        for gi, g in enumerate(groups):
            for mi, p in enumerate(g):
                if single:
                    ids = torch.tensor([list(p)], dtype=torch.long, device=device)
                    logp = torch.log_softmax(model(input_ids=ids).logits.float(), dim=-1)
                    for li, lab in enumerate(labels):
                        out[gi, mi, li] = logp[0, -1, lab[0]].cpu()
                    continue
                for li, lab in enumerate(labels):
                    ids = torch.tensor([list(p) + list(lab)], dtype=torch.long, device=device)
                    logp = torch.log_softmax(model(input_ids=ids).logits.float(), dim=-1)
                    n = len(p)
                    out[gi, mi, li] = sum(
                        logp[0, n - 1 + t, tok].cpu() for t, tok in enumerate(lab)
                    )
    return out


def scores_from_logprobs(lp: torch.Tensor) -> list[QueryScore]:
    """p_true per query from [queries, 2 orders, 2 labels] log-probs, in float32 (docs/design.md §3).

    Order 0 has the true option as A, order 1 as B. p_order(true) = exp(l_true)/(exp(l_A)+exp(l_B))
    and p_true is the mean of the two orders.
    """
    lp = lp.float()
    p_ab = torch.softmax(lp[:, 0, :], dim=-1)[:, 0]
    p_ba = torch.softmax(lp[:, 1, :], dim=-1)[:, 1]
    p = ((p_ab + p_ba) / 2).clamp(0.0, 1.0)
    return [
        QueryScore(float(p[i]), tuple(float(x) for x in lp[i].reshape(-1)))  # type: ignore[arg-type]
        for i in range(lp.shape[0])
    ]


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

    def label_logprobs(self, queries: Sequence[Query], *, naive: bool = False) -> torch.Tensor:
        """[queries, 2 orders, 2 labels] log-probs; `naive=True` runs the reference path."""
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
            fresh = scores_from_logprobs(self.label_logprobs(list(todo.values())))
            self._memo.update(zip(todo.keys(), fresh, strict=True))
        return [self._memo[k] for k in keys]

    def top_is_label(self, queries: Sequence[Query]) -> list[bool]:
        """For each prompt (both answer orders of each query): is the model's most likely next
        token at the read position the first token of a label? The label-mass check's second
        signal (`_label_mass.py`): one prompt at a time, full-vocabulary logits."""
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
        """Labels tokenise cleanly after the prefix; a probe prompt gives finite logits."""
        check_labels(
            self._base.tokenizer, self.name, self.labels, self._label_ids, self.render(PROBE)[0]
        )
        self.label_logprobs([PROBE])  # raises on NaN / inf
