"""Live traffic of a run scored by served checkpoints: requests in flight and prompts per second.

A request may carry several prompts (`batch=N`): `in_flight` counts requests,
`prompts_in_flight` the prompts in them, `prompts` and prompts/s count prompts.

Why in the store: the Run page polls the store, so a run started from the command line, from
another tab or before an app restart shows the same numbers. A sampler thread reads the
verifiers' cumulative counters (`traffic()`, which served verifiers have and local ones do
not) about once a second while the engine runs, and writes one snapshot per change; prompts/s
is measured over the last `WINDOW_S` seconds, so it follows the run rather than its average.
Counts start at zero when the engine starts (or resumes) the run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from eraudit_core.errors import ERAuditError
from eraudit_core.store import Store

log = logging.getLogger(__name__)

WINDOW_S = 10.0
# Counters that say what is happening now (requests, and the prompts in them, in flight), not
# cumulative totals: never taken relative to the start.
GAUGES = frozenset({"in_flight", "prompts_in_flight"})


class TrafficRecorder:
    """Samples `verifiers` into `store` for `run_id` between `start()` and `stop()`."""

    def __init__(
        self, store: Store, run_id: str, verifiers: Sequence[Any], interval_s: float = 1.0
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.sources = [v for v in verifiers if callable(getattr(v, "traffic", None))]
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._history: deque[tuple[float, int]] = deque()
        self._last: dict[str, Any] | None = None
        self._base: tuple[float, dict[str, int]] | None = None
        self.peak_in_flight = 0
        self.peak_prompts_in_flight = 0

    def snapshot(self) -> dict[str, Any]:
        """Counts since `start()` summed over the verifiers (a verifier object lives as long
        as its process), requests in flight now, and prompts/s over the recent window."""
        seen: set[int] = set()
        total: dict[str, int] = {}
        for v in self.sources:
            if id(v) in seen:  # pre and post may be the same served checkpoint
                continue
            seen.add(id(v))
            for key, value in v.traffic().items():
                total[key] = total.get(key, 0) + int(value)
        now = time.monotonic()
        if self._base is None:
            self._base = (now, dict(total))
        t_start, base = self._base
        counts = {k: v - (0 if k in GAUGES else base.get(k, 0)) for k, v in total.items()}
        prompts = counts.get("prompts", 0)
        self._history.append((now, prompts))
        while len(self._history) > 2 and now - self._history[0][0] > WINDOW_S:
            self._history.popleft()
        t0, p0 = self._history[0]
        rate = (prompts - p0) / (now - t0) if now > t0 else 0.0
        overall = prompts / (now - t_start) if now > t_start else 0.0
        self.peak_in_flight = max(self.peak_in_flight, counts.get("in_flight", 0))
        self.peak_prompts_in_flight = max(
            self.peak_prompts_in_flight, counts.get("prompts_in_flight", 0)
        )
        return {
            **counts,
            "prompts_per_s": round(rate, 3),
            "prompts_per_s_session": round(overall, 3),
            "peak_in_flight": self.peak_in_flight,
            "peak_prompts_in_flight": self.peak_prompts_in_flight,
            "window_s": WINDOW_S,
            "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }

    def _write(self, snap: dict[str, Any]) -> None:
        changed = {k: v for k, v in snap.items() if k != "updated_at"}
        if self._last != changed:
            self.store.set_run_traffic(self.run_id, snap)
            self._last = changed

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._write(self.snapshot())
            except ERAuditError:  # the store refused the write: a display aid never stops the audit
                log.exception("recording the traffic of run %s", self.run_id)

    def start(self) -> TrafficRecorder:
        if self.sources:
            self.snapshot()  # the baseline of the prompts/s window
            self._thread = threading.Thread(
                target=self._loop, name=f"traffic-{self.run_id}", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(10)
        try:
            self._write({**self.snapshot(), **dict.fromkeys(GAUGES, 0)})
        except ERAuditError:  # a store error here must not hide how the run itself ended
            log.exception("recording the traffic of run %s", self.run_id)
