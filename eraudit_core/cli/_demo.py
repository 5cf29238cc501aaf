"""`eraudit demo`: load the embedded demo into a store. Its own module because it is neither
an audit of the user's inputs (`_audit.py`) nor a reading of stored runs (`_runs.py`)."""

from __future__ import annotations

import argparse

from eraudit_core.cli._interrupts import ctrl_c_cancels
from eraudit_core.cli._output import _print


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("demo", help="load the embedded demo into a store")
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from eraudit_core.demo import ensure_demo
    from eraudit_core.store import Store

    with Store(args.db) as store, ctrl_c_cancels() as ctrl_c:
        info = ensure_demo(store, should_cancel=ctrl_c.is_set)
    _print(info.as_dict(), args.json)
    return 0
