"""Untrusted text (questions, paraphrases, model names) made safe where it is shown.

Plotly renders HTML tags in labels, so every label passes through `safe_label`.
"""

from __future__ import annotations

import html


def safe_label(text: object, limit: int = 120) -> str:
    """Escape untrusted text for plotly (which renders some HTML) and shorten it."""
    s = " ".join(str(text if text is not None else "").split())
    if len(s) > limit:
        s = s[: limit - 1] + "\u2026"
    return html.escape(s, quote=True)
