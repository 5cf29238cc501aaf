"""Loading a run's two checkpoints and registering them in the store: the label-mass check
(a checkpoint read at the wrong slot is refused), the noise floor, and a served checkpoint's
comparison with its first registration."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from eraudit_core.method import AuditConfig, noise_floor_record
from eraudit_core.store import Store
from eraudit_core.verifier import (
    MIN_LABEL_MASS,
    MIN_TOP_SHARE,
    check_label_mass,
    measure_noise_floor,
    run_noise_floor,
    served_drift,
)


def _stored_label_mass(
    details: dict[str, Any], readout: str | None, minimum: float
) -> dict[str, Any] | None:
    """The label mass stored at an earlier registration of the same fingerprint (the
    fingerprint covers the weights, prompt format and readout, so the mass is the same), when
    it passes `minimum` by the same rule as `check_label_mass`; None to measure it again."""
    mass = details.get("label_mass") or {}
    if details.get("readout") != readout or mass.get("median") is None:
        return None
    if mass["median"] >= minimum:
        return dict(mass)
    share = mass.get("top_share")
    return dict(mass) if share is not None and share > MIN_TOP_SHARE else None


def register_checkpoint(
    store: Store,
    verifier: Any,
    name: str,
    *,
    min_label_mass: float = MIN_LABEL_MASS,
    step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Record a loaded checkpoint (fingerprint, name, description) in the store.

    The probe set is scored first: a checkpoint whose labels get a median label mass below
    `min_label_mass` is refused (read at the wrong slot), and the mass is kept in its details
    with the readout profile used. A served checkpoint is first compared with its earlier registration: its probe question
    must still get the log-probs it got then (`check_registration` refuses otherwise, before
    any cached score is reused), and that first registration stays the reference.
    """
    details = dict(verifier.describe())
    fmt = getattr(verifier, "format", None)
    details["readout"] = fmt.readout.name if fmt is not None else None
    check = getattr(verifier, "check_registration", None)
    known = store.checkpoints()
    row = known.loc[known["fingerprint"] == verifier.fingerprint]
    before = row["details"].iloc[0] if not row.empty else None
    stored = (json.loads(before) if isinstance(before, str) else before or {}) if before else {}
    # A local checkpoint's label mass and noise floor are measured once per fingerprint (the
    # same weights and prompt format give the same numbers); a served one is measured again,
    # since the server behind a name can change.
    again = (
        None
        if check is not None
        else _stored_label_mass(stored, details["readout"], min_label_mass)
    )
    if again is None:
        if step is not None:
            step(f"registering {name}: label-mass check")
        again = check_label_mass(verifier, min_label_mass)
    details["label_mass"] = again
    if check is not None:
        known = store.checkpoints()
        row = known.loc[known["fingerprint"] == verifier.fingerprint]
        if not row.empty:
            before = row["details"].iloc[0]
            registered = json.loads(before) if isinstance(before, str) else before or {}
            check(registered, row["registered_at"].iloc[0])
            drift = served_drift(registered, verifier)
            if drift is not None and drift != registered.get("noise_floor"):
                registered = {**registered, "noise_floor": drift}
                store.register_checkpoint(verifier.fingerprint, row["name"].iloc[0], registered)
            return registered
    if not stored.get("noise_floor") and step is not None:
        step(f"registering {name}: precision probe")
    # measured once per fingerprint (the same weights give the same floor)
    details["noise_floor"] = stored.get("noise_floor") or measure_noise_floor(verifier)
    store.register_checkpoint(verifier.fingerprint, name, details)
    return details


def _load_checkpoints(
    store: Store,
    pre_spec: str,
    post_spec: str,
    config: AuditConfig,
    run_id: str | None = None,
    step: Callable[[str], None] | None = None,
) -> tuple[Any, Any]:
    """Load and register both checkpoints (read with the run's wording and readout); a run
    records the noise floor it uses: the larger of the two checkpoints' measured floors, or
    the auditor's declared one if larger. Two local checkpoints on one base share one copy of
    it (`load_checkpoint`'s share_base): the second load only adds its adapter."""
    from eraudit_core.verifier import load_checkpoint, parse_spec

    say = step or (lambda what: None)
    settings = config.prompt_settings()
    say(f"loading {pre_spec} weights")
    pre = load_checkpoint(parse_spec(pre_spec), **settings)
    a, b = parse_spec(pre_spec), parse_spec(post_spec)
    shared = getattr(a, "base", None) is not None and getattr(a, "base", None) == getattr(
        b, "base", None
    )
    say(f"loading {post_spec}" + (" (adapter on the shared base)" if shared else " weights"))
    post = load_checkpoint(b, **settings)
    details = [
        register_checkpoint(store, v, s, min_label_mass=config.min_label_mass, step=step)
        for v, s in ((pre, pre_spec), (post, post_spec))
    ]
    if run_id is not None:
        measured = run_noise_floor(details)
        declared = (store.run(run_id)["provenance"].get("noise_floor") or {}).get("value")
        store.update_run_provenance(run_id, {"noise_floor": noise_floor_record(measured, declared)})
    return pre, post
