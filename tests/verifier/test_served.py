"""The served backend against a loopback server speaking vLLM's protocol over an exact model.

Every log-probability the fake server returns is known in closed form (`ExactModel`), so the
served scores are compared with values computed here from the model itself, not with the
backend's own earlier output. The real-server tests are in test_served_llama.py.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch

from eraudit_core.errors import IncompleteScores, InputError
from eraudit_core.openai_http import EndpointError
from eraudit_core.runs import register_checkpoint
from eraudit_core.runs import register_checkpoint as _register
from eraudit_core.store import Store
from eraudit_core.types import Query
from eraudit_core.verifier import CheckpointSpec, ServedSpec, load_checkpoint, parse_spec
from eraudit_core.verifier.hf import scores_from_logprobs
from eraudit_core.verifier.served import ServedVerifier, load_tokenizer
from tests._tiny_model import build_tokenizer
from tests.verifier._fake_vllm import ExactModel, FakeVLLM

QUERIES = [
    Query(f"p{i}", "Why did the author leave the city" + " really" * i + "?", "money", "love")
    for i in range(6)
] + [Query("q", "What does the narrator think about the captain?", "He is brave.", "A robot.")]


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tok") / "tokenizer"
    d.mkdir()
    build_tokenizer(d)
    return d


@pytest.fixture(scope="module")
def tokenizer(tokdir: Path) -> object:
    return load_tokenizer(CheckpointSpec.parse(str(tokdir))).tokenizer


@pytest.fixture()
def server(tokenizer: object) -> Iterator[FakeVLLM]:
    s = FakeVLLM(tokenizer, ExactModel(len(tokenizer)))  # type: ignore[arg-type]
    yield s
    s.close()


def spec(server: FakeVLLM, tokdir: Path, extra: str = "") -> str:
    return f"{server.url}#{server.name};tokenizer={tokdir};retries=1{extra}"


def reference(v: ServedVerifier, model: ExactModel, tok: object, queries: list[Query]) -> list:
    """p_true from the model's exact log-probs of the rendered prompts (docs/design.md §3)."""
    rows = []
    for q in queries:
        per_order = []
        for text in v.render(q):
            ids = tok(text, add_special_tokens=False).input_ids  # type: ignore[operator]
            per_order.append(
                [
                    model.label_logprob(ids, tok(" " + lab, add_special_tokens=False).input_ids)  # type: ignore[operator]
                    for lab in v.labels
                ]
            )
        rows.append(per_order)
    return scores_from_logprobs(torch.tensor(rows, dtype=torch.float32))


def test_spec_parsing_round_trips_and_refuses_bad_specs(tokdir: Path) -> None:
    text = (
        f"http://10.0.0.5:8000/v1/#llama-70b;tokenizer={tokdir};api_key_env=VLLM_KEY;concurrency=64"
    )
    s = parse_spec(text)
    assert isinstance(s, ServedSpec)
    assert s.base_url == "http://10.0.0.5:8000/v1" and s.model == "llama-70b"
    assert s.concurrency == 64 and s.api_key_env == "VLLM_KEY" and s.method == "auto"
    assert ServedSpec.parse(s.text) == s
    assert "VLLM_KEY" in s.text and s.text.count(";") == 3  # defaults are not written out
    assert isinstance(parse_spec("demo:base"), CheckpointSpec)
    with pytest.raises(InputError, match="tokenizer=LOCAL_SPEC"):
        ServedSpec.parse("http://h:1/v1#m")
    with pytest.raises(InputError, match="needs '#MODEL"):
        ServedSpec.parse("http://h:1/v1")
    with pytest.raises(InputError, match="unknown setting 'batch_size=3'"):
        ServedSpec.parse(f"http://h:1/v1#m;tokenizer={tokdir};batch_size=3")
    with pytest.raises(InputError, match="never put the key itself"):
        ServedSpec.parse(f"http://h:1/v1#m;tokenizer={tokdir};api_key_env=sk-12345")
    with pytest.raises(InputError, match="concurrency"):
        ServedSpec.parse(f"http://h:1/v1#m;tokenizer={tokdir};concurrency=0")
    with pytest.raises(InputError, match="tokenizer= checkpoint"):
        ServedSpec.parse("http://h:1/v1#m;tokenizer=/no/such/dir")
    with pytest.raises(InputError, match="base_url"):
        ServedSpec.parse(f"ftp://h:1/v1#m;tokenizer={tokdir}")
    with pytest.raises(InputError, match="cannot be used where a local model"):
        CheckpointSpec.parse("http://h:1/v1#m;tokenizer=demo:base")


