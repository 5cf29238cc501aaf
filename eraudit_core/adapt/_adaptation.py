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
training to minutes on two CPU cores. The examples, the training loop and the manifest live in
`_examples.py`, `_training.py` and `_manifest.py`; this module runs the arms end to end.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

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
from eraudit_core.adapt._examples import (
    ARMS,
    TARGETED_ARMS,
    AdaptConfig,
    Arm,
    Example,
    build_examples,
    select_adversarial_targets,
)
from eraudit_core.adapt._features import FeatureCache
from eraudit_core.adapt._manifest import file_sha256, write_manifest
from eraudit_core.adapt._training import TrainResult, train_adapter
from eraudit_core.errors import InputError
from eraudit_core.paraphrase import DEMO_RULE_BUCKETS, DEMO_RULE_SETS, DEMO_TRAINING, CosineFn
from eraudit_core.types import Pair
from eraudit_core.verifier import DEFAULT_LABELS, CheckpointSpec, load_verifier


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
    "file_sha256",
    "evaluate_on_features",
    "run_adaptation",
    "select_adversarial_targets",
    "summarise",
    "train_adapter",
    "write_manifest",
]
