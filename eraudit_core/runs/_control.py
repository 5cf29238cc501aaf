"""A model audit that names a control: what it must score and what it must match.

The reading against a control uses every rewording both runs scored as replicates, so an
audit naming a control scores its full search and test budgets (continue after a
counterexample, do not stop at the target); the paper's verdicts are unchanged by that. The
control must stand on the audit's base, generators, budgets and k (`audit.null_mismatches`),
checked before anything is scored. The CLI's `audit` and the Run page both use this.
"""

from __future__ import annotations

from dataclasses import replace

from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig
from eraudit_core.null import AuditedContent, audited_model, mismatch_sentence, null_mismatches
from eraudit_core.runs._request import RunRequest
from eraudit_core.store import Store

FULL_BUDGETS_NOTE = (
    "a control is named: every question is scored on its full search and test budgets "
    "(--continue-after-counterexample --no-stop-at-target) so that the reading against the "
    "control has its replicates; the paper's verdicts are unchanged"
)


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
