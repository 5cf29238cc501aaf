"""Another process that keeps doing something with a store until the test lets it go.

Why a helper: the shared-store tests need a second, real process (file locks are per process),
ready before the test goes on and stopped cleanly afterwards.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager


@contextmanager
def other_process(code: str) -> Iterator[subprocess.Popen]:
    """Run `code` (Python) in a new interpreter; it must print "ready" when set up, and it is
    held alive until the block ends (its stdin closes)."""
    body = textwrap.dedent(code) + '\nprint("ready", flush=True)\nsys.stdin.read()\n'
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys\n" + body],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        assert line == "ready", f"the other process did not start: {line!r}"
        yield proc
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=30)


def holding_raw_connection(db: str) -> AbstractContextManager[subprocess.Popen]:
    """A program outside ER-Audit that opens the store and never lets go (a duckdb shell)."""
    return other_process(f"import duckdb\ncon = duckdb.connect({db!r})")
