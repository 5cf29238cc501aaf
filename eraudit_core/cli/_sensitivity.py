"""`eraudit sensitivity` (the seed-003 analysis) and `eraudit sensitivity-import` (importers).

The JSON printed by `eraudit sensitivity TABLE --reference-condition NAME --json` is a stable
contract: {"reference_condition", "dimension" (the --dimension given, or "per-behaviour"),
"dimensions" ({behaviour: dimension used}), "behaviours": {name: {"lr_resource",
"lr_interaction", "contrasts", "per_pair", "cell_means", "agreement", ...}}, "dropped",
"warnings"}; see `SensitivityResult.to_json_dict`. `sensitivity-import --json` prints
`import_report`: counts, drops per reason with one example file each, notes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from eraudit_core.cli._option_types import strict_int
from eraudit_core.errors import InputError
from eraudit_core.paths import check_output_file
from eraudit_core.sensitivity import (
    DEFAULT_V2_JUDGE,
    TIDY_COLUMNS,
    ImportResult,
    SensitivityResult,
    TagMapping,
    analyse,
    import_inspect_logs,
    import_petri_transcripts,
    read_tidy_table,
    write_import,
)

MAPPING_HELP = """\
mapping file (JSON): which condition and behaviour each rollout belongs to.
  {"condition": {KEY: NAME, ...}, "behaviour": {KEY: NAME, ...}}
      KEY is an exact tag (transcript / eval / sample tag) or a seed (sample) id.
  {"condition": {NAME: RULE or [RULE, ...]}, "behaviour": {NAME: RULE, ...}}
      RULE is an object; every field given must hold, a list matches if any rule does:
        "task_args": {"max_turns": 4, "enable_prefill": false}  eval.task_args, by value
        "directory": "turns3"          a folder on the file's path ("runs/turns3" also)
        "tag": "condition:lean"        a tag, or a list of tags (all needed)
        "seed": "7"                    a seed / sample id, or a list (any)
        "seed_text": "gangstalked"     a substring of the seed instruction
  Both forms can be mixed. Each rollout must match exactly one condition and one
  behaviour; otherwise it is dropped with the reason. Name a behaviour after the judge
  dimension to analyse (e.g. unprompted_sycophancy) or pass --dimension to `sensitivity`.
example:
  {"condition": {"none": {"task_args": {"enable_prefill": false}},
                 "prefill": {"task_args": {"enable_prefill": true}}},
   "behaviour": {"sycophancy": "unprompted_sycophancy"}}
