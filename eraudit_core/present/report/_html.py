"""Every piece of HTML the studio builds (the report, the dashboard's `unsafe_allow_html`
fragments) renders here, from the Jinja2 templates in `templates/`, with autoescaping on.

Text reaches a template as a plain `str` and is escaped on output (`&`, `<`, `>`, `"`, `'`, as
`html.escape` writes them); HTML built elsewhere (a pandas table, a plotly figure, another
rendered fragment) arrives as `Markup` and is kept. Every value written, either kind, first has
its C0 control characters other than tab and newline (and DEL) replaced by their visible
symbols (U+2400 block), so no untrusted text puts a raw control byte into a page.
"""

from __future__ import annotations

import html
import re
from functools import cache
from typing import Any

import jinja2
from markupsafe import Markup

__all__ = ["Markup", "escape", "html_fragment", "render", "script_text", "visible_controls"]

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _symbol(match: re.Match[str]) -> str:
    code = ord(match.group())
    return "\u2421" if code == 0x7F else chr(0x2400 + code)


def visible_controls(text: str) -> str:
    """`text` with each C0 control character other than tab and newline (and DEL) replaced
    by its visible symbol: ESC (0x1b) becomes U+241B."""
    return _CONTROLS.sub(_symbol, text)


def escape(value: Any) -> Markup:
    """`value` as safe HTML: Markup is kept, anything else is escaped as text; control
    characters become visible symbols either way."""
    if isinstance(value, Markup):
        return Markup(visible_controls(str(value)))
    return Markup(html.escape(visible_controls(str(value))))


def _finalize(value: Any) -> Any:
    """Jinja's last step for every `{{ value }}`: text is escaped here (so escaped text reads
    as `html.escape` writes it), numbers pass through."""
    if isinstance(value, str):  # Markup included
        return escape(value)
    return value


def script_text(js: str) -> Markup:
    """JavaScript source to inline in a <script> element: control characters (which occur
    only inside its string literals) are written as \\xNN escapes, so the script means the
    same and the page holds no raw control byte."""
    return Markup(_CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", js))


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("eraudit_core.present.report", "templates"),
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(template: str, **context: Any) -> Markup:
    """Render a template of `templates/` (a whole page or a fragment) to safe HTML."""
    return Markup(_environment().get_template(template).render(**context))


def html_fragment(template: str, **context: Any) -> str:
    """A rendered fragment for `st.markdown(..., unsafe_allow_html=True)`: the one way the
    dashboard gets HTML, every value in it escaped by the template."""
    return str(render(template, **context))
