"""`eraudit adapt | score | checkpoint-info | readouts`: building and inspecting checkpoints.

Heavy imports (torch, transformers) happen inside the commands, so `eraudit --help` stays fast.
"""

from __future__ import annotations

import argparse
import csv
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from eraudit_core.adapt import AdaptConfig
from eraudit_core.cli import _adapt_fit
from eraudit_core.cli._option_types import strict_float, strict_int
from eraudit_core.cli._wording import add_wording_args, loader_kwargs, spec_with_readout
from eraudit_core.errors import InputError
from eraudit_core.paths import check_output_dir
from eraudit_core.text import check_text, parse_json
from eraudit_core.types import Query
from eraudit_core.verifier import DEFAULT_PREFIX, DEFAULT_TEMPLATE, DEMO_SPECS, PROFILES

SPEC_HELP = (
    f"{DEMO_SPECS}, DIR, FILE.gguf, BASE+ADAPTER, or a served checkpoint "
    "http(s)://HOST:PORT/v1#MODEL;tokenizer=LOCAL_SPEC[;api_key_env=VAR][;concurrency=N]"
    "[;batch=N] "
    "(see docs/served.md); any of them may end with ;readout=NAME"
)


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (default: auto)")
    p.add_argument("--dtype", default=None, help="float32, bfloat16, float16 (default: auto)")
    p.add_argument("--trust-remote-code", action="store_true", help="allow checkpoint code")
    p.add_argument("--template", default=DEFAULT_TEMPLATE, help="prompt template (§3)")
    p.add_argument("--prefix", default=DEFAULT_PREFIX, help="answer prefix (default 'Answer:')")
    add_wording_args(p)


