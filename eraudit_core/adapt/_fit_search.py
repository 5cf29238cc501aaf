"""The capacity search: the smallest capacity whose two-way training accuracy reaches 0.9 for
both debate arms, one recipe for both, chosen by the fit gate alone.

Why this shape: no setting may be chosen by looking at the audit, so the only signal read is
each arm's accuracy on its own training rows. Capacities are tried smallest first (by trained
parameters); within one, the honest arm trains first and the adversarial arm only when the
honest one passed, since a capacity fails as soon as one arm fails. Every run checkpoints
under the work folder, so the search stops at its deadline and a second call with the same
arguments continues exactly where it stopped. The JSON log holds every run's fit curve.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from eraudit_core.adapt._debate_data import DEBATE_FILES
from eraudit_core.adapt._fit_run import run_fit_arm
from eraudit_core.adapt._fit_training import FitConfig

SEARCH_LOG = "search_log.json"


def search_capacity(
    capacities: Sequence[str],
    work: Path,
    *,
    recipe: FitConfig,
    base: str = "demo:base",
    cache_root: Path | None = None,
    trunk_layer: int | None = None,
    deadline: float | None = None,
    command: str = "",
    progress: Callable[[str], None] = print,
    run_arm: Callable[..., dict[str, Any]] = run_fit_arm,
) -> dict[str, Any]:
    """Run the search (resuming whatever `work` already holds) until a capacity passes for
    both arms, the list is exhausted, or `deadline` (a `time.time()`) passes.

    Returns the log also written to `work/search_log.json`: per capacity and arm the run's
    status, fit curve and, once trained, its fit; `chosen` is the passing capacity or None.
    `run_arm`: what trains one arm (`run_fit_arm`; tests pass a stand-in).
    """
    work.mkdir(parents=True, exist_ok=True)
    log: dict[str, Any] = {
        "command": command,
        "recipe": {k: v for k, v in recipe.recipe().items() if k != "capacity"},
        "capacities": list(capacities),
        "deadline_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(deadline))
        if deadline
        else None,
        "runs": {},
        "chosen": None,
        "status": "running",
    }
    path = work / SEARCH_LOG

    def save() -> None:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(log, indent=2) + "\n")
        os.replace(tmp, path)

    save()
    for capacity in capacities:
        config = replace(recipe, capacity=capacity)
        passed_all = True
        for arm in DEBATE_FILES:
            result = run_arm(
                arm,
                work / capacity,
                work / capacity / "arms",
                config=config,
                base=base,
                cache_root=cache_root,
                trunk_layer=trunk_layer,
                resume=True,
                deadline=deadline,
                command=command,
                progress=progress,
            )
            log["runs"].setdefault(capacity, {})[arm] = result
            save()
            if result["status"] != "complete":
                log["status"] = "stopped at the deadline (resumable)"
                save()
                return log
            if not result["fit"]["passed"]:
                passed_all = False
                break
        if passed_all:
            log["chosen"] = capacity
            log["status"] = "passed"
            save()
            return log
    log["status"] = "no capacity passed"
    save()
    return log
