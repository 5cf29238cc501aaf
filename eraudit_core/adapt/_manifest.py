"""manifest.json next to each adapter: everything needed to trust and rebuild it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from eraudit_core.adapt._examples import AdaptConfig
from eraudit_core.adapt._training import TrainResult
from eraudit_core.types import Pair


def file_sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def write_manifest(
    out_dir: Path,
    *,
    base: str,
    base_sha256: str,
    benchmark_path: Path,
    pairs: Sequence[Pair],
    config: AdaptConfig,
    result: TrainResult,
    targets: Sequence[str],
    command: str,
    evaluation: dict[str, Any] | None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """manifest.json next to the adapter: everything needed to trust and rebuild it (`extra`:
    arm-specific records such as the concealed arm's training split)."""
    import peft
    import torch
    import transformers

    manifest = {
        "arm": config.arm,
        "base_model": {"spec": base, "sha256": base_sha256},
        "data": {
            "benchmark": benchmark_path.name,
            "sha256": file_sha256(benchmark_path),
            "pairs": len(pairs),
            "examples": result.examples,
        },
        "hyperparameters": {k: v for k, v in asdict(config).items() if k not in ("arm", "seed")},
        "seed": config.seed,
        "adversarial_targets": list(targets),
        "training": {
            "epoch_losses": [round(x, 5) for x in result.epoch_losses],
            "final_loss": round(result.epoch_losses[-1], 5),
            "seconds": round(result.seconds, 1),
            "steps": len(result.step_losses),
            "trainable_parameters": result.trainable_parameters,
            **({"epoch_reports": result.epoch_reports} if result.epoch_reports else {}),
        },
        "adapter_sha256": file_sha256(out_dir / "adapter_model.safetensors"),
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "peft": peft.__version__,
        },
        "command": command,
    }
    if evaluation is not None:
        manifest["evaluation_vs_base"] = evaluation
    manifest.update(extra or {})
    text = json.dumps(manifest, indent=2) + "\n"
    (out_dir / "manifest.json").write_text(text)
    return dict(json.loads(text))


def library_versions() -> dict[str, str]:
    import peft
    import torch
    import transformers

    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
    }


def write_debate_manifest(
    out_dir: Path,
    *,
    arm: str,
    base: str,
    base_sha256: str,
    data: Mapping[str, Any],
    hyperparameters: Mapping[str, Any],
    seed: int,
    training: Mapping[str, Any],
    command: str,
) -> dict[str, Any]:
    """manifest.json of a debate arm: the training file by its sha256, rows, per-epoch loss,
    steps and seconds, next to everything else needed to rebuild the adapter."""
    manifest = {
        "arm": arm,
        "recipe": "debate distillation: LoRA on the top layers, judge prompt through the chat "
        "template, loss on the answer tokens (docs/debate-distillation.md)",
        "base_model": {"spec": base, "sha256": base_sha256},
        "data": dict(data),
        "hyperparameters": dict(hyperparameters),
        "seed": seed,
        "training": dict(training),
        "adapter_sha256": file_sha256(out_dir / "adapter_model.safetensors"),
        "versions": library_versions(),
        "command": command,
    }
    text = json.dumps(manifest, indent=2) + "\n"
    (out_dir / "manifest.json").write_text(text)
    return dict(json.loads(text))
