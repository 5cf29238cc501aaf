"""Tiny checkpoints of four real architectures (gpt-oss, Qwen3, Llama, Gemma 3), offline.

Why: the readout profiles must be checked on each family's own chat format, special tokens and
model code, and the real checkpoints are gigabytes. Each tiny model is built from the family's
transformers config class, with a BPE tokenizer that carries the family's special tokens and a
chat template written here from the format facts of the model cards (gpt-oss: Harmony, with
"Current date:" from strftime_now; Qwen3: ChatML with an empty think block when thinking is off;
Llama 3.1: headers, with "Today Date:" from date_string / strftime_now; Gemma 3: turns, system
text folded into the first user turn).

The weights are random; then the output head alone is trained for a second on the probe
questions (a logistic regression on the random body's hidden states), so that the model
answers at its family's answer slot, as the real models do: after the Harmony final channel,
after a closed think block, after the assistant header / model turn and `Answer:`. At the one
slot a reader might use for every model (generation prompt + `Answer:`) the Harmony and Qwen
models are trained to open markdown bold (" **", which the reference code's prefix sweep notes
for Qwen3 and Gemma) instead of a label, so reading there is a wrong slot with low label mass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

HARMONY_TEMPLATE = (
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\n"
    'Current date: {{ strftime_now("%Y-%m-%d") }}\n\n'
    "Reasoning: medium\n\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every "
    "message.<|end|>"
    "{%- for m in messages %}"
    "{%- if m['role'] == 'system' %}"
    "<|start|>developer<|message|># Instructions\n\n{{ m['content'] }}<|end|>"
    "{%- else %}<|start|>{{ m['role'] }}<|message|>{{ m['content'] }}<|end|>{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|start|>assistant{%- endif %}"
)
QWEN3_TEMPLATE = (
    "{%- for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}"
    "<think>\n\n</think>\n\n{% endif %}{%- endif %}"
)
# Qwen3.5-style: the generation prompt opens a think block whatever the switch says.
QWEN35_TEMPLATE = (
    "{%- for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
)
LLAMA31_TEMPLATE = (
    "{{- bos_token }}"
    "{%- if not date_string is defined %}{%- if strftime_now is defined %}"
    '{%- set date_string = strftime_now("%d %b %Y") %}'
    '{%- else %}{%- set date_string = "26 Jul 2024" %}{%- endif %}{%- endif %}'
    "{%- if messages[0]['role'] == 'system' %}{%- set system = messages[0]['content'] %}"
    "{%- set messages = messages[1:] %}{%- else %}{%- set system = '' %}{%- endif %}"
    "<|start_header_id|>system<|end_header_id|>\n\n"
    "Cutting Knowledge Date: December 2023\nToday Date: {{ date_string }}\n\n"
    "{{ system }}<|eot_id|>"
    "{%- for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{{ m['content'] }}<|eot_id|>{% endfor %}"
    "{%- if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n"
    "{% endif %}"
)
GEMMA3_TEMPLATE = (
    "{{- bos_token }}"
    "{%- if messages[0]['role'] == 'system' %}"
    "{%- set first = messages[0]['content'] + '\n\n' %}{%- set messages = messages[1:] %}"
    "{%- else %}{%- set first = '' %}{%- endif %}"
    "{%- for m in messages %}"
    "<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{{ (first if loop.first else '') + m['content'] }}<end_of_turn>\n"
    "{% endfor %}"
    "{%- if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


@dataclass(frozen=True)
class Family:
    """One family: its template, special tokens, config and where it answers."""

    name: str
    readout: str  # the profile that reads it right
    template: str
    specials: tuple[str, ...]
    bos: str | None
    eos: str  # ends an answer
    model_type: str
    # answer prefill the family writes itself before `Answer:`
    answer_slot: str
    # at generation prompt + `Answer:` (the old default slot) the model opens bold instead
    bold_at_default_slot: bool


FAMILIES = {
    f.name: f
    for f in (
        Family(
            "gpt-oss",
            "harmony-final",
            HARMONY_TEMPLATE,
            ("<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|endoftext|>"),
            None,
            "<|return|>",
            "gpt_oss",
            "<|channel|>final<|message|>",
            True,
        ),
        Family(
            "qwen3",
            "qwen-think-off",
            QWEN3_TEMPLATE,
            ("<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|endoftext|>"),
            None,
            "<|im_end|>",
            "qwen3",
            "<think>\n\n</think>\n\n",
            True,
        ),
        Family(
            "llama3",
            "llama3-answer",
            LLAMA31_TEMPLATE,
            (
                "<|begin_of_text|>",
                "<|start_header_id|>",
                "<|end_header_id|>",
                "<|eot_id|>",
                "<|end_of_text|>",
            ),
            "<|begin_of_text|>",
            "<|eot_id|>",
            "llama",
            "",
            False,
        ),
        Family(
            "gemma3",
            "gemma-answer",
            GEMMA3_TEMPLATE,
            ("<bos>", "<start_of_turn>", "<end_of_turn>", "<eos>", "<pad>"),
            "<bos>",
            "<end_of_turn>",
            "gemma3_text",
            "",
            False,
        ),
    )
}


def _config(family: Family, vocab: int, pad: int) -> Any:
    common: dict[str, Any] = dict(
        vocab_size=vocab,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=1024,
        pad_token_id=pad,
        tie_word_embeddings=False,
    )
    if family.model_type == "gpt_oss":
        from transformers import GptOssConfig

        return GptOssConfig(
            intermediate_size=64, num_local_experts=4, num_experts_per_tok=2, **common
        )
    if family.model_type == "qwen3":
        from transformers import Qwen3Config

        return Qwen3Config(intermediate_size=128, **common)
    if family.model_type == "gemma3_text":
        from transformers import Gemma3TextConfig

        return Gemma3TextConfig(
            intermediate_size=128, sliding_window=512, final_logit_softcapping=None, **common
        )
    from transformers import LlamaConfig

    return LlamaConfig(intermediate_size=128, **common)


def build_family_tokenizer(family: Family, directory: Path, corpus: list[str]) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=list(family.specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus * 5, trainer)
    pad = next(s for s in family.specials if s in ("<|endoftext|>", "<|end_of_text|>", "<pad>"))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=family.eos, pad_token=pad, bos_token=family.bos
    )
    fast.chat_template = family.template
    fast.save_pretrained(directory)
    for label in (" A", " B", " **"):
        assert len(fast(label, add_special_tokens=False).input_ids) == 1, (family.name, label)
    return fast


def render(family: Family, tok: Any, message: str, slot: str) -> str:
    """The family's prompt for `message` up to `Answer:`, at its answer slot or the old one."""
    kwargs = {"enable_thinking": False} if family.name == "qwen3" and slot == "right" else {}
    text = tok.apply_chat_template(
        [{"role": "user", "content": message}],
        tokenize=False,
        add_generation_prompt=True,
        strftime_now=lambda fmt: "2026-12-01",
        **kwargs,
    )
    if slot == "right" and not text.endswith(family.answer_slot):
        text += family.answer_slot
    return text + "Answer:"


