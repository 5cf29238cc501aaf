"""The dashboard's served-checkpoint parts: the Setup form's check button and the Run page's
live traffic (requests in flight, prompts/s) read back from the store.

The server is a loopback one speaking vLLM's protocol over an exact made-up model
(tests/verifier/_fake_vllm.py); the real llama.cpp server is exercised in tests/verifier and
tests/runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from eraudit_core.store import Store
from tests import _synthetic as synthetic
from tests._tiny_model import build_tokenizer
from tests.verifier._fake_vllm import ExactModel, FakeVLLM

ROOT = Path(__file__).resolve().parents[2]

APP = str(ROOT / "app.py")


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "studio.duckdb"
    monkeypatch.setenv("ERAUDIT_DB", str(path))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeVLLM, Path]]:
    from eraudit_core.verifier import CheckpointSpec
    from eraudit_core.verifier.served import load_tokenizer

    tokdir = tmp_path_factory.mktemp("tok") / "tokenizer"
    tokdir.mkdir()
    build_tokenizer(tokdir)
    tok = load_tokenizer(CheckpointSpec.parse(str(tokdir))).tokenizer
    server = FakeVLLM(tok, ExactModel(len(tok)))
    yield server, tokdir
    server.close()


def visit(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(page)
    return at.run()


def fill(at: AppTest, url: str, model: str, tokdir: Path) -> None:
    at.text_input(key="served-url").input(url)
    at.text_input(key="served-model").input(model)
    at.text_input(key="served-tok").input(str(tokdir))


def _shown(at):  # type: ignore[no-untyped-def]
    """Plain texts and error boxes (an error's reason is inside its box, markdown-escaped)."""
    from types import SimpleNamespace

    return [*at.text, *(SimpleNamespace(value=e.value.replace("\\", "")) for e in at.error)]


def test_setup_checks_and_registers_a_served_checkpoint(
    db: Path, served: tuple[FakeVLLM, Path]
) -> None:
    server, tokdir = served
    at = visit("pages/setup.py")
    fill(at, server.url, server.name, tokdir)
    # the fake serves random weights: the labels get almost none of its probability, so the
    # one-question check refuses its p(true) as an audit would, at the form's minimum
    next(b for b in at.button if b.label == "Check: score one question").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.success
    assert any("below the minimum label mass 0.5" in t.value for t in _shown(at)), at.error
    next(b for b in at.button if b.label == "Check and register").click().run()
    assert any("below the minimum label mass 0.5" in t.value for t in _shown(at)), at.error
    at.number_input(key="served-min-mass").set_value(0.0)
    next(b for b in at.button if b.label == "Check: score one question").click().run()
    assert any("p(true) = " in s.value and "took" in s.value for s in at.success), at.error
    assert any("token ids, 1 a request" in c.value for c in at.caption)
    at.number_input(key="served-batch").set_value(4)  # several prompts in one request
    next(b for b in at.button if b.label == "Check: score one question").click().run()
    assert any("token ids, 4 a request" in c.value for c in at.caption), at.caption
    assert any("batch=4" in t.value for t in at.text)
    next(b for b in at.button if b.label == "Check and register").click().run()
    assert any("Registered, fingerprint" in s.value for s in at.success), at.text
    assert any("probe prompts" in c.value for c in at.caption)
    from ui import store_access

    ckpts = store_access.get_store().checkpoints()
    assert len(ckpts) == 1 and server.url in ckpts["name"].iloc[0]


def test_setup_shows_a_served_failure_inline(db: Path, served: tuple[FakeVLLM, Path]) -> None:
    server, tokdir = served
    at = visit("pages/setup.py")
    fill(at, server.url, "no-such-model", tokdir)
    next(b for b in at.button if b.label == "Check and register").click().run()
    assert not at.exception
    assert any("did not pass the check" in e.value for e in at.error)
    assert any("not 'no-such-model'" in t.value for t in _shown(at))
    fill(at, "localhost:8000", server.name, tokdir)
    next(b for b in at.button if b.label == "Check: score one question").click().run()
    assert any("base_url must start with http" in t.value for t in _shown(at))
    from ui import store_access

    assert store_access.get_store().checkpoints().empty


def test_run_page_shows_requests_in_flight_and_prompts_per_second(db: Path) -> None:
    store = Store(db)
    info = synthetic.build_synthetic_store(store, n_pairs=2, n_search=1, n_test=2)
    run_id = info.run_ids["honest"]
    store.set_run_traffic(
        run_id,
        {"in_flight": 3, "requests": 40, "retries": 1, "failures": 0, "prompts": 36,
         "fallbacks": 2, "prompts_per_s": 4.5, "prompts_per_s_session": 3.25,
         "peak_in_flight": 8, "window_s": 10.0, "updated_at": "2026-11-30T20:00:00+00:00"},
    )  # fmt: skip
    store.close()
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["watch"] = run_id
    at.run()
    at.switch_page("pages/run.py")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["prompts/s (this session)"] == "3.25"  # the run is done: nothing in flight
    assert metrics["requests in flight"] == "0"
    assert metrics["most requests in flight"] == "8"
    assert any("40 requests, 1 retries" in c.value for c in at.caption)
    from ui import store_access

    store_access.get_store().set_run_status(run_id, "running")  # as the engine does while it runs
    at.run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["requests in flight"] == "3" and metrics["prompts/s (last 10 s)"] == "4.5"
