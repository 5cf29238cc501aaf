"""One debate arm end to end under the reference objective, and the fit gate it must pass.

Why a gate: an arm that never learned its own training task tells an audit nothing, so before
any audit its manifest records the manipulation check: the two-way accuracy and letter-slot
loss on its own training rows (both answer orders) and on the reference's held-out judge rows
(other stories; never the audit's questions). `passed` is this arm's training accuracy >= 0.9
and nothing else. Checkpoints and the fit log go to a work folder outside the repository;
the weights (too large for git) go to `out/<arm>/` with a manifest naming them, the training,
grounded and held-out files by sha256.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eraudit_core.adapt._debate_data import (
    DEBATE_FILES,
    bundled_debate_file,
    read_debate_file,
    read_grounded_file,
)
from eraudit_core.adapt._fit_objective import FC_WEIGHT, LM_WEIGHT, encode_fit_rows
from eraudit_core.adapt._fit_training import (
    FitConfig,
    build_model,
    evaluate_rows,
    train_fit,
    trainable,
    trunk_inputs,
)
from eraudit_core.adapt._manifest import file_sha256, library_versions
from eraudit_core.adapt._trunk_cache import verifier_trunk
from eraudit_core.errors import InputError

PASS_ACCURACY = 0.9
FIT_LOG = "fit_log.json"


def _write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=2) + "\n")
    os.replace(tmp, path)


def fit_object(
    config: FitConfig,
    objective: str,
    trainable_parameters: int,
    train: dict[str, Any],
    heldout: dict[str, Any],
    curve: list[dict[str, Any]],
    complete: bool,
) -> dict[str, Any]:
    """The manifest's `fit`: computed from the evaluations passed in, never copied."""
    return {
        "objective": objective,
        "capacity": {
            "name": config.capacity,
            "trainable_parameters": trainable_parameters,
            "learning_rate": config.learning_rate,
            "epochs": config.epochs,
            "batch_size": config.batch_size,
            "seed": config.seed,
        },
        "train_two_way_accuracy": train["two_way_accuracy"],
        "heldout_two_way_accuracy": heldout["two_way_accuracy"],
        "letter_loss": {"train": train["letter_loss"], "heldout": heldout["letter_loss"]},
        "passed": train["two_way_accuracy"] >= PASS_ACCURACY,
        "threshold": PASS_ACCURACY,
        "recipe_complete": complete,
        "train": train,
        "heldout": heldout,
        "curve": curve,
    }


