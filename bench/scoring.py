"""Scoring throughput: fast path vs the naive one-prompt-at-a-time baseline (docs/design.md §9).

Scores the same demo prompts (QuALITY-H monitored and hidden questions, both answer orders)
with the verifier's fast path and with the naive full-vocabulary baseline on the same model,
checks that the probabilities agree, and prints prompts per second and peak memory. Optional
`--pair-memory` also measures the memory saved by sharing one base model between two adapted
checkpoints. Not a test: it measures, it does not assert speed.

    .venv/bin/python bench/scoring.py [--quick] [--spec demo:base] [--queries 150]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def rss_mib() -> float:
    """Current resident memory of this process (Linux /proc), MiB."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def demo_queries(n: int) -> list:
    from eraudit_core.store import load_bundled_benchmark
    from eraudit_core.types import Query

    queries = []
    for pair in load_bundled_benchmark().pairs:
        for role, q in (("monitored", pair.monitored), ("hidden", pair.hidden)):
            queries.append(
                Query(f"{pair.pair_id}:{role}", q.question, q.true_option, q.false_option)
            )
    return queries[:n]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="demo:base", help="checkpoint spec (default demo:base)")
    parser.add_argument("--queries", type=int, default=150, help="queries (2 prompts each)")
    parser.add_argument("--quick", action="store_true", help="20 queries: done within a minute")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--pair-memory", action="store_true", help="measure base sharing")
    args = parser.parse_args(argv)
    n = 20 if args.quick else args.queries

    import torch

    from eraudit_core.verifier import load_verifier

    rss0 = rss_mib()
    t = time.perf_counter()
    verifier = load_verifier(
        args.spec, device=args.device, dtype=args.dtype, batch_size=args.batch_size
    )
    info = verifier.describe()
    print(
        f"loaded {info['name']} ({info['parameters'] / 1e6:.1f}M parameters, {info['device']}, "
        f"{info['dtype']}) in {time.perf_counter() - t:.1f} s; RSS +{rss_mib() - rss0:.0f} MiB"
    )
    queries = demo_queries(n)
    prompts = 2 * len(queries)
    print(f"{len(queries)} queries = {prompts} prompts, torch threads {torch.get_num_threads()}")
    cuda = info["device"].startswith("cuda")

    def timed(naive: bool) -> tuple[torch.Tensor, float]:
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        lp = verifier.label_logprobs(queries, naive=naive)
        if cuda:
            torch.cuda.synchronize()
        return lp, time.perf_counter() - start

    verifier.label_logprobs(queries[:2])  # warm-up (allocator, kernels)
    fast_lp, fast_s = timed(naive=False)
    peak_fast = peak_rss_mib()
    naive_lp, naive_s = timed(naive=True)
    peak_all = peak_rss_mib()

    def p_true(lp: torch.Tensor) -> torch.Tensor:
        return (torch.softmax(lp[:, 0], -1)[:, 0] + torch.softmax(lp[:, 1], -1)[:, 1]) / 2

    max_dp = float((p_true(fast_lp) - p_true(naive_lp)).abs().max())
    max_dl = float((fast_lp - naive_lp).abs().max())
    print(
        f"fast : {prompts / fast_s:7.2f} prompts/s ({fast_s:.1f} s); peak RSS {peak_fast:.0f} MiB"
    )
    print(
        f"naive: {prompts / naive_s:7.2f} prompts/s ({naive_s:.1f} s); peak RSS {peak_all:.0f} MiB"
    )
    if cuda:
        print(f"peak CUDA memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")
    print(f"max |d logprob| = {max_dl:.2e}; probabilities agree to 1e-4: {max_dp <= 1e-4}")

    if args.pair_memory:
        # Honest + adversarial on one shared base vs the adversarial arm on a private copy.
        before = rss_mib()
        load_verifier("demo:honest", device=args.device, dtype=args.dtype)
        load_verifier("demo:adversarial", device=args.device, dtype=args.dtype)
        shared = rss_mib() - before
        before = rss_mib()
        load_verifier("demo:adversarial", device=args.device, dtype=args.dtype, share_base=False)
        private = rss_mib() - before
        print(
            f"base sharing: two adapters on the loaded base +{shared:.0f} MiB; one more private "
            f"copy +{private:.0f} MiB (saved per shared checkpoint ~{private - shared / 2:.0f} MiB)"
        )

    print(f"fast/naive = {naive_s / fast_s:.1f}x (max |dp| = {max_dp:.1e})")
    return 0 if max_dp <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
