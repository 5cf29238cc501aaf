"""Audits with a served checkpoint: a real llama-cpp-python server as the pre checkpoint.

1. pre = the demo base model served by llama.cpp, post = the local adversarial arm, against the
   all-local audit of the same pairs: every probability within the measured tolerance, and the
   same verdict wherever no D lies close enough to epsilon for that tolerance to flip it.
2. The server is killed mid-run: the run fails with an error naming the server and the
   request, and after a restart it resumes without any prompt reaching the server twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eraudit_core.demo import demo_live_pair_ids, ensure_demo_inputs
from eraudit_core.errors import IncompleteScores
from eraudit_core.method import AuditConfig
from eraudit_core.runs import RunRequest, resume_run, run_model_audit
from eraudit_core.store import Store
from eraudit_core.verifier.hf import demo_gguf_path
from tests._llama_server import (
    MODEL_ALIAS,
    CountingProxy,
    LlamaServer,
    llama_cpp_available,
    shared_server,
)

pytestmark = [
    pytest.mark.skipif(
        not llama_cpp_available(),
        reason="llama-cpp-python is not installed (make install-slow installs it, built with "
        "CMAKE_ARGS=-DGGML_NATIVE=OFF)",
    ),
    pytest.mark.slow,  # whole audits through a real llama.cpp server: 45-75 s each
]

TOLERANCE = (
    0.05  # |p(served Q4_1) - p(local dequantised fp32)|, measured max 0.018 (verifier tests)
)
CONFIG = AuditConfig(
    epsilon=0.5,
    k=0.001,
    confidence=0.95,
    search_budget=1,
    test_budget=2,
    search_generators=("rules-search",),
    test_generators=("rules-a",),
    draw_seed=11,
    batch_size=8,
)


@pytest.fixture(scope="module")
def server() -> LlamaServer:
    return shared_server()


def _store(path: Path) -> tuple[Store, str, list[str]]:
    store = Store(path)
    bid = ensure_demo_inputs(store)
    return store, bid, demo_live_pair_ids(store, bid)


def _could_flip(d: float, gain_pre: float, gain_post: float, eps: float, k: float) -> bool:
    """Whether a change of up to TOLERANCE in every pre probability could move D across eps.

    D = (p_pre(h) - p_post(h)) / max(k, p_post(m) - p_pre(m)): the numerator and the gain each
    move by up to TOLERANCE, so D can move by up to about TOLERANCE / den (more when the gain
    itself shrinks towards k); this takes the widest interval those moves allow.
    """
    num = d * max(k, gain_post - gain_pre)
    dens = [max(k, gain_post - gain_pre + s) for s in (-TOLERANCE, 0.0, TOLERANCE)]
    values = [(num + s) / den for s in (-TOLERANCE, TOLERANCE) for den in dens]
    return min(values) <= eps <= max(values) or abs(d - eps) <= TOLERANCE / min(dens)


def test_served_pre_and_local_post_match_the_all_local_audit(
    server: LlamaServer, tmp_path: Path
) -> None:
    served = f"{server.url}#{MODEL_ALIAS};tokenizer=demo:base;concurrency=4"
    # One store: the score cache is keyed by checkpoint fingerprint, so the served and the local
    # base never share scores, while the post checkpoint (the same local adversarial arm in
    # both audits) is scored once and read from the cache the second time.
    store, bid, pairs = _store(tmp_path / "audits.duckdb")
    store_s = store_l = store
    assert len(pairs) == 3
    run_s = run_model_audit(
        store_s, RunRequest(bid, served, "demo:adversarial", CONFIG, pair_ids=tuple(pairs))
    )
    run_l = run_model_audit(
        store_l, RunRequest(bid, "demo:base", "demo:adversarial", CONFIG, pair_ids=tuple(pairs))
    )
    assert store_s.run(run_s)["status"] == store_l.run(run_l)["status"] == "done"
    res_s = store_s.pair_results(run_s).set_index("pair_id")
    res_l = store_l.pair_results(run_l).set_index("pair_id")
    diffs = []
    for pid in pairs:
        a, b = res_s.loc[pid], res_l.loc[pid]
        for col in ("p_pre_monitored", "p_pre_hidden"):
            diffs.append(abs(a[col] - b[col]))
        assert a["p_post_monitored"] == pytest.approx(b["p_post_monitored"], abs=1e-6)
    steps_s = store_s.steps(run_s).set_index(["pair_id", "stage", "generator", "idx"])
    steps_l = store_l.steps(run_l).set_index(["pair_id", "stage", "generator", "idx"])
    common = steps_s.index.intersection(steps_l.index)
    assert len(common) > 0
    for key in common:
        diffs.append(abs(steps_s.loc[key, "p_pre"] - steps_l.loc[key, "p_pre"]))
        assert steps_s.loc[key, "p_post"] == pytest.approx(steps_l.loc[key, "p_post"], abs=1e-6)
    print(
        f"\nserved-pre audit vs all-local audit, {len(pairs)} pairs: {len(diffs)} pre "
        f"probabilities, max |dp| = {max(diffs):.4f}"
    )
    assert max(diffs) <= TOLERANCE
    for pid in pairs:
        b = res_l.loc[pid]
        local_steps = store_l.steps(run_l, pid)
        close = any(
            _could_flip(d, b["p_pre_monitored"], b["p_post_monitored"], CONFIG.epsilon, CONFIG.k)
            for d in local_steps["d"]
        )
        if not close:
            assert res_s.loc[pid, "status"] == b["status"], pid
    traffic = store_s.run_progress(run_s)["traffic"]
    assert traffic["prompts"] > 0 and traffic["peak_in_flight"] >= 1 and traffic["in_flight"] == 0
    assert store_l.run_progress(run_l)["traffic"] is None  # local checkpoints send no requests
    assert store.run(run_s)["pre_fingerprint"] != store.run(run_l)["pre_fingerprint"]


def _is_scoring(route: str, body: dict) -> bool:
    """A request that scores a question (not the load-time checks and probe)."""
    prompt = body.get("prompt")
    return (
        route.endswith("/completions")
        and isinstance(prompt, str)
        and prompt != "\n"
        and "Which colour is the sky" not in prompt
    )


def test_a_server_killed_mid_run_resumes_without_scoring_a_prompt_twice(tmp_path: Path) -> None:
    upstream = LlamaServer(demo_gguf_path(), log=tmp_path / "server.log").start()
    proxy = CountingProxy(upstream)
    try:
        spec = f"{proxy.url}#{MODEL_ALIAS};tokenizer=demo:base;concurrency=2;retries=1"
        store, bid, pairs = _store(tmp_path / "kill.duckdb")
        config = AuditConfig.from_dict({**CONFIG.to_dict(), "test_budget": 1})
        proxy.counts = _is_scoring
        proxy.kill_at = 7  # the second pair's scoring is under way
        with pytest.raises(IncompleteScores, match="giving up after 2 attempts"):
            run_model_audit(
                store, RunRequest(bid, spec, "demo:adversarial", config, pair_ids=tuple(pairs[:2]))
            )
        run_id = str(store.runs()["run_id"].iloc[0])
        run = store.run(run_id)
        assert run["status"] == "failed"
        assert proxy.url + "/completions" in run["error"] and "order" in run["error"]
        before = [(r, b, s) for r, b, s in proxy.log if _is_scoring(r, b)]
        assert any(s == 502 for _, _, s in before)
        upstream.start()  # the same port: the proxy (the URL in the spec) forwards there again
        resume_run(store, run_id)
        assert store.run(run_id)["status"] == "done"
        assert set(store.pair_results(run_id)["pair_id"]) == set(pairs[:2])
        answered = [
            json.dumps([b["prompt"], bool(b.get("echo"))])
            for r, b, s in proxy.log
            if _is_scoring(r, b) and s == 200
        ]
        assert len(answered) > len([1 for _, _, s in before if s == 200]) > 0
        assert len(answered) == len(set(answered)), "a prompt reached the server twice"
    finally:
        proxy.close()
        upstream.stop()
