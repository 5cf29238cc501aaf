"""The options that set a run's configuration (generated from AuditConfig's fields, plus
where epsilon comes from, a noise floor and a control run), shared by `audit-table` and `audit`,
and how parsed arguments become an AuditConfig."""

from __future__ import annotations

import argparse
from typing import Any

from eraudit_core.cli._option_types import name_list, non_empty, strict_float, strict_int
from eraudit_core.cli._output import _print_warning
from eraudit_core.cli._wording import wording_from_files
from eraudit_core.errors import InputError

# AuditConfig fields that are not options of their own: the wording comes from files and the
# label-mass minimum from the checkpoint options every command shares (add_wording_args); the
# prompt date is set when a run starts; the failure-tolerant prior keeps its default.
_NOT_OPTIONS = (
    "tolerant_prior",
    "prompt_template",
    "answer_prefix",
    "system_message",
    "prompt_date",
    "min_label_mass",
)
# A score table brings its own generators, in its own order.
_MODEL_RUN_ONLY = ("search_generators", "test_generators", "draw_seed")


def _option_help(f: Any) -> str:
    """A field's help text followed by its valid values and default (argparse reads % as a
    format character)."""
    md = f.metadata
    valid = md.get("range", md.get("choices"))
    extra = []
    if valid is not None and not isinstance(valid, tuple):
        extra.append(f"valid: {valid}")
    if f.default is not None and f.default != () and not isinstance(f.default, bool):
        extra.append(
            f"default: {f.default:g}" if isinstance(f.default, float) else f"default: {f.default}"
        )
    text = md["help"] + (f" ({'; '.join(extra)})" if extra else "")
    return text.replace("%", "%%")


def _add_field_option(p: argparse.ArgumentParser, f: Any) -> None:
    """One option generated from an AuditConfig field: its flag, type and default from the
    field, its help from the field's metadata."""
    flag = f.metadata.get("flag", "--" + f.name.replace("_", "-"))
    kind = str(f.type)
    common: dict[str, Any] = {"dest": f.name, "default": f.default, "help": _option_help(f)}
    if kind == "bool":
        action = "store_false" if f.default else "store_true"
        p.add_argument(flag, action=action, **common)
    elif kind.startswith("tuple[str"):
        p.add_argument(flag, type=name_list, metavar="NAME,...", **common)
    elif kind.startswith("float"):
        p.add_argument(flag, type=strict_float, **common)
    elif kind.startswith("int"):
        p.add_argument(flag, type=strict_int, **common)
    else:  # a new field needs a type here before it can be an option
        raise TypeError(f"AuditConfig.{f.name}: no command-line type for {kind}")


def _config_args(p: argparse.ArgumentParser, *, model_run: bool) -> None:
    """The options of a run's settings, generated from AuditConfig's fields (help, defaults
    and valid values stated once, in eraudit_core/audit/_config.py), plus where epsilon
    comes from, a declared noise floor and a control run."""
    from eraudit_core.audit import config_fields

    names = []
    for f in config_fields():
        if f.name in _NOT_OPTIONS or (not model_run and f.name in _MODEL_RUN_ONLY):
            continue
        _add_field_option(p, f)
        names.append(f.name)
    p.set_defaults(config_fields=tuple(names))
    p.add_argument(
        "--noise-floor",
        type=strict_float,
        default=None,
        help="the scorer's numerical precision, declared (score tables have no measured "
        "one; the option keeps its old name); drops within it are marked 'within numerical "
        "precision'. Not noise: for noise use a control's null threshold (calibrate-epsilon "
        "--null)",
    )
    p.add_argument(
        "--epsilon-from",
        type=non_empty,
        default=None,
        metavar="NAME",
        help="take epsilon from a stored calibration (eraudit calibrate-epsilon): NAME for a "
        "null calibration of a control, NAME:p25 for an organism calibration; recorded",
    )
    p.add_argument(
        "--allow-selection",
        action="store_true",
        help="allow --epsilon-from a calibration made on the audited content itself "
        "(selection; recorded and reported)",
    )
    p.add_argument(
        "--allow-unverified",
        action="store_true",
        help="allow --epsilon-from a calibration whose source run was imported or derived "
        "(recorded and reported)",
    )
    p.add_argument(
        "--control",
        type=non_empty,
        default=None,
        metavar="RUN_ID",
        help="the control run: every question is read against it on the rewordings both "
        "scored (docs/null-reading.md); it must share the base, generators, budgets and k",
    )


def _config(args: argparse.Namespace, **extra: Any) -> Any:
    """The AuditConfig the generated options describe; `extra` sets the others, and wins
    (an epsilon taken from a calibration replaces --epsilon)."""
    from eraudit_core.audit import AuditConfig, config_fields

    values = {name: getattr(args, name) for name in args.config_fields}
    try:
        return AuditConfig(**{**values, **extra})
    except InputError as exc:
        raise InputError(_with_flag(str(exc), config_fields())) from None


def _with_flag(message: str, fields: Any) -> str:
    """A config error ("AuditConfig.epsilon must be >= 0, ...") led by the option that set
    the field ("--epsilon: ..."), so the auditor knows what to retype."""
    for f in fields:
        if message.startswith(f"AuditConfig.{f.name} "):
            flag = f.metadata.get("flag", "--" + f.name.replace("_", "-"))
            return f"{flag}: {message}"
    return message


def _epsilon_source(store: Any, args: argparse.Namespace, audited: Any) -> Any:
    """The calibration `--epsilon-from` names (None when epsilon is stated), its warnings
    printed. `audited` is what the audit judges (`AuditedContent`), for the selection check;
    a null calibration must have been made at this audit's k and budgets."""
    from eraudit_core.audit import epsilon_source

    _check_control(store, args)
    if args.epsilon_from is None:
        return None
    source, warnings = epsilon_source(
        store,
        args.epsilon_from,
        audited,
        settings={
            "k": args.k,
            "search_budget": args.search_budget,
            "test_budget": args.test_budget,
        },
        allow_selection=args.allow_selection,
        allow_unverified=args.allow_unverified,
    )
    for w in warnings:
        _print_warning(w)
    return source


def _check_control(store: Any, args: argparse.Namespace) -> None:
    """The run `--control` names must be in the store; the error names the option."""
    control = getattr(args, "control", None)
    if control is None:
        return
    try:
        store.run(control)
    except InputError as exc:
        raise InputError(f"--control {control!r}: {exc}; name a run of this store") from None


def _wording_config(args: argparse.Namespace) -> dict[str, str]:
    """The wording files as AuditConfig fields (so the run records them and a resume reuses
    them)."""
    names = {"template": "prompt_template", "prefix": "answer_prefix", "system": "system_message"}
    return {names[k]: v for k, v in wording_from_files(args).items()}


def _split(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]
