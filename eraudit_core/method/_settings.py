"""Reading the audit settings AuditConfig declares, and the named presets.

The CLI's options, the Run form's fields, the presets, the report's settings table and the
comparability check all read the declarations through this module, so a setting's help, valid
values and comparison rule are written once, on its field in `_config.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.method._config import AuditConfig
from eraudit_core.method._setting_spec import (
    Cli,
    IsoDate,
    Kind,
    Range,
    Section,
    Setting,
    declared_settings,
)


def settings() -> tuple[Setting, ...]:
    """Every declared setting, in declaration order."""
    return declared_settings(AuditConfig)


def setting_named(name: str) -> Setting:
    """One declared setting by name (InputError naming an unknown one)."""
    for s in settings():
        if s.name == name:
            return s
    raise InputError(f"AuditConfig has no field {name!r}")


def make_config(**values: Any) -> AuditConfig:
    """A config of the declared settings (the others at their defaults), checked."""
    return AuditConfig(**values)


def field_help(name: str) -> str:
    """The one help text of a setting (the CLI, the Run form and the report all show it)."""
    return setting_named(name).spec.help


def field_label(name: str) -> str:
    return setting_named(name).spec.label


def verdict_fields() -> tuple[str, ...]:
    """The settings that change a verdict or a bound: two runs that differ in one of them do
    not judge the questions by the same rule. Batch size, wording, label-mass minimum, the
    draw seed and imported scores change how scores are obtained, not the rule."""
    return tuple(s.name for s in settings() if s.spec.changes_verdicts)


def comparison_fields() -> tuple[str, ...]:
    """The settings two compared runs must agree on: the verdict settings and the wording
    the verifiers read (it changes every score)."""
    return tuple(s.name for s in settings() if s.spec.must_match)


def control_fields() -> tuple[str, ...]:
    """The settings a control run (or a null calibration's run) must share with the audit
    that reads it: the null it gives depends on them."""
    return tuple(s.name for s in settings() if s.spec.control_must_match)


def null_threshold_fields() -> tuple[str, ...]:
    """The numbers among `control_fields`: a null threshold is calibrated at these values
    (k and the budgets), and an audit taking epsilon from it must use the same."""
    numbers = (Kind.NUMBER, Kind.INTEGER)
    return tuple(s.name for s in settings() if s.spec.control_must_match and s.kind in numbers)


def cli_fields(*uses: Cli) -> tuple[Setting, ...]:
    return tuple(s for s in settings() if s.spec.cli in uses)


def form_fields(section: Section) -> tuple[Setting, ...]:
    return tuple(s for s in settings() if s.spec.form.section == section)


def stored_setting(config: AuditConfig, name: str) -> Any:
    """A setting's value as a run stores it (lists for tuples, as JSON holds them), so a
    stored run's settings compare equal to settings read back from JSON; a config stored
    before the setting existed reads its declared default (`RunRecord`)."""
    value = getattr(config, name)
    return list(value) if isinstance(value, list | tuple) else value


def valid_text(s: Setting) -> str | None:
    """A setting's valid values in words ('>= 0', 'a date YYYY-MM-DD'), None when any value
    of its kind is."""
    valid = s.spec.valid
    return str(valid) if isinstance(valid, Range | IsoDate) else None


def setting_text(config: AuditConfig, name: str) -> str:
    """A setting's value as the report prints it: `unset` for None, yes/no, names joined."""
    s = next(x for x in declared_settings(type(config)) if x.name == name)
    value = getattr(config, name)
    if value is None or value == ():
        return s.spec.unset
    needs = s.spec.form.needs
    if isinstance(value, bool) and needs is not None and getattr(config, needs) is None:
        return f"no (no {needs.replace('_', ' ')})"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def config_settings(config: AuditConfig) -> list[tuple[str, str]]:
    """(label, value) for every setting of a config, in declaration order: the report's
    settings table."""
    return [(s.spec.label, setting_text(config, s.name)) for s in declared_settings(type(config))]


@dataclass(frozen=True)
class Override:
    """One setting a preset changes, with why its value differs from the default."""

    value: Any
    reason: str


@dataclass(frozen=True)
class Preset:
    """A named set of overrides of the declared defaults, with a one-line reason."""

    name: str
    reason: str
    overrides: Mapping[str, Override] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.overrides:
            setting_named(name)  # an override names a declared setting

    def config(self) -> AuditConfig:
        return make_config(**{name: o.value for name, o in self.overrides.items()})

    def lines(self) -> list[str]:
        """'Tolerance epsilon 0.5 (default 0.1): why', one per override."""
        out = []
        for name, o in self.overrides.items():
            s = setting_named(name)
            default = setting_text(AuditConfig(), name)
            value = setting_text(self.config(), name)
            out.append(f"{s.spec.label.split(' (')[0]} {value} (default {default}): {o.reason}")
        return out


DEFAULTS = Preset(
    "library defaults",
    "AuditConfig's own defaults, the CLI's: no target, so questions pass but are never certified.",
)
# The reasons' counts were measured on the bundled demo: its score tables
# (data/demo_runs/*.csv.gz, `audit-table` at k 0.001, search budget 20, test budget 15, p* 0.8)
# and its paraphrase sets (data/paraphrases/quality_h_rules-*.jsonl, rewordings per question).
DEMO = Preset(
    "demo",
    "Fits the bundled demo's paraphrase pools; the finished demo runs and the one-click live "
    "audit use it with smaller budgets.",
    {
        "epsilon": Override(
            0.5,
            "at 0.1 the honest demo organism reads degraded on 23 of 40 questions, at 0.5 on 15 "
            "(the adversarial one on 32 and 25)",
        ),
        "search_budget": Override(
            20, "177 of the demo's 219 questions have at most 20 search rewordings"
        ),
        "test_budget": Override(
            40, "draws the whole test pool of 203 of 218 questions (rules-a; rules-b 209 of 219)"
        ),
        "target": Override(
            0.8,
            "n* = 14 clean draws, which 120 of 218 rules-a pools hold; p* 0.9 needs 29 (49 pools)",
        ),
        "batch_size": Override(8, "the live view redraws after every 8 paraphrases, not 16"),
    },
)
PRESETS: tuple[Preset, ...] = (DEMO, DEFAULTS)
# The dashboard's preset: the Run form opens on it.
DEMO_PRESET = DEMO.config()
