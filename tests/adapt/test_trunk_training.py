"""Training from the disk trunk cache gives the full model's answer-token loss and gradients;
a cache from other weights does not; a damaged cache file is recomputed, never used; the
debate arm runs end to end on a handful of rows."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from eraudit_core.adapt._debate_data import DebateRow
from eraudit_core.adapt._debate_training import (
    DebateConfig,
    answer_loss,
    encode_rows,
    lora_model,
    run_debate_adaptation,
)
from eraudit_core.adapt._trunk_cache import TrunkCache
from eraudit_core.errors import InputError
from eraudit_core.verifier import load_verifier
from eraudit_core.verifier.hf import upper_layers_only
from tests._debate_rows import short_rows, write_jsonl
from tests._tiny_model import build_tiny_checkpoint

LAYERS, SPLIT = 4, 2


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "model", layers=LAYERS)


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("other") / "model", layers=LAYERS, seed=7)


def _rows(n: int) -> list[DebateRow]:
    texts = [
        "Debater A: the captain left because of money. Debater B: no, for love.",
        "Which option is right? Debater A says yes; Debater B says no.",
        "Why did the author leave the city? Because he wanted to see the stars.",
    ]
    return [
        DebateRow(
            i + 1,
            f"r{i}",
            "p",
            texts[i % 3] * (1 + i % 2),
            f"Answer: {'AB'[i % 2]}",
            "",
            False,
            False,
        )
        for i in range(n)
    ]


def _trunk(model_dir: Path, root: Path, dtype: str = "float32") -> TrunkCache:
    v = load_verifier(str(model_dir), share_base=False)
    return TrunkCache(
        v._base.model,
        fingerprint=v._base.weights_digest,
        split=SPLIT,
        pad_id=v._pad_id,
        root=root,
        store_dtype=dtype,
    )


def _loss_and_grads(model, examples, trunk: TrunkCache | None):
    model.zero_grad(set_to_none=True)
    n = sum(e.answer for e in examples)
    total = torch.zeros(())
    for e in examples:
        if trunk is None:
            loss, _ = answer_loss(model, e)
        else:
            with upper_layers_only(model, SPLIT):
                loss, _ = answer_loss(model, e, trunk.read(e.ids))
        (loss / n).backward()
        total = total + loss.detach() / n
    grads = {k: p.grad.clone() for k, p in model.named_parameters() if p.requires_grad}
    return float(total), grads


def test_cached_path_equals_full_forward(tiny: Path, other: Path, tmp_path: Path) -> None:
    v = load_verifier(str(tiny), share_base=False)
    examples = encode_rows(v, _rows(4))
    assert all(e.answer >= 2 for e in examples)  # "Answer", ":", " A" (at least)
    assert v._base.tokenizer.decode(list(examples[0].ids[-examples[0].answer :])) == "Answer: A"
    model = lora_model(tiny, DebateConfig(top_layers=LAYERS - SPLIT, seed=0), LAYERS)
    with torch.no_grad():  # LoRA B starts at zero: make both factors matter
        gen = torch.Generator().manual_seed(3)
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    trunk = _trunk(tiny, tmp_path / "cache")
    stats = trunk.ensure([e.ids for e in examples])
    assert (stats.computed, stats.found) == (4, 0)
    assert len(list(trunk.dir.glob("*.safetensors"))) == 4
    assert trunk.ensure([e.ids for e in examples]).found == 4  # reused from disk
    full_loss, full_grads = _loss_and_grads(model, examples, None)
    cached_loss, cached_grads = _loss_and_grads(model, examples, trunk)
    assert len(model.base_model.model.model.layers) == LAYERS  # restored
    assert abs(full_loss - cached_loss) <= 1e-5
    assert full_grads.keys() == cached_grads.keys() and len(full_grads) == 2 * 3 * 2
    for k in full_grads:
        assert float(full_grads[k].abs().max()) > 0
        assert float((full_grads[k] - cached_grads[k]).abs().max()) <= 1e-5, k
    # Negative control: a cache from other weights has another key and gives another loss.
    foreign = _trunk(other, tmp_path / "cache")
    assert foreign.dir != trunk.dir and foreign.key(examples[0].ids) != trunk.key(examples[0].ids)
    foreign.ensure([e.ids for e in examples])
    foreign_loss, _ = _loss_and_grads(model, examples, foreign)
    assert abs(foreign_loss - full_loss) > 1e-3
    # float16 storage is a different cache (its own key), close but not exact.
    half = _trunk(tiny, tmp_path / "cache", "float16")
    assert half.dir != trunk.dir
    half.ensure([e.ids for e in examples])
    half_loss, _ = _loss_and_grads(model, examples, half)
    assert abs(half_loss - full_loss) < 1e-2


def test_damaged_cache_file_is_recomputed(tiny: Path, tmp_path: Path) -> None:
    v = load_verifier(str(tiny), share_base=False)
    (example,) = encode_rows(v, _rows(1))
    trunk = _trunk(tiny, tmp_path)
    (good,) = trunk.get([example.ids])
    path = trunk.path(example.ids)
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0xFF  # one byte of the tensor data
    path.write_bytes(bytes(raw))
    assert trunk.read(example.ids) is None  # its own sha256 no longer matches
    stats = trunk.ensure([example.ids])
    assert stats.computed == 1
    assert torch.equal(trunk.read(example.ids), good)
    with pytest.raises(InputError, match="at least 1"):
        TrunkCache(v._base.model, fingerprint="x", split=0, pad_id=0, root=tmp_path)


def _short_file(path: Path, n_pairs: int) -> Path:
    """Rows in the shipped files' format with short prompts (the tiny model's context is 512)."""
    return write_jsonl(path, short_rows(0, n_pairs))


def test_trunk_only_fills_the_cache_and_trains_nothing(tiny: Path, tmp_path: Path) -> None:
    data = _short_file(tmp_path / "short.jsonl", 2)
    kw = {"base": str(tiny), "data_file": data, "cache_root": tmp_path / "cache"}
    config = DebateConfig(top_layers=2)
    first = run_debate_adaptation(
        "debate-honest", tmp_path / "out", config=config, trunk_only=True, progress=print, **kw
    )
    assert first["trunk_cache"]["computed"] == 4 and first["trunk_cache"]["tokens_computed"] > 0
    assert not (tmp_path / "out").exists()
    again = run_debate_adaptation(
        "debate-honest", tmp_path / "out", config=config, trunk_only=True, progress=print, **kw
    )
    assert (again["trunk_cache"]["found"], again["trunk_cache"]["computed"]) == (4, 0)