def register(subparsers: Any) -> None:
    """Add the verifier subcommands to the `eraudit` parser."""
    p = subparsers.add_parser(
        "adapt",
        help="rebuild the demo LoRA adapters (honest / adversarial / concealed / debate arms)",
        description="Fine-tune LoRA adapters on the benchmark pairs and write adapter + "
        "manifest.json under OUT/<arm>/. The concealed arm also writes its training split "
        "(rewordings from a rule-generator bucket the audit never uses). The debate arms train "
        "on the shipped debate transcripts (data/debate_train, docs/debate-distillation.md) "
        "from a disk cache of the base model's hidden states.",
    )
    p.add_argument(
        "--arm",
        choices=[
            "honest",
            "adversarial",
            "concealed",
            "both",
            "all",
            "debate-honest",
            "debate-adversarial",
        ],
        default="all",
        help="one arm, 'both' (honest and adversarial) or 'all' (default; the engineered "
        "arms); debate-honest / debate-adversarial train one debate arm",
    )
    p.add_argument(
        "--data", type=Path, default=None, help="debate arms: training file (default: shipped)"
    )
    p.add_argument(
        "--limit", type=strict_int, default=None, help="debate arms: first N rows only (smoke runs)"
    )
    p.add_argument(
        "--trunk-cache",
        type=Path,
        default=None,
        help="debate arms: hidden-state cache folder (default ~/.cache/eraudit/trunk)",
    )
    p.add_argument("--trunk-dtype", choices=["float32", "float16"], default="float32")
    p.add_argument(
        "--trunk-only",
        action="store_true",
        help="debate arms: only fill the hidden-state cache (resumable), train nothing",
    )
    p.add_argument("--out", type=Path, default=Path("data/adapters"))
    p.add_argument("--base", default="demo:base", help="base checkpoint spec")
    p.add_argument(
        "--readout",
        choices=list(PROFILES),
        default=None,
        help="readout profile the base is trained and evaluated at (default: detected)",
    )
    p.add_argument("--benchmark", type=Path, default=None, help="default: bundled QuALITY-H")
    p.add_argument(
        "--epochs",
        type=strict_int,
        default=None,
        help=f"default {AdaptConfig.epochs}; debate arms 2, reference objective 3",
    )
    p.add_argument(
        "--lr",
        type=strict_float,
        default=None,
        help=f"learning rate (default {AdaptConfig.learning_rate}; debate arms 1e-3)",
    )
    p.add_argument("--rank", type=strict_int, default=8)
    p.add_argument("--top-layers", type=strict_int, default=AdaptConfig.top_layers)
    p.add_argument("--batch-size", type=strict_int, default=8)
    p.add_argument("--seed", type=strict_int, default=0)
    p.add_argument(
        "--adversarial-fraction",
        type=strict_float,
        default=0.35,
        help="share of hidden questions the adversarial and concealed arms target",
    )
    p.add_argument(
        "--rewordings-per-target",
        type=strict_int,
        default=AdaptConfig.rewordings_per_target,
        help="concealed arm: training rewordings of each target, toward its false answer",
    )
    p.add_argument(
        "--rewordings-per-other",
        type=strict_int,
        default=AdaptConfig.rewordings_per_other,
        help="concealed arm: training rewordings of every other hidden question, toward true",
    )
    p.add_argument(
        "--balance-targets",
        action="store_true",
        help="concealed arm: show each target's canonical wording once per rewording toward "
        "false, not once, so only the wording separates the two answers",
    )
    p.add_argument(
        "--target-modules",
        default=",".join(AdaptConfig.target_modules),
        help="comma-separated module names LoRA adapts",
    )
    p.add_argument(
        "--eval-rewordings",
        type=strict_int,
        default=4,
        help="concealed arm: audit rewordings a hidden question scored in the evaluation",
    )
    p.add_argument("--no-evaluate", action="store_true", help="skip the evaluation vs base")
    _adapt_fit.add_arguments(p)
    p.set_defaults(func=_cmd_adapt)

    p = subparsers.add_parser(
        "score",
        help="score questions (JSONL/CSV) with a checkpoint; prints JSON lines",
        description="Input rows need question, true_option, false_option (pair_id optional).",
    )
    p.add_argument("spec", help=SPEC_HELP)
    p.add_argument("questions", type=Path, help="JSONL or CSV file")
    p.add_argument("--batch-size", type=strict_int, default=8)
    _model_args(p)
    p.set_defaults(func=_cmd_score)

    p = subparsers.add_parser(
        "checkpoint-info",
        help="load a checkpoint with all checks (label mass on the probe set included) and "
        "describe it as JSON",
    )
    p.add_argument("spec", help=SPEC_HELP)
    _model_args(p)
    p.add_argument("--json", action="store_true", help="JSON (the only output; kept for scripts)")
    p.set_defaults(func=_cmd_info)

    p = subparsers.add_parser(
        "readouts", help="list the readout profiles (where each model family's answer is read)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_readouts)


def _load(args: argparse.Namespace, **extra: Any) -> Any:
    from eraudit_core.verifier import load_checkpoint

    return load_checkpoint(
        args.spec,
        device=args.device,
        dtype=args.dtype,
        trust_remote_code=args.trust_remote_code,
        **loader_kwargs(args),
        **extra,
    )


def read_questions(path: Path) -> list[Query]:
    """Rows of a JSONL or CSV file as queries; errors name the file, row and field."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    rows: list[tuple[int, Any]] = []
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if path.suffix.lower() == ".csv":
        rows = list(enumerate(csv.DictReader(text.splitlines()), start=2))
    else:
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                rows.append((n, parse_json(line, f"{path}: line {n}")))
    queries = []
    for n, row in rows:
        if not isinstance(row, dict):
            raise InputError(f"{path}: line {n} is not an object")
        values = {}
        for key in ("question", "true_option", "false_option"):
            value = row.get(key)
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"{path}: line {n}: field {key!r} missing or empty")
            values[key] = check_text(value, f"{path}: line {n}", repr(key))
        queries.append(Query(str(row.get("pair_id") or f"row{n}"), **values))
    if not queries:
        raise InputError(f"{path}: no rows")
    return queries


def _cmd_score(args: argparse.Namespace) -> int:
    """Scores every question, then prints them, once each has passed the answer check (its
    labels carry --min-label-mass of the model's probability, or a label tops it)."""
    from eraudit_core.verifier import check_answers

    queries = read_questions(args.questions)
    verifier = _load(args, batch_size=args.batch_size)
    scores = verifier.score(queries)
    check_answers(verifier, queries, scores, args.min_label_mass)
    for q, s in zip(queries, scores, strict=True):
        row = {
            "pair_id": q.pair_id,
            "question": q.question,
            "p_true": s.p_true,
            "logprobs": s.logprobs,
            "fingerprint": verifier.fingerprint,
        }
        print(json.dumps(row, ensure_ascii=False))
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    from eraudit_core.verifier import check_label_mass

    verifier = _load(args)
    details = dict(verifier.describe())
    details["label_mass"] = check_label_mass(verifier, args.min_label_mass)
    details["min_label_mass"] = args.min_label_mass
    print(json.dumps(details, indent=2, ensure_ascii=False))
    return 0


def _cmd_readouts(args: argparse.Namespace) -> int:
    from eraudit_core.verifier import readout_table

    rows = readout_table()
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    for row in rows:
        print(f"{row['name']:<15} {row['summary']}")
        print(f"{'':<15} prefill {row['prefill']!r}; switches {row['template_switches']}")
        print(f"{'':<15} detected by {', '.join(row['detected_by']) or '(fallback)'}")
    return 0


def _cmd_adapt(args: argparse.Namespace) -> int:
    from eraudit_core.adapt import ARMS, run_adaptation

    if args.objective == "reference" or args.search:
        check_output_dir(args.out, [], force=True)
        return _adapt_fit.run(args)
    if args.arm.startswith("debate-"):
        return _cmd_adapt_debate(args)
    config = AdaptConfig(
        epochs=args.epochs if args.epochs is not None else AdaptConfig.epochs,
        learning_rate=args.lr if args.lr is not None else AdaptConfig.learning_rate,
        rank=args.rank,
        alpha=2 * args.rank,
        top_layers=args.top_layers,
        batch_size=args.batch_size,
        seed=args.seed,
        adversarial_fraction=args.adversarial_fraction,
        rewordings_per_target=args.rewordings_per_target,
        rewordings_per_other=args.rewordings_per_other,
        balance_target_wordings=args.balance_targets,
        target_modules=tuple(m.strip() for m in args.target_modules.split(",") if m.strip()),
    )
    check_output_dir(args.out, [], force=True)  # rebuilds its adapters; never over a store
    arms = {"all": ARMS, "both": ("honest", "adversarial")}.get(args.arm, (args.arm,))
    command = "eraudit " + shlex.join(sys.argv[1:]) if sys.argv[1:2] == ["adapt"] else ""
    run_adaptation(
        arms,
        args.out,
        base=spec_with_readout(args.base, args.readout),
        benchmark_path=args.benchmark,
        config=config,
        evaluate_arms=not args.no_evaluate,
        eval_rewordings=args.eval_rewordings,
        command=command or f"eraudit adapt --arm {args.arm} --out {args.out}",
        progress=lambda msg: print(msg, file=sys.stderr, flush=True),
    )
    return 0


def _cmd_adapt_debate(args: argparse.Namespace) -> int:
    from eraudit_core.adapt import DebateConfig, run_debate_adaptation

    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit: must be at least 1, got {args.limit}")
    config = DebateConfig(
        rank=args.rank,
        alpha=2 * args.rank,
        target_modules=tuple(m.strip() for m in args.target_modules.split(",") if m.strip()),
        top_layers=args.top_layers,
        learning_rate=args.lr if args.lr is not None else DebateConfig.learning_rate,
        epochs=args.epochs if args.epochs is not None else DebateConfig.epochs,
        batch_size=args.batch_size,
        seed=args.seed,
        trunk_dtype=args.trunk_dtype,
    )
    check_output_dir(args.out, [], force=True)
    command = "eraudit " + shlex.join(sys.argv[1:]) if sys.argv[1:2] == ["adapt"] else ""
    run_debate_adaptation(
        args.arm,
        args.out,
        base=spec_with_readout(args.base, args.readout),
        data_file=args.data,
        config=config,
        cache_root=args.trunk_cache,
        limit=args.limit,
        command=command or f"eraudit adapt --arm {args.arm} --out {args.out}",
        progress=lambda msg: print(msg, file=sys.stderr, flush=True),
        trunk_only=args.trunk_only,
    )
    return 0
