"""The reference objective for the debate arms: forced choice at the answer slot plus the
language-model loss on the grounded analysis, both from one packed sequence per row.

Why: an arm trained as a language model of `Answer: X` learns the format (`Answer`, `:`)
and leaves the letter at ln 2. The reference weighs the decision itself,
`L = 2.0 * L_fc + 1.0 * L_lm`: `L_fc` is the two-way negative log-likelihood of the correct
letter, a log-softmax over the ` A` / ` B` logits at the position that predicts the letter
(the slot the audit reads, right after the judge prompt and `Answer:`), and `L_lm` is the
mean next-token loss of the grounded analysis followed by the answer, after the same prompt.

Both views share the judge prompt, about 1,400 of their tokens. One packed sequence holds the
prompt once, then the `Answer:` tail, then the analysis; the analysis restarts its positions
after the prompt and does not attend to the tail, so each view sees exactly what it would
see alone (`test_fit_objective.py` checks this against two separate passes) for about half
the compute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from eraudit_core.adapt._debate_data import DebateRow
from eraudit_core.errors import InputError

FC_WEIGHT = 2.0
LM_WEIGHT = 1.0
ANSWER_PREFIX = "Answer:"


@dataclass(frozen=True)
class FitExample:
    """One training row as a packed sequence `prompt | tail | grounded`.

    `tail` ends with `Answer:`, so its last position predicts the letter; `grounded` (empty
    without a grounded file) is the analysis, a newline and `Answer: X`, trained token by token.
    `letters`: the token ids of ` A` and ` B`; `target`: 0 for A, 1 for B.
    """

    row_id: str
    ids: tuple[int, ...]
    prompt: int
    tail: int
    letters: tuple[int, int]
    target: int
    orientation: str = ""

    @property
    def grounded(self) -> int:
        return len(self.ids) - self.prompt - self.tail

    @property
    def direct(self) -> tuple[int, ...]:
        """The sequence the audit reads: judge prompt and `Answer:`, nothing after."""
        return self.ids[: self.prompt + self.tail]

    def without_grounded(self) -> FitExample:
        return FitExample(
            self.row_id,
            self.direct,
            self.prompt,
            self.tail,
            self.letters,
            self.target,
            self.orientation,
        )


def encode_fit_rows(
    tokenizer: Any,
    chat: Any,
    rows: Sequence[DebateRow],
    grounded: dict[str, str] | None = None,
    context: int | None = None,
) -> list[FitExample]:
    """Packed examples of `rows`; `chat` wraps a user message as the verifier does and
    `grounded` maps a row's `row_sha256` to its analysis (rows without one get none).

    Each part must tokenise as a continuation of the one before (else the slot trained is
    not the slot read), and the letters must be single tokens."""
    letters = []
    for label in ("A", "B"):
        ids = tokenizer(" " + label, add_special_tokens=False).input_ids
        if len(ids) != 1:
            raise InputError(f"label {label!r}: {len(ids)} tokens; forced choice needs one")
        letters.append(int(ids[0]))
    out = []
    for r in rows:
        head = chat(r.prompt)
        prompt_ids = list(tokenizer(head, add_special_tokens=False).input_ids)
        direct = list(tokenizer(head + ANSWER_PREFIX, add_special_tokens=False).input_ids)
        full = list(tokenizer(head + r.target, add_special_tokens=False).input_ids)
        target = "AB".index(r.letter)
        if direct[: len(prompt_ids)] != prompt_ids or full != [*direct, letters[target]]:
            raise InputError(
                f"row {r.row_id}: '{r.target}' does not tokenise as prompt, "
                "'Answer:' and one letter token"
            )
        tail = direct[len(prompt_ids) :]
        suffix: list[int] = []
        if grounded is not None and r.row_sha256 in grounded:
            text = grounded[r.row_sha256] + "\n" + r.target
            both = list(tokenizer(head + text, add_special_tokens=False).input_ids)
            if both[: len(prompt_ids)] != prompt_ids:
                raise InputError(f"row {r.row_id}: the analysis does not continue the prompt")
            suffix = both[len(prompt_ids) :]
        n = max(len(prompt_ids) + len(tail), len(prompt_ids) + len(suffix))
        if context is not None and n > context:
            raise InputError(f"row {r.row_id}: {n} tokens, longer than the context {context}")
        out.append(
            FitExample(
                r.row_id,
                tuple(prompt_ids + tail + suffix),
                len(prompt_ids),
                len(tail),
                (letters[0], letters[1]),
                target,
                r.orientation,
            )
        )
    return out


def packed_layout(prompt: int, tail: int, grounded: int) -> tuple[Any, Any]:
    """Position ids [1, n] and an additive attention mask [1, 1, n, n] for `prompt | tail |
    grounded`: each part after the prompt sees the prompt and itself causally, not the other."""
    import torch

    n = prompt + tail + grounded
    pos = torch.cat(
        [torch.arange(prompt + tail), torch.arange(prompt, prompt + grounded)]
    ).unsqueeze(0)
    seg = torch.cat([torch.zeros(prompt), torch.ones(tail), torch.full((grounded,), 2.0)]).long()
    idx = torch.arange(n)
    causal = idx.unsqueeze(1) >= idx.unsqueeze(0)
    same_or_prompt = (seg.unsqueeze(1) == seg.unsqueeze(0)) | (seg.unsqueeze(0) == 0)
    allowed = causal & same_or_prompt
    mask = torch.zeros((n, n), dtype=torch.float32)
    mask.masked_fill_(~allowed, torch.finfo(torch.float32).min)
    return pos, mask.view(1, 1, n, n)


def forced_choice_nll(letter_logits: Any, target: int) -> Any:
    """-log softmax([z_A, z_B])[target], in float32: the two-way letter loss."""
    import torch

    z = letter_logits.float()
    return -torch.log_softmax(z, dim=-1)[target]


@dataclass
class ExampleLoss:
    """One row's losses: `fc` (the two-way NLL, a tensor), `lm_sum` (summed token loss of
    the grounded part, a tensor) over `lm_tokens`, and the two-way p(correct letter)."""

    fc: Any
    lm_sum: Any
    lm_tokens: int
    p_correct: float


def example_loss(model: Any, example: FitExample, state: Any = None) -> ExampleLoss:
    """Both views of one row in one pass. `state`: its trunk states (the caller runs only the
    upper layers); None runs the whole model from the token ids."""
    import torch

    ids = torch.tensor([example.ids], dtype=torch.long)
    pos, mask = packed_layout(example.prompt, example.tail, example.grounded)
    slot = example.prompt + example.tail - 1
    g0 = example.prompt + example.tail
    # positions whose logits are read: the letter slot, then every grounded position but
    # the last (position t predicts grounded token t + 1); the first grounded token is
    # predicted from the prompt's last position.
    read = [slot, example.prompt - 1, *range(g0, len(example.ids) - 1)]
    keep = torch.tensor(read if example.grounded else [slot])
    kwargs = {"position_ids": pos, "attention_mask": mask, "use_cache": False}
    if state is None:
        logits = model(input_ids=ids, logits_to_keep=keep, **kwargs).logits[0]
    else:
        logits = model(inputs_embeds=state.unsqueeze(0), logits_to_keep=keep, **kwargs).logits[0]
    letter = logits[0, list(example.letters)]
    fc = forced_choice_nll(letter, example.target)
    p = float(torch.exp(-fc.detach()))
    if not example.grounded:
        return ExampleLoss(fc, torch.zeros(()), 0, p)
    targets = ids[0, g0:]
    lm_sum = torch.nn.functional.cross_entropy(logits[1:].float(), targets, reduction="sum")
    return ExampleLoss(fc, lm_sum, example.grounded, p)


def combined_loss(losses: Sequence[ExampleLoss]) -> tuple[Any, float, float]:
    """`2.0 * mean fc + 1.0 * (summed grounded token loss / grounded tokens)` over a batch;
    returns the loss and its two parts as floats (the LM part is 0 without grounded rows)."""
    import torch

    fc = torch.stack([x.fc for x in losses]).mean()
    tokens = sum(x.lm_tokens for x in losses)
    lm = torch.stack([x.lm_sum for x in losses]).sum() / tokens if tokens else torch.zeros(())
    return FC_WEIGHT * fc + LM_WEIGHT * lm, float(fc.detach()), float(lm.detach())


def two_way_summary(p_correct: Sequence[float], orientations: Sequence[str]) -> dict[str, Any]:
    """Letter-slot loss and two-way accuracy (p(correct) > 0.5), overall and per answer order."""
    if not p_correct:
        raise InputError("no rows to evaluate")

    def part(ps: Sequence[float]) -> dict[str, Any]:
        return {
            "rows": len(ps),
            "two_way_accuracy": round(sum(p > 0.5 for p in ps) / len(ps), 4),
            "letter_loss": round(sum(-math.log(max(p, 1e-300)) for p in ps) / len(ps), 5),
            "mean_p_correct": round(sum(ps) / len(ps), 5),
        }

    out = part(p_correct)
    out["by_orientation"] = {
        o: part([p for p, q in zip(p_correct, orientations, strict=True) if q == o])
        for o in sorted(set(orientations))
    }
    return out
