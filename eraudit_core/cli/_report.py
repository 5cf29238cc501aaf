"""`eraudit report` and `eraudit export`: share stored runs without opening the dashboard.

Neither replaces an existing file unless asked (`--force`), and nothing ever writes over a
DuckDB store (a mistyped `--out S.duckdb` would otherwise replace the store with HTML).
"""

from __future__ import annotations

import argparse
import sys

from eraudit_core.paths import check_output_file
from eraudit_core.present import EXPORT_FORMATS, export_run, write_report
from eraudit_core.store import Store


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report", help="write a self-contained HTML report (opens offline) for stored runs"
    )
    p.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="one or more stored run ids")
    p.add_argument("--db", required=True, help="DuckDB store file")
    p.add_argument("--out", required=True, help="HTML file to write")
    p.add_argument("--title", default=None, help="report title")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.set_defaults(func=cmd_report)

    p = subparsers.add_parser(
        "export", help="write a run's per-pair and per-paraphrase results as CSV or Parquet"
    )
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--db", required=True, help="DuckDB store file")
    p.add_argument("--out", required=True, help="directory to write into")
    p.add_argument("--format", choices=EXPORT_FORMATS, default="csv")
    p.add_argument("--force", action="store_true", help="replace files that exist in --out")
    p.set_defaults(func=cmd_export)


def cmd_report(args: argparse.Namespace) -> int:
    check_output_file(args.out, force=args.force)
    with Store(args.db) as store:
        path = write_report(store, args.run_ids, args.out, title=args.title)
    print(path)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    with Store(args.db) as store:
        paths = export_run(store, args.run_id, args.out, args.format, force=args.force)
    for path in paths:
        sys.stdout.write(f"{path}\n")
    return 0
