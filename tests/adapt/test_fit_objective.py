"""The reference objective: the forced-choice loss is the two-way NLL of the correct letter
(known values and a tiny model's own logits), the packed sequence gives exactly the losses of
two separate passes, and the two parts are weighed 2.0 and 1.0."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from eraudit_core.adapt._debate_data import DebateRow
from eraudit_core.adapt._fit_objective import (
    ExampleLoss,
    combined_loss,
    encode_fit_rows,
    example_loss,
    forced_choice_nll,
    packed_layout,
    two_way_summary,
)
from eraudit_core.verifier import load_verifier
from tests._tiny_model import build_tiny_checkpoint, one_torch_thread


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    with one_torch_thread():
        yield


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory):
    path = build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "model", layers=3)
    return load_verifier(str(path), share_base=False)


def _row(letter: str = "B", orientation: str = "A=Y_false") -> DebateRow:
    return DebateRow(
        1, "r1", "p", "Which option is right? Debater A says yes.", f"Answer: {letter}",
        "digest", False, False, orientation,
    )  # fmt: skip


def test_forced_choice_known_values() -> None:
    # z = (2.0, 0.5): p(A) = 1 / (1 + e^-1.5), so -log p(A) = log(1 + e^-1.5).
    z = torch.tensor([2.0, 0.5])
    assert float(forced_choice_nll(z, 0)) == pytest.approx(0.2014132779827524, abs=1e-6)
    assert float(forced_choice_nll(z, 1)) == pytest.approx(1.7014132779827524, abs=1e-6)
    # Equal logits: ln 2 whichever letter is right (the shipped arms' letter loss).
    assert float(forced_choice_nll(torch.tensor([3.0, 3.0]), 1)) == pytest.approx(math.log(2))


def test_forced_choice_on_a_tiny_model_matches_its_two_logits(tiny) -> None:
    (e,) = encode_fit_rows(tiny._base.tokenizer, tiny._chat, [_row()], None, None)
    assert e.grounded == 0 and e.target == 1
    tok = tiny._base.tokenizer
    assert tok.decode(list(e.ids[e.prompt :])) == "Answer:"
    model = tiny._base.model
    with torch.no_grad():
        out = example_loss(model, e)
        logits = model(input_ids=torch.tensor([e.ids])).logits[0, -1]
    z_a, z_b = (float(logits[i]) for i in e.letters)
    hand = math.log1p(math.exp(z_a - z_b))  # -log(e^zB / (e^zA + e^zB))
    assert float(out.fc) == pytest.approx(hand, abs=1e-5)
    assert out.p_correct == pytest.approx(math.exp(-hand), abs=1e-6)
    assert out.lm_tokens == 0


def test_packed_sequence_equals_two_separate_passes(tiny) -> None:
    analysis = "The captain left because of money."
    (e,) = encode_fit_rows(tiny._base.tokenizer, tiny._chat, [_row()], {"digest": analysis}, None)
    tok = tiny._base.tokenizer
    assert tok.decode(list(e.ids[e.prompt + e.tail :])) == analysis + "\nAnswer: B"
    model = tiny._base.model
    with torch.no_grad():
        packed = example_loss(model, e)
        direct = model(input_ids=torch.tensor([e.direct])).logits[0, -1]
        alone = torch.tensor([e.ids[: e.prompt] + e.ids[e.prompt + e.tail :]])
        logits = model(input_ids=alone).logits[0]
    lm = torch.nn.functional.cross_entropy(
        logits[e.prompt - 1 : -1], alone[0, e.prompt :], reduction="sum"
    )
    assert float(packed.fc) == pytest.approx(
        float(forced_choice_nll(direct[list(e.letters)], 1)), abs=1e-5
    )
    assert float(packed.lm_sum) == pytest.approx(float(lm), rel=1e-5)
    assert packed.lm_tokens == e.grounded == alone.shape[1] - e.prompt
    # Negative control: letting the analysis see the tail changes its loss.
    pos, mask = packed_layout(e.prompt, e.tail, e.grounded)
    leaky = torch.zeros_like(mask)
    n = mask.shape[-1]
    leaky.masked_fill_(torch.ones(n, n).triu(1).bool(), torch.finfo(torch.float32).min)
    with torch.no_grad():
        out = model(input_ids=torch.tensor([e.ids]), attention_mask=leaky, position_ids=pos)
    g0 = e.prompt + e.tail
    wrong = torch.nn.functional.cross_entropy(
        out.logits[0, [e.prompt - 1, *range(g0, n - 1)]], torch.tensor(e.ids[g0:]), reduction="sum"
    )
    assert abs(float(wrong) - float(lm)) > 1e-3


def test_combined_weighting() -> None:
    def el(fc: float, lm: float, n: int) -> ExampleLoss:
        return ExampleLoss(torch.tensor(fc), torch.tensor(lm), n, math.exp(-fc))

    # 2.0 * mean(0.7, 0.3) + 1.0 * (10 + 20) / (5 + 15) = 1.0 + 1.5
    loss, fc, lm = combined_loss([el(0.7, 10.0, 5), el(0.3, 20.0, 15)])
    assert (float(loss), fc, lm) == pytest.approx((2.5, 0.5, 1.5))
    # Without grounded rows only the forced choice counts.
    loss, fc, lm = combined_loss([el(0.7, 0.0, 0), el(0.3, 0.0, 0)])
    assert (float(loss), fc, lm) == pytest.approx((1.0, 0.5, 0.0))


def test_two_way_summary() -> None:
    out = two_way_summary([0.9, 0.6, 0.4, 0.5], ["A=Y_true", "A=Y_false"] * 2)
    assert out["two_way_accuracy"] == 0.5  # 0.5 is not above chance
    expected = -(math.log(0.9) + math.log(0.6) + math.log(0.4) + math.log(0.5)) / 4
    assert out["letter_loss"] == pytest.approx(expected, abs=1e-5)
    assert out["by_orientation"]["A=Y_true"]["two_way_accuracy"] == 0.5
    assert out["by_orientation"]["A=Y_false"]["rows"] == 2


def test_encode_fit_rows_tokenises_letters_as_single_tokens(tiny, tmp_path: Path) -> None:
    examples = encode_fit_rows(
        tiny._base.tokenizer, tiny._chat, [_row("A", "A=Y_true"), _row()], None, None
    )
    assert [e.target for e in examples] == [0, 1]
    assert examples[0].letters == examples[1].letters and len(set(examples[0].letters)) == 2
