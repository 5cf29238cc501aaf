"""One pass over the frozen bottom layers for a base and its top-layer adapters.

Why: a LoRA adapter that touches only decoder layers >= L leaves the hidden states entering
layer L exactly as the base computes them. Pre (the base) and post (base + adapter) then share
the whole trunk below L: it is run once per prompt and only the adapted top layers run once
per checkpoint. With 4 of 30 layers adapted the ceiling is ~1.76x fewer layer passes for a
pre/post pair. The same trunk states feed training (`eraudit_core.adapt`, from a disk cache).

The staging is the fast path's (`_hf_verifier.fast_label_logprobs`): the prefix every prompt
shares, then each query's shared part, then each answer order's tail, each on the key/value
cache of what came before. Here each stage runs the bottom layers once and the top layers
once per checkpoint, each checkpoint keeping its own top-layer key/value cache. It applies
only where the decoder takes its input embeddings unscaled (Llama, Mistral, Qwen2/3); the
plan refuses anything else, and an adapter below L, so the caller scores separately then.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from eraudit_core.errors import InputError
from eraudit_core.types import Query, QueryScore
from eraudit_core.verifier._hf_verifier import shared_prefix_length

# Decoder families whose forward feeds `inputs_embeds` straight into the first layer (Gemma,
# for one, scales them first, so a trunk state could not be fed back in as an embedding).
SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3")
_LAYER = re.compile(r"\.layers\.(\d+)\.")

KV = list[tuple[torch.Tensor, torch.Tensor]]


# ---------------------------------------------------------------------------------------------
# the model's parts


def causal_lm(model: Any) -> Any:
    """The causal-LM module under a PEFT wrapper (LoRA layers live inside it)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def decoder(model: Any) -> Any:
    """The module holding the decoder `layers` and the final `norm`."""
    backbone = causal_lm(model)
    while not hasattr(backbone, "layers"):
        backbone = backbone.model
    return backbone


@contextlib.contextmanager
def layers_only(
    model: Any, start: int, stop: int | None = None, *, norm: bool = True
) -> Iterator[Any]:
    """Run only decoder layers [start, stop) (and the final norm unless `norm=False`); restore
    after, so saved adapters keep their true layer numbers. Yields the decoder module."""
    backbone = decoder(model)
    layers, final_norm = backbone.layers, backbone.norm
    backbone.layers = torch.nn.ModuleList(list(layers)[start:stop])
    if not norm:
        backbone.norm = torch.nn.Identity()
    try:
        yield backbone
    finally:
        backbone.layers, backbone.norm = layers, final_norm


def upper_layers_only(model: Any, split: int) -> contextlib.AbstractContextManager[Any]:
    """Run only decoder layers >= split, from `trunk_states` fed as `inputs_embeds`."""
    return layers_only(model, split)


def _left_pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r) :] = torch.tensor(list(r), dtype=torch.long)
            mask[i, width - len(r) :] = 1
    return ids, mask


def positions_of(mask: torch.Tensor) -> torch.Tensor:
    """Position ids that count real tokens only (left padding gets position 0)."""
    return (mask.cumsum(-1) - 1).clamp(min=0)


def trunk_states(
    model: Any,
    ids: Sequence[Sequence[int]],
    split: int,
    pad_id: int,
    batch_size: int = 8,
    device: str = "cpu",
) -> list[torch.Tensor]:
    """Hidden states entering decoder layer `split`, one [tokens, hidden] tensor per sequence.

    Without gradients and batched by length; equal to running each sequence alone.
    """
    out: list[Any] = [None] * len(ids)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    with (
        torch.no_grad(),
        _Switch(model)(None),
        layers_only(model, 0, split, norm=False) as backbone,
    ):
        for b in range(0, len(order), batch_size):
            batch = order[b : b + batch_size]
            x, mask = _left_pad([ids[i] for i in batch], pad_id)
            if split == 0:
                h = backbone.embed_tokens(x.to(device))
            else:
                h = backbone(
                    input_ids=x.to(device),
                    attention_mask=mask.to(device),
                    position_ids=positions_of(mask).to(device),
                    use_cache=False,
                ).last_hidden_state
            for r, i in enumerate(batch):
                out[i] = h[r, h.shape[1] - len(ids[i]) :].detach().cpu().clone()
    return out


# ---------------------------------------------------------------------------------------------
# which layers an adapter touches


