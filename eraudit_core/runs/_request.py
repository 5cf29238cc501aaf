"""`RunRequest`: the one description of an audit of two checkpoints, as the CLI and the Run page
hand it to the engine, and `EpsilonSource`: where its epsilon came from.

A request is validated when it is made (before anything is stored or loaded); what it adds to
the run's provenance (where epsilon came from, a declared noise floor, the control run) is
worked out here, once, for every caller.

An audit that names a control (`request_with_control`) scores its full search and test
budgets (continue after a counterexample, do not stop at the target), because the reading
against a control uses every rewording both runs scored as replicates; the paper's verdicts
are unchanged by that. The control must stand on the audit's base, generators, budgets and k
(`null_mismatches`), checked before anything is scored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig, noise_floor_record
from eraudit_core.null import (
    AuditedContent,
    audited_model,
    epsilon_from,
    mismatch_sentence,
    null_mismatches,
)
from eraudit_core.store import Store

# The keys of a calibrated epsilon's provenance record that EpsilonSource names (record key ->
# attribute); every other key of the record (which percentile or level, sample size, overlap
# with the audited questions, whatever calibration records later) travels in `details`.
_NAMED = {"value": "value", "calibration": "calibration", "calibration_run": "source_run"}
# Calibrations recorded before calibrations had modes were all percentiles of D on a model
# organism.
_DEFAULT_MODE = "organism"

FULL_BUDGETS_NOTE = (
    "a control is named: every question is scored on its full search and test budgets "
    "(--continue-after-counterexample --no-stop-at-target) so that the reading against the "
    "control has its replicates; the paper's verdicts are unchanged"
)


@dataclass(frozen=True)
class EpsilonSource:
    """Where a run's epsilon came from: stated by the auditor (`calibration` None), or a
    stored calibration `calibration` of kind `mode` (e.g. 'organism': a percentile of D)
    made on run `source_run`.

    `details` keeps the rest of the calibration's provenance record as it was recorded (the
    percentile, sample size, overlap with the audited questions, ...), so a calibration that
    records more fields needs no change here.
    """

    value: float
    calibration: str | None = None
    mode: str | None = None
    source_run: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, int | float):
            raise InputError(f"epsilon must be a number, got {self.value!r}")
        if not math.isfinite(self.value):
            raise InputError(f"epsilon must be a finite number, got {self.value!r}")
        if self.calibration is not None and not (self.mode and self.source_run):
            raise InputError(
                f"epsilon from calibration {self.calibration!r} must name its mode and the "
                "run it was calibrated on"
            )
        object.__setattr__(self, "value", float(self.value))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @classmethod
    def stated(cls, value: float) -> EpsilonSource:
        """Epsilon typed by the auditor."""
        return cls(value)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> EpsilonSource:
        """A calibrated epsilon from its provenance record (`epsilon_from`'s, or a stored
        run's `provenance["epsilon_from"]`)."""
        missing = [k for k in _NAMED if record.get(k) is None]
        if missing:
            raise InputError(f"epsilon provenance record: missing {', '.join(missing)}")
        named = {attr: record[key] for key, attr in _NAMED.items()}
        details = {k: v for k, v in record.items() if k not in _NAMED and k != "mode"}
        mode = str(record.get("mode") or _DEFAULT_MODE)
        return cls(mode=mode, details=details, **named)

    @property
    def calibrated(self) -> bool:
        return self.calibration is not None

    @property
    def spec(self) -> str | None:
        """What `--epsilon-from` took: `NAME:p25` for a percentile, else `NAME` (None for a
        stated epsilon)."""
        if not self.calibrated:
            return None
        key = self.details.get("percentile")
        return f"{self.calibration}:{key}" if key else self.calibration

    def to_record(self) -> dict[str, Any] | None:
        """The run's `provenance["epsilon_from"]` (None for a stated epsilon, which the
        config alone records)."""
        if not self.calibrated:
            return None
        return {
            "calibration": self.calibration,
            "mode": self.mode,
            "value": self.value,
            "calibration_run": self.source_run,
            **self.details,
        }


def epsilon_source(
    store: Store, spec: str, *args: Any, **kwargs: Any
) -> tuple[EpsilonSource, list[str]]:
    """(the calibrated epsilon `spec` names, warnings): `epsilon_from`'s answer, typed. The
    other arguments (the audited questions, ...) are `epsilon_from`'s; its warnings name, for
    one, a calibration made on the questions being audited (selection)."""
    _, record, warnings = epsilon_from(store, spec, *args, **kwargs)
    return EpsilonSource.from_record(record), warnings


@dataclass(frozen=True)
class RunRequest:
    """One audit of `post_spec` against `pre_spec`: what the CLI's `audit` and the Run page
    build and `run_model_audit` / `launch_audit` take.

    `pair_ids` empty: every pair of the benchmark (the first `limit` of them when set).
    `epsilon` given as an `EpsilonSource`: the config's epsilon is set from it, so the two
    cannot disagree. `control`: a run shown beside this one. `noise_floor`: a numerical-precision
    floor the auditor declares (the larger of it and the measured one is used).
    """

    benchmark: str
    pre_spec: str
    post_spec: str
    config: AuditConfig = field(default_factory=AuditConfig)
    pair_ids: tuple[str, ...] = ()
    limit: int | None = None
    label: str = ""
    control: str | None = None
    epsilon: EpsilonSource | None = None
    noise_floor: float | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.config, AuditConfig):
            raise InputError(f"RunRequest.config must be an AuditConfig, got {self.config!r}")
        for name in ("benchmark", "pre_spec", "post_spec"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"RunRequest.{name} must be a non-empty text, got {value!r}")
            set_(self, name, value.strip())
        if isinstance(self.pair_ids, str) or not all(isinstance(p, str) for p in self.pair_ids):
            raise InputError(f"RunRequest.pair_ids must be pair ids, got {self.pair_ids!r}")
        set_(self, "pair_ids", tuple(self.pair_ids))
        if self.limit is not None and not (
            isinstance(self.limit, int) and not isinstance(self.limit, bool) and self.limit >= 1
        ):
            raise InputError(
                f"limit must be a whole number >= 1 (pairs to audit), got {self.limit!r}"
            )
        set_(self, "label", (self.label or "").strip())
        if self.control is not None:
            set_(self, "control", str(self.control).strip() or None)
        if self.noise_floor is not None and not (
            isinstance(self.noise_floor, int | float)
            and math.isfinite(self.noise_floor)
            and 0.0 <= self.noise_floor < 1.0
        ):
            raise InputError(f"--noise-floor must lie in [0, 1), got {self.noise_floor!r}")
        if self.epsilon is not None and self.config.epsilon != self.epsilon.value:
            set_(self, "config", replace(self.config, epsilon=self.epsilon.value))

    @property
    def epsilon_source(self) -> EpsilonSource:
        """Where epsilon came from (stated, when no calibration was named)."""
        return self.epsilon or EpsilonSource.stated(self.config.epsilon)

    def check(self, store: Store) -> None:
        """What only the store can tell: the benchmark and the control run exist (InputError
        naming them)."""
        store.pairs(self.benchmark)
        if self.control is not None:
            store.run(self.control)

    def provenance(self) -> dict[str, Any]:
        """What the request adds to the run's provenance record."""
        return run_provenance_extras(self.epsilon_source, self.control, self.noise_floor)


