"""Background audit runs: a thread per run that writes to the store and never touches a UI.

Pages start a job and poll the store; the thread reports through the store (steps, progress,
status), so a browser reload or a second tab sees the same state. Cancelling sets a flag that
the engine checks between steps; what was stored stays stored and the run can be resumed.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eraudit_core.errors import CancelledError


@dataclass
class Job:
    """A running or finished background run."""

    run_id: str
    thread: threading.Thread
    cancel_event: threading.Event = field(default_factory=threading.Event)
    error: str | None = None
    # The engine's latest report (`runs.Progress`), kept in memory so a page can tell that
    # something was scored without reading the store the audit writes to.
    progress: Any = None

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def cancel(self) -> None:
        self.cancel_event.set()


class JobRunner:
    """Owns the background threads of one process (one per run id)."""

    def __init__(self, prepare: Callable[[], object] | None = None) -> None:
        """`prepare` runs first in each job's thread, before its work (the dashboard sets the
        model's thread count there, so a click never waits for torch to import)."""
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._prepare = prepare

    def start(self, run_id: str, work: Callable[[threading.Event], None]) -> Job:
        """Run `work(cancel_event)` in a daemon thread unless that run is already running."""
        with self._lock:
            existing = self._jobs.get(run_id)
            if existing and existing.alive:
                return existing
            cancel = threading.Event()
            job = Job(run_id, threading.Thread(target=lambda: None), cancel)

            def target() -> None:
                try:
                    if self._prepare is not None:
                        self._prepare()
                    work(cancel)
                except CancelledError:
                    pass
                except BaseException as exc:  # the store already records the failure
                    job.error = f"{type(exc).__name__}: {exc}"
                    traceback.print_exc()

            job.thread = threading.Thread(target=target, name=f"audit-{run_id}", daemon=True)
            self._jobs[run_id] = job
            job.thread.start()
            return job

    def reporter(self, run_id: str) -> Callable[[Any], None]:
        """A progress callback for the engine of run `run_id`: each report is kept on the
        run's current job (`Job.progress`)."""

        def report(progress: Any) -> None:
            job = self._jobs.get(run_id)
            if job is not None:
                job.progress = progress

        return report

    def get(self, run_id: str) -> Job | None:
        return self._jobs.get(run_id)

    def running(self) -> list[str]:
        return [rid for rid, job in self._jobs.items() if job.alive]

    def cancel(self, run_id: str) -> None:
        job = self._jobs.get(run_id)
        if job:
            job.cancel()

    def join(self, run_id: str, timeout: float | None = None) -> None:
        job = self._jobs.get(run_id)
        if job:
            job.thread.join(timeout)
