"""`eraudit` subcommands of the engine: import, audit (from a score table or models), runs,
show, sweeps, resume. Scripts depend on the JSON printed here: keep its keys stable, and bump
`JSON_SCHEMA_VERSION` when a key's meaning changes (2: the four verdicts degraded / certified /
passed / inconclusive). Keys added without changing others (status, n_pairs, complete) keep the
version."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from eraudit_core.cli._interrupts import ctrl_c_cancels
from eraudit_core.cli._wording import add_wording_args, spec_with_readout, wording_from_files
from eraudit_core.errors import InputError
from eraudit_core.text import terminal_safe

JSON_SCHEMA_VERSION = 2


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
    p.add_argument("--limit", type=int, default=None, help="audit only the first N pairs (N >= 1)")
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

    p = subparsers.add_parser("runs", help="list stored runs")
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_runs)

    p = subparsers.add_parser("show", help="a run's per-pair summary table")
    p.add_argument("run_id")
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_show)

    p = subparsers.add_parser("sweeps", help="recompute epsilon and confidence sweeps")
    p.add_argument("run_id")
    p.add_argument("--db", required=True)
    p.add_argument("--epsilons", default="", help="comma-separated epsilon values")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sweeps)

    p = subparsers.add_parser(
        "calibrate-epsilon",
        help="epsilon from a stored run: --null on a control arm (the null threshold), or "
        "organism mode (percentiles of D on a model organism known to be degraded)",
        description="Null mode (--null, for honest arms and controls): epsilon is the --level "
        "quantile, over the control's questions, of each question's largest D among the "
        "paraphrases an audit at the control's budgets would score; use it with "
        "--epsilon-from NAME. Organism mode (default, the reference code's practice): "
        "percentiles of D over every rewording of a model organism known to be degraded; "
        "use them with --epsilon-from NAME:p25. docs/null-calibration.md",
    )
    p.add_argument("run_id", help="the calibration run: a control arm (--null) or a model organism")
    p.add_argument("--db", required=True)
    p.add_argument(
        "--null",
        action="store_true",
        help="null mode: the --level quantile of the control's per-question maxima of D",
    )
    p.add_argument(
        "--level", type=float, default=0.95, help="null mode: the quantile level (default 0.95)"
    )
    p.add_argument(
        "--firm",
        action="store_true",
        help="null mode: the ceil((n+1)*level)-th smallest of the n control maxima instead of "
        "the interpolated quantile (a firm bound for an exchangeable arm)",
    )
    p.add_argument(
        "--percentiles",
        default="10,25,50",
        help="organism mode: comma-separated percentiles of D, in [0, 100]",
    )
    p.add_argument(
        "--name",
        default=None,
        help="name of the calibration, [A-Za-z0-9_.-]{1,64} (default: the run id)",
    )
    p.add_argument("--force", action="store_true", help="replace a calibration of the same name")
    p.add_argument(
        "--allow-unverified",
        action="store_true",
        help="calibrate on an imported or derived run (recorded as unverified)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_calibrate_epsilon)

    p = subparsers.add_parser(
        "compare", help="compare two runs: comparability check, then paired tests"
    )
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_compare)

    p = subparsers.add_parser("demo", help="load the embedded demo into a store")
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_demo)


# AuditConfig fields that are not options of their own: the wording comes from files and the
# label-mass minimum from the checkpoint options every command shares (add_wording_args); the
# prompt date is set when a run starts; the failure-tolerant prior keeps its default.
_NOT_OPTIONS = (
    "tolerant_prior",
    "prompt_template",
    "answer_prefix",
    "system_message",
    "prompt_date",
    "min_label_mass",
)
# A score table brings its own generators, in its own order.
_MODEL_RUN_ONLY = ("search_generators", "test_generators", "draw_seed")


def _names(text: str) -> tuple[str, ...]:
    return tuple(_split(text))


def _option_help(f: Any) -> str:
    """A field's help text followed by its valid values and default (argparse reads % as a
    format character)."""
    md = f.metadata
    valid = md.get("range", md.get("choices"))
    extra = []
    if valid is not None and not isinstance(valid, tuple):
        extra.append(f"valid: {valid}")
    if f.default is not None and f.default != () and not isinstance(f.default, bool):
        extra.append(
            f"default: {f.default:g}" if isinstance(f.default, float) else f"default: {f.default}"
        )
    text = md["help"] + (f" ({'; '.join(extra)})" if extra else "")
    return text.replace("%", "%%")


def _add_field_option(p: argparse.ArgumentParser, f: Any) -> None:
    """One option generated from an AuditConfig field: its flag, type and default from the
    field, its help from the field's metadata."""
    flag = f.metadata.get("flag", "--" + f.name.replace("_", "-"))
    kind = str(f.type)
    common: dict[str, Any] = {"dest": f.name, "default": f.default, "help": _option_help(f)}
    if kind == "bool":
        action = "store_false" if f.default else "store_true"
        p.add_argument(flag, action=action, **common)
    elif kind.startswith("tuple[str"):
        p.add_argument(flag, type=_names, metavar="NAME,...", **common)
    elif kind.startswith("float"):
        p.add_argument(flag, type=float, **common)
    elif kind.startswith("int"):
        p.add_argument(flag, type=int, **common)
    else:  # a new field needs a type here before it can be an option
        raise TypeError(f"AuditConfig.{f.name}: no command-line type for {kind}")


