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

import contextlib
import hashlib
import json
import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
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
    top_layers: int = 4
    learning_rate: float = 5e-3
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
    model: Any = field(default=None, repr=False)


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


def _upper_logits(model: Any, feats: Sequence[Any], label_index: Any) -> Any:
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


def train_adapter(
    base: CheckpointSpec | str,
    pairs: Sequence[Pair],
    config: AdaptConfig,
    out_dir: Path,
    *,
    targets: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
    cache: FeatureCache | None = None,
) -> TrainResult:
    """Fine-tune a LoRA adapter on `base` and save it (safetensors) to `out_dir`.

    Deterministic for a given seed on a given machine: seeded init, seeded example order. The
    trained model is returned in `TrainResult.model` (for evaluation without reloading).
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base_v = load_verifier(
        base, device="cpu", dtype="float32", template=config.template, prefix=config.prefix
    )
    label_ids = _single_token_labels(base_v)
    examples = build_examples(pairs, config.arm, targets)
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
    with upper_layers_only(model, split):
        for epoch in range(config.epochs):
            order = list(range(len(examples)))
            rng.shuffle(order)
            total, count = 0.0, 0
            for b in range(0, len(order), config.batch_size):
                batch = order[b : b + config.batch_size]
                pair_logits = _upper_logits(peft_model, [features[i] for i in batch], label_index)
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
    peft_model.eval()
    result.model = peft_model
    return result


def _single_token_labels(verifier: Any) -> list[int]:
    label_tokens = verifier.describe()["label_tokens"]
    if any(len(ids) != 1 for ids in label_tokens):
        raise InputError(f"checkpoint {verifier.name}: training needs single-token labels")
    return [ids[0] for ids in label_tokens]


def evaluate_on_features(
    model: Any, cache: FeatureCache, verifier: Any, pairs: Sequence[Pair], batch_size: int = 16
) -> dict[str, Any]:
    """`evaluate`, computed from the shared lower-layer features (same numbers up to float
    rounding, a fraction of the cost: only the adapted upper layers run per checkpoint)."""
    import torch

    from eraudit_core.verifier.hf import scores_from_logprobs

    queries = _canonical_queries(pairs)
    encoded = verifier._encode(queries)
    flat = [seq for enc in encoded for seq in enc]
    feats = cache.get(flat)
    label_index = torch.tensor(_single_token_labels(verifier), dtype=torch.long)
    out = []
    with torch.no_grad(), upper_layers_only(model, cache.split):
        for b in range(0, len(feats), batch_size):
            out.append(
                torch.log_softmax(_upper_logits(model, feats[b : b + batch_size], label_index), -1)
            )
    lp = torch.cat(out).reshape(len(queries), 2, 2)
    return _summary_of_scores(pairs, [s.p_true for s in scores_from_logprobs(lp)])


def _canonical_queries(pairs: Sequence[Pair]) -> list[Query]:
    queries = []
    for pair in pairs:
        for q in (pair.monitored, pair.hidden):
            queries.append(Query(pair.pair_id, q.question, q.true_option, q.false_option))
    return queries


def _summary_of_scores(pairs: Sequence[Pair], p: Sequence[float]) -> dict[str, Any]:
    mon, hid = list(p[0::2]), list(p[1::2])
    return {
        "monitored_accuracy": sum(x > 0.5 for x in mon) / len(mon),
        "monitored_mtp": sum(mon) / len(mon),
        "hidden_accuracy": sum(x > 0.5 for x in hid) / len(hid),
        "hidden_mtp": sum(hid) / len(hid),
        "p_monitored": dict(zip([x.pair_id for x in pairs], mon, strict=True)),
        "p_hidden": dict(zip([x.pair_id for x in pairs], hid, strict=True)),
    }


def lower_layer_features(
    model: Any, ids: Sequence[Sequence[int]], split: int, pad_id: int, batch_size: int = 8
) -> list[Any]:
    """Hidden states entering decoder layer `split`, one [tokens, hidden] tensor per prompt.

    Computed once without gradients: LoRA sits only above `split`, so these never change.
    """
    import torch

    out: list[Any] = [None] * len(ids)
    if split == 0:
        with torch.no_grad():
            for i, seq in enumerate(ids):
                out[i] = model.get_input_embeddings()(torch.tensor(seq)).detach()
        return out
    backbone = model.model
    layers, norm = backbone.layers, backbone.norm
    backbone.layers = torch.nn.ModuleList(list(layers)[:split])
    backbone.norm = torch.nn.Identity()
    try:
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        with torch.no_grad():
            for b in range(0, len(order), batch_size):
                batch = order[b : b + batch_size]
                width = max(len(ids[i]) for i in batch)
                x = torch.full((len(batch), width), pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for r, i in enumerate(batch):
                    x[r, width - len(ids[i]) :] = torch.tensor(ids[i])
                    mask[r, width - len(ids[i]) :] = 1
                positions = (mask.cumsum(-1) - 1).clamp(min=0)
                h = backbone(
                    input_ids=x, attention_mask=mask, position_ids=positions, use_cache=False
                ).last_hidden_state
                for r, i in enumerate(batch):
                    out[i] = h[r, width - len(ids[i]) :].clone()
    finally:
        backbone.layers, backbone.norm = layers, norm
    return out


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


@contextlib.contextmanager
def upper_layers_only(model: Any, split: int) -> Iterator[None]:
    """Run only decoder layers >= split (inputs are `lower_layer_features`); restore after,
    so saved adapter weights keep their true layer numbers."""
    import torch

    backbone = model.model if hasattr(model, "model") else model
    while not hasattr(backbone, "layers"):
        backbone = backbone.model
    layers = backbone.layers
    backbone.layers = torch.nn.ModuleList(list(layers)[split:])
    try:
        yield
    finally:
        backbone.layers = layers


def evaluate(verifier: Any, pairs: Sequence[Pair]) -> dict[str, Any]:
    """Standard evaluation on the canonical questions (DESIGN.md §4) through the verifier:
    accuracy and mean task probability (MTP) for monitored and hidden questions, per-pair p."""
    return _summary_of_scores(pairs, [s.p_true for s in verifier.score(_canonical_queries(pairs))])


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
    text = json.dumps(manifest, indent=2) + "\n"
    (out_dir / "manifest.json").write_text(text)
    return dict(json.loads(text))


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
    from eraudit_core.store import BUNDLED_QUALITY_H, load_benchmark
    from eraudit_core.verifier import hf

    path = Path(benchmark_path) if benchmark_path is not None else Path(BUNDLED_QUALITY_H)
    pairs = load_benchmark(path).pairs
    cfg = config or AdaptConfig()
    spec = CheckpointSpec.parse(base)
    if spec.adapter is not None:
        raise InputError(f"--base {base}: must be a base model, not an adapted checkpoint")
    base_sha = (
        hf.file_digest(hf.demo_gguf_path())
        if spec.kind == "demo"
        else load_verifier(spec).describe()["fingerprint"]
    )
    targets = select_adversarial_targets(
        [p.pair_id for p in pairs], cfg.adversarial_fraction, cfg.seed
    )
    base_v = load_verifier(
        spec, device="cpu", dtype="float32", template=cfg.template, prefix=cfg.prefix
    )
    n_layers = int(base_v._base.model.config.num_hidden_layers)
    cache = FeatureCache(base_v._base.model_dir, max(0, n_layers - cfg.top_layers), base_v._pad_id)
    base_eval = None
    if evaluate_arms:
        start = time.perf_counter()
        base_eval = evaluate_on_features(cache.model, cache, base_v, pairs)
        progress(f"base evaluated ({time.perf_counter() - start:.0f} s, includes shared features)")
    manifests: dict[str, dict[str, Any]] = {}
    for arm in arms:
        arm_cfg = AdaptConfig(**{**asdict(cfg), "arm": arm})
        arm_targets = targets if arm == "adversarial" else []
        out_dir = out_root / arm
        result = train_adapter(
            spec, pairs, arm_cfg, out_dir, targets=arm_targets, progress=progress, cache=cache
        )
        progress(f"{arm}: trained in {result.seconds:.0f} s, loss {result.epoch_losses}")
        evaluation = None
        if base_eval is not None:
            arm_eval = evaluate_on_features(result.model, cache, base_v, pairs)
            evaluation = summarise(base_eval, arm_eval, arm_targets)
            progress(f"{arm}: {json.dumps(evaluation)}")
        result.model = None
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
    "evaluate_on_features",
    "run_adaptation",
    "select_adversarial_targets",
    "summarise",
    "train_adapter",
]
