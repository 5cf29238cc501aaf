"""Scoring throughput: fast path vs the naive one-prompt-at-a-time baseline (docs/design.md §9).

Scores the same demo prompts (QuALITY-H monitored and hidden questions, both answer orders)
with the verifier's fast path and with the naive full-vocabulary baseline on the same model,
checks that the probabilities agree, and prints prompts per second and peak memory. Optional
`--pair-memory` also measures the memory saved by sharing one base model between two adapted
checkpoints. Optional `--shared-trunk` measures scoring a pre/post pair from one pass over the
frozen bottom layers against scoring each separately (docs/debate-distillation.md) and prints
`shared-trunk/separate = X.XXx, max |dp| = Y` (X: separate time / shared-trunk time). Not a
test: it measures, it does not assert speed.

    .venv/bin/python bench/scoring.py [--quick] [--spec demo:base] [--queries 150]
    .venv/bin/python bench/scoring.py --shared-trunk [--pre demo:base] [--post demo:honest]
        [--pairs 100]
    .venv/bin/python bench/scoring.py --head [--pairs 40] [--rounds 4]

`--head` times the one-click audit's pair (demo:base, demo:concealed) from one trunk with the
output head reading only the positions read (`_kernels.read_positions`) against the head on
every staged forward's last position, as before, and prints `before/now = X.XXx`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import sys
import time
from collections.abc import Iterator

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


SHARED_TRUNK_PAIRS = 100


def shared_trunk(args: argparse.Namespace) -> int:
    """Time separate scoring of pre and post (the fast path, each checkpoint on its own)
    against shared-trunk scoring of both, on the same queries; compare the probabilities."""
    import torch

    from eraudit_core.verifier import load_verifier
    from eraudit_core.verifier.hf import decoder, plan_shared_trunk

    load_before = os.getloadavg()[0]
    t = time.perf_counter()
    kwargs = {"device": args.device, "dtype": args.dtype, "batch_size": args.batch_size}
    pre = load_verifier(args.pre, **kwargs)
    post = load_verifier(args.post, **kwargs)
    plan = plan_shared_trunk(pre, post)  # refuses a pair that cannot share a trunk
    layers = len(decoder(pre._base.model).layers)
    print(
        f"loaded {pre.name} and {post.name} on one base in {time.perf_counter() - t:.1f} s; "
        f"adapted layers >= {plan.split} of {layers}; torch threads {torch.get_num_threads()}"
    )
    queries = demo_queries(2 * args.pairs)
    prompts = 2 * len(queries)
    print(f"{args.pairs} pairs = {len(queries)} queries = {prompts} prompts per checkpoint")
    plan.label_logprobs(queries[:2])  # warm-up (allocator, both adapters)
    pre.label_logprobs(queries[:2])
    post.label_logprobs(queries[:2])

    # Interleaved rounds, the order alternating, so load that drifts during the run (a
    # shared machine) falls on both sides alike. CPU time of this process is shown beside
    # wall time: it counts the work done, whatever else the machine runs.
    sep_s = sh_s = sep_cpu = sh_cpu = 0.0
    for r in range(args.rounds):
        for side in ("separate", "shared") if r % 2 == 0 else ("shared", "separate"):
            wall, cpu = time.perf_counter(), time.process_time()
            if side == "separate":
                sep_pre, sep_post = pre.label_logprobs(queries), post.label_logprobs(queries)
                sep_s += time.perf_counter() - wall
                sep_cpu += time.process_time() - cpu
            else:
                sh_pre, sh_post = plan.label_logprobs(queries)
                sh_s += time.perf_counter() - wall
                sh_cpu += time.process_time() - cpu

    def p_true(lp: torch.Tensor) -> torch.Tensor:
        return (torch.softmax(lp[:, 0], -1)[:, 0] + torch.softmax(lp[:, 1], -1)[:, 1]) / 2

    max_dp = max(
        float((p_true(sh_pre) - p_true(sep_pre)).abs().max()),
        float((p_true(sh_post) - p_true(sep_post)).abs().max()),
    )
    moved = float((p_true(sep_post) - p_true(sep_pre)).abs().max())
    n = 2 * prompts * args.rounds
    print(
        f"separate    : {n / sep_s:7.2f} prompts/s ({sep_s:.1f} s wall, {sep_cpu:.1f} s CPU; "
        f"pre then post, {args.rounds} round(s))"
    )
    print(
        f"shared trunk: {n / sh_s:7.2f} prompts/s ({sh_s:.1f} s wall, {sh_cpu:.1f} s CPU; "
        "both at once)"
    )
    print(
        f"ceiling with {layers - plan.split} of {layers} layers adapted: "
        f"{2 * layers / (plan.split + 2 * (layers - plan.split)):.2f}x; "
        f"max |p_post - p_pre| = {moved:.3f}; load average {load_before:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after (1 min)"
    )
    print(f"CPU-time ratio separate/shared-trunk = {sep_cpu / sh_cpu:.2f}x")
    print(f"shared-trunk/separate = {sep_s / sh_s:.2f}x, max |dp| = {max_dp:.1e}")
    return 0 if max_dp <= 1e-5 else 1


@contextlib.contextmanager
def head_on_every_stage() -> Iterator[None]:
    """Scoring as it was before `read_positions`: every staged forward asks for its last
    position's logits by the integer `logits_to_keep`, so the head runs on each staged
    prefix and on a strided slice (the baseline of `--head`)."""
    from eraudit_core.verifier import _kernels
    from eraudit_core.verifier.hf import _shared_trunk

    real = _kernels.read_positions

    def integer(width: int, keep: int, device: str) -> int:
        return max(keep, 1)

    _kernels.read_positions = _shared_trunk.read_positions = integer  # type: ignore[assignment]
    try:
        yield
    finally:
        _kernels.read_positions = _shared_trunk.read_positions = real


def head(args: argparse.Namespace) -> int:
    """Time the one-click audit's shared-trunk scoring (demo:base and demo:concealed) with the
    head reading only the positions read against the head on every staged forward, on the
    same queries in interleaved rounds; compare the probabilities."""
    import torch

    from eraudit_core.verifier import load_verifier
    from eraudit_core.verifier.hf import plan_shared_trunk

    load_before = os.getloadavg()[0]
    kwargs = {"device": args.device, "dtype": args.dtype, "batch_size": args.batch_size}
    plan = plan_shared_trunk(
        load_verifier(args.pre, **kwargs), load_verifier("demo:concealed", **kwargs)
    )
    queries = demo_queries(2 * args.pairs)
    print(
        f"{len(queries)} queries through {plan.pre.name} and {plan.post.name} from one trunk, "
        f"torch threads {torch.get_num_threads()}"
    )
    plan.label_logprobs(queries[:2])  # warm-up (allocator, the staged header)
    seconds = {"read positions only": 0.0, "every stage (before)": 0.0}
    out: dict[str, list[torch.Tensor]] = {}
    for r in range(args.rounds):
        for side in list(seconds) if r % 2 == 0 else list(seconds)[::-1]:
            start = time.perf_counter()
            if side == "read positions only":
                out[side] = plan.label_logprobs(queries)
            else:
                with head_on_every_stage():
                    out[side] = plan.label_logprobs(queries)
            seconds[side] += time.perf_counter() - start

    def p_true(lp: torch.Tensor) -> torch.Tensor:
        return (torch.softmax(lp[:, 0], -1)[:, 0] + torch.softmax(lp[:, 1], -1)[:, 1]) / 2

    now, before = out["read positions only"], out["every stage (before)"]
    max_dp = max(
        float((p_true(a) - p_true(b)).abs().max()) for a, b in zip(now, before, strict=True)
    )
    for side, s in seconds.items():
        print(f"{side:22s}: {s:6.1f} s over {args.rounds} round(s)")
    print(
        f"before/now = {seconds['every stage (before)'] / seconds['read positions only']:.2f}x, "
        f"max |dp| = {max_dp:.1e}; load average {load_before:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after (1 min)"
    )
    return 0 if max_dp <= 1e-5 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="demo:base", help="checkpoint spec (default demo:base)")
    parser.add_argument("--queries", type=int, default=150, help="queries (2 prompts each)")
    parser.add_argument("--quick", action="store_true", help="20 queries: done within a minute")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--pair-memory", action="store_true", help="measure base sharing")
    parser.add_argument(
        "--shared-trunk", action="store_true", help="pre/post from one trunk pass vs separately"
    )
    parser.add_argument(
        "--head",
        action="store_true",
        help="the one-click pair from one trunk: head on the read positions vs every stage",
    )
    parser.add_argument("--pre", default="demo:base", help="--shared-trunk: pre checkpoint")
    parser.add_argument("--post", default="demo:honest", help="--shared-trunk: post checkpoint")
    parser.add_argument(
        "--pairs",
        type=int,
        default=SHARED_TRUNK_PAIRS,
        help=f"--shared-trunk: benchmark pairs (monitored + hidden question each; default "
        f"{SHARED_TRUNK_PAIRS}, within 15 min on 2 CPU cores)",
    )
    parser.add_argument("--rounds", type=int, default=2, help="--shared-trunk: timed rounds")
    args = parser.parse_args(argv)
    if args.shared_trunk:
        return shared_trunk(args)
    if args.head:
        return head(args)
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
