"""Rebuild the bundled demo paraphrase sets under data/paraphrases/ (deterministic).

    .venv/bin/python scripts/build_demo_paraphrases.py            # all bundled pairs
    .venv/bin/python scripts/build_demo_paraphrases.py --check    # rebuild in memory, compare

Search set: generator "rules-search" (rule generator, seed 1, hash part 0 of 3).
Test sets, in this fixed order: "rules-a" (seed 2, part 1 of 3) then "rules-b" (seed 3, part 2).
Every candidate passes the validity filter; the three sets are disjoint per pair. Rejections
and a manifest (generator settings, filter thresholds, counts) are written alongside.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

from eraudit_core.paraphrase import (
    FilterConfig,
    build_paraphrase_sets,
    create_generator,
    write_paraphrase_file,
)
from eraudit_core.store import load_bundled_benchmark

OUT_DIR = Path(__file__).resolve().parent.parent / "data" / "paraphrases"
N_SEARCH = 20
N_TEST = 15
# Three disjoint thirds of each question's rewrites (by text hash), differently seeded, so every
# pair gets a fair share of search and test paraphrases.
SEARCH = {"name": "rules-search", "seed": 1, "families": "ab", "part": 0, "parts": 3}
TESTS = (
    {"name": "rules-a", "seed": 2, "families": "ab", "part": 1, "parts": 3},
    {"name": "rules-b", "seed": 3, "families": "ab", "part": 2, "parts": 3},
)


def build(out_dir: Path) -> dict[str, object]:
    bench = load_bundled_benchmark()
    config = FilterConfig()
    sets = build_paraphrase_sets(
        bench.pairs,
        [create_generator("rules", **SEARCH)],
        [create_generator("rules", **t) for t in TESTS],
        n_search=N_SEARCH,
        n_test=N_TEST,
        config=config,
        progress=lambda i, n: print(f"\r{i}/{n} pairs", end="", file=sys.stderr),
    )
    print(file=sys.stderr)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for gen in (SEARCH, *TESTS):
        name = str(gen["name"])
        path = out_dir / f"quality_h_{name}.jsonl"
        write_paraphrase_file([p for p in sets.paraphrases if p.generator == name], path)
        files[name] = path.name
    rej_path = out_dir / "quality_h_rejections.jsonl"
    with open(rej_path, "w", encoding="utf-8", newline="\n") as fh:
        for r in sets.rejections:
            rec = {"pair_id": r.pair_id, "generator": r.generator, "text": r.text}
            fh.write(json.dumps({**rec, "reason": r.reason}, ensure_ascii=False) + "\n")
    per_gen = Counter(p.generator for p in sets.paraphrases)
    short = Counter(
        g
        for g, want in [(str(SEARCH["name"]), N_SEARCH)] + [(str(t["name"]), N_TEST) for t in TESTS]
        for pair in bench.pairs
        if len(sets.for_pair(pair.pair_id, generator=g)) < want
    )
    manifest = {
        "benchmark": bench.name,
        "benchmark_sha256": bench.sha256,
        "pairs": len(bench.pairs),
        "search": {"generator": "rules", **SEARCH, "n_per_pair": N_SEARCH},
        "test": [{"generator": "rules", **t, "n_per_pair": N_TEST} for t in TESTS],
        "provenance": sets.provenance,
        "filter": config.to_dict(),
        "counts": {
            "accepted": dict(per_gen),
            "pairs_short_of_target": dict(short),
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
