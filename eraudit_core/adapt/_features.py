"""Lower-layer features shared by every arm: the frozen layers run once per prompt.

Why: LoRA sits only on the top decoder layers, so the hidden states entering the first adapted
layer never change during training or between arms. Computing them once and running only the
adapted layers per step keeps training and evaluation to minutes on two CPU cores.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eraudit_core.errors import InputError


class FeatureCache:
    """Hidden states entering the first adapted layer, per prompt, shared by every arm and by
    the evaluation: the layers below never change, so they run once per prompt in total."""

    def __init__(self, model_dir: Path, split: int, pad_id: int) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        self.model_dir = model_dir
        self.split = split
        self.pad_id = pad_id
        self.model = AutoModelForCausalLM.from_pretrained(
            str(model_dir), local_files_only=True, use_safetensors=True, dtype=torch.float32
        )
        self.model.eval()
        self._store: dict[tuple[int, ...], Any] = {}

    def get(self, ids: Sequence[Sequence[int]]) -> list[Any]:
        missing = list({tuple(x): None for x in ids if tuple(x) not in self._store})
        if missing:
            feats = lower_layer_features(self.model, missing, self.split, self.pad_id)
            self._store.update(zip(missing, feats, strict=True))
        return [self._store[tuple(x)] for x in ids]


def upper_logits(model: Any, feats: Sequence[Any], label_index: Any) -> Any:
    """Logits of the two labels at the last position, from lower-layer features."""
    h, mask, positions = pad_features(feats)
    logits = model(
        inputs_embeds=h,
        attention_mask=mask,
        position_ids=positions,
        logits_to_keep=1,
        use_cache=False,
    ).logits[:, -1, :]
    return logits.float().index_select(1, label_index)


def single_token_labels(verifier: Any) -> list[int]:
    label_tokens = verifier.describe()["label_tokens"]
    if any(len(ids) != 1 for ids in label_tokens):
        raise InputError(f"checkpoint {verifier.name}: training needs single-token labels")
    return [ids[0] for ids in label_tokens]


def lower_layer_features(
    model: Any, ids: Sequence[Sequence[int]], split: int, pad_id: int, batch_size: int = 8
) -> list[Any]:
    """Hidden states entering decoder layer `split`, one [tokens, hidden] tensor per prompt.

    Computed once without gradients: LoRA sits only above `split`, so these never change
    (the kernel is the verifier's shared trunk, which scoring uses too).
    """
    from eraudit_core.verifier.hf import trunk_states

    return trunk_states(model, ids, split, pad_id, batch_size)


def pad_features(feats: Sequence[Any]) -> tuple[Any, Any, Any]:
    """Left-pad per-prompt hidden states into a batch with its mask and position ids."""
    import torch

    width = max(f.shape[0] for f in feats)
    h = torch.zeros((len(feats), width, feats[0].shape[1]), dtype=feats[0].dtype)
    mask = torch.zeros((len(feats), width), dtype=torch.long)
    for r, f in enumerate(feats):
        h[r, width - f.shape[0] :] = f
        mask[r, width - f.shape[0] :] = 1
    return h, mask, (mask.cumsum(-1) - 1).clamp(min=0)


def upper_layers_only(model: Any, split: int) -> contextlib.AbstractContextManager[Any]:
    """Run only decoder layers >= split (inputs are `lower_layer_features`); restore after,
    so saved adapter weights keep their true layer numbers."""
    from eraudit_core.verifier.hf import upper_layers_only as upper

    return upper(model, split)
