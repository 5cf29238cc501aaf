"""Several prompts in one /v1/completions request (`batch=N`) against the vLLM protocol fake.

The fake's every log-prob is exact (`ExactModel`), so batched scores must equal unbatched ones
bit for bit, and both the model's own values. The choices of a batched reply are matched to the
prompts by `index`: a fake that shuffles them must still score right, and one that drops or
repeats an index must fail with a clear error (the negative controls). Servers that refuse a
list (llama-cpp-python, tested for real in test_served_llama.py) get one prompt a request.
"""

# ruff: noqa: F811 - the fixtures server, tokdir and tokenizer come from test_served.py
from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import pytest

from eraudit_core.cli import main as cli_main
from eraudit_core.errors import IncompleteScores, InputError
from eraudit_core.types import Query
from eraudit_core.verifier import ServedSpec, load_checkpoint
from eraudit_core.verifier.served import ServedVerifier
from eraudit_core.verifier.served._batching import ChoiceMismatch, split_reply
from tests.verifier._fake_vllm import ExactModel, FakeVLLM
from tests.verifier.test_served import QUERIES, reference, server, spec, tokdir, tokenizer  # noqa: F401

N_PROMPTS = 2 * len(QUERIES)  # 14: each question in both answer orders


def scoring_requests(server: FakeVLLM, since: int) -> list[list]:
    """The prompt lists of the completion requests sent since `since` (one prompt: [prompt])."""
    return [FakeVLLM.prompts(c["prompt"]) for c in server.completions[since:]]


def test_batch_is_a_spec_option_with_clear_errors(
    tokdir: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    s = ServedSpec.parse(f"http://h:1/v1#m;tokenizer={tokdir};batch=8;concurrency=8")
    assert s.batch == 8 and ServedSpec.parse(s.text) == s and "batch=8" in s.text
    assert "batch" not in ServedSpec.parse(f"http://h:1/v1#m;tokenizer={tokdir}").text
    for bad, message in (("0", "batch .* must lie in 1..1024, got 0"), ("2000", "got 2000")):
        with pytest.raises(InputError, match=message):
            ServedSpec.parse(f"http://h:1/v1#m;tokenizer={tokdir};batch={bad}")
    with pytest.raises(InputError, match="batch must be an integer, got 'eight'"):
        ServedSpec.parse(f"http://h:1/v1#m;tokenizer={tokdir};batch=eight")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "Q?", "true_option": "a", "false_option": "b"}))
    assert cli_main(["score", f"http://h:1/v1#m;tokenizer={tokdir};batch=0", str(questions)]) == 2
    assert "batch (prompts in one request) must lie in 1..1024" in capsys.readouterr().err


@pytest.mark.parametrize("batch", [1, 3, 8, 64])
def test_batched_scores_equal_unbatched_exactly(
    server: FakeVLLM, tokdir: Path, tokenizer: object, batch: int
) -> None:
    """3 and 8 do not divide the 14 prompts; 64 puts them all in one request. The prompts
    have different lengths (QUERIES grow by a word each)."""
    lengths = {len(server.encode(t)) for q in QUERIES for t in _render(server, tokdir, q)}
    assert len(lengths) >= 7, lengths
    one = load_checkpoint(spec(server, tokdir, ";concurrency=2"))
    want = one.score(QUERIES)
    many = load_checkpoint(spec(server, tokdir, f";concurrency=3;batch={batch}"))  # a new object
    assert isinstance(many, ServedVerifier)
    assert many.describe()["prompts_per_request"] == batch
    since, before = len(server.completions), many.traffic()["fallbacks"]
    got = many.score(QUERIES)
    assert [g.logprobs for g in got] == [w.logprobs for w in want]  # exact, not approx
    assert [g.p_true for g in got] == [w.p_true for w in want]
    exact = reference(many, server.model, tokenizer, QUERIES)
    assert [g.p_true for g in got] == pytest.approx([e.p_true for e in exact], abs=1e-6)
    sent = server.completions[since:]
    next_token = sorted(len(FakeVLLM.prompts(c["prompt"])) for c in sent if not c.get("echo"))
    full, rest = divmod(N_PROMPTS, batch)
    assert next_token == sorted([batch] * full + ([rest] if rest else []))
    # Labels outside the top 20 of the tiny random model: prompt log-probs, batched too.
    fallbacks = [len(FakeVLLM.prompts(c["prompt"])) for c in sent if c.get("echo")]
    assert sum(fallbacks) == many.traffic()["fallbacks"] - before > 0
    assert max(fallbacks) <= batch
    if batch > 1:  # token-id lists, one per prompt
        assert all(isinstance(c["prompt"][0], list) for c in server.completions[since:])
    t = many.traffic()
    assert t["prompts"] >= N_PROMPTS and t["prompts_in_flight"] == 0 and t["in_flight"] == 0


