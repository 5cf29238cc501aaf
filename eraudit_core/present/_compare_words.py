"""Why two runs are not comparable, in words: one short clause list for a sentence
(`differences_sentence`, the CLI and Home) and one plain sentence per difference for a reader
who never saw the stored field names (`differences_in_words`, Results). Kept apart from the
comparison's statistics in `_compare` so each module has one concern."""

from __future__ import annotations

import textwrap
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.method import field_label


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def differences_sentence(differences: list[dict[str, Any]]) -> str:
    """'Not comparable: epsilon 0.5 vs 2, ...; no test is shown.'"""
    parts = []
    for d in differences:
        if d["field"] == "questions":
            parts.append(f"questions {d['a']} vs {d['b']}")
        elif d["field"] == "base" and "max_difference" in d:
            parts.append(
                f"base (pre scores of {d['n_differ']} of {d['n_shared']} shared texts differ by "
                f"up to {d['max_difference']:.3g})"
            )
        elif d["field"] == "paraphrase_sets":
            parts.append(f"paraphrase texts of {', '.join(d['a'])}")
        else:
            parts.append(f"{d['field']} {_shown(d['a'])} vs {_shown(d['b'])}")
    return (
        "These runs are not comparable (" + "; ".join(parts) + "): a difference between them "
        "could come from the settings, so no test is shown."
    )


def _setting_words(name: str) -> str:
    """A setting as the Run form names it, without its parenthetical ("Tolerance epsilon")."""
    try:
        return field_label(name).split(" (")[0]
    except InputError:
        return name.replace("_", " ")


def differences_in_words(differences: list[dict[str, Any]]) -> list[str]:
    """Why two runs are not comparable, one plain sentence per difference, for a reader who
    never saw the stored field names: 'Tolerance epsilon: 0.5 in the left run, 2 in the
    right.'"""
    out = []
    for d in differences:
        field, a, b = d["field"], d["a"], d["b"]
        if field == "questions":
            out.append(f"They audited different questions: {a} in the left run, {b} in the right.")
        elif field == "base" and "max_difference" in d:
            out.append(
                "They start from different base models: the scores before adaptation of "
                f"{d['n_differ']} of the {d['n_shared']} rewordings both scored differ, by up "
                f"to {d['max_difference']:.3g}."
            )
        elif field == "base":
            out.append(
                f"They start from different base models: {_shown(a)} in the left run, "
                f"{_shown(b)} in the right."
            )
        elif field == "generators":
            out.append(
                "They drew paraphrases from different sets: "
                f"{', '.join(a) or 'none'} in the left run, {', '.join(b) or 'none'} in the right."
            )
        elif field == "pool_sizes":
            sizes = "; ".join(f"{k}: {a[k]} against {b[k]}" for k in a)
            out.append(f"Their paraphrase sets hold different numbers of rewordings ({sizes}).")
        elif field == "paraphrase_sets":
            out.append(
                f"The rewordings of {', '.join(a)} differ in their text between the two runs."
            )
        else:
            left, right = (textwrap.shorten(_shown(v), 60) for v in (a, b))
            out.append(f"{_setting_words(field)}: {left} in the left run, {right} in the right.")
    return out
