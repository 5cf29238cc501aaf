"""Training a debate arm with the reference objective, resumably, at a named capacity.

Why resumable: on two CPU cores one arm takes hours, so the loop writes a checkpoint at least
every `checkpoint_seconds` and at every epoch end, and stops cleanly at a deadline. A checkpoint
holds the trained tensors, the optimiser state, both random generators' states, the epoch and
the batch reached and the loss history; each epoch's data order is a function of the seed and
the epoch alone, so a resumed run takes the same steps on the same rows and ends with the same
weights, bit for bit, as one never stopped (`test_fit_resume.py`).

Capacity is either LoRA (`lora-r8-top4`: rank 8 on the top 4 layers) or a full fine-tune of
the top N layers and the final norm (`full-top4`); the layers below, the embeddings and the
tied output head stay frozen, so the states entering the lowest trained layer come from the
disk trunk cache (`_trunk_cache.py`) and only the top layers run at each step.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eraudit_core.adapt._fit_objective import (
    FitExample,
    combined_loss,
    example_loss,
    two_way_summary,
)
from eraudit_core.adapt._trunk_cache import TrunkCache
from eraudit_core.errors import InputError

_CAPACITY = re.compile(r"(?:lora-r(\d+)|full)-top(\d+)")
# The training loop's clock, one name so a test can drive it.
_clock = time.perf_counter

CHECKPOINT = "checkpoint.pt"


@dataclass(frozen=True)
class FitConfig:
    """The recipe: capacity, learning rate, epochs, batch size and seed (all in the manifest).

    `capacity`: `full-topN` or `lora-rR-topN`. `checkpoint_seconds`: the longest stretch of
    training between two checkpoints (epoch ends always write one).
    """

    capacity: str = "full-top4"
    learning_rate: float = 1e-4
    epochs: int = 3
    batch_size: int = 8
    seed: int = 0
    trunk_dtype: str = "float32"
    checkpoint_seconds: float = 600.0

    def __post_init__(self) -> None:
        if _CAPACITY.fullmatch(self.capacity) is None:
            raise InputError(
                f"capacity: expected 'full-topN' or 'lora-rR-topN', got {self.capacity!r}"
            )
        for name in ("epochs", "batch_size", "top_layers"):
            if getattr(self, name) < 1:
                raise InputError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.kind == "lora" and self.rank < 1:
            raise InputError(f"capacity {self.capacity}: rank must be at least 1")
        if not self.learning_rate > 0:
            raise InputError(f"learning_rate: must be positive, got {self.learning_rate}")
        if not self.checkpoint_seconds > 0:
            raise InputError("checkpoint_seconds: must be positive")

    @property
    def kind(self) -> str:
        return "lora" if self.capacity.startswith("lora") else "full"

    @property
    def rank(self) -> int:
        m = _CAPACITY.fullmatch(self.capacity)
        return int(m.group(1)) if m and m.group(1) else 0

    @property
    def top_layers(self) -> int:
        m = _CAPACITY.fullmatch(self.capacity)
        return int(m.group(2)) if m else 0

    def recipe(self) -> dict[str, Any]:
        """What defines the trained weights (the checkpoint cadence does not)."""
        return {k: v for k, v in asdict(self).items() if k != "checkpoint_seconds"}


def build_model(model_dir: Path, config: FitConfig, n_layers: int) -> Any:
    """A fresh float32 model whose only trainable tensors are the capacity's."""
    import torch
    from transformers import AutoModelForCausalLM

    if config.top_layers > n_layers - 1:
        raise InputError(f"capacity {config.capacity}: the model has only {n_layers} layers")
    if config.kind == "lora":
        from eraudit_core.adapt._debate_training import DebateConfig, lora_model

        lora = DebateConfig(
            rank=config.rank, alpha=2 * config.rank, top_layers=config.top_layers, seed=config.seed
        )
        return lora_model(model_dir, lora, n_layers)
    torch.manual_seed(config.seed)
    model = AutoModelForCausalLM.from_pretrained(
        str(model_dir), local_files_only=True, use_safetensors=True, dtype=torch.float32
    )
    model.requires_grad_(False)
    from eraudit_core.verifier.hf import decoder

    backbone = decoder(model)
    for layer in list(backbone.layers)[n_layers - config.top_layers :]:
        layer.requires_grad_(True)
    backbone.norm.requires_grad_(True)
    return model


