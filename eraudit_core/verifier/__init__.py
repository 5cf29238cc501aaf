"""Verifier checkpoints: which model answers the binary questions, and how (DESIGN.md §3).

A checkpoint is named by a `CheckpointSpec`; `load_verifier` / `load_pair` return objects that
implement `eraudit_core.types.Verifier`. This package stays light: torch and transformers are
imported only when a model is loaded (`eraudit_core.verifier.hf` is the Hugging Face backend).
"""

from __future__ import annotations

from eraudit_core.verifier._load import (
    load_pair,
    load_verifier,
)
from eraudit_core.verifier._prompts import (
    DEFAULT_LABELS,
    DEFAULT_PREFIX,
    DEFAULT_TEMPLATE,
    check_prompt_format,
    render_messages,
    render_prompts,
)
from eraudit_core.verifier._spec import (
    DEMO_ADAPTERS,
    DEMO_ARMS,
    CheckpointSpec,
)

__all__ = [
    "CheckpointSpec",
    "DEFAULT_LABELS",
    "DEFAULT_PREFIX",
    "DEFAULT_TEMPLATE",
    "DEMO_ADAPTERS",
    "DEMO_ARMS",
    "check_prompt_format",
    "load_pair",
    "load_verifier",
    "render_messages",
    "render_prompts",
]
