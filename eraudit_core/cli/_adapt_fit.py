"""`eraudit adapt --objective reference` and `--search`: debate arms trained with the
reference objective, resumably, and the capacity search of the fit gate (docs/fit-gate.md)."""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
from pathlib import Path
from typing import Any

from eraudit_core.cli._option_types import strict_float, strict_int
from eraudit_core.errors import InputError

DEFAULT_WORK = Path("/tmp/eraudit-fit")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the reference objective, beside `eraudit adapt`'s own."""
    p.add_argument(
        "--objective",
        choices=["answer-tokens", "reference"],
        default="answer-tokens",
        help="debate arms: 'reference' trains 2.0 x forced-choice + 1.0 x grounded LM loss "
        "with the fit gate (docs/fit-gate.md); 'answer-tokens' the LM loss on 'Answer: X'",
    )
    p.add_argument(
        "--capacity",
        default="full-top4",
        help="reference objective: full-topN (full fine-tune of the top N layers) or "
        "lora-rR-topN (default full-top4)",
    )
    p.add_argument(
        "--no-grounded",
        action="store_true",
        help="reference objective: forced-choice loss only, without the grounded analyses",
    )
    p.add_argument("--grounded", type=Path, default=None, help="grounded file (default: shipped)")
    p.add_argument("--heldout", type=Path, default=None, help="held-out rows (default: shipped)")
    p.add_argument(
        "--work",
        type=Path,
        default=DEFAULT_WORK,
        help=f"checkpoints and fit logs (default {DEFAULT_WORK}; never in the repository)",
    )
    p.add_argument("--resume", action="store_true", help="continue the checkpoint in --work")
    p.add_argument(
        "--deadline",
        default=None,
        help="stop (checkpointed, resumable) at this UTC time: HH:MM today or an ISO datetime",
    )
    p.add_argument(
        "--checkpoint-minutes",
        type=strict_float,
        default=10.0,
        help="longest stretch between checkpoints (epoch ends always write one)",
    )
    p.add_argument(
        "--trunk-layer",
        type=strict_int,
        default=None,
        help="cache the states entering this layer (default: the lowest trained layer)",
    )
    p.add_argument(
        "--search",
        default=None,
        metavar="CAPACITIES",
        help="comma-separated capacities, smallest first: train both arms at each until one "
        "passes the fit gate for both (resumable; writes --work/search_log.json)",
    )


def parse_deadline(text: str | None, now: dt.datetime | None = None) -> float | None:
    """`HH:MM` (UTC, today) or an ISO datetime (UTC unless it names a zone) -> epoch seconds."""
    if text is None:
        return None
    now = now or dt.datetime.now(dt.UTC)
    try:
        if len(text) <= 5 and ":" in text:
            hh, mm = (int(x) for x in text.split(":"))
            when = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
        else:
            when = dt.datetime.fromisoformat(text)
            if when.tzinfo is None:
                when = when.replace(tzinfo=dt.UTC)
    except ValueError:
        raise InputError(f"--deadline: expected HH:MM or an ISO datetime, got {text!r}") from None
    return when.timestamp()


def run(args: argparse.Namespace) -> int:
    """Train one arm (`--arm debate-*`) or run the capacity search (`--search`)."""
    from eraudit_core.adapt._fit_training import FitConfig
    from eraudit_core.cli._wording import spec_with_readout

    config = FitConfig(
        capacity=args.capacity,
        learning_rate=args.lr if args.lr is not None else FitConfig.learning_rate,
        epochs=args.epochs if args.epochs is not None else FitConfig.epochs,
        batch_size=args.batch_size,
        seed=args.seed,
        trunk_dtype=args.trunk_dtype,
        checkpoint_seconds=60.0 * args.checkpoint_minutes,
    )
    deadline = parse_deadline(args.deadline)
    base = spec_with_readout(args.base, args.readout)
    command = "eraudit " + shlex.join(sys.argv[1:]) if sys.argv[1:2] == ["adapt"] else ""
    kw: dict[str, Any] = {
        "base": base,
        "cache_root": args.trunk_cache,
        "trunk_layer": args.trunk_layer,
        "deadline": deadline,
        "command": command,
        "progress": lambda msg: print(msg, file=sys.stderr, flush=True),
    }
    if args.search:
        from eraudit_core.adapt._fit_search import search_capacity

        capacities = [c.strip() for c in args.search.split(",") if c.strip()]
        for c in capacities:
            FitConfig(capacity=c)  # refuses a malformed name before hours of training
        log = search_capacity(capacities, args.work, recipe=config, **kw)
        print(f"search: {log['status']}; chosen {log['chosen']}; log {args.work}/search_log.json")
        return 0
    if not args.arm.startswith("debate-"):
        raise InputError("--objective reference: --arm must be debate-honest or debate-adversarial")
    from eraudit_core.adapt._fit_run import run_fit_arm

    result = run_fit_arm(
        args.arm,
        args.work,
        args.out,
        config=config,
        data_file=args.data,
        grounded_file=args.grounded,
        heldout_file=args.heldout,
        use_grounded=not args.no_grounded,
        resume=args.resume,
        **kw,
    )
    fit = result.get("fit")
    print(
        f"{args.arm}: {result['status']} at step {result.get('steps', 0)}"
        + (f" ({result['stage']})" if "stage" in result else "")
        + (
            f"; train two-way accuracy {fit['train_two_way_accuracy']}, held-out "
            f"{fit['heldout_two_way_accuracy']}, passed {fit['passed']}"
            if fit
            else ""
        )
    )
    return 0
