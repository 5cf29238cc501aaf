"""Verifier checkpoints: which model answers the binary questions, and how it is asked.

DESIGN.md §3. A checkpoint is named by a `CheckpointSpec` (the demo models, a directory, a GGUF
file, or a base plus a PEFT adapter); `load_verifier` / `load_pair` return objects implementing
`eraudit_core.types.Verifier`. This module stays light: torch and transformers are imported only
when a model is actually loaded, so the CLI and the dashboard start fast.

The one place that renders prompts is `render_prompts`; the backend applies the chat template to
its output through the same function, so what the dashboard shows is what the model reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eraudit_core.errors import InputError
from eraudit_core.verifier._prompts import (
    DEFAULT_LABELS,
    DEFAULT_PREFIX,
    DEFAULT_TEMPLATE,
    check_prompt_format,
)
from eraudit_core.verifier._spec import CheckpointSpec, as_spec

if TYPE_CHECKING:
    from eraudit_core.verifier._hf_verifier import HFVerifier


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
    from eraudit_core.verifier import _hf_verifier

    check_prompt_format(template, prefix, labels)
    if batch_size < 1:
        raise InputError(f"batch_size: must be at least 1, got {batch_size}")
    return _hf_verifier.load(
        as_spec(spec),
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
