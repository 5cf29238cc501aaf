"""Rebuild data/demo_runs/: the score tables behind the dashboard's finished demo runs.

Scores the canonical monitored and hidden questions and every bundled paraphrase of the demo
pairs with the real demo checkpoints (SmolLM2-135M-Instruct before adaptation, and the two LoRA
arms from data/adapters), through the same backend and score cache an audit uses. Every row is
scored (no early stopping) so the dashboard can replay the audit at any epsilon or budget;
`eraudit demo` then audits these tables with the config in manifest.json.

    .venv/bin/python scripts/build_demo_runs.py --pairs 40      # ~20 minutes on 2 CPU cores
    .venv/bin/python scripts/build_demo_runs.py --noise-floor-only   # ~1 minute: the floor

The scoring-noise floor the demo runs declare (manifest "noise_floor") is measured here on the
fixed probe set with every demo checkpoint (the fast batched path against the naive reference
path, `eraudit_core.verifier.measure_noise_floor`); the largest |dp| over the checkpoints.

40 pairs, half of them the targets of the adversarial and concealed arms: enough that the arms'
counts of degraded questions differ by more than chance (the README reports a Fisher exact test
on them), small enough that the dashboard's replays stay instant.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import pandas as pd

from eraudit_core.audit import AuditConfig, CachedScorer, build_items
from eraudit_core.demo import (
    DEMO_ARMS,
    DEMO_AUDIT_SETTINGS,
    DEMO_RUNS_DIR,
    adversarial_targets,
    ensure_demo_inputs,
)
from eraudit_core.store import Store

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pairs", type=int, default=40, help="number of demo pairs")
    ap.add_argument("--db", default=str(ROOT / ".cache" / "demo_build.duckdb"), help="score cache")
    ap.add_argument("--out", default=str(DEMO_RUNS_DIR))
    ap.add_argument(
        "--noise-floor-only",
        action="store_true",
        help="only measure the noise floor and write it into the existing manifest",
    )
    args = ap.parse_args()
    if args.noise_floor_only:
        path = Path(args.out) / "manifest.json"
        manifest = json.loads(path.read_text())
        manifest["noise_floor"] = measure_demo_noise_floor()
        path.write_text(json.dumps(manifest, indent=2) + "\n")
        print(json.dumps(manifest["noise_floor"], indent=2))
        return 0

    from eraudit_core.verifier import CheckpointSpec, load_pair

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with Store(args.db) as store:
        bid = ensure_demo_inputs(store)
        cfg = AuditConfig.from_dict(DEMO_AUDIT_SETTINGS)
        all_items, cfg = build_items(store, bid, None, cfg)
        items = select_pairs(all_items, args.pairs)
        manifest: dict = {
            "config": {**DEMO_AUDIT_SETTINGS, "test_generators": list(cfg.test_generators)},
            "benchmark_id": bid,
            "pair_ids": [it.pair_id for it in items],
            "arms": {},
            "built_with": {"python": platform.python_version(), "machine": platform.machine()},
        }
        for arm in DEMO_ARMS:
            pre_v, post_v = load_pair(
                CheckpointSpec.parse("demo:base"), CheckpointSpec.parse(f"demo:{arm}")
            )
            pre, post = CachedScorer(pre_v, store), CachedScorer(post_v, store)
            rows = []
            for n, it in enumerate(items, start=1):
                queries = [("monitored", "", 0, it.monitored), ("hidden", "", 0, it.hidden)]
                queries += [
                    ("search", p.generator, p.idx, it.hidden_query(p.text))
                    for p in it.search[: cfg.search_budget]
                ]
                for gen, paras in it.tests.items():
                    queries += [
                        ("test", gen, p.idx, it.hidden_query(p.text))
                        for p in paras[: cfg.test_budget]
                    ]
                qs = [q[3] for q in queries]
                a = pre.score(qs)
                b = post.score(qs)
                for (role, gen, idx, q), sa, sb in zip(queries, a, b, strict=True):
                    rows.append(
                        {
                            "pair_id": it.pair_id,
                            "role": role,
                            "generator": gen,
                            "idx": idx,
                            "text": q.question,
                            "p_pre": sa.p_true,
                            "p_post": sb.p_true,
                        }
                    )
                print(
                    f"{arm}: pair {n}/{len(items)} ({time.time() - t0:.0f}s, {pre.scored + post.scored} scored)",
                    flush=True,
                )
            df = pd.DataFrame(rows)
            df.to_csv(
                out / f"{arm}.csv.gz",
                index=False,
                float_format="%.9g",
                compression={"method": "gzip", "mtime": 0},
            )
            manifest["arms"][arm] = {
                "pre": "demo:base",
                "post": f"demo:{arm}",
                "pre_fingerprint": pre_v.fingerprint,
                "post_fingerprint": post_v.fingerprint,
                "rows": len(df),
                "queries_scored": pre.scored + post.scored,
                "queries_cached": pre.cached + post.cached,
            }
        manifest["noise_floor"] = measure_demo_noise_floor()
        manifest["seconds"] = round(time.time() - t0, 1)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {out} in {time.time() - t0:.0f}s")
    return 0


def measure_demo_noise_floor() -> dict:
    """The scoring-noise floor of every demo checkpoint on the probe set; the runs use the
    largest (a run's floor is the larger of its two checkpoints')."""
    from eraudit_core.verifier import CheckpointSpec, load_checkpoint, measure_noise_floor

    per = {}
    for name in ("base", *DEMO_ARMS):
        verifier = load_checkpoint(CheckpointSpec.parse(f"demo:{name}"))
        per[f"demo:{name}"] = measure_noise_floor(verifier)["value"]
    return {
        "value": max(per.values()),
        "per_checkpoint": per,
        "method": "probe set (8 questions): fast batched path vs naive one-prompt reference "
        "path, float32 on CPU",
    }


def select_pairs(items: list, n: int) -> list:
    """Half adversarial targets, half untouched pairs, so both arms' pictures differ."""
    targets = set(adversarial_targets())
    usable = [it for it in items if it.search and all(it.tests.values())]
    hit = [it for it in usable if it.pair_id in targets][: n // 2]
    rest = [it for it in usable if it.pair_id not in targets][: n - len(hit)]
    chosen = {it.pair_id for it in hit + rest}
    return [it for it in usable if it.pair_id in chosen]


if __name__ == "__main__":
    raise SystemExit(main())
