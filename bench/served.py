"""Served throughput: prompts per second and prompts in flight against any served checkpoint.

Scores distinct demo questions (QuALITY-H monitored and hidden questions, both answer orders)
through the served backend at each requested setting (requests in flight x prompts a request),
sampling the requests and prompts in flight every 20 ms, and optionally scores the same
questions with a local checkpoint to report the largest |p_true difference|. Each setting gets
its own questions, so a server's prefix cache does not flatter the later rows. Not a test: it
measures, it does not assert speed.

    .venv/bin/python bench/served.py "http://127.0.0.1:8000/v1#MODEL;tokenizer=demo:base" \
        [--queries 20] [--concurrency 1,4,16] [--batch 1] [--compare demo:base] [--json out.json]

`--batch` gives the prompts a request (`;batch=N`): one value for every row, or one value per
`--concurrency` value (`--concurrency 1,1,8 --batch 1,8,8`: 1, 8 and 64 prompts in flight).

llama-cpp-python's server evaluates one request at a time (no batching), so concurrency only
hides the client's round trips there; vLLM batches requests in flight, which is where
concurrency pays.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def demo_queries(n: int, skip: int = 0) -> list:
    from eraudit_core.store import load_bundled_benchmark
    from eraudit_core.types import Query

    queries = []
    for pair in load_bundled_benchmark().pairs:
        for role, q in (("monitored", pair.monitored), ("hidden", pair.hidden)):
            queries.append(
                Query(f"{pair.pair_id}:{role}", q.question, q.true_option, q.false_option)
            )
    if skip + n > len(queries):
        raise SystemExit(f"only {len(queries)} demo questions; ask for fewer")
    return queries[skip : skip + n]


def measure(spec_text: str, concurrency: int, batch: int, queries: list) -> tuple[dict, list]:
    from eraudit_core.verifier import ServedSpec, load_checkpoint

    spec = ServedSpec.parse(spec_text).with_options(concurrency=concurrency, batch=batch)
    t0 = time.monotonic()
    verifier = load_checkpoint(spec)
    connect_s = time.monotonic() - t0
    before = verifier.traffic()
    samples: list[tuple[int, int]] = []  # (requests, prompts) in flight
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            t = verifier.traffic()
            samples.append((t["in_flight"], t.get("prompts_in_flight", t["in_flight"])))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t1 = time.monotonic()
    scores = verifier.score(queries)
    wall = time.monotonic() - t1
    done.set()
    sampler.join()
    after = verifier.traffic()
    prompts = after["prompts"] - before["prompts"]
    info = verifier.describe()
    row = {
        "concurrency": concurrency,
        "batch": batch,
        "prompts_per_request": info.get("prompts_per_request", 1),
        "queries": len(queries),
        "prompts": prompts,
        "requests": after["requests"] - before["requests"],
        "fallbacks": after["fallbacks"] - before["fallbacks"],
        "retries": after["retries"] - before["retries"],
        "seconds": round(wall, 2),
        "prompts_per_s": round(prompts / wall, 3),
        "mean_in_flight": round(statistics.fmean(r for r, _ in samples), 2) if samples else 0.0,
        "mean_prompts_in_flight": (
            round(statistics.fmean(p for _, p in samples), 2) if samples else 0.0
        ),
        "peak_prompts_in_flight": max((p for _, p in samples), default=0),
        "connect_and_probe_s": round(connect_s, 2),
    }
    return row, scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="served checkpoint spec (URL#MODEL;tokenizer=...)")
    parser.add_argument("--queries", type=int, default=20, help="questions per concurrency")
    parser.add_argument("--concurrency", default="1,4", help="comma-separated (default 1,4)")
    parser.add_argument(
        "--batch", default="1", help="prompts a request: one value, or one per concurrency"
    )
    parser.add_argument("--compare", default="", help="local spec to compare p_true with")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    batches = [int(x) for x in args.batch.split(",") if x.strip()]
    if len(batches) == 1:
        batches *= len(levels)
    if len(batches) != len(levels):
        parser.error("--batch takes one value or one per --concurrency value")
    rows, compared = [], []
    for i, (c, b) in enumerate(zip(levels, batches, strict=True)):
        queries = demo_queries(args.queries, skip=i * args.queries)
        row, scores = measure(args.spec, c, b, queries)
        rows.append(row)
        compared.append((queries, scores))
        print(json.dumps(row), flush=True)
    result: dict = {"spec": args.spec, "rows": rows}
    if args.compare:
        from eraudit_core.verifier import load_checkpoint

        local = load_checkpoint(args.compare)
        diffs = []
        for queries, scores in compared:
            for a, b in zip(scores, local.score(queries), strict=True):
                diffs.append(abs(a.p_true - b.p_true))
        result["compare"] = {
            "local": args.compare,
            "questions": len(diffs),
            "max_abs_dp": float(f"{max(diffs):.3g}"),
            "mean_abs_dp": float(f"{statistics.fmean(diffs):.3g}"),
        }
        print(json.dumps(result["compare"]))
    print()
    print(
        "| requests in flight x prompts a request (asked) | prompts/s | mean prompts in flight "
        "| peak | mean requests in flight | requests | seconds | prompts |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['concurrency']} x {r['prompts_per_request']} | {r['prompts_per_s']} | "
            f"{r['mean_prompts_in_flight']} | {r['peak_prompts_in_flight']} | "
            f"{r['mean_in_flight']} | {r['requests']} | {r['seconds']} | {r['prompts']} |"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
