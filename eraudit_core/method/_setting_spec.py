"""The typed record each audit setting is declared with, and the checks derived from it.

An `AuditConfig` field is declared with `setting(default, ...)`: its name, type (the field's
annotation) and default come from the field; its label, help, valid values, whether it changes
a verdict, whether two compared runs must agree on it, how the CLI and the Run form offer it,
from the `SettingSpec` stored in the field's metadata. Everything that shows, parses or checks
a setting reads this record (through `_settings`), so a new setting is one field.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

SPEC_KEY = "setting"


@dataclass(frozen=True)
class Range:
    """The valid values of a numeric setting: the form's limits, the CLI's help, the report and
    AuditConfig's own check all read it."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return False
        x = float(value)
        if not math.isfinite(x):
            return False
        if self.low is not None and (x <= self.low if self.low_open else x < self.low):
            return False
        return not (self.high is not None and (x >= self.high if self.high_open else x > self.high))

    def __str__(self) -> str:
        lo, hi = self.low, self.high
        if lo is None and hi is None:
            return "any finite number"
        if hi is None:
            return f"{'>' if self.low_open else '>='} {lo:g}"
        if lo is None:
            return f"{'<' if self.high_open else '<='} {hi:g}"
        return f"{'(' if self.low_open else '['}{lo:g}, {hi:g}{')' if self.high_open else ']'}"

    def requirement(self) -> str:
        """'>= 0' or 'in (0, 1)', as an error message says it after 'must be'."""
        one_sided = self.low is None or self.high is None
        return str(self) if one_sided else f"in {self}"


@dataclass(frozen=True)
class IsoDate:
    """A date written YYYY-MM-DD."""

    def __contains__(self, value: object) -> bool:
        try:
            dt.date.fromisoformat(str(value))
        except ValueError:
            return False
        return isinstance(value, str)

    def __str__(self) -> str:
        return "a date YYYY-MM-DD"

    def requirement(self) -> str:
        return str(self)


class Kind(StrEnum):
    """What a setting's value is, read from the field's annotation (`kind_of`)."""

    NUMBER = "number"
    INTEGER = "integer"
    FLAG = "flag"
    NAMES = "names"
    NUMBER_PAIR = "number pair"
    TEXT = "text"


# A field's annotation (a string under `from __future__ import annotations`) -> its kind and
# whether None (empty) is allowed.
_KINDS: dict[str, tuple[Kind, bool]] = {
    "float": (Kind.NUMBER, False),
    "float | None": (Kind.NUMBER, True),
    "int": (Kind.INTEGER, False),
    "int | None": (Kind.INTEGER, True),
    "bool": (Kind.FLAG, False),
    "tuple[str, ...]": (Kind.NAMES, False),
    "tuple[float, float]": (Kind.NUMBER_PAIR, False),
    "str | None": (Kind.TEXT, True),
}
# Integers travel through JSON and DuckDB BIGINT; larger ones are refused by name.
INTEGER_LIMIT = 2**63


def kind_of(annotation: object, name: str) -> tuple[Kind, bool]:
    """The kind of a field's annotation, or TypeError naming the field (a setting of another
    type needs a kind here, and a parser and a widget for it, before it can be declared)."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    try:
        return _KINDS[str(text)]
    except KeyError:
        raise TypeError(f"AuditConfig.{name}: no setting kind for the type {text!r}") from None


class Cli(StrEnum):
    """How the command line sets a setting."""

    OPTION = "option"  # an option of `audit` and `audit-table`
    MODEL_RUN = "model run"  # an option of `audit` only (a score table brings its own)
    CHECKPOINT = "checkpoint"  # an option of every command that loads a checkpoint
    NOT_AN_OPTION = "not an option"  # set another way; `cli_reason` says how


class Section(StrEnum):
    """Where the Run form shows a setting."""

    MAIN = "main"
    ADVANCED = "advanced"
    HIDDEN = "hidden"  # not on the form; `form_reason` says why


@dataclass(frozen=True)
class FormHint:
    """How the Run form draws a setting beyond what its kind and range say."""

    section: Section = Section.ADVANCED
    step: float | None = None
    number_format: str | None = None
    # An optional number is switched on by a checkbox with this label (and the setting's help).
    enable_label: str | None = None
    # Disabled while this other setting is unset (None).
    needs: str | None = None
    # A list of names is picked from the store's paraphrase sets of this role.
    names_of: str = ""
    reason: str = ""  # why a hidden setting is not on the form


@dataclass(frozen=True)
class SettingSpec:
    """What an AuditConfig field's metadata declares about it (see the module docstring)."""

    label: str
    help: str
    changes_verdicts: bool
    # Two runs are comparable only when they agree on it (a verdict setting, or the wording,
    # which changes every score).
    must_match: bool
    valid: Range | IsoDate | None = None
    # Values the form offers for a number instead of a free box (any value in `valid` is
    # accepted elsewhere).
    suggested: tuple[float, ...] = ()
    # A control run, or a null calibration's run, must share it with the audit it reads.
    control_must_match: bool = False
    unique: bool = False  # names that must not repeat
    unset: str = "none"  # what None or an empty list means, in words
    cli: Cli = Cli.OPTION
    flag: str = ""  # the CLI option when not --name-with-dashes
    cli_reason: str = ""
    form: FormHint = field(default_factory=FormHint)


