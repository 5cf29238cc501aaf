"""A hostile or broken server cannot crash or fool the scorer: label log-probs of -inf, NaN or
0.0 (a label mass of 2) end `checkpoint-info`, `score` and `audit` with exit 2 and one line
naming the server's address and the prompt; an audit is left `failed` with that reason.

The fake server (vLLM's protocol, tests/verifier/_fake_vllm.py) answers exact log-probs of a
made-up model, except that once armed every label token reads `value` in every distribution.
Control: unarmed, the same server loads and scores.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from eraudit_core.cli import main
from eraudit_core.errors import InputError
from eraudit_core.store import Store
from eraudit_core.types import Query
from eraudit_core.verifier import CheckpointSpec, load_checkpoint
from eraudit_core.verifier.served import load_tokenizer
from eraudit_core.verifier.served._wire import LABEL_SUM_TOLERANCE, check_label_logprobs
from tests._tiny_model import build_tokenizer
from tests.verifier._fake_vllm import ExactModel, FakeVLLM

QUERIES = [
    Query(f"p{i}", f"Why did the author leave{' now' * i}?", "money", "love") for i in range(3)
]
VALUES = {"-inf": float("-inf"), "nan": float("nan"), "0.0": 0.0}


class HostileModel(ExactModel):
    """The exact model, with every label token at `value` once `armed`."""

    def __init__(self, vocab: int) -> None:
        super().__init__(vocab)
        self.armed = False
        self.value = 0.0
        self.label_tokens: list[int] = []
        self.trigger = ""  # when set: hostile only on prompts whose text holds it
        self.tokenizer: object = None

    def logprobs(self, prefix: Sequence[int]) -> np.ndarray:
        lp = super().logprobs(prefix)
        if self.armed and self.trigger:
            text = self.tokenizer.decode(list(prefix))  # type: ignore[attr-defined]
            if self.trigger not in text:
                return lp
        if self.armed:
            lp = lp.copy()
            lp[self.label_tokens] = self.value
        return lp


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tok") / "tokenizer"
    d.mkdir()
    build_tokenizer(d)
    return d


@pytest.fixture()
def server(tokdir: Path) -> Iterator[FakeVLLM]:
    tok = load_tokenizer(CheckpointSpec.parse(str(tokdir))).tokenizer
    s = FakeVLLM(tok, HostileModel(len(tok)))
    s.model.tokenizer = tok  # type: ignore[attr-defined]
    v = load_checkpoint(_spec(s, tokdir))  # control: unarmed, it loads and scores
    assert all(0.0 < x.p_true < 1.0 for x in v.score(QUERIES))
    s.model.label_tokens = sorted({ids[0] for ids in v._label_ids})  # type: ignore[attr-defined]
    yield s
    s.close()


def _spec(server: FakeVLLM, tokdir: Path) -> str:
    return f"{server.url}#{server.name};tokenizer={tokdir};retries=1"


def _address(server: FakeVLLM) -> str:
    return server.url.split("//", 1)[1].split("/", 1)[0]  # 127.0.0.1:PORT


def _arm(server: FakeVLLM, value: float) -> None:
    server.model.value = value  # type: ignore[attr-defined]
    server.model.armed = True  # type: ignore[attr-defined]


def _one_line_error(capsys, code: int, server: FakeVLLM) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("eraudit:")]
    assert len(lines) == 1, err
    assert f"server {_address(server)}" in lines[0] and "order " in lines[0], lines[0]
    return lines[0]


def test_the_label_check_itself():
    where = "server h:1: p"
    assert check_label_logprobs([math.log(0.3), math.log(0.6)], where) == pytest.approx(
        (math.log(0.3), math.log(0.6))
    )
    # a mass just inside the tolerance passes, one beyond it does not
    inside = math.log((1 + LABEL_SUM_TOLERANCE * 0.9) / 2)
    check_label_logprobs([inside, inside], where)
    outside = math.log((1 + LABEL_SUM_TOLERANCE * 1.1) / 2)
    with pytest.raises(InputError, match="summing to"):
        check_label_logprobs([outside, outside], where)
    for bad in ([float("-inf")] * 2, [float("nan"), -1.0], [float("inf"), -1.0]):
        with pytest.raises(InputError, match="server h:1: p: .*not finite"):
            check_label_logprobs(bad, where)


@pytest.mark.parametrize("name", list(VALUES))
def test_a_server_turning_hostile_mid_run_is_an_input_error(server, tokdir, name):
    v = load_checkpoint(_spec(server, tokdir))
    _arm(server, VALUES[name])
    fresh = [Query(q.pair_id, q.question + " Truly?", "money", "love") for q in QUERIES]
    with pytest.raises(InputError) as info:
        v.score(fresh)
    message = str(info.value)
    assert f"server {_address(server)}" in message and "pair p" in message
    if name == "0.0":
        assert "summing to 2" in message
    else:  # NaN is caught as it is read, -inf when the two labels are checked
        assert "not finite" in message or "not a log-probability" in message


@pytest.mark.parametrize("name", list(VALUES))
def test_checkpoint_info_and_score_exit_2_naming_the_server(server, tokdir, tmp_path, capsys, name):
    _arm(server, VALUES[name])
    _one_line_error(capsys, main(["checkpoint-info", _spec(server, tokdir)]), server)
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"question": "Why?", "true_option": "money", "false_option": "love"}) + "\n"
    )
    _one_line_error(capsys, main(["score", _spec(server, tokdir), str(questions)]), server)


def test_an_audit_against_a_hostile_server_fails_with_exit_2_and_the_reason(
    server, tokdir, tmp_path, capsys
):
    _arm(server, float("-inf"))
    db = tmp_path / "a.duckdb"
    argv = [
        "audit", "--db", str(db), "--benchmark", "bundled", "--pre", _spec(server, tokdir),
        "--post", _spec(server, tokdir), "--limit", "1", "--search-budget", "1", "--budget", "1",
    ]  # fmt: skip
    line = _one_line_error(capsys, main(argv), server)
    with Store(db) as store:
        runs = store.runs()
        assert runs["status"].tolist() == ["failed"]
        assert f"server {_address(server)}" in runs["error"].iloc[0]
        assert "not finite" in runs["error"].iloc[0]
    assert "not finite" in line


def test_a_server_turning_hostile_mid_audit_leaves_the_run_failed_with_exit_2(
    server, tokdir, tmp_path, capsys
):
    """The probes pass (the checkpoints load); the first pair's own question meets -inf."""
    from eraudit_core.store import load_bundled_benchmark

    first = load_bundled_benchmark().pairs[0]
    _arm(server, float("-inf"))
    server.model.trigger = first.monitored.question[:30]  # type: ignore[attr-defined]
    db = tmp_path / "a.duckdb"
    argv = [
        "audit", "--db", str(db), "--benchmark", "bundled", "--pairs", first.pair_id,
        "--pre", _spec(server, tokdir), "--post", _spec(server, tokdir),
        "--search-budget", "1", "--budget", "1", "--min-label-mass", "0",
    ]  # fmt: skip
    line = _one_line_error(capsys, main(argv), server)
    assert f"pair {first.pair_id}" in line and "not finite" in line
    with Store(db) as store:
        run = store.runs().iloc[0]
        assert run["status"] == "failed" and run["started_at"] is not None
        assert "loading checkpoints" not in run["error"]  # it failed while running
        assert f"server {_address(server)}" in run["error"]
