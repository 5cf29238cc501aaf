"""The `eraudit` command. Each concern registers its own subcommands from a `*_cli` module."""

from __future__ import annotations

import argparse
import importlib
import sys

from eraudit_core.errors import InputError, StoreError

# Modules that define `register(subparsers)`; each adds its subcommands. A module that is not
# there yet (work in progress in another branch) is skipped, so the command always starts.
SUBCOMMAND_MODULES = (
    "eraudit_core.cli._audit",
    "eraudit_core.cli._verifier",
    "eraudit_core.cli._paraphrase",
    "eraudit_core.cli._sensitivity",
    "eraudit_core.cli._report",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eraudit",
        description="ER-Audit Studio: black-box audits of epistemic reliability.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand. Exit 0 on success, 2 on bad input (message on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (InputError, StoreError) as exc:
        print(f"eraudit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