def test_scores_equal_the_models_exact_values(
    server: FakeVLLM, tokdir: Path, tokenizer: object
) -> None:
    v = load_checkpoint(spec(server, tokdir))
    assert isinstance(v, ServedVerifier)
    info = v.describe()
    assert info["prompts_sent_as"] == "token ids" and "prompt_logprobs" in info["label_logprobs"]
    assert info["max_model_len"] == 4096 and info["served_root"] == "/models/m1"
    got = v.score(QUERIES)
    want = reference(v, server.model, tokenizer, QUERIES)
    for g, w in zip(got, want, strict=True):
        assert g.p_true == pytest.approx(w.p_true, abs=1e-6)
        assert g.logprobs == pytest.approx(w.logprobs, abs=1e-5)
    # Token ids were sent, never text, and each query asked once.
    sent = [c for c in server.completions if isinstance(c["prompt"], list)]
    assert len(sent) == len(server.completions)
    before = len(server.completions)
    assert v.score(QUERIES[:2]) == got[:2]
    assert len(server.completions) == before


def test_labels_outside_the_top_k_are_read_exactly_not_guessed(
    server: FakeVLLM, tokdir: Path, tokenizer: object
) -> None:
    v = load_checkpoint(spec(server, tokdir, ";top_k=2"))
    got = v.score(QUERIES)
    assert v.traffic()["fallbacks"] > 0  # some labels were missing from the top 2
    want = reference(v, server.model, tokenizer, QUERIES)
    assert [g.p_true for g in got] == pytest.approx([w.p_true for w in want], abs=1e-6)
    forced = load_checkpoint(spec(server, tokdir, ";method=prompt"))
    assert [s.p_true for s in forced.score(QUERIES)] == pytest.approx(
        [w.p_true for w in want], abs=1e-6
    )
    assert all(c.get("prompt_logprobs") for c in server.completions[-2 * len(QUERIES) :])


def test_multi_token_labels_are_summed(server: FakeVLLM, tokdir: Path, tokenizer: object) -> None:
    labels = ("Alpha", "Beta")
    ids = [tokenizer(" " + x, add_special_tokens=False).input_ids for x in labels]  # type: ignore[operator]
    assert max(len(i) for i in ids) > 1, ids  # the tiny vocabulary splits them
    v = load_checkpoint(spec(server, tokdir), labels=labels)
    got = v.score(QUERIES[:3])
    want = reference(v, server.model, tokenizer, QUERIES[:3])
    assert [g.p_true for g in got] == pytest.approx([w.p_true for w in want], abs=1e-6)
    assert "several tokens" in v.describe()["label_handling"]


def test_many_requests_in_flight(tokenizer: object, tokdir: Path) -> None:
    slow = FakeVLLM(tokenizer, ExactModel(len(tokenizer)), delay_s=0.15)  # type: ignore[arg-type]
    try:
        v = load_checkpoint(spec(slow, tokdir, ";concurrency=8"))
        slow.peak_in_flight = 0
        v.score(QUERIES)  # 14 prompts
        assert slow.peak_in_flight >= 6, slow.peak_in_flight
        assert v.traffic()["in_flight"] == 0 and v.traffic()["prompts"] >= 14
        one = load_checkpoint(spec(slow, tokdir, ";concurrency=1"))
        slow.peak_in_flight = 0
        one.score([Query("z", "Which option is right?", "yes", "no")])
        assert slow.peak_in_flight == 1
    finally:
        slow.close()


def test_wrong_model_name_is_refused(server: FakeVLLM, tokdir: Path) -> None:
    with pytest.raises(InputError, match="serves 'fake-model', not 'other'"):
        load_checkpoint(f"{server.url}#other;tokenizer={tokdir}")


def test_garbage_answers_are_clear_errors(server: FakeVLLM, tokdir: Path) -> None:
    v = load_checkpoint(spec(server, tokdir))
    server.mode = "garbage"
    with pytest.raises(IncompleteScores, match="malformed completion, no choices") as err:
        v.score(QUERIES[:2])
    assert "pair p0" in str(err.value) or "pair p1" in str(err.value)
    assert server.url in str(err.value)
    server.mode = "html"
    with pytest.raises(IncompleteScores, match=r"giving up after 2 attempts: response is not JSON"):
        v.score(QUERIES[2:3])
    server.mode = "garbage"
    with pytest.raises(InputError, match="malformed"):
        load_checkpoint(spec(server, tokdir, ";concurrency=2"))


