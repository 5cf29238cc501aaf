"""Plain records shared by every part of the engine.

Why a module of its own: the benchmark importer, the verifier backends, the paraphrase
generators, the audit engine and the store all speak about the same few things (an item, a
query, a score). Keeping them here, free of any heavy import, lets each part depend on the
records and not on each other.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["monitored", "hidden", "search", "test"]


class Verdict(StrEnum):
    """What one question's audit concluded (docs/design.md §4; decided in
        eraudit_core.method._pair_audit). The same four words name a stored pair's status, a run's
        headline verdict, the CLI's JSON and the bundles: a member equals its word, so stored
        values and comparisons with plain text keep working. Listed in the order the views,
    legends and tables show them."""

    DEGRADED = "degraded"  # a counterexample was found
    CERTIFIED = "certified"  # no counterexample, every generator tested, bound >= the target p*
    PASSED = "passed"  # no counterexample, every generator tested, no target or bound below it
    INCONCLUSIVE = "inconclusive"  # not degraded, but some test generator tested nothing


class RunStatus(StrEnum):
    """Where a run stands: the store's `runs.status`, a bundle's runs row, the CLI's JSON.
    A member equals its word, so stored values and plain-text comparisons keep working."""

    PENDING = "pending"  # created; its worker is loading the checkpoints
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # its process stopped without finishing it


# A worker owns the run (or is about to): it must not be resumed, copied or deleted under it.
ACTIVE_RUN_STATUSES = (RunStatus.PENDING, RunStatus.RUNNING)
# Stopped before every question finished: `eraudit resume` and the Run page can continue it.
RESUMABLE_RUN_STATUSES = (RunStatus.INTERRUPTED, RunStatus.CANCELLED, RunStatus.FAILED)


@dataclass(frozen=True)
class BinaryQuestion:
    """A binary-choice question: the text plus its true and false option (docs/design.md §3)."""

    question: str
    true_option: str
    false_option: str


@dataclass(frozen=True)
class Pair:
    """One monitored/hidden question pair grounded in a shared context (a QuALITY story)."""

    pair_id: str
    index: int
    story_title: str
    monitored: BinaryQuestion
    hidden: BinaryQuestion
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Query:
    """What a verifier is asked: one question text with the two options of its item.

    For paraphrases of a hidden question the options are the hidden question's options.
    Scores read from a precomputed table have empty options; `pair_id` then tells rows apart.
    """

    pair_id: str
    question: str
    true_option: str
    false_option: str

    @property
    def prompt_hash(self) -> str:
        """Stable key of the query content; with a checkpoint fingerprint it keys the score cache.

        The checkpoint fingerprint already covers the template and answer prefix, so hashing
        the query's own fields identifies the rendered prompts exactly.
        """
        payload = json.dumps(
            [self.pair_id, self.question, self.true_option, self.false_option],
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class QueryScore:
    """A verifier's answer to a Query (docs/design.md §3).

    `p_true` is the order-averaged label-softmax probability of the true option. The four
    label log-probabilities are kept when the backend has them: (l_A, l_B) with the true
    option as A, then (l_A, l_B) with the true option as B.
    """

    p_true: float
    logprobs: tuple[float, float, float, float] | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.p_true, float | int) and math.isfinite(self.p_true)):
            raise ValueError(f"p_true must be a finite number, got {self.p_true!r}")
        if not 0.0 <= self.p_true <= 1.0:
            raise ValueError(f"p_true must lie in [0, 1], got {self.p_true!r}")


@runtime_checkable
class Verifier(Protocol):
    """One frozen checkpoint answering binary questions (a backend implements this).

    `fingerprint` identifies weights + tokenizer + template + answer prefix: two verifiers with
    the same fingerprint must return the same scores, which is what makes the cache safe.
    """

    @property
    def fingerprint(self) -> str: ...

    def score(self, queries: Sequence[Query]) -> list[QueryScore]: ...


@dataclass(frozen=True)
class Paraphrase:
    """One candidate rewrite of a hidden question, as stored (docs/design.md §5)."""

    pair_id: str
    role: Literal["search", "test"]
    generator: str
    idx: int
    text: str
