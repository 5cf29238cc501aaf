"""`eraudit paraphrase` and `eraudit import-paraphrases`: generate or import, filter, store.

The JSON printed by `eraudit paraphrase --json` is a stable contract:
``{"pairs": [{"pair_id", "original", "accepted": [text, ...],
"rejected": [{"text", "reason"}, ...]}, ...]}``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from eraudit_core.cli._option_types import strict_float, strict_int
from eraudit_core.errors import InputError
from eraudit_core.paraphrase import (
    FilterConfig,
    Rejection,
    available_generators,
    create_generator,
    filter_paraphrases,
    generator_provenance,
    normalize_text,
    read_paraphrase_candidates,
)
from eraudit_core.text import terminal_safe
from eraudit_core.types import Pair, Paraphrase


def register(subparsers: argparse._SubParsersAction) -> None:
    kinds = available_generators()
    listing = "; ".join(f"{k}: {s.summary}" for k, s in kinds.items())
    p = subparsers.add_parser(
        "paraphrase",
        help="generate and filter paraphrases of hidden questions",
        description=f"Generators: {listing}",
    )
    p.add_argument("benchmark", help="benchmark file, or 'bundled' for the bundled QuALITY-H")
    p.add_argument("--generator", required=True, choices=sorted(kinds), help=listing)
    p.add_argument("--n", type=strict_int, required=True, help="paraphrases to ask for per pair")
    p.add_argument("--pair-ids", default="", help="comma-separated pair ids (default: all)")
    p.add_argument("--db", help="store accepted paraphrases and rejections in this DuckDB file")
    p.add_argument("--role", choices=("search", "test"), default="search")
    p.add_argument("--name", help="generator name stored with the paraphrases")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--min-cosine", type=strict_float, default=FilterConfig.min_cosine)
    g = p.add_argument_group("generator settings")
    g.add_argument("--seed", type=strict_int, help="rules/hf: seed")
    g.add_argument("--families", help="rules: framing families 'a', 'b' or 'ab'")
    g.add_argument("--base-url", help="endpoint: e.g. http://127.0.0.1:8000/v1")
    g.add_argument("--model", help="endpoint: model name")
    g.add_argument("--api-key-env", help="endpoint: environment variable holding the API key")
    g.add_argument("--batch-size", type=strict_int, help="endpoint/hf: paraphrases per request")
    g.add_argument("--max-requests", type=strict_int, help="endpoint: request budget")
    g.add_argument("--timeout-s", type=strict_float, help="endpoint: per-request timeout")
    g.add_argument("--model-path", help="hf: local model directory (default: the demo model)")
    g.add_argument("--gguf-file", help="hf: GGUF file inside --model-path")
    g.add_argument("--file", help="file: paraphrase file (reference layout or flat JSONL)")
    g.add_argument("--source-generator", help="file: only this generator's texts from the file")
    p.set_defaults(func=run_paraphrase)

    q = subparsers.add_parser(
        "import-paraphrases",
        help="import a paraphrase file, filter it and store it",
        description="Reference layout ({'paraphrase': {'gpt': [...]}} per benchmark record, or "
        "[{'Q_H': text}, ...]) or flat JSONL (pair_id, generator, text).",
    )
    q.add_argument("file")
    q.add_argument("--db", required=True)
    q.add_argument("--benchmark", required=True, help="benchmark file, or 'bundled'")
    q.add_argument("--role", choices=("search", "test"), default="test")
    q.add_argument("--min-cosine", type=strict_float, default=FilterConfig.min_cosine)
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=run_import)


def _load_benchmark(arg: str) -> Any:
    from eraudit_core.store import load_benchmark, load_bundled_benchmark

    if arg.lower() in ("bundled", "quality-h", "quality_h"):
        return load_bundled_benchmark()
    return load_benchmark(arg)


def _select_pairs(benchmark: Any, pair_ids: str) -> list[Pair]:
    if not pair_ids.strip():
        return list(benchmark.pairs)
    wanted = [p.strip() for p in pair_ids.split(",") if p.strip()]
    known = {p.pair_id: p for p in benchmark.pairs}
    missing = [p for p in wanted if p not in known]
    if missing:
        raise InputError(f"--pair-ids: not in benchmark {benchmark.name}: {', '.join(missing)}")
    return [known[p] for p in wanted]


def _generator_settings(args: argparse.Namespace) -> dict[str, Any]:
    keys = {
        "rules": ("seed", "families"),
        "endpoint": ("base_url", "model", "api_key_env", "batch_size", "max_requests", "timeout_s"),
        "hf": ("model_path", "gguf_file", "seed", "batch_size"),
        "file": ("file", "source_generator"),
    }.get(args.generator, ())
    settings = {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}
    if "file" in settings:
        settings["path"] = settings.pop("file")
    if args.generator == "file" and "path" not in settings:
        raise InputError("--generator file needs --file PATH")
    if args.generator == "endpoint" and not (args.base_url and args.model):
        raise InputError("--generator endpoint needs --base-url and --model")
    if args.name:
        settings["name"] = args.name
    return settings


def run_paraphrase(args: argparse.Namespace) -> int:
    if args.n < 1:
        raise InputError(f"--n must be >= 1, got {args.n}")
    config = FilterConfig(min_cosine=args.min_cosine)
    benchmark = _load_benchmark(args.benchmark)
    pairs = _select_pairs(benchmark, args.pair_ids)
    generator = create_generator(args.generator, **_generator_settings(args))
    store = _open_store(args.db) if args.db else None
    try:
        bid = store.add_benchmark(benchmark) if store is not None else ""
        report = []
        for pair in pairs:
            exclude = _stored_texts(store, bid, pair.pair_id) if store is not None else {}
            candidates = generator.generate(pair.pair_id, pair.hidden.question, args.n)
            res = filter_paraphrases(
                pair.pair_id, pair.hidden, candidates, generator.name, config, exclude
            )
            if store is not None:
                start = _next_idx(store, bid, pair.pair_id, args.role, generator.name)
                paras = [
                    Paraphrase(pair.pair_id, args.role, generator.name, start + i, t)
                    for i, t in enumerate(res.accepted)
                ]
                prov = {**generator_provenance(generator), "filter": config.to_dict()}
                store.add_paraphrases(bid, paras, prov)
                store.add_rejections(bid, res.rejected)
            report.append(_pair_report(pair, res.accepted, res.rejected))
    finally:
        if store is not None:
            store.close()
    _emit({"pairs": report}, args.json)
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Validate the whole file, filter every group, then store it all in one transaction:
    a bad record anywhere leaves the store as it was."""
    config = FilterConfig(min_cosine=args.min_cosine)
    benchmark = _load_benchmark(args.benchmark)
    known = {p.pair_id: p for p in benchmark.pairs}
    rows = read_paraphrase_candidates(args.file, dataset=benchmark.name)
    if not rows:
        raise InputError(f"{args.file}: no paraphrases in the file; nothing imported")
    unknown = sorted({pid for pid, _g, _t in rows if pid not in known})
    if unknown:
        raise InputError(
            f"{args.file}: field pair_id: {len(unknown)} id(s) not in benchmark "
            f"{benchmark.name}, e.g. {unknown[:3]}"
        )
    grouped: dict[tuple[str, str], list[str]] = {}
    for pid, gen, text in rows:
        grouped.setdefault((pid, gen), []).append(text)
    store = _open_store(args.db)
    report = []
    try:
        bid = store.find_benchmark(benchmark)  # by content, as add_benchmark stores it
        taken: dict[str, dict[str, str]] = {}  # pair -> texts stored or accepted so far
        planned = []
        for (pid, gen), texts in grouped.items():
            pair = known[pid]
            if pid not in taken:
                taken[pid] = _stored_texts(store, bid, pid)
            res = filter_paraphrases(pid, pair.hidden, texts, gen, config, taken[pid])
            taken[pid].update(
                {normalize_text(t): f"the imported set of {gen}" for t in res.accepted}
            )
            start = _next_idx(store, bid, pid, args.role, gen)
            paras = [
                Paraphrase(pid, args.role, gen, start + i, t) for i, t in enumerate(res.accepted)
            ]
            planned.append((paras, res.rejected, gen))
            report.append({**_pair_report(pair, res.accepted, res.rejected), "generator": gen})
        with store.transaction():
            if store.add_benchmark(benchmark) != bid:
                raise InputError(f"{args.db}: another process changed benchmark {bid}; retry")
            for paras, rejected, gen in planned:
                prov = {
                    "kind": "file",
                    "name": gen,
                    "settings": {"path": str(Path(args.file).resolve())},
                    "filter": config.to_dict(),
                }
                store.add_paraphrases(bid, paras, prov)
                store.add_rejections(bid, rejected)
    finally:
        store.close()
    _emit({"pairs": report}, args.json)
    return 0


