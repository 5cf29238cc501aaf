"""A non-editable install works: every subpackage is found and the bundled data travels along.

Why: `pip install .` copies only what pyproject names; a subpackage or data folder it misses
works in the checkout and fails for anyone who installs the tool.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_install_finds_subpackages_and_data(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)],
        check=True,
        timeout=600,
    )
    (wheel,) = wheels.glob("eraudit_studio-*.whl")
    prefix = tmp_path / "prefix"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            # Without it pip uninstalls the editable install of the running venv first (its
            # `eraudit` command vanishes for every later test and for the developer).
            "--ignore-installed",
            "--prefix",
            str(prefix),
            str(wheel),
        ],
        check=True,
        timeout=600,
    )
    (site,) = prefix.glob("lib/python*/site-packages")
    probe = (
        "import eraudit_core, eraudit_core.paths as P\n"
        "from eraudit_core.method import AuditConfig\n"
        "from eraudit_core.runs import AuditEngine\n"
        "from eraudit_core.bundles import bundle_config, replay_pair_verdict\n"
        "import eraudit_core.null\n"
        "from eraudit_core.store import BUNDLED_QUALITY_H, load_bundled_benchmark\n"
        "from eraudit_core.verifier import CheckpointSpec, DEMO_ADAPTERS\n"
        "import eraudit_core.paraphrase, eraudit_core.sensitivity, eraudit_core.present\n"
        "import eraudit_core.adapt, eraudit_core.cli, eraudit_core.demo\n"
        "from eraudit_core.present.report._first_screen import legend_html\n"
        "assert legend_html().count('<li>') >= 5  # the templates are package data\n"
        "print(eraudit_core.__file__)\n"
        "print(P.DATA_DIR)\n"
        "print(len(load_bundled_benchmark().pairs))\n"
        "print(sorted(p.name for p in DEMO_ADAPTERS.iterdir() if p.is_dir()))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("ERAUDIT_DATA", None)
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    module_file, data_dir, n_pairs, arms = out.stdout.splitlines()
    assert module_file.startswith(str(site)), "imported the checkout, not the install"
    assert data_dir == str(prefix / "share" / "eraudit-studio" / "data")
    assert n_pairs == "222"
    assert "honest" in arms and "adversarial" in arms and "concealed" in arms
    tracked = subprocess.run(
        ["git", "ls-files", "data"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    installed = Path(data_dir)
    missing = [f for f in tracked if not (installed / Path(f).relative_to("data")).is_file()]
    assert not missing, f"pyproject's data-files miss {missing}"
