"""The local Hugging Face backend (importing this module imports torch and transformers).

Public for code that works with the backend itself (adaptation, benchmarks, tests): loading,
the fast and naive label log-probabilities, and the checkpoint-file helpers.
"""

from __future__ import annotations

from eraudit_core.paths import demo_gguf_path
from eraudit_core.verifier._hf_files import (
    file_digest,
    gguf_to_safetensors,
    resolve_device_dtype,
)
from eraudit_core.verifier._hf_models import LoadedBase, loaded_bases
from eraudit_core.verifier._hf_verifier import (
    HFVerifier,
    fast_label_logprobs,
    load,
    naive_label_logprobs,
    scores_from_logprobs,
)

__all__ = [
    "HFVerifier",
    "LoadedBase",
    "demo_gguf_path",
    "fast_label_logprobs",
    "file_digest",
    "gguf_to_safetensors",
    "load",
    "loaded_bases",
    "naive_label_logprobs",
    "resolve_device_dtype",
    "scores_from_logprobs",
]