def test_a_server_without_prompt_logprobs_is_refused(server: FakeVLLM, tokdir: Path) -> None:
    server.mode = "no_prompt_logprobs"
    with pytest.raises(EndpointError, match="returned no prompt log-probs"):
        load_checkpoint(spec(server, tokdir, ";concurrency=3"))


def test_429_is_retried_after_the_server_asks(server: FakeVLLM, tokdir: Path) -> None:
    v = load_checkpoint(spec(server, tokdir, ";concurrency=4"))
    server.busy_next = 1
    t0 = time.monotonic()
    v.score(QUERIES[:1])
    assert time.monotonic() - t0 >= 1.0  # Retry-After: 1 was honoured
    assert v.traffic()["retries"] == 1
    assert v.describe()["prompts_sent_as"] == "token ids"


def test_unreachable_server_names_the_server_and_request(server: FakeVLLM, tokdir: Path) -> None:
    v = load_checkpoint(spec(server, tokdir, ";concurrency=5"))
    server.mode = "down"
    with pytest.raises(IncompleteScores) as err:
        v.score(QUERIES[:1])
    msg = str(err.value)
    assert "POST " + server.url + "/completions" in msg and "giving up after 2 attempts" in msg
    assert "HTTP 503" in msg and "engine is restarting" in msg and "pair p0 order" in msg


def test_finished_questions_survive_a_failure(server: FakeVLLM, tokdir: Path) -> None:
    """IncompleteScores carries what finished; the cache keeps it and asks only for the rest."""
    from eraudit_core.runs import CachedScorer

    v = load_checkpoint(spec(server, tokdir, ";concurrency=1"))
    store = Store(":memory:")
    scorer = CachedScorer(v, store)
    n0 = len(server.completions)
    original = server.complete

    def fail_after_three(body: dict, first: bool) -> tuple:
        if len(server.completions) - n0 > 6:
            return 503, {"error": {"message": "gone"}}, {}
        return original(body, first)

    server.complete = fail_after_three  # type: ignore[method-assign]
    fresh = QUERIES[3:]
    with pytest.raises(IncompleteScores):
        scorer.score(fresh)
    kept = store.cached_scores(v.fingerprint, [q.prompt_hash for q in fresh])
    assert 1 <= len(kept) <= 3
    server.complete = original  # type: ignore[method-assign]
    asked_before = [json.dumps(c["prompt"]) for c in server.completions[n0:]]
    scorer.score(fresh)
    asked_after = [json.dumps(c["prompt"]) for c in server.completions[n0 + len(asked_before) :]]
    answered = asked_before[:6]  # the six answered before the failure (concurrency 1)
    assert not set(answered) & set(asked_after)


