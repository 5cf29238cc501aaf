"""Where the bundled data and the user's caches live: one place, so every part agrees.

The bundled data (benchmark, demo adapters, paraphrase sets, demo runs, sensitivity sample)
sits in the checkout's `data/`. A non-editable install carries a copy under
`<prefix>/share/eraudit-studio/data` (pyproject's data-files). `ERAUDIT_DATA` overrides both.
Derived files (the dequantised demo model) go to a user cache, never into the repository.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_HERE = Path(__file__).resolve()
_SHARE = Path("share") / "eraudit-studio" / "data"


def data_dir() -> Path:
    """The bundled data folder: $ERAUDIT_DATA, the checkout's data/, or the install's copy."""
    env = os.environ.get("ERAUDIT_DATA")
    if env:
        return Path(env).expanduser().resolve()
    candidates = [
        _HERE.parents[1] / "data",  # a checkout (editable install or PYTHONPATH)
        Path(sys.prefix) / _SHARE,  # pip install . into this environment
    ]
    if len(_HERE.parents) > 4:  # pip install --prefix P: P/lib/pythonX.Y/site-packages/...
        candidates.append(_HERE.parents[4] / _SHARE)
    for path in candidates:
        if (path / "benchmarks").is_dir():
            return path
    return candidates[0]


DATA_DIR = data_dir()


def cache_dir() -> Path:
    """User cache for derived files (the dequantised demo model); never inside the repo."""
    env = os.environ.get("ERAUDIT_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "eraudit"
