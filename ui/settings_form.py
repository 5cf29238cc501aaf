"""The Run form's audit settings, drawn from their declarations (`eraudit_core.method.settings()`):
one widget per setting chosen by its kind, with its label, help and valid range, opening on
the chosen preset. No setting has a widget of its own here, so a new setting shows up on the
form by being declared.

Each widget keeps its value in `st.session_state` under `setting-<name>`; a preset writes
those values when it is picked (and fills any the session lost, e.g. after another page).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from eraudit_core.errors import InputError
from eraudit_core.method import (
    PRESETS,
    Kind,
    Preset,
    Section,
    Setting,
    form_fields,
    null_threshold_fields,
    setting_named,
)
from ui import store_access

APPLIED = "settings-preset-applied"
COLUMNS = 3


def _key(s: Setting, scope: str = "") -> str:
    return f"setting-{s.name}" + (f"-{scope}" if scope else "")


def _enable_key(s: Setting) -> str:
    return f"setting-{s.name}-on"


def _state_value(s: Setting, value: Any) -> Any:
    """A setting's value as its widget holds it (numbers as the kind's Python type)."""
    if value is None:
        return None
    if s.kind == Kind.INTEGER:
        return int(value)
    if s.kind == Kind.NUMBER:
        return float(value)
    return value


def _write(s: Setting, value: Any, *, only_missing: bool) -> None:
    if s.kind == Kind.NAMES:
        return  # the stored names of the benchmark, not a preset's
    if s.optional and s.kind in (Kind.NUMBER, Kind.INTEGER):
        if not (only_missing and _enable_key(s) in st.session_state):
            st.session_state[_enable_key(s)] = value is not None
        if value is None and _key(s) in st.session_state:
            return  # keep the last number for when the setting is switched on again
    if not (only_missing and _key(s) in st.session_state):
        st.session_state[_key(s)] = _state_value(s, value)


def open_on(preset: Preset) -> None:
    """Write the preset's values into the form when it was just picked; otherwise fill only
    the values the session lost."""
    config = preset.config()
    changed = st.session_state.get(APPLIED) != preset.name
    for section in (Section.MAIN, Section.ADVANCED):
        for s in form_fields(section):
            _write(s, getattr(config, s.name), only_missing=not changed)
    st.session_state[APPLIED] = preset.name


def preset_named(name: str) -> Preset:
    for p in PRESETS:
        if p.name == name:
            return p
    raise InputError(f"no preset named {name!r}")


def _number(where: Any, s: Setting, *, disabled: bool, key: str = "", value: Any = None) -> Any:
    valid = s.spec.valid
    cast = int if s.kind == Kind.INTEGER else float
    limits: dict[str, Any] = {}
    low, high = getattr(valid, "low", None), getattr(valid, "high", None)
    if low is not None:
        limits["min_value"] = cast(low)
    if high is not None:
        limits["max_value"] = cast(high)
    if s.spec.form.step is not None:
        limits["step"] = cast(s.spec.form.step)
    if s.spec.form.number_format is not None:
        limits["format"] = s.spec.form.number_format
    if value is not None:
        limits["value"] = cast(value)
    got = where.number_input(
        s.spec.label, key=key or _key(s), help=s.spec.help, disabled=disabled, **limits
    )
    return None if got is None else cast(got)


def number_field(name: str, *, key: str, where: Any = st) -> Any:
    """A declared number setting drawn outside the Run form (its label, help, range and
    default from the declaration), under `key`."""
    s = setting_named(name)
    if s.kind not in (Kind.NUMBER, Kind.INTEGER):
        raise TypeError(f"AuditConfig.{name} is not a number")
    return _number(where, s, disabled=False, key=key, value=s.default)


def _draw(where: Any, s: Setting, values: dict[str, Any], names: dict[str, list[str]]) -> Any:
    """One setting's widget in `where` (a column or the page), its value read back."""
    needs = s.spec.form.needs
    disabled = needs is not None and values.get(needs) is None
    if s.kind == Kind.FLAG:
        return where.checkbox(s.spec.label, key=_key(s), help=s.spec.help, disabled=disabled)
    if s.kind in (Kind.NUMBER, Kind.INTEGER) and s.spec.suggested:
        current = st.session_state.get(_key(s))
        options = sorted({*s.spec.suggested, *([current] if current is not None else [])})
        return where.selectbox(
            s.spec.label, options, key=_key(s), help=s.spec.help, disabled=disabled
        )
    if s.kind in (Kind.NUMBER, Kind.INTEGER):
        on = True
        if s.optional:
            label = s.spec.form.enable_label or f"Set {s.spec.label}"
            on = where.checkbox(label, key=_enable_key(s), help=s.spec.help, disabled=disabled)
        value = _number(where, s, disabled=disabled or not on)
        return value if on else None
    if s.kind == Kind.NAMES and s.name not in names:
        text = where.text_input(s.spec.label, key=_key(s), help=s.spec.help, disabled=disabled)
        return tuple(x.strip() for x in (text or "").split(",") if x.strip())
    if s.kind == Kind.NAMES:
        options = names[s.name]
        return tuple(
            where.multiselect(
                s.spec.label,
                options,
                default=options,
                key=_key(s, "|".join(options)),
                help=s.spec.help,
                disabled=disabled,
            )
        )
    if s.kind == Kind.TEXT:
        text = where.text_input(s.spec.label, key=_key(s), help=s.spec.help, disabled=disabled)
        return text or None
    raise TypeError(f"AuditConfig.{s.name}: the Run form has no widget for a {s.kind}")


