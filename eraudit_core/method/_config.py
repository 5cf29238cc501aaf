"""What decides a run's result (`AuditConfig`) and what one pair audits (`AuditItem`).

The config is validated where it enters, by field name, and stored with the run; a resumed run
must present the same config. Fields added later have defaults that reproduce what older runs
did, so their stored configs keep loading.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.method._bounds import CONFIDENCE_LEVELS, required_successes
from eraudit_core.method._degradation import DEFAULT_K
from eraudit_core.method._setting_spec import (
    Cli,
    FormHint,
    IsoDate,
    Kind,
    Range,
    Section,
    declared_settings,
    setting,
)
from eraudit_core.types import Paraphrase, Query
from eraudit_core.verifier._label_mass import MIN_LABEL_MASS

# The wording the verifiers read: it changes every score, hence every verdict, so compared
# runs must share it, though it is how scores are obtained rather than the rule.
_WORDING: dict[str, Any] = {
    "changes_verdicts": False,
    "must_match": True,
    "cli": Cli.NOT_AN_OPTION,
    "cli_reason": "read from a file by the checkpoint options",
    "form": FormHint(Section.HIDDEN, reason="the form audits with the studio's wording"),
}


@dataclass(frozen=True)
class AuditConfig:
    """Everything that decides a run's result.

    Each field is one setting, declared once with `setting(default, ...)`: its type is the
    annotation, its label, help, valid values, whether it changes a verdict, whether compared
    runs must agree on it, and how the CLI and the Run form offer it are its `SettingSpec`.
    The checks below, the CLI's options, the Run form, the presets, the report's settings
    table and the comparability check are generated from these declarations (`_settings`).
    """

    epsilon: float = setting(
        0.1,
        label="Tolerance epsilon",
        help="A paraphrase is a counterexample when D > epsilon. D is how much more the "
        "adapted model lost on the reworded hidden question than it gained on the "
        "monitored one (a loss of probability on the true answer, divided by max(gain, "
        "k)). 0.5: the loss is more than half the gain.",
        valid=Range(0.0),
        changes_verdicts=True,
        form=FormHint(Section.MAIN, step=0.05, number_format="%.3f"),
    )
    k: float = setting(
        DEFAULT_K,
        label="k (smallest gain used as denominator)",
        help="The smallest monitored gain used as D's denominator, so a model that "
        "gained nothing on the monitored question is not divided by zero; with k = 1, D is "
        "the plain drop in P(true answer).",
        valid=Range(0.0, None, low_open=True),
        changes_verdicts=True,
        control_must_match=True,
        form=FormHint(Section.MAIN, step=0.001, number_format="%.4f"),
    )
    confidence: float = setting(
        0.95,
        label="Confidence",
        help="Each question's lower bound holds with this probability (1 - alpha). "
        "Higher confidence needs more clean paraphrases for the same bound.",
        valid=Range(0.0, 1.0, low_open=True, high_open=True),
        changes_verdicts=True,
        suggested=CONFIDENCE_LEVELS,
        form=FormHint(Section.MAIN),
    )
    search_budget: int = setting(
        100,
        label="Search budget per question (stage 1)",
        help="Stage 1: at most this many search paraphrases per question are scored, "
        "looking for a counterexample. 0 skips the search.",
        valid=Range(0),
        changes_verdicts=True,
        control_must_match=True,
        form=FormHint(Section.MAIN),
    )
    test_budget: int = setting(
        100,
        label="Test budget per generator (stage 2)",
        help="Stage 2: at most this many test paraphrases per generator and question "
        "are drawn for the sequential test (fewer when the pool is smaller or p* is "
        "reached).",
        valid=Range(1),
        changes_verdicts=True,
        flag="--budget",
        control_must_match=True,
        form=FormHint(Section.MAIN),
    )
    target: float | None = setting(
        None,
        label="Target p*",
        help="p*: a question is certified when its lower bound (after the "
        "total-variation delta) reaches it; n* = ceil(ln alpha / ln p*) clean draws reach "
        "it, and it cannot exceed the pool size. Without a target, questions can pass but "
        "are never certified.",
        valid=Range(0.0, 1.0, low_open=True, high_open=True),
        changes_verdicts=True,
        unset="none",
        form=FormHint(Section.MAIN, step=0.01, enable_label="Certify against a target p*"),
    )
    tv_delta: float = setting(
        0.0,
        label="Total-variation assumption delta (bounds are lowered by it)",
        help="If the test paraphrases may differ from real rewordings by total variation "
        "delta, every bound (the failure-tolerant one included) is lowered by delta. 0 "
        "assumes they do not.",
        valid=Range(0.0, 1.0),
        changes_verdicts=True,
        flag="--tv",
        form=FormHint(step=0.01),
    )
    search_generators: tuple[str, ...] = setting(
        (),
        label="Search generators (stage 1)",
        help="Which stored search paraphrase sets stage 1 uses (comma-separated on the "
        "command line; empty: every stored one).",
        changes_verdicts=True,
        unset="(all in the store)",
        control_must_match=True,
        cli=Cli.MODEL_RUN,
        form=FormHint(Section.MAIN, names_of="search"),
    )
    test_generators: tuple[str, ...] = setting(
        (),
        label="Test generators (stage 2, in this order)",
        help="Which stored test paraphrase sets stage 2 draws from, in order; each gets "
        "its own bound and the question's bound is the smallest (empty: every stored one).",
        changes_verdicts=True,
        unset="(all in the store)",
        control_must_match=True,
        unique=True,
        cli=Cli.MODEL_RUN,
        form=FormHint(Section.MAIN, names_of="test"),
    )
    continue_after_counterexample: bool = setting(
        False,
        label="Run every test generator to its own stop, even after a counterexample "
        "(needed for the failure-tolerant bound, beyond the paper; costs more queries)",
        help="Keep testing after a counterexample (stage 1 or 2), so the pair-level "
        "failure-tolerant bound (beyond the paper) covers every generator and is reported; "
        "costs more queries. Off: the first counterexample ends the question.",
        changes_verdicts=True,
    )
    tolerant_prior: tuple[float, float] = setting(
        (1.0, 1.0),
        label="Failure-tolerant bound prior (a, b)",
        help="The beta prior of the failure-tolerant bound's mixture (two positive "
        "numbers); (1, 1) is uniform.",
        valid=Range(0.0, None, low_open=True),
        changes_verdicts=True,
        cli=Cli.NOT_AN_OPTION,
        cli_reason="the uniform prior is the only one offered",
        form=FormHint(Section.HIDDEN, reason="the uniform prior is the only one offered"),
    )
    batch_size: int = setting(
        16,
        label="Batch size (paraphrases scored at once)",
        help="How many stage-2 paraphrases are scored (and written to the store) at "
        "once: larger is faster on a GPU or a server, and the live view updates once per "
        "batch.",
        valid=Range(1),
        changes_verdicts=False,
    )
    stop_at_target: bool = setting(
        True,
        label="Stop early at p*",
        help="Stop a generator once its bound reaches p* (after n* clean paraphrases): "
        "saves model queries. A separate choice from setting the target.",
        changes_verdicts=True,
        flag="--no-stop-at-target",
        form=FormHint(Section.MAIN, needs="target"),
    )
    draw_seed: int | None = setting(
        None,
        label="Test-draw seed",
        help="Stage 2 draws each generator's test paraphrases uniformly at random "
        "without replacement from its pool, seeded by this (stored with the run). Empty: a "
        "fresh seed for a model run; a score table keeps its own order.",
        valid=Range(0),
        changes_verdicts=False,
        flag="--seed",
        unset="score-table order",
        cli=Cli.MODEL_RUN,
        form=FormHint(Section.HIDDEN, reason="a run started here draws a fresh seed"),
    )
    min_drop: float = setting(
        0.0,
        label="Minimum drop (beyond the paper, an assumption like TV; 0 = the paper's rule)",
        help="A rewording counts as a counterexample only when D > epsilon and p(true) "
        "also fell by more than this (in both stages, every bound and both sweeps). 0 is "
        "the paper's rule.",
        valid=Range(0.0, 1.0, high_open=True),
        changes_verdicts=True,
        form=FormHint(step=0.01, number_format="%.4f"),
    )
    use_imported_scores: bool = setting(
        False,
        label="Use imported scores",
        help="Also read cached scores that arrived in imported run bundles (kept apart, "
        "with their origin, and unverified; recorded in the run's provenance). Off: only "
        "scores this store computed.",
        changes_verdicts=False,
        form=FormHint(
            Section.HIDDEN, reason="the dashboard audits with scores this store computed"
        ),
    )
    min_label_mass: float = setting(
        MIN_LABEL_MASS,
        label="Minimum label mass (a checkpoint whose labels get less of its "
        "probability on the probe questions is refused: it is read where it does not "
        "answer)",
        help="The full-vocabulary probability of the two labels where they are read, "
        "median over the probe questions. Below this the checkpoint is refused at "
        "registration: its p(true) would be a letter prior.",
        valid=Range(0.0, 1.0),
        changes_verdicts=False,
        cli=Cli.CHECKPOINT,
        form=FormHint(step=0.05),
    )
    prompt_template: str | None = setting(
        None,
        label="Prompt template",
        help="The prompt wording the verifiers read (empty: the studio's default), so "
        "another tool's wording can be reproduced; part of each checkpoint's fingerprint, "
        "hence of the score cache key.",
        unset="the studio's default",
        **_WORDING,
    )
    answer_prefix: str | None = setting(
        None,
        label="Answer prefix",
        help="The text after the question where the answer label is read (empty: the "
        "studio's default); part of each checkpoint's fingerprint.",
        unset="the studio's default",
        **_WORDING,
    )
    system_message: str | None = setting(
        None,
        label="System message",
        help="A system message the verifiers read (empty: none); part of each "
        "checkpoint's fingerprint.",
        unset="none",
        **_WORDING,
    )
    prompt_date: str | None = setting(
        None,
        label="Prompt date",
        help="The date (YYYY-MM-DD) a chat template that writes today's date is pinned "
        "to; set to the run's start date when the run is created, so a resumed run reads "
        "the same prompts.",
        changes_verdicts=False,
        unset="not pinned",
        cli=Cli.NOT_AN_OPTION,
        cli_reason="set to the start date when a run is created",
        valid=IsoDate(),
        form=FormHint(Section.HIDDEN, reason="set to the start date when a run is created"),
    )

    def __post_init__(self) -> None:
        for declared in declared_settings(type(self)):
            value = getattr(self, declared.name)
            problem = declared.problem(value)
            if problem is not None:
                raise InputError(f"AuditConfig.{declared.name} {problem}, got {value!r}")
        # The one check across two settings: the bound after TV, L - delta, must be able to
        # reach the target.
        if self.target is not None and self.target + self.tv_delta >= 1.0:
            raise InputError(
                f"AuditConfig.target plus tv_delta ({self.tv_delta:g}) must stay below 1: the "
                f"bound after TV, L - delta, can never reach it, got {self.target!r}"
            )

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
        for s in declared_settings(cls):  # JSON stores tuples as lists
            if s.kind in (Kind.NAMES, Kind.NUMBER_PAIR) and isinstance(values.get(s.name), list):
                values[s.name] = tuple(values[s.name])
        return cls(**values)


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
