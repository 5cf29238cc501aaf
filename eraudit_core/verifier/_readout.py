"""Readout profiles: where in a model family's own chat format the answer label is read.

docs/design.md §3. Reading " A" / " B" right after a chat template's generation prompt works for
plain chat models, but not for every family. The ER-Audit reference code reads each family at
its own answer slot and says why (CSIRO-CQS-AI-alignment-Team/Epistemic-Reliability-Auditor):
`adversarial_transcript/score_verifier-oss.py` and `audit-stage1.py` prefill gpt-oss's Harmony
final channel, `<|start|>assistant` + `<|channel|>final<|message|>Answer:`, because after
`<|start|>assistant` gpt-oss writes a channel marker and the labels get tail probabilities
(about e^-37), so the two-way softmax "degenerates to a letter prior";
`score_verifier-qwen.py` closes an empty think block (`<think>\\n\\n</think>\\n\\nAnswer:`) because
Qwen3's thinking templates open one; `score_verifier-llama3.py` reads Llama 3.1 at its native
answer prefill (the assistant header, then `Answer:`).

A profile is a small declarative record: whether the chat template is applied, the template
switches passed to it (thinking off), the text placed between the generation prompt and the
answer prefix (`prefill`), and the markers that recognise the family's template. The answer
prefix (`Answer:`) and the labels stay the verifier's own settings. `detect_readout` looks at
the chat template first and at the config's `model_type` only when no marker decides (SmolLM2
is `model_type: llama` but speaks ChatML, so it resolves to `chat-answer`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from eraudit_core.errors import InputError


@dataclass(frozen=True)
class ReadoutProfile:
    """One family's answer slot: chat template or not, template switches, prefill, markers."""

    name: str
    summary: str
    chat_template: bool = True
    template_switches: tuple[tuple[str, Any], ...] = ()
    prefill: str = ""
    markers: tuple[str, ...] = ()
    model_types: tuple[str, ...] = ()

    @property
    def switches(self) -> dict[str, Any]:
        return dict(self.template_switches)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "summary": self.summary,
            "chat_template": self.chat_template,
            "template_switches": self.switches,
            "prefill": self.prefill,
        }


EMPTY_THINK = "<think>\n\n</think>\n\n"

# Detection order matters: Harmony before ChatML-like markers, a think block before ChatML.
PROFILES: dict[str, ReadoutProfile] = {
    p.name: p
    for p in (
        ReadoutProfile(
            "harmony-final",
            "gpt-oss (Harmony): the final channel opened, then the answer prefix",
            prefill="<|channel|>final<|message|>",
            markers=("<|channel|>", "<|start|>assistant"),
            model_types=("gpt_oss",),
        ),
        ReadoutProfile(
            "qwen-think-off",
            "Qwen3 / Qwen3.5 thinking templates: thinking off and an empty think block closed",
            template_switches=(("enable_thinking", False),),
            prefill=EMPTY_THINK,
            markers=("<think>",),
            model_types=("qwen3", "qwen3_moe", "qwen3_5", "qwen3_next"),
        ),
        ReadoutProfile(
            "llama3-answer",
            "Llama 3 / 3.1 headers: the assistant header, then the answer prefix",
            markers=("<|start_header_id|>",),
            model_types=(),  # model_type llama also covers SmolLM2 (ChatML): markers decide
        ),
        ReadoutProfile(
            "gemma-answer",
            "Gemma turns: the model turn opened, then the answer prefix",
            markers=("<start_of_turn>",),
            model_types=("gemma", "gemma2", "gemma3", "gemma3_text"),
        ),
        ReadoutProfile(
            "chat-answer",
            "any other chat template (ChatML and the like): generation prompt, answer prefix",
            markers=("<|im_start|>",),
        ),
        ReadoutProfile(
            "plain",
            "no chat template: the prompt text, a newline, then the answer prefix",
            chat_template=False,
            prefill="\n",
        ),
    )
}
DEFAULT_READOUT = "chat-answer"


def get_readout(name: str) -> ReadoutProfile:
    """The profile called `name` (InputError listing the known ones otherwise)."""
    try:
        return PROFILES[name]
    except KeyError:
        raise InputError(
            f"readout {name!r}: unknown; use one of {', '.join(PROFILES)} (`eraudit readouts`)"
        ) from None


def detect_readout(chat_template: str | None, model_type: str | None = None) -> ReadoutProfile:
    """The profile for a checkpoint: its chat template's markers first, `model_type` second.

    No chat template means `plain`. A template whose markers name no family falls back on the
    config's `model_type`, then on `chat-answer`.
    """
    if not chat_template:
        return PROFILES["plain"]
    for profile in PROFILES.values():
        if any(m in chat_template for m in profile.markers):
            return profile
    for profile in PROFILES.values():
        if model_type and model_type in profile.model_types:
            return profile
    return PROFILES[DEFAULT_READOUT]


def complete_prefill(rendered: str, prefill: str) -> str:
    """`rendered` followed by whatever part of `prefill` it does not already end with.

    Qwen3's template renders the empty think block itself when thinking is off; a template
    that opens `<think>\\n` at the generation prompt gets only the rest; one that ignores the
    switch gets all of it. So the text read is the same whichever template version it is.
    """
    for n in range(min(len(prefill), len(rendered)), 0, -1):
        if rendered.endswith(prefill[:n]):
            return rendered + prefill[n:]
    return rendered + prefill


def readout_table() -> list[Mapping[str, Any]]:
    """Every profile as a row, for `eraudit readouts` and the Setup page."""
    return [
        {
            "name": p.name,
            "summary": p.summary,
            "prefill": p.prefill,
            "template_switches": p.switches,
            "detected_by": list(p.markers) + [f"model_type={t}" for t in p.model_types],
        }
        for p in PROFILES.values()
    ]
