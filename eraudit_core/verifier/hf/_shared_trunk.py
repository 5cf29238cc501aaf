"""One pass over the frozen bottom layers for a base and its top-layer adapters.

Why: a LoRA adapter that touches only decoder layers >= L leaves the hidden states entering
layer L exactly as the base computes them. Pre (the base) and post (base + adapter) then share
the whole trunk below L: it is run once per prompt and only the adapted top layers run once
per checkpoint. With 4 of 30 layers adapted the ceiling is ~1.76x fewer layer passes for a
pre/post pair. The same trunk states feed training (`eraudit_core.adapt`, from a disk cache).

The staging is the fast path's (`_hf_verifier.fast_label_logprobs`): the prefix every prompt
shares, then each query's shared part, then each answer order's tail, each on the key/value
cache of what came before. Here each stage runs the bottom layers once and the top layers
once per checkpoint, each checkpoint keeping its own top-layer key/value cache; a group keeps
the staged chat header for its later batches (`_known_root`). It applies
only where the decoder takes its input embeddings unscaled (Llama, Mistral, Qwen2/3); the
plan refuses anything else, and an adapter below L, so the caller scores separately then.
A separate model that differs from the base only in layers >= L and the final norm (a full
fine-tune of the top layers, checked tensor by tensor in `_layer_patch`) shares the trunk the
same way, running its own top layers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from eraudit_core.errors import InputError
from eraudit_core.types import Query, QueryScore
from eraudit_core.verifier._kernels import read_positions
from eraudit_core.verifier.hf._decoder_parts import (
    AdapterSwitch,
    adapter_layers,
    causal_lm,
    decoder,
    layers_only,
    left_pad,
    positions_of,
    trunk_states,
    upper_layers_only,
)
from eraudit_core.verifier.hf._layer_patch import layer_patch
from eraudit_core.verifier.hf._verifier import shared_prefix_length

# Decoder families whose forward feeds `inputs_embeds` straight into the first layer (Gemma,
# for one, scales them first, so a trunk state could not be fed back in as an embedding).
SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3")
__all__ = [
    "SUPPORTED_MODEL_TYPES",
    "SharedTrunk",
    "SharedTrunkGroup",
    "adapter_layers",
    "causal_lm",
    "decoder",
    "layers_only",
    "plan_shared_trunk",
    "plan_shared_trunk_group",
    "positions_of",
    "shared_trunk_label_logprobs",
    "trunk_states",
    "try_shared_trunk",
    "upper_layers_only",
]

KV = list[tuple[torch.Tensor, torch.Tensor]]


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


def _stage(
    model: Any,
    adapters: Sequence[str | None],
    models: Sequence[Any],
    split: int,
    rows: list[list[int]],
    pad_id: int,
    state: _State | None,
    row_parent: torch.Tensor | None,
    device: str,
    read: bool = False,
) -> tuple[_State, list[torch.Tensor]]:
    """Run rows on top of an optional staged cache: bottom layers once (`model`, adapters
    off), top layers once per checkpoint (`models[i]` with `adapters[i]`). Returns the
    extended state and, when `read`, each checkpoint's last-position logits (a staged prefix
    reads none: the head is the largest matrix of a small model)."""
    ids, new_mask = left_pad(rows, pad_id)
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
    # The trunk is the base's: adapters off, whichever was active before.
    with AdapterSwitch(model)(None), layers_only(model, 0, split, norm=False) as backbone:
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
    for top, adapter, upper in zip(models, adapters, uppers, strict=True):
        # The bottom layers' past entries only tell the model how long the past is.
        past = _cache(lower + upper) if lower is not None and upper is not None else None
        with layers_only(top, split), AdapterSwitch(top)(adapter):
            res = causal_lm(top)(
                inputs_embeds=h,
                attention_mask=dev_mask,
                position_ids=positions,
                past_key_values=past,
                use_cache=True,
                logits_to_keep=read_positions(width, 1 if read else 0, device),
            )
        if read:
            logits.append(res.logits[:, -1, :].float())
        new_uppers.append(_kv(res.past_key_values, split, n_layers))
    return _State(new_lower, new_uppers, mask), logits


# Staged prefixes a group keeps (the chat header, and the odd longer prefix a batch shared).
MAX_ROOTS = 8


def _known_root(
    roots: dict[tuple[int, ...], _State] | None, prompt: Sequence[int], shared: int
) -> tuple[int, _State] | None:
    """The longest staged prefix of an earlier call that every prompt of this call starts
    with (a prefix of `prompt` no longer than the `shared` tokens all prompts share), as its
    length and staged state.

    Why: every batch of an audit starts with the same chat header, and staging a 1-row,
    26-token header costs a whole pass over the decoder's modules (0.15-0.18 s on two CPU
    cores for the demo's 30-layer model; 14 batches make a tenth of a one-click audit's
    scoring). The header's key/value entries depend only on its tokens and the checkpoints,
    so they are reused; what the batch shares beyond a reused prefix is staged with each
    query's own part."""
    if not roots:
        return None
    fits = [k for k in roots if len(k) <= shared and tuple(prompt[: len(k)]) == k]
    if not fits:
        return None
    key = max(fits, key=len)
    return len(key), roots[key]


