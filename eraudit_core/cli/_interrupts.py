"""Ctrl-C during a run: stop after the current batch, leave the run `cancelled`, exit 130.

Exit codes of `eraudit`: 0 success, 1 a run cancelled from elsewhere (the dashboard's Cancel
button), 2 bad input or a store that cannot be used, 130 Ctrl-C (the shell's 128 + SIGINT).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_CANCELLED = 1
EXIT_INTERRUPTED = 130

CTRL_C = threading.Event()


@contextmanager
def ctrl_c_cancels() -> Iterator[threading.Event]:
    """While a run goes on, the first Ctrl-C asks it to stop after the current batch (so the
    store is left tidy, status `cancelled`); a second Ctrl-C stops at once."""
    if threading.current_thread() is not threading.main_thread():
        yield CTRL_C
        return

    def first(signum: int, frame: object) -> None:
        CTRL_C.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        print(
            "\neraudit: stopping after the current batch (press Ctrl-C again to stop at once)",
            file=sys.stderr,
            flush=True,
        )

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield CTRL_C
    finally:
        signal.signal(signal.SIGINT, previous)