def run_provenance_extras(
    epsilon: EpsilonSource | None, control: str | None, noise_floor: float | None
) -> dict[str, Any]:
    """The provenance keys a new run records about its request: `epsilon_from` (a calibrated
    epsilon), `noise_floor` (declared), `control_run`. A score-table run uses it too."""
    out: dict[str, Any] = {}
    record = epsilon.to_record() if epsilon is not None else None
    if record is not None:
        out["epsilon_from"] = record
    if noise_floor is not None:
        if not (math.isfinite(noise_floor) and 0.0 <= noise_floor < 1.0):
            raise InputError(f"--noise-floor must lie in [0, 1), got {noise_floor!r}")
        out["noise_floor"] = noise_floor_record(None, noise_floor)
    if control:
        out["control_run"] = control
    return out


def with_control_origin(store: Store, provenance: dict[str, Any]) -> dict[str, Any]:
    """`provenance` plus `control_imported_from` when its control run came in a bundle: a run
    read against imported material says so in its own record, not only on the pages that
    show the control."""
    control = provenance.get("control_run")
    if not control or not store.has_run(str(control)):
        return provenance
    imported = store.run(str(control)).get("imported_from")  # parsed by the store
    if not isinstance(imported, Mapping):
        return provenance
    origin = imported.get("file")
    return {**provenance, "control_imported_from": origin or "a bundle"}


def full_budgets(config: AuditConfig) -> AuditConfig:
    """`config` scoring every paraphrase of both budgets."""
    if config.continue_after_counterexample and not config.stop_at_target:
        return config
    return replace(config, continue_after_counterexample=True, stop_at_target=False)


def check_control(store: Store, control: str, audited: AuditedContent) -> None:
    """InputError (CLI exit 2) naming every way the stored `control` does not stand on what
    the `audited` content stands on (`audit.null_mismatches`); also when it is not stored."""
    store.run(control)  # InputError naming an unknown run
    mismatches = null_mismatches(store, control, audited)
    if mismatches:
        raise InputError(
            mismatch_sentence(control, mismatches)
            + "; name a control run made on the same base, generators, budgets, k and "
            "paraphrases"
        )


def request_with_control(store: Store, request: RunRequest, control: str | None) -> RunRequest:
    """`request` naming `control` (checked) and scoring its full budgets; unchanged when
    `control` is empty."""
    control = (control or "").strip() or None
    if control is None:
        return request
    request = replace(request, control=control, config=full_budgets(request.config))
    config = request.config
    settings = {
        "k": config.k,
        "search_budget": config.search_budget,
        "test_budget": config.test_budget,
        "test_generators": list(config.test_generators),
        "search_generators": list(config.search_generators),
    }
    check_control(
        store, control, audited_model(store, request.post_spec, request.pre_spec, settings)
    )
    return request
