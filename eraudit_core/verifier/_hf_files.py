"""Checkpoint files for the Hugging Face backend: digests, the demo GGUF, load-time checks.

Safetensors only (a pickle is never loaded), remote code off unless asked, and a GGUF file is
dequantised once into a user cache outside the repository.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from eraudit_core.errors import InputError
from eraudit_core.paths import cache_dir

log = logging.getLogger(__name__)

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "spiece.model")
FINGERPRINT_FILES = (
    "tokenizer.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "config.json",
)

# ---------------------------------------------------------------------------------------------
# device, files, hashes


def resolve_device_dtype(device: str | None, dtype: str | None) -> tuple[str, torch.dtype]:
    """CUDA with bfloat16 weights when a GPU is present, CPU float32 otherwise; both overridable."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype is None:
        resolved = torch.bfloat16 if device.startswith("cuda") else torch.float32
    else:
        names = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
        if dtype not in names:
            raise InputError(f"dtype: expected one of {sorted(names)}, got {dtype!r}")
        resolved = names[dtype]
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"device {device!r}: CUDA is not available on this machine")
    return device, resolved


_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_digest(path: Path) -> str:
    """sha256 of a file, memoised per process by (path, size, mtime)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        with path.open("rb") as fh:
            _DIGESTS[key] = hashlib.file_digest(fh, "sha256").hexdigest()
    return _DIGESTS[key]


def dir_digest(directory: Path, patterns: Sequence[str]) -> str:
    h = hashlib.sha256()
    for name in sorted({p.name for pat in patterns for p in directory.glob(pat) if p.is_file()}):
        h.update(name.encode())
        h.update(file_digest(directory / name).encode())
    return h.hexdigest()


def gguf_to_safetensors(gguf: Path) -> Path:
    """Dequantise a GGUF checkpoint once into a safetensors directory under the user cache.

    Later loads read the safetensors directory (about a second) instead of dequantising again
    (~20 s). The directory name carries the GGUF hash, so a changed file is converted anew.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    digest = file_digest(gguf)
    target = cache_dir() / "gguf" / f"{gguf.stem}-{digest[:16]}"
    if (target / "model.safetensors").exists() and (target / "config.json").exists():
        return target
    log.info("dequantising %s into %s (once)", gguf, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, local_files_only=True
        )
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, local_files_only=True, dtype=torch.float32
        )
    except Exception as exc:  # the GGUF reader raises many kinds
        raise InputError(f"checkpoint {gguf}: cannot read the GGUF file ({exc})") from exc
    # A plain dequantised model: no quantisation config travels into the cache.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".tmp-"))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / "eraudit_source.json").write_text(
            json.dumps({"gguf": str(gguf), "sha256": digest}, indent=1)
        )
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def check_model_dir(path: Path, trust_remote_code: bool) -> None:
    """Load-time checks that need no model: config, tokenizer, safetensors only, remote code."""
    if not path.is_dir():
        raise InputError(f"checkpoint {path}: directory not found")
    if not (path / "config.json").is_file():
        raise InputError(f"checkpoint {path}: config.json missing (field 'config')")
    if not list(path.glob("*.safetensors")):
        pickled = [p.name for p in path.iterdir() if p.suffix.lower() in PICKLE_SUFFIXES]
        if pickled:
            raise InputError(
                f"checkpoint {path}: weights {pickled} need unpickling, which is refused "
                "(arbitrary code execution); convert them to safetensors first"
            )
        raise InputError(f"checkpoint {path}: no *.safetensors weights found (field 'weights')")
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise InputError(
            f"checkpoint {path}: no tokenizer (expected one of {list(TOKENIZER_FILES)})"
        )
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"checkpoint {path}: config.json is not valid JSON ({exc})") from exc
    if not isinstance(config, dict):
        raise InputError(f"checkpoint {path}: config.json must hold an object")
    tok_cfg: dict[str, Any] = {}
    if (path / "tokenizer_config.json").is_file():
        try:
            loaded = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
            tok_cfg = loaded if isinstance(loaded, dict) else {}
        except json.JSONDecodeError as exc:
            raise InputError(f"checkpoint {path}: tokenizer_config.json invalid ({exc})") from exc
    if ("auto_map" in config or "auto_map" in tok_cfg) and not trust_remote_code:
        raise InputError(
            f"checkpoint {path}: config field 'auto_map' asks to run code shipped with the "
            "checkpoint; refused unless you allow remote code (trust_remote_code=True, CLI "
            "--trust-remote-code)"
        )


def check_adapter_dir(path: Path) -> None:
    if not (path / "adapter_config.json").is_file():
        raise InputError(f"adapter {path}: adapter_config.json missing")
    if not (path / "adapter_model.safetensors").is_file():
        if any(p.suffix.lower() in PICKLE_SUFFIXES for p in path.iterdir()):
            raise InputError(
                f"adapter {path}: only pickled weights (adapter_model.bin); unpickling is "
                "refused, save the adapter with safetensors"
            )
        raise InputError(f"adapter {path}: adapter_model.safetensors missing")
