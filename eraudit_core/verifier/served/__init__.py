"""The served backend: checkpoints behind an OpenAI-compatible server (docs/served.md).

Public for code that works with the backend itself (benchmarks, tests, the dashboard's check
button): the verifier class, its loader and the tolerances it applies. The spec names
(`ServedSpec`, `is_served`, `parse_spec`) are light; the others import transformers'
tokenizers and torch, so they are loaded on first use (`eraudit_core.verifier` imports this
package for the spec and stays light).

One module a concern: `_spec` (the spec string), `_wire` (request bodies and reading one
answer), `_batching` (several prompts a request, many requests in flight), `_checks` (the
server's tokenization against the local tokenizer), `_handshake` (client, prompts, connect and
the probe), `_verifier` (`ServedVerifier`: identity, scoring, `load_served`) and `_replicas`
(several servers of one model as one verifier).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from eraudit_core.verifier.served._spec import ServedSpec, is_served, parse_spec

if TYPE_CHECKING:
    from eraudit_core.verifier._tokenizer import LocalTokenizer, load_tokenizer
    from eraudit_core.verifier.served._handshake import (
        ALIGNMENT_TOLERANCE_NATS,
        PROBE_TOLERANCE_NATS,
    )
    from eraudit_core.verifier.served._replicas import ServedReplicas
    from eraudit_core.verifier.served._verifier import ServedVerifier, load_served

# name -> the module it is loaded from on first use (they import torch)
_LAZY = {
    "ALIGNMENT_TOLERANCE_NATS": "eraudit_core.verifier.served._handshake",
    "PROBE_TOLERANCE_NATS": "eraudit_core.verifier.served._handshake",
    "LocalTokenizer": "eraudit_core.verifier._tokenizer",
    "ServedReplicas": "eraudit_core.verifier.served._replicas",
    "ServedVerifier": "eraudit_core.verifier.served._verifier",
    "load_served": "eraudit_core.verifier.served._verifier",
    "load_tokenizer": "eraudit_core.verifier._tokenizer",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ALIGNMENT_TOLERANCE_NATS",
    "LocalTokenizer",
    "PROBE_TOLERANCE_NATS",
    "ServedReplicas",
    "ServedSpec",
    "ServedVerifier",
    "is_served",
    "load_served",
    "load_tokenizer",
    "parse_spec",
]
