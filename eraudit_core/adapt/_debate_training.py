"""Debate distillation in miniature: top-layer LoRA on the paper's judge prompts, trained from
the trunk cache, loss on the answer tokens.

Why this recipe (docs/debate-distillation.md): the paper fine-tunes the verifier as a language
model of the judge's answer given the judge prompt, honest and adversarial arms alike, so both
arms here use one objective and one set of hyper-parameters and seed; only the training file
differs (354 vs 294 rows, so the arms take different numbers of steps). The judge prompt goes
through the model's chat template exactly as the verifier wraps a question, and the target is
the assistant's `Answer: A|B`, whose tokens are what the verifier later reads after its
`Answer:` prefix. LoRA sits on layers >= L only, so what enters layer L comes from the disk
cache (`_trunk_cache.py`) and each step runs the top layers alone; `answer_loss` on the full
model is the reference the cached path must equal.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eraudit_core.adapt._debate_data import DebateRow
from eraudit_core.adapt._trunk_cache import TrunkCache, TrunkStats, verifier_trunk
from eraudit_core.errors import InputError


@dataclass(frozen=True)
class DebateConfig:
    """Hyper-parameters shared by both debate arms; all of it goes into the manifest.

    `batch_size` sequences per optimiser step (each run alone and their gradients summed, so
    no padding); the loss is the mean over the batch's answer tokens.
    """

    rank: int = 8
    alpha: int = 16
    target_modules: tuple[str, ...] = ("q_proj", "v_proj", "o_proj")
    top_layers: int = 4
    learning_rate: float = 1e-3
    epochs: int = 2
    batch_size: int = 8
    seed: int = 0
    trunk_dtype: str = "float32"

    def __post_init__(self) -> None:
        for name in ("rank", "alpha", "top_layers", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise InputError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise InputError(f"learning_rate: must be positive, got {self.learning_rate}")

    def hyperparameters(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "seed"}


@dataclass(frozen=True)
class DebateExample:
    """One row as token ids: the chat-wrapped judge prompt, then the `answer` target tokens."""

    row_id: str
    ids: tuple[int, ...]
    answer: int


@dataclass
class DebateResult:
    epoch_losses: list[float] = field(default_factory=list)
    step_losses: list[float] = field(default_factory=list)
    steps_per_epoch: int = 0
    seconds: float = 0.0
    trunk_seconds: float = 0.0
    trunk: TrunkStats = field(default_factory=TrunkStats)
    tokens: int = 0
    trainable_parameters: int = 0
    model: Any = field(default=None, repr=False)


def encode_rows(verifier: Any, rows: Sequence[DebateRow]) -> list[DebateExample]:
    """Each judge prompt through the verifier's chat wrapping (as the audit wraps a question),
    followed by its target; the target's tokens are the answer tokens. A prompt longer than
    the model's context is refused (it would not be trained as written)."""
    from eraudit_core.verifier.hf import HFVerifier

    if not isinstance(verifier, HFVerifier):
        raise InputError("debate training needs a local checkpoint")
    tok = verifier._base.tokenizer
    texts = [verifier._chat(r.prompt) for r in rows]
    prompt_ids = tok(texts, add_special_tokens=False).input_ids
    full_ids = tok(
        [t + r.target for t, r in zip(texts, rows, strict=True)], add_special_tokens=False
    ).input_ids
    limit = verifier.context_length
    out = []
    for r, p, f in zip(rows, prompt_ids, full_ids, strict=True):
        if list(f[: len(p)]) != list(p) or len(f) <= len(p):
            raise InputError(f"row {r.row_id}: the target does not tokenise as a continuation")
        if limit is not None and len(f) > limit:
            raise InputError(f"row {r.row_id}: {len(f)} tokens, longer than the context {limit}")
        out.append(DebateExample(r.row_id, tuple(int(t) for t in f), len(f) - len(p)))
    return out


