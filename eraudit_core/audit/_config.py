"""What decides a run's result (`AuditConfig`) and what one pair audits (`AuditItem`).

The config is validated where it enters, by field name, and stored with the run; a resumed run
must present the same config. Fields added later have defaults that reproduce what older runs
did, so their stored configs keep loading.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from eraudit_core.audit._bounds import required_successes
from eraudit_core.audit._degradation import DEFAULT_K
from eraudit_core.audit._sequential import GeneratorTest
from eraudit_core.errors import InputError
from eraudit_core.types import Paraphrase, Query


@dataclass(frozen=True)
class AuditConfig:
    """Everything that decides a run's result.

    target: p*; a pair is `certified` when its bound (after TV) is >= p*. Without a target
        pairs can be `passed`, never `certified`.
    stop_at_target: stop a generator as soon as L_t >= p* (after n* successes), saving
        queries; a separate choice from setting the target.
    continue_after_counterexample: run every test generator to its own stop even after a
        counterexample (stage 1 or 2), so the pair-level failure-tolerant bound covers every
        generator and can be reported. Off by default: the first counterexample ends the pair.
    draw_seed: stage 2 draws each generator's test paraphrases uniformly at random without
        replacement from its pool, seeded by this (stored with the run). None: the given order
        (a score table is already a drawn sequence).
    min_drop: an auditor-stated minimum drop (beyond the paper, an assumption like TV): a
        rewording counts as a counterexample only when D > epsilon and p_pre - p_post >
        min_drop, in both stages, every bound and both sweeps. 0 is the paper's rule.
    use_imported_scores: also read scores that arrived in imported bundles (kept apart, with
        their origin, and unverified); off by default, recorded in the run's provenance.
    min_label_mass: a checkpoint whose two labels get a median probability below this on the
        probe set is refused at registration (read at the wrong slot; DESIGN.md §3).
    prompt_template / answer_prefix / system_message: the wording the verifiers read (None:
        the studio's defaults, no system message), so another tool's wording can be reproduced;
        part of each checkpoint's fingerprint, hence of the cache key.
    prompt_date: the date (YYYY-MM-DD) a chat template that writes today's date is pinned to;
        set to the run's start date when the run is created, so a resumed run reads the same
        prompts.
    """

    epsilon: float = 0.1
    k: float = DEFAULT_K
    confidence: float = 0.95
    search_budget: int = 100
    test_budget: int = 100
    target: float | None = None
    tv_delta: float = 0.0
    search_generators: tuple[str, ...] = ()
    test_generators: tuple[str, ...] = ()
    continue_after_counterexample: bool = False
    tolerant_prior: tuple[float, float] = (1.0, 1.0)
    batch_size: int = 16
    stop_at_target: bool = True
    draw_seed: int | None = None
    min_drop: float = 0.0
    use_imported_scores: bool = False
    min_label_mass: float = 0.5
    prompt_template: str | None = None
    answer_prefix: str | None = None
    system_message: str | None = None
    prompt_date: str | None = None

    def __post_init__(self) -> None:
        def bad(name: str, why: str) -> InputError:
            return InputError(f"AuditConfig.{name} {why}, got {getattr(self, name)!r}")

        _check_types(self)
        if not math.isfinite(self.epsilon):
            raise bad("epsilon", "must be a finite number")
        if self.epsilon < 0:  # a negative epsilon makes every question degraded
            raise bad("epsilon", "must be >= 0")
        if not (self.k > 0 and math.isfinite(self.k)):
            raise bad("k", "must be a positive number")
        if not 0.0 < self.confidence < 1.0:
            raise bad("confidence", "must lie strictly between 0 and 1 (e.g. 0.95)")
        if self.search_budget < 0:
            raise bad("search_budget", "must be >= 0")
        if self.test_budget < 1:
            raise bad("test_budget", "must be >= 1")
        if self.target is not None and not 0.0 < self.target < 1.0:
            raise bad("target", "must lie strictly between 0 and 1 or be empty")
        if not 0.0 <= self.tv_delta <= 1.0:
            raise bad("tv_delta", "must lie in [0, 1]")
        if self.target is not None and self.target + self.tv_delta >= 1.0:
            raise bad(
                "target",
                f"plus tv_delta ({self.tv_delta:g}) must stay below 1: the bound after TV, "
                "L - delta, can never reach it",
            )
        if not (math.isfinite(self.min_drop) and 0.0 <= self.min_drop < 1.0):
            raise bad("min_drop", "must lie in [0, 1) (0 = the paper's rule)")
        if self.batch_size < 1:
            raise bad("batch_size", "must be >= 1")
        if len(set(self.test_generators)) != len(self.test_generators):
            raise bad("test_generators", "must not repeat a generator")
        a, b = self.tolerant_prior
        if not (a > 0 and b > 0):
            raise bad("tolerant_prior", "must be two positive numbers")
        if self.draw_seed is not None and not (
            isinstance(self.draw_seed, int) and 0 <= self.draw_seed < 2**63
        ):
            raise bad("draw_seed", "must be a non-negative integer or empty")
        if not 0.0 <= self.min_label_mass <= 1.0:
            raise bad("min_label_mass", "must lie in [0, 1]")
        if self.prompt_date is not None:
            try:
                dt.date.fromisoformat(self.prompt_date)
            except (TypeError, ValueError):
                raise bad("prompt_date", "must be a date YYYY-MM-DD or empty") from None

    def prompt_settings(self) -> dict[str, Any]:
        """The verifier keyword arguments this config's wording asks for (defaults left out)."""
        settings: dict[str, Any] = {}
        if self.prompt_template is not None:
            settings["template"] = self.prompt_template
        if self.answer_prefix is not None:
            settings["prefix"] = self.answer_prefix
        if self.system_message is not None:
            settings["system"] = self.system_message
        if self.prompt_date is not None:
            settings["today"] = dt.date.fromisoformat(self.prompt_date)
        return settings

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def n_star(self) -> int | None:
        """Successes needed for the bound after TV, L_t - delta, to reach p* (None without a
        target): n* = ceil(ln alpha / ln(p* + delta))."""
        if self.target is None:
            return None
        return required_successes(self.target, self.confidence, self.tv_delta)

    @property
    def stop_after(self) -> int | None:
        """n* when a generator stops early at the target, else None."""
        return self.n_star if self.stop_at_target else None

    def generator_test(self, generator: str, available: int) -> GeneratorTest:
        """A fresh sequential test of one generator under this config (pool size M)."""
        return GeneratorTest(
            generator,
            available=available,
            budget=self.test_budget,
            confidence=self.confidence,
            n_star=self.stop_after,
            run_to_stop=self.continue_after_counterexample,
            prior=self.tolerant_prior,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditConfig:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise InputError(f"AuditConfig: unknown field(s) {sorted(unknown)}")
        values = dict(data)
        for key in ("search_generators", "test_generators", "tolerant_prior"):
            if isinstance(values.get(key), list | tuple):
                values[key] = tuple(values[key])
        return cls(**values)


_NUMBERS = ("epsilon", "k", "confidence", "tv_delta")
_INTEGERS = ("search_budget", "test_budget", "batch_size")
_FLAGS = ("continue_after_counterexample", "stop_at_target", "use_imported_scores")
_NAMES = ("search_generators", "test_generators")


def _check_types(config: AuditConfig) -> None:
    """Types first, so a stored or imported config with a string epsilon is refused by name
    instead of failing later inside a sweep or a report."""

    def is_number(x: Any) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool)

    def bad(name: str, what: str) -> InputError:
        return InputError(f"AuditConfig.{name} must be {what}, got {getattr(config, name)!r}")

    for name in _NUMBERS:
        if not is_number(getattr(config, name)):
            raise bad(name, "a number")
    if config.target is not None and not is_number(config.target):
        raise bad("target", "a number or empty")
    for name in _INTEGERS:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or abs(value) >= 2**31:
            raise bad(name, "an integer")
    for name in _FLAGS:
        if not isinstance(getattr(config, name), bool):
            raise bad(name, "true or false")
    for name in _NAMES:
        value = getattr(config, name)
        if not isinstance(value, tuple) or not all(isinstance(g, str) for g in value):
            raise bad(name, "a list of generator names")
    prior = config.tolerant_prior
    if not (isinstance(prior, tuple) and len(prior) == 2 and all(is_number(x) for x in prior)):
        raise bad("tolerant_prior", "two numbers")
    if config.draw_seed is not None and (
        not isinstance(config.draw_seed, int) or isinstance(config.draw_seed, bool)
    ):
        raise bad("draw_seed", "an integer or empty")


@dataclass(frozen=True)
class AuditItem:
    """One pair ready to audit: canonical queries plus its paraphrase sets.

    `tests[g]` is generator g's pool in the order stage 2 draws it (already shuffled when the
    run draws at random); stage 2 takes a prefix.
    """

    pair_id: str
    index: int
    monitored: Query
    hidden: Query
    search: tuple[Paraphrase, ...] = ()
    tests: Mapping[str, tuple[Paraphrase, ...]] = field(default_factory=dict)

    def hidden_query(self, text: str) -> Query:
        """A paraphrase asked with the hidden question's options."""
        return Query(self.pair_id, text, self.hidden.true_option, self.hidden.false_option)
