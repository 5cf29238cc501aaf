"""`eraudit` subcommands that put inputs in a store and run audits on them: import-benchmark,
audit-table (from a score table), audit (from a checkpoint pair) and resume. Runs are read back
by `_runs.py`, the demo loaded by `_demo.py`; what these print (the audit-table JSON and its
`JSON_SCHEMA_VERSION`) is `_output.py`, the run-configuration options `_run_options.py`. The
names those modules took from here are re-exported, so imports from this module keep working."""

from __future__ import annotations

import argparse
from typing import Any

from eraudit_core.cli._demo import cmd_demo
from eraudit_core.cli._interrupts import ctrl_c_cancels
from eraudit_core.cli._option_types import strict_int
from eraudit_core.cli._output import (
    JSON_SCHEMA_VERSION,
    _print,
    _print_progress,
    _print_warning,
    pair_summary_json,
)
from eraudit_core.cli._run_options import (
    _config,
    _config_args,
    _epsilon_source,
    _split,
    _wording_config,
)
from eraudit_core.cli._runs import (
    add_control_seed_arg,
    cmd_calibrate_epsilon,
    cmd_compare,
    cmd_runs,
    cmd_show,
    cmd_sweeps,
)
from eraudit_core.cli._wording import add_wording_args, spec_with_readout
from eraudit_core.errors import InputError

__all__ = [
    "JSON_SCHEMA_VERSION",
    "cmd_audit_models",
    "cmd_audit_table",
    "cmd_calibrate_epsilon",
    "cmd_compare",
    "cmd_demo",
    "cmd_import_benchmark",
    "cmd_resume",
    "cmd_runs",
    "cmd_show",
    "cmd_sweeps",
    "pair_summary_json",
    "register",
]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("import-benchmark", help="validate and store a benchmark file")
    p.add_argument("path", help="reference JSON (QuALITY-H/GPQA-H layout) or project JSONL")
    p.add_argument("--name", help="dataset name used in pair ids (default: from the file name)")
    p.add_argument("--db", required=True, help="DuckDB store file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_import_benchmark)

    p = subparsers.add_parser(
        "audit-table", help="audit precomputed probabilities (CSV/Parquet score table)"
    )
    p.add_argument("scores", help="table with pair_id, role, generator, idx, text, p_pre, p_post")
    _config_args(p, model_run=False)
    p.add_argument("--db", required=True)
    p.add_argument("--label", default="", help="a name for the run")
    add_control_seed_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_audit_table)

    p = subparsers.add_parser("audit", help="audit a checkpoint pair on stored paraphrases")
    p.add_argument("--db", required=True)
    p.add_argument("--benchmark", default="bundled", help="stored benchmark id, or 'bundled'")
    p.add_argument(
        "--pre",
        required=True,
        help="checkpoint spec, e.g. demo:base, or a served checkpoint "
        "http://HOST:8000/v1#MODEL;tokenizer=demo:base (docs/served.md)",
    )
    p.add_argument("--post", required=True, help="checkpoint spec, e.g. demo:adversarial")
    p.add_argument("--pairs", default="", help="comma-separated pair ids (default: all)")
    p.add_argument(
        "--limit", type=strict_int, default=None, help="audit only the first N pairs (N >= 1)"
    )
    _config_args(p, model_run=True)
    add_wording_args(p)
    p.add_argument("--label", default="")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_audit_models)

    p = subparsers.add_parser("resume", help="resume an interrupted or cancelled run")
    p.add_argument("run_id")
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_resume)


def cmd_import_benchmark(args: argparse.Namespace) -> int:
    from eraudit_core.store import Store, load_benchmark

    bench = load_benchmark(args.path, name=args.name)
    with Store(args.db) as store:
        bid = store.add_benchmark(bench)
    _print({"benchmark_id": bid, "n_pairs": len(bench.pairs), "layout": bench.layout}, args.json)
    return 0


