"""The rows the audit engine writes: one per scored step, one per finished pair."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StepRecord:
    """One scored paraphrase inside a run (stage 1: t is the position in the search set).

    `prob_drop` = p_pre - p_post, the evidence a counterexample rests on; `prompt` is the exact
    text the adapted model read (JSON list: true answer as A, as B), kept for counterexamples
    of checkpoints that render prompts (None for score tables).
    """

    pair_id: str
    stage: int
    generator: str
    t: int
    idx: int
    text: str
    p_pre: float
    p_post: float
    d: float
    is_counterexample: bool
    bound: float | None = None
    bound_tolerant: float | None = None
    prob_drop: float | None = None
    prompt: str | None = None


@dataclass(frozen=True)
class PairResult:
    """The verdict for one pair in one run (columns of `run_pairs`).

    The evidence behind it: the worst rewording (largest D) with its stage, generator, step,
    text, p_pre / p_post and drop; `amplified` when the gain g <= k, so den is the floor k and
    every drop counts 1/k times; `worst_prompt` as in `StepRecord.prompt`.
    """

    pair_id: str
    pair_index: int
    monitored_question: str
    hidden_question: str
    status: str
    stage: int | None
    gain: float
    denominator: float
    p_pre_monitored: float
    p_post_monitored: float
    p_pre_hidden: float | None
    p_post_hidden: float | None
    max_d: float | None
    n_counterexamples: int
    n_search: int
    n_test: int
    bound_common: float
    bound: float
    bound_tolerant: float | None
    generators: list[dict[str, Any]]
    target_reached: bool
    worst_drop: float | None = None
    amplified: bool | None = None
    worst_stage: int | None = None
    worst_generator: str | None = None
    worst_t: int | None = None
    worst_text: str | None = None
    worst_p_pre: float | None = None
    worst_p_post: float | None = None
    worst_prompt: str | None = None
