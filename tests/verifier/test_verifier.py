"""The local Hugging Face verifier on a tiny random Llama built here (docs/design.md §3, §9).

The reference for every probability is the naive computation written out in this file from
the model's plain full-vocabulary forward pass, not the backend's own earlier output.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import socket
from pathlib import Path

import pytest
import torch

from eraudit_core.cli import main as cli_main
from eraudit_core.errors import InputError
from eraudit_core.types import Query, QueryScore, Verifier
from eraudit_core.verifier import (
    DEFAULT_PREFIX,
    DEFAULT_TEMPLATE,
    CheckpointSpec,
    check_prompt_format,
    hf,
    load_pair,
    load_verifier,
    render_prompts,
)
from tests._tiny_model import build_tiny_adapter, build_tiny_checkpoint

QUERIES = [
    Query(
        f"p{i}",
        "Why did the author leave the city" + " really" * i + "?",
        "money" * (1 + i % 3),
        "love",
    )
    for i in range(7)
] + [
    Query("q", "What does the narrator think about the captain?", "He is brave.", "He is a robot."),
    Query("r", "Which option is right?", "yes", "no"),
]


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection while loading or scoring fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def adapter(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_adapter(tiny, tmp_path_factory.mktemp("adapter") / "lora")


def reference_logprobs(
    model: torch.nn.Module, tok: object, text: str, labels: list[str]
) -> list[float]:
    """log p(label | text): one prompt, full vocabulary, every position, label tokens summed."""
    out = []
    prompt = tok(text, add_special_tokens=False).input_ids  # type: ignore[operator]
    for label in labels:
        lab = tok(" " + label, add_special_tokens=False).input_ids  # type: ignore[operator]
        ids = torch.tensor([prompt + lab])
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), dim=-1)
        out.append(sum(float(logp[len(prompt) - 1 + t, tk]) for t, tk in enumerate(lab)))
    return out


def test_spec_parse(tiny: Path, adapter: Path, tmp_path: Path) -> None:
    assert CheckpointSpec.parse("demo:base") == CheckpointSpec("demo", "base")
    honest = CheckpointSpec.parse("demo:honest")
    assert honest.adapter is not None and honest.adapter.endswith("adapters/honest")
    assert honest.text == "demo:honest" and honest.base == CheckpointSpec("demo", "base")
    d = CheckpointSpec.parse(str(tiny))
    assert d.kind == "dir" and d.adapter is None
    combo = CheckpointSpec.parse(f"{tiny}+{adapter}")
    assert combo.base == d and combo.adapter == str(adapter.resolve())
    assert CheckpointSpec.parse(combo.text) == combo
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert CheckpointSpec.parse(str(gguf)).kind == "gguf"
    with pytest.raises(InputError, match="unknown demo"):
        CheckpointSpec.parse("demo:nope")
    with pytest.raises(InputError, match="model hubs are never contacted"):
        CheckpointSpec.parse("HuggingFaceTB/SmolLM2-135M-Instruct")
    with pytest.raises(InputError, match="PEFT adapter"):
        CheckpointSpec.parse(str(adapter))
    with pytest.raises(InputError, match="adapter directory"):
        CheckpointSpec.parse(f"{tiny}+{tmp_path / 'missing'}")


def test_prompt_format_checks() -> None:
    q = Query("x", "Q?", "yes", "no")
    ab, ba = render_prompts(q)
    assert "A. yes\nB. no" in ab and "A. no\nB. yes" in ba
    assert ab.endswith(DEFAULT_PREFIX) and ba.endswith(DEFAULT_PREFIX)
    wrapped = render_prompts(q, chat=lambda m: f"<u>{m}</u>")
    assert wrapped[0] == f"<u>{ab.removesuffix(DEFAULT_PREFIX)}</u>{DEFAULT_PREFIX}"
    with pytest.raises(InputError, match="true_option"):
        check_prompt_format("{question} {option_a} {option_b} hint: {true_option}", "Answer:")
    with pytest.raises(InputError, match="missing"):
        check_prompt_format("{question} {option_a}", "Answer:")
    with pytest.raises(InputError, match="answers for the model"):
        check_prompt_format(DEFAULT_TEMPLATE, "Answer: A")
    with pytest.raises(InputError, match="labels"):
        check_prompt_format(DEFAULT_TEMPLATE, "Answer:", ("A", "A"))


def test_fast_matches_naive_reference(tiny: Path) -> None:
    v = load_verifier(str(tiny), batch_size=3)
    assert isinstance(v, Verifier)
    scores = v.score(QUERIES)
    model, tok = v._base.model, v._base.tokenizer
    for q, s in zip(QUERIES, scores, strict=True):
        ab, ba = v.render(q)
        l_ab = reference_logprobs(model, tok, ab, ["A", "B"])
        l_ba = reference_logprobs(model, tok, ba, ["A", "B"])
        assert s.logprobs is not None
        assert s.logprobs == pytest.approx(l_ab + l_ba, abs=1e-4)
        p_ab = math.exp(l_ab[0]) / (math.exp(l_ab[0]) + math.exp(l_ab[1]))
        p_ba = math.exp(l_ba[1]) / (math.exp(l_ba[0]) + math.exp(l_ba[1]))
        assert s.p_true == pytest.approx((p_ab + p_ba) / 2, abs=1e-4)
    # The in-backend naive path and other batch sizes agree too.
    naive = v.score_naive(QUERIES)
    assert [s.p_true for s in naive] == pytest.approx([s.p_true for s in scores], abs=1e-4)
    for bs in (1, 16):
        other = load_verifier(str(tiny), batch_size=bs)
        lp = other.label_logprobs(QUERIES)
        assert torch.allclose(lp, v.label_logprobs(QUERIES), atol=1e-4)
    # No prefix sharing (pads with nothing before them) still equals the reference.
    groups = v._encode(QUERIES)
    plain = hf.fast_label_logprobs(
        model,
        groups,
        v._label_ids,
        batch_size=4,
        pad_id=v._pad_id,
        device="cpu",
        share_prefix=False,
    )
    assert torch.allclose(plain, v.label_logprobs(QUERIES), atol=1e-4)


def test_multi_token_labels_are_summed(tiny: Path) -> None:
    labels = ("Yes", "Nope")
    v = load_verifier(
        str(tiny), labels=labels, template="{question} {label_a}) {option_a} {label_b}) {option_b}"
    )
    assert any(len(ids) > 1 for ids in v._label_ids)
    assert "summed" in v.describe()["label_handling"]
    scores = v.score(QUERIES[:4])
    for q, s in zip(QUERIES[:4], scores, strict=True):
        ab, ba = v.render(q)
        ref = reference_logprobs(v._base.model, v._base.tokenizer, ab, list(labels))
        ref += reference_logprobs(v._base.model, v._base.tokenizer, ba, list(labels))
        assert s.logprobs == pytest.approx(ref, abs=1e-4)


def test_memo_never_rescores(tiny: Path) -> None:
    v = load_verifier(str(tiny), prefix="Reply:")
    calls = v.forward_calls
    first = v.score(QUERIES[:3] + QUERIES[:1])
    assert v.forward_calls == calls + 1
    again = v.score(QUERIES[:3])
    assert v.forward_calls == calls + 1 and again == first[:3]
    v.score(QUERIES[:4])
    assert v.forward_calls == calls + 2


def test_models_loaded_once_and_fingerprints(tiny: Path, tmp_path: Path) -> None:
    a = load_verifier(str(tiny))
    b = load_verifier(str(tiny))
    assert a._base is b._base and a.fingerprint == b.fingerprint
    assert load_verifier(str(tiny), prefix="Reply:").fingerprint != a.fingerprint
    assert load_verifier(str(tiny), template=DEFAULT_TEMPLATE + " ").fingerprint != a.fingerprint
    assert load_verifier(str(tiny), share_base=False)._base is not a._base
    copy = tmp_path / "copy"
    shutil.copytree(tiny, copy)
    assert load_verifier(str(copy)).fingerprint == a.fingerprint  # same weights, same scores
    other = build_tiny_checkpoint(tmp_path / "other", seed=5)
    assert load_verifier(str(other)).fingerprint != a.fingerprint
    info = a.describe()
    assert info["kind"] == "dir" and info["device"] == "cpu" and info["dtype"] == "float32"
    assert info["parameters"] == sum(p.numel() for p in a._base.model.parameters())


def test_the_probe_runs_once_per_checkpoint_and_prompt_format(tiny: Path, adapter: Path) -> None:
    """Loading a checkpoint already loaded and probed in this process (the dashboard loads the
    demo pair while Home is read, then again for the audit) does not run the probe prompt
    again; another adapter or another prompt format is probed."""
    own = "Probe test. {question}\nA. {option_a}\nB. {option_b}"  # no other test reads it
    assert load_verifier(str(tiny), batch_size=3, template=own).forward_calls == 1
    assert load_verifier(str(tiny), batch_size=5, template=own).forward_calls == 0
    assert load_verifier(str(tiny), template=own, prefix="Probe:").forward_calls == 1
    assert load_verifier(f"{tiny}+{adapter}", template=own).forward_calls == 1
    assert load_verifier(f"{tiny}+{adapter}", template=own).forward_calls == 0


def test_device_dtype_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    assert hf.resolve_device_dtype("cpu", None) == ("cpu", torch.float32)
    assert hf.resolve_device_dtype("cpu", "bfloat16") == ("cpu", torch.bfloat16)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert hf.resolve_device_dtype(None, None) == ("cuda", torch.bfloat16)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert hf.resolve_device_dtype(None, None) == ("cpu", torch.float32)
    with pytest.raises(InputError, match="CUDA"):
        hf.resolve_device_dtype("cuda", None)
    with pytest.raises(InputError, match="dtype"):
        hf.resolve_device_dtype("cpu", "int8")


def test_pair_shares_base_and_switches_adapter(tiny: Path, adapter: Path) -> None:
    pre, post = load_pair(str(tiny), f"{tiny}+{adapter}", batch_size=4)
    assert pre._base is post._base
    assert pre.fingerprint != post.fingerprint
    assert post.describe()["adapter_parameters"] > 0
    # Separately held copies give the same numbers as the shared, switched one.
    lone_pre = load_verifier(str(tiny), share_base=False)
    lone_post = load_verifier(f"{tiny}+{adapter}", share_base=False)
    for shared, lone in ((pre, lone_pre), (post, lone_post), (pre, lone_pre)):
        assert torch.allclose(
            shared.label_logprobs(QUERIES), lone.label_logprobs(QUERIES), atol=1e-5
        )
    diff = (pre.label_logprobs(QUERIES) - post.label_logprobs(QUERIES)).abs().max()
    assert diff > 1e-3  # the adapter does change the answers
    # The adapted side's fast path equals its own naive reference.
    assert torch.allclose(
        post.label_logprobs(QUERIES), post.label_logprobs(QUERIES, naive=True), atol=1e-4
    )


def _broken_copy(tiny: Path, tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    shutil.copytree(tiny, d)
    return d


def test_load_checks(tiny: Path, tmp_path: Path) -> None:
    d = _broken_copy(tiny, tmp_path, "noconfig")
    (d / "config.json").unlink()
    with pytest.raises(InputError, match="config.json missing"):
        load_verifier(str(d))
    d = _broken_copy(tiny, tmp_path, "notok")
    (d / "tokenizer.json").unlink()
    with pytest.raises(InputError, match="no tokenizer"):
        load_verifier(str(d))
    d = _broken_copy(tiny, tmp_path, "pickled")
    (d / "model.safetensors").unlink()
    (d / "pytorch_model.bin").write_bytes(b"not really a pickle")
    with pytest.raises(InputError, match="unpickling"):
        load_verifier(str(d))
    d = _broken_copy(tiny, tmp_path, "remote")
    cfg = json.loads((d / "config.json").read_text())
    cfg["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilModel"}
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(InputError, match="remote code"):
        load_verifier(str(d))
    d = _broken_copy(tiny, tmp_path, "badjson")
    (d / "config.json").write_text("{not json")
    with pytest.raises(InputError, match="config.json"):
        load_verifier(str(d))


def test_pickled_adapter_refused(tiny: Path, adapter: Path, tmp_path: Path) -> None:
    d = tmp_path / "pickled_adapter"
    shutil.copytree(adapter, d)
    (d / "adapter_model.safetensors").unlink()
    (d / "adapter_model.bin").write_bytes(b"x")
    with pytest.raises(InputError, match="unpickling"):
        load_verifier(f"{tiny}+{d}")


def test_nan_logits_refused(tiny: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    d = _broken_copy(tiny, tmp_path, "nan")
    weights = load_file(str(d / "model.safetensors"))
    key = next(k for k in weights if k.endswith("norm.weight"))
    weights[key] = torch.full_like(weights[key], float("nan"))
    save_file(weights, str(d / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(InputError, match="NaN"):
        load_verifier(str(d))


def test_unclean_label_refused(tiny: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    # A tokenizer with a token ": A" reads "Answer: A" as "Answer" + ": A": the label is then
    # not a clean continuation of the prompt, and its log-probability would be wrong.
    d = _broken_copy(tiny, tmp_path, "merging")
    tok = AutoTokenizer.from_pretrained(str(d))
    tok.add_tokens([": A"])
    tok.save_pretrained(str(d))
    with pytest.raises(InputError, match="clean continuation"):
        load_verifier(str(d))


def test_score_records(tiny: Path) -> None:
    s = load_verifier(str(tiny)).score([QUERIES[0]])[0]
    assert isinstance(s, QueryScore) and s.logprobs is not None and len(s.logprobs) == 4
    assert 0.0 <= s.p_true <= 1.0


def test_cli_checkpoint_info_and_score(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # random weights put almost no probability on the labels: refused unless the minimum is 0
    assert cli_main(["checkpoint-info", str(tiny)]) == 2
    assert "below the minimum label mass 0.5" in capsys.readouterr().err
    assert cli_main(["checkpoint-info", str(tiny), "--min-label-mass", "0"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kind"] == "dir" and len(info["fingerprint"]) == 32
    assert info["readout"] == "chat-answer" and info["label_mass"]["n"] == 16
    rows = tmp_path / "q.jsonl"
    rows.write_text(
        "\n".join(
            json.dumps(
                {
                    "pair_id": q.pair_id,
                    "question": q.question,
                    "true_option": q.true_option,
                    "false_option": q.false_option,
                }
            )
            for q in QUERIES[:3]
        )
    )
    # the same low mass fails each question it scores, naming it, and prints nothing
    assert cli_main(["score", str(tiny), str(rows)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "minimum label mass 0.5" in captured.err
    assert re.search(r"pair p[012] order (AB|BA) \('", captured.err), captured.err
    assert cli_main(["score", str(tiny), str(rows), "--min-label-mass", "0"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["pair_id"] for x in lines] == ["p0", "p1", "p2"]
    expected = load_verifier(str(tiny)).score(QUERIES[:3])
    assert [x["p_true"] for x in lines] == pytest.approx([s.p_true for s in expected], abs=1e-6)
    bad = tmp_path / "bad.csv"
    bad.write_text("question,true_option,false_option\nQ?,,no\n")
    assert cli_main(["score", str(tiny), str(bad)]) == 2
    assert "true_option" in capsys.readouterr().err
    assert cli_main(["checkpoint-info", str(tmp_path / "nowhere")]) == 2


@pytest.mark.slow
def test_demo_model_end_to_end() -> None:
    v = load_verifier("demo:base", device="cpu")
    info = v.describe()
    assert info["chat_template"] and info["label_tokens"] == [[330], [389]]
    assert 134_000_000 < info["parameters"] < 135_000_000
    qs = [
        Query("sky", "What colour is the sky on a clear day?", "Blue", "Green"),
        Query("sum", "What is two plus two?", "Four", "Seven"),
    ]
    fast = v.score(qs)
    naive = v.score_naive(qs)
    assert [s.p_true for s in fast] == pytest.approx([s.p_true for s in naive], abs=1e-4)
    honest = load_verifier("demo:honest", device="cpu")
    assert honest._base is v._base and honest.fingerprint != v.fingerprint
    assert [s.p_true for s in honest.score(qs)] != pytest.approx([s.p_true for s in fast], abs=1e-6)


@pytest.mark.slow
def test_the_demo_arms_pass_the_label_mass_check_at_their_answer_slot() -> None:
    """The honest and concealed arms (two-way label loss) spread probability over " C", " D"...
    but keep a label on top: they pass with a median mass below 0.5 (measured 0.28 and 0.49).
    Negative control: the same arm read without the "Answer:" prefix is refused."""
    from eraudit_core.errors import InputError
    from eraudit_core.verifier import check_label_mass

    for arm in ("honest", "concealed"):
        mass = check_label_mass(load_verifier(f"demo:{arm}", device="cpu", dtype="float32"))
        assert mass["median"] < 0.5 and mass["top_share"] == 1.0, (arm, mass)
    no_prefix = load_verifier("demo:honest", device="cpu", dtype="float32", prefix="")
    with pytest.raises(InputError, match="a label is its most likely next token on only"):
        check_label_mass(no_prefix)