def adapter_layers(model: Any, adapter_name: str) -> set[int] | None:
    """Decoder layers holding parameters of `adapter_name`; None when it also touches
    something outside the decoder layers (embeddings, head), which no split can share."""
    tag = f".{adapter_name}."
    layers: set[int] = set()
    found = False
    for name, _ in causal_lm(model).named_parameters():
        if tag not in name and not name.endswith(f".{adapter_name}"):
            continue
        found = True
        m = _LAYER.search(name)
        if m is None:
            return None
        layers.add(int(m.group(1)))
    if not found:
        raise InputError(f"adapter {adapter_name}: no parameters of it in the model")
    return layers


# ---------------------------------------------------------------------------------------------
# the kernel


@dataclass
class _State:
    lower: KV
    uppers: list[KV]
    mask: torch.Tensor


def _kv(cache: Any, start: int, stop: int) -> KV:
    return [(layer.keys, layer.values) for layer in cache.layers[start:stop]]


def _select(kv: KV, index: torch.Tensor) -> KV:
    return [(k.index_select(0, index), v.index_select(0, index)) for k, v in kv]


def _cache(kv: KV) -> Any:
    from transformers import DynamicCache

    return DynamicCache.from_legacy_cache(tuple(kv))  # type: ignore[arg-type]


class _Switch:
    """Makes one checkpoint (None: the base, adapters off) active for the top layers."""

    def __init__(self, model: Any) -> None:
        self.model = model

    @contextlib.contextmanager
    def __call__(self, adapter: str | None) -> Iterator[None]:
        if adapter is not None:
            self.model.set_adapter(adapter)
            yield
        elif hasattr(self.model, "disable_adapter"):
            with self.model.disable_adapter():
                yield
        else:
            yield


def _stage(
    model: Any,
    adapters: Sequence[str | None],
    split: int,
    rows: list[list[int]],
    pad_id: int,
    state: _State | None,
    row_parent: torch.Tensor | None,
    device: str,
) -> tuple[_State, list[torch.Tensor]]:
    """Run rows on top of an optional staged cache: bottom layers once, top layers once per
    checkpoint. Returns the extended state and each checkpoint's last-position logits."""
    ids, new_mask = _left_pad(rows, pad_id)
    width = ids.shape[1]
    lower: KV | None = None
    uppers: list[KV | None] = [None] * len(adapters)
    if state is not None and row_parent is not None:
        mask = torch.cat([state.mask.index_select(0, row_parent), new_mask], dim=1)
        lower = _select(state.lower, row_parent)
        uppers = [_select(u, row_parent) for u in state.uppers]
    else:
        mask = new_mask
    positions = positions_of(mask)[:, -width:].to(device)
    dev_mask = mask.to(device)
    n_layers = len(decoder(model).layers)
    switch = _Switch(model)
    # The trunk is the base's: adapters off, whichever was active before.
    with switch(None), layers_only(model, 0, split, norm=False) as backbone:
        out = backbone(
            input_ids=ids.to(device),
            attention_mask=dev_mask,
            position_ids=positions,
            past_key_values=_cache(lower) if lower is not None else None,
            use_cache=True,
        )
    h, new_lower = out.last_hidden_state, _kv(out.past_key_values, 0, split)
    logits: list[torch.Tensor] = []
    new_uppers: list[KV] = []
    with layers_only(model, split):
        for adapter, upper in zip(adapters, uppers, strict=True):
            # The bottom layers' past entries only tell the model how long the past is.
            past = _cache(lower + upper) if lower is not None and upper is not None else None
            with switch(adapter):
                res = causal_lm(model)(
                    inputs_embeds=h,
                    attention_mask=dev_mask,
                    position_ids=positions,
                    past_key_values=past,
                    use_cache=True,
                    logits_to_keep=1,
                )
            logits.append(res.logits[:, -1, :].float())
            new_uppers.append(_kv(res.past_key_values, split, n_layers))
    return _State(new_lower, new_uppers, mask), logits


