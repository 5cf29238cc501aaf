"""Rebuild the bundled demo paraphrase sets under data/paraphrases/ (deterministic).

    .venv/bin/python scripts/build_demo_paraphrases.py            # all bundled pairs
    .venv/bin/python scripts/build_demo_paraphrases.py --check    # rebuild in memory, compare

Every question's rule rewrites are split into 9 buckets by a hash of their normalised text
(`eraudit_core.paraphrase.DEMO_RULE_SETS`): search set "rules-search" owns buckets 0-1, the
test pools, in this fixed order, "rules-a" buckets 2-4 and "rules-b" buckets 5-7. Bucket 8 is
"rules-train", the concealed adapter's training split, written by `eraudit adapt` next to that
adapter and never here: the audit only sees paraphrases the adaptation never used. Each set
keeps every valid rewrite of its buckets (up to POOL_CAP). Every candidate passes the validity
filter; the sets are disjoint per pair. Rejections and a manifest (generator settings, filter
thresholds, counts, pool sizes) are written alongside.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
from collections import Counter
from pathlib import Path

from eraudit_core.paraphrase import (
    DEMO_RULE_BUCKETS,
    DEMO_RULE_SETS,
    DEMO_SEARCH,
    DEMO_TESTS,
    DEMO_TRAINING,
    FilterConfig,
    build_paraphrase_sets,
    demo_rule_generator,
    write_paraphrase_file,
)
from eraudit_core.store import load_bundled_benchmark

OUT_DIR = Path(__file__).resolve().parent.parent / "data" / "paraphrases"
# The paper's budget; no bucket of the bundled questions holds more, so each set is the whole
# of its buckets (stage 2 draws from the test pools at random).
POOL_CAP = 100
# Sequential-test lengths n* = ceil(ln(1 - confidence) / ln p*) worth counting pools for.
TARGETS = ((0.8, 0.95), (0.75, 0.95), (0.8, 0.9), (0.75, 0.9))


def build(out_dir: Path) -> dict[str, object]:
    bench = load_bundled_benchmark()
    config = FilterConfig()
    sets = build_paraphrase_sets(
        bench.pairs,
        [demo_rule_generator(DEMO_SEARCH)],
        [demo_rule_generator(name) for name in DEMO_TESTS],
        n_search=POOL_CAP,
        n_test=POOL_CAP,
        config=config,
        progress=lambda i, n: print(f"\r{i}/{n} pairs", end="", file=sys.stderr),
    )
    print(file=sys.stderr)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for name in (DEMO_SEARCH, *DEMO_TESTS):
        path = out_dir / f"quality_h_{name}.jsonl"
        write_paraphrase_file([p for p in sets.paraphrases if p.generator == name], path)
        files[name] = path.name
    rej_path = out_dir / "quality_h_rejections.jsonl"
    with open(rej_path, "w", encoding="utf-8", newline="\n") as fh:
        for r in sets.rejections:
            rec = {"pair_id": r.pair_id, "generator": r.generator, "text": r.text}
            fh.write(json.dumps({**rec, "reason": r.reason}, ensure_ascii=False) + "\n")
    sizes = {
        name: [len(sets.for_pair(pair.pair_id, generator=name)) for pair in bench.pairs]
        for name in (DEMO_SEARCH, *DEMO_TESTS)
    }
    test_min = [min(sizes[g][i] for g in DEMO_TESTS) for i in range(len(bench.pairs))]
    reachable = {}
    for p_star, confidence in TARGETS:
        n_star = math.ceil(math.log(1 - confidence) / math.log(p_star))
        reachable[f"p*={p_star} at confidence {confidence} (n*={n_star})"] = sum(
            n >= n_star for n in test_min
        )
    manifest = {
        "benchmark": bench.name,
        "benchmark_sha256": bench.sha256,
        "pairs": len(bench.pairs),
        "buckets": DEMO_RULE_BUCKETS,
        "search": {"generator": "rules", "name": DEMO_SEARCH, **DEMO_RULE_SETS[DEMO_SEARCH]},
        "test": [{"generator": "rules", "name": g, **DEMO_RULE_SETS[g]} for g in DEMO_TESTS],
        "reserved_for_adaptation": {
            "generator": "rules",
            "name": DEMO_TRAINING,
            **DEMO_RULE_SETS[DEMO_TRAINING],
            "where": "data/adapters/concealed/ (never audited)",
        },
        "pool_cap": POOL_CAP,
        "provenance": sets.provenance,
        "filter": config.to_dict(),
        "counts": {
            "accepted": dict(Counter(p.generator for p in sets.paraphrases)),
            "per_pair": {
                g: {
                    "min": min(v),
                    "median": statistics.median(v),
                    "mean": round(statistics.mean(v), 2),
                    "max": max(v),
                    "pairs_with_none": sum(n == 0 for n in v),
                }
                for g, v in sizes.items()
            },
            "pairs_whose_test_pools_reach_n_star": reachable,
            "rejected_by_reason": dict(Counter(r.code for r in sets.rejections)),
            "mean_cosine": round(sum(sets.cosines) / max(1, len(sets.cosines)), 4),
        },
        "files": {**files, "rejections": rej_path.name},
        "rebuild": "python scripts/build_demo_paraphrases.py",
    }
    (out_dir / "manifest.json").write_text(
        json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    )
    return manifest


def _digest(directory: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(directory.glob("*.jsonl")) + [directory / "manifest.json"]:
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--check", action="store_true", help="rebuild to a temp dir and compare")
    args = ap.parse_args()
    if args.check:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp))
            same = _digest(Path(tmp)) == _digest(args.out)
        print("identical" if same else "DIFFERENT from the bundled files")
        return 0 if same else 1
    manifest = build(args.out)
    print(json.dumps(manifest["counts"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
