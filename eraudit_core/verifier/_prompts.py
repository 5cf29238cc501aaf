"""The one place that renders verifier prompts (docs/design.md §3).

The backend applies the chat template to the output of `render_prompts`, so what the
dashboard shows is exactly what the model reads. Templates are checked so that no field can
leak which option is true.
"""

from __future__ import annotations

import string
from collections.abc import Callable

from eraudit_core.errors import InputError
from eraudit_core.types import Query

DEFAULT_TEMPLATE = (
    "Question: {question}\n"
    "{label_a}. {option_a}\n"
    "{label_b}. {option_b}\n"
    "Answer with the letter of the correct option."
)
DEFAULT_PREFIX = "Answer:"
DEFAULT_LABELS = ("A", "B")
TEMPLATE_FIELDS = frozenset({"question", "option_a", "option_b", "label_a", "label_b"})
REQUIRED_FIELDS = frozenset({"question", "option_a", "option_b"})
# The fixed question every load check asks; a served checkpoint's probe log-probs come from it.
PROBE = Query("probe", "Which colour is the sky on a clear day?", "Blue", "Green")


def check_prompt_format(
    template: str, prefix: str, labels: tuple[str, str] = DEFAULT_LABELS
) -> None:
    """Refuse a template or prefix that could tell the model the answer.

    The template may only see the question, the two options in display order and the two
    letters; a field such as `{true_option}` would leak which option is true. A prefix that
    already ends with a label would answer for the model.
    """
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        raise InputError(f"prompt template: cannot parse ({exc})") from exc
    unknown = {f for f in fields if f not in TEMPLATE_FIELDS}
    if unknown:
        raise InputError(
            f"prompt template: field(s) {sorted(unknown)} not allowed; a template may use only "
            f"{sorted(TEMPLATE_FIELDS)} (anything else could leak the answer)"
        )
    missing = REQUIRED_FIELDS - fields
    if missing:
        raise InputError(f"prompt template: missing field(s) {sorted(missing)}")
    if len(labels) != 2 or labels[0] == labels[1] or not all(x.strip() for x in labels):
        raise InputError(f"labels: need two different non-empty labels, got {labels!r}")
    tail = prefix.rstrip()
    for label in labels:
        if tail.endswith(label.strip()) and tail:
            raise InputError(
                f"answer prefix {prefix!r}: ends with the label {label!r}, which answers for "
                "the model"
            )


def render_messages(
    query: Query, template: str = DEFAULT_TEMPLATE, labels: tuple[str, str] = DEFAULT_LABELS
) -> tuple[str, str]:
    """The user messages for both answer orders: (true option as A, true option as B)."""
    check_prompt_format(template, DEFAULT_PREFIX, labels)
    common = {"question": query.question, "label_a": labels[0], "label_b": labels[1]}
    ab = template.format(option_a=query.true_option, option_b=query.false_option, **common)
    ba = template.format(option_a=query.false_option, option_b=query.true_option, **common)
    return ab, ba


def render_prompts(
    query: Query,
    template: str = DEFAULT_TEMPLATE,
    prefix: str = DEFAULT_PREFIX,
    *,
    chat: Callable[[str], str] | None = None,
    labels: tuple[str, str] = DEFAULT_LABELS,
) -> tuple[str, str]:
    """The exact texts the model continues, for both orders (true as A, then true as B).

    `chat` wraps a user message in the model's chat template with a generation prompt (a loaded
    verifier passes its tokenizer's); without it the message is used as is. The answer prefix is
    appended after the chat template, and the labels (" A", " B") are the continuations read.
    """
    check_prompt_format(template, prefix, labels)
    wrap = chat if chat is not None else (lambda text: text)
    ab, ba = render_messages(query, template, labels)
    return wrap(ab) + prefix, wrap(ba) + prefix