def test_api_key_comes_from_the_environment_only(
    tokenizer: object, tokdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = FakeVLLM(tokenizer, ExactModel(len(tokenizer)), api_key="s3cret-value")  # type: ignore[arg-type]
    try:
        monkeypatch.delenv("TEST_SERVED_KEY", raising=False)
        with pytest.raises(InputError, match="TEST_SERVED_KEY .* is not set"):
            load_checkpoint(spec(locked, tokdir, ";api_key_env=TEST_SERVED_KEY"))
        with pytest.raises(EndpointError, match="HTTP 401"):
            load_checkpoint(spec(locked, tokdir, ";concurrency=6"))
        monkeypatch.setenv("TEST_SERVED_KEY", "s3cret-value")
        v = load_checkpoint(spec(locked, tokdir, ";api_key_env=TEST_SERVED_KEY"))
        store = Store(":memory:")
        register_checkpoint(store, v, v.name, min_label_mass=0.0)  # random weights
        stored = json.dumps(store.checkpoints().astype(str).to_dict())
        assert "s3cret" not in stored and "s3cret" not in json.dumps(v.describe())
        assert "TEST_SERVED_KEY" in stored
    finally:
        locked.close()


def test_other_weights_under_the_same_name_are_refused(tokenizer: object, tokdir: Path) -> None:
    # Random weights put almost no mass on the labels: this test is about the probe, not that.
    register_checkpoint = partial(_register, min_label_mass=0.0)
    store = Store(":memory:")
    a = FakeVLLM(tokenizer, ExactModel(len(tokenizer), salt="w1"))  # type: ignore[arg-type]
    try:
        v = load_checkpoint(spec(a, tokdir))
        register_checkpoint(store, v, v.name)
        fp = v.fingerprint
        register_checkpoint(store, load_checkpoint(spec(a, tokdir)), "again")  # same: accepted
        # A restart with other weights that reports the same path: only the probe can tell.
        a.model = _Renamed(ExactModel(len(tokenizer), salt="w2"), "w1")  # type: ignore[arg-type]
        again = load_checkpoint(spec(a, tokdir))
        assert again.fingerprint == fp
        with pytest.raises(InputError, match="now serves different weights"):
            register_checkpoint(store, again, again.name)
        renamed = load_checkpoint(spec(a, tokdir, ";revision=w2"))
        assert renamed.fingerprint != fp
        register_checkpoint(store, renamed, renamed.name)
    finally:
        a.close()


class _Renamed(ExactModel):
    """Model w2's numbers under w1's reported path."""

    def __init__(self, inner: ExactModel, salt: str) -> None:
        super().__init__(inner.vocab, inner.salt)
        self._inner = inner
        self.salt = salt

    def logprobs(self, prefix):  # type: ignore[no-untyped-def]
        return self._inner.logprobs(prefix)


def test_prompts_longer_than_the_context_are_refused(tokenizer: object, tokdir: Path) -> None:
    short = FakeVLLM(tokenizer, ExactModel(len(tokenizer)), max_model_len=120)  # type: ignore[arg-type]
    try:
        v = load_checkpoint(spec(short, tokdir))
        long = Query("long", "Why did the author leave the city" + " really" * 200 + "?", "a", "b")
        with pytest.raises(IncompleteScores, match="exceeds the server's context of 120"):
            v.score([long])
    finally:
        short.close()


def test_probe_values_are_finite(server: FakeVLLM, tokdir: Path) -> None:
    v = load_checkpoint(spec(server, tokdir))
    assert v.probe_logprobs is not None and all(math.isfinite(x) for x in v.probe_logprobs)


class _EmptyTopK(FakeVLLM):
    """A broken server: every next-token answer carries `top_logprobs: [{}]` once `broken`."""

    broken = True

    def complete(self, body: dict, first: bool) -> tuple:
        status, reply, headers = super().complete(body, first)
        if self.broken and isinstance(reply, dict):
            for choice in reply.get("choices", []):
                if choice.get("logprobs"):
                    choice["logprobs"]["top_logprobs"] = [{}]
        return status, reply, headers


def test_an_empty_top_k_is_a_clear_error_not_a_traceback(
    tokenizer: object, tokdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server answering `top_logprobs: [{}]` crashed `checkpoint-info` with
    ValueError (exit 1). It is refused at connect (exit 2), and a server that starts answering
    so after connecting leaves the queries unscored with the reason, never scored from nothing."""
    from eraudit_core.cli import main

    s = _EmptyTopK(tokenizer, ExactModel(len(tokenizer)))  # type: ignore[arg-type]
    try:
        assert main(["checkpoint-info", spec(s, tokdir), "--json"]) == 2
        err = capsys.readouterr().err
        assert "empty top-k" in err and "Traceback" not in err
        # Negative control: the same server answering properly connects and scores.
        s.broken = False
        v = load_checkpoint(spec(s, tokdir))
        assert len(v.score(QUERIES[:1])) == 1
        s.broken = True
        with pytest.raises(IncompleteScores, match="empty top-k"):
            v.score(QUERIES[1:2])
    finally:
        s.close()


class _AnswersOnOddPrompts(ExactModel):
    """A label on top after prompts of odd length, a random token elsewhere."""

    def __init__(self, vocab: int, label: int) -> None:
        super().__init__(vocab)
        self.label = label

    def logprobs(self, prefix: Sequence[int]) -> np.ndarray:
        lp = super().logprobs(prefix).copy()
        if len(prefix) % 2:
            lp[self.label] = 0.0  # the largest before renormalising
            lp -= np.log(np.exp(lp).sum())
        return lp


def test_top_is_label_reads_the_servers_most_likely_next_token(
    tokdir: Path, tokenizer: object
) -> None:
    """The label-mass check's second signal over the wire equals the model's own argmax; the
    prompts where the label is not on top are the negative control."""
    label = tokenizer(" A", add_special_tokens=False).input_ids  # type: ignore[operator]
    model = _AnswersOnOddPrompts(len(tokenizer), label[0])  # type: ignore[arg-type]
    server = FakeVLLM(tokenizer, model)  # type: ignore[arg-type]
    try:
        v = load_checkpoint(spec(server, tokdir))
        assert isinstance(v, ServedVerifier)
        firsts = {lab[0] for lab in v._label_ids}
        want = [
            int(np.argmax(model.logprobs(tokenizer(t, add_special_tokens=False).input_ids)))  # type: ignore[operator]
            in firsts
            for q in QUERIES
            for t in v.render(q)
        ]
        assert True in want and False in want  # both cases are exercised
        assert v.top_is_label(QUERIES) == want
    finally:
        server.close()