def answer_loss(model: Any, example: DebateExample, state: Any = None) -> tuple[Any, int]:
    """Summed cross-entropy of the answer tokens and their count, for one sequence.

    `state`: its trunk states at layer L (then the caller runs `upper_layers_only`, and only
    the top layers run); None runs the full model on the token ids (the reference)."""
    import torch

    ids = torch.tensor([example.ids], dtype=torch.long)
    keep = example.answer + 1
    if state is None:
        logits = model(input_ids=ids, use_cache=False, logits_to_keep=keep).logits
    else:
        positions = torch.arange(len(example.ids)).unsqueeze(0)
        logits = model(
            inputs_embeds=state.unsqueeze(0),
            position_ids=positions,
            use_cache=False,
            logits_to_keep=keep,
        ).logits
    pred = logits[0, :-1].float()  # position t predicts token t + 1
    target = ids[0, -example.answer :]
    loss = torch.nn.functional.cross_entropy(pred, target, reduction="sum")
    return loss, example.answer


def lora_model(model_dir: Path, config: DebateConfig, n_layers: int) -> Any:
    """A fresh PEFT LoRA model on layers >= n_layers - top_layers (seeded init)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(config.seed)
    model = AutoModelForCausalLM.from_pretrained(
        str(model_dir), local_files_only=True, use_safetensors=True, dtype=torch.float32
    )
    lora = LoraConfig(
        r=config.rank,
        lora_alpha=config.alpha,
        lora_dropout=0.0,
        target_modules=list(config.target_modules),
        layers_to_transform=list(range(n_layers - config.top_layers, n_layers)),
        bias="none",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lora)


def train_debate(
    peft_model: Any,
    examples: Sequence[DebateExample],
    trunk: TrunkCache,
    config: DebateConfig,
    progress: Callable[[str], None] | None = None,
    arm: str = "debate",
) -> DebateResult:
    """Train `peft_model`'s LoRA weights in place from the trunk cache (filled first)."""
    import torch

    from eraudit_core.verifier.hf import upper_layers_only

    if not examples:
        raise InputError(f"{arm}: no training rows")
    result = DebateResult(tokens=sum(len(e.ids) for e in examples))
    start = time.perf_counter()
    result.trunk = trunk.ensure([e.ids for e in examples], progress)
    result.trunk_seconds = time.perf_counter() - start
    params = [p for p in peft_model.parameters() if p.requires_grad]
    result.trainable_parameters = sum(p.numel() for p in params)
    optim = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=0.0)
    rng = random.Random(config.seed)
    result.steps_per_epoch = -(-len(examples) // config.batch_size)
    start = time.perf_counter()
    peft_model.train()
    for epoch in range(config.epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        total, count = 0.0, 0
        with upper_layers_only(peft_model, trunk.split):
            for b in range(0, len(order), config.batch_size):
                batch = [examples[i] for i in order[b : b + config.batch_size]]
                n_tokens = sum(e.answer for e in batch)
                optim.zero_grad(set_to_none=True)
                step_loss = 0.0
                for e in batch:
                    state = trunk.read(e.ids)
                    if state is None:
                        raise InputError(f"trunk cache {trunk.path(e.ids)}: missing or damaged")
                    loss, _ = answer_loss(peft_model, e, state)
                    (loss / n_tokens).backward()
                    step_loss += float(loss.detach())
                optim.step()
                result.step_losses.append(step_loss / n_tokens)
                total += step_loss
                count += n_tokens
        result.epoch_losses.append(total / count)
        if progress:
            progress(
                f"{arm}: epoch {epoch + 1}/{config.epochs} answer-token loss {total / count:.4f} "
                f"({time.perf_counter() - start:.0f} s, {len(result.step_losses)} steps)"
            )
    result.seconds = time.perf_counter() - start
    peft_model.eval()
    result.model = peft_model
    return result


def save_adapter(peft_model: Any, out_dir: Path, base: str) -> None:
    """The adapter (safetensors) with the base named by its spec, not this machine's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    peft_model.save_pretrained(str(out_dir), safe_serialization=True)
    cfg_path = out_dir / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = base
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    readme = out_dir / "README.md"
    if readme.exists():  # peft's generated model card says nothing the manifest does not
        readme.unlink()


def run_debate_adaptation(
    arm: str,
    out_root: Path,
    *,
    base: str = "demo:base",
    data_file: Path | None = None,
    config: DebateConfig | None = None,
    cache_root: Path | None = None,
    limit: int | None = None,
    command: str = "",
    progress: Callable[[str], None] = print,
    trunk_only: bool = False,
) -> dict[str, Any]:
    """Train one debate arm on its verified training file and write adapter + manifest to
    `out_root/<arm>/`. `data_file` replaces the shipped file (tests); `limit` keeps the first
    rows only (smoke runs; the manifest says so); `cache_root` is the trunk cache folder.
    `trunk_only`: fill the trunk cache and stop (returns what it did; nothing is written to
    `out_root`), so the slow part can run on its own and be resumed."""
    from eraudit_core.adapt._debate_data import DEBATE_FILES, bundled_debate_file, read_debate_file
    from eraudit_core.adapt._manifest import write_debate_manifest
    from eraudit_core.verifier import CheckpointSpec, hf, load_verifier

    if arm not in DEBATE_FILES:
        raise InputError(f"arm: expected one of {sorted(DEBATE_FILES)}, got {arm!r}")
    cfg = config or DebateConfig()
    spec = CheckpointSpec.parse(base)
    if spec.adapter is not None:
        raise InputError(f"--base {base}: must be a base model, not an adapted checkpoint")
    path = Path(data_file) if data_file is not None else bundled_debate_file(arm)
    data = read_debate_file(path)
    rows = data.rows[:limit] if limit else data.rows
    progress(f"{arm}: {path.name} verified ({len(data.rows)} rows, sha256 {data.sha256})")
    base_v = load_verifier(spec, device="cpu", dtype="float32")
    loaded = base_v._base
    base_sha = hf.file_digest(hf.demo_gguf_path()) if spec.kind == "demo" else base_v.fingerprint
    n_layers = int(loaded.model.config.num_hidden_layers)
    split = n_layers - cfg.top_layers
    if split < 1:
        raise InputError(f"top_layers {cfg.top_layers}: the model has only {n_layers} layers")
    examples = encode_rows(base_v, rows)
    trunk = verifier_trunk(base_v, split, cache_root, cfg.trunk_dtype)
    progress(
        f"{arm}: {len(examples)} rows, {sum(len(e.ids) for e in examples)} tokens; trunk cache {trunk.dir}"
    )
    if trunk_only:
        stats = trunk.ensure([e.ids for e in examples], progress)
        progress(
            f"{arm}: trunk cache {stats.found} found, {stats.computed} computed "
            f"({stats.tokens_computed} tokens, {stats.tokens_per_second:.0f} tokens/s)"
        )
        return {"arm": arm, "trunk_cache": {**asdict(stats), "dir": str(trunk.dir)}}
    peft_model = lora_model(loaded.model_dir, cfg, n_layers)
    result = train_debate(peft_model, examples, trunk, cfg, progress, arm)
    out_dir = out_root / arm
    save_adapter(peft_model, out_dir, base)
    kept = {r.pair_id for r in rows}
    flags = {
        "transcript_contains_h_true_text": sum(r.contains_h_true for r in rows),
        "transcript_contains_h_false_text": sum(r.contains_h_false for r in rows),
    }
    manifest = write_debate_manifest(
        out_dir,
        arm=arm,
        base=base,
        base_sha256=base_sha,
        data={
            "file": path.name,
            "sha256": data.sha256,
            "rows": len(rows),
            "rows_in_file": len(data.rows),
            "pairs": len(kept),
            "tokens": result.tokens,
            "flags_reported_not_excluded": flags,
        },
        hyperparameters=cfg.hyperparameters(),
        seed=cfg.seed,
        training={
            "loss": "summed cross-entropy of the answer tokens / answer tokens in the batch",
            "epoch_losses": [round(x, 5) for x in result.epoch_losses],
            "final_loss": round(result.epoch_losses[-1], 5),
            "steps": len(result.step_losses),
            "steps_per_epoch": result.steps_per_epoch,
            "steps_note": "ceil(rows / batch_size) per epoch: the arms' files differ in size, "
            "so their step counts differ",
            "seconds": round(result.seconds, 1),
            "trainable_parameters": result.trainable_parameters,
            "trunk_cache": {
                "layer": split,
                "dtype": cfg.trunk_dtype,
                "found": result.trunk.found,
                "computed": result.trunk.computed,
                "tokens_computed": result.trunk.tokens_computed,
                "seconds": round(result.trunk_seconds, 1),
                "tokens_per_second": round(result.trunk.tokens_per_second, 1),
            },
        },
        command=command,
    )
    progress(f"{arm}: wrote {out_dir} (loss {manifest['training']['epoch_losses']})")
    return manifest
