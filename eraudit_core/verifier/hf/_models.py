"""Base models held in memory, one copy per process and base; adapters are switched per call.

The pre and post checkpoints of a demo audit share one base model, which saves a float32 copy
of the weights per extra checkpoint.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from eraudit_core.errors import InputError
from eraudit_core.paths import demo_gguf_path
from eraudit_core.verifier._hf_files import (
    FINGERPRINT_FILES,
    check_model_dir,
    dir_digest,
    file_digest,
    gguf_to_safetensors,
)
from eraudit_core.verifier._spec import CheckpointSpec

# ---------------------------------------------------------------------------------------------
# loaded models (one copy per process and base)


@dataclass
class LoadedBase:
    """One base model in memory; adapters are loaded into it by name and switched per call."""

    key: tuple[Any, ...]
    spec: CheckpointSpec
    model_dir: Path
    model: Any
    tokenizer: Any
    device: str
    dtype: torch.dtype
    weights_digest: str
    tokenizer_digest: str
    lock: threading.RLock = field(default_factory=threading.RLock)
    adapters: dict[str, str] = field(default_factory=dict)  # adapter dir -> adapter name
    # (adapter name, probe prompts, label ids) whose load check passed on these weights
    probed: set[tuple[Any, ...]] = field(default_factory=set)

    def add_adapter(self, adapter: Path) -> str:
        """Load a PEFT adapter into this base (once) and return its name."""
        from peft import PeftModel

        key = str(adapter.resolve())
        with self.lock:
            if key in self.adapters:
                return self.adapters[key]
            name = f"a{len(self.adapters)}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"
            try:
                if isinstance(self.model, PeftModel):
                    self.model.load_adapter(key, adapter_name=name, is_trainable=False)
                else:
                    self.model = PeftModel.from_pretrained(
                        self.model, key, adapter_name=name, is_trainable=False
                    )
            except (ValueError, KeyError, RuntimeError, OSError) as exc:
                raise InputError(f"adapter {adapter}: cannot apply to {self.spec} ({exc})") from exc
            self.model.eval()
            self.adapters[key] = name
            return name


_BASES: dict[tuple[Any, ...], LoadedBase] = {}
_BASES_LOCK = threading.Lock()


def _model_dir_for(spec: CheckpointSpec) -> Path:
    if spec.kind == "demo":
        return gguf_to_safetensors(demo_gguf_path())
    if spec.kind == "gguf":
        return gguf_to_safetensors(Path(spec.path))
    return Path(spec.path)


def load_base(
    spec: CheckpointSpec,
    device: str,
    dtype: torch.dtype,
    trust_remote_code: bool,
    share: bool,
) -> LoadedBase:
    key: tuple[Any, ...] = (spec.kind, spec.path, device, str(dtype), trust_remote_code)
    if not share:
        key = (*key, object())  # never found again: a private copy
    with _BASES_LOCK:
        if key in _BASES:
            return _BASES[key]
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model_dir = _model_dir_for(spec)
        check_model_dir(model_dir, trust_remote_code)
        try:
            tokenizer = AutoTokenizer.from_pretrained(
                str(model_dir), local_files_only=True, trust_remote_code=trust_remote_code
            )
            model = AutoModelForCausalLM.from_pretrained(
                str(model_dir),
                local_files_only=True,
                use_safetensors=True,
                trust_remote_code=trust_remote_code,
                dtype=dtype,
            )
        except InputError:
            raise
        except Exception as exc:
            raise InputError(
                f"checkpoint {spec}: cannot load ({type(exc).__name__}: {exc})"
            ) from exc
        model.to(device)  # type: ignore[arg-type]  # transformers' stub misreads .to
        model.eval()
        if spec.kind in ("demo", "gguf"):
            weights = file_digest(demo_gguf_path() if spec.kind == "demo" else Path(spec.path))
            tok_digest = weights  # the tokenizer came out of the same GGUF file
        else:
            weights = dir_digest(model_dir, ["*.safetensors", "config.json"])
            tok_digest = dir_digest(model_dir, FINGERPRINT_FILES[:-1])
        base = LoadedBase(
            key, spec, model_dir, model, tokenizer, device, dtype, weights, tok_digest
        )
        _BASES[key] = base
        return base


def loaded_bases() -> list[LoadedBase]:
    """The base models held in this process (for memory reports)."""
    return list(_BASES.values())
