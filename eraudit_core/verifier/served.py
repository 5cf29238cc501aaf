"""The served backend (importing this module imports transformers' tokenizers and torch).

Public for code that works with the backend itself (benchmarks, tests, the dashboard's check
button): the verifier class, its loader and the tolerances it applies.
"""

from __future__ import annotations

from eraudit_core.verifier._served import (
    ALIGNMENT_TOLERANCE_NATS,
    PROBE_TOLERANCE_NATS,
    ServedVerifier,
    load_served,
)
from eraudit_core.verifier._tokenizer import LocalTokenizer, load_tokenizer

__all__ = [
    "ALIGNMENT_TOLERANCE_NATS",
    "LocalTokenizer",
    "PROBE_TOLERANCE_NATS",
    "ServedVerifier",
    "load_served",
    "load_tokenizer",
]
