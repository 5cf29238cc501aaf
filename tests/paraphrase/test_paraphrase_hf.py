"""The local Hugging Face generator: cheap checks by default, the real demo model when slow."""

from __future__ import annotations

from pathlib import Path

import pytest

from eraudit_core.errors import InputError
from eraudit_core.paraphrase import create_generator, filter_paraphrases
from eraudit_core.paraphrase._hf import WEAK_MODEL_WARNING, demo_model_location
from eraudit_core.types import BinaryQuestion


def test_demo_model_is_found_in_the_wheel_without_importing_it() -> None:
    directory, gguf = demo_model_location()
    assert (Path(directory) / gguf).is_file() and gguf.endswith(".gguf")
    assert "weak" in WEAK_MODEL_WARNING


def test_bad_model_path_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a directory"):
        create_generator("hf", model_path=str(tmp_path / "missing"))
    gen = create_generator("hf", name="hf-demo", seed=4)
    assert gen.settings()["seed"] == 4 and gen.settings()["gguf_file"].endswith(".gguf")


@pytest.mark.slow
def test_demo_model_generates_candidates_that_the_filter_judges() -> None:
    hidden = BinaryQuestion("Why does Martin prefer to live on the yacht?", "Isolation", "Safety")
    gen = create_generator("hf", batch_size=3, max_new_tokens=80, max_calls=1)
    cands = gen.generate("p", hidden.question, 3)
    assert cands and all(isinstance(c, str) and c for c in cands)
    res = filter_paraphrases("p", hidden, cands, gen.name)
    assert len(res.accepted) + len(res.rejected) == len(cands)