def cmd_audit_table(args: argparse.Namespace) -> int:
    from eraudit_core.null import AuditedContent
    from eraudit_core.runs import (
        audit_table_run,
        check_control,
        default_run_label,
        items_from_table,
        new_run_id,
        read_score_table,
        run_provenance_extras,
        with_control_origin,
    )
    from eraudit_core.store import Store

    df = read_score_table(args.scores)
    items, test_gens = items_from_table(df, source=args.scores)
    run_id = new_run_id()
    with Store(args.db) as store, ctrl_c_cancels() as ctrl_c:
        settings = _null_settings(args)
        audited = AuditedContent(table=df, settings=settings)
        source = _epsilon_source(store, args, audited)
        if args.control:
            check_control(store, args.control, audited)
        extra = with_control_origin(
            store, run_provenance_extras(source, args.control, args.noise_floor)
        )
        if args.control_seed:
            if not args.control:
                raise InputError("--control-seed needs --control (the control run it is a seed of)")
            extra["control_seeds"] = list(args.control_seed)
        eps = {} if source is None else {"epsilon": source.value}
        config = _config(args, test_generators=test_gens, **eps)
        audit_table_run(
            store,
            args.scores,
            config,
            run_id=run_id,
            label=args.label or default_run_label(f"table {args.scores}", config, run_id),
            provenance=extra,
            should_cancel=ctrl_c.is_set,
        )
        _print(pair_summary_json(store, run_id), args.json)
    return 0


def cmd_audit_models(args: argparse.Namespace) -> int:
    from eraudit_core.demo import ensure_demo_inputs
    from eraudit_core.null import audited_model
    from eraudit_core.runs import (
        FULL_BUDGETS_NOTE,
        RunRequest,
        request_with_control,
        run_model_audit,
    )
    from eraudit_core.store import Store
    from eraudit_core.verifier import parse_spec

    # refused before anything is stored, the bundled inputs included
    parse_spec(args.pre)
    parse_spec(args.post)
    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be >= 1 (pairs to audit), got {args.limit}")
    config = _config(args, **_wording_config(args))
    with Store(args.db) as store, ctrl_c_cancels() as ctrl_c:
        pre = spec_with_readout(args.pre, args.readout)
        post = spec_with_readout(args.post, args.readout)
        draft = RunRequest(benchmark=args.benchmark, pre_spec=pre, post_spec=post, config=config)
        # refused before anything is stored, the bundled inputs included
        config = request_with_control(store, draft, args.control).config
        if args.control and config != draft.config and not args.json:
            _print_warning(FULL_BUDGETS_NOTE)
        benchmark = ensure_demo_inputs(store) if args.benchmark == "bundled" else args.benchmark
        pair_ids = _split(args.pairs)
        settings = {**_null_settings(args), "test_generators": list(config.test_generators)}
        request = RunRequest(
            benchmark=benchmark,
            pre_spec=pre,
            post_spec=post,
            config=config,
            pair_ids=tuple(pair_ids),
            limit=args.limit,
            label=args.label,
            control=args.control,
            epsilon=_epsilon_source(store, args, audited_model(store, post, pre, settings)),
            noise_floor=args.noise_floor,
        )
        run_id = run_model_audit(
            store,
            request,
            progress=None if args.json else _print_progress,
            warn=_print_warning,
            should_cancel=ctrl_c.is_set,
        )
        _print(pair_summary_json(store, run_id), args.json)
    return 0


def _null_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The audit's settings a control (or a null calibration) must match."""
    from eraudit_core.method import null_threshold_fields

    return {name: getattr(args, name) for name in null_threshold_fields()}


def cmd_resume(args: argparse.Namespace) -> int:
    from eraudit_core.runs import resume_run
    from eraudit_core.store import Store

    with Store(args.db) as store, ctrl_c_cancels() as ctrl_c:
        resume_run(
            store,
            args.run_id,
            progress=None if args.json else _print_progress,
            should_cancel=ctrl_c.is_set,
        )
        _print(pair_summary_json(store, args.run_id), args.json)
    return 0