"""


def register(subparsers: Any) -> None:
    """Add the `sensitivity` and `sensitivity-import` subcommands."""
    p = subparsers.add_parser(
        "sensitivity",
        help="does the audit verdict depend on the auditor's configuration? (the Petri paper)",
        description=(
            "Cumulative-logit analysis of judge scores by resource condition and "
            "auditor-target pair: LR tests, odds-ratio contrasts (Holm), per-pair contrasts, "
            "bootstrap cell means, judge agreement."
        ),
    )
    p.add_argument("table", type=Path, help="tidy CSV or Parquet: " + ", ".join(TIDY_COLUMNS))
    p.add_argument("--reference-condition", required=True, help="e.g. none")
    p.add_argument(
        "--dimension",
        default=None,
        help="score dimension to analyse (default: the dimension named like the behaviour)",
    )
    p.add_argument("--reference-pair", default=None, help="'auditor -> target' (default: first)")
    p.add_argument(
        "--bootstrap", type=strict_int, default=2000, help="bootstrap resamples per cell"
    )
    p.add_argument("--seed", type=strict_int, default=0, help="bootstrap seed")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run_sensitivity)

    q = subparsers.add_parser(
        "sensitivity-import",
        help="convert Petri transcripts or Inspect logs into a tidy sensitivity table",
        description=(
            "Read Petri v2 transcript JSON (petri DIR) or Inspect eval logs written by Petri v2 "
            "or Petri 3 (inspect LOG_OR_DIR ...). Writes the scores to OUT (.csv or .parquet, "
            "one row per rollout x judge x dimension) and what each judge wrote (summary, "
            "justification, highlights, seed instruction, task args, source, identity) to "
            "OUT's sibling <stem>.rollouts.jsonl. Judge failures, padded dimensions, errored "
            "samples and duplicates are dropped; the reasons are counted and printed."
        ),
        epilog=MAPPING_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    q.add_argument("kind", choices=("petri", "inspect"))
    q.add_argument(
        "inputs",
        nargs="+",
        type=Path,
        help="petri: one directory of transcripts; inspect: .eval/.json logs or directories",
    )
    q.add_argument("--mapping", type=Path, required=True, help="JSON mapping file (see below)")
    q.add_argument(
        "--scorer",
        action="append",
        default=None,
        metavar="NAME",
        help="judge scorer to import (repeatable); default: detect Petri's judge scorers "
        "(audit_judge; alignment_judge, alignment_judge1, ...)",
    )
    q.add_argument(
        "--default-judge",
        default=DEFAULT_V2_JUDGE,
        help="petri: judge name for bare score keys (default %(default)s)",
    )
    q.add_argument("-o", "--out", type=Path, required=True, help="output .csv or .parquet")
    q.add_argument("--json", action="store_true", help="print the import report as JSON")
    q.set_defaults(func=run_import)


def run_sensitivity(args: argparse.Namespace) -> int:
    if args.bootstrap < 100:
        raise InputError(f"--bootstrap must be at least 100, got {args.bootstrap}")
    imported = read_tidy_table(args.table)
    result = analyse(
        imported.table,
        reference_condition=args.reference_condition,
        dimension=args.dimension,
        reference_pair=args.reference_pair,
        n_boot=args.bootstrap,
        seed=args.seed,
        source=str(args.table),
    )
    if args.json:
        json.dump(result.to_json_dict(), sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_summary(result))
    return 0


def format_summary(result: SensitivityResult) -> str:
    """A short plain-text report of the analysis."""
    lines: list[str] = []
    for name, b in result.behaviours.items():
        lines.append(f"== {name} (dimension {b.dimension}, {b.n_modelled} rollouts modelled)")
        for label, t in (("resource", b.lr_resource), ("resource x pair", b.lr_interaction)):
            if t is not None:
                lines.append(f"  LR {label}: chi2={t.stat:.2f} df={t.df} p={t.p:.3g}")
        for c in b.contrasts:
            lines.append(
                f"  {c.condition} vs {b.reference_condition}: OR={c.odds_ratio:.3g} "
                f"[{c.ci_low:.3g}, {c.ci_high:.3g}] p={c.p:.3g} p_holm={c.p_holm:.3g}"
                + (" (separation?)" if c.separation else "")
            )
        a = b.agreement.krippendorff_alpha_ordinal
        if a is not None:
            lines.append(f"  judge agreement: ordinal Krippendorff alpha={a:.3f}")
    if len(result.dropped):
        lines.append(f"dropped rollouts: {len(result.dropped)}")
    lines.extend(f"warning: {w}" for w in result.warnings)
    return "\n".join(lines) + "\n"


def import_report(result: ImportResult, written: tuple[Path, Path] | None) -> dict[str, Any]:
    """The import's outcome: counts, drops per reason (one example file each), notes."""
    table = result.table
    return {
        "rollouts": int(table["rollout"].nunique()),
        "rows": len(table),
        "judges": sorted(table["judge"].unique().tolist()),
        "conditions": sorted(table["condition"].unique().tolist()),
        "behaviours": sorted(table["behaviour"].unique().tolist()),
        "table": None if written is None else str(written[0]),
        "rollouts_file": None if written is None else str(written[1]),
        "dropped": result.drop_summary().to_dict(orient="records"),
        "notes": list(result.notes),
    }


def format_import_report(report: dict[str, Any]) -> str:
    """The report as text: printed on every run, whatever was imported."""
    lines = [
        f"imported {report['rollouts']} rollouts ({report['rows']} scores; judges: "
        f"{', '.join(report['judges']) or 'none'}; conditions: "
        f"{', '.join(report['conditions']) or 'none'})"
    ]
    if report["table"]:
        lines.append(f"wrote {report['table']} and {report['rollouts_file']}")
    if not report["dropped"]:
        lines.append("dropped: nothing")
    else:
        lines.append("dropped, by reason:")
        for d in report["dropped"]:
            scores = f", {d['n_scores']} scores" if d["n_scores"] else ""
            lines.append(f"  {d['code']}: {d['rollouts']} rollout(s){scores}: {d['description']}")
            detail = f": {d['example_detail']}" if d["example_detail"] else ""
            lines.append(f"      e.g. {d['example']} (rollout {d['example_rollout']}){detail}")
    lines.extend(f"note: {n}" for n in report["notes"])
    return "\n".join(lines) + "\n"


def run_import(args: argparse.Namespace) -> int:
    # a rebuild command: it replaces its output, but never a DuckDB store
    check_output_file(args.out, force=True, what="-o")
    mapping = TagMapping.from_json(args.mapping)
    result: ImportResult
    if args.kind == "petri":
        if len(args.inputs) != 1:
            raise InputError("petri: give exactly one transcript directory")
        result = import_petri_transcripts(
            args.inputs[0], mapping, args.default_judge, scorers=args.scorer
        )
    else:
        result = import_inspect_logs(args.inputs, mapping, scorer=args.scorer)
    written = None if result.table.empty else write_import(result, args.out)
    report = import_report(result, written)
    sys.stderr.write(format_import_report(report))
    if args.json:
        json.dump(report, sys.stdout, indent=2, allow_nan=False, default=str)
        sys.stdout.write("\n")
    if written is None:
        raise InputError(
            f"no rollout could be imported ({len(result.dropped)} dropped; reasons above); "
            f"{args.out} was not written"
        )
    return 0


__all__ = ["register", "run_sensitivity", "run_import", "format_summary"]