@pytest.mark.parametrize("extra", [";method=prompt", ";top_k=2"])
def test_batched_prompt_logprobs_equal_unbatched(
    server: FakeVLLM, tokdir: Path, extra: str
) -> None:
    """The prompt_logprobs path (every label with method=prompt; labels outside a top 2)."""
    want = load_checkpoint(spec(server, tokdir, extra)).score(QUERIES)
    batched = load_checkpoint(spec(server, tokdir, extra + ";batch=5"))
    since = len(server.completions)
    got = batched.score(QUERIES)
    assert [g.logprobs for g in got] == [w.logprobs for w in want]
    plp = [c for c in server.completions[since:] if c.get("prompt_logprobs")]
    assert plp and max(len(FakeVLLM.prompts(c["prompt"])) for c in plp) == 5
    assert batched.traffic()["fallbacks"] > 0


def test_batched_multi_token_labels(server: FakeVLLM, tokdir: Path) -> None:
    labels = ("Alpha", "Beta")
    want = load_checkpoint(spec(server, tokdir), labels=labels).score(QUERIES)
    got = load_checkpoint(spec(server, tokdir, ";batch=4"), labels=labels).score(QUERIES)
    assert [g.logprobs for g in got] == [w.logprobs for w in want]


def test_shuffled_choices_are_matched_by_index(server: FakeVLLM, tokdir: Path) -> None:
    want = load_checkpoint(spec(server, tokdir)).score(QUERIES)
    server.list_mode = "shuffle"
    v = load_checkpoint(spec(server, tokdir, ";batch=6"))
    assert v.describe()["prompts_per_request"] == 6
    since = len(server.completions)
    got = v.score(QUERIES)
    assert [g.logprobs for g in got] == [w.logprobs for w in want]
    assert max(len(p) for p in scoring_requests(server, since)) == 6


def test_matching_by_position_would_be_wrong(server: FakeVLLM, tokdir: Path) -> None:
    """Negative control of the test above: reading the shuffled choices in list order gives
    other numbers, so the shuffle does move answers between prompts."""
    server.list_mode = "shuffle"
    ids = [server.encode(t) for t in _render(server, tokdir, QUERIES[0])]
    ids += [server.encode(t) for t in _render(server, tokdir, QUERIES[1])]
    body = {"model": server.name, "prompt": ids, "max_tokens": 1, "logprobs": 5}
    status, reply, _ = server.complete(body, first=False)
    assert status == 200
    in_order = [c["logprobs"]["top_logprobs"][0] for c in reply["choices"]]
    by_index = [r["choices"][0]["logprobs"]["top_logprobs"][0] for r in split_reply(reply, 4, "x")]
    assert in_order != by_index
    assert [c["index"] for c in reply["choices"]] != [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("drop", r"answered 5 choices for 6 prompts"),
        ("first_only", r"answered 1 choices for 6 prompts"),
        ("duplicate", r"choice index 0 appears more than once and 5 not at all"),
    ],
)
def test_missing_or_repeated_indexes_are_clear_errors(
    server: FakeVLLM, tokdir: Path, mode: str, message: str
) -> None:
    """A server that answers lists correctly at connect and wrongly later: the request fails
    with a clear error naming the prompts, and no score is assigned from it."""
    v = load_checkpoint(spec(server, tokdir, ";batch=6;concurrency=1"))
    assert v.describe()["prompts_per_request"] == 6
    server.list_mode = mode
    with pytest.raises(IncompleteScores, match=message) as err:
        v.score(QUERIES)
    assert "6 prompts in one request, pair p0 order AB" in str(err.value)
    server.list_mode = ""
    want = load_checkpoint(spec(server, tokdir)).score(QUERIES)
    for i, s in err.value.completed.items():  # whatever finished was matched right
        assert s.logprobs == want[i].logprobs


