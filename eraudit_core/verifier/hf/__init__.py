"""The local Hugging Face backend (importing this package imports torch and transformers).

Public for code that works with the backend itself (adaptation, benchmarks, tests): loading,
the fast and naive label log-probabilities, and the checkpoint-file helpers.

One module a concern: `_models` (one loaded copy of each base model), `_verifier` (`HFVerifier`
and `load`), `_shared_trunk` (scoring several arms over one shared lower trunk), `_layer_patch`
(an arm folder read as a patch of the base's upper layers) and `_decoder_parts` (the decoder's
layers and norm, named per architecture). The tokenizer, chat format, checkpoint files and
label kernels live one level up, because the served backend reads them too.
"""

from __future__ import annotations

from eraudit_core.paths import demo_gguf_path
from eraudit_core.verifier._hf_files import (
    file_digest,
    gguf_to_safetensors,
    resolve_device_dtype,
)
from eraudit_core.verifier._kernels import (
    fast_label_logprobs,
    naive_label_logprobs,
    scores_from_logprobs,
)
from eraudit_core.verifier.hf._models import LoadedBase, loaded_bases
from eraudit_core.verifier.hf._shared_trunk import (
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
from eraudit_core.verifier.hf._verifier import HFVerifier, load

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
