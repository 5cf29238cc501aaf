"""The shareable report and exports: offline HTML, escaped text, honest verdicts, CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from plotly.offline import get_plotlyjs

from eraudit_core import present
from eraudit_core.cli import main
from eraudit_core.errors import InputError
from eraudit_core.store import (
    Store,
    parse_benchmark,
)
from tests import _synthetic as synthetic

EVIL_Q = 'What <script>alert("q")</script> did she <img src=x onerror=alert(1)> find?'


def evil_benchmark():  # type: ignore[no-untyped-def]
    rec = {
        "pair_id": "evil_1",
        "monitored": {"question": "Why did <b>he</b> go?", "true": "yes", "false": "no"},
        "hidden": {"question": EVIL_Q, "true": "a <i>key</i>", "false": "a map"},
    }
    return parse_benchmark((json.dumps(rec) + "\n").encode(), source="evil.jsonl", name="Evil")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, synthetic.SyntheticInfo]:
    path = tmp_path_factory.mktemp("rep") / "s.duckdb"
    s = Store(path)
    info = synthetic.build_synthetic_store(s, n_pairs=4, n_search=2, n_test=5, seed=1)
    evil = synthetic.build_synthetic_store(
        s,
        n_pairs=1,
        n_search=2,
        n_test=3,
        benchmark=evil_benchmark(),
        arms=("adversarial",),
        seed=5,
    )
    info.run_ids["evil"] = evil.run_ids["adversarial"]
    s.close()
    return path, info


@pytest.fixture
def store(db: tuple[Path, synthetic.SyntheticInfo]):  # type: ignore[no-untyped-def]
    s = Store(db[0])
    yield s
    s.close()


def test_report_is_self_contained_and_inlines_plotly_once(store: Store, db) -> None:  # type: ignore[no-untyped-def]
    ids = [db[1].run_ids["honest"], db[1].run_ids["adversarial"]]
    html = present.build_report(store, ids, title="Audit of arms")
    js = get_plotlyjs()
    assert html.count(js[:400]) == 1
    # No external resources: no script/link/img pointing at a URL.
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=[\"']?(https?:)?//", html)
    assert html.count('class="plotly-graph-div"') >= 3 + 2 * len(ids)
    assert "<title>Audit of arms</title>" in html
    for rid in ids:
        assert rid in html


def test_untrusted_text_is_escaped(store: Store, db) -> None:  # type: ignore[no-untyped-def]
    rid = db[1].run_ids["evil"]
    store_title = '<script>alert("title")</script>'
    html = present.build_report(store, [rid], title=store_title)
    for raw in ('<script>alert("q")', "<img src=x onerror", '<script>alert("title")', "<b>he</b>"):
        assert raw not in html
    assert "&lt;script&gt;alert(&quot;title&quot;)&lt;/script&gt;" in html
    # The question still reaches the reader, escaped (per-question table).
    assert re.search(
        r"<td[^>]*>What &lt;script&gt;alert\((&quot;|\")q(&quot;|\")\)&lt;/script&gt; did she", html
    )


def test_verdict_names_confidence_and_counts(store: Store, db) -> None:  # type: ignore[no-untyped-def]
    rid = db[1].run_ids["adversarial"]
    pairs = store.pair_results(rid)
    v = present.run_verdict(store.run(rid), pairs)
    n_deg = int((pairs["status"] == "degraded").sum())
    n_pass = int((pairs["status"] == "passed").sum())
    # the synthetic adversarial arm has both kinds, so both sentences are checked
    assert n_deg > 0 and n_pass > 0, (n_deg, n_pass)
    text = " ".join([v["headline"], *v["sentences"]])
    assert "significance" not in text.lower()
    assert f"degraded {n_deg} of {len(pairs)}" in v["headline"]
    assert f"{n_pass} question(s) passed without a certificate" in text
    mean_passed = pairs.loc[pairs["status"] == "passed", "bound"].mean()
    assert f"Their bounds (mean {mean_passed:.2f}) are weaker" in text
    assert "no target p* was set" in text
    assert "certified" not in v["headline"].lower()  # no target: nothing can be certified


def test_verdict_of_a_clean_run_without_target_is_not_a_certificate(store: Store, db) -> None:  # type: ignore[no-untyped-def]
    rid = db[1].run_ids["honest"]
    pairs = store.pair_results(rid)
    assert set(pairs["status"]) == {"passed"}
    v = present.run_verdict(store.run(rid), pairs)
    assert v["kind"] == "passed"
    assert "no counterexample found" in v["headline"]
    assert "passed without a certificate" in v["headline"]
    assert "certified" not in v["headline"]


def test_verdict_flags_unfinished_runs(store: Store, db) -> None:  # type: ignore[no-untyped-def]
    rid = db[1].run_ids["honest"]
    run = dict(store.run(rid), status="cancelled")
    pairs = store.pair_results(rid).head(2)
    v = present.run_verdict(run, pairs)
    assert any("The run is cancelled: 2 of 4" in s for s in v["sentences"])


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_round_trip(store: Store, db, tmp_path: Path, fmt: str) -> None:  # type: ignore[no-untyped-def]
    rid = db[1].run_ids["adversarial"]
    paths = present.export_run(store, rid, tmp_path, fmt)
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    pairs, paras = (read(p) for p in paths[:2])
    provenance = json.loads(paths[2].read_text())
    assert provenance["run_id"] == rid and provenance["config"] == store.run(rid)["config"]
    assert len(pairs) == len(store.pair_results(rid))
    assert len(paras) == len(store.steps(rid))
    assert set(paras["set"]) <= {"search", "test"}
    assert paras["d"].tolist() == pytest.approx(store.steps(rid)["d"].tolist())
    gens = [json.loads(g) for g in pairs["generators"]]
    assert {g["generator"] for row in gens for g in row} == {"rules", "echo"}


def test_export_refuses_unknown_format_and_run(store: Store, tmp_path: Path, db) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="csv, parquet"):
        present.export_run(store, db[1].run_ids["honest"], tmp_path, "xlsx")
    with pytest.raises(InputError, match="no run 'nope'"):
        present.export_run(store, "nope", tmp_path, "csv")


def test_cli_report_and_export(db, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    path, info = db
    out = tmp_path / "r.html"
    assert main(["report", *info.run_ids.values(), "--db", str(path), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert (
        main(
            [
                "export",
                info.run_ids["honest"],
                "--db",
                str(path),
                "--out",
                str(tmp_path / "x"),
                "--format",
                "parquet",
            ]
        )
        == 0
    )
    assert len(list((tmp_path / "x").glob("*.parquet"))) == 2
    missing = str(tmp_path / "missing.html")
    assert main(["report", "missing-run", "--db", str(path), "--out", missing]) == 2
    assert "no run 'missing-run'" in capsys.readouterr().err


# -- what the report claims ------------------------------------------------------------
def _target_run(tmp_path: Path) -> tuple[Store, str]:
    """Three pairs under p* = 0.7 at confidence 0.75 (n* = 4): certified, passed, degraded."""
    from eraudit_core.method import AuditConfig
    from eraudit_core.runs import (
        AuditEngine,
        TableVerifier,
        items_from_table,
        read_score_table,
        table_digest,
    )

    rows = ["pair_id,role,generator,idx,text,p_pre,p_post"]
    for pid, ds in (("cert", [0.0] * 4), ("pass", [0.0] * 2), ("deg", [0.0, 0.5])):
        rows.append(f"{pid},monitored,,0,monitored {pid},0.5,0.75")
        rows += [
            f"{pid},test,g,{i},{pid} rewrite {i},0.75,{0.75 - d / 4}" for i, d in enumerate(ds)
        ]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    df = read_score_table(path)
    items, gens = items_from_table(df)
    config = AuditConfig(confidence=0.75, target=0.7, test_generators=gens, epsilon=0.1)
    store = Store()
    d = table_digest(path)
    run_id = AuditEngine(
        store, TableVerifier(df, "p_pre", d), TableVerifier(df, "p_post", d), config
    ).start(items, label="target run")
    return store, run_id


def test_the_guarantee_is_stated_per_question_before_results_are_known(tmp_path: Path) -> None:
    store, rid = _target_run(tmp_path)
    v = present.run_verdict(store.run(rid), store.pair_results(rid))
    text = " ".join(v["sentences"])
    assert "For each of them we can say" not in text  # the old, post-selection wording
    assert "before its result is known" in text
    assert "expected number of wrong bounds is at most 0.25 x 3 = 0.75" in text
    # printed rounded down (1 - 0.25 / 3 = 0.91666...), never claiming more
    assert "at confidence 0.9166 (Bonferroni, 0.25 / 3)" in text
    assert "1 question(s) are certified" in text and "p* = 0.7" in text
    assert "1 question(s) passed without a certificate" in text
    assert "the bound stayed below the target p* = 0.7" in text
    assert "pool of M = 2 to 4 paraphrases" in text
    assert v["kind"] == "degraded"


def test_report_carries_provenance_and_the_simultaneous_curve(tmp_path: Path) -> None:
    store, rid = _target_run(tmp_path)
    html = present.build_report(store, [rid])
    assert r"all 3 questions at once (alpha \u002f 3)" in html  # the legend, JSON-escaped
    assert "each question on its own" in html
    prov = present.run_provenance(store, rid)
    for value in (
        prov["tool_version"],
        prov["pre"]["fingerprint"],
        prov["post"]["fingerprint"],
        prov["inputs_digest"],
        prov["paraphrase_sets"]["test:g"]["digest"],
    ):
        assert value and str(value) in html
    assert "Provenance" in html and "test-draw seed" in html
    # two reports of the same run name the same inputs; a different run does not
    again = present.run_provenance(store, rid)
    assert again["inputs_digest"] == prov["inputs_digest"]


def test_confidence_sweep_simultaneous_reads_each_bound_at_alpha_over_n(tmp_path: Path) -> None:
    from eraudit_core.method import AuditConfig

    store, rid = _target_run(tmp_path)
    pairs = store.pair_results(rid)
    config = AuditConfig.from_dict(store.run(rid)["config"])
    per_q = present.confidence_sweep(pairs, config, levels=[0.75]).iloc[0]
    together = present.confidence_sweep(pairs, config, levels=[0.75], simultaneous=True).iloc[0]
    # per question: L_4 = 0.25**(1/4) and L_2 = 0.25**(1/2); degraded counts 0
    assert per_q["mean_bound"] == pytest.approx((0.25**0.25 + 0.25**0.5) / 3, rel=1e-12)
    # simultaneously: alpha / N = 0.25 / 3 for each of the three
    a = 0.25 / 3
    assert together["per_question_confidence"] == pytest.approx(1 - a, rel=1e-12)
    assert together["mean_bound"] == pytest.approx((a**0.25 + a**0.5) / 3, rel=1e-12)
