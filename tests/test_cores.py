"""Torch's OpenMP threads wait by sleeping in the dashboard and the CLI (eraudit_core/cores.py).

Each check runs in a fresh interpreter, because OpenMP reads OMP_WAIT_POLICY once, when torch
loads; OMP_DISPLAY_ENV=VERBOSE makes GNU OpenMP print the settings it took, so the checks
read what the library itself uses, not only the variable: a passive wait is a spin count of 0
(the default spins 300,000 times before it sleeps, ACTIVE 30 billion).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
USE_TORCH = "import torch\ntorch.ones(64, 64) @ torch.ones(64, 64)\n"


def _openmp_spin_count(code: str, **env: str) -> tuple[str, int]:
    """(what the code printed, the spin count OpenMP reports) for `code` run fresh."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**base, "OMP_DISPLAY_ENV": "VERBOSE", "HF_HUB_OFFLINE": "1", **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    spins = [ln.split("=")[1].strip().strip("'") for ln in done.stderr.splitlines()
             if ln.strip().startswith("GOMP_SPINCOUNT")]  # fmt: skip
    assert spins, done.stderr[-2000:]
    return done.stdout.strip(), int(spins[0])


def test_threads_sleep_while_they_wait_when_set_before_torch_loads() -> None:
    said, spins = _openmp_spin_count(
        "from eraudit_core.cores import passive_omp_wait\nprint(passive_omp_wait())\n" + USE_TORCH
    )
    assert (said, spins) == ("True", 0)


def test_an_explicit_policy_is_obeyed() -> None:
    said, spins = _openmp_spin_count(
        "from eraudit_core.cores import passive_omp_wait\nprint(passive_omp_wait())\n" + USE_TORCH,
        OMP_WAIT_POLICY="ACTIVE",
    )
    assert said == "False" and spins > 300_000


def test_too_late_once_torch_is_loaded_and_it_says_so() -> None:
    said, spins = _openmp_spin_count(
        USE_TORCH + "from eraudit_core.cores import passive_omp_wait\nprint(passive_omp_wait())\n"
    )
    assert (said, spins) == ("False", 300_000)


def test_the_cli_sets_it_before_a_subcommand_loads_torch(tmp_path: Path) -> None:
    db = tmp_path / "studio.duckdb"
    said, spins = _openmp_spin_count(
        f"from eraudit_core.cli import main\nprint(main(['runs', '--db', {str(db)!r}]))\n"
        + USE_TORCH
    )
    assert (said.splitlines()[-1], spins) == ("0", 0)


def test_the_dashboard_sets_it_before_any_page_loads_torch(tmp_path: Path) -> None:
    code = (
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file('app.py', default_timeout=120).run()\n" + USE_TORCH
    )
    _, spins = _openmp_spin_count(
        code, ERAUDIT_NO_DEMO="1", ERAUDIT_DB=str(tmp_path / "studio.duckdb")
    )
    assert spins == 0
