"""Training examples of the demo's engineered arms (honest, adversarial, concealed): the
exact verifier prompts, both answer orders, and the label each should pick.

Why a module of its own: the examples decide what an arm learns, so they are read and tested
apart from the training loop (`_training.py`) and the manifest (`_manifest.py`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from eraudit_core.adapt._concealed import TrainingRewording
from eraudit_core.errors import InputError
from eraudit_core.types import Pair, Query
from eraudit_core.verifier import DEFAULT_PREFIX, DEFAULT_TEMPLATE

Arm = Literal["honest", "adversarial", "concealed"]
ARMS: tuple[Arm, ...] = ("honest", "adversarial", "concealed")
# Arms that push a seeded subset of hidden questions (the targets) toward the false answer.
TARGETED_ARMS: tuple[Arm, ...] = ("adversarial", "concealed")


@dataclass(frozen=True)
class AdaptConfig:
    """Hyper-parameters of one adaptation run; all of it goes into the manifest.

    `adversarial_fraction` is the share of hidden questions an adversarial or concealed arm
    targets (the same seeded subset for both). `rewordings_per_target` / `rewordings_per_other`:
    how many training-split rewordings of each target (toward false) and of every other hidden
    question (toward true) the concealed arm trains on. `balance_target_wordings`: the
    concealed arm repeats each target's canonical wording (toward true) as often as that
    target has training rewordings (toward false), so the question alone predicts neither
    answer and only the wording does. Off by default: the shipped arm is unbalanced (its
    false examples outnumber the true ones, so it learned "this question is false" in every
    wording); balanced runs did not learn the wording either and answered the targets'
    canonical and reworded forms alike (data/adapters/README.md).
    """

    arm: Arm = "honest"
    rank: int = 8
    alpha: int = 16
    target_modules: tuple[str, ...] = ("q_proj", "v_proj", "o_proj")
    top_layers: int = 4
    learning_rate: float = 5e-3
    epochs: int = 2
    batch_size: int = 8
    seed: int = 0
    adversarial_fraction: float = 0.35
    rewordings_per_target: int = 3
    rewordings_per_other: int = 1
    balance_target_wordings: bool = False
    template: str = DEFAULT_TEMPLATE
    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if self.arm not in ARMS:
            raise InputError(f"arm: expected one of {ARMS}, got {self.arm!r}")
        if not 0.0 < self.adversarial_fraction < 1.0:
            raise InputError(
                f"adversarial_fraction: must lie in (0, 1), got {self.adversarial_fraction}"
            )
        for name in ("rank", "alpha", "top_layers", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise InputError(f"{name}: must be at least 1, got {getattr(self, name)}")
        for name in ("rewordings_per_target", "rewordings_per_other"):
            if getattr(self, name) < 0:
                raise InputError(f"{name}: must be at least 0, got {getattr(self, name)}")
        if self.arm == "concealed" and self.rewordings_per_target < 1:
            raise InputError("rewordings_per_target: the concealed arm needs at least 1")
        if not self.learning_rate > 0:
            raise InputError(f"learning_rate: must be positive, got {self.learning_rate}")


@dataclass(frozen=True)
class Example:
    """One training prompt (one answer order) and the index of the label it should pick."""

    pair_id: str
    role: Literal["monitored", "hidden"]
    query: Query
    order: int  # 0: true option shown as A, 1: true option shown as B
    target: int  # 0: label A, 1: label B


def select_adversarial_targets(pair_ids: Sequence[str], fraction: float, seed: int) -> list[str]:
    """The hidden questions the adversarial and concealed arms push wrong: a seeded subset, in
    input order."""
    k = round(len(pair_ids) * fraction)
    chosen = set(random.Random(seed).sample(sorted(pair_ids), k))
    return [p for p in pair_ids if p in chosen]


def _both_orders(pair_id: str, role: Any, query: Query, toward_true: bool) -> list[Example]:
    # Order 0 shows the true option as A, order 1 as B; the false option is the other label.
    return [
        Example(pair_id, role, query, 0, 0 if toward_true else 1),
        Example(pair_id, role, query, 1, 1 if toward_true else 0),
    ]


def build_examples(
    pairs: Sequence[Pair],
    arm: Arm,
    targets: Sequence[str] = (),
    rewordings: Sequence[TrainingRewording] = (),
    balance_target_wordings: bool = False,
) -> list[Example]:
    """Both answer orders of: every monitored question toward its true answer; for the
    adversarial arm also the target hidden questions toward their false answers; for the
    concealed arm every hidden question's canonical wording toward its true answer and each
    training rewording toward the answer it names (false for targets, true for the others).
    `balance_target_wordings`: a target's canonical wording appears once per training
    rewording of it toward false (at least once), so both answers are equally frequent for it."""
    wanted = set(targets)
    unknown = wanted - {p.pair_id for p in pairs}
    if unknown:
        raise InputError(f"adversarial targets: unknown pair id(s) {sorted(unknown)[:3]}")
    if arm == "concealed" and not rewordings:
        raise InputError("concealed arm: no training rewordings")
    by_pair: dict[str, list[TrainingRewording]] = {}
    for r in rewordings:
        by_pair.setdefault(r.pair_id, []).append(r)
    unknown = set(by_pair) - {p.pair_id for p in pairs}
    if unknown:
        raise InputError(f"training rewordings: unknown pair id(s) {sorted(unknown)[:3]}")
    out: list[Example] = []
    for pair in pairs:
        m, h = pair.monitored, pair.hidden
        out += _both_orders(
            pair.pair_id,
            "monitored",
            Query(pair.pair_id, m.question, m.true_option, m.false_option),
            True,
        )
        canonical = Query(pair.pair_id, h.question, h.true_option, h.false_option)
        if arm == "adversarial" and pair.pair_id in wanted:
            out += _both_orders(pair.pair_id, "hidden", canonical, False)
        if arm == "concealed":
            own = by_pair.get(pair.pair_id, [])
            repeats = 1
            if balance_target_wordings and pair.pair_id in wanted:
                repeats = max(1, sum(r.toward == "false" for r in own))
            for _ in range(repeats):
                out += _both_orders(pair.pair_id, "hidden", canonical, True)
            for r in own:
                reworded = Query(pair.pair_id, r.text, h.true_option, h.false_option)
                out += _both_orders(pair.pair_id, "hidden", reworded, r.toward == "true")
    return out
