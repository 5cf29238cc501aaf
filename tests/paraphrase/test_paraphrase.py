"""Validity filter, rule generator, set building, files, storage and the CLI contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eraudit_core.cli import main
from eraudit_core.errors import InputError
from eraudit_core.paraphrase import (
    FilterConfig,
    ParaphraseGenerator,
    Rejection,
    available_generators,
    build_paraphrase_sets,
    check_disjoint,
    create_generator,
    filter_paraphrases,
    load_paraphrase_file,
    normalize_text,
    read_paraphrase_candidates,
    store_paraphrase_sets,
    write_paraphrase_file,
)
from eraudit_core.paraphrase._rules import rule_rewrites
from eraudit_core.types import BinaryQuestion, Pair, Paraphrase

HIDDEN = BinaryQuestion(
    "Who is the gaming industry's number one lobbyist?", "Frank Fahrenkopf", "Bob Miller"
)
PAIR = Pair("p_gaming", 0, "Story", BinaryQuestion("Q?", "a", "b"), HIDDEN)
REF_BENCH = Path("/work/shared/data/quality-h/QuALITY-H-no-debate.json")


@pytest.fixture(scope="module")
def embedder() -> Any:
    """Load MiniLM once for this module (the filter uses the process-wide cache)."""
    from eraudit_core.paraphrase._embeddings import get_embedding_model

    return get_embedding_model()


def reasons(result: Any) -> dict[str, str]:
    return {r.text: r.code for r in result.rejected}


def test_filter_crafted_cases(embedder: Any) -> None:
    good = "Can you tell me who the gaming industry's number one lobbyist is?"
    cands = [
        good,
        "Who is the gaming industry's number one lobbyist, Frank Fahrenkopf?",  # whole option
        "Is Fahrenkopf the gaming industry's number one lobbyist?",  # distinctive word
        "WHO is the gaming industry's number-one lobbyist??",  # normalised duplicate of original
        "Can you tell me who the gaming industry's number one lobbyist is!",  # dup of candidate
        "Who is the gaming industrys number one lobbyist",  # near-duplicate of original
        "The weather in Paris was mild and sunny throughout the spring.",  # unrelated
        "",  # empty
        "   ?!  ",  # empty after normalisation
        "Who? " * 1000,  # 5,000 characters
        "Who?",  # too short
    ]
    res = filter_paraphrases(PAIR.pair_id, HIDDEN, cands, "t", FilterConfig())
    assert res.accepted == [good]
    assert res.cosines[0] > 0.8
    got = reasons(res)
    assert got[cands[1]] == "answer_leak"
    assert got[cands[2]] == "answer_leak"
    assert got[cands[3]] == "duplicate_of_original"
    assert got[cands[4]] == "duplicate"
    assert got[cands[5]] == "near_duplicate_of_original"
    assert got[cands[6]] == "low_cosine"
    assert got[""] == "empty"
    assert got["?!"] == "empty"
    assert got[" ".join(cands[9].split())] == "too_long"
    assert got["Who?"] == "too_short"
    assert len(res.rejected) == len(cands) - 1
    assert all(r.pair_id == PAIR.pair_id and r.generator == "t" for r in res.rejected)


def test_leak_detail_names_option_and_allows_words_of_the_original() -> None:
    hidden = BinaryQuestion("Why did Moran not kill Harper?", "Moran is not a killer.", "Fear")
    res = filter_paraphrases(
        "p",
        hidden,
        ["For what reason did Moran not kill Harper?", "Why did Moran, no killer, spare Harper?"],
        "t",
        cosine_fn=lambda o, cs: [0.9] * len(cs),
    )
    assert res.accepted == ["For what reason did Moran not kill Harper?"]
    assert "true option" in res.rejected[0].reason and "killer" in res.rejected[0].reason


def test_inflected_function_words_are_not_distinctive() -> None:
    hidden = BinaryQuestion("Why does Gile volunteer?", "He knows what's coming", "Fear of death")
    ok = "Do you know why Gile volunteers?"
    res = filter_paraphrases("p", hidden, [ok], "t", cosine_fn=lambda o, cs: [0.9] * len(cs))
    assert res.accepted == [ok]


def test_exclude_marks_cross_set_duplicates() -> None:
    text = "According to the text, who is the gaming industry's number one lobbyist?"
    res = filter_paraphrases(
        "p",
        HIDDEN,
        [text],
        "rules-a",
        exclude={normalize_text(text): "the search set of rules-search"},
        cosine_fn=lambda o, cs: [0.95] * len(cs),
    )
    assert res.accepted == []
    assert "search set" in res.rejected[0].reason


def test_filter_config_validation() -> None:
    with pytest.raises(InputError, match="min_cosine"):
        FilterConfig(min_cosine=1.5)
    with pytest.raises(InputError, match="max_length_ratio"):
        FilterConfig(max_length_ratio=0.5)


def test_registry_lists_generators() -> None:
    kinds = available_generators()
    assert {"rules", "endpoint", "hf", "file"} <= set(kinds)
    assert kinds["rules"].offline and not kinds["endpoint"].offline
    assert "weak" in kinds["hf"].summary
    gen = create_generator("rules", name="rules-x", seed=3)
    assert isinstance(gen, ParaphraseGenerator)
    with pytest.raises(InputError, match="unknown paraphrase generator"):
        create_generator("nope")
    with pytest.raises(InputError, match="bad settings"):
        create_generator("rules", colour="red")


# Reference rewrites written by hand for these question shapes (not produced by the code).
@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "Why does the author say that the ban was a contradiction?",
            "Can you tell me why the author says that the ban was a contradiction?",
        ),
        (
            "How did Grannie Annie save the workers?",
            "Do you know how Grannie Annie saved the workers?",
        ),
        (
            "Why didn't Casey want to take the deal?",
            "For what reason didn't Casey want to take the deal?",
        ),
        (
            "What did Orison do when she met Kraft Gerding?",
            "When she met Kraft Gerding, what did Orison do?",
        ),
        ("Upon landing, Craig is greeted by whom?", "By whom is Craig greeted upon landing?"),
        ("Upon landing, Craig is greeted by whom?", "Who greets Craig upon landing?"),
        ("What is NOT true of the crew?", "Which of the following is NOT true of the crew?"),
        ("What is NOT true of the crew?", "Can you tell me what is NOT true of the crew?"),
        (
            "Who is the most hated celebrity of 1999?",
            "Could you tell me who the most hated celebrity of 1999 is?",
        ),
        (
            "Why are they hunting the farn beast?",
            "What is the reason they are hunting the farn beast?",
        ),
        (
            "What would most likely have happened if Andrias had not waved out the guard?",
            "If Andrias had not waved out the guard, what would most likely have happened?",
        ),
    ],
)
def test_rule_rewrites_include_reference_forms(question: str, expected: str) -> None:
    texts = [t for _f, t in rule_rewrites(question)]
    assert expected in texts


def test_rules_do_not_front_clauses_that_may_belong_to_an_embedded_verb() -> None:
    q = "Who had the opinion that Shawn had stopped reading the magazine after Tina Brown became editor?"
    assert not any(t.startswith("After Tina Brown") for _f, t in rule_rewrites(q))


def test_rules_keep_multi_sentence_questions_whole() -> None:
    q = "Who does Myles Cabot help upon returning to Poros? What does he do for them?"
    for _f, text in rule_rewrites(q):
        assert "What does he do for them" in text, text
        assert "Poros?" in text or "Poros, " in text, text
    emb = [t for _f, t in rule_rewrites("What did Sen. John McCain say?") if "tell me" in t]
    assert "Can you tell me what Sen. John McCain said?" in emb


def test_rules_never_drop_or_add_content_words() -> None:
    framing = set(
        [
            "according",
            "to",
            "the",
            "text",
            "passage",
            "based",
            "on",
            "here",
            "is",
            "a",
            "question",
            "about",
            "in",
            "can",
            "you",
            "tell",
            "me",
            "could",
            "do",
            "know",
            "i",
            "i'd",
            "like",
            "want",
            "please",
            "say",
            "would",
            "which",
            "of",
            "following",
            "for",
            "what",
            "reason",
            "way",
            "by",
            "whom",
            "who",
            "is",
            "are",
            "was",
            "were",
            "does",
            "did",
            "am",
            "asking",
            "explain",
            "going",
        ]
    )
    for q in ["How does Barker view his own film?", "Why is Jakdane going to Earth?"]:
        orig = set(normalize_text(q).split())
        for _f, t in rule_rewrites(q):
            words = set(normalize_text(t).split())
            added = words - orig - framing
            # inflection changes are the only other difference ("view" -> "views")
            assert added <= {"views", "going"}, (t, added)
            assert {"barker", "film"} <= words or {"jakdane", "earth"} <= words


def test_rules_generator_is_seeded_and_families_differ() -> None:
    q = "Why does Martin prefer to live on the yacht?"
    g1 = create_generator("rules", seed=1)
    assert g1.generate("p", q, 10) == create_generator("rules", seed=1).generate("p", q, 10)
    assert g1.generate("p", q, 10) != create_generator("rules", seed=2).generate("p", q, 10)
    a = set(create_generator("rules", families="a").generate("p", q, 200))
    b = set(create_generator("rules", families="b").generate("p", q, 200))
    assert a and b and a != b
    with pytest.raises(InputError, match="families"):
        create_generator("rules", families="z")
    thirds = [
        set(create_generator("rules", part=i, parts=3).generate("p", q, 200)) for i in range(3)
    ]
    assert all(thirds) and not (
        thirds[0] & thirds[1] or thirds[0] & thirds[2] or thirds[1] & thirds[2]
    )
    assert set().union(*thirds) == set(create_generator("rules").generate("p", q, 200))
    with pytest.raises(InputError, match="part"):
        create_generator("rules", part=3, parts=3)


def test_rules_generator_takes_several_parts() -> None:
    """A generator may own several hash buckets (the bundled test pools take 3 of 9): its
    rewrites are exactly the union of those buckets, and it stays disjoint from the others."""
    q = "Why does Martin prefer to live on the yacht?"
    ninths = [
        set(create_generator("rules", part=i, parts=9).generate("p", q, 500)) for i in range(9)
    ]
    several = create_generator("rules", part=[2, 3, 4], parts=9)
    assert set(several.generate("p", q, 500)) == ninths[2] | ninths[3] | ninths[4]
    assert several.settings()["part"] == [2, 3, 4]
    assert create_generator("rules", part=5, parts=9).settings()["part"] == 5
    assert not set(several.generate("p", q, 500)) & set(
        create_generator("rules", part=[0, 1, 5, 6, 7, 8], parts=9).generate("p", q, 500)
    )
    for bad in ([], [1, 1], [0, 9], [-1]):
        with pytest.raises(InputError, match="part"):
            create_generator("rules", part=bad, parts=9)


def test_build_sets_are_disjoint_and_ordered(embedder: Any) -> None:
    pairs = [PAIR]
    search = [create_generator("rules", name="rules-search", seed=1)]
    test = [
        create_generator("rules", name="rules-a", seed=2, families="a"),
        create_generator("rules", name="rules-b", seed=3, families="b"),
    ]
    sets = build_paraphrase_sets(pairs, search, test, n_search=10, n_test=8)
    s = sets.for_pair(PAIR.pair_id, "search")
    a = sets.for_pair(PAIR.pair_id, "test", "rules-a")
    b = sets.for_pair(PAIR.pair_id, "test", "rules-b")
    assert len(s) == 10 and len(a) == 8 and len(b) == 8
    assert [p.idx for p in a] == list(range(8))
    norm = [normalize_text(p.text) for p in s + a + b]
    assert len(set(norm)) == len(norm)
    check_disjoint(sets.paraphrases)
    assert sets.provenance["rules-a"]["settings"] == {
        "seed": 2,
        "families": "a",
        "part": 0,
        "parts": 1,
    }
    assert sets.provenance["rules-a"]["role"] == "test"
    assert "min_cosine" in sets.provenance["rules-a"]["filter"]
    with pytest.raises(InputError, match="distinct"):
        build_paraphrase_sets(pairs, search, search, 1, 1)


def test_check_disjoint_refuses_overlap() -> None:
    with pytest.raises(InputError, match="disjoint"):
        check_disjoint(
            [Paraphrase("p", "search", "g", 0, "Who?"), Paraphrase("p", "test", "h", 0, "who")]
        )


def test_store_sets_with_provenance(embedder: Any) -> None:
    from eraudit_core.store import Benchmark, Store

    bench = Benchmark("Tiny", [PAIR], sha256="ab" * 32)
    sets = build_paraphrase_sets(
        [PAIR],
        [create_generator("rules", name="rules-search", seed=1)],
        [create_generator("rules", name="rules-a", seed=2, families="a")],
        n_search=5,
        n_test=5,
    )
    sets.rejections.append(Rejection(PAIR.pair_id, "rules-a", "x", "empty: test"))
    with Store(":memory:") as store:
        bid = store.add_benchmark(bench)
        assert store_paraphrase_sets(store, bid, sets) == 10
        assert len(store.paraphrases(bid, role="test", generator="rules-a")) == 5
        assert "empty: test" in set(store.rejections(bid)["reason"])
        # storing the same sets again is idempotent
        assert store_paraphrase_sets(store, bid, sets) == 0
        clash = Paraphrase(PAIR.pair_id, "test", "other", 0, sets.paraphrases[0].text)
        sets.paraphrases.append(clash)
        with pytest.raises(InputError, match="disjoint"):
            store_paraphrase_sets(store, bid, sets)
        assert len(store.paraphrases(bid)) == 10  # the clash was refused before any write


def test_flat_file_roundtrip_and_errors(tmp_path: Path) -> None:
    paras = [Paraphrase("p", "search", "g", 0, "A?"), Paraphrase("p", "test", "h", 3, "B?")]
    path = tmp_path / "s.jsonl"
    write_paraphrase_file(paras, path)
    assert load_paraphrase_file(path) == paras
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"pair_id": "p", "generator": "g", "text": "A?"}\n{"pair_id": "p"}\n')
    with pytest.raises(InputError, match="line 1, field 'role'"):
        load_paraphrase_file(bad)
    with pytest.raises(InputError, match="line 2, field 'generator'"):
        load_paraphrase_file(bad, default_role="test")
    bad.write_text("{not json\n")
    with pytest.raises(InputError, match="line 1 is not valid JSON"):
        load_paraphrase_file(bad)


def test_reference_layout_is_read_with_reference_pair_ids(tmp_path: Path) -> None:
    from eraudit_core.store import load_benchmark

    bench = load_benchmark(REF_BENCH)
    records = json.loads(REF_BENCH.read_text())[:2]
    records[0]["paraphrase"] = {"gpt": ["G1?", {"Q_H": "G2?"}], "claude": ["C1?"]}
    records[1]["paraphrase"] = [{"Q_H": "L1?"}]
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(records))
    rows = read_paraphrase_candidates(path)
    p0, p1 = bench.pairs[0].pair_id, bench.pairs[1].pair_id
    assert rows == [
        (p0, "gpt", "G1?"),
        (p0, "gpt", "G2?"),
        (p0, "claude", "C1?"),
        (p1, "file", "L1?"),
    ]
    gen = create_generator("file", path=path, source_generator="gpt")
    assert gen.name == "gpt" and gen.generate(p0, "", 5) == ["G1?", "G2?"]
    records[1]["paraphrase"] = [{"Q_H": 3}]
    path.write_text(json.dumps(records))
    with pytest.raises(InputError, match=r"record 2, field 'paraphrase.file\[0\]'"):
        read_paraphrase_candidates(path)


def test_cli_contract(capsys: pytest.CaptureFixture[str], tmp_path: Path, embedder: Any) -> None:
    from eraudit_core.store import load_benchmark

    pid = load_benchmark(REF_BENCH).pairs[3].pair_id
    db = tmp_path / "s.duckdb"
    argv = ["paraphrase", str(REF_BENCH), "--generator", "rules", "--n", "6", "--pair-ids", pid]
    assert main([*argv, "--db", str(db), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (item,) = out["pairs"]
    assert set(item) == {"pair_id", "original", "accepted", "rejected"}
    assert item["pair_id"] == pid and item["original"].startswith("Who is the most hated")
    assert len(item["accepted"]) == 6
    # a second run on the same store rejects what is already stored
    assert main([*argv, "--db", str(db), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)["pairs"][0]
    assert again["accepted"] == []
    assert {r["reason"].split(":")[0] for r in again["rejected"]} == {"duplicate"}
    assert main(["paraphrase", str(REF_BENCH), "--generator", "rules", "--n", "0"]) == 2
    assert main([*argv[:-1], "missing-id", "--json"]) == 2
    assert "missing-id" in capsys.readouterr().err


def test_cli_import(capsys: pytest.CaptureFixture[str], tmp_path: Path, embedder: Any) -> None:
    from eraudit_core.store import Store, load_benchmark

    bench = load_benchmark(REF_BENCH)
    pair = bench.pairs[3]
    path = tmp_path / "in.jsonl"
    lines = [
        {
            "pair_id": pair.pair_id,
            "generator": "gpt",
            "text": "Can you tell me who the most hated celebrity of 1999 is?",
        },
        {
            "pair_id": pair.pair_id,
            "generator": "gpt",
            "text": "Was Donald Trump the most hated celebrity of 1999?",
        },
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines))
    db = tmp_path / "s.duckdb"
    assert (
        main(
            [
                "import-paraphrases",
                str(path),
                "--db",
                str(db),
                "--benchmark",
                str(REF_BENCH),
                "--json",
            ]
        )
        == 0
    )
    item = json.loads(capsys.readouterr().out)["pairs"][0]
    assert len(item["accepted"]) == 1 and item["rejected"][0]["reason"].startswith("answer_leak")
    with Store(db) as store:
        bid = store.add_benchmark(bench)
        assert [p.role for p in store.paraphrases(bid)] == ["test"]
        assert len(store.rejections(bid)) == 1
    path.write_text(json.dumps({"pair_id": "nope", "generator": "g", "text": "x?"}))
    assert (
        main(["import-paraphrases", str(path), "--db", str(db), "--benchmark", str(REF_BENCH)]) == 2
    )
