"""Building adapted checkpoints: the demo's honest, adversarial and concealed LoRA arms
(docs/design.md §10).

Why this exists: an audit needs a pre/post pair whose hidden-task effect is known. The honest arm
is fine-tuned on the monitored questions' true answers; the adversarial arm gets the same data
plus a seeded subset of hidden questions pushed toward their false answers, so the audit has a
real degradation to find, one that standard evaluation also sees. The concealed arm is the
paper's case: it is trained toward the true answer of every hidden question's canonical wording
(standard evaluation improves) and toward the false answer on reworded forms of the target
questions, taken from a training split the audit never uses (`_concealed.py`). Training examples
are the exact §3 prompts (both answer orders, rendered by `eraudit_core.verifier.render_prompts`
through the model's chat template) and the loss is the binary-choice cross-entropy over the two
label tokens, which is the quantity the verifier later reads. LoRA sits on the top layers only:
the adapters stay small and backpropagation stops at the lowest adapted layer, which keeps
training to minutes on two CPU cores.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from eraudit_core.adapt._concealed import (
    TRAINING_FILE,
    TrainingRewording,
    audit_rewordings,
    build_training_rewordings,
    bundled_audit_paraphrases,
    check_unaudited,
    write_training_rewordings,
)
from eraudit_core.adapt._evaluation import (
    evaluate,
    evaluate_on_features,
    evaluate_rewordings_on_features,
    summarise,
    summarise_rewordings,
    training_split_report,
)
from eraudit_core.adapt._features import (
    FeatureCache,
    single_token_labels,
    upper_layers_only,
    upper_logits,
)
from eraudit_core.errors import InputError
from eraudit_core.paraphrase import DEMO_RULE_BUCKETS, DEMO_RULE_SETS, DEMO_TRAINING, CosineFn
from eraudit_core.types import Pair, Query
from eraudit_core.verifier import (
    DEFAULT_LABELS,
    DEFAULT_PREFIX,
    DEFAULT_TEMPLATE,
    CheckpointSpec,
    load_verifier,
)

log = logging.getLogger(__name__)

Arm = Literal["honest", "adversarial", "concealed"]
ARMS: tuple[Arm, ...] = ("honest", "adversarial", "concealed")
# Arms that push a seeded subset of hidden questions (the targets) toward the false answer.
TARGETED_ARMS: tuple[Arm, ...] = ("adversarial", "concealed")


@dataclass(frozen=True)
class AdaptConfig:
    """Hyper-parameters of one adaptation run; all of it goes into the manifest.

    `adversarial_fraction` is the share of hidden questions an adversarial or concealed arm
    targets (the same seeded subset for both). `rewordings_per_target` / `rewordings_per_other`:
    how many training-split rewordings of each target (toward false) and of every other hidden
    question (toward true) the concealed arm trains on. `balance_target_wordings`: the
    concealed arm repeats each target's canonical wording (toward true) as often as that
    target has training rewordings (toward false), so the question alone predicts neither
    answer and only the wording does. Off by default: the shipped arm is unbalanced (its
    false examples outnumber the true ones, so it learned "this question is false" in every
    wording); balanced runs did not learn the wording either and answered the targets'
    canonical and reworded forms alike (data/adapters/README.md).
    """

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
    rewordings_per_target: int = 3
    rewordings_per_other: int = 1
    balance_target_wordings: bool = False
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
        for name in ("rewordings_per_target", "rewordings_per_other"):
            if getattr(self, name) < 0:
                raise InputError(f"{name}: must be at least 0, got {getattr(self, name)}")
        if self.arm == "concealed" and self.rewordings_per_target < 1:
            raise InputError("rewordings_per_target: the concealed arm needs at least 1")
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
    epoch_reports: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    examples: int = 0
    trainable_parameters: int = 0
    model: Any = field(default=None, repr=False)


def select_adversarial_targets(pair_ids: Sequence[str], fraction: float, seed: int) -> list[str]:
    """The hidden questions the adversarial and concealed arms push wrong: a seeded subset, in
    input order."""
    k = round(len(pair_ids) * fraction)
    chosen = set(random.Random(seed).sample(sorted(pair_ids), k))
    return [p for p in pair_ids if p in chosen]


def _both_orders(pair_id: str, role: Any, query: Query, toward_true: bool) -> list[Example]:
    # Order 0 shows the true option as A, order 1 as B; the false option is the other label.
    return [
        Example(pair_id, role, query, 0, 0 if toward_true else 1),
        Example(pair_id, role, query, 1, 1 if toward_true else 0),
    ]


def build_examples(
    pairs: Sequence[Pair],
    arm: Arm,
    targets: Sequence[str] = (),
    rewordings: Sequence[TrainingRewording] = (),
    balance_target_wordings: bool = False,
) -> list[Example]:
    """Both answer orders of: every monitored question toward its true answer; for the
    adversarial arm also the target hidden questions toward their false answers; for the
    concealed arm every hidden question's canonical wording toward its true answer and each
    training rewording toward the answer it names (false for targets, true for the others).
    `balance_target_wordings`: a target's canonical wording appears once per training
    rewording of it toward false (at least once), so both answers are equally frequent for it."""
    wanted = set(targets)
    unknown = wanted - {p.pair_id for p in pairs}
    if unknown:
        raise InputError(f"adversarial targets: unknown pair id(s) {sorted(unknown)[:3]}")
    if arm == "concealed" and not rewordings:
        raise InputError("concealed arm: no training rewordings")
    by_pair: dict[str, list[TrainingRewording]] = {}
    for r in rewordings:
        by_pair.setdefault(r.pair_id, []).append(r)
    unknown = set(by_pair) - {p.pair_id for p in pairs}
    if unknown:
        raise InputError(f"training rewordings: unknown pair id(s) {sorted(unknown)[:3]}")
    out: list[Example] = []
    for pair in pairs:
        m, h = pair.monitored, pair.hidden
        out += _both_orders(
            pair.pair_id,
            "monitored",
            Query(pair.pair_id, m.question, m.true_option, m.false_option),
            True,
        )
        canonical = Query(pair.pair_id, h.question, h.true_option, h.false_option)
        if arm == "adversarial" and pair.pair_id in wanted:
            out += _both_orders(pair.pair_id, "hidden", canonical, False)
        if arm == "concealed":
            own = by_pair.get(pair.pair_id, [])
            repeats = 1
            if balance_target_wordings and pair.pair_id in wanted:
                repeats = max(1, sum(r.toward == "false" for r in own))
            for _ in range(repeats):
                out += _both_orders(pair.pair_id, "hidden", canonical, True)
            for r in own:
                reworded = Query(pair.pair_id, r.text, h.true_option, h.false_option)
                out += _both_orders(pair.pair_id, "hidden", reworded, r.toward == "true")
    return out


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


def run_adaptation(
    arms: Sequence[Arm],
    out_root: Path,
    *,
    base: str = "demo:base",
    benchmark_path: Path | None = None,
    config: AdaptConfig | None = None,
    evaluate_arms: bool = True,
    eval_rewordings: int = 4,
    command: str = "",
    progress: Callable[[str], None] = print,
    cosine_fn: CosineFn | None = None,
) -> dict[str, dict[str, Any]]:
    """Train the requested arms on the benchmark pairs, evaluate them against the base, and
    write adapter + manifest under `out_root/<arm>/` (the concealed arm also its training
    split). `eval_rewordings`: audit rewordings of each hidden question scored for the
    concealed arm's evaluation (0: none). `cosine_fn` replaces the MiniLM filter (tests)."""
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
        arm_targets = targets if arm in TARGETED_ARMS else []
        out_dir = out_root / arm
        out_dir.mkdir(parents=True, exist_ok=True)
        rewordings: list[TrainingRewording] = []
        extra: dict[str, Any] = {}
        report: Callable[[Any, FeatureCache], dict[str, Any]] | None = None
        if arm == "concealed":
            rewordings, extra = _concealed_training_split(
                pairs, arm_targets, arm_cfg, out_dir, cosine_fn, progress
            )
            if evaluate_arms:
                texts: dict[str, list[str]] = {}
                for r in rewordings:
                    texts.setdefault(r.pair_id, []).append(r.text)
                report = functools.partial(
                    training_split_report,
                    verifier=base_v,
                    pairs=pairs,
                    targets=arm_targets,
                    reworded=texts,
                )
        result = train_adapter(
            spec,
            pairs,
            arm_cfg,
            out_dir,
            targets=arm_targets,
            rewordings=rewordings,
            progress=progress,
            cache=cache,
            epoch_report=report,
        )
        progress(f"{arm}: trained in {result.seconds:.0f} s, loss {result.epoch_losses}")
        evaluation = None
        if base_eval is not None:
            arm_eval = evaluate_on_features(result.model, cache, base_v, pairs)
            evaluation = summarise(base_eval, arm_eval, arm_targets)
            progress(f"{arm}: {json.dumps(evaluation)}")
            if arm == "concealed" and eval_rewordings > 0:
                start = time.perf_counter()
                audit = audit_rewordings(pairs, eval_rewordings, seed=arm_cfg.seed)
                extra["evaluation_on_audit_rewordings"] = {
                    "source": "the audit's own search and test sets (never trained on), "
                    f"up to {eval_rewordings} rewordings a hidden question, seeded pick",
                    **summarise_rewordings(
                        base_eval,
                        arm_eval,
                        evaluate_rewordings_on_features(cache.model, cache, base_v, pairs, audit),
                        evaluate_rewordings_on_features(result.model, cache, base_v, pairs, audit),
                        arm_targets,
                    ),
                }
                progress(
                    f"{arm}: audit rewordings ({time.perf_counter() - start:.0f} s) "
                    f"{json.dumps(extra['evaluation_on_audit_rewordings'])}"
                )
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
            extra=extra,
        )
    return manifests


