"""On a real (tiny) model run: the noise floor measured at registration and stored
with the run, and the exact prompt the adapted model read stored with each counterexample."""

from __future__ import annotations

import json

import pytest

from eraudit_core.method import AuditConfig
from eraudit_core.runs import RunRequest, run_model_audit
from eraudit_core.store import Store
from eraudit_core.types import Query
from eraudit_core.verifier import load_pair
from tests import _synthetic as synthetic
from tests._tiny_model import build_tiny_adapter, build_tiny_checkpoint


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    base = build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "base")
    adapter = build_tiny_adapter(base, tmp_path_factory.mktemp("tiny") / "adapter")
    return str(base), f"{base}+{adapter}"


def test_model_run_stores_noise_floor_and_the_prompt_read(tmp_path, tiny_models):  # type: ignore[no-untyped-def]
    pre_spec, post_spec = tiny_models
    with Store(tmp_path / "s.duckdb") as store:
        info = synthetic.build_synthetic_store(store, n_pairs=2, n_search=2, n_test=3)
        # epsilon 0 (negative epsilons are refused): every rewording whose p(true) fell is a
        # counterexample, so it has a prompt
        request = RunRequest(
            benchmark=info.benchmark_id,
            pre_spec=pre_spec,
            post_spec=post_spec,
            # random weights put little mass on the labels: the label-mass check is not tested here
            config=AuditConfig(epsilon=0.0, search_budget=2, test_budget=3, min_label_mass=0.0),
            limit=1,
        )
        run = run_model_audit(store, request)
        rec = store.run(run)
        checkpoints = store.checkpoints()
        floors = [json.loads(d)["noise_floor"] for d in checkpoints["details"]]
        pair = store.pair_results(run).iloc[0]
        steps = store.steps(run)
        hidden = next(p for p in store.pairs(info.benchmark_id) if p.pair_id == pair["pair_id"])
    assert floors and all(f["n_probes"] == 8 for f in floors)
    assert rec["provenance"]["noise_floor"]["value"] == max(f["value"] for f in floors)
    assert rec["provenance"]["noise_floor"]["source"].startswith("measured at registration")
    _, post = load_pair(pre_spec, post_spec)
    query = Query(
        pair["pair_id"], pair["worst_text"], hidden.hidden.true_option, hidden.hidden.false_option
    )
    expected = list(post.render(query))
    assert json.loads(pair["worst_prompt"]) == expected
    cex = steps[steps["is_counterexample"].astype(bool)]
    assert len(cex) > 0 and cex["prompt"].notna().all()
    assert steps["prob_drop"].tolist() == pytest.approx((steps["p_pre"] - steps["p_post"]).tolist())
