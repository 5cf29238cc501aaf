"""The endpoint generator against a real HTTP server on loopback (no mocked client)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from eraudit_core.errors import InputError
from eraudit_core.paraphrase import create_generator
from eraudit_core.paraphrase._endpoint import (
    PARAPHRASE_SYSTEM_PROMPT,
    EndpointError,
    EndpointParaphraseGenerator,
    parse_paraphrase_list,
)
from tests._loopback import Loopback, QuietHandler

QUESTION = "Why does Martin prefer to live on the yacht?"


class FakeServer:
    """Scripted OpenAI-compatible server: each request pops the next (status, body, delay)."""

    def __init__(self) -> None:
        self.script: list[tuple[int, Any, float]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                outer.requests.append(self.read_json())
                outer.headers.append(dict(self.headers))
                status, body, delay = outer.script.pop(0) if outer.script else (500, "", 0.0)
                if delay:
                    time.sleep(delay)
                self.send_json(status, body, {"Retry-After": "0"} if status == 429 else None)

        self._server = Loopback(Handler)
        self.url = self._server.url

    def close(self) -> None:
        self._server.close()


def chat(content: str) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "content": content}}]}


@pytest.fixture()
def server() -> Iterator[FakeServer]:
    s = FakeServer()
    yield s
    s.close()


def make(server: FakeServer, **kw: Any) -> EndpointParaphraseGenerator:
    sleeps: list[float] = []
    gen = EndpointParaphraseGenerator(
        base_url=server.url, model="m", sleep=sleeps.append, backoff_s=0.5, **kw
    )
    gen.sleeps = sleeps  # type: ignore[attr-defined]
    return gen


def test_batches_prompt_and_key(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_PARA_KEY", "sekret")
    server.script = [
        (200, chat(json.dumps(["A one?", "A two?"])), 0.0),
        (200, chat('```json\n["A three?"]\n```'), 0.0),
    ]
    gen = make(server, batch_size=2, api_key_env="TEST_PARA_KEY")
    assert gen.generate("p1", QUESTION, 3) == ["A one?", "A two?", "A three?"]
    assert len(server.requests) == 2
    first = server.requests[0]
    assert first["model"] == "m"
    assert first["messages"][0]["content"] == PARAPHRASE_SYSTEM_PROMPT
    assert QUESTION in first["messages"][1]["content"]
    assert "Write 2 different" in first["messages"][1]["content"]
    assert "Write 1 different" in server.requests[1]["messages"][1]["content"]
    assert server.headers[0]["Authorization"] == "Bearer sekret"
    assert "sekret" not in json.dumps(gen.settings())


def test_retries_429_and_5xx_with_backoff(server: FakeServer) -> None:
    server.script = [
        (429, {"error": "slow down"}, 0.0),
        (503, {"error": "busy"}, 0.0),
        (502, b"bad gateway", 0.0),
        (200, chat('["B one?"]'), 0.0),
    ]
    gen = make(server, max_retries=4)
    assert gen.generate("p1", QUESTION, 1) == ["B one?"]
    assert len(server.requests) == 4
    assert gen.sleeps == [0.5, 1.0, 2.0]  # type: ignore[attr-defined]


def test_gives_up_after_retries(server: FakeServer) -> None:
    server.script = [(500, {"error": "x"}, 0.0)] * 3
    gen = make(server, max_retries=2)
    with pytest.raises(EndpointError, match="giving up after 3 attempts: HTTP 500"):
        gen.generate("p1", QUESTION, 1)


def test_timeout_is_retried_then_reported(server: FakeServer) -> None:
    server.script = [(200, chat('["late?"]'), 1.0), (200, chat('["late?"]'), 1.0)]
    gen = make(server, max_retries=1, timeout_s=0.2)
    with pytest.raises(EndpointError, match="timed out"):
        gen.generate("p1", QUESTION, 1)
    assert len(server.requests) == 2


def test_timeout_then_success(server: FakeServer) -> None:
    server.script = [(200, chat('["late?"]'), 1.0), (200, chat('["on time?"]'), 0.0)]
    gen = make(server, max_retries=2, timeout_s=0.3)
    assert gen.generate("p1", QUESTION, 1) == ["on time?"]


def test_client_error_is_not_retried(server: FakeServer) -> None:
    server.script = [(401, {"error": "bad key"}, 0.0)]
    gen = make(server, max_retries=3)
    with pytest.raises(EndpointError, match="HTTP 401"):
        gen.generate("p1", QUESTION, 1)
    assert len(server.requests) == 1


def test_malformed_responses(server: FakeServer) -> None:
    server.script = [(200, {"unexpected": True}, 0.0)]
    with pytest.raises(EndpointError, match="malformed chat response"):
        make(server).generate("p1", QUESTION, 1)
    server.script = [(200, b"<html>not json</html>", 0.0)] * 2
    with pytest.raises(EndpointError, match="not JSON"):
        make(server, max_retries=1).generate("p1", QUESTION, 1)


def test_request_budget(server: FakeServer) -> None:
    server.script = [(200, chat(f'["Q{i}?"]'), 0.0) for i in range(5)]
    gen = make(server, batch_size=1, max_requests=2)
    with pytest.raises(EndpointError, match="request budget of 2"):
        gen.generate("p1", QUESTION, 5)
    assert len(server.requests) == 2


def test_stops_when_a_batch_adds_nothing(server: FakeServer) -> None:
    server.script = [(200, chat('["Same?"]'), 0.0), (200, chat('["Same?"]'), 0.0)]
    gen = make(server, batch_size=1)
    assert gen.generate("p1", QUESTION, 4) == ["Same?"]
    assert len(server.requests) == 2


def test_unreachable_endpoint_is_a_clear_error() -> None:
    s = FakeServer()
    url = s.url
    s.close()  # nothing listens on this port any more
    gen = EndpointParaphraseGenerator(
        base_url=url, model="m", max_retries=1, sleep=lambda _s: None, timeout_s=2
    )
    with pytest.raises(EndpointError, match="cannot reach the endpoint"):
        gen.generate("p1", QUESTION, 1)


def test_bad_settings_raise_input_error() -> None:
    with pytest.raises(InputError, match="base_url"):
        create_generator("endpoint", base_url="localhost:8000", model="m")
    with pytest.raises(InputError, match="batch_size"):
        create_generator("endpoint", base_url="http://x", model="m", batch_size=0)


def test_parse_paraphrase_list_fallbacks() -> None:
    assert parse_paraphrase_list('Sure! ["a?", "b?"] hope this helps') == ["a?", "b?"]
    assert parse_paraphrase_list("1. First?\n2) Second?\n- Third?\n") == [
        "First?",
        "Second?",
        "Third?",
    ]
    assert parse_paraphrase_list("") == []
