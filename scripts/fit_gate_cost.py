"""Measure what the fit gate's capacity search costs on this machine, before starting it.

Times, on the demo model and the honest arm's first batch of training rows (packed with their
grounded analyses), the trunk cache (tokens per second through the frozen layers) and one
optimiser step of the reference objective per capacity, then estimates each arm's time per
epoch as step time x (the arm's training tokens / the batch's), in wall-clock hours on this
machine as loaded now and in CPU hours (what a machine to itself would take, roughly).

    nice -n 15 python scripts/fit_gate_cost.py full-top2 full-top4 full-top8 \
        --trunk-layer 22 --out /tmp/eraudit-fit/cost.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> int:
    import torch

    from eraudit_core.adapt._debate_data import (
        DEBATE_FILES,
        bundled_debate_file,
        read_debate_file,
        read_grounded_file,
    )
    from eraudit_core.adapt._fit_objective import combined_loss, encode_fit_rows, example_loss
    from eraudit_core.adapt._fit_training import FitConfig, build_model, trainable, trunk_inputs
    from eraudit_core.adapt._trunk_cache import verifier_trunk
    from eraudit_core.verifier import load_verifier
    from eraudit_core.verifier.hf import upper_layers_only

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("capacities", nargs="+")
    ap.add_argument("--trunk-layer", type=int, default=22)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--trunk-cache", type=Path, default=Path("/tmp/eraudit-fit/trunk"))
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    v = load_verifier("demo:base", device="cpu", dtype="float32")
    loaded = v._base
    n_layers = int(loaded.model.config.num_hidden_layers)
    arms = {}
    for arm in DEBATE_FILES:
        data = read_debate_file(bundled_debate_file(arm))
        grounded = read_grounded_file(bundled_debate_file(arm, "grounded"), data)
        ex = encode_fit_rows(loaded.tokenizer, v._chat, data.rows, grounded.for_row())
        arms[arm] = ex
    batch = arms["debate-honest"][: args.batch_size]
    trunk = verifier_trunk(v, args.trunk_layer, args.trunk_cache)
    ids, layouts = trunk_inputs(batch)
    cpu = time.process_time()
    stats = trunk.ensure(ids, layouts=layouts)
    trunk_cpu = time.process_time() - cpu
    report: dict = {
        "machine": {"torch_threads": torch.get_num_threads()},
        "trunk_layer": args.trunk_layer,
        "batch_rows": len(batch),
        "batch_tokens": sum(len(e.ids) for e in batch),
        "trunk_tokens_per_second": round(stats.tokens_per_second, 1) if stats.computed else None,
        "trunk_tokens_per_cpu_second": round(stats.tokens_computed / trunk_cpu, 1)
        if stats.computed
        else None,
        "arms": {
            arm: {
                "rows": len(ex),
                "tokens": sum(len(e.ids) for e in ex),
                "steps_per_epoch": -(-len(ex) // args.batch_size),
            }
            for arm, ex in arms.items()
        },
        "capacities": {},
    }
    print(json.dumps(report), flush=True)
    for capacity in args.capacities:
        config = FitConfig(capacity=capacity, batch_size=args.batch_size)
        model = build_model(loaded.model_dir, config, n_layers)
        optim = torch.optim.AdamW(list(trainable(model).values()), lr=config.learning_rate)
        start, cpu = time.perf_counter(), time.process_time()
        with upper_layers_only(model, args.trunk_layer):
            optim.zero_grad()
            losses = [example_loss(model, e, trunk.read(i, lay)) for e, i, lay in
                      zip(batch, ids, layouts, strict=True)]  # fmt: skip
            loss, fc, lm = combined_loss(losses)
            loss.backward()
            optim.step()
        step, step_cpu = time.perf_counter() - start, time.process_time() - cpu
        per_token = step / report["batch_tokens"]
        cpu_per_token = step_cpu / report["batch_tokens"]
        row = {
            "trainable_parameters": sum(p.numel() for p in trainable(model).values()),
            "step_seconds": round(step, 1),
            "step_cpu_seconds": round(step_cpu, 1),
            "first_step_losses": {"forced_choice": round(fc, 4), "grounded_lm": round(lm, 4)},
            "epoch_hours": {
                arm: round(per_token * info["tokens"] / 3600, 2)
                for arm, info in report["arms"].items()
            },
            "epoch_cpu_hours": {
                arm: round(cpu_per_token * info["tokens"] / 3600, 2)
                for arm, info in report["arms"].items()
            },
        }
        report["capacities"][capacity] = row
        print(json.dumps({capacity: row}), flush=True)
    if stats.computed:
        report["trunk_hours"] = {
            arm: round(info["tokens"] / stats.tokens_per_second / 3600, 2)
            for arm, info in report["arms"].items()
        }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