def trainable(model: Any) -> dict[str, Any]:
    return {n: p for n, p in model.named_parameters() if p.requires_grad}


@dataclass
class FitState:
    """Where a run stands; saved in every checkpoint."""

    epoch: int = 0
    batch: int = 0
    step: int = 0
    seconds: float = 0.0
    step_losses: list[list[float]] = field(default_factory=list)  # [total, fc, lm] per step
    curve: list[dict[str, Any]] = field(default_factory=list)
    window: list[float] = field(default_factory=list)  # p(correct) since the last checkpoint
    window_losses: list[list[float]] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return bool(self.curve) and self.curve[-1].get("finished", False)


def examples_digest(examples: Sequence[FitExample]) -> str:
    """Names the training data exactly (token ids and packing), so a checkpoint is only
    resumed on the rows it was trained on."""
    h = hashlib.sha256()
    for e in examples:
        h.update(json.dumps([e.row_id, e.prompt, e.tail, e.target, list(e.ids)]).encode())
    return h.hexdigest()


def epoch_order(seed: int, epoch: int, n: int) -> list[int]:
    """The rows' order in one epoch: a function of (seed, epoch) only, so resuming needs no
    generator state to reproduce it."""
    order = list(range(n))
    random.Random(f"{seed}:{epoch}").shuffle(order)
    return order


def _layout(e: FitExample) -> tuple[int, int, int] | None:
    return (e.prompt, e.tail, e.grounded) if e.grounded else None


def trunk_inputs(examples: Sequence[FitExample]) -> tuple[list[Any], list[Any]]:
    return [e.ids for e in examples], [_layout(e) for e in examples]


def _state(trunk: TrunkCache, e: FitExample) -> Any:
    h = trunk.read(e.ids, _layout(e))
    if h is None:
        raise InputError(f"trunk cache {trunk.path(e.ids, _layout(e))}: missing or damaged")
    return h


def save_checkpoint(
    path: Path, params: dict[str, Any], optim: Any, state: FitState, meta: dict
) -> None:
    """Atomic: a run killed while writing keeps the previous checkpoint. `params`: the
    trained tensors by their names in the whole model."""
    import torch

    payload = {
        "meta": meta,
        "trainable": {n: p.detach().clone() for n, p in params.items()},
        "optim": optim.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "python_rng": random.getstate(),
        "state": asdict(state),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path, params: dict[str, Any], optim: Any, meta: dict) -> FitState:
    """Restore a checkpoint written for the same recipe and data; refuse any other."""
    import torch

    payload = torch.load(path, weights_only=False)
    if payload["meta"] != meta:
        diff = sorted(k for k in meta if payload["meta"].get(k) != meta[k])
        raise InputError(f"{path}: written for another recipe or data (differs in {diff})")
    if set(params) != set(payload["trainable"]):
        raise InputError(f"{path}: its trained tensors are not this capacity's")
    with torch.no_grad():
        for n, p in params.items():
            p.copy_(payload["trainable"][n])
    optim.load_state_dict(payload["optim"])
    torch.set_rng_state(payload["torch_rng"])
    random.setstate(payload["python_rng"])
    return FitState(**payload["state"])


