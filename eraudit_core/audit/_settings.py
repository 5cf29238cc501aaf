"""Reading AuditConfig's field metadata (help, label, range, verdict flag) and the one named
preset the dashboard opens on.

The CLI's options, the Run form's fields and the report's settings table are generated from
these, so a setting's help text and valid values are written once, in `_config.py`.
"""

from __future__ import annotations

from dataclasses import Field, fields
from typing import Any

from eraudit_core.audit._config import AuditConfig, Range
from eraudit_core.audit._degradation import DEFAULT_K
from eraudit_core.errors import InputError


def config_fields() -> tuple[Field[Any], ...]:
    """AuditConfig's fields in declaration order, each with its metadata."""
    return fields(AuditConfig)


def config_field(name: str) -> Field[Any]:
    """One field of AuditConfig by name (InputError naming an unknown one)."""
    for f in fields(AuditConfig):
        if f.name == name:
            return f
    raise InputError(f"AuditConfig has no field {name!r}")


def field_help(name: str) -> str:
    """The one help text of a setting (the CLI, the Run form and the report all show it)."""
    return str(config_field(name).metadata["help"])


def field_label(name: str) -> str:
    return str(config_field(name).metadata["label"])


def field_range(name: str) -> Range | None:
    value = config_field(name).metadata.get("range")
    return value if isinstance(value, Range) else None


def verdict_fields() -> tuple[str, ...]:
    """The settings that change a verdict or a bound: two runs that differ in one of them do
    not judge the questions by the same rule. Batch size, wording, label-mass minimum, the
    draw seed and imported scores change how scores are obtained, not the rule."""
    return tuple(f.name for f in fields(AuditConfig) if f.metadata["verdict"])


def setting_text(config: AuditConfig, name: str) -> str:
    """A setting's value as the report prints it: `unset` for None, yes/no, names joined."""
    f = config_field(name)
    value = getattr(config, name)
    if value is None or value == ():
        return str(f.metadata.get("unset", "none"))
    if name == "stop_at_target" and config.target is None:
        return "no (no target)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def config_settings(config: AuditConfig) -> list[tuple[str, str]]:
    """(label, value) for every setting of a config, in declaration order."""
    return [(str(f.metadata["label"]), setting_text(config, f.name)) for f in fields(config)]


# The dashboard's settings for the bundled demo, which fit its paraphrase pools: p* 0.8 needs
# n* = 14 clean draws at confidence 0.95 (about half of the demo pairs have pools that large;
# p* 0.9 would need 29, more than most pools hold);
# epsilon 0.5 counts a paraphrase when the adapted model lost more than half of its monitored
# gain on it. The Run form opens on it; the finished demo runs and the one-click live audit
# are this preset with smaller budgets.
DEMO_PRESET = AuditConfig(
    epsilon=0.5,
    k=DEFAULT_K,
    confidence=0.95,
    search_budget=20,
    test_budget=40,
    target=0.8,
    tv_delta=0.0,
    batch_size=8,
)
