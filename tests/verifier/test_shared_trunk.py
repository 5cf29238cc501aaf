"""Shared-trunk scoring: pre and post from one pass over the frozen bottom layers give the
probabilities separate scoring gives; an adapter below the split is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from eraudit_core.errors import InputError
from eraudit_core.types import Query
from eraudit_core.verifier import load_verifier
from eraudit_core.verifier.hf._shared_trunk import (
    SharedTrunkGroup,
    adapter_layers,
    causal_lm,
    plan_shared_trunk,
    plan_shared_trunk_group,
    shared_trunk_label_logprobs,
    trunk_states,
    try_shared_trunk,
)
from tests._tiny_model import build_tiny_checkpoint

LAYERS = 4
QUERIES = [
    Query(f"p{i}", f"Why did the author leave the city? ({i})", "money", "love" + " x" * i)
    for i in range(5)
] + [
    Query("q", "What does the narrator think about the captain?", "He is brave.", "He is a robot."),
    Query("r", "Which option is right?", "yes", "no"),
]


def _adapter(base: Path, out: Path, layers: list[int], seed: int) -> Path:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base)
    torch.manual_seed(seed)
    config = LoraConfig(
        r=4,
        lora_alpha=8,
        target_modules=["q_proj", "v_proj", "o_proj"],
        layers_to_transform=layers,
        init_lora_weights=False,
    )
    get_peft_model(model, config).save_pretrained(str(out), safe_serialization=True)
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "model", layers=LAYERS)


@pytest.fixture(scope="module")
def top(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _adapter(tiny, tmp_path_factory.mktemp("top") / "lora", [2, 3], seed=1)


@pytest.fixture(scope="module")
def low(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _adapter(tiny, tmp_path_factory.mktemp("low") / "lora", [1, 3], seed=2)


def _p(lp: torch.Tensor) -> torch.Tensor:
    return (torch.softmax(lp[:, 0], -1)[:, 0] + torch.softmax(lp[:, 1], -1)[:, 1]) / 2


def test_shared_trunk_equals_separate_scoring(tiny: Path, top: Path) -> None:
    pre = load_verifier(str(tiny), batch_size=3)
    post = load_verifier(f"{tiny}+{top}", batch_size=3)
    plan = plan_shared_trunk(pre, post)
    assert plan.split == 2
    shared_pre, shared_post = plan.label_logprobs(QUERIES)
    sep_pre, sep_post = pre.label_logprobs(QUERIES), post.label_logprobs(QUERIES)
    assert float((_p(shared_pre) - _p(sep_pre)).abs().max()) <= 1e-5
    assert float((_p(shared_post) - _p(sep_post)).abs().max()) <= 1e-5
    assert torch.allclose(shared_post, sep_post, atol=1e-5)
    # The adapter really moves the answers, so agreement is not pre == post by accident.
    assert float((_p(sep_post) - _p(sep_pre)).abs().max()) > 1e-3
    # Also against the naive one-prompt-at-a-time reference.
    naive = post.label_logprobs(QUERIES, naive=True)
    assert float((_p(shared_post) - _p(naive)).abs().max()) <= 1e-5
    # Two adapters above the split (the adapted side twice) and a lower split also agree.
    twice = shared_trunk_label_logprobs(
        pre._base.model,
        pre._encode(QUERIES),
        pre._label_ids,
        split=1,
        adapters=[post._adapter_name, None],
        batch_size=4,
        pad_id=pre._pad_id,
        device="cpu",
    )
    assert torch.allclose(twice[0], sep_post, atol=1e-5)
    assert torch.allclose(twice[1], sep_pre, atol=1e-5)


def test_the_chat_header_is_staged_once_per_group(
    tiny: Path, top: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every batch of an audit starts with the same chat header: a group stages it on its
    first batch and reuses it for the next (here a batch whose prompts share more than the
    header), and those scores equal a fresh group's and separate scoring's."""
    from eraudit_core.verifier.hf import _shared_trunk

    pre = load_verifier(str(tiny), batch_size=3)
    post = load_verifier(f"{tiny}+{top}", batch_size=3)
    plan = plan_shared_trunk(pre, post)
    roots: list[int] = []
    real = _shared_trunk._stage

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        rows, state = args[4], args[6]
        if state is None:
            roots.append(len(rows[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(_shared_trunk, "_stage", counting)
    plan.label_logprobs(QUERIES[4:])  # different questions: they share the header only
    assert len(roots) == 1
    again = plan.label_logprobs(QUERIES[:4])  # these share more than the header
    assert len(roots) == 1, "the second batch staged its own root"
    fresh = plan_shared_trunk(pre, post).label_logprobs(QUERIES[:4])
    assert len(roots) == 2 and roots[1] > roots[0]  # a fresh group stages the longer prefix
    for cached, new in zip(again, fresh, strict=True):
        assert torch.allclose(cached, new, atol=1e-6)
    assert torch.allclose(again[1], post.label_logprobs(QUERIES[:4]), atol=1e-5)


def _head_inputs(model: torch.nn.Module) -> tuple[list[tuple[tuple[int, ...], bool]], object]:
    """Record the shape and contiguity of every input of at least one position that the
    model's output head sees (a forward that reads no logits hands it none)."""
    seen: list[tuple[tuple[int, ...], bool]] = []

    def hook(_module: object, args: tuple[torch.Tensor, ...]) -> None:
        if args[0].shape[1] > 0:
            seen.append((tuple(args[0].shape), args[0].is_contiguous()))

    head = causal_lm(model).get_output_embeddings()
    return seen, head.register_forward_pre_hook(hook)


def test_the_head_runs_once_per_batch_on_the_positions_read(tiny: Path, top: Path) -> None:
    """The output head (a 49,152-row matrix on the demo model) runs only where logits are
    read: once per batch and checkpoint, on the last position, as one contiguous block. The
    staged header and question parts read none. A strided last-position slice runs as a
    batched product that reads the head once per row (`_kernels.read_positions`)."""
    pre = load_verifier(str(tiny), batch_size=3)
    post = load_verifier(f"{tiny}+{top}", batch_size=3)
    plan = plan_shared_trunk(pre, post)
    seen, handle = _head_inputs(pre._base.model)
    try:
        shared = plan.label_logprobs(QUERIES)
        assert len(seen) == 2 * 3, seen  # 7 queries in batches of 3, two checkpoints
        assert all(shape[1] == 1 and contiguous for shape, contiguous in seen), seen
        seen.clear()
        separate = post.label_logprobs(QUERIES)
        assert len(seen) == 3, seen
        assert all(shape[1] == 1 and contiguous for shape, contiguous in seen), seen
    finally:
        handle.remove()
    naive = post.label_logprobs(QUERIES, naive=True)
    assert float((_p(shared[1]) - _p(naive)).abs().max()) <= 1e-5
    assert float((_p(separate) - _p(naive)).abs().max()) <= 1e-5


def test_prime_fills_both_memos(tiny: Path, top: Path) -> None:
    pre = load_verifier(str(tiny), batch_size=3, share_base=False)
    post = load_verifier(f"{tiny}+{top}", batch_size=3, share_base=False)
    assert try_shared_trunk(pre, post) is None  # two copies of the base: nothing shared
    pre = load_verifier(str(tiny), batch_size=3)
    post = load_verifier(f"{tiny}+{top}", batch_size=3)
    plan = plan_shared_trunk(pre, post)
    pre._memo.clear()
    post._memo.clear()
    assert plan.prime(QUERIES + QUERIES[:2]) == len(QUERIES)
    assert plan.prime(QUERIES) == 0
    calls = (pre.forward_calls, post.forward_calls)
    got_pre, got_post = pre.score(QUERIES), post.score(QUERIES)
    assert (pre.forward_calls, post.forward_calls) == calls  # served from the memos
    ref_pre, ref_post = pre.score_naive(QUERIES), post.score_naive(QUERIES)
    for a, b in zip(got_pre + got_post, ref_pre + ref_post, strict=True):
        assert abs(a.p_true - b.p_true) <= 1e-5


def test_group_scores_a_base_and_two_arms_from_one_trunk(
    tiny: Path, top: Path, low: Path, tmp_path: Path
) -> None:
    """Three checkpoints (the base and two adapted arms, as the debate demo is built) from one
    trunk pass: each equals its separate scoring, and every memo is filled."""
    other = _adapter(tiny, tmp_path / "other", [2, 3], seed=4)
    base = load_verifier(str(tiny), batch_size=3)
    arm1, arm2 = load_verifier(f"{tiny}+{top}", batch_size=3), load_verifier(f"{tiny}+{other}")
    group = SharedTrunkGroup((base, arm1, arm2), plan_shared_trunk_group((base, arm1, arm2)))
    assert group.split == 2
    outs = group.label_logprobs(QUERIES)
    for v, lp in zip((base, arm1, arm2), outs, strict=True):
        assert float((_p(lp) - _p(v.label_logprobs(QUERIES))).abs().max()) <= 1e-5
    # The two arms differ from each other, so agreement is not one adapter read three times.
    assert float((_p(outs[1]) - _p(outs[2])).abs().max()) > 1e-3
    for v in (base, arm1, arm2):
        v._memo.clear()
    assert group.prime(QUERIES) == len(QUERIES)
    calls = [v.forward_calls for v in (base, arm1, arm2)]
    scored = [v.score(QUERIES) for v in (base, arm1, arm2)]
    assert [v.forward_calls for v in (base, arm1, arm2)] == calls  # served from the memos
    for v, got in zip((base, arm1, arm2), scored, strict=True):
        for a, b in zip(got, v.score_naive(QUERIES), strict=True):
            assert abs(a.p_true - b.p_true) <= 1e-5
    # An arm with an adapter below the base's split cannot join a group planned at 2.
    lower = load_verifier(f"{tiny}+{low}")
    with pytest.raises(InputError, match="below the shared trunk's split 2"):
        plan_shared_trunk_group((base, arm1, lower), split=2)
    # An adapter on another copy of the base cannot join at all (its top layers would be
    # that copy's plus an adapter, which the group does not run).
    alone = load_verifier(f"{tiny}+{top}", share_base=False)
    with pytest.raises(InputError, match="do not share one base"):
        plan_shared_trunk_group((base, arm1, alone))


def test_adapter_below_the_split_is_refused(tiny: Path, top: Path, low: Path) -> None:
    pre = load_verifier(str(tiny))
    post = load_verifier(f"{tiny}+{low}")
    assert adapter_layers(pre._base.model, post._adapter_name) == {1, 3}
    # Its lowest adapted layer is 1: planned there, never at 2.
    assert plan_shared_trunk(pre, post).split == 1
    with pytest.raises(InputError, match="touches decoder layer 1, below .* split 2"):
        plan_shared_trunk(pre, post, split=2)
    # Negative control: forcing split 2 on it gives wrong answers (what the refusal prevents).
    forced = shared_trunk_label_logprobs(
        pre._base.model,
        pre._encode(QUERIES),
        pre._label_ids,
        split=2,
        adapters=[post._adapter_name],
        batch_size=4,
        pad_id=pre._pad_id,
        device="cpu",
    )[0]
    assert float((_p(forced) - _p(post.label_logprobs(QUERIES))).abs().max()) > 1e-3
    # Two top adapters against each other share layers < 2.
    assert plan_shared_trunk(load_verifier(f"{tiny}+{top}"), post).split == 1


def test_layer_zero_adapter_has_no_trunk(tiny: Path, tmp_path: Path) -> None:
    zero = _adapter(tiny, tmp_path / "zero", [0, 3], seed=3)
    pre, post = load_verifier(str(tiny)), load_verifier(f"{tiny}+{zero}")
    assert try_shared_trunk(pre, post) is None
    with pytest.raises(InputError, match="layer 0"):
        plan_shared_trunk(pre, post)


def test_trunk_states_equal_unpadded_runs(tiny: Path) -> None:
    v = load_verifier(str(tiny), share_base=False)  # no adapters loaded into it
    model = v._base.model
    ids = [g[1] for g in v._encode(QUERIES)]
    states = trunk_states(model, ids, 2, v._pad_id, batch_size=3)
    with torch.no_grad():
        for seq, h in zip(ids, states, strict=True):
            ref = model(input_ids=torch.tensor([seq]), output_hidden_states=True).hidden_states[2]
            assert h.shape == (len(seq), 64)
            assert torch.allclose(h, ref[0], atol=1e-5)


def test_audit_engine_scores_through_the_trunk(
    tiny: Path, top: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model audit of base vs a top-layer adapter takes the shared path and stores the
    scores the separate path stores."""
    from eraudit_core.method import AuditConfig
    from eraudit_core.runs import RunRequest, _engine, run_model_audit
    from eraudit_core.store import Store
    from eraudit_core.verifier.hf._shared_trunk import SharedTrunk
    from tests import _synthetic as synthetic

    primed: list[int] = []
    real_prime = SharedTrunk.prime

    def counting(self: SharedTrunk, queries: list[Query]) -> int:
        n = real_prime(self, queries)
        primed.append(n)
        return n

    monkeypatch.setattr(SharedTrunk, "prime", counting)

    def run(db: str) -> object:
        with Store(tmp_path / db) as store:
            info = synthetic.build_synthetic_store(store, n_pairs=2, n_search=2, n_test=3)
            request = RunRequest(
                benchmark=info.benchmark_id,
                pre_spec=str(tiny),
                post_spec=f"{tiny}+{top}",
                config=AuditConfig(epsilon=0.0, search_budget=2, test_budget=3, min_label_mass=0.0),
                limit=1,
            )
            run_id = run_model_audit(store, request)
            steps = store.steps(run_id)
        return steps.sort_values(["pair_id", "stage", "generator", "idx"]).reset_index(drop=True)

    shared = run("shared.duckdb")
    assert sum(primed) > 0  # the trunk scored the questions
    monkeypatch.setattr(_engine, "shared_trunk", lambda pre, post: None)
    primed.clear()
    separate = run("separate.duckdb")
    assert primed == []
    assert len(shared) == len(separate) > 0
    for col in ("p_pre", "p_post"):
        assert (shared[col] - separate[col]).abs().max() <= 1e-5
