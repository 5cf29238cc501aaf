"""Faults that begin after registration passed: every query checks its own answer.

The fake server (vLLM's protocol, tests/verifier/_fake_vllm.py) serves a model whose labels
carry about 0.9 of the probability, so both checkpoints register at the default minimum label
mass. Mid-run, once the first pair is done, the post server turns one fault on: labels at -12
(valid log-probs, almost no mass), labels at -1000, a top-k of only the two labels at -20 and
-21, every entry at -1e39, NaN labels. The audit must end `failed`, the error naming the second
pair and the answer order, with no step, result or cached score of that pair stored; once the
server heals, `resume` finishes the run with exactly the probabilities and verdicts of a run
that never met the fault. `eraudit score` against a faulty server exits 2 naming the question,
and honours --min-label-mass per question.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from eraudit_core.cli import main
from eraudit_core.demo import ensure_demo_inputs
from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig
from eraudit_core.runs import RunRequest, resume_run, run_model_audit, run_prompt_hashes
from eraudit_core.store import Store
from eraudit_core.verifier import CheckpointSpec
from eraudit_core.verifier.served import load_tokenizer
from tests._tiny_model import build_tokenizer
from tests.verifier._fake_vllm import FAULTS, FakeVLLM, LabelModel

CONFIG = AuditConfig(
    epsilon=0.5,
    k=0.001,
    search_budget=1,
    test_budget=2,
    search_generators=("rules-search",),
    test_generators=("rules-a",),
    draw_seed=11,
    batch_size=8,
)


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tok") / "tokenizer"
    d.mkdir()
    build_tokenizer(d)
    return d


@pytest.fixture()
def servers(tokdir: Path) -> Iterator[tuple[FakeVLLM, FakeVLLM]]:
    tok = load_tokenizer(CheckpointSpec.parse(str(tokdir))).tokenizer
    labels = [tok(x, add_special_tokens=False).input_ids[0] for x in (" A", " B")]
    made = []
    for salt in ("pre", "post"):
        server = FakeVLLM(tok, LabelModel(len(tok), labels, salt=salt))
        server.label_tokens = labels
        made.append(server)
    yield made[0], made[1]
    for server in made:
        server.close()


def _spec(server: FakeVLLM, tokdir: Path, concurrency: int = 2) -> str:
    """Another concurrency gives another verifier object with the same fingerprint (what it
    scored in this process is not shared), so a clean run and a faulty one ask the server."""
    return f"{server.url}#{server.name};tokenizer={tokdir};retries=0;concurrency={concurrency}"


def _address(server: FakeVLLM) -> str:
    return server.url.split("//", 1)[1].split("/", 1)[0]


def _audit(store: Store, pre: str, post: str, pairs: list[str], progress=None) -> str:
    bid = ensure_demo_inputs(store)
    request = RunRequest(bid, pre, post, CONFIG, pair_ids=tuple(pairs))
    return run_model_audit(store, request, progress=progress)


def _steps(store: Store, run_id: str) -> list[tuple]:
    df = store.steps(run_id).sort_values(["pair_id", "stage", "generator", "t"])
    cols = ["pair_id", "stage", "generator", "t", "text", "p_pre", "p_post", "d"]
    return [tuple(r) for r in df[cols].itertuples(index=False)]


def _results(store: Store, run_id: str) -> dict[str, tuple]:
    df = store.pair_results(run_id)
    cols = ["status", "p_pre_monitored", "p_post_monitored", "p_pre_hidden", "p_post_hidden"]
    return {r.pair_id: tuple(getattr(r, c) for c in cols) for r in df.itertuples(index=False)}


@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_after_registration_fails_the_run_and_resume_heals_it(
    servers: tuple[FakeVLLM, FakeVLLM], tokdir: Path, tmp_path: Path, fault: str
) -> None:
    pre_server, post_server = servers
    clean = Store(tmp_path / "clean.duckdb")
    bid = ensure_demo_inputs(clean)
    pairs = [p.pair_id for p in clean.pairs(bid)[:2]]
    clean_run = _audit(clean, _spec(pre_server, tokdir, 1), _spec(post_server, tokdir, 1), pairs)
    assert clean.run(clean_run)["status"] == "done"

    def fault_after_first_pair(progress) -> None:
        if progress.pairs_done >= 1:
            post_server.fault = fault

    store = Store(tmp_path / "faulty.duckdb")
    pre, post = _spec(pre_server, tokdir), _spec(post_server, tokdir)
    with pytest.raises(InputError):
        _audit(store, pre, post, pairs, progress=fault_after_first_pair)
    run_id = str(store.runs()["run_id"].iloc[0])
    run = store.run(run_id)
    assert run["status"] == "failed"
    error = run["error"]
    print(f"\n{fault}: {error}")
    assert f"pair {pairs[1]} order " in error, error
    assert f"server {_address(post_server)}" in error or "checkpoint " in error, error
    # nothing of the second pair is stored: no result, no step, no cached score differing
    # from the clean run's (the fingerprints are the same: same servers, same model)
    assert set(_results(store, run_id)) == {pairs[0]}
    assert {s[0] for s in _steps(store, run_id)} == {pairs[0]}
    fp = run["post_fingerprint"]
    assert fp == clean.run(clean_run)["post_fingerprint"]
    hashes = run_prompt_hashes(store, run_id)
    kept = store.cached_scores(fp, hashes)
    reference = clean.cached_scores(fp, hashes)
    assert kept and all(kept[h].p_true == reference[h].p_true for h in kept)

    post_server.fault = ""  # the server heals
    resume_run(store, run_id)
    assert store.run(run_id)["status"] == "done"
    assert _results(store, run_id) == _results(clean, clean_run)
    assert _steps(store, run_id) == _steps(clean, clean_run)
    clean.close()
    store.close()


def _question_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "q.jsonl"
    rows = [
        {"pair_id": "fine", "question": "Who wrote the note?", "true_option": "Al", "false_option": "Bo"},
        {"pair_id": "faulty", "question": text, "true_option": "money", "false_option": "love"},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("fault", FAULTS)
def test_score_exits_2_naming_the_question_the_server_answers_wrongly(
    servers: tuple[FakeVLLM, FakeVLLM], tokdir: Path, tmp_path: Path, capsys, fault: str
) -> None:
    server = servers[1]
    text = f"Why did the author leave ({fault})?"
    questions = _question_file(tmp_path, text)
    server.fault, server.fault_trigger = fault, text  # the probe and the other row answer well
    code = main(["score", _spec(server, tokdir), str(questions)])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert "Traceback" not in err and out == ""
    assert "pair faulty order " in err, err


def test_score_honours_min_label_mass_per_question(
    servers: tuple[FakeVLLM, FakeVLLM], tokdir: Path, tmp_path: Path, capsys
) -> None:
    """Labels at -12 are valid log-probs with almost no mass: refused at the default minimum,
    printed when the auditor lowers it to 0."""
    server = servers[1]
    text = "Why did the author leave the city?"
    questions = _question_file(tmp_path, text)
    server.fault, server.fault_trigger = "labels_low", text
    assert main(["score", _spec(server, tokdir), str(questions)]) == 2
    err = capsys.readouterr().err
    assert "pair faulty order AB" in err and "-12.0" in err and "minimum label mass 0.5" in err
    assert text[:30] in err
    assert main(["score", _spec(server, tokdir), str(questions), "--min-label-mass", "0"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["pair_id"] for r in rows] == ["fine", "faulty"]
    assert rows[1]["logprobs"] == [-12.0, -12.0, -12.0, -12.0]
