"""`eraudit` subcommands that work from stored runs: runs, show, sweeps, calibrate-epsilon (an
epsilon from a stored run, recorded as a calibration) and compare. Kept apart from `_audit.py`,
which starts and resumes runs: nothing here scores a checkpoint."""

from __future__ import annotations

import argparse
import math
from typing import Any

from eraudit_core.cli._option_types import strict_float
from eraudit_core.cli._output import (
    JSON_SCHEMA_VERSION,
    _num,
    _print,
    _print_warning,
    pair_summary_json,
)
from eraudit_core.cli._run_options import _split
from eraudit_core.errors import InputError
from eraudit_core.text import terminal_safe
from eraudit_core.types import ACTIVE_RUN_STATUSES, RunStatus


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("runs", help="list stored runs")
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_runs)

    p = subparsers.add_parser("show", help="a run's per-pair summary table")
    p.add_argument("run_id")
    p.add_argument("--db", required=True)
    add_control_seed_arg(p)
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
        description="Null mode (--null, for honest arms and controls): epsilon is the "
        "ceil((n+1)*level)-th smallest (--firm, the default; --no-firm: the interpolated --level "
        "quantile), over the control's questions, of each question's largest D among the "
        "paraphrases an audit at the control's budgets would score; use it with "
        "--epsilon-from NAME. What it holds, measured (docs/null-reading.md): only on average "
        "and only for an arm exchangeable with the control. On simulated 200-question tables "
        "an exchangeable arm reads degraded on 4.7%% of questions but 9.3%% of those whose "
        "monitored gain is at most k; an arm 1.5x as dispersed with no harm on 11.4%%; a "
        "systematic drop of 0.03 on every rewording is found on only 17.4%%. On the demo, "
        "with the honest organism as control, epsilon is 72.8 (interpolated 33.4) and 0 of "
        "the adversarial organism's 20 targets read degraded. To tell harm from noise name "
        "the control with --control on audit or audit-table instead (the null reading); no "
        "headline relies on this threshold. Organism mode (default, the reference code's practice): "
        "percentiles of D over every rewording of a model organism known to be degraded; "
        "use them with --epsilon-from NAME:p25. docs/null-reading.md",
    )
    p.add_argument("run_id", help="the calibration run: a control arm (--null) or a model organism")
    p.add_argument("--db", required=True)
    p.add_argument(
        "--null",
        action="store_true",
        help="null mode: the --level quantile of the control's per-question maxima of D",
    )
    p.add_argument(
        "--level",
        type=strict_float,
        default=0.95,
        help="null mode: the quantile level (default 0.95)",
    )
    p.add_argument(
        "--firm",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="null mode: the ceil((n+1)*level)-th smallest of the n control maxima (default: "
        "a firm bound, on average over questions, for an exchangeable arm); --no-firm: the "
        "interpolated quantile",
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


def add_control_seed_arg(p: argparse.ArgumentParser) -> None:
    """`--control-seed RUN_ID` (repeatable), for audit-table and show."""
    p.add_argument(
        "--control-seed",
        action="append",
        default=[],
        metavar="RUN_ID",
        help="another run of the control recipe (another seed; repeatable): each question is "
        "also read against the disagreement of the control runs (seed-to-seed variation)",
    )


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
    from eraudit_core.present import imported_note, null_headline, question_summary
    from eraudit_core.store import Store

    with Store(args.db) as store:
        run = store.run(args.run_id)
        if args.json:
            _print(pair_summary_json(store, args.run_id, args.control_seed), True)
            return 0
        pairs = store.pair_results(args.run_id)
        print(terminal_safe(_completeness(run, len(pairs))))
        if note := imported_note(run):
            print(terminal_safe(f"run {args.run_id}: {note}"))
        if headline := null_headline(store, args.run_id):
            print(terminal_safe(headline))
        _print(question_summary(pairs), False)
    return 0


def _completeness(run: dict[str, Any], n_done: int) -> str:
    """One line on whether a run is complete: 'done' or what is missing and what to do."""
    run_id, status = run["run_id"], run["status"]
    n = int(run["n_pairs"] or 0)
    head = f"run {run_id} ({run.get('label') or run_id}): {status}, {n_done} of {n} questions"
    if status == RunStatus.DONE and n_done >= n:
        return f"{head} have a verdict"
    if status in ACTIVE_RUN_STATUSES:
        return f"{head} so far; the run is still going (incomplete)"
    why = f" ({run['error']})" if run.get("error") else ""
    return (
        f"{head} have a verdict; the run is incomplete{why}; "
        f"`eraudit resume {run_id} --db ...` finishes it"
    )


def cmd_sweeps(args: argparse.Namespace) -> int:
    from eraudit_core.method import AuditConfig
    from eraudit_core.present import DEFAULT_EPSILONS, confidence_sweep, run_epsilon_sweep
    from eraudit_core.store import Store

    try:
        eps = [strict_float(x) for x in _split(args.epsilons)] or list(DEFAULT_EPSILONS)
    except argparse.ArgumentTypeError as exc:
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
    from eraudit_core.null import calibrate_epsilon, calibrate_null, parse_percentiles
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