def run_fit_arm(
    arm: str,
    work: Path,
    out_root: Path | None,
    *,
    config: FitConfig,
    base: str = "demo:base",
    data_file: Path | None = None,
    grounded_file: Path | None = None,
    heldout_file: Path | None = None,
    use_grounded: bool = True,
    cache_root: Path | None = None,
    trunk_layer: int | None = None,
    resume: bool = False,
    deadline: float | None = None,
    stop_after_steps: int | None = None,
    command: str = "",
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train `arm` under the reference objective (checkpoints in `work/<arm>/`), then, when
    the recipe is complete, evaluate the fit gate and write weights and manifest to
    `out_root/<arm>/` (`out_root` None: the fit goes to the work folder's log only).
    `trunk_layer`: the layer whose input states are cached (default: the lowest trained
    layer); a lower one lets capacities of different depths share one cache, the frozen
    layers in between then run at every step without gradients.
    Returns the fit log: `{"status": "stopped" | "complete", ...}`."""
    from eraudit_core.verifier import CheckpointSpec, hf, load_verifier

    if arm not in DEBATE_FILES:
        raise InputError(f"arm: expected one of {sorted(DEBATE_FILES)}, got {arm!r}")
    spec = CheckpointSpec.parse(base)
    if spec.adapter is not None:
        raise InputError(f"--base {base}: must be a base model, not an adapted checkpoint")
    train_path = Path(data_file) if data_file else bundled_debate_file(arm)
    data = read_debate_file(train_path)
    grounded = None
    if use_grounded:
        g_path = Path(grounded_file) if grounded_file else bundled_debate_file(arm, "grounded")
        grounded = read_grounded_file(g_path, data)
    h_path = Path(heldout_file) if heldout_file else bundled_debate_file(arm, "heldout")
    heldout = read_debate_file(h_path)
    progress(
        f"{arm}: verified {train_path.name} ({len(data.rows)} rows), "
        f"{grounded.path.name if grounded else 'no grounded file'}, {h_path.name} "
        f"({len(heldout.rows)} rows)"
    )
    run_dir = work / arm
    if resume and (run_dir / FIT_LOG).is_file():
        done = json.loads((run_dir / FIT_LOG).read_text())
        if done.get("fit") and done.get("recipe") == config.recipe():
            progress(f"{arm}: already trained and evaluated ({run_dir / FIT_LOG})")
            return dict(done)
    base_v = load_verifier(spec, device="cpu", dtype="float32")
    loaded = base_v._base
    n_layers = int(loaded.model.config.num_hidden_layers)
    split = n_layers - config.top_layers if trunk_layer is None else trunk_layer
    if not 1 <= split <= n_layers - config.top_layers:
        raise InputError(
            f"trunk layer {split}: must be 1 to {n_layers - config.top_layers} for "
            f"{config.capacity} on a {n_layers}-layer model"
        )
    tok, ctx = loaded.tokenizer, base_v.context_length
    train_ex = encode_fit_rows(
        tok, base_v._chat, data.rows, grounded.for_row() if grounded else None, ctx
    )
    heldout_ex = encode_fit_rows(tok, base_v._chat, heldout.rows, None, ctx)
    trunk = verifier_trunk(base_v, split, cache_root, config.trunk_dtype)
    ids, layouts = trunk_inputs(train_ex)
    progress(f"{arm}: trunk cache {trunk.dir} ({sum(len(i) for i in ids)} training tokens)")
    stats = trunk.ensure(ids, progress, layouts=layouts, deadline=deadline)
    trunk_log = {
        "dir": str(trunk.dir),
        "layer": split,
        "sequences": len(ids),
        "found": stats.found,
        "computed": stats.computed,
        "tokens_computed": stats.tokens_computed,
        "seconds": round(stats.seconds, 1),
        "tokens_per_second": round(stats.tokens_per_second, 1),
    }
    if stats.stopped:
        early = {"arm": arm, "status": "stopped", "stage": "trunk cache", "trunk_cache": trunk_log}
        _write_json(run_dir / FIT_LOG, early)
        progress(f"{arm}: deadline reached while filling the trunk cache (resumable)")
        return early
    model = build_model(loaded.model_dir, config, n_layers)
    state = train_fit(
        model,
        train_ex,
        trunk,
        config,
        run_dir,
        resume=resume,
        deadline=deadline,
        stop_after_steps=stop_after_steps,
        progress=progress,
        label=arm,
    )
    objective = (
        f"{FC_WEIGHT} * forced-choice + {LM_WEIGHT} * grounded LM"
        if grounded
        else f"{FC_WEIGHT} * forced-choice"
    )
    n_params = sum(p.numel() for p in trainable(model).values())
    log: dict[str, Any] = {
        "arm": arm,
        "status": "complete" if state.done else "stopped",
        "objective": objective,
        "recipe": config.recipe(),
        "trainable_parameters": n_params,
        "steps": state.step,
        "epochs_done": state.epoch,
        "seconds": round(state.seconds, 1),
        "trunk_cache": trunk_log,
        "curve": state.curve,
    }
    if not state.done:
        _write_json(run_dir / FIT_LOG, log)
        progress(f"{arm}: stopped at step {state.step} (resume with --resume)")
        return log
    if deadline is not None and time.time() >= deadline:
        _write_json(run_dir / FIT_LOG, {**log, "status": "trained, not evaluated"})
        return {**log, "status": "stopped"}
    heldout_ids, heldout_layouts = trunk_inputs(heldout_ex)
    if trunk.ensure(heldout_ids, progress, layouts=heldout_layouts, deadline=deadline).stopped:
        _write_json(run_dir / FIT_LOG, {**log, "status": "trained, not evaluated"})
        return {**log, "status": "stopped"}
    progress(f"{arm}: evaluating the fit on {len(train_ex)} training, {len(heldout_ex)} held-out")
    fit = fit_object(
        config,
        objective,
        n_params,
        evaluate_rows(model, train_ex, trunk),
        evaluate_rows(model, heldout_ex, trunk),
        state.curve,
        complete=True,
    )
    log["fit"] = fit
    _write_json(run_dir / FIT_LOG, log)
    progress(
        f"{arm}: fit train {fit['train_two_way_accuracy']} held-out "
        f"{fit['heldout_two_way_accuracy']} passed={fit['passed']}"
    )
    if out_root is None:
        return log
    out_dir = out_root / arm
    weights = save_weights(model, config, out_dir, base, loaded)
    base_sha = hf.file_digest(hf.demo_gguf_path()) if spec.kind == "demo" else base_v.fingerprint
    manifest = {
        "arm": arm,
        "recipe": f"debate distillation, reference objective L = {objective} (docs/fit-gate.md)",
        "base_model": {"spec": base, "sha256": base_sha},
        "data": {
            "train": {**data.describe()},
            "grounded": grounded.describe() if grounded else None,
            "heldout": heldout.describe(),
        },
        "hyperparameters": config.recipe(),
        "seed": config.seed,
        "fit": fit,
        "training": {
            "steps": state.step,
            "seconds": round(state.seconds, 1),
            "trainable_parameters": n_params,
            "trunk_layer": split,
        },
        "weights": {"files": weights},
        "versions": library_versions(),
        "command": command,
    }
    _write_json(out_dir / "manifest.json", manifest)
    progress(f"{arm}: wrote {out_dir}")
    return {**log, "manifest": str(out_dir / "manifest.json")}


def save_weights(model: Any, config: FitConfig, out_dir: Path, base: str, loaded: Any) -> dict:
    """LoRA: the adapter; full fine-tune: a loadable model folder. Returns file -> sha256."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if config.kind == "lora":
        from eraudit_core.adapt._debate_training import save_adapter

        save_adapter(model, out_dir, base)
        names = ["adapter_model.safetensors", "adapter_config.json"]
    else:
        model.save_pretrained(str(out_dir), safe_serialization=True)
        loaded.tokenizer.save_pretrained(str(out_dir))
        names = sorted(p.name for p in out_dir.glob("*.safetensors"))
    return {n: file_sha256(out_dir / n) for n in names}