def shared_trunk_label_logprobs(
    model: Any,
    groups: Sequence[Sequence[Sequence[int]]],
    labels: Sequence[Sequence[int]],
    *,
    split: int,
    adapters: Sequence[str | None],
    batch_size: int,
    pad_id: int,
    device: str,
    tops: Sequence[torch.Tensor] | None = None,
) -> list[torch.Tensor]:
    """log p(label | prompt) for every checkpoint in `adapters` (None: the base): one tensor
    [groups, members, labels] each, as `fast_label_logprobs` gives them one at a time.
    `tops` (one bool tensor [groups, members] per adapter) is filled as there.

    The caller guarantees that no adapter touches a layer below `split` (`plan_shared_trunk`).
    Single-token labels only.
    """
    if any(len(lab) != 1 for lab in labels):
        raise InputError("shared-trunk scoring needs single-token labels")
    if not 0 < split < len(decoder(model).layers):
        raise InputError(f"shared-trunk split {split}: must lie inside the decoder layers")
    n_members = len(groups[0]) if groups else 0
    outs = [torch.empty((len(groups), n_members, len(labels))) for _ in adapters]
    if not groups:
        return outs
    prompts = [p for g in groups for p in g]
    shared = shared_prefix_length(prompts)
    root: _State | None = None
    with torch.inference_mode():
        if shared > 0:
            root, _ = _stage(
                model, adapters, split, [list(prompts[0][:shared])], pad_id, None, None, device
            )
        order = sorted(range(len(groups)), key=lambda i: -max(len(p) for p in groups[i]))
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            cuts = []
            for gi in batch:
                cuts.append(max(shared_prefix_length(groups[gi]), shared))
            state = root
            parents = torch.zeros(len(batch), dtype=torch.long) if root is not None else None
            stage2 = [list(groups[gi][0][shared:cut]) for gi, cut in zip(batch, cuts, strict=True)]
            if any(stage2) and (root is not None or all(stage2)):
                state, _ = _stage(model, adapters, split, stage2, pad_id, state, parents, device)
                parents = torch.arange(len(batch), dtype=torch.long)
            rows: list[list[int]] = []
            row_parent: list[int] = []
            reads: list[tuple[int, int]] = []
            for bi, (gi, cut) in enumerate(zip(batch, cuts, strict=True)):
                for mi, p in enumerate(groups[gi]):
                    rows.append(list(p[cut:]))
                    row_parent.append(bi)
                    reads.append((gi, mi))
            index = (
                None
                if parents is None
                else parents.index_select(0, torch.tensor(row_parent, dtype=torch.long))
            )
            _, logits = _stage(model, adapters, split, rows, pad_id, state, index, device)
            firsts = torch.tensor(sorted({lab[0] for lab in labels}), dtype=torch.long)
            for ai, (out, lg) in enumerate(zip(outs, logits, strict=True)):
                logp = torch.log_softmax(lg, dim=-1).cpu()
                on_top = torch.isin(torch.argmax(logp, dim=-1), firsts)
                for r, (gi, mi) in enumerate(reads):
                    if tops is not None:
                        tops[ai][gi, mi] = on_top[r]
                    for li, lab in enumerate(labels):
                        out[gi, mi, li] = logp[r, lab[0]]
    return outs


# ---------------------------------------------------------------------------------------------
# local checkpoints on one base


@dataclass
class SharedTrunkGroup:
    """Local checkpoints on one base in memory (the base itself, adapters off, and adapters
    that sit at or above `split`), scored from one pass over the layers below `split`.

    A pre/post pair is the common case (`SharedTrunk`); a base and two adapted arms scored
    together (the debate demo's build) run the trunk once for all three."""

    checkpoints: tuple[Any, ...]  # HFVerifier
    split: int

    def label_logprobs(
        self, queries: Sequence[Query], tops: Sequence[torch.Tensor] | None = None
    ) -> list[torch.Tensor]:
        """Per checkpoint: [queries, 2 orders, 2 labels] log-probs, from one trunk pass
        (`tops`: per checkpoint, whether a label tops each prompt, filled when given)."""
        first = self.checkpoints[0]
        groups = first._encode(queries)
        base = first._base
        with base.lock:
            outs = shared_trunk_label_logprobs(
                base.model,
                groups,
                first._label_ids,
                split=self.split,
                adapters=[v._adapter_name for v in self.checkpoints],
                batch_size=first.batch_size,
                pad_id=first._pad_id,
                device=base.device,
                tops=tops,
            )
            for v in self.checkpoints:
                v.forward_calls += 1
        for v, lp in zip(self.checkpoints, outs, strict=True):
            if not torch.isfinite(lp).all():
                raise InputError(
                    f"checkpoint {v.name}: the model produced NaN or infinite logits "
                    "(broken weights or a dtype overflow; try dtype=float32)"
                )
        return outs

    def score_all(self, queries: Sequence[Query]) -> list[list[QueryScore]]:
        from eraudit_core.verifier._hf_verifier import scores_from_logprobs

        return [scores_from_logprobs(lp) for lp in self.label_logprobs(queries)]

    def prime(self, queries: Sequence[Query]) -> int:
        """Score, in one trunk pass, the queries any checkpoint has not scored in this
        process, and keep the results in every checkpoint's memo (their own `score` then
        returns them). Returns how many queries were scored."""
        todo: dict[str, Query] = {}
        for q in queries:
            k = q.prompt_hash
            if any(k not in v._memo for v in self.checkpoints) and k not in todo:
                todo[k] = q
        if not todo:
            return 0
        from eraudit_core.verifier._hf_verifier import scores_from_logprobs

        tops = [torch.zeros((len(todo), 2), dtype=torch.bool) for _ in self.checkpoints]
        per_checkpoint = self.label_logprobs(list(todo.values()), tops)
        for v, lp, flags in zip(self.checkpoints, per_checkpoint, tops, strict=True):
            for k, score in zip(todo, scores_from_logprobs(lp), strict=True):
                v._memo.setdefault(k, score)
            v.remember_tops(todo.keys(), flags)
        return len(todo)