def test_split_reply_refuses_bad_indexes() -> None:
    ok = {"choices": [{"index": 1, "t": "b"}, {"index": 0, "t": "a"}]}
    assert [r["choices"][0]["t"] for r in split_reply(ok, 2, "w")] == ["a", "b"]
    for choices, message in (
        ([{"index": 0}, {"index": 2}], "choices\\[1\\] has index 2"),
        ([{"index": 0}, {"index": True}], "has index True"),
        ([{"index": 0}, {}], "has index None"),
        ([{"index": 1}, {"index": 1}], "index 1 appears more than once and 0 not at all"),
    ):
        with pytest.raises(ChoiceMismatch, match=message):
            split_reply({"choices": choices}, 2, "w")
    with pytest.raises(InputError, match="malformed completion"):
        split_reply({"result": 1}, 2, "w")


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("refuse", "HTTP 500"),
        ("first_only", "answered 1 choices for 2 prompts"),
        ("swap", "differs from that prompt's answer alone"),
    ],
)
def test_a_server_that_refuses_lists_gets_one_prompt_a_request(
    server: FakeVLLM, tokdir: Path, tokenizer: object, mode: str, why: str
) -> None:
    """Detected once at connect (llama-cpp-python answers 500; a server could answer only the
    first prompt, or swap indexes): then one prompt a request, scores still exact, and the
    reason is in describe() (stored with the checkpoint's registration)."""
    server.list_mode = mode
    v = load_checkpoint(spec(server, tokdir, ";batch=8"))
    info = v.describe()
    assert info["prompts_per_request"] == 1
    assert "each request carries one prompt" in info["prompts_per_request_note"]
    assert why in info["prompts_per_request_note"]
    since = len(server.completions)
    got = v.score(QUERIES)
    assert all(len(p) == 1 for p in scoring_requests(server, since))
    want = reference(v, server.model, tokenizer, QUERIES)
    assert [g.p_true for g in got] == pytest.approx([w.p_true for w in want], abs=1e-6)
    # Asked once per process and server: a second load does not ask again.
    lists_before = sum(len(p) > 1 for p in scoring_requests(server, 0))
    load_checkpoint(spec(server, tokdir, ";batch=4"))
    assert sum(len(p) > 1 for p in scoring_requests(server, 0)) == lists_before


def test_batch_times_concurrency_prompts_are_in_flight(tokenizer: object, tokdir: Path) -> None:
    slow = FakeVLLM(tokenizer, ExactModel(len(tokenizer)), delay_s=0.3)  # type: ignore[arg-type]
    try:
        v = load_checkpoint(spec(slow, tokdir, ";batch=4;concurrency=3"))
        queries = [
            Query(f"z{i}", f"Which option is right number {i}?", "yes", "no") for i in range(12)
        ]  # 24 prompts: 6 requests of 4, 3 at a time
        slow.peak_in_flight = slow.peak_prompts_in_flight = 0
        seen: list[int] = []
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.02):
                seen.append(v.traffic()["prompts_in_flight"])

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            v.score(queries)
        finally:
            done.set()
            sampler.join()
        assert slow.peak_in_flight == 3 and slow.peak_prompts_in_flight == 12
        assert max(seen) == 12 and v.traffic()["prompts_in_flight"] == 0
    finally:
        slow.close()


def _render(server: FakeVLLM, tokdir: Path, q: Query) -> tuple[str, str]:
    v = load_checkpoint(spec(server, tokdir))
    assert isinstance(v, ServedVerifier)
    return v.render(q)


def test_probe_is_finite_when_batched(server: FakeVLLM, tokdir: Path) -> None:
    v = load_checkpoint(spec(server, tokdir, ";batch=2"))
    assert v.probe_logprobs is not None and all(math.isfinite(x) for x in v.probe_logprobs)
