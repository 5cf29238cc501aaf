"""`eraudit export-run` and `eraudit import-run`: move a run between stores as one file."""

from __future__ import annotations

import argparse
import json

from eraudit_core.bundles import export_run_bundle, import_run_bundle
from eraudit_core.store import Store


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export-run",
        help="write a run with its pairs, paraphrases, scores and provenance to one .zip",
        description="A zip of Parquet tables plus manifest.json (versions, row counts, sha256); "
        "`eraudit import-run` stores it in another store.",
    )
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--db", required=True, help="DuckDB store file holding the run")
    p.add_argument("--out", required=True, help="bundle file to write, e.g. run.zip")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.set_defaults(func=cmd_export_run)

    p = subparsers.add_parser(
        "import-run", help="store a run bundle written by `eraudit export-run` (once per run id)"
    )
    p.add_argument("bundle", help="the .zip written by export-run")
    p.add_argument("--db", required=True, help="DuckDB store file to import into")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_import_run)


def cmd_export_run(args: argparse.Namespace) -> int:
    with Store(args.db) as store:
        path = export_run_bundle(store, args.run_id, args.out, force=args.force)
    print(path)
    return 0


def cmd_import_run(args: argparse.Namespace) -> int:
    with Store(args.db) as store:
        result = import_run_bundle(store, args.bundle)
    if args.json:
        print(json.dumps(result))
    else:
        rows = ", ".join(f"{n} {t}" for t, n in result["rows"].items())
        print(f"imported run {result['run_id']} ({rows})")
    return 0