def _open_store(path: str) -> Any:
    from eraudit_core.store import Store

    return Store(path)


def _stored_texts(store: Any, benchmark_id: str, pair_id: str) -> dict[str, str]:
    return {
        normalize_text(p.text): f"the stored {p.role} set of {p.generator}"
        for p in store.paraphrases(benchmark_id, pair_id=pair_id)
    }


def _next_idx(store: Any, benchmark_id: str, pair_id: str, role: str, generator: str) -> int:
    existing = store.paraphrases(benchmark_id, pair_id=pair_id, role=role, generator=generator)
    return max((p.idx for p in existing), default=-1) + 1


def _pair_report(pair: Pair, accepted: list[str], rejected: list[Rejection]) -> dict[str, Any]:
    return {
        "pair_id": pair.pair_id,
        "original": pair.hidden.question,
        "accepted": list(accepted),
        "rejected": [{"text": r.text, "reason": r.reason} for r in rejected],
    }


def _emit(payload: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(payload, ensure_ascii=False))
        return
    for item in payload["pairs"]:
        print(terminal_safe(f"{item['pair_id']}: {item['original']}"))
        for text in item["accepted"]:
            print(terminal_safe(f"  + {text}"))
        for rej in item["rejected"]:
            print(terminal_safe(f"  - {rej['text']}  [{rej['reason']}]"))
