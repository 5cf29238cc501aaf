"""A checkpoint that differs from a base only in its top decoder layers: a layer patch.

Why: a full fine-tune of the top N layers (`eraudit adapt --capacity full-topN`) is saved as a
whole model folder, yet every tensor below its lowest trained layer, the embeddings and the
tied head are the base's, bit for bit. The hidden states entering its lowest trained layer are
then the base's, so it can share the base's trunk pass (`_shared_trunk`) like a top-layer
adapter can. Nothing is assumed: `layer_patch` compares the two models tensor by tensor and
names the tensors that differ; a difference anywhere but the decoder layers and the final norm
(or a different architecture) is refused with the tensor's name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from eraudit_core.errors import InputError
from eraudit_core.verifier.hf._decoder_parts import causal_lm

_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_NORM = re.compile(r"(?:^|\.)norm\.weight$")
# Configuration keys that name where or how a model was saved, not what it computes.
_CONFIG_IGNORED = frozenset(
    {"_name_or_path", "transformers_version", "torch_dtype", "dtype", "architectures"}
)


@dataclass(frozen=True)
class LayerPatch:
    """What a checkpoint changes relative to a base: the decoder layers whose tensors differ,
    whether the final norm does, and the differing tensors' names."""

    layers: frozenset[int]
    norm: bool
    tensors: tuple[str, ...]

    @property
    def lowest(self) -> int | None:
        """The lowest changed decoder layer (None: no layer changed)."""
        return min(self.layers) if self.layers else None


def base_tensors(model: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """The model's own tensors by name in module order, LoRA adapters left out: under a PEFT
    wrapper a wrapped weight's name loses its `.base_layer`, so a base carrying adapters
    compares as the base."""
    for name, tensor in causal_lm(model).state_dict(keep_vars=True).items():
        if "lora_" in name or "lora_magnitude" in name:
            continue
        yield name.replace(".base_layer.", "."), tensor.detach()


def _config_differences(base: Any, other: Any) -> list[str]:
    a = getattr(base, "config", None)
    b = getattr(other, "config", None)
    if a is None or b is None:
        return ["config"]
    da, db = a.to_dict(), b.to_dict()
    keys = (set(da) | set(db)) - _CONFIG_IGNORED
    return sorted(k for k in keys if da.get(k) != db.get(k))


def layer_patch(base_model: Any, model: Any, name: str) -> LayerPatch:
    """The layer patch that turns `base_model` into `model`, or InputError naming the first
    tensor (or configuration key) that a layer patch cannot change. `name` labels the
    checkpoint in messages."""
    config_diff = _config_differences(causal_lm(base_model), causal_lm(model))
    if config_diff:
        raise InputError(
            f"checkpoint {name}: its configuration differs from the base's in "
            f"{', '.join(config_diff)}: not a layer patch of the base"
        )
    base = dict(base_tensors(base_model))
    seen: set[str] = set()
    layers: set[int] = set()
    norm = False
    changed: list[str] = []
    for key, tensor in base_tensors(model):
        seen.add(key)
        ref = base.get(key)
        if ref is None:
            raise InputError(f"checkpoint {name}: tensor {key} is not in the base model")
        if ref.shape != tensor.shape or ref.dtype != tensor.dtype:
            raise InputError(
                f"checkpoint {name}: tensor {key} is {tuple(tensor.shape)} {tensor.dtype}, the "
                f"base's {tuple(ref.shape)} {ref.dtype}"
            )
        if torch.equal(ref, tensor.to(ref.device)):
            continue
        m = _LAYER.search(key)
        if m is not None:
            layers.add(int(m.group(1)))
        elif _NORM.search(key):
            norm = True
        else:
            raise InputError(
                f"checkpoint {name}: tensor {key} differs from the base's; a layer patch may "
                "change only decoder layers and the final norm"
            )
        changed.append(key)
    missing = sorted(set(base) - seen)
    if missing:
        raise InputError(f"checkpoint {name}: tensor {missing[0]} of the base model is missing")
    return LayerPatch(frozenset(layers), norm, tuple(changed))
