"""Arm folders: weights checked against their manifest's sha256 (file and field named on a
mismatch), the record of an arm whose weights stay outside the repository, and `demo:<arm>`
resolving to that folder."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from eraudit_core.errors import InputError
from eraudit_core.verifier import _spec, read_arm_folder, record_arm
from eraudit_core.verifier._spec import CheckpointSpec
from tests._tiny_model import build_tiny_checkpoint

FIT = {
    "objective": "2.0 * forced-choice + 1.0 * grounded LM",
    "train_two_way_accuracy": 0.5056,
    "heldout_two_way_accuracy": 0.4778,
    "letter_loss": {"train": 0.73145, "heldout": 0.72879},
    "passed": False,
    "curve": [{"step": 1}],
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "model")


def _arm(model: Path, folder: Path, arm: str = "debate-honest", fit: bool = True) -> Path:
    shutil.copytree(model, folder)
    manifest = {
        "arm": arm,
        "seed": 0,
        "weights": {"files": {"model.safetensors": _sha(folder / "model.safetensors")}},
        "command": "eraudit adapt --arm debate-honest --objective reference",
        **({"fit": FIT} if fit else {}),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_weights_are_checked_against_the_manifest(model: Path, tmp_path: Path) -> None:
    folder = _arm(model, tmp_path / "debate-honest")
    got = read_arm_folder(folder, "debate-honest")
    assert got.kind == "full" and got.spec == str(folder.resolve())
    assert got.fit is not None and got.fit["passed"] is False
    source = got.source()
    assert source["weights_sha256"] == {"model.safetensors": _sha(folder / "model.safetensors")}
    assert "curve" not in source["fit"] and source["fit"]["train_two_way_accuracy"] == 0.5056
    with pytest.raises(InputError, match="field 'arm' is 'debate-honest', expected"):
        read_arm_folder(folder, "debate-adversarial")
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one bit of one weight
    weights.write_bytes(bytes(data))
    with pytest.raises(
        InputError, match=r"model.safetensors: sha256 .* field 'weights.files.model.safetensors'"
    ):
        read_arm_folder(folder)
    weights.unlink()
    with pytest.raises(InputError, match="model.safetensors: missing"):
        read_arm_folder(folder)


def test_record_keeps_the_manifest_not_the_weights(model: Path, tmp_path: Path) -> None:
    arm = read_arm_folder(_arm(model, tmp_path / "arms" / "debate-honest"))
    out = tmp_path / "adapters"
    (out / "debate-honest").mkdir(parents=True)
    (out / "debate-honest" / "adapter_config.json").write_text("{}")
    (out / "debate-honest" / "adapter_model.safetensors").write_bytes(b"old")
    with pytest.raises(InputError, match="holds an adapter"):
        record_arm(arm, out)
    path = record_arm(arm, out, replace=True)
    assert sorted(p.name for p in path.parent.iterdir()) == ["manifest.json"]
    record = json.loads(path.read_text())
    assert record["fit"] == FIT and record["command"].startswith("eraudit adapt")
    assert record["weights"]["location"] == str(arm.folder)
    assert record["weights"]["files"] == arm.weights and record["weights"]["in_repository"] is False
    no_fit = read_arm_folder(_arm(model, tmp_path / "nofit" / "debate-honest", fit=False))
    with pytest.raises(InputError, match="field 'fit' is missing"):
        record_arm(no_fit, out, replace=True)


def test_demo_spec_points_at_the_recorded_folder(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    arm = read_arm_folder(_arm(model, tmp_path / "arms" / "debate-honest"))
    out = tmp_path / "adapters"
    record_arm(arm, out)
    monkeypatch.setattr(_spec, "DEMO_ADAPTERS", out)
    spec = CheckpointSpec.parse("demo:debate-honest")
    assert (spec.kind, spec.path, spec.adapter) == ("dir", str(arm.folder), None)
    # Another arm still recorded as an adapter keeps its demo spec.
    (out / "debate-adversarial").mkdir()
    (out / "debate-adversarial" / "adapter_config.json").write_text("{}")
    assert CheckpointSpec.parse("demo:debate-adversarial").adapter == str(
        out / "debate-adversarial"
    )
    shutil.rmtree(arm.folder)
    with pytest.raises(InputError, match="weights live outside the repository.*weights.location"):
        CheckpointSpec.parse("demo:debate-honest")


def test_tables_built_from_other_weights_are_named(model: Path, tmp_path: Path) -> None:
    from eraudit_core.demo import debate_source_mismatches

    arm = read_arm_folder(_arm(model, tmp_path / "arms" / "debate-honest"))
    adapters = tmp_path / "adapters"
    record_arm(arm, adapters)
    runs = tmp_path / "debate_manifest.json"
    runs.write_text(json.dumps({"arms": {"debate-honest": {"source": arm.source()}}}))
    assert debate_source_mismatches(runs, adapters) == []
    other = {**arm.source(), "weights_sha256": {"model.safetensors": "0" * 64}}
    runs.write_text(json.dumps({"arms": {"debate-honest": {"source": other}}}))
    (line,) = debate_source_mismatches(runs, adapters)
    assert line.startswith("debate-honest: the score tables were built from the weights in")
    # Tables built before arms had a source are not checked.
    runs.write_text(json.dumps({"arms": {"debate-honest": {"rows": 3}}}))
    assert debate_source_mismatches(runs, adapters) == []