def setting(
    default: Any,
    *,
    label: str,
    help: str,
    changes_verdicts: bool,
    must_match: bool | None = None,
    **more: Any,
) -> Any:
    """An AuditConfig field declared with its `SettingSpec`; `must_match` defaults to
    `changes_verdicts` (a setting that changes verdicts must match for a comparison)."""
    spec = SettingSpec(
        label=label,
        help=help,
        changes_verdicts=changes_verdicts,
        must_match=changes_verdicts if must_match is None else must_match,
        **more,
    )
    return field(default=default, metadata={SPEC_KEY: spec})


@dataclass(frozen=True)
class Setting:
    """One declared setting: the field's name, kind and default with its spec."""

    name: str
    kind: Kind
    optional: bool
    default: Any
    spec: SettingSpec

    @property
    def flag(self) -> str:
        return self.spec.flag or "--" + self.name.replace("_", "-")

    def problem(self, value: Any) -> str | None:
        """Why `value` is not valid for this setting ('must be ...'), or None when it is."""
        empty = " or empty" if self.optional else ""
        if value is None:
            return None if self.optional else f"must be {_KIND_WORDS[self.kind]}"
        if not _has_kind(self.kind, value):
            return f"must be {_KIND_WORDS[self.kind]}{empty}"
        values = value if self.kind == Kind.NUMBER_PAIR else (value,)
        valid = self.spec.valid
        if self.kind in (Kind.NUMBER, Kind.INTEGER, Kind.NUMBER_PAIR, Kind.TEXT) and (
            valid is not None and not all(v in valid for v in values)
        ):
            if self.kind == Kind.NUMBER_PAIR:
                return f"must be two numbers, each {valid.requirement()}"
            return f"must be {valid.requirement()}{empty}"
        if self.spec.unique and len(set(value)) != len(value):
            return "must not repeat a name"
        return None


_DECLARED: dict[type, tuple[Setting, ...]] = {}


def declared_settings(config_class: type) -> tuple[Setting, ...]:
    """The settings a config class declares, in declaration order (TypeError for a field
    declared without `setting(...)` or of a type with no kind); read once per class."""
    if config_class in _DECLARED:
        return _DECLARED[config_class]
    out = []
    for f in fields(config_class):
        spec = f.metadata.get(SPEC_KEY)
        if not isinstance(spec, SettingSpec):
            raise TypeError(f"{config_class.__name__}.{f.name} is not declared with setting()")
        kind, optional = kind_of(f.type, f.name)
        out.append(Setting(f.name, kind, optional, f.default, spec))
    _DECLARED[config_class] = tuple(out)
    return _DECLARED[config_class]


_KIND_WORDS = {
    Kind.NUMBER: "a number",
    Kind.INTEGER: "an integer",
    Kind.FLAG: "true or false",
    Kind.NAMES: "a list of names",
    Kind.NUMBER_PAIR: "two numbers",
    Kind.TEXT: "text",
}


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _has_kind(kind: Kind, value: Any) -> bool:
    if kind == Kind.NUMBER:
        return _is_number(value)
    if kind == Kind.INTEGER:
        return isinstance(value, int) and not isinstance(value, bool) and abs(value) < INTEGER_LIMIT
    if kind == Kind.FLAG:
        return isinstance(value, bool)
    if kind == Kind.NAMES:
        return isinstance(value, tuple) and all(isinstance(v, str) for v in value)
    if kind == Kind.NUMBER_PAIR:
        return isinstance(value, tuple) and len(value) == 2 and all(map(_is_number, value))
    return isinstance(value, str)
