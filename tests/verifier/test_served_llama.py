"""The served backend against a real server nobody here wrote: llama-cpp-python's OpenAI-
compatible server (`python -m llama_cpp.server`) serving the demo GGUF on 127.0.0.1.

llama.cpp computes with the Q4_1-quantised weights; the local backend dequantises the same GGUF
to float32. So the two agree to a measured tolerance, not to 1e-3 (docs/design.md §3): the largest
|p_true difference| is printed and must stay within AGREEMENT_TOLERANCE.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eraudit_core.cli import main as cli_main
from eraudit_core.errors import InputError
from eraudit_core.store import load_bundled_benchmark
from eraudit_core.types import Query
from eraudit_core.verifier import load_checkpoint, load_verifier
from eraudit_core.verifier.served import ServedVerifier
from tests._llama_server import (
    MODEL_ALIAS,
    CountingProxy,
    LlamaServer,
    llama_cpp_available,
    shared_server,
)
from tests._tiny_model import build_tokenizer

pytestmark = pytest.mark.skipif(
    not llama_cpp_available(),
    reason="llama-cpp-python is not installed (make install-slow installs it, built with "
    "CMAKE_ARGS=-DGGML_NATIVE=OFF)",
)

AGREEMENT_TOLERANCE = 0.05  # |p_true(served, Q4_1 kernels) - p_true(local, dequantised fp32)|
N_QUESTIONS = 6


@pytest.fixture(scope="module")
def server() -> LlamaServer:
    return shared_server()


def served_spec(server: LlamaServer, extra: str = "") -> str:
    return f"{server.url}#{MODEL_ALIAS};tokenizer=demo:base;concurrency=2{extra}"


def demo_questions(n: int) -> list[Query]:
    pairs = load_bundled_benchmark().pairs
    out = []
    for p in pairs[: (n + 1) // 2]:
        for q in (p.monitored, p.hidden):
            out.append(Query(p.pair_id, q.question, q.true_option, q.false_option))
    return out[:n]


@pytest.mark.slow  # 9-13 s against the real server
def test_served_agrees_with_the_local_backend_on_the_same_gguf(server: LlamaServer) -> None:
    served = load_checkpoint(served_spec(server))
    assert isinstance(served, ServedVerifier)
    info = served.describe()
    # llama-cpp-python takes text only: the tokenization was checked, and echo is aligned.
    assert info["prompts_sent_as"] == "text"
    assert info["tokenization_checked_with"] == "/extras/tokenize"
    assert "echo" in info["label_logprobs"] and info["echo_alignment_gap_nats"] < 1e-3
    queries = demo_questions(N_QUESTIONS)
    got = served.score(queries)
    local = load_verifier("demo:base", device="cpu").score(queries)
    diffs = [abs(a.p_true - b.p_true) for a, b in zip(got, local, strict=True)]
    lp = [
        abs(x - y)
        for a, b in zip(got, local, strict=True)
        for x, y in zip(a.logprobs or (), b.logprobs or (), strict=True)
    ]
    print(
        f"\nserved (llama.cpp Q4_1) vs local (dequantised fp32), {len(queries)} demo questions: "
        f"max |dp| = {max(diffs):.4f}, mean |dp| = {sum(diffs) / len(diffs):.4f}, "
        f"max |d log p| = {max(lp):.3f} nats"
    )
    assert max(diffs) <= AGREEMENT_TOLERANCE
    assert served.traffic()["fallbacks"] == 0  # both labels were in the top 20 every time


@pytest.mark.slow  # 9-13 s against the real server
def test_list_prompts_fall_back_to_one_prompt_a_request(server: LlamaServer) -> None:
    """llama-cpp-python 0.3.36 answers a list of two prompts with HTTP 500 (its server asserts
    a list holds at most one). batch=4 finds that once at connect, records why, and sends one
    prompt a request; the scores equal the unbatched ones (same requests, up to llama.cpp's
    KV-cache jitter)."""
    import httpx

    two = {"model": MODEL_ALIAS, "prompt": ["Hello", "The sky is"], "max_tokens": 1}
    assert httpx.post(server.url + "/completions", json=two, timeout=120).status_code == 500
    queries = demo_questions(2)
    want = load_checkpoint(served_spec(server)).score(queries)
    proxy = CountingProxy(server)  # another URL: the server's facts are learnt afresh
    try:
        batched = load_checkpoint(f"{proxy.url}#{MODEL_ALIAS};tokenizer=demo:base;batch=4")
        info = batched.describe()
        assert info["prompts_per_request"] == 1
        assert "HTTP 500" in info["prompts_per_request_note"]
        n0 = len(proxy.log)
        got = batched.score(queries)
        # Several prompts (a list of strings or of id lists; a flat id list is one prompt).
        lists = [b["prompt"] for _, b, _ in proxy.log if _several(b.get("prompt"))]
        assert len(lists) == 1 and len(lists[0]) == 2  # the one question at connect
        scoring = [b for route, b, _ in proxy.log[n0:] if route.endswith("/completions")]
        assert len(scoring) == 2 * len(queries) and all(
            isinstance(b["prompt"], str) for b in scoring
        )
    finally:
        proxy.close()
    gap = max(abs(a.p_true - b.p_true) for a, b in zip(got, want, strict=True))
    print(f"\nllama.cpp, batch=4 fallen back to 1 vs unbatched: max |dp| = {gap:.4f}")
    assert gap <= AGREEMENT_TOLERANCE


def _several(prompt: object) -> bool:
    return isinstance(prompt, list) and bool(prompt) and isinstance(prompt[0], str | list)


@pytest.mark.slow  # the real server: skipped without llama-cpp-python, which `make test` lacks
def test_a_different_tokenizer_is_refused_with_the_first_differing_token(
    server: LlamaServer, tmp_path: Path
) -> None:
    tok = tmp_path / "other-tokenizer"
    tok.mkdir()
    build_tokenizer(tok)
    with pytest.raises(InputError, match=r"tokenises the prompts differently .* first difference"):
        load_checkpoint(f"{server.url}#{MODEL_ALIAS};tokenizer={tok}")


@pytest.mark.slow  # the real server, as above
def test_a_wrong_model_name_is_refused(server: LlamaServer) -> None:
    # llama.cpp itself would answer 200 with its own model.
    with pytest.raises(InputError, match=f"serves '{MODEL_ALIAS}', not 'smollm2-typo'"):
        load_checkpoint(f"{server.url}#smollm2-typo;tokenizer=demo:base")


@pytest.mark.slow  # 9-13 s against the real server
def test_cli_scores_a_served_checkpoint(
    server: LlamaServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps(
            {"question": "What colour is the sky?", "true_option": "Blue", "false_option": "Red"}
        )
        + "\n"
    )
    assert cli_main(["score", served_spec(server), str(questions)]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert 0.0 < row["p_true"] < 1.0 and len(row["logprobs"]) == 4
    assert cli_main(["checkpoint-info", served_spec(server)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kind"] == "served" and info["model"] == MODEL_ALIAS
    assert cli_main(["score", f"{server.url}#nope;tokenizer=demo:base", str(questions)]) == 2
    assert "not 'nope'" in capsys.readouterr().err


@pytest.mark.slow
def test_prompt_logprobs_by_echo_equal_the_top_k_values(server: LlamaServer) -> None:
    """method=prompt reads every label from echo (~3 s a request on 2 cores): the same values."""
    queries = demo_questions(1)
    fast = load_checkpoint(served_spec(server)).score(queries)
    echo = load_checkpoint(served_spec(server, ";method=prompt")).score(queries)
    assert echo[0].logprobs == pytest.approx(fast[0].logprobs, abs=1e-3)
