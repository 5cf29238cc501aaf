"""Regenerate the Petri fixtures with Petri's own code and compare their structure.

Needs Python >= 3.12 interpreters with Petri installed (PROVENANCE.md "Regenerating"); CI has
none, so this test skips there and says why. Set PETRI3_PY (inspect-petri 3.1.1) and/or
PETRI2_PY (Petri v2 from source); on the development machine /work/petri312-venv and
/work/petri2-venv are found without them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from eraudit_core.sensitivity import TagMapping, import_inspect_logs, import_petri_transcripts

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "petri"
CANDIDATES = {
    "PETRI3_PY": ("/work/petri312-venv/bin/python", "inspect_petri"),
    "PETRI2_PY": ("/work/petri2-venv/bin/python", "petri"),
}
# Fields of a manifest entry that must not change between runs (PROVENANCE.md lists what does).
STABLE = ("log_status", "seed_id", "epoch", "condition", "condition_dir", "task_args", "auditor",
          "judge_mode", "bumped_scores", "expected", "kind", "realism_scorer")  # fmt: skip


def interpreter(var: str) -> str | None:
    """A Python >= 3.12 that imports the Petri package, or None."""
    default, module = CANDIDATES[var]
    py = os.environ.get(var) or default
    if not Path(py).exists():
        return None
    probe = f"import sys, {module}; sys.exit(0 if sys.version_info >= (3, 12) else 1)"
    ok = subprocess.run([py, "-c", probe], capture_output=True, timeout=120, check=False)
    return py if ok.returncode == 0 else None


def shape(manifest: list[dict[str, Any]]) -> Counter[str]:
    """The manifest without run-specific ids (file names carry times and uuids): directory,
    outcome and scripted values."""
    out: Counter[str] = Counter()
    for e in manifest:
        entry = {"dir": str(Path(e["file"]).parent), **{k: e.get(k) for k in STABLE}}
        entry["expected"] = re.sub(r"\S+\.(eval|json)", "<file>", str(entry["expected"]))
        out[json.dumps(entry, sort_keys=True)] += 1
    return out


def outcome(result: Any) -> tuple[int, int, list[tuple[str, int]]]:
    d = result.drop_summary()
    return (
        result.table["rollout"].nunique(),
        len(result.table),
        sorted(zip(d["code"], d["rollouts"], strict=True)),
    )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_regenerated_fixtures_have_the_committed_structure(tmp_path: Path) -> None:
    env = {k: v for k in CANDIDATES if (v := interpreter(k))}
    if not env:
        pytest.skip(
            "no Python >= 3.12 with inspect-petri (PETRI3_PY) or Petri v2 (PETRI2_PY): "
            "regenerating the fixtures needs Petri's own code, see "
            "tests/fixtures/petri/PROVENANCE.md 'Regenerating'"
        )
    work = tmp_path / "petri"
    shutil.copytree(FIX / "generate", work / "generate")
    run = subprocess.run(
        ["bash", str(work / "generate" / "regenerate.sh")],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    mapping = TagMapping.from_dict(
        {
            "condition": {
                "lean": {"task_args": {"enable_prefill": False}},
                "rich": {"task_args": {"enable_prefill": True}},
                "turns3": {"directory": "turns3"},
                "turns6": {"directory": "turns6"},
                "multi": {"directory": "realism_multi_judge"},
            },
            "behaviour": {"sycophancy": "s", "censorship": "c"},
        }
    )
    if "PETRI3_PY" in env:
        new = json.loads((work / "petri3_manifest.json").read_text())
        old = json.loads((FIX / "petri3_manifest.json").read_text())
        assert shape(new) == shape(old)
        assert outcome(import_inspect_logs([work / "petri3_logs"], mapping)) == outcome(
            import_inspect_logs([FIX / "petri3_logs"], mapping)
        )
    if "PETRI2_PY" in env:
        new = json.loads((work / "v2_manifest.json").read_text())
        old = json.loads((FIX / "v2_manifest.json").read_text())
        assert shape(new) == shape(old)
        assert outcome(import_petri_transcripts(work / "v2_transcripts", mapping)) == outcome(
            import_petri_transcripts(FIX / "v2_transcripts", mapping)
        )
        assert outcome(import_inspect_logs([work / "v2_inspect_logs"], mapping)) == outcome(
            import_inspect_logs([FIX / "v2_inspect_logs"], mapping)
        )
