"""An arm and the control it names, as two table runs with known paired differences (the
Explorer's filters on the reading against the control and on the adaptation taking).

The rewordings of both runs share their texts and pre scores; the control's post score is
CONTROL_POST on every rewording and the arm's is CONTROL_POST minus DIFFS[question][i].
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from eraudit_core.method import AuditConfig
from eraudit_core.runs import audit_table_run
from eraudit_core.store import Store
from tests.runs.test_audit import hidden, monitored, write_table

PRE = 0.75
CONTROL_POST = 0.70
# control minus arm post score per rewording: q_worse is about 10 points below its control,
# q_better about 10 points above, q_within even on average, q_few has 3 paired rewordings
DIFFS = {
    "q_worse": [0.08, 0.10, 0.12, 0.10, 0.09, 0.11],
    "q_better": [-0.08, -0.10, -0.12, -0.10, -0.09, -0.11],
    "q_within": [0.01, -0.01, 0.02, -0.02, 0.0, 0.0],
    "q_few": [0.1, 0.1, 0.1],
}
# the arm's adaptation took on two questions (gain 0.2) and not on two (gain 0, <= k)
ARM_GAINS = {"q_worse": 0.2, "q_better": 0.0, "q_within": 0.2, "q_few": 0.0}


def _table(path: Path, arm: bool, gains: dict[str, float]) -> Path:
    rows: list[list] = []
    for pid, diffs in DIFFS.items():
        rows += [monitored(pid, pre=0.5, post=0.5 + gains[pid]), hidden(pid)]
        for i, d in enumerate(diffs):
            post = CONTROL_POST - d if arm else CONTROL_POST
            role, gen, idx = ("search", "s", i) if i < 2 else ("test", "g1", i - 2)
            rows.append([pid, role, gen, idx, f"{pid} rewording {i}", PRE, post])
    return write_table(path, rows)


def arm_and_control(store: Store, work: Path, arm_k: float = 0.001) -> tuple[str, str]:
    """(arm run id, control run id), the arm naming the control in its provenance; an
    `arm_k` other than the control's 0.001 makes a control that does not match the arm."""
    cfg = AuditConfig(epsilon=0.1, confidence=0.75, target=0.5, k=0.001)
    control = audit_table_run(
        store, _table(work / "control.csv", False, dict.fromkeys(DIFFS, 0.2)), cfg, label="control"
    )
    arm = audit_table_run(
        store,
        _table(work / "arm.csv", True, ARM_GAINS),
        replace(cfg, k=arm_k),
        label="arm",
        provenance={"control_run": control},
    )
    return arm, control
