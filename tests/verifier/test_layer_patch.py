"""Layer patches: a full fine-tune of the top layers, saved as a whole model folder, shares the
base's trunk pass; its probabilities equal separate full forward passes, and a model changed
anywhere else is refused with the tensor's name."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from eraudit_core.errors import InputError
from eraudit_core.verifier import load_verifier
from eraudit_core.verifier.hf._layer_patch import layer_patch
from eraudit_core.verifier.hf._shared_trunk import SharedTrunkGroup, plan_shared_trunk_group
from tests._tiny_model import build_tiny_checkpoint
from tests.verifier.test_shared_trunk import QUERIES, _adapter, _p

LAYERS = 4


def _full_top(base: Path, out: Path, touched: list[str], seed: int) -> Path:
    """A copy of the tiny model whose named tensors (prefix match) are moved by noise, saved
    the way `eraudit adapt --capacity full-topN` saves an arm (save_pretrained + tokenizer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if any(name.startswith(t) for t in touched):
                p.add_(0.3 * torch.randn(p.shape, generator=gen) * p.abs().mean())
    model.save_pretrained(str(out), safe_serialization=True)
    AutoTokenizer.from_pretrained(base).save_pretrained(str(out))
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "model", layers=LAYERS)


@pytest.fixture(scope="module")
def top2(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("top2") / "arm"
    return _full_top(tiny, root, ["model.layers.2.", "model.layers.3.", "model.norm."], seed=1)


def test_layer_patch_names_what_differs(tiny: Path, top2: Path) -> None:
    base = load_verifier(str(tiny))
    arm = load_verifier(str(top2))
    patch = layer_patch(base._base.model, arm._base.model, arm.name)
    assert patch.layers == {2, 3} and patch.norm and patch.lowest == 2
    assert all(
        t.startswith(("model.layers.2.", "model.layers.3.", "model.norm.")) for t in patch.tensors
    )
    # The base against itself (another copy in memory) changes nothing.
    alone = load_verifier(str(tiny), share_base=False)
    same = layer_patch(base._base.model, alone._base.model, alone.name)
    assert same.layers == frozenset() and not same.norm and same.lowest is None


def test_patched_arms_share_the_trunk_and_equal_full_passes(
    tiny: Path, top2: Path, tmp_path: Path
) -> None:
    """The base, a full-top2 arm and a LoRA arm on layers 2-3 (the debate build's mix) from one
    trunk pass: each equals its own full forward pass to 1e-5, and the arms really move."""
    lora = _adapter(tiny, tmp_path / "lora", [2, 3], seed=5)
    base = load_verifier(str(tiny), batch_size=3)
    arm = load_verifier(str(top2), batch_size=3)
    other = load_verifier(f"{tiny}+{lora}", batch_size=3)
    group = SharedTrunkGroup((base, arm, other), plan_shared_trunk_group((base, arm, other)))
    assert group.split == 2
    outs = group.label_logprobs(QUERIES)
    for v, lp in zip((base, arm, other), outs, strict=True):
        naive = v.label_logprobs(QUERIES, naive=True)  # one prompt at a time, the whole model
        assert float((_p(lp) - _p(naive)).abs().max()) <= 1e-5
        assert torch.allclose(lp, naive, atol=1e-5)
    assert float((_p(outs[1]) - _p(outs[0])).abs().max()) > 1e-3
    # prime() fills every memo; the arm's own score() then reads it without a forward pass.
    for v in (base, arm, other):
        v._memo.clear()
    assert group.prime(QUERIES) == len(QUERIES)
    calls = arm.forward_calls
    got = arm.score(QUERIES)
    assert arm.forward_calls == calls
    for a, b in zip(got, arm.score_naive(QUERIES), strict=True):
        assert abs(a.p_true - b.p_true) <= 1e-5


def test_patch_below_the_split_or_outside_the_layers_is_refused(
    tiny: Path, top2: Path, tmp_path: Path
) -> None:
    base = load_verifier(str(tiny))
    low = load_verifier(str(_full_top(tiny, tmp_path / "low", ["model.layers.1."], seed=2)))
    assert plan_shared_trunk_group((base, low)) == 1
    with pytest.raises(InputError, match="touches decoder layer 1, below .* split 2"):
        plan_shared_trunk_group((base, low), split=2)
    # Negative control: forcing split 2 on it gives answers more than 1e-3 off.
    forced = SharedTrunkGroup((base, low), 2).label_logprobs(QUERIES)[1]
    assert float((_p(forced) - _p(low.label_logprobs(QUERIES))).abs().max()) > 1e-3
    emb = load_verifier(str(_full_top(tiny, tmp_path / "emb", ["model.embed_tokens."], seed=3)))
    with pytest.raises(InputError, match="tensor model.embed_tokens.weight differs"):
        plan_shared_trunk_group((base, emb))


def test_another_architecture_is_refused(tiny: Path, tmp_path: Path) -> None:
    other = build_tiny_checkpoint(tmp_path / "other", layers=LAYERS + 1)
    base = load_verifier(str(tiny))
    with pytest.raises(InputError, match="num_hidden_layers"):
        plan_shared_trunk_group((base, load_verifier(str(other))))
