"""The `eraudit` command: argument parsing only; each subcommand family has its own module."""

from __future__ import annotations

from eraudit_core.cli._main import (
    build_parser,
    main,
)

__all__ = [
    "build_parser",
    "main",
]