def _remember_root(
    roots: dict[tuple[int, ...], _State] | None, head: tuple[int, ...], state: _State
) -> None:
    if roots is None:
        return
    while len(roots) >= MAX_ROOTS:
        roots.pop(next(iter(roots)))  # the oldest
    roots[head] = state


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
    models: Sequence[Any] | None = None,
    roots: dict[tuple[int, ...], _State] | None = None,
) -> list[torch.Tensor]:
    """log p(label | prompt) for every checkpoint in `adapters` (None: the base): one tensor
    [groups, members, labels] each, as `fast_label_logprobs` gives them one at a time.
    `tops` (one bool tensor [groups, members] per adapter) is filled as there. `models`
    (default: `model` for every checkpoint) gives each checkpoint the model whose top layers
    it runs: a layer patch of `model` (`_layer_patch`) runs its own. `roots`, kept by the
    caller across calls with the same checkpoints, holds the staged prefixes of earlier calls
    (`_known_root`).

    The caller guarantees that no adapter or layer patch touches a layer below `split`
    (`plan_shared_trunk`). Single-token labels only.
    """
    tops_of = list(models) if models is not None else [model] * len(adapters)
    if len(tops_of) != len(adapters):
        raise InputError("shared-trunk scoring: one model per checkpoint")
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
            known = _known_root(roots, prompts[0], shared)
            if known is not None:
                shared, root = known
            else:
                head = tuple(prompts[0][:shared])
                root, _ = _stage(
                    model, adapters, tops_of, split, [list(head)], pad_id, None, None, device
                )
                _remember_root(roots, head, root)
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
                state, _ = _stage(
                    model, adapters, tops_of, split, stage2, pad_id, state, parents, device
                )
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
            _, logits = _stage(
                model, adapters, tops_of, split, rows, pad_id, state, index, device, read=True
            )
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
    """Local checkpoints on one base (the base itself, adapters off; adapters loaded into it
    that sit at or above `split`; separate models that are layer patches of it at or above
    `split`), scored from one pass over the base's layers below `split`.

    A pre/post pair is the common case (`SharedTrunk`); a base and two arms scored together
    (the debate demo's build) run the trunk once for all three."""

    checkpoints: tuple[Any, ...]  # HFVerifier
    split: int
    # The staged prefixes of earlier batches (the chat header): valid as long as the group's
    # checkpoints are, which is the group's life.
    _roots: dict[tuple[int, ...], _State] = field(default_factory=dict, init=False, repr=False)

    def label_logprobs(
        self, queries: Sequence[Query], tops: Sequence[torch.Tensor] | None = None
    ) -> list[torch.Tensor]:
        """Per checkpoint: [queries, 2 orders, 2 labels] log-probs, from one trunk pass
        (`tops`: per checkpoint, whether a label tops each prompt, filled when given)."""
        first = self.checkpoints[0]
        groups = first._encode(queries)
        base = first._base
        locks = {id(v._base): v._base.lock for v in self.checkpoints}
        with contextlib.ExitStack() as held:
            for lock in locks.values():
                held.enter_context(lock)
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
                models=[v._base.model for v in self.checkpoints],
                roots=self._roots,
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
        from eraudit_core.verifier.hf._verifier import scores_from_logprobs

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
        from eraudit_core.verifier.hf._verifier import scores_from_logprobs

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

    They must be read with the same prompt format, a supported decoder family and
    single-token labels; each is the first checkpoint's base model in memory (with or without
    an adapter) or another model that is a layer patch of that base (`_layer_patch`, checked
    tensor by tensor, no adapter of its own), and every adapter's and patch's layers are
    >= split (default: the lowest changed layer, which must not be 0).
    """
    who = "pre and post" if len(checkpoints) == 2 else "the checkpoints"
    for v in checkpoints:
        if not hasattr(v, "_base") or not hasattr(v, "_adapter_name"):
            raise InputError(f"checkpoint {getattr(v, 'name', v)}: not a local checkpoint")
    first = checkpoints[0]
    patched = [v for v in checkpoints if v._base is not first._base]
    for v in patched:
        if v._adapter_name is not None:
            raise InputError(
                f"{who} do not share one base model in memory ({v.name} carries an adapter on "
                "another model)"
            )
        if (v._base.device, v._base.dtype) != (first._base.device, first._base.dtype):
            raise InputError(f"{who} do not share one base model in memory (device or dtype)")
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
    if not names and not patched:
        raise InputError("no checkpoint has an adapter: nothing to share")
    lowest = len(decoder(model).layers)
    for name in names:
        touched = adapter_layers(model, name)
        if touched is None:
            raise InputError(f"adapter {name}: touches parameters outside the decoder layers")
        lowest = min(lowest, min(touched))
    for v in patched:
        try:
            patch = layer_patch(model, v._base.model, v.name)
        except InputError as exc:
            raise InputError(f"{who} do not share one base model in memory: {exc}") from exc
        if patch.lowest is not None:
            lowest = min(lowest, patch.lowest)
    if split is None:
        split = lowest
    if split > lowest:
        raise InputError(
            f"an adapter or layer patch touches decoder layer {lowest}, below the shared trunk's "
            f"split {split}"
        )
    if split < 1:
        raise InputError(
            "an adapter or layer patch touches decoder layer 0: there is no trunk to share"
        )
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