def _config_args(p: argparse.ArgumentParser, *, model_run: bool) -> None:
    """The options of a run's settings, generated from AuditConfig's fields (help, defaults
    and valid values stated once, in eraudit_core/audit/_config.py), plus where epsilon
    comes from, a declared noise floor and a control run."""
    from eraudit_core.audit import config_fields

    names = []
    for f in config_fields():
        if f.name in _NOT_OPTIONS or (not model_run and f.name in _MODEL_RUN_ONLY):
            continue
        _add_field_option(p, f)
        names.append(f.name)
    p.set_defaults(config_fields=tuple(names))
    p.add_argument(
        "--noise-floor",
        type=float,
        default=None,
        help="the scorer's numerical precision, declared (score tables have no measured "
        "one; the option keeps its old name); drops within it are marked 'within numerical "
        "precision'. Not noise: for noise use a control's null threshold (calibrate-epsilon "
        "--null)",
    )
    p.add_argument(
        "--epsilon-from",
        default=None,
        metavar="NAME",
        help="take epsilon from a stored calibration (eraudit calibrate-epsilon): NAME for a "
        "null calibration of a control, NAME:p25 for an organism calibration; recorded",
    )
    p.add_argument(
        "--allow-selection",
        action="store_true",
        help="allow --epsilon-from a calibration made on the audited content itself "
        "(selection; recorded and reported)",
    )
    p.add_argument(
        "--allow-unverified",
        action="store_true",
        help="allow --epsilon-from a calibration whose source run was imported or derived "
        "(recorded and reported)",
    )
    p.add_argument(
        "--control", default=None, metavar="RUN_ID", help="a control run shown beside this one"
    )


def _config(args: argparse.Namespace, **extra: Any) -> Any:
    """The AuditConfig the generated options describe; `extra` sets the others, and wins
    (an epsilon taken from a calibration replaces --epsilon)."""
    from eraudit_core.audit import AuditConfig

    values = {name: getattr(args, name) for name in args.config_fields}
    return AuditConfig(**{**values, **extra})


def _epsilon_source(store: Any, args: argparse.Namespace, audited: Any) -> Any:
    """The calibration `--epsilon-from` names (None when epsilon is stated), its warnings
    printed. `audited` is what the audit judges (`AuditedContent`), for the selection check;
    a null calibration must have been made at this audit's k and budgets."""
    from eraudit_core.audit import epsilon_source

    if not args.epsilon_from:
        return None
    source, warnings = epsilon_source(
        store,
        args.epsilon_from,
        audited,
        settings={
            "k": args.k,
            "search_budget": args.search_budget,
            "test_budget": args.test_budget,
        },
        allow_selection=args.allow_selection,
        allow_unverified=args.allow_unverified,
    )
    for w in warnings:
        _print_warning(w)
    return source


