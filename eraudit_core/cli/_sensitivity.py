"""`eraudit sensitivity` (the seed-003 analysis) and `eraudit sensitivity-import` (importers).

The JSON printed by `eraudit sensitivity TABLE --reference-condition NAME --json` is a stable
contract: {"reference_condition", "dimension", "behaviours": {name: {"lr_resource",
"lr_interaction", "contrasts", "per_pair", "cell_means", "agreement", ...}}, "dropped",
"warnings"}; see `SensitivityResult.to_json_dict`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.sensitivity import (
    TIDY_COLUMNS,
    ImportResult,
    SensitivityResult,
    TagMapping,
    analyse,
    import_inspect_logs,
    import_petri_transcripts,
    read_tidy_table,
)


def register(subparsers: Any) -> None:
    """Add the `sensitivity` and `sensitivity-import` subcommands."""
    p = subparsers.add_parser(
        "sensitivity",
        help="does the audit verdict depend on the auditor's configuration? (seed 003)",
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
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples per cell")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run_sensitivity)

    q = subparsers.add_parser(
        "sensitivity-import",
        help="convert Petri transcripts or Inspect logs into a tidy sensitivity table",
    )
    q.add_argument("kind", choices=("petri", "inspect"))
    q.add_argument("inputs", nargs="+", type=Path, help="Petri directory, or Inspect .eval logs")
    q.add_argument(
        "--mapping",
        type=Path,
        required=True,
        help='JSON {"condition": {tag_or_seed: name}, "behaviour": {tag_or_seed: name}}',
    )
    q.add_argument("--default-judge", default="judge", help="judge name for bare score keys")
    q.add_argument("-o", "--out", type=Path, required=True, help="output .csv or .parquet")
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


def run_import(args: argparse.Namespace) -> int:
    mapping = TagMapping.from_json(args.mapping)
    result: ImportResult
    if args.kind == "petri":
        if len(args.inputs) != 1:
            raise InputError("petri: give exactly one transcript directory")
        result = import_petri_transcripts(args.inputs[0], mapping, args.default_judge)
    else:
        result = import_inspect_logs(args.inputs, mapping)
    if result.table.empty:
        raise InputError(f"no rollout could be imported ({len(result.dropped)} dropped)")
    out: Path = args.out
    if out.suffix.lower() in (".parquet", ".pq"):
        result.table.to_parquet(out, index=False)
    else:
        result.table.to_csv(out, index=False)
    n = result.table["rollout"].nunique()
    print(f"wrote {n} rollouts ({len(result.table)} rows) to {out}", file=sys.stderr)
    for row in result.dropped.itertuples(index=False):
        print(f"dropped {row.rollout} ({row.source}): {row.reason}", file=sys.stderr)
    return 0


__all__ = ["register", "run_sensitivity", "run_import", "format_summary"]
