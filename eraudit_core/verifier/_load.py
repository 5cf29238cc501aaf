"""Verifier checkpoints: which model answers the binary questions, and how it is asked.

docs/design.md §3. A local checkpoint is named by a `CheckpointSpec` (the demo models, a directory, a
GGUF file, or a base plus a PEFT adapter), a served one by a `ServedSpec` (an OpenAI-compatible
server's URL, model name and a local tokenizer). `load_checkpoint` / `load_pair` take either and
return objects implementing `eraudit_core.types.Verifier`; `load_verifier` is the local backend. This module stays light: torch and transformers are imported only
when a model is actually loaded, so the CLI and the dashboard start fast.

The one place that renders prompts is `render_prompts`; the backend applies the chat template to
its output through the same function, so what the dashboard shows is what the model reads.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, overload

from eraudit_core.errors import InputError
from eraudit_core.verifier._prompts import (
    DEFAULT_LABELS,
    DEFAULT_PREFIX,
    DEFAULT_TEMPLATE,
    check_prompt_format,
)
from eraudit_core.verifier._spec import CheckpointSpec, as_spec
from eraudit_core.verifier.served._spec import ServedSpec, is_served, parse_spec

if TYPE_CHECKING:
    from typing import TypeAlias

    from eraudit_core.verifier.hf import HFVerifier
    from eraudit_core.verifier.served._replicas import ServedReplicas
    from eraudit_core.verifier.served._verifier import ServedVerifier

    Served: TypeAlias = ServedVerifier | ServedReplicas


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
    readout: str | None = None,
    system: str | None = None,
    today: dt.date | None = None,
) -> HFVerifier:
    """Load (once per process) a local Hugging Face checkpoint as a label-softmax verifier.

    device/dtype default to CUDA + bfloat16 when a GPU is present, CPU + float32 otherwise.
    Verifiers whose specs share a base model share one copy of it in memory (adapters are
    switched per call) unless `share_base=False`. `readout` names the readout profile (default:
    the spec's `;readout=`, else detected from the chat template); `system` is a system
    message put before the question; `today` the date a date-embedding chat template is pinned
    to (default: today).
    """
    from eraudit_core.verifier import hf

    if isinstance(spec, str) and is_served(spec):
        raise InputError(
            f"checkpoint {spec!r}: a served checkpoint; load it with load_checkpoint (this "
            "function loads local models)"
        )
    check_prompt_format(template, prefix, labels)
    if batch_size < 1:
        raise InputError(f"batch_size: must be at least 1, got {batch_size}")
    return hf.load(
        as_spec(spec),
        device=device,
        dtype=dtype,
        trust_remote_code=trust_remote_code,
        template=template,
        prefix=prefix,
        labels=labels,
        batch_size=batch_size,
        share_base=share_base,
        readout=readout,
        system=system,
        today=today,
    )


@overload
def load_checkpoint(spec: CheckpointSpec, **kwargs: Any) -> HFVerifier: ...
@overload
def load_checkpoint(spec: ServedSpec, **kwargs: Any) -> Served: ...
@overload
def load_checkpoint(spec: str, **kwargs: Any) -> HFVerifier | Served: ...
def load_checkpoint(spec: CheckpointSpec | ServedSpec | str, **kwargs: Any) -> HFVerifier | Served:
    """Any checkpoint spec, local or served, as a verifier (one way in for the CLI, the
    dashboard and runs). A served checkpoint takes template/prefix/labels, readout/system and
    trust_remote_code (for its tokenizer); device, dtype, batch_size and share_base concern
    local models only and are ignored for it."""
    parsed = parse_spec(spec)
    if isinstance(parsed, CheckpointSpec):
        return load_verifier(parsed, **kwargs)
    from eraudit_core.verifier.served._verifier import load_served

    template = kwargs.get("template", DEFAULT_TEMPLATE)
    prefix = kwargs.get("prefix", DEFAULT_PREFIX)
    labels = tuple(kwargs.get("labels", DEFAULT_LABELS))
    check_prompt_format(template, prefix, labels)  # type: ignore[arg-type]
    replicas = [
        load_served(
            parsed.with_options(base_url=url),
            template=template,
            prefix=prefix,
            labels=labels,  # type: ignore[arg-type]
            trust_remote_code=bool(kwargs.get("trust_remote_code", False)),
            readout=kwargs.get("readout"),
            system=kwargs.get("system"),
            today=kwargs.get("today"),
        )
        for url in parsed.replicas
    ]
    if len(replicas) == 1:
        return replicas[0]
    from eraudit_core.verifier.served._replicas import ServedReplicas

    served = ServedReplicas(parsed.text, replicas)
    served.check_same_weights()
    return served


def load_pair(
    pre_spec: CheckpointSpec | ServedSpec | str,
    post_spec: CheckpointSpec | ServedSpec | str,
    **kwargs: Any,
) -> tuple[HFVerifier | Served, HFVerifier | Served]:
    """The pre- and post-adaptation verifiers (local or served; they may be on different
    servers); one base model in memory when two local ones share it."""
    pre = load_checkpoint(parse_spec(pre_spec), **kwargs)
    post = load_checkpoint(parse_spec(post_spec), **kwargs)
    return pre, post
