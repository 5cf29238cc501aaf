"""Command-line options generated from the declared audit settings (`eraudit_core.method`'s
`settings()`): each option's flag, parser, default and help come from its setting, so the CLI
shows the words the Run form and the report show."""

from __future__ import annotations

import argparse
from typing import Any

from eraudit_core.cli._option_types import name_list, non_empty, strict_float, strict_int
from eraudit_core.method import Kind, Setting, settings, valid_text

_PARSERS: dict[Kind, Any] = {
    Kind.NUMBER: strict_float,
    Kind.INTEGER: strict_int,
    Kind.NAMES: name_list,
    Kind.TEXT: non_empty,
}
_METAVARS = {Kind.NAMES: "NAME,..."}


def option_help(s: Setting) -> str:
    """A setting's help followed by its valid values and default (argparse reads % as a
    format character)."""
    extra = []
    valid = valid_text(s)
    if valid is not None:
        extra.append(f"valid: {valid}")
    if s.default is not None and s.default != () and not isinstance(s.default, bool):
        default = f"{s.default:g}" if isinstance(s.default, float) else str(s.default)
        extra.append(f"default: {default}")
    text = s.spec.help + (f" ({'; '.join(extra)})" if extra else "")
    return text.replace("%", "%%")


def add_setting_option(p: argparse.ArgumentParser, s: Setting) -> None:
    """One option for one setting: a flag switches a yes/no setting away from its default;
    other kinds parse their value strictly."""
    common: dict[str, Any] = {"dest": s.name, "default": s.default, "help": option_help(s)}
    if s.kind == Kind.FLAG:
        p.add_argument(s.flag, action="store_false" if s.default else "store_true", **common)
        return
    if s.kind not in _PARSERS:
        raise TypeError(f"AuditConfig.{s.name}: no command-line parser for a {s.kind}")
    metavar = _METAVARS.get(s.kind)
    p.add_argument(s.flag, type=_PARSERS[s.kind], metavar=metavar, **common)


def with_flag(message: str) -> str:
    """A config error ("AuditConfig.epsilon must be >= 0, ...") led by the option that sets
    the setting ("--epsilon: ..."), so the auditor knows what to retype."""
    for s in settings():
        if message.startswith(f"AuditConfig.{s.name} "):
            return f"{s.flag}: {message}"
    return message
