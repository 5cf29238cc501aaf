"""Replicas (`url1|url2#MODEL;...`): two fake vLLM servers on loopback ports as one checkpoint.

The scores are compared with the exact model's values (as in test_served.py); the negative
control is a second replica serving other weights under the same name and path, which must be
refused by its URL.
"""

# ruff: noqa: F811 - the fixtures tokdir and tokenizer come from test_served.py
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eraudit_core.errors import InputError
from eraudit_core.runs import register_checkpoint
from eraudit_core.store import Store
from eraudit_core.verifier import ServedSpec, load_checkpoint
from eraudit_core.verifier.served import ServedVerifier
from tests.verifier._fake_vllm import ExactModel, FakeVLLM
from tests.verifier.test_served import QUERIES, _Renamed, reference, tokdir, tokenizer  # noqa: F401


@pytest.fixture()
def pair(tokenizer: object) -> Iterator[tuple[FakeVLLM, FakeVLLM]]:
    a = FakeVLLM(tokenizer, ExactModel(len(tokenizer)))  # type: ignore[arg-type]
    b = FakeVLLM(tokenizer, ExactModel(len(tokenizer)))  # type: ignore[arg-type]
    yield a, b
    a.close()
    b.close()


def replicas_spec(urls: list[str], name: str, tokdir: Path) -> str:
    return f"{'|'.join(urls)}#{name};tokenizer={tokdir};retries=1"


def test_replica_specs_parse_round_trip_and_refuse_bad_urls(tokdir: Path) -> None:
    text = f"http://h:1/v1|http://g:2/v1/#m;tokenizer={tokdir};concurrency=4"
    s = ServedSpec.parse(text)
    assert s.replicas == ["http://h:1/v1", "http://g:2/v1"]
    assert ServedSpec.parse(s.text) == s
    assert ServedSpec.parse(f"http://h:1/v1#m;tokenizer={tokdir}").replicas == ["http://h:1/v1"]
    with pytest.raises(InputError, match="named twice"):
        ServedSpec.parse(f"http://h:1/v1|http://h:1/v1/#m;tokenizer={tokdir}")
    with pytest.raises(InputError, match="base_url"):
        ServedSpec.parse(f"http://h:1/v1|ftp://g:2/v1#m;tokenizer={tokdir}")
    with pytest.raises(InputError, match="base_url"):
        ServedSpec.parse(f"http://h:1/v1|#m;tokenizer={tokdir}")


def test_replicas_share_the_questions_and_score_them_exactly(
    pair: tuple[FakeVLLM, FakeVLLM], tokdir: Path, tokenizer: object
) -> None:
    a, b = pair
    v = load_checkpoint(replicas_spec([a.url, b.url], a.name, tokdir))
    assert not isinstance(v, ServedVerifier)  # the replica set
    info = v.describe()
    assert [r["base_url"] for r in info["replicas"]] == [a.url, b.url]
    before = (len(a.completions), len(b.completions))
    got = v.score(QUERIES)
    want = reference(v.replicas[0], a.model, tokenizer, QUERIES)
    for g, w in zip(got, want, strict=True):
        assert g.p_true == pytest.approx(w.p_true, abs=1e-6)
        assert g.logprobs == pytest.approx(w.logprobs, abs=1e-5)
    # Round robin: 4 and 3 of the 7 questions, one next-token request per order each (labels
    # outside the top-k add prompt log-prob requests on top).
    sent = tuple(
        sum("prompt_logprobs" not in c for c in s.completions[n:])
        for s, n in zip(pair, before, strict=True)
    )
    assert sent == (8, 6), sent
    # One identity for the set, whatever the order of the URLs; registration accepts it.
    swapped = load_checkpoint(replicas_spec([b.url, a.url], a.name, tokdir))
    assert swapped.fingerprint == v.fingerprint
    assert v.fingerprint != load_checkpoint(replicas_spec([a.url], a.name, tokdir)).fingerprint
    with Store(":memory:") as store:
        register_checkpoint(store, v, v.name, min_label_mass=0.0)
        register_checkpoint(store, swapped, swapped.name, min_label_mass=0.0)


def test_a_replica_serving_other_weights_is_refused_by_url(
    pair: tuple[FakeVLLM, FakeVLLM], tokdir: Path, tokenizer: object
) -> None:
    a, b = pair
    # Other weights behind the same name and the same reported path: only the probe tells.
    b.model = _Renamed(ExactModel(len(tokenizer), salt="w2"), a.model.salt)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=f"replica {b.url} serves different weights"):
        load_checkpoint(replicas_spec([a.url, b.url], a.name, tokdir))
    # Each server on its own is a valid checkpoint: the refusal is about mixing them.
    load_checkpoint(replicas_spec([b.url], a.name, tokdir))


def test_replicas_that_resolve_to_one_server_are_refused(tokdir: Path) -> None:
    for a, b in (
        ("http://127.0.0.1:8000/v1", "http://localhost:8000/v1"),
        ("http://localhost:8000/v1/", "http://LOCALHOST:8000/v1"),
    ):
        with pytest.raises(InputError, match=r"same server \(127\.0\.0\.1:8000\)"):
            ServedSpec.parse(f"{a}|{b}#m;tokenizer={tokdir}")
    # control: another port, or another path, is another server
    ServedSpec.parse(f"http://127.0.0.1:8000/v1|http://localhost:8001/v1#m;tokenizer={tokdir}")
    ServedSpec.parse(f"http://127.0.0.1:8000/v1|http://localhost:8000/v2#m;tokenizer={tokdir}")


@pytest.mark.parametrize(
    "tail", [";revision=v1\x1b[31m", ";revision=v\r1", "\x9b", ";tokenizer2=x\x07"]
)
def test_control_characters_in_a_spec_are_refused(tokdir: Path, tail: str) -> None:
    with pytest.raises(InputError, match="control character"):
        ServedSpec.parse(f"http://h:1/v1#m;tokenizer={tokdir}{tail}")
    with pytest.raises(InputError, match="control character"):
        ServedSpec(base_url="http://h:1/v1", model="m\x1b", tokenizer=str(tokdir))
    assert ServedSpec.parse(f"http://h:1/v1#m;tokenizer={tokdir};revision=v1").revision == "v1"


def test_replicas_get_the_top_share_fallback_of_the_label_mass_check(
    pair: tuple[FakeVLLM, FakeVLLM], tokdir: Path
) -> None:
    from eraudit_core.verifier._label_mass import check_label_mass, probe_top_share

    a, b = pair
    single = load_checkpoint(replicas_spec([a.url], a.name, tokdir))
    both = load_checkpoint(replicas_spec([a.url, b.url], a.name, tokdir))
    share = probe_top_share(single)
    assert share is not None and probe_top_share(both) == share

    def outcome(v: object) -> str:
        try:
            check_label_mass(v, minimum=1.0)  # mass alone never reaches 1: the share decides
        except InputError:
            return "refused"
        return "passed"

    assert outcome(both) == outcome(single)