def build_family_checkpoint(name: str, directory: Path, *, steps: int = 300) -> Path:
    """Save the tiny `name` model (safetensors + tokenizer + template), trained to answer the
    probe questions at its family's slot (see the module docstring)."""
    import torch
    from transformers import AutoModelForCausalLM

    from eraudit_core.verifier import DEFAULT_TEMPLATE, PROBE_SET, render_messages

    family = FAMILIES[name]
    directory.mkdir(parents=True, exist_ok=True)
    messages: list[tuple[str, str]] = []
    for q in PROBE_SET:
        ab, ba = render_messages(q, DEFAULT_TEMPLATE)
        messages += [(ab, " A"), (ba, " B")]
    # a first tokenizer, to render the corpus the real one is trained on
    from transformers import PreTrainedTokenizerFast

    scratch = PreTrainedTokenizerFast(
        tokenizer_object=_char_tokenizer(family), eos_token=family.eos, bos_token=family.bos
    )
    scratch.chat_template = family.template
    texts: list[str] = []
    for message, label in messages:
        texts.append(render(family, scratch, message, "right") + label + family.eos)
        if family.bold_at_default_slot:
            texts.append(render(family, scratch, message, "default") + " **" + family.eos)
    corpus = texts + [" A B ** Answer: A Answer: B Answer: **"] * 10
    tok = build_family_tokenizer(family, directory, corpus)
    ids = [tok(t, add_special_tokens=False).input_ids for t in texts]
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(_config(family, len(tok), tok.pad_token_id))
    model.eval()
    width = max(len(x) for x in ids)
    batch = torch.full((len(ids), width), tok.pad_token_id)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, x in enumerate(ids):
        batch[i, : len(x)] = torch.tensor(x)
        mask[i, : len(x)] = 1
    # Only the output head is trained, on the random body's final hidden states (a logistic
    # regression: seconds, where training the whole model takes minutes on a shared CPU).
    with torch.no_grad():
        hidden = model.model(input_ids=batch, attention_mask=mask).last_hidden_state
    keep = mask[:, 1:] == 1
    features, targets = hidden[:, :-1][keep], batch[:, 1:][keep]
    head = model.lm_head.weight
    optimiser = torch.optim.Adam([head], lr=0.05)
    for _ in range(steps):
        optimiser.zero_grad()
        loss = torch.nn.functional.cross_entropy(features @ head.T, targets)
        loss.backward()
        optimiser.step()
    model.save_pretrained(directory, safe_serialization=True)
    return directory


def _char_tokenizer(family: Family) -> Any:
    """A throwaway byte-level tokenizer with the family's special tokens (for rendering)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.add_special_tokens(list(family.specials))
    return tok
