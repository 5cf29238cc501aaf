"""On the real demo model (SmolLM2-135M, 30 layers, L = 26): training from the trunk cache gives
the full model's answer-token loss and gradients on real debate rows, and pre/post scoring of
the shipped top-layer adapter from one trunk pass equals separate scoring."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from eraudit_core.adapt._debate_data import bundled_debate_file, read_debate_file
from eraudit_core.adapt._debate_training import DebateConfig, answer_loss, encode_rows, lora_model
from eraudit_core.adapt._trunk_cache import TrunkCache
from eraudit_core.types import Query
from eraudit_core.verifier import load_verifier
from eraudit_core.verifier.hf import plan_shared_trunk, upper_layers_only

pytestmark = pytest.mark.slow


def test_demo_model_cached_training_equals_full(tmp_path: Path) -> None:
    base = load_verifier("demo:base", device="cpu", dtype="float32")
    rows = read_debate_file(bundled_debate_file("debate-adversarial")).rows[:2]
    examples = encode_rows(base, rows)
    assert all(e.answer == 3 for e in examples)  # "Answer", ":", " A|B"
    n_layers = int(base._base.model.config.num_hidden_layers)
    assert n_layers == 30
    model = lora_model(base._base.model_dir, DebateConfig(), n_layers)
    with torch.no_grad():
        gen = torch.Generator().manual_seed(0)
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.01)
    trunk = TrunkCache(
        base._base.model,
        fingerprint=base._base.weights_digest,
        split=26,
        pad_id=base._pad_id,
        root=tmp_path,
    )
    trunk.ensure([e.ids for e in examples])

    def loss_and_grads(cached: bool) -> tuple[float, dict[str, torch.Tensor]]:
        model.zero_grad(set_to_none=True)
        n = sum(e.answer for e in examples)
        total = 0.0
        for e in examples:
            if cached:
                with upper_layers_only(model, 26):
                    loss, _ = answer_loss(model, e, trunk.read(e.ids))
            else:
                loss, _ = answer_loss(model, e)
            (loss / n).backward()
            total += float(loss.detach()) / n
        return total, {k: p.grad.clone() for k, p in model.named_parameters() if p.requires_grad}

    full, g_full = loss_and_grads(False)
    cached, g_cached = loss_and_grads(True)
    assert abs(full - cached) <= 1e-5
    for k in g_full:
        assert float((g_full[k] - g_cached[k]).abs().max()) <= 1e-5, k


def test_demo_shared_trunk_scoring_equals_separate() -> None:
    pre = load_verifier("demo:base", device="cpu", dtype="float32")
    post = load_verifier("demo:honest", device="cpu", dtype="float32")
    plan = plan_shared_trunk(pre, post)
    assert plan.split == 26  # the shipped honest arm is LoRA on layers 26-29
    queries = [
        Query("a", "Why does the narrator leave the ship?", "He is afraid.", "He is bored."),
        Query("b", "What is the captain's plan?", "To land the ship.", "To fly home."),
    ]
    shared_pre, shared_post = plan.label_logprobs(queries)
    for lp, v in ((shared_pre, pre), (shared_post, post)):
        sep = v.label_logprobs(queries)
        p_sh = (torch.softmax(lp[:, 0], -1)[:, 0] + torch.softmax(lp[:, 1], -1)[:, 1]) / 2
        p_sep = (torch.softmax(sep[:, 0], -1)[:, 0] + torch.softmax(sep[:, 1], -1)[:, 1]) / 2
        assert float((p_sh - p_sep).abs().max()) <= 1e-5
