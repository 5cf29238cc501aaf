"""The tokenizer side of a checkpoint: chat template, label tokens, clean continuations.

Both backends render and encode prompts here, so the text a served model reads is exactly the
text the local model reads (docs/design.md §3). A served checkpoint needs only the tokenizer of its
local spec: `load_tokenizer` reads tokenizer files and never the weights (a GGUF's tokenizer
comes from its dequantised cache when that exists, else from the GGUF's own metadata).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.paths import cache_dir, demo_gguf_path
from eraudit_core.verifier._hf_files import (
    FINGERPRINT_FILES,
    TOKENIZER_FILES,
    dir_digest,
    file_digest,
)
from eraudit_core.verifier._spec import CheckpointSpec

log = logging.getLogger(__name__)


def encode(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of rendered prompts: no special tokens added (the chat template has them)."""
    if not texts:
        return []
    return [list(ids) for ids in tokenizer(list(texts), add_special_tokens=False).input_ids]


def label_token_ids(tokenizer: Any, labels: Sequence[str]) -> list[list[int]]:
    """The continuation tokens read for each label: " A", " B" (a space, then the letter)."""
    return [list(tokenizer(" " + label, add_special_tokens=False).input_ids) for label in labels]


def check_labels(
    tokenizer: Any, name: str, labels: Sequence[str], label_ids: Sequence[Sequence[int]], text: str
) -> None:
    """Labels encode to tokens, differ, and continue the answer prefix cleanly: the prompt's
    tokens followed by the label's tokens are what the tokenizer makes of prompt + label."""
    for label, ids in zip(labels, label_ids, strict=True):
        if not ids:
            raise InputError(f"checkpoint {name}: label {label!r} encodes to no token")
        if len(ids) > 1:
            log.warning(
                "checkpoint %s: label %r is %d tokens; their log-probabilities are summed",
                name,
                label,
                len(ids),
            )
    if list(label_ids[0]) == list(label_ids[1]):
        raise InputError(f"checkpoint {name}: labels {tuple(labels)} encode identically")
    prompt_ids = encode(tokenizer, [text])[0]
    for label, ids in zip(labels, label_ids, strict=True):
        joined = encode(tokenizer, [text + " " + label])[0]
        if joined != prompt_ids + list(ids):
            raise InputError(
                f"checkpoint {name}: label {label!r} does not tokenise as a clean continuation "
                f"of the answer prefix (prompt+label gives {joined[-4:]}, expected "
                f"...{(prompt_ids + list(ids))[-4:]}); change the prefix or the labels"
            )


@dataclass(frozen=True)
class LocalTokenizer:
    """A checkpoint's tokenizer loaded on its own, with the digest the fingerprint uses."""

    spec: CheckpointSpec
    tokenizer: Any
    digest: str
    source: str

    @property
    def chat_template(self) -> str | None:
        return getattr(self.tokenizer, "chat_template", None)

    @property
    def model_type(self) -> str | None:
        """The checkpoint's `model_type` (readout detection's fallback), when known here."""
        if self.spec.kind == "demo":
            return "llama"  # SmolLM2-135M-Instruct
        config = Path(self.source) / "config.json"
        if not config.is_file():
            return None
        try:
            loaded = json.loads(config.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        value = loaded.get("model_type") if isinstance(loaded, dict) else None
        return value if isinstance(value, str) else None


_TOKENIZERS: dict[tuple[str, bool], LocalTokenizer] = {}
_LOCK = threading.Lock()


def load_tokenizer(spec: CheckpointSpec, trust_remote_code: bool = False) -> LocalTokenizer:
    """The tokenizer of a local checkpoint spec (once per process), without its weights.

    The digest equals the local backend's tokenizer digest for the same spec: the GGUF file's
    sha256 for GGUF and demo checkpoints, the tokenizer files' for a directory. An adapter
    never changes the tokenizer, so `BASE+ADAPTER` uses BASE's.
    """
    base = spec.base
    key = (base.text, trust_remote_code)
    with _LOCK:
        if key in _TOKENIZERS:
            return _TOKENIZERS[key]
        from transformers import AutoTokenizer

        try:
            if base.kind in ("demo", "gguf"):
                gguf = demo_gguf_path() if base.kind == "demo" else Path(base.path)
                digest = file_digest(gguf)
                converted = cache_dir() / "gguf" / f"{gguf.stem}-{digest[:16]}"
                if (converted / "tokenizer_config.json").is_file():
                    tok = AutoTokenizer.from_pretrained(str(converted), local_files_only=True)
                    source = str(converted)
                else:  # read from the GGUF's metadata (some seconds), weights stay untouched
                    tok = AutoTokenizer.from_pretrained(
                        str(gguf.parent), gguf_file=gguf.name, local_files_only=True
                    )
                    source = str(gguf)
            else:
                directory = Path(base.path)
                _check_tokenizer_dir(directory, trust_remote_code)
                tok = AutoTokenizer.from_pretrained(
                    str(directory), local_files_only=True, trust_remote_code=trust_remote_code
                )
                digest = dir_digest(directory, FINGERPRINT_FILES[:-1])
                source = str(directory)
        except InputError:
            raise
        except Exception as exc:  # transformers raises many kinds for unreadable files
            raise InputError(
                f"checkpoint {base}: cannot load its tokenizer ({type(exc).__name__}: {exc})"
            ) from exc
        loaded = LocalTokenizer(base, tok, digest, source)
        _TOKENIZERS[key] = loaded
        return loaded


def _check_tokenizer_dir(directory: Path, trust_remote_code: bool) -> None:
    if not any((directory / name).is_file() for name in TOKENIZER_FILES):
        raise InputError(
            f"checkpoint {directory}: no tokenizer (expected one of {list(TOKENIZER_FILES)})"
        )
    config = directory / "tokenizer_config.json"
    if config.is_file() and not trust_remote_code:
        try:
            loaded = json.loads(config.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(
                f"checkpoint {directory}: tokenizer_config.json invalid ({exc})"
            ) from exc
        if isinstance(loaded, dict) and "auto_map" in loaded:
            raise InputError(
                f"checkpoint {directory}: tokenizer_config.json field 'auto_map' asks to run "
                "code shipped with the checkpoint; refused unless you allow remote code"
            )
