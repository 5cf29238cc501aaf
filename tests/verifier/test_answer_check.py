"""The per-prompt answer check (eraudit_core/verifier/_answer_check.py).

Values: the four fault shapes a hostile review found stored as probabilities (both labels at
-1000, a top-k of only the two labels at -20 and -21, every entry at -1e39, NaN) are refused,
and every genuine distribution's top-k passes (property test over random logits). Mass: below
the minimum a prompt passes only where a label is its most likely next token. Local model: the
top flags the fast kernel records equal the one-prompt-at-a-time reference, and a tiny model
whose audit prompts carry less label mass than its probes registers, then fails its run with
the prompt named and nothing of that pair stored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eraudit_core.errors import AnswerCheckError
from eraudit_core.types import Query, QueryScore
from eraudit_core.verifier import check_answer_values, check_answers, check_top_k
from tests._tiny_model import build_tiny_checkpoint

Q = Query("p1", "Why did the author leave?", "money", "love")


def test_values_that_are_no_distribution_are_refused_by_name() -> None:
    where = "checkpoint c: pair p1 order AB"
    check_answer_values([math.log(0.3), math.log(0.6)], where)
    check_answer_values([-40.0, -41.0], where)  # tiny but representable: the mass rule decides
    cases = {
        "no probability at all": [-1000.0, -1000.0],
        "not finite": [float("nan"), -1.0],
        "more than 1": [0.0, 0.0],
        "at most 0": [0.5, -3.0],
    }
    for why, values in cases.items():
        with pytest.raises(AnswerCheckError, match=why) as info:
            check_answer_values(values, where)
        assert str(info.value).startswith(where)
        assert info.value.where == where and len(info.value.values) == 2


def test_a_top_k_that_no_distribution_has_is_refused() -> None:
    where = "server h:1: pair p1 order AB"
    with pytest.raises(AnswerCheckError, match="reach only"):
        check_top_k({"token_id:1": -20.0, "token_id:2": -21.0}, 50_000, where)
    with pytest.raises(AnswerCheckError, match="reach only 0 of 1"):
        check_top_k({f"token_id:{i}": -1e39 for i in range(20)}, 50_000, where)
    with pytest.raises(AnswerCheckError, match="summing to"):
        check_top_k({"a": -0.1, "b": -0.2}, 50_000, where)
    with pytest.raises(AnswerCheckError, match="not finite"):
        check_top_k({"a": float("nan")}, 50_000, where)
    # the same two labels at -20 / -21 can top a distribution over a vocabulary of e^21 tokens
    check_top_k({"token_id:1": -20.0, "token_id:2": -21.0}, int(math.exp(21.2)), where)


@settings(max_examples=200, deadline=None)
@given(
    vocab=st.integers(2, 5000),
    k=st.integers(1, 20),
    scale=st.floats(0.01, 30.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_genuine_top_k_passes(vocab: int, k: int, scale: float, seed: int) -> None:
    """The top-k of any softmax over `vocab` tokens passes, however flat or peaked."""
    logits = np.random.default_rng(seed).normal(0.0, scale, vocab)
    lp = logits - logits.max()
    lp -= np.log(np.exp(lp).sum())
    top = {f"t{i}": float(lp[i]) for i in np.argsort(-lp)[: min(k, vocab)]}
    check_top_k(top, vocab, "genuine")


class _Stub:
    """A verifier that says, per (pair, order), whether a label tops the prompt."""

    name = "stub"

    def __init__(self, on_top: dict[tuple[str, int], bool]) -> None:
        self._on_top = on_top
        self.asked: list[str] = []

    def top_is_label(self, queries: Sequence[Query]) -> list[bool]:
        self.asked.extend(q.pair_id for q in queries)
        return [self._on_top[(q.pair_id, o)] for q in queries for o in (0, 1)]


class _CannotSay:
    """A verifier without `top_is_label` (a score table, say)."""

    name = "table"


def _score(mass_ab: float, mass_ba: float) -> QueryScore:
    lp = (math.log(0.7 * mass_ab), math.log(0.3 * mass_ab))
    lp2 = (math.log(0.4 * mass_ba), math.log(0.6 * mass_ba))
    return QueryScore(0.6, (*lp, *lp2))


def test_low_mass_passes_only_where_a_label_tops_the_prompt() -> None:
    other = Query("p2", "Where?", "here", "there")
    scores = [_score(0.9, 0.9), _score(0.9, 0.2)]
    check_answers(_Stub({}), [Q, other], [_score(0.9, 0.5)] * 2, 0.5)  # none below: not asked
    stub = _Stub({("p2", 0): False, ("p2", 1): True})
    check_answers(stub, [Q, other], scores, 0.5)
    assert stub.asked == ["p2"]
    stub = _Stub({("p2", 0): True, ("p2", 1): False})
    with pytest.raises(AnswerCheckError) as info:
        check_answers(stub, [Q, other], scores, 0.5)
    message = str(info.value)
    assert "pair p2 order BA ('Where?')" in message and "0.2 of the model" in message
    assert "minimum label mass 0.5" in message and "--min-label-mass" in message
    assert info.value.values == pytest.approx((math.log(0.08), math.log(0.12)))
    check_answers(stub, [Q, other], scores, 0.2)  # the auditor's lower minimum
    with pytest.raises(AnswerCheckError, match="pair p2 order BA"):
        check_answers(_CannotSay(), [Q, other], scores, 0.5)  # cannot say: refused
    check_answers(_CannotSay(), [Q], [QueryScore(0.5)], 0.5)  # a table's score: no log-probs


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "model")


def test_the_fast_kernels_top_flags_equal_the_reference(tiny: Path) -> None:
    from eraudit_core.verifier import load_verifier

    v = load_verifier(str(tiny), device="cpu", dtype="float32")
    queries = [Query(f"p{i}", f"Why did the author leave{' now' * i}?", "A", "B") for i in range(6)]
    v.score(queries)
    remembered = [flag for q in queries for flag in v._tops[q.prompt_hash]]
    fresh = v.with_readout(v.format.readout.name)  # same model, nothing remembered
    assert fresh.top_is_label(queries) == remembered


def test_a_local_audit_whose_prompts_lose_their_label_mass_ends_failed(
    tiny: Path, tmp_path: Path
) -> None:
    """The tiny random model's label mass varies from prompt to prompt: at a minimum equal to
    its probes' median it registers, and the audit's own prompts below it (with no label on
    top) fail the run; at minimum 0 the same audit finishes."""
    from eraudit_core.demo import ensure_demo_inputs
    from eraudit_core.method import AuditConfig
    from eraudit_core.runs import RunRequest, run_model_audit
    from eraudit_core.store import Store
    from eraudit_core.verifier import check_label_mass, load_verifier, prompt_label_masses

    v = load_verifier(str(tiny), device="cpu", dtype="float32")
    median = check_label_mass(v, 0.0)["median"]
    small = {"search_budget": 1, "test_budget": 1, "draw_seed": 3}
    with Store(tmp_path / "a.duckdb") as store:
        bid = ensure_demo_inputs(store)
        pair = store.pairs(bid)[0]
        monitored = Query(
            pair.pair_id,
            pair.monitored.question,
            pair.monitored.true_option,
            pair.monitored.false_option,
        )
        masses = prompt_label_masses(v.score([monitored])[0].logprobs or ())
        assert min(masses) < median, (masses, median)  # the precondition this test relies on
        strict = AuditConfig(min_label_mass=median, **small)  # type: ignore[arg-type]
        request = RunRequest(bid, str(tiny), str(tiny), strict, pair_ids=(pair.pair_id,))
        with pytest.raises(AnswerCheckError, match=f"pair {pair.pair_id} order "):
            run_model_audit(store, request)
        run = store.runs().iloc[0]
        assert run["status"] == "failed" and "AnswerCheckError" in run["error"]
        assert "label log-probs" in run["error"]
        assert store.pair_results(run["run_id"]).empty and store.steps(run["run_id"]).empty
        loose = AuditConfig(min_label_mass=0.0, **small)  # type: ignore[arg-type]
        done = run_model_audit(
            store, RunRequest(bid, str(tiny), str(tiny), loose, pair_ids=(pair.pair_id,))
        )
        assert store.run(done)["status"] == "done"
