"""Untrusted text (questions, paraphrases, model names, labels) checked where it enters and made
safe where it is shown.

* `check_text`: a field of an input file is real Unicode (no lone surrogates, which JSON can
  carry but UTF-8 and the store cannot) and no longer than `MAX_QUESTION_CHARS`;
* `parse_json`: JSON with errors that name the file, including nesting too deep to parse;
* `safe_label`: plotly renders some HTML in labels, so every label passes through it;
* `terminal_safe`: control characters (escape sequences that could rewrite a terminal, bidi
  overrides that reorder what is shown) are shown as visible escapes on the terminal;
* `check_no_control` / `escape_control`: control characters other than tab and newline are
  refused where text enters (paraphrase files, score tables, bundles) and shown as visible
  escapes where stored text is written out (the HTML report, CSV cells);
* `csv_safe_frame` / `csv_text`: text cells that a spreadsheet would run as a formula are
  neutralised (OWASP) and every cell holding a CR, LF, quote or separator is quoted (RFC 4180).
"""

from __future__ import annotations

import csv
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
# Refused at import: C0 controls but tab and newline, DEL and C1 (a CR splits a CSV row in
# most readers, an ESC rewrites a terminal).
_INPUT_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# A CSV cell whose first visible character is one of these is a formula to Excel, LibreOffice
# and Sheets (OWASP "CSV injection"), even after leading spaces or control characters: such a
# cell is written with a leading apostrophe, unless it is a plain number ("-0.5").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_CHARS = "=+-@"
_LEADING = re.compile(r"^[\s\x00-\x1f\x7f-\x9f]*")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


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


def check_no_control(value: str, where: str, field: str) -> str:
    """`value` unless it holds a control character other than tab and newline (a CR, an ESC,
    a NUL, ...); InputError names `where`, `field` and the character's position."""
    found = _INPUT_CONTROL.search(value)
    if found:
        code = found.group().encode("unicode_escape").decode("ascii")
        raise InputError(
            f"{where}: field {field} contains the control character {code} at character "
            f"{found.start()}; only tab and newline are allowed in text"
        )
    return value


def escape_control(text: str) -> str:
    """`text` with every control character but tab and newline (CR, ESC, NUL, C1, bidi
    overrides) written as a visible escape (`\\x1b`), so what is shown has no raw control
    bytes. The HTML report applies it to stored text before HTML escaping."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


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
    return escape_control(text)


def csv_safe(value: object) -> object:
    """A text cell made inert for a spreadsheet; other values unchanged.

    Prefixed with `'` when its first character after any leading spaces or control characters
    is `=`, `+`, `-` or `@`, or when it starts with a tab or CR, unless the whole cell is a
    plain number; then control characters other than tab and newline are escaped.
    """
    if not isinstance(value, str):
        return value
    rest = value[_LEADING.match(value).end() :]  # type: ignore[union-attr]
    formula = rest.startswith(tuple(_FORMULA_CHARS)) or value.startswith(("\t", "\r"))
    if formula and not _NUMBER.fullmatch(value.strip()):
        value = "'" + value
    return escape_control(value)


def csv_safe_frame(frame: Any) -> Any:
    """A copy of a DataFrame whose text cells are `csv_safe`, for every CSV the studio writes."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or str(out[col].dtype) in ("string", "str"):
            out[col] = out[col].map(csv_safe)
    renamed = {c: csv_safe(c) for c in out.columns if isinstance(c, str)}
    return out.rename(columns=renamed)


def csv_text(frame: Any) -> str:
    """A DataFrame as RFC 4180 CSV: `csv_safe` cells, CRLF line ends, and every field holding
    a CR, LF, quote or comma quoted, so any reader sees the same rows and cells."""
    return str(
        csv_safe_frame(frame).to_csv(index=False, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    )
