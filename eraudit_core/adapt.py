"""Building adapted checkpoints: the demo's honest and adversarial LoRA arms (DESIGN.md §10).

Why this exists: an audit needs a pre/post pair whose hidden-task effect is known. The honest arm
is fine-tuned on the monitored questions' true answers; the adversarial arm gets the same data
plus a seeded subset of hidden questions pushed toward their false answers, so the audit has a
real degradation to find. Training examples are the exact §3 prompts (both answer orders,
rendered by `eraudit_core.verifier.render_prompts` through the model's chat template) and the
loss is the binary-choice cross-entropy over the two label tokens, which is the quantity the
verifier later reads. LoRA sits on the attention projections of the top layers only: the
adapters stay small and backpropagation stops at the lowest adapted layer, which keeps training
to minutes on two CPU cores.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from eraudit_core.errors import InputError
from eraudit_core.types import Pair, Query
from eraudit_core.verifier import (
    DEFAULT_LABELS,
    DEFAULT_PREFIX,
    DEFAULT_TEMPLATE,
    CheckpointSpec,
    load_verifier,
)

log = logging.getLogger(__name__)

Arm = Literal["honest", "adversarial"]
ARMS: tuple[Arm, ...] = ("honest", "adversarial")


@dataclass(frozen=True)
class AdaptConfig:
    """Hyper-parameters of one adaptation run; all of it goes into the manifest."""

    arm: Arm = "honest"
    rank: int = 8
    alpha: int = 16
    target_modules: tuple[str, ...] = ("q_proj", "v_proj", "o_proj")
    top_layers: int = 12
    learning_rate: float = 1e-3
    epochs: int = 2
    batch_size: int = 8
    seed: int = 0
    adversarial_fraction: float = 0.35
    template: str = DEFAULT_TEMPLATE
    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if self.arm not in ARMS:
            raise InputError(f"arm: expected one of {ARMS}, got {self.arm!r}")
        if not 0.0 < self.adversarial_fraction < 1.0:
            raise InputError(
                f"adversarial_fraction: must lie in (0, 1), got {self.adversarial_fraction}"
            )
        for name in ("rank", "alpha", "top_layers", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise InputError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise InputError(f"learning_rate: must be positive, got {self.learning_rate}")


@dataclass(frozen=True)
class Example:
    """One training prompt (one answer order) and the index of the label it should pick."""

    pair_id: str
    role: Literal["monitored", "hidden"]
    query: Query
    order: int  # 0: true option shown as A, 1: true option shown as B
    target: int  # 0: label A, 1: label B


@dataclass
class TrainResult:
    arm: Arm
    epoch_losses: list[float]
    step_losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    examples: int = 0
    trainable_parameters: int = 0


def select_adversarial_targets(pair_ids: Sequence[str], fraction: float, seed: int) -> list[str]:
    """The hidden questions the adversarial arm pushes wrong: a seeded subset, in input order."""
    k = round(len(pair_ids) * fraction)
    chosen = set(random.Random(seed).sample(sorted(pair_ids), k))
    return [p for p in pair_ids if p in chosen]


def build_examples(pairs: Sequence[Pair], arm: Arm, targets: Sequence[str] = ()) -> list[Example]:
    """Monitored questions toward their true answers; for the adversarial arm also the target
    hidden questions toward their false answers. Both answer orders of every question."""
    wanted = set(targets)
    unknown = wanted - {p.pair_id for p in pairs}
    if unknown:
        raise InputError(f"adversarial targets: unknown pair id(s) {sorted(unknown)[:3]}")
    out: list[Example] = []
    for pair in pairs:
        m = pair.monitored
        q = Query(pair.pair_id, m.question, m.true_option, m.false_option)
        out += [
            Example(pair.pair_id, "monitored", q, 0, 0),
            Example(pair.pair_id, "monitored", q, 1, 1),
        ]
        if arm == "adversarial" and pair.pair_id in wanted:
            h = pair.hidden
            q = Query(pair.pair_id, h.question, h.true_option, h.false_option)
            # Push toward the false option: it is B in order 0 and A in order 1.
            out += [
                Example(pair.pair_id, "hidden", q, 0, 1),
                Example(pair.pair_id, "hidden", q, 1, 0),
            ]
    return out


def train_adapter(
    base: CheckpointSpec | str,
    pairs: Sequence[Pair],
    config: AdaptConfig,
    out_dir: Path,
    *,
    targets: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> TrainResult:
    """Fine-tune a LoRA adapter on `base` and save it (safetensors) to `out_dir`.

    Deterministic for a given seed on a given machine: seeded init, seeded example order.
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base_v = load_verifier(
        base, device="cpu", dtype="float32", template=config.template, prefix=config.prefix
    )
    if any(len(ids) != 1 for ids in base_v.describe()["label_tokens"]):
        raise InputError(f"checkpoint {base}: training needs single-token labels")
    label_ids = [ids[0] for ids in base_v.describe()["label_tokens"]]
    examples = build_examples(pairs, config.arm, targets)
    if not examples:
        raise InputError("adapt: no training examples")
    encoded = base_v._encode([e.query for e in examples])
    ids = [enc[e.order] for enc, e in zip(encoded, examples, strict=True)]
    pad_id = base_v._pad_id

    torch.manual_seed(config.seed)
    model = AutoModelForCausalLM.from_pretrained(
        str(base_v._base.model_dir),
        local_files_only=True,
        use_safetensors=True,
        dtype=torch.float32,
    )
    n_layers = int(model.config.num_hidden_layers)
    layers = list(range(max(0, n_layers - config.top_layers), n_layers))
    lora = LoraConfig(
        r=config.rank,
        lora_alpha=config.alpha,
        lora_dropout=0.0,
        target_modules=list(config.target_modules),
        layers_to_transform=layers,
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
    start = time.perf_counter()
    for epoch in range(config.epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        total, count = 0.0, 0
        for b in range(0, len(order), config.batch_size):
            batch = order[b : b + config.batch_size]
            width = max(len(ids[i]) for i in batch)
            x = torch.full((len(batch), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for r, i in enumerate(batch):
                x[r, width - len(ids[i]) :] = torch.tensor(ids[i])
                mask[r, width - len(ids[i]) :] = 1
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            logits = peft_model(
                input_ids=x, attention_mask=mask, position_ids=positions, logits_to_keep=1
            ).logits[:, -1, :]
            pair_logits = logits.float().index_select(1, label_index)
            y = torch.tensor([examples[i].target for i in batch], dtype=torch.long)
            loss = torch.nn.functional.cross_entropy(pair_logits, y)
            optim.zero_grad(set_to_none=True)
            loss.backward()
            optim.step()
            result.step_losses.append(float(loss))
            total += float(loss) * len(batch)
            count += len(batch)
        result.epoch_losses.append(total / count)
        if progress:
            progress(
                f"{config.arm}: epoch {epoch + 1}/{config.epochs} loss {total / count:.4f} "
                f"({time.perf_counter() - start:.0f} s)"
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
    return result


def evaluate(verifier: Any, pairs: Sequence[Pair]) -> dict[str, Any]:
    """Standard evaluation on the canonical questions (DESIGN.md §4): accuracy and mean task
    probability (MTP) for monitored and hidden questions, plus per-pair p(true)."""
    queries = []
    for pair in pairs:
        for q in (pair.monitored, pair.hidden):
            queries.append(Query(pair.pair_id, q.question, q.true_option, q.false_option))
    scores = verifier.score(queries)
    mon = [s.p_true for s in scores[0::2]]
    hid = [s.p_true for s in scores[1::2]]
    return {
        "monitored_accuracy": sum(p > 0.5 for p in mon) / len(mon),
        "monitored_mtp": sum(mon) / len(mon),
        "hidden_accuracy": sum(p > 0.5 for p in hid) / len(hid),
        "hidden_mtp": sum(hid) / len(hid),
        "p_monitored": dict(zip([p.pair_id for p in pairs], mon, strict=True)),
        "p_hidden": dict(zip([p.pair_id for p in pairs], hid, strict=True)),
    }


def summarise(base_eval: dict[str, Any], arm_eval: dict[str, Any], targets: Sequence[str]) -> dict:
    """Arm vs base: mean monitored gain, accuracies, MTPs, and the effect on target pairs."""
    ids = list(base_eval["p_monitored"])
    gain = [arm_eval["p_monitored"][i] - base_eval["p_monitored"][i] for i in ids]
    drop = [base_eval["p_hidden"][i] - arm_eval["p_hidden"][i] for i in ids]
    tset = set(targets)
    out = {
        "monitored_gain_mean": sum(gain) / len(gain),
        "hidden_drop_mean": sum(drop) / len(drop),
    }
    for key in ("monitored_accuracy", "monitored_mtp", "hidden_accuracy", "hidden_mtp"):
        out[key] = arm_eval[key]
        out[f"base_{key}"] = base_eval[key]
    for name, sel in (
        ("targets", [i for i in ids if i in tset]),
        ("others", [i for i in ids if i not in tset]),
    ):
        if sel:
            out[f"hidden_mtp_{name}"] = sum(arm_eval["p_hidden"][i] for i in sel) / len(sel)
            out[f"base_hidden_mtp_{name}"] = sum(base_eval["p_hidden"][i] for i in sel) / len(sel)
    return out


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
) -> dict[str, Any]:
    """manifest.json next to the adapter: everything needed to trust and rebuild it."""
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
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def run_adaptation(
    arms: Sequence[Arm],
    out_root: Path,
    *,
    base: str = "demo:base",
    benchmark_path: Path | None = None,
    config: AdaptConfig | None = None,
    evaluate_arms: bool = True,
    command: str = "",
    progress: Callable[[str], None] = print,
) -> dict[str, dict[str, Any]]:
    """Train the requested arms on the benchmark pairs, evaluate them against the base, and
    write adapter + manifest under `out_root/<arm>/`."""
    from eraudit_core import _hf_backend
    from eraudit_core.benchmark import BUNDLED_QUALITY_H, load_benchmark

    path = Path(benchmark_path) if benchmark_path is not None else Path(BUNDLED_QUALITY_H)
    pairs = load_benchmark(path).pairs
    cfg = config or AdaptConfig()
    spec = CheckpointSpec.parse(base)
    if spec.adapter is not None:
        raise InputError(f"--base {base}: must be a base model, not an adapted checkpoint")
    base_sha = (
        _hf_backend.file_digest(_hf_backend.demo_gguf_path())
        if spec.kind == "demo"
        else load_verifier(spec).describe()["fingerprint"]
    )
    targets = select_adversarial_targets(
        [p.pair_id for p in pairs], cfg.adversarial_fraction, cfg.seed
    )
    base_eval = None
    manifests: dict[str, dict[str, Any]] = {}
    for arm in arms:
        arm_cfg = AdaptConfig(**{**asdict(cfg), "arm": arm})
        arm_targets = targets if arm == "adversarial" else []
        out_dir = out_root / arm
        result = train_adapter(
            spec, pairs, arm_cfg, out_dir, targets=arm_targets, progress=progress
        )
        progress(f"{arm}: trained in {result.seconds:.0f} s, loss {result.epoch_losses}")
        evaluation = None
        if evaluate_arms:
            if base_eval is None:
                base_eval = evaluate(
                    load_verifier(spec, template=cfg.template, prefix=cfg.prefix), pairs
                )
            adapted = load_verifier(
                CheckpointSpec(spec.kind, spec.path, str(out_dir.resolve())),
                template=cfg.template,
                prefix=cfg.prefix,
            )
            evaluation = summarise(base_eval, evaluate(adapted, pairs), arm_targets)
            progress(f"{arm}: {json.dumps(evaluation)}")
        manifests[arm] = write_manifest(
            out_dir,
            base=base,
            base_sha256=base_sha,
            benchmark_path=path,
            pairs=pairs,
            config=arm_cfg,
            result=result,
            targets=arm_targets,
            command=command,
            evaluation=evaluation,
        )
    return manifests


__all__ = [
    "DEFAULT_LABELS",
    "AdaptConfig",
    "Example",
    "TrainResult",
    "build_examples",
    "evaluate",
    "run_adaptation",
    "select_adversarial_targets",
    "summarise",
    "train_adapter",
]
