"""Trained arms as folders: their manifest, their weights checked by sha256, and the record of
an arm whose weights live outside the repository.

Why: a debate arm trained with the reference objective at `full-topN` capacity is a whole
model folder (about 540 MB for the demo model), too large for git. The repository keeps its
manifest (recipe, data by sha256, the fit gate's `fit`, the weights' sha256 and the command
that rebuilds it) in `data/adapters/<arm>/manifest.json`, with `weights.location` naming the
folder the weights were read from. Whoever scores an arm reads it through `read_arm_folder`,
which refuses weights that do not match the manifest, naming the file and the field.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eraudit_core.errors import InputError

MANIFEST = "manifest.json"
# A LoRA arm's own files: a record of an outside arm replaces them (`record_arm(replace=True)`).
ADAPTER_FILES = ("adapter_model.safetensors", "adapter_config.json")


@dataclass(frozen=True)
class ArmFolder:
    """An arm's folder whose weights matched its manifest when read."""

    arm: str
    folder: Path
    manifest: dict[str, Any]
    weights: dict[str, str]  # file name -> sha256, as the manifest states and the files are
    kind: str  # "full" (a loadable model folder) or "lora" (a PEFT adapter on the base)

    @property
    def spec(self) -> str:
        """The checkpoint spec that loads this arm."""
        if self.kind == "full":
            return str(self.folder)
        base = (self.manifest.get("base_model") or {}).get("spec") or "demo:base"
        return f"{base}+{self.folder}"

    @property
    def fit(self) -> dict[str, Any] | None:
        """The fit gate's record (`eraudit adapt --objective reference`), if the arm has one."""
        fit = self.manifest.get("fit")
        return dict(fit) if isinstance(fit, dict) else None

    def source(self) -> dict[str, Any]:
        """What a score table built from this arm records about where it came from."""
        from eraudit_core.verifier._hf_files import file_digest

        fit = self.fit
        return {
            "folder": str(self.folder),
            "kind": self.kind,
            "weights_sha256": dict(self.weights),
            "manifest_sha256": file_digest(self.folder / MANIFEST),
            "fit": None if fit is None else {k: v for k, v in fit.items() if k != "curve"},
        }


def _load_manifest(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputError(f"{path}: no arm manifest (manifest.json) in this folder")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object")
    return data


def manifest_weights(manifest: dict[str, Any], path: Path) -> dict[str, str]:
    """{file: sha256} the manifest states: `weights.files` (the reference objective's arms) or
    `adapter_sha256` (the answer-token LoRA arms: their adapter_model.safetensors)."""
    files = (manifest.get("weights") or {}).get("files")
    if isinstance(files, dict) and files:
        return {str(k): str(v) for k, v in files.items()}
    if isinstance(manifest.get("adapter_sha256"), str):
        return {"adapter_model.safetensors": manifest["adapter_sha256"]}
    raise InputError(f"{path}: field 'weights.files' is missing: the weights cannot be checked")


def read_arm_folder(folder: Path | str, arm: str | None = None) -> ArmFolder:
    """The arm in `folder`, every weight file checked against the sha256 its manifest states.

    InputError names the file and the manifest field on a missing file or a mismatch, and the
    field when the manifest names another arm than `arm`."""
    from eraudit_core.verifier._hf_files import file_digest  # torch: only when weights are read

    folder = Path(folder).expanduser().resolve()
    path = folder / MANIFEST
    manifest = _load_manifest(path)
    if arm is not None and manifest.get("arm") not in (None, arm):
        raise InputError(f"{path}: field 'arm' is {manifest.get('arm')!r}, expected {arm!r}")
    weights = manifest_weights(manifest, path)
    field = "weights.files" if "files" in (manifest.get("weights") or {}) else "adapter_sha256"
    for name, expected in weights.items():
        file = folder / name
        where = f"{field}.{name}" if field == "weights.files" else field
        if not file.is_file():
            raise InputError(f"{file}: missing (named by {path} field '{where}')")
        got = file_digest(file)
        if got != expected.lower():
            raise InputError(
                f"{file}: sha256 {got} does not match {path} field '{where}' ({expected}): "
                "the weights were changed or belong to another run"
            )
    if (folder / "config.json").is_file():
        kind = "full"
    elif (folder / "adapter_config.json").is_file():
        kind = "lora"
    else:
        raise InputError(f"{folder}: neither a model folder (config.json) nor a PEFT adapter")
    return ArmFolder(
        str(manifest.get("arm") or arm or folder.name), folder, manifest, weights, kind
    )


def outside_weights(record_dir: Path) -> Path | None:
    """Where the weights of the arm recorded in `record_dir` live, when they are outside it
    (its manifest's `weights.location` and no adapter of its own); None otherwise."""
    if (record_dir / "adapter_config.json").exists():
        return None
    path = record_dir / MANIFEST
    if not path.is_file():
        return None
    location = (_load_manifest(path).get("weights") or {}).get("location")
    return Path(location) if isinstance(location, str) and location else None


def record_arm(arm: ArmFolder, out_root: Path, *, replace: bool = False) -> Path:
    """Write `out_root/<arm>/manifest.json`: the arm's manifest as trained (recipe, data and
    weights by sha256, `fit`, command) with `weights.location` naming its folder; the weights
    stay where they are. An arm without a fit-gate record is refused. An existing LoRA arm there is refused unless `replace`, which removes
    its adapter files so that `demo:<arm>` cannot load stale weights."""
    from eraudit_core.verifier._hf_files import file_digest

    if arm.fit is None:
        raise InputError(
            f"{arm.folder / MANIFEST}: field 'fit' is missing: the arm has no fit-gate record "
            "(train it with eraudit adapt --objective reference)"
        )
    out = out_root / arm.arm
    present = [n for n in ADAPTER_FILES if (out / n).exists()]
    if present and not replace:
        raise InputError(
            f"{out}: holds an adapter ({', '.join(present)}); replace it explicitly "
            f"(--replace) to record the arm in {arm.folder} in its place"
        )
    out.mkdir(parents=True, exist_ok=True)
    for name in present:
        (out / name).unlink()
    record = dict(arm.manifest)
    record["weights"] = {
        **(arm.manifest.get("weights") or {}),
        "files": dict(arm.weights),
        "location": str(arm.folder),
        "in_repository": False,
        "kind": arm.kind,
    }
    record["recorded_from"] = {
        "folder": str(arm.folder),
        "manifest_sha256": file_digest(arm.folder / MANIFEST),
    }
    tmp = out / f"{MANIFEST}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out / MANIFEST)
    return out / MANIFEST