def train_fit(
    model: Any,
    examples: Sequence[FitExample],
    trunk: TrunkCache,
    config: FitConfig,
    work: Path,
    *,
    resume: bool = False,
    deadline: float | None = None,
    stop_after_steps: int | None = None,
    progress: Callable[[str], None] | None = None,
    label: str = "fit",
) -> FitState:
    """Train `model` in place from the trunk cache; checkpoints go to `work/checkpoint.pt`.

    `deadline`: a `time.time()` after which the run checkpoints and returns unfinished;
    `stop_after_steps`: the same after that many steps in this call (tests). Without `resume`
    an existing checkpoint is refused rather than overwritten.
    """
    import torch

    from eraudit_core.verifier.hf import upper_layers_only

    if not examples:
        raise InputError(f"{label}: no training rows")
    named = trainable(model)  # names taken outside `upper_layers_only`, which renumbers layers
    optim = torch.optim.AdamW(list(named.values()), lr=config.learning_rate, weight_decay=0.0)
    meta = {"recipe": config.recipe(), "data": examples_digest(examples), "split": trunk.split}
    path = work / CHECKPOINT
    if path.exists() and not resume:
        raise InputError(f"{path}: a checkpoint exists; pass --resume to continue it")
    state = load_checkpoint(path, named, optim, meta) if path.exists() else FitState()
    if state.done:
        return state
    n_batches = -(-len(examples) // config.batch_size)
    began, last_save, steps_here = _clock(), _clock(), 0
    step_ended = last_save
    seconds0 = state.seconds

    def checkpoint(kind: str, finished: bool = False) -> None:
        nonlocal last_save
        state.seconds = seconds0 + _clock() - began
        if state.window_losses:
            mean = [
                sum(x) / len(state.window_losses) for x in zip(*state.window_losses, strict=True)
            ]
            state.curve.append(
                {
                    "step": state.step,
                    "epoch": state.epoch + state.batch / n_batches,
                    "kind": kind,
                    "seconds": round(state.seconds, 1),
                    "loss": round(mean[0], 5),
                    "forced_choice_loss": round(mean[1], 5),
                    "grounded_lm_loss": round(mean[2], 5),
                    "running_train_two_way_accuracy": round(
                        sum(p > 0.5 for p in state.window) / len(state.window), 4
                    ),
                    "rows": len(state.window),
                    "finished": finished,
                }
            )
        state.window, state.window_losses = [], []
        save_checkpoint(path, named, optim, state, meta)
        last_save = _clock()
        if progress and state.curve:
            progress(f"{label}: checkpoint {json.dumps(state.curve[-1])}")

    model.train()
    with upper_layers_only(model, trunk.split):
        while state.epoch < config.epochs:
            order = epoch_order(config.seed, state.epoch, len(examples))
            while state.batch < n_batches:
                if (deadline is not None and time.time() >= deadline) or (
                    stop_after_steps is not None and steps_here >= stop_after_steps
                ):
                    checkpoint("stop")
                    model.eval()
                    return state
                b = state.batch * config.batch_size
                batch = [examples[i] for i in order[b : b + config.batch_size]]
                optim.zero_grad(set_to_none=True)
                losses = [example_loss(model, e, _state(trunk, e)) for e in batch]
                loss, fc, lm = combined_loss(losses)
                loss.backward()
                optim.step()
                state.step_losses.append([float(loss.detach()), fc, lm])
                state.window_losses.append(state.step_losses[-1])
                state.window.extend(x.p_correct for x in losses)
                state.batch += 1
                state.step += 1
                steps_here += 1
                # Saving when the next step, as long as this one, would end past the interval
                # keeps the gap between checkpoints within it, not one step beyond.
                now = _clock()
                step_seconds, step_ended = now - step_ended, now
                if now - last_save + step_seconds >= config.checkpoint_seconds:
                    checkpoint("time")
            state.epoch += 1
            state.batch = 0
            checkpoint("epoch", finished=state.epoch == config.epochs)
    model.eval()
    return state


def evaluate_rows(model: Any, examples: Sequence[FitExample], trunk: TrunkCache) -> dict[str, Any]:
    """The manipulation check: two-way p(correct letter) at the answer slot of each row
    (read with the prompt and `Answer:` only), summarised by `two_way_summary`."""
    import torch

    from eraudit_core.verifier.hf import upper_layers_only

    ps = []
    model.eval()
    with torch.no_grad(), upper_layers_only(model, trunk.split):
        for e in examples:
            h = _state(trunk, e)[: e.prompt + e.tail]
            ps.append(example_loss(model, e.without_grounded(), h).p_correct)
    return two_way_summary(ps, [e.orientation for e in examples])
