"""The parts of a decoder-only causal LM that trunk sharing and trunk-cached training use.

Why a module of its own: scoring (`_shared_trunk`), layer patches (`_layer_patch`) and
training from cached trunk states (`eraudit_core.adapt`) all run a slice of the decoder layers
of a model that may sit under a PEFT wrapper; the slicing and the adapter switch live here once.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from eraudit_core.errors import InputError

_LAYER = re.compile(r"\.layers\.(\d+)\.")

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


def left_pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
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
        AdapterSwitch(model)(None),
        layers_only(model, 0, split, norm=False) as backbone,
    ):
        for b in range(0, len(order), batch_size):
            batch = order[b : b + batch_size]
            x, mask = left_pad([ids[i] for i in batch], pad_id)
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


class AdapterSwitch:
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
