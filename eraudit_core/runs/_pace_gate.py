"""A gate through which a test sets the pace of an audit, so a browser test that watches a live
run never depends on the run being slower than the browser.

Honoured only when the environment variable ERAUDIT_TEST_PACE_GATE names a file; without it
`wait_for_pace` returns at once and costs one dictionary lookup. The file holds how many times
the engine may pass (an integer, or `open`); the engine counts its passages in FILE.passed,
which persists across processes, so a run resumed by another process goes on counting. The
engine passes the gate before each question and before each batch of the sequential test
(`AuditEngine._check_cancel`); while it waits it reads the store's cancel flag, so a cancel
still stops a run held at the gate.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from eraudit_core.store import Store

ENV = "ERAUDIT_TEST_PACE_GATE"
POLL_S = 0.2


def _allowed(gate: Path) -> float:
    try:
        text = gate.read_text(encoding="utf-8").strip()
    except OSError:
        return 0.0
    if text == "open":
        return float("inf")
    return float(text) if text.isdigit() else 0.0


def passages(gate: Path) -> int:
    """How many times an engine has passed the gate so far."""
    try:
        return int(Path(f"{gate}.passed").read_text(encoding="utf-8").strip() or 0)
    except (OSError, ValueError):
        return 0


def wait_for_pace(store: Store, run_id: str) -> bool:
    """Wait until the gate lets the engine take one more step; True when the run was cancelled
    while it waited (the caller then stops as for any cancel)."""
    name = os.environ.get(ENV)
    if not name:
        return False
    gate = Path(name)
    used = passages(gate)
    while _allowed(gate) <= used:
        if store.cancel_requested(run_id):
            return True
        time.sleep(POLL_S)
    tmp = Path(f"{gate}.passed.tmp")
    tmp.write_text(str(used + 1), encoding="utf-8")
    tmp.replace(f"{gate}.passed")
    return False
