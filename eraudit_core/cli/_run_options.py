"""The options that set a run's configuration (generated from AuditConfig's fields, plus
where epsilon comes from, a noise floor and a control run), shared by `audit-table` and `audit`,
and how parsed arguments become an AuditConfig."""

from __future__ import annotations

import argparse
from typing import Any

from eraudit_core.cli._option_types import non_empty, strict_float
from eraudit_core.cli._output import _print_warning
from eraudit_core.cli._setting_options import add_setting_option, with_flag
from eraudit_core.cli._wording import wording_from_files
from eraudit_core.errors import InputError


def _config_args(p: argparse.ArgumentParser, *, model_run: bool) -> None:
    """The options of a run's settings, generated from AuditConfig's fields (help, defaults
    and valid values stated once, in eraudit_core/method/_config.py), plus where epsilon
    comes from, a declared noise floor and a control run."""
    from eraudit_core.method import Cli, cli_fields

    uses = (Cli.OPTION, Cli.MODEL_RUN) if model_run else (Cli.OPTION,)
    names = []
    for s in cli_fields(*uses):
        add_setting_option(p, s)
        names.append(s.name)
    p.set_defaults(config_fields=tuple(names))
    p.add_argument(
        "--noise-floor",
        type=strict_float,
        default=None,
        help="the scorer's numerical precision, declared (score tables have no measured "
        "one); drops within it are marked 'within numerical "
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
    from eraudit_core.method import Cli, cli_fields, make_config

    values = {name: getattr(args, name) for name in args.config_fields}
    # the settings of the checkpoint options, where this command has them
    values |= {s.name: getattr(args, s.name) for s in cli_fields(Cli.CHECKPOINT) if s.name in args}
    try:
        return make_config(**{**values, **extra})
    except InputError as exc:
        raise InputError(with_flag(str(exc))) from None


def _epsilon_source(store: Any, args: argparse.Namespace, audited: Any) -> Any:
    """The calibration `--epsilon-from` names (None when epsilon is stated), its warnings
    printed. `audited` is what the audit judges (`AuditedContent`), for the selection check;
    a null calibration must have been made at this audit's k and budgets."""
    from eraudit_core.method import null_threshold_fields
    from eraudit_core.runs import epsilon_source

    _check_control(store, args)
    if args.epsilon_from is None:
        return None
    source, warnings = epsilon_source(
        store,
        args.epsilon_from,
        audited,
        settings={name: getattr(args, name) for name in null_threshold_fields()},
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
