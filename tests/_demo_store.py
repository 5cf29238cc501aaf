"""The embedded demo imported once per test process and copied for each test that needs it.

Why: importing the demo (five runs, two of 222 questions) takes 80-110 s on the 2-core
machine; tests that only read it or add a run to it start from a copy instead. Tests of the
import itself (Home's first launch, an interrupted `eraudit demo`) still import from scratch.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

_TEMPLATE: Path | None = None


def demo_store_copy(dest: Path) -> Path:
    """A fresh copy of the imported demo store at `dest` (a .duckdb path); `ensure_demo` on it
    finds everything in place and only returns the run ids."""
    global _TEMPLATE
    if _TEMPLATE is None:
        from eraudit_core.demo import ensure_demo
        from eraudit_core.store import Store

        path = Path(tempfile.mkdtemp(prefix="eraudit-demo-")) / "demo.duckdb"
        with Store(path) as store:
            ensure_demo(store)
        _TEMPLATE = path
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(_TEMPLATE, dest)
    return dest