class SharedTrunk(SharedTrunkGroup):
    """Pre and post checkpoints on one base in memory whose adapters sit at or above `split`."""

    def __init__(self, pre: Any, post: Any, split: int) -> None:
        super().__init__((pre, post), split)

    @property
    def pre(self) -> Any:
        return self.checkpoints[0]

    @property
    def post(self) -> Any:
        return self.checkpoints[1]

    def score(self, queries: Sequence[Query]) -> tuple[list[QueryScore], list[QueryScore]]:
        pre, post = self.score_all(queries)
        return pre, post


def plan_shared_trunk_group(checkpoints: Sequence[Any], split: int | None = None) -> int:
    """The split at which local checkpoints can share one trunk, or InputError saying why not.

    They must be one base model in memory read with the same prompt format, a supported
    decoder family, single-token labels, and every adapter's layers >= split (default: the
    lowest adapted layer, which must not be 0).
    """
    who = "pre and post" if len(checkpoints) == 2 else "the checkpoints"
    for v in checkpoints:
        if not hasattr(v, "_base") or not hasattr(v, "_adapter_name"):
            raise InputError(f"checkpoint {getattr(v, 'name', v)}: not a local checkpoint")
    first = checkpoints[0]
    if any(v._base is not first._base for v in checkpoints):
        raise InputError(f"{who} do not share one base model in memory")
    same = ("template", "prefix", "labels")
    for v in checkpoints[1:]:
        if any(getattr(first, k) != getattr(v, k) for k in same) or (
            first.format.identity() != v.format.identity()
        ):
            raise InputError(f"{who} read different prompts (template, prefix, labels, format)")
    model = first._base.model
    model_type = getattr(getattr(causal_lm(model), "config", None), "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise InputError(
            f"model type {model_type!r}: shared-trunk scoring supports {SUPPORTED_MODEL_TYPES}"
        )
    if any(len(ids) != 1 for ids in first._label_ids):
        raise InputError("shared-trunk scoring needs single-token labels")
    names = [v._adapter_name for v in checkpoints if v._adapter_name is not None]
    if not names:
        raise InputError("no checkpoint has an adapter: nothing to share")
    lowest = len(decoder(model).layers)
    for name in names:
        touched = adapter_layers(model, name)
        if touched is None:
            raise InputError(f"adapter {name}: touches parameters outside the decoder layers")
        lowest = min(lowest, min(touched))
    if split is None:
        split = lowest
    if split > lowest:
        raise InputError(
            f"an adapter touches decoder layer {lowest}, below the shared trunk's split {split}"
        )
    if split < 1:
        raise InputError("an adapter touches decoder layer 0: there is no trunk to share")
    return split


def plan_shared_trunk(pre: Any, post: Any, split: int | None = None) -> SharedTrunk:
    """The shared-trunk plan for a pre/post pair of local checkpoints, or InputError saying
    why not (`plan_shared_trunk_group`)."""
    return SharedTrunk(pre, post, plan_shared_trunk_group((pre, post), split))


def try_shared_trunk(pre: Any, post: Any) -> SharedTrunk | None:
    """`plan_shared_trunk`, or None when the pair cannot share a trunk (score separately)."""
    try:
        return plan_shared_trunk(pre, post)
    except InputError:
        return None
