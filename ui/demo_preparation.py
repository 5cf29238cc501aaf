"""The embedded demo's finished runs, built in the background on a store's first launch.

Why: auditing the shipped score tables of the five demo arms costs about a minute of CPU on a
2-core machine, and Home waited for all of it before showing anything. The one-click live
audit needs none of it (`demo.demo_start` gives it the questions in a second or two), so Home
is drawn at once, says what is being prepared, and fills in when the runs are stored.

The preparation gives way to the work a user is waiting for: while the one-click audit's
checkpoints load or any audit of this process runs, it waits between two questions of the
demo runs (the engine's cancel check, which it never answers with a cancel), so the live
audit has the cores to itself. This module does not import streamlit: `ui.store_access`
keeps one preparation per store and process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

# How often a paused preparation looks again whether it may go on: short beside an audit's
# tens of seconds, long enough that the waiting costs nothing.
PAUSE_POLL_S = 0.5
# Set while the one-click audit's checkpoints load in the background
# (`widgets.preload_demo_models`): the preparation waits for them.
MODELS_LOADING = threading.Event()


class DemoPreparation:
    """`prepare(pause)` in a daemon thread, where `pause` is the engine's `should_cancel`: it
    blocks while `busy()` is true and then lets the preparation go on (it never cancels)."""

    def __init__(
        self,
        prepare: Callable[[Callable[[], bool]], dict[str, Any]],
        busy: Callable[[], bool],
        poll_s: float = PAUSE_POLL_S,
    ) -> None:
        self._prepare = prepare
        self._busy = busy
        self._poll_s = poll_s
        self.result: dict[str, Any] | None = None
        self.error: str | None = None
        self.paused = False
        self._thread = threading.Thread(target=self._run, name="demo-preparation", daemon=True)

    def start(self) -> DemoPreparation:
        self._thread.start()
        return self

    @property
    def finished(self) -> bool:
        return self._thread.ident is not None and not self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the preparation ended (or `timeout` s passed); True if it ended."""
        self._thread.join(timeout)
        return self.finished

    def give_way(self) -> bool:
        """Wait while something the user waits for needs the cores; never asks to cancel."""
        while self._busy():
            self.paused = True
            time.sleep(self._poll_s)
        self.paused = False
        return False

    def _run(self) -> None:
        self.give_way()
        try:
            self.result = self._prepare(self.give_way)
        except BaseException as exc:  # the page shows it; a broken demo never takes it down
            self.error = f"{type(exc).__name__}: {exc}"
