"""The bundled MiniLM embedder: loaded once, unit vectors, batched cosines that rank sensibly."""

from __future__ import annotations

import numpy as np

from eraudit_core.paraphrase import _embeddings as embeddings


def test_model_is_cached_and_vectors_are_unit_norm() -> None:
    model = embeddings.get_embedding_model()
    assert embeddings.get_embedding_model() is model
    vecs = embeddings.embed(["Why is Jakdane going to Earth?", "A cat sleeps."])
    assert vecs.shape == (2, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert embeddings.embed([]).shape == (0, 384)


def test_cosine_ranks_paraphrase_above_unrelated_text() -> None:
    original = "Why is Jakdane going to Earth?"
    para, other = embeddings.cosine_to_original(
        original, ["For what reason is Jakdane going to Earth?", "The soup needs more salt."]
    )
    assert para > 0.9 and other < 0.3
    assert embeddings.cosine_to_original(original, []) == []
    (same,) = embeddings.cosine_to_original(original, [original])
    assert abs(same - 1.0) < 1e-5