def _groups(declared: tuple[Setting, ...]) -> list[list[Setting]]:
    """Settings in declaration order, each one that `needs` another under it."""
    groups: list[list[Setting]] = []
    by_name: dict[str, list[Setting]] = {}
    for s in declared:
        parent = s.spec.form.needs
        if parent is not None and parent in by_name:
            by_name[parent].append(s)
        else:
            group = [s]
            groups.append(group)
            by_name[s.name] = group
    return groups


def _stored_names(benchmark_id: str) -> dict[str, list[str]]:
    """The stored paraphrase sets a names setting picks from, by its `names_of` role."""
    sets = store_access.get_store().paraphrase_sets(benchmark_id)
    out = {}
    for section in (Section.MAIN, Section.ADVANCED):
        for s in form_fields(section):
            role = s.spec.form.names_of
            if s.kind == Kind.NAMES and role:
                chosen = [] if sets.empty else sets.loc[sets["role"] == role, "generator"]
                out[s.name] = [str(g) for g in chosen]
    return out


def draw_section(section: Section, benchmark_id: str) -> dict[str, Any]:
    """The section's settings, laid out: the main ones three to a row (lists of names side
    by side), the advanced ones one to a row. Returns {setting name: value}."""
    names = _stored_names(benchmark_id)
    values: dict[str, Any] = {}
    declared = form_fields(section)
    scalars = tuple(s for s in declared if s.kind != Kind.NAMES)
    lists = [s for s in declared if s.kind == Kind.NAMES]
    if section == Section.MAIN:
        groups = _groups(scalars)
        for row in range(0, len(groups), COLUMNS):
            columns = st.columns(COLUMNS)
            for column, group in zip(columns, groups[row : row + COLUMNS], strict=False):
                for s in group:
                    values[s.name] = _draw(column, s, values, names)
        for column, s in zip(st.columns(max(len(lists), 1)), lists, strict=False):
            values[s.name] = _draw(column, s, values, names)
    else:
        for s in (*scalars, *lists):
            values[s.name] = _draw(st, s, values, names)
    return values


def preset_notes(preset: Preset) -> str:
    """The preset's reason and each override's, for a caption beside the picker."""
    lines = [preset.reason, *(f"- {line}" for line in preset.lines())]
    return "\n".join(lines)


def null_threshold_values(values: dict[str, Any]) -> dict[str, Any]:
    """The form's values of the settings a null calibration must have been made at."""
    return {name: values[name] for name in null_threshold_fields() if name in values}
