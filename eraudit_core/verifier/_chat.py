"""How a checkpoint's chat template wraps a prompt: readout profile, system message, date.

Both backends wrap user messages here (docs/design.md §3), so a served model reads exactly the text
the local one reads. Some templates write today's date into every prompt (Llama 3.1's
"Today Date: ...", gpt-oss's "Current date: ..."): such a prompt changes at midnight, and a
score cache keyed by anything but the exact text would then mix two prompts under one key.
`chat_format` renders the template with two different dates; when the text differs, the date
is pinned (to the day the checkpoint was loaded, i.e. the run's start) through the template's
own `date_string` variable and its `strftime_now` function (the only clock transformers'
template sandbox offers), and the pinned date becomes part of the checkpoint's identity.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.verifier._readout import (
    ReadoutProfile,
    complete_prefill,
    detect_readout,
    get_readout,
)

# Two dates far apart (different day, month and year) for the date-embedding check.
_CHECK_DATES = (dt.date(2001, 2, 3), dt.date(2019, 11, 28))
_CHECK_MESSAGE = "Question: ping\nA. x\nB. y"


def _date_variables(day: dt.date) -> dict[str, Any]:
    """The variables chat templates read today's date from, set to `day`."""
    moment = dt.datetime(day.year, day.month, day.day)
    return {"date_string": day.strftime("%d %b %Y"), "strftime_now": moment.strftime}


@dataclass(frozen=True)
class ChatFormat:
    """The wrapping a verifier applies to each user message (see module docstring)."""

    readout: ReadoutProfile
    detected: str
    system: str | None = None
    pinned_date: dt.date | None = None

    def wrap(self, tokenizer: Any, message: str) -> str:
        """The message in the chat template with a generation prompt, then the prefill."""
        if not self.readout.chat_template or getattr(tokenizer, "chat_template", None) is None:
            text = message
        else:
            text = render_template(tokenizer, message, self.system, self._variables())
        return complete_prefill(text, self.readout.prefill)

    def _variables(self) -> dict[str, Any]:
        variables = dict(self.readout.switches)
        if self.pinned_date is not None:
            variables.update(_date_variables(self.pinned_date))
        return variables

    def identity(self) -> dict[str, Any]:
        """What the checkpoint's fingerprint must cover so that no two prompts share a key."""
        return {
            "readout": self.readout.describe(),
            "system": self.system,
            "pinned_date": self.pinned_date.isoformat() if self.pinned_date else None,
        }

    def describe(self) -> dict[str, Any]:
        return {
            "readout": self.readout.name,
            "readout_detected": self.detected,
            "readout_prefill": self.readout.prefill,
            "template_switches": self.readout.switches,
            "system_message": self.system,
            "date_pinned": self.pinned_date.isoformat() if self.pinned_date else None,
        }


def render_template(
    tokenizer: Any, message: str, system: str | None, variables: dict[str, Any]
) -> str:
    messages = [{"role": "user", "content": message}]
    if system is not None:
        messages.insert(0, {"role": "system", "content": system})
    text = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True, **variables
    )
    return str(text)


def chat_format(
    tokenizer: Any,
    *,
    name: str,
    model_type: str | None,
    readout: str | None = None,
    system: str | None = None,
    today: dt.date | None = None,
) -> ChatFormat:
    """The checkpoint's chat format: the readout asked for (or detected), date pinned if needed.

    `name` names the checkpoint in errors; `today` is the date a date-embedding template is
    pinned to (default: today, UTC).
    """
    template = getattr(tokenizer, "chat_template", None)
    detected = detect_readout(template if isinstance(template, str) else None, model_type)
    profile = get_readout(readout) if readout else detected
    fmt = ChatFormat(profile, detected.name, system)
    if not profile.chat_template or template is None:
        return fmt
    switches = profile.switches
    try:
        first, second = (
            render_template(tokenizer, _CHECK_MESSAGE, system, {**switches, **_date_variables(d)})
            for d in _CHECK_DATES
        )
    except Exception as exc:  # jinja raises many kinds; name the checkpoint and the cause
        raise InputError(
            f"checkpoint {name}: its chat template cannot render a user message"
            f"{' with a system message' if system is not None else ''} ({type(exc).__name__}: "
            f"{exc})"
        ) from exc
    if first == second:
        return fmt
    day = today or dt.datetime.now(dt.UTC).date()
    return ChatFormat(profile, detected.name, system, day)


def ids_digest(groups: Sequence[Sequence[Sequence[int]]]) -> str:
    """A short digest of exact token ids (each prompt of each query, in order)."""
    h = hashlib.sha256()
    for group in groups:
        for ids in group:
            h.update(",".join(str(int(t)) for t in ids).encode("ascii"))
            h.update(b";")
        h.update(b"|")
    return h.hexdigest()[:32]
