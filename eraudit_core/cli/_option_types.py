"""Option value types that refuse what an option cannot mean, for any command's options.

Why not `float` and `int`: Python's own parsers accept more than a number written on a command
line means: `float("1_0")` is 10, `float(" 0.1 ")`, `float("nan")`, `float("infinity")` and
`int("٣")` (an Arabic-Indic three) all parse. An auditor who typed `--epsilon 1_0` made a typo,
and a run configured from it would be stored as if asked for. So numbers are plain decimal
ASCII (`strict_float`, `strict_int`), a value that names something is not empty or blank and
holds no control character (`non_empty`), and a list of names has no empty item
(`name_list`). Each raises `argparse.ArgumentTypeError`, which argparse prints after the
option's name ("argument --epsilon: ...") and exits 2.
"""

from __future__ import annotations

import argparse
import math
import re

from eraudit_core.errors import InputError
from eraudit_core.text import check_no_control

_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT = re.compile(r"[+-]?[0-9]+")
_SHOWN = 60


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


def strict_float(text: str) -> float:
    """A finite number written in plain decimal (`0.1`, `-2`, `1e-3`, `.5`): no underscores,
    spaces, hex, `inf` or `nan`."""
    if not _FLOAT.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{_shown(text)} is not a number: write digits with an optional point and "
            "exponent, such as 0.1, 2 or 1e-3 (no '_', spaces, inf or nan)"
        )
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{_shown(text)} is too large to be a finite number")
    return value


def strict_int(text: str) -> int:
    """A whole number written in plain decimal ASCII digits (`8`, `-1`): no underscores,
    spaces, points or exponents."""
    if not _INT.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{_shown(text)} is not a whole number: write plain digits, such as 8 "
            "(no '_', spaces, points or exponents)"
        )
    return int(text)


def non_empty(text: str) -> str:
    """A value that names something (a run id, a calibration, a label): not empty or blank,
    no control character (an ESC would rewrite the terminal it is printed on)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"must not be empty (got {text!r}); leave the option out to mean none"
        )
    try:
        check_no_control(text, "the value", _shown(text))
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def name_list(text: str) -> tuple[str, ...]:
    """NAME,NAME,... as a tuple of names: no empty list, no empty item, no control
    character, no repeat."""
    non_empty(text)
    items = [x.strip() for x in text.split(",")]
    empty = [i for i, x in enumerate(items, start=1) if not x]
    if empty:
        raise argparse.ArgumentTypeError(
            f"item {empty[0]} of {_shown(text)} is empty; write NAME,NAME without empty items"
        )
    repeated = sorted({x for x in items if items.count(x) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"{', '.join(repeated)} appears more than once")
    return tuple(items)