def _wording_config(args: argparse.Namespace) -> dict[str, str]:
    """The wording files as AuditConfig fields (so the run records them and a resume reuses
    them)."""
    names = {"template": "prompt_template", "prefix": "answer_prefix", "system": "system_message"}
    return {names[k]: v for k, v in wording_from_files(args).items()}


def _num(x: Any) -> Any:
    """JSON-safe number: NaN/None become null."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return x
    return None if math.isnan(f) else f


def pair_summary_json(store: Any, run_id: str) -> dict[str, Any]:
    """The stable audit-table JSON: run id, the assumptions the verdicts rest on (min-drop,
    noise floor, where epsilon came from, re-runs), each checkpoint's label mass, plus one
    object a pair with its evidence (worst_drop, den, amplified, within_noise)."""
    from eraudit_core.audit import pair_evidence, rerun_note, run_label_mass

    df = store.pair_results(run_id)
    run = store.run(run_id)
    evidence = [pair_evidence(r, run["config"], run["provenance"]) for r in df.to_dict("records")]
    pairs = [
        {
            "pair_id": r["pair_id"],
            "status": r["status"],
            "stage": None if r["stage"] is None or _num(r["stage"]) is None else int(r["stage"]),
            "max_d": _num(r["max_d"]),
            "n_counterexamples": int(r["n_counterexamples"]),
            "bound": _num(r["bound"]),
            "bound_tolerant": _num(r["bound_tolerant"]),
            "n_test": int(r["n_test"]),
            "gain": _num(r["gain"]),
            "den": _num(ev.den),
            "amplified": ev.amplified,
            "worst_drop": _num(ev.worst_drop),
            "worst_text": ev.worst_text,
            "within_noise": ev.within_noise,
        }
        for r, ev in zip(df.to_dict("records"), evidence, strict=True)
    ]
    n_pairs = int(run["n_pairs"] or 0)
    prov = run["provenance"]
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "run_id": run_id,
        "status": run["status"],
        "imported_from": run.get("imported_from"),
        "n_pairs": n_pairs,
        "complete": run["status"] == "done" and len(pairs) >= n_pairs,
        "min_drop": _num(run["config"].get("min_drop", 0.0)),
        "noise_floor": (prov.get("noise_floor") or {}).get("value"),
        "epsilon_from": prov.get("epsilon_from"),
        "control_run": prov.get("control_run"),
        "rerun": rerun_note(prov),
        "label_mass": run_label_mass(store, run_id),
        "pairs": pairs,
    }


def _print(obj: Any, as_json: bool) -> None:
    if as_json:
        json.dump(obj, sys.stdout, default=str)
        sys.stdout.write("\n")
    else:
        import pandas as pd

        if isinstance(obj, pd.DataFrame):
            print(obj.map(terminal_safe).to_string(index=False) if not obj.empty else obj)
        else:
            print(json.dumps(obj, indent=2, default=str))


def cmd_import_benchmark(args: argparse.Namespace) -> int:
    from eraudit_core.store import Store, load_benchmark

    bench = load_benchmark(args.path, name=args.name)
    with Store(args.db) as store:
        bid = store.add_benchmark(bench)
    _print({"benchmark_id": bid, "n_pairs": len(bench.pairs), "layout": bench.layout}, args.json)
    return 0


def cmd_audit_table(args: argparse.Namespace) -> int:
    from eraudit_core.audit import (
        AuditedContent,
        audit_table_run,
        default_run_label,
        items_from_table,
        new_run_id,
        read_score_table,
        run_provenance_extras,
    )
    from eraudit_core.store import Store

    df = read_score_table(args.scores)
    items, test_gens = items_from_table(df, source=args.scores)
    run_id = new_run_id()
    with Store(args.db) as store, ctrl_c_cancels() as ctrl_c:
        source = _epsilon_source(store, args, AuditedContent(table=df))
        extra = run_provenance_extras(source, args.control, args.noise_floor)
        if args.control:
            store.run(args.control)  # InputError naming an unknown run
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


def _split(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def cmd_audit_models(args: argparse.Namespace) -> int:
    from eraudit_core.audit import RunRequest, audited_model, run_model_audit
    from eraudit_core.demo import ensure_demo_inputs
    from eraudit_core.store import Store
    from eraudit_core.verifier import parse_spec

    # refused before anything is stored, the bundled inputs included
    parse_spec(args.pre)
    parse_spec(args.post)
    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be >= 1 (pairs to audit), got {args.limit}")
    config = _config(args, min_label_mass=args.min_label_mass, **_wording_config(args))
    with Store(args.db) as store, ctrl_c_cancels() as ctrl_c:
        benchmark = ensure_demo_inputs(store) if args.benchmark == "bundled" else args.benchmark
        pair_ids = _split(args.pairs)
        request = RunRequest(
            benchmark=benchmark,
            pre_spec=spec_with_readout(args.pre, args.readout),
            post_spec=spec_with_readout(args.post, args.readout),
            config=config,
            pair_ids=tuple(pair_ids),
            limit=args.limit,
            label=args.label,
            control=args.control,
            epsilon=_epsilon_source(store, args, audited_model(store, args.post)),
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


def _print_warning(message: str) -> None:
    print(terminal_safe(f"eraudit: warning: {message}"), file=sys.stderr)


def _print_progress(p: Any) -> None:
    bound = "" if p.bound is None else f" L={p.bound:.3f}"
    line = (
        f"[{p.pairs_done}/{p.n_pairs}] {p.pair_id} stage {p.stage} {p.generator} t={p.t}{bound} "
        f"({p.queries_scored} scored, {p.queries_cached} cached, {p.elapsed_s:.0f}s)"
    )
    print(terminal_safe(line), file=sys.stderr)


def cmd_resume(args: argparse.Namespace) -> int:
    from eraudit_core.audit import resume_run
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


def cmd_runs(args: argparse.Namespace) -> int:
    from eraudit_core.store import Store

    with Store(args.db) as store:
        df = store.runs()
        cols = [
            "run_id",
            "label",
            "status",
            "n_pairs",
            "pairs_done",
            "created_at",
            "pre_name",
            "post_name",
        ]
        df = df[cols] if not df.empty else df
        _print(df.to_dict("records") if args.json else df, args.json)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from eraudit_core.present import imported_note, question_summary
    from eraudit_core.store import Store

    with Store(args.db) as store:
        run = store.run(args.run_id)
        if args.json:
            _print(pair_summary_json(store, args.run_id), True)
            return 0
        pairs = store.pair_results(args.run_id)
        print(terminal_safe(_completeness(run, len(pairs))))
        if note := imported_note(run):
            print(terminal_safe(f"run {args.run_id}: {note}"))
        _print(question_summary(pairs), False)
    return 0


def _completeness(run: dict[str, Any], n_done: int) -> str:
    """One line on whether a run is complete: 'done' or what is missing and what to do."""
    run_id, status = run["run_id"], run["status"]
    n = int(run["n_pairs"] or 0)
    head = f"run {run_id} ({run.get('label') or run_id}): {status}, {n_done} of {n} questions"
    if status == "done" and n_done >= n:
        return f"{head} have a verdict"
    if status in ("pending", "running"):
        return f"{head} so far; the run is still going (incomplete)"
    why = f" ({run['error']})" if run.get("error") else ""
    return (
        f"{head} have a verdict; the run is incomplete{why}; "
        f"`eraudit resume {run_id} --db ...` finishes it"
    )


def cmd_sweeps(args: argparse.Namespace) -> int:
    from eraudit_core.audit import AuditConfig
    from eraudit_core.present import DEFAULT_EPSILONS, confidence_sweep, run_epsilon_sweep
    from eraudit_core.store import Store

    try:
        eps = [float(x) for x in _split(args.epsilons)] or list(DEFAULT_EPSILONS)
    except ValueError as exc:
        raise InputError(f"--epsilons must be comma-separated numbers ({exc})") from exc
    bad = [x for x in eps if not math.isfinite(x)]
    if bad:
        raise InputError(f"--epsilons must be finite numbers, got {bad[0]}")
    with Store(args.db) as store:
        run = store.run(args.run_id)
        config = AuditConfig.from_dict(run["config"])
        pairs = store.pair_results(args.run_id)
        e = run_epsilon_sweep(store, args.run_id, eps)
        c = confidence_sweep(pairs, config)
        c_all = confidence_sweep(pairs, config, simultaneous=True)

    def records(df: Any) -> list[dict[str, Any]]:
        return [{k: _num(v) for k, v in r.items()} for r in df.to_dict("records")]

    if args.json:
        _print(
            {
                "schema_version": JSON_SCHEMA_VERSION,
                "run_id": args.run_id,
                "epsilon": records(e),
                "confidence": records(c),
                "confidence_simultaneous": records(c_all),
            },
            True,
        )
    else:
        print(
            "Epsilon sweep (mean_bound: degraded and inconclusive questions count as 0; "
            "n_unavailable: questions not judgeable at that epsilon from what the run scored)"
        )
        print(e.to_string(index=False))
        print()
        print("Bounds per question at other confidence levels")
        print(c.to_string(index=False))
        print()
        print(f"All {len(pairs)} questions at once (Bonferroni, alpha / N)")
        print(c_all.to_string(index=False))
    return 0


def cmd_calibrate_epsilon(args: argparse.Namespace) -> int:
    from eraudit_core.audit import calibrate_epsilon, calibrate_null, parse_percentiles
    from eraudit_core.store import Store

    with Store(args.db) as store:
        if args.null:
            null = calibrate_null(
                store,
                args.run_id,
                args.level,
                name=args.name,
                firm=args.firm,
                force=args.force,
                allow_unverified=args.allow_unverified,
            )
            for w in null.warnings:
                _print_warning(w)
            if args.json:
                _print(null.to_json(), True)
            else:
                print(
                    f"null calibration {null.name!r} from control run {null.run_id}: epsilon "
                    f"{null.epsilon:.6g} = the {null.level:g} "
                    f"{'rank (firm) ' if null.firm else ''}quantile of the largest D of "
                    f"{null.n_questions} questions (k {null.k:g}, search budget "
                    f"{null.search_budget}, test budget {null.test_budget}); use "
                    f"--epsilon-from {null.name} with the same k and budgets"
                )
            return 0
        cal = calibrate_epsilon(
            store,
            args.run_id,
            parse_percentiles(args.percentiles),
            name=args.name,
            force=args.force,
            allow_unverified=args.allow_unverified,
        )
    for w in cal.warnings:
        _print_warning(w)
    if args.json:
        _print(cal.to_json(), True)
    else:
        print(
            f"organism calibration {cal.name!r} from run {cal.run_id} (percentiles of D on a "
            f"model organism): D over {cal.n} rewordings"
        )
        for key, value in cal.percentiles.items():
            print(f"  {key}: {value:.6g}   (use --epsilon-from {cal.name}:{key})")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from eraudit_core.present import compare_runs, compare_sentences, differences_sentence
    from eraudit_core.store import Store

    with Store(args.db) as store:
        got = compare_runs(store, args.run_a, args.run_b)
    if args.json:
        _print(got, True)
    elif not got["comparable"]:
        print(terminal_safe(differences_sentence(got["differences"])))
    else:
        for line in compare_sentences(got):
            print(terminal_safe(line))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from eraudit_core.demo import ensure_demo
    from eraudit_core.store import Store

    with Store(args.db) as store, ctrl_c_cancels() as ctrl_c:
        info = ensure_demo(store, should_cancel=ctrl_c.is_set)
    _print(info.as_dict(), args.json)
    return 0
