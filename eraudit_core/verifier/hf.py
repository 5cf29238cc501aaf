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
from eraudit_core.verifier._hf_verifier import HFVerifier, load
from eraudit_core.verifier._kernels import (
    fast_label_logprobs,
    naive_label_logprobs,
    scores_from_logprobs,
)
from eraudit_core.verifier._shared_trunk import (
    SharedTrunk,
    SharedTrunkGroup,
    decoder,
    layers_only,
    plan_shared_trunk,
    plan_shared_trunk_group,
    shared_trunk_label_logprobs,
    trunk_states,
    try_shared_trunk,
    upper_layers_only,
)

__all__ = [
    "HFVerifier",
    "SharedTrunk",
    "SharedTrunkGroup",
    "LoadedBase",
    "decoder",
    "demo_gguf_path",
    "fast_label_logprobs",
    "file_digest",
    "gguf_to_safetensors",
    "layers_only",
    "load",
    "loaded_bases",
    "naive_label_logprobs",
    "plan_shared_trunk",
    "plan_shared_trunk_group",
    "resolve_device_dtype",
    "scores_from_logprobs",
    "shared_trunk_label_logprobs",
    "trunk_states",
    "try_shared_trunk",
    "upper_layers_only",
]
