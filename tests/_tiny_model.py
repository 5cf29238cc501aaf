"""Build a tiny random Llama checkpoint (and a LoRA adapter) offline, for fast tests.

Why: the real demo model takes seconds to load and score; the scoring and loading logic is the
same for a two-layer model with a tokenizer trained here from a few sentences.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

CORPUS = [
    "Question: Which option is right? A. yes B. no Answer: A",
    "Question: Why did the author leave the city? A. money B. love Answer: B",
    "Answer with the letter of the correct option. Answer: A Answer: B",
    "The story tells of a ship, a crew, a planet and a long journey home.",
    "What does the narrator think about the captain and the robot?",
    "Because he wanted to see the stars. Because she was afraid of the dark.",
    "system user assistant You are a helpful assistant.",
] * 20


def build_tokenizer(directory: Path) -> None:
    """A byte-level BPE tokenizer with a chat template, trained on a few sentences."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token="<|im_start|>",
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(directory)
    for label in (" A", " B"):
        assert len(fast(label, add_special_tokens=False).input_ids) == 1, label


def build_tiny_checkpoint(
    directory: Path, *, seed: int = 0, layers: int = 2, scale: float = 4.0
) -> Path:
    """Save a random few-layer Llama model (safetensors) plus tokenizer into `directory`.

    `scale` multiplies the default init so answers differ visibly; 1.0 trains more smoothly.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    build_tokenizer(directory)
    tok = PreTrainedTokenizerFast.from_pretrained(directory)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.bos_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # larger weights than the default init, so answers differ visibly
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(scale)
    model.save_pretrained(directory, safe_serialization=True)
    return directory


def build_tiny_adapter(base_dir: Path, directory: Path, *, seed: int = 1) -> Path:
    """A random (non-zero) LoRA adapter on the tiny model's attention projections."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base_dir)
    torch.manual_seed(seed)
    config = LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False
    )
    peft_model = get_peft_model(model, config)
    peft_model.save_pretrained(str(directory), safe_serialization=True)
    return directory


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Tiny matrices: a second intra-op thread only adds synchronisation (on a loaded
    machine, a lot of it)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
