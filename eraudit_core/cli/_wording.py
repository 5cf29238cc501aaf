"""Options every command that takes a checkpoint shares: readout profile, wording, label mass.

An auditor reproducing another tool's numbers needs its exact wording: the prompt template, the
system message and the answer prefix can each come from a file (docs/design.md §3). What these
options set goes into the verifier's fingerprint (hence the score cache key) and, for an audit,
into the run's config.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from eraudit_core.cli._setting_options import add_setting_option
from eraudit_core.errors import InputError
from eraudit_core.method import Cli, cli_fields
from eraudit_core.verifier import PROFILES


def add_wording_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--readout",
        choices=list(PROFILES),
        default=None,
        help="readout profile: where the answer label is read (default: the spec's "
        ";readout=, else detected from the chat template; `eraudit readouts` lists them)",
    )
    p.add_argument(
        "--prompt-template", type=Path, default=None, help="FILE with the prompt template (§3)"
    )
    p.add_argument("--system-file", type=Path, default=None, help="FILE with a system message")
    p.add_argument("--prefix-file", type=Path, default=None, help="FILE with the answer prefix")
    for setting in cli_fields(Cli.CHECKPOINT):
        add_setting_option(p, setting)


def _read(path: Path | None, what: str) -> str | None:
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file ({what})") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({what}; {exc.reason})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({what}; {exc.strerror})") from None
    # A file's last newline is an editor's, not part of the wording.
    return text[:-1] if text.endswith("\n") else text


def wording_from_files(args: argparse.Namespace) -> dict[str, str]:
    """template / prefix / system read from the files given (only those given)."""
    out = {}
    for key, attr, what in (
        ("template", "prompt_template", "--prompt-template"),
        ("prefix", "prefix_file", "--prefix-file"),
        ("system", "system_file", "--system-file"),
    ):
        value = _read(getattr(args, attr), what)
        if value is not None:
            out[key] = value
    return out


def spec_with_readout(spec: str, readout: str | None) -> str:
    """`spec` with `;readout=NAME` added when a readout is asked for and the spec names none."""
    if readout is None or ";readout=" in spec:
        return spec
    return f"{spec};readout={readout}"


def loader_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Verifier keyword arguments from the shared options (files win over --template/--prefix)."""
    kwargs: dict[str, Any] = {}
    for key in ("template", "prefix"):
        if getattr(args, key, None) is not None:
            kwargs[key] = getattr(args, key)
    kwargs.update(wording_from_files(args))
    if args.readout is not None:
        kwargs["readout"] = args.readout
    return kwargs
