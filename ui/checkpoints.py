"""Checkpoints from the dashboard: check a spec's text, and load, fingerprint and store one."""

from __future__ import annotations

from typing import Any

from ui.store_access import get_store


def validate_checkpoint_spec(text: str) -> str:
    """Parse a checkpoint spec (local or served) without loading it; returns its canonical text."""
    from eraudit_core.verifier import parse_spec

    return parse_spec(text).text


def register_checkpoint(
    spec_text: str, name: str = "", *, readout: str | None = None, min_label_mass: float = 0.5
) -> dict[str, Any]:
    """Load a checkpoint once (cached by the verifier module), fingerprint and store it.

    The probe set's label mass must reach `min_label_mass` (else the error names the readout
    to try); `readout` overrides the detected readout profile. A served checkpoint is checked
    against its earlier registration (its probe question must still get the same log-probs)
    before anything is stored."""
    from eraudit_core.runs import register_checkpoint as register
    from eraudit_core.verifier import load_checkpoint, parse_spec

    spec = parse_spec(spec_text)
    verifier = load_checkpoint(spec, readout=readout)
    details = register(get_store(), verifier, name or spec.text, min_label_mass=min_label_mass)
    return {"fingerprint": verifier.fingerprint, **details}
