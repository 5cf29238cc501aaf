"""Untrusted text (questions, paraphrases, model names, labels) checked where it enters and made
safe where it is shown.

* `check_text`: a field of an input file is real Unicode (no lone surrogates, which JSON can
  carry but UTF-8 and the store cannot) and no longer than `MAX_QUESTION_CHARS`;
* `parse_json`: JSON with errors that name the file, including nesting too deep to parse;
* `safe_label`: plotly renders some HTML in labels, so every label passes through it;
* `terminal_safe`: control characters (escape sequences that could rewrite a terminal, bidi
  overrides that reorder what is shown) are shown as visible escapes on the terminal;
* `csv_safe_frame`: text cells that a spreadsheet would run as a formula are quoted (OWASP).
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from eraudit_core.errors import InputError

# Questions, answer options and paraphrases longer than this are refused at import. The
# bundled QuALITY-H fields are at most 310 characters; 4,000 characters (about 1,000 tokens)
# leaves room for long questions while every prompt stays far inside a small model's context.
MAX_QUESTION_CHARS = 4000

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# A CSV cell starting with one of these is a formula to Excel, LibreOffice and Sheets
# (OWASP "CSV injection"): such a cell is written with a leading apostrophe.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def check_text(value: str, where: str, field: str, max_chars: int = MAX_QUESTION_CHARS) -> str:
    """`value` if it is valid Unicode and at most `max_chars` long, else InputError naming
    `where` (file and record) and `field`."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start : exc.end]
        raise InputError(
            f"{where}: field {field} contains a lone surrogate ({bad.encode('unicode_escape').decode()}"
            f" at character {exc.start}), which is not valid Unicode text"
        ) from None
    if len(value) > max_chars:
        raise InputError(
            f"{where}: field {field} is {len(value)} characters long, more than the "
            f"{max_chars} allowed"
        )
    return value


def parse_json(text: str, source: str) -> Any:
    """json.loads with InputError for malformed JSON and for nesting too deep to read."""
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError(f"{source}: the JSON is nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc


def safe_label(text: object, limit: int = 120) -> str:
    """Escape untrusted text for plotly (which renders some HTML) and shorten it."""
    s = " ".join(str(text if text is not None else "").split())
    if len(s) > limit:
        s = s[: limit - 1] + "\u2026"
    return html.escape(s, quote=True)


def terminal_safe(text: object) -> object:
    """Strings with control characters shown as escapes (`\\x1b`); other values unchanged.

    Tabs and newlines are kept; a terminal never receives an escape sequence from stored text.
    """
    if not isinstance(text, str):
        return text
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def csv_safe(value: object) -> object:
    """A text cell prefixed with `'` when it starts like a formula; other values unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_safe_frame(frame: Any) -> Any:
    """A copy of a DataFrame whose text cells are `csv_safe`, for every CSV the studio writes."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or str(out[col].dtype) in ("string", "str"):
            out[col] = out[col].map(csv_safe)
    renamed = {c: csv_safe(c) for c in out.columns if isinstance(c, str)}
    return out.rename(columns=renamed)