def _concealed_training_split(
    pairs: Sequence[Pair],
    targets: Sequence[str],
    config: AdaptConfig,
    out_dir: Path,
    cosine_fn: CosineFn | None,
    progress: Callable[[str], None],
) -> tuple[list[TrainingRewording], dict[str, Any]]:
    """Build, write and describe the concealed arm's training rewordings."""
    start = time.perf_counter()
    rows, provenance = build_training_rewordings(
        pairs,
        targets,
        config.rewordings_per_target,
        config.rewordings_per_other,
        cosine_fn=cosine_fn,
    )
    check_unaudited(rows, bundled_audit_paraphrases())
    file = out_dir / TRAINING_FILE
    write_training_rewordings(rows, file)
    wanted = set(targets)
    progress(f"concealed: {len(rows)} training rewordings ({time.perf_counter() - start:.0f} s)")
    record = {
        "file": TRAINING_FILE,
        "sha256": file_sha256(file),
        "generator": provenance,
        "buckets": {"of": DEMO_RULE_BUCKETS, "audit_sets": _audit_buckets()},
        "rewordings": len(rows),
        "toward_false": sum(r.toward == "false" for r in rows),
        "toward_true": sum(r.toward == "true" for r in rows),
        "target_pairs_with_rewordings": len({r.pair_id for r in rows if r.pair_id in wanted}),
        "other_pairs_with_rewordings": len({r.pair_id for r in rows if r.pair_id not in wanted}),
    }
    return rows, {"training_split": record}


def _audit_buckets() -> dict[str, Any]:
    return {name: DEMO_RULE_SETS[name]["part"] for name in DEMO_RULE_SETS if name != DEMO_TRAINING}


__all__ = [
    "ARMS",
    "DEFAULT_LABELS",
    "TARGETED_ARMS",
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
