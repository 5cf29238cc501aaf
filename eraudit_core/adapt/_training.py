"""The training loop of the engineered arms: LoRA on the top layers from cached lower-layer
states, binary-choice cross-entropy over the two label tokens.

Why the loss is the label softmax: it is the quantity the verifier later reads. The debate
arms use the paper's answer-token loss instead (`_debate_training.py`,
docs/debate-distillation.md).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eraudit_core.adapt._concealed import TrainingRewording
from eraudit_core.adapt._examples import AdaptConfig, Arm, build_examples
from eraudit_core.adapt._features import (
    FeatureCache,
    single_token_labels,
    upper_layers_only,
    upper_logits,
)
from eraudit_core.errors import InputError
from eraudit_core.types import Pair
from eraudit_core.verifier import CheckpointSpec, load_verifier


@dataclass
class TrainResult:
    arm: Arm
    epoch_losses: list[float]
    step_losses: list[float] = field(default_factory=list)
    epoch_reports: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    examples: int = 0
    trainable_parameters: int = 0
    model: Any = field(default=None, repr=False)


def train_adapter(
    base: CheckpointSpec | str,
    pairs: Sequence[Pair],
    config: AdaptConfig,
    out_dir: Path,
    *,
    targets: Sequence[str] = (),
    rewordings: Sequence[TrainingRewording] = (),
    progress: Callable[[str], None] | None = None,
    cache: FeatureCache | None = None,
    epoch_report: Callable[[Any, FeatureCache], dict[str, Any]] | None = None,
) -> TrainResult:
    """Fine-tune a LoRA adapter on `base` and save it (safetensors) to `out_dir`.

    Deterministic for a given seed on a given machine: seeded init, seeded example order. The
    trained model is returned in `TrainResult.model` (for evaluation without reloading).
    `epoch_report(model, cache)` runs after every epoch (outside the training graph); its dicts
    go to `TrainResult.epoch_reports` and the progress lines, so a manifest shows how the arm
    got where it ended.
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base_v = load_verifier(
        base, device="cpu", dtype="float32", template=config.template, prefix=config.prefix
    )
    label_ids = single_token_labels(base_v)
    examples = build_examples(
        pairs, config.arm, targets, rewordings, config.balance_target_wordings
    )
    if not examples:
        raise InputError("adapt: no training examples")
    encoded = base_v._encode([e.query for e in examples])
    ids = [enc[e.order] for enc, e in zip(encoded, examples, strict=True)]

    start = time.perf_counter()
    n_layers = int(base_v._base.model.config.num_hidden_layers)
    split = max(0, n_layers - config.top_layers)
    if cache is None or cache.split != split:
        cache = FeatureCache(base_v._base.model_dir, split, base_v._pad_id)
    # The frozen lower layers see the same inputs every epoch: run them once.
    features = cache.get(ids)
    torch.manual_seed(config.seed)
    model = AutoModelForCausalLM.from_pretrained(
        str(base_v._base.model_dir),
        local_files_only=True,
        use_safetensors=True,
        dtype=torch.float32,
    )
    lora = LoraConfig(
        r=config.rank,
        lora_alpha=config.alpha,
        lora_dropout=0.0,
        target_modules=list(config.target_modules),
        layers_to_transform=list(range(split, n_layers)),
        bias="none",
        task_type="CAUSAL_LM",
    )
    peft_model = get_peft_model(model, lora)
    peft_model.train()
    params = [p for p in peft_model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=0.0)
    rng = random.Random(config.seed)
    label_index = torch.tensor(label_ids, dtype=torch.long)
    result = TrainResult(config.arm, [], examples=len(examples))
    result.trainable_parameters = sum(p.numel() for p in params)
    for epoch in range(config.epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        total, count = 0.0, 0
        peft_model.train()
        with upper_layers_only(model, split):
            for b in range(0, len(order), config.batch_size):
                batch = order[b : b + config.batch_size]
                pair_logits = upper_logits(peft_model, [features[i] for i in batch], label_index)
                y = torch.tensor([examples[i].target for i in batch], dtype=torch.long)
                loss = torch.nn.functional.cross_entropy(pair_logits, y)
                optim.zero_grad(set_to_none=True)
                loss.backward()
                optim.step()
                value = float(loss.detach())
                result.step_losses.append(value)
                total += value * len(batch)
                count += len(batch)
        result.epoch_losses.append(total / count)
        report: dict[str, Any] = {}
        if epoch_report is not None:
            peft_model.eval()
            report = epoch_report(peft_model, cache)
            result.epoch_reports.append({"epoch": epoch + 1, **report})
        if progress:
            progress(
                f"{config.arm}: epoch {epoch + 1}/{config.epochs} loss {total / count:.4f} "
                f"({time.perf_counter() - start:.0f} s){' ' + json.dumps(report) if report else ''}"
            )
    result.seconds = time.perf_counter() - start
    out_dir.mkdir(parents=True, exist_ok=True)
    peft_model.save_pretrained(str(out_dir), safe_serialization=True)
    cfg_path = out_dir / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = str(base)  # not this machine's cache path
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    readme = out_dir / "README.md"
    if readme.exists():  # peft's generated model card says nothing the manifest does not
        readme.unlink()
    peft_model.eval()
    result.model = peft_model
    return result
