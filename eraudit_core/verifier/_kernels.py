"""Scoring kernels of the local backend: label log-probabilities from a causal LM, and p_true.

Why the fast path is shaped this way (docs/design.md §3, §9): every prompt of an audit starts
with the same chat-template header, and the two answer orders of one query share everything up
to the options. So the shared header is run once, each query's own shared part once per query,
and only the order-specific tails are run per order, reusing the key/value cache of what came
before. Batches are sorted by length (little padding), only the last position's logits are
computed, and all of it runs under `torch.inference_mode`. `naive_label_logprobs` is the
reference: one prompt at a time, full-vocabulary logits at every position; the two must agree
to 1e-4. `scores_from_logprobs` turns [queries, 2 orders, 2 labels] log-probs into p_true for
every backend (local, shared-trunk, served).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from eraudit_core.types import QueryScore


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


def read_positions(width: int, keep: int, device: str) -> torch.Tensor:
    """The `logits_to_keep` a causal LM's forward gets: the last `keep` of `width` positions
    as an index tensor; `keep=0` reads none (a staged prefix whose logits nobody reads).

    Why an index and not the integer: transformers slices `hidden[:, -keep:, :]`, a view whose
    rows lie a sequence apart, and torch runs the head on it as a batched product that reads
    the head's weight once per row (49,152 x 576 on the demo model: 64 ms for 12 rows against
    20 ms). An index gathers the rows into one block, so the head is one matrix product, and
    the integer 0 would mean every position."""
    return torch.arange(width - keep, width, device=device)


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
    """Run left-padded rows on top of an optional cache; return (last `keep` logits, kv, mask)
    (`keep=0`: no logits, only the cache).

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
        logits_to_keep=read_positions(width, keep, device),
    )
    return out.logits.float(), _kv_tensors(out.past_key_values), mask


def fast_label_logprobs(
    model: Any,
    groups: Sequence[Sequence[Sequence[int]]],
    labels: Sequence[Sequence[int]],
    *,
    batch_size: int,
    pad_id: int,
    device: str,
    share_prefix: bool = True,
    tops: torch.Tensor | None = None,
) -> torch.Tensor:
    """log p(label | prompt) for every prompt of every group: tensor [groups, members, labels].

    A group is the prompts of one query (its two answer orders). A label of several tokens is
    teacher-forced and its token log-probabilities are summed (docs/design.md §3). `tops`, a
    bool tensor [groups, members] when given, is filled with whether each prompt's most likely
    next token is the first token of a label (the per-prompt label check's second signal).
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
                model, [list(prompts[0][:shared])], pad_id, None, None, None, 0, device
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
                    model, stage2, pad_id, past, past_mask, parents, 0, device
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
            if tops is not None:
                _fill_tops(tops, logp, reads, labels, keep)
            for r, (gi, mi, li) in enumerate(reads):
                if li < 0:
                    for lj, lab in enumerate(labels):
                        out[gi, mi, lj] = logp[r, -1, lab[0]]
                else:
                    lab = labels[li]
                    steps = logp[r, keep - len(lab) :, :]
                    out[gi, mi, li] = sum(steps[t, tok] for t, tok in enumerate(lab))
    return out


def _fill_tops(
    tops: torch.Tensor,
    logp: torch.Tensor,
    reads: Sequence[tuple[int, int, int]],
    labels: Sequence[Sequence[int]],
    keep: int,
) -> None:
    """Whether the most likely token where the answer is read is a label's first token, for
    each (group, member) of `reads` (rows of the first label only when labels are several
    tokens: every label's row reads the same position for its first token)."""
    firsts = torch.tensor(sorted({lab[0] for lab in labels}), dtype=torch.long)
    for r, (gi, mi, li) in enumerate(reads):
        if li < 0:
            pos = -1
        elif li == 0:
            pos = keep - len(labels[0])
        else:
            continue
        tops[gi, mi] = bool(torch.isin(torch.argmax(logp[r, pos]), firsts))


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
