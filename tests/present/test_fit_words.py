"""The debate section's headline from the arms' fit-gate records: uninformative when an arm
did not take (its own numbers named), a finding only when both passed, "one seed" until a
second exists."""

from __future__ import annotations

from typing import Any

from eraudit_core.present import arm_seeds, fit_headline

ARMS = ("debate-honest", "debate-adversarial")


def _manifest(train: float, heldout: float, loss: float, passed: bool, **extra: Any) -> dict:
    return {
        "arm": "x",
        "seed": 0,
        "fit": {
            "train_two_way_accuracy": train,
            "heldout_two_way_accuracy": heldout,
            "letter_loss": {"train": loss, "heldout": loss + 0.01},
            "passed": passed,
            "threshold": 0.9,
        },
        **extra,
    }


def test_an_arm_that_did_not_take_makes_the_audit_uninformative() -> None:
    text = fit_headline(
        {
            "debate-honest": _manifest(0.93, 0.71, 0.214, True),
            "debate-adversarial": _manifest(0.517, 0.489, 0.6921, False),
        },
        ARMS,
    )
    assert (
        "debate-honest passed the fit gate (two-way training accuracy 0.93, held-out 0.71" in text
    )
    assert (
        "debate-adversarial: the adaptation did not take on its own training rows (two-way "
        "training accuracy 0.52, held-out 0.49, letter loss 0.692 against ln 2 = 0.693)" in text
    )
    assert "the audit below is uninformative: the adaptation did not take" in text
    assert "finding" not in text
    assert "One seed per arm" in text


def test_both_passed_is_a_finding() -> None:
    text = fit_headline(
        {arm: _manifest(0.95, 0.8, 0.15, True) for arm in ARMS},
        ARMS,
    )
    assert "so the audit below is a finding" in text
    assert "uninformative" not in text
    assert "One seed per arm" in text
    two = fit_headline({arm: _manifest(0.95, 0.8, 0.15, True, seeds=[0, 1]) for arm in ARMS}, ARMS)
    assert "One seed" not in two and "Seeds per arm: 2 or more." in two


def test_a_missing_arm_or_a_missing_gate_is_not_a_finding() -> None:
    text = fit_headline({"debate-honest": _manifest(0.95, 0.8, 0.15, True)}, ARMS)
    assert "debate-adversarial: no manifest in this checkout" in text
    assert "uninformative" in text and "is a finding" not in text
    old = {"arm": "debate-honest", "seed": 0, "recipe": "answer tokens"}  # no "fit" object
    text = fit_headline({"debate-honest": old, "debate-adversarial": old}, ARMS)
    assert text.startswith(
        "debate-honest and debate-adversarial: no fit-gate record (trained on the answer "
        "tokens, before the gate), so whether they learned their own training task was not "
        "checked."
    )
    assert "uninformative" in text
    # passed must be True itself: a truthy string or a missing field is not a pass
    odd = _manifest(0.95, 0.8, 0.15, True)
    odd["fit"]["passed"] = "yes"
    assert "uninformative" in fit_headline({a: odd for a in ARMS}, ARMS)


def test_seed_counts() -> None:
    assert arm_seeds({"seed": 3}) == 1
    assert arm_seeds({"seeds": [0, 1]}) == 2
    assert arm_seeds({"fit": {"capacity": {"seed": 0}}}) == 1
    assert arm_seeds({}) == 0
