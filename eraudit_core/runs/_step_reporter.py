"""A run's live step: what its worker is doing now and where the time went, written to the
run for any page that polls the store (the engine's `on_step` and the checkpoint loading)."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable
from typing import Any

from eraudit_core.errors import CancelledError, StoreError
from eraudit_core.store import Store


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class StepReporter:
    """What a run's worker is doing, written to the run (`phase`) as it starts each step, so
    any page polling the store can show "Step: <what> (<N> s)" with N counted from `origin`
    (the click that started the run). Each finished step's seconds go to `log`: where the
    time went. Asking for the next step is also where a cancel requested while loading takes
    effect (CancelledError), since loading cannot stop half way."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        origin: dt.datetime | None = None,
        should_cancel: Callable[[], bool] | None = None,
    ) -> None:
        self.store, self.run_id, self.should_cancel = store, run_id, should_cancel
        self.watch_store = False  # also read the store's cancel flag (a run not yet claimed)
        self.origin = origin or _utcnow()
        self.log: list[dict[str, Any]] = []
        self.what: str | None = None
        self.since = self.origin

    def cancelled(self) -> bool:
        if self.should_cancel is not None and self.should_cancel():
            return True
        return self.watch_store and self.store.cancel_requested(self.run_id)

    def __call__(self, what: str | None) -> None:
        """Start step `what` (None: the worker stopped)."""
        now = _utcnow()
        seconds = round((now - self.since).total_seconds(), 3)
        if self.what is not None:
            self.log.append({"step": self.what, "seconds": seconds})
        elif not self.log and seconds >= 0.5:  # from the click to the worker's first step
            self.log.append({"step": "starting", "seconds": seconds})
        self.what, self.since = what, now
        with contextlib.suppress(StoreError):  # a busy store must not fail the audit
            self.store.set_run_phase(
                self.run_id,
                {
                    "origin": self.origin.isoformat(),
                    "step": what,
                    "since": now.isoformat(),
                    "log": self.log,
                },
            )
        if what is not None and self.cancelled():
            raise CancelledError(f"run {self.run_id} was cancelled while {what}")
