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
from eraudit_core.errors import InputError
from eraudit_core.types import Paraphrase, Query
from eraudit_core.verifier._label_mass import MIN_LABEL_MASS


@dataclass(frozen=True)
class Range:
    """The valid values of a numeric setting, stated once: the form's limits, the CLI's help
    and the report read it (AuditConfig's own checks refuse what lies outside it)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return False
        x = float(value)
        if not math.isfinite(x):
            return False
        if self.low is not None and (x <= self.low if self.low_open else x < self.low):
            return False
        return not (self.high is not None and (x >= self.high if self.high_open else x > self.high))

    def __str__(self) -> str:
        lo, hi = self.low, self.high
        if lo is None and hi is None:
            return "any finite number"
        if hi is None:
            return f"{'>' if self.low_open else '>='} {lo:g}"
        if lo is None:
            return f"{'<' if self.high_open else '<='} {hi:g}"
        return f"{'(' if self.low_open else '['}{lo:g}, {hi:g}{')' if self.high_open else ']'}"


@dataclass(frozen=True)
class AuditConfig:
    """Everything that decides a run's result.

    Each field's default, help text, valid range and whether it changes a verdict or a bound
    live in its metadata (read through `_settings`: `config_fields`, `verdict_fields`): the
    CLI's options, the Run form and the report's settings table are generated from it. `help` says what the setting does;
    `label` is its short name on the form and in the report; `flag` the CLI option when it is
    not `--name-with-dashes`; `unset` what None means.
    """

    epsilon: float = field(
        default=0.1,
        metadata={
            "label": "Tolerance epsilon",
            "help": "A paraphrase is a counterexample when D > epsilon. D is how much more the "
            "adapted model lost on the reworded hidden question than it gained on the "
            "monitored one (a loss of probability on the true answer, divided by max(gain, "
            "k)). 0.5: the loss is more than half the gain.",
            "range": Range(0.0),
            "verdict": True,
        },
    )
    k: float = field(
        default=DEFAULT_K,
        metadata={
            "label": "k (smallest gain used as denominator)",
            "help": "The smallest monitored gain used as D's denominator, so a model that "
            "gained nothing on the monitored question is not divided by zero; with k = 1, D is "
            "the plain drop in P(true answer).",
            "range": Range(0.0, None, low_open=True),
            "verdict": True,
        },
    )
    confidence: float = field(
        default=0.95,
        metadata={
            "label": "Confidence",
            "help": "Each question's lower bound holds with this probability (1 - alpha). "
            "Higher confidence needs more clean paraphrases for the same bound.",
            "range": Range(0.0, 1.0, low_open=True, high_open=True),
            "verdict": True,
        },
    )
    search_budget: int = field(
        default=100,
        metadata={
            "label": "Search budget per question (stage 1)",
            "help": "Stage 1: at most this many search paraphrases per question are scored, "
            "looking for a counterexample. 0 skips the search.",
            "range": Range(0),
            "verdict": True,
        },
    )
    test_budget: int = field(
        default=100,
        metadata={
            "label": "Test budget per generator (stage 2)",
            "help": "Stage 2: at most this many test paraphrases per generator and question "
            "are drawn for the sequential test (fewer when the pool is smaller or p* is "
            "reached).",
            "range": Range(1),
            "verdict": True,
            "flag": "--budget",
        },
    )
    target: float | None = field(
        default=None,
        metadata={
            "label": "Target p*",
            "help": "p*: a question is certified when its lower bound (after the "
            "total-variation delta) reaches it; n* = ceil(ln alpha / ln p*) clean draws reach "
            "it, and it cannot exceed the pool size. Without a target, questions can pass but "
            "are never certified.",
            "range": Range(0.0, 1.0, low_open=True, high_open=True),
            "verdict": True,
            "unset": "none",
        },
    )
    tv_delta: float = field(
        default=0.0,
        metadata={
            "label": "Total-variation assumption delta (bounds are lowered by it)",
            "help": "If the test paraphrases may differ from real rewordings by total variation "
            "delta, every bound (the failure-tolerant one included) is lowered by delta. 0 "
            "assumes they do not.",
            "range": Range(0.0, 1.0),
            "verdict": True,
            "flag": "--tv",
        },
    )
    search_generators: tuple[str, ...] = field(
        default=(),
        metadata={
            "label": "Search generators (stage 1)",
            "help": "Which stored search paraphrase sets stage 1 uses (comma-separated on the "
            "command line; empty: every stored one).",
            "choices": "stored search generator names",
            "verdict": True,
            "unset": "(all in the store)",
        },
    )
    test_generators: tuple[str, ...] = field(
        default=(),
        metadata={
            "label": "Test generators (stage 2, in this order)",
            "help": "Which stored test paraphrase sets stage 2 draws from, in order; each gets "
            "its own bound and the question's bound is the smallest (empty: every stored one).",
            "choices": "stored test generator names",
            "verdict": True,
            "unset": "(all in the store)",
        },
    )
    continue_after_counterexample: bool = field(
        default=False,
        metadata={
            "label": "Run every test generator to its own stop, even after a counterexample "
            "(needed for the failure-tolerant bound, beyond the paper; costs more queries)",
            "help": "Keep testing after a counterexample (stage 1 or 2), so the pair-level "
            "failure-tolerant bound (beyond the paper) covers every generator and is reported; "
            "costs more queries. Off: the first counterexample ends the question.",
            "choices": (False, True),
            "verdict": True,
        },
    )
    tolerant_prior: tuple[float, float] = field(
        default=(1.0, 1.0),
        metadata={
            "label": "Failure-tolerant bound prior (a, b)",
            "help": "The beta prior of the failure-tolerant bound's mixture (two positive "
            "numbers); (1, 1) is uniform.",
            "range": Range(0.0, None, low_open=True),
            "verdict": True,
        },
    )
    batch_size: int = field(
        default=16,
        metadata={
            "label": "Batch size (paraphrases scored at once)",
            "help": "How many stage-2 paraphrases are scored (and written to the store) at "
            "once: larger is faster on a GPU or a server, and the live view updates once per "
            "batch.",
            "range": Range(1),
            "verdict": False,
        },
    )
    stop_at_target: bool = field(
        default=True,
        metadata={
            "label": "Stop early at p*",
            "help": "Stop a generator once its bound reaches p* (after n* clean paraphrases): "
            "saves model queries. A separate choice from setting the target.",
            "choices": (False, True),
            "verdict": True,
            "flag": "--no-stop-at-target",
        },
    )
    draw_seed: int | None = field(
        default=None,
        metadata={
            "label": "Test-draw seed",
            "help": "Stage 2 draws each generator's test paraphrases uniformly at random "
            "without replacement from its pool, seeded by this (stored with the run). Empty: a "
            "fresh seed for a model run; a score table keeps its own order.",
            "range": Range(0),
            "verdict": False,
            "flag": "--seed",
            "unset": "score-table order",
        },
    )
    min_drop: float = field(
        default=0.0,
        metadata={
            "label": "Minimum drop (beyond the paper, an assumption like TV; 0 = the paper's rule)",
            "help": "A rewording counts as a counterexample only when D > epsilon and p(true) "
            "also fell by more than this (in both stages, every bound and both sweeps). 0 is "
            "the paper's rule.",
            "range": Range(0.0, 1.0, high_open=True),
            "verdict": True,
        },
    )
    use_imported_scores: bool = field(
        default=False,
        metadata={
            "label": "Use imported scores",
            "help": "Also read cached scores that arrived in imported run bundles (kept apart, "
            "with their origin, and unverified; recorded in the run's provenance). Off: only "
            "scores this store computed.",
            "choices": (False, True),
            "verdict": False,
        },
    )
    min_label_mass: float = field(
        default=MIN_LABEL_MASS,
        metadata={
            "label": "Minimum label mass (a checkpoint whose labels get less of its "
            "probability on the probe questions is refused: it is read where it does not "
            "answer)",
            "help": "The full-vocabulary probability of the two labels where they are read, "
            "median over the probe questions. Below this the checkpoint is refused at "
            "registration: its p(true) would be a letter prior.",
            "range": Range(0.0, 1.0),
            "verdict": False,
        },
    )
    prompt_template: str | None = field(
        default=None,
        metadata={
            "label": "Prompt template",
            "help": "The prompt wording the verifiers read (empty: the studio's default), so "
            "another tool's wording can be reproduced; part of each checkpoint's fingerprint, "
            "hence of the score cache key.",
            "choices": "text",
            "verdict": False,
            "unset": "the studio's default",
        },
    )
    answer_prefix: str | None = field(
        default=None,
        metadata={
            "label": "Answer prefix",
            "help": "The text after the question where the answer label is read (empty: the "
            "studio's default); part of each checkpoint's fingerprint.",
            "choices": "text",
            "verdict": False,
            "unset": "the studio's default",
        },
    )
    system_message: str | None = field(
        default=None,
        metadata={
            "label": "System message",
            "help": "A system message the verifiers read (empty: none); part of each "
            "checkpoint's fingerprint.",
            "choices": "text",
            "verdict": False,
            "unset": "none",
        },
    )
    prompt_date: str | None = field(
        default=None,
        metadata={
            "label": "Prompt date",
            "help": "The date (YYYY-MM-DD) a chat template that writes today's date is pinned "
            "to; set to the run's start date when the run is created, so a resumed run reads "
            "the same prompts.",
            "choices": "a date YYYY-MM-DD",
            "verdict": False,
            "unset": "not pinned",
        },
    )

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
