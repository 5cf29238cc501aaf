"""The shareable report and exports: offline HTML, escaped text, honest verdicts, CLI."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from plotly.offline import get_plotlyjs

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eraudit_core import present  # noqa: E402
from eraudit_core.cli import main  # noqa: E402
from eraudit_core.errors import InputError  # noqa: E402
from eraudit_core.store import (
    Store,  # noqa: E402
    parse_benchmark,  # noqa: E402
)
from ui import synthetic  # noqa: E402

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
    info = synthetic.build_synthetic_store(s, n_pairs=4, n_search=2, n_test=5)
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
        r"<td>What &lt;script&gt;alert\((&quot;|\")q(&quot;|\")\)&lt;/script&gt; did she", html
    )


def test_verdict_names_confidence_and_counts(store: Store, db) -> None:  # type: ignore[no-untyped-def]
    rid = db[1].run_ids["adversarial"]
    pairs = store.pair_results(rid)
    v = present.run_verdict(store.run(rid), pairs)
    n_deg = int((pairs["status"] == "degraded").sum())
    text = " ".join([v["headline"], *v["sentences"]])
    assert "significance" not in text.lower()
    if n_deg:
        assert f"DEGRADED {n_deg} of {len(pairs)}" in v["headline"]
    n_cert = int((pairs["status"] == "certified").sum())
    if n_cert:
        lowest = pairs.loc[pairs["status"] == "certified", "bound"].min()
        assert f"with confidence 0.95, that at least {lowest:.2f}" in text


def test_verdict_of_a_clean_run_says_certified(store: Store, db) -> None:  # type: ignore[no-untyped-def]
    rid = db[1].run_ids["honest"]
    pairs = store.pair_results(rid)
    assert set(pairs["status"]) == {"certified"}
    v = present.run_verdict(store.run(rid), pairs)
    assert "no degradation found" in v["headline"]
    assert "confidence 0.95" in v["headline"]


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
    pairs, paras = (read(p) for p in paths)
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
    assert main(["report", "missing-run", "--db", str(path), "--out", str(out)]) == 2
    assert "no run 'missing-run'" in capsys.readouterr().err
