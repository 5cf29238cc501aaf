"""The layering contracts in pyproject.toml hold, and they do catch an upward import.

Negative control: the same `lint-imports` run on a copy of the tree with one deliberately added
upward import (store -> method) must fail and name that import; a contract that cannot fail
would pass both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def test_contracts_are_kept() -> None:
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "BROKEN" not in out.stdout


def test_an_upward_import_breaks_the_layers(tmp_path: Path) -> None:
    for name in ("eraudit_core", "ui", "pages"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    store = tmp_path / "eraudit_core" / "store" / "_store.py"
    store.write_text(store.read_text() + "\nfrom eraudit_core.method import AuditConfig  # noqa\n")
    out = _lint(tmp_path)
    assert out.returncode != 0
    assert "eraudit_core.store is not allowed to import eraudit_core.method" in out.stdout
    assert "eraudit_core.store._store -> eraudit_core.method" in out.stdout
