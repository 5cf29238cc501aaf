"""The `eraudit` command. Each concern registers its own subcommands from a `*_cli` module."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

from eraudit_core.cli._interrupts import CTRL_C, EXIT_CANCELLED, EXIT_INTERRUPTED
from eraudit_core.cores import passive_omp_wait
from eraudit_core.errors import CancelledError, InputError, StoreError
from eraudit_core.text import terminal_safe

# Modules that define `register(subparsers)`; each adds its subcommands. A module that is not
# there yet (work in progress in another branch) is skipped, so the command always starts.
SUBCOMMAND_MODULES = (
    "eraudit_core.cli._audit",
    "eraudit_core.cli._runs",
    "eraudit_core.cli._demo",
    "eraudit_core.cli._verifier",
    "eraudit_core.cli._paraphrase",
    "eraudit_core.cli._sensitivity",
    "eraudit_core.cli._report",
    "eraudit_core.cli._bundle",
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
    """Run one subcommand. Exit 0 on success, 2 on bad input (message on stderr), 130 after
    Ctrl-C, 1 when a run was cancelled from elsewhere."""
    passive_omp_wait()  # before a subcommand imports torch (eraudit_core/cores.py)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (InputError, StoreError) as exc:
        print(f"eraudit: error: {terminal_safe(str(exc))}", file=sys.stderr)
        return 2
    except CancelledError as exc:
        interrupted = CTRL_C.is_set()
        print(
            f"eraudit: {terminal_safe(str(exc))}" + (" (Ctrl-C)" if interrupted else ""),
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED if interrupted else EXIT_CANCELLED
    except BrokenPipeError:  # `eraudit show RUN | head`: the reader left, nothing to report
        with contextlib.suppress(OSError, ValueError):  # no error again when Python flushes
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(
            "eraudit: interrupted (Ctrl-C); a run stopped here is marked cancelled", file=sys.stderr
        )
        return EXIT_INTERRUPTED
    finally:
        CTRL_C.clear()


if __name__ == "__main__":
    sys.exit(main())
