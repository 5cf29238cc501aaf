"""Runs move between stores as one inspectable file: audit on a GPU box,
review on a laptop. `eraudit export-run` writes a zip of Parquet tables plus a JSON manifest;
`eraudit import-run` checks it whole and stores it in one transaction, once per run id."""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from eraudit_core.bundles._bundle import relative_paths
from eraudit_core.cli import main
from eraudit_core.present._views import imported_note
from eraudit_core.runs import table_query, with_control_origin
from eraudit_core.store import SCHEMA_VERSION, Store, import_origin
from eraudit_core.types import Paraphrase
from tests import _synthetic as synthetic


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _table(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        for p in ("p1", "p2"):
            w.writerow([p, "monitored", "", 0, f"m {p}", 0.5, 0.75])
            w.writerow([p, "search", "s", 0, f"{p} search", 0.75, 0.75])
            w.writerows(
                [p, "test", "g1", i, f"{p} x{i}", 0.75, 0.75 if i != 2 or p == "p1" else 0.6]
                for i in range(5)
            )
    return path


@pytest.fixture()
def source(tmp_path: Path) -> tuple[Path, str, str]:
    """A store with a synthetic benchmark run (pairs, paraphrases) and a score-table run."""
    db = tmp_path / "gpu-box.duckdb"
    with Store(db) as store:
        info = synthetic.build_synthetic_store(
            store, n_pairs=3, n_search=2, n_test=4, arms=("adversarial",)
        )
    assert (
        main(["audit-table", str(_table(tmp_path / "scores.csv")), "--db", str(db), "--json"]) == 0
    )
    with Store(db) as store:
        table_run = str(
            store.runs().loc[lambda r: r["source"].str.startswith("table:"), "run_id"].iloc[0]
        )
    return db, info.run_ids["adversarial"], table_run


def _snapshot(store: Store, run_id: str) -> dict:
    """What must survive the move, as plain values (NaN as None so equal data compares equal)."""

    def plain(df: pd.DataFrame) -> list[dict]:
        return json.loads(df.to_json(orient="records", date_format="iso"))

    run = store.run(run_id)
    keys = ("label", "status", "config", "source", "pre_name", "post_name", "n_pairs")
    keys += ("pre_fingerprint", "post_fingerprint", "queries_scored")
    out = {
        "run": {k: run[k] for k in keys},
        "steps": plain(store.steps(run_id).drop(columns=["recorded_at"])),
        "pairs": plain(store.pair_results(run_id).drop(columns=["finished_at"])),
    }
    if run["benchmark_id"]:
        out["benchmark"] = store.pairs(run["benchmark_id"])
        # an imported run's pools are kept apart under its origin, never in the local sets
        origin = import_origin(run["imported_from"], run_id) if run["imported_from"] else None
        out["paraphrases"] = store.paraphrases(run["benchmark_id"], origin=origin)
    return out


def test_export_then_import_carries_the_whole_run(source, tmp_path, capsys):
    db, syn_run, table_run = source
    laptop = tmp_path / "laptop.duckdb"
    for run_id in (syn_run, table_run):
        bundle = tmp_path / f"{run_id}.zip"
        code, out, err = _run(capsys, "export-run", run_id, "--db", str(db), "--out", str(bundle))
        assert code == 0, err
        assert Path(out.strip()) == bundle
        with zipfile.ZipFile(bundle) as zf:  # no member names the exporter's directories
            for name in zf.namelist():
                frame = pd.read_parquet(zf.open(name)) if name.endswith(".parquet") else None
                text = zf.read(name).decode() if frame is None else frame.to_json()
                assert str(tmp_path) not in text.replace("\\/", "/"), name
        code, out, err = _run(capsys, "import-run", str(bundle), "--db", str(laptop), "--json")
        assert code == 0, err
        assert json.loads(out)["run_id"] == run_id
    with Store(db) as a, Store(laptop) as b:
        for run_id in (syn_run, table_run):
            exported = _snapshot(a, run_id)
            # the exporter's absolute paths (the score table's) travel as relative names
            for key in ("label", "source", "pre_name", "post_name"):
                value = exported["run"][key]
                exported["run"][key] = relative_paths(value) if isinstance(value, str) else value
            assert _snapshot(b, run_id) == exported
            fps = a.run(run_id)
            for fp in (fps["pre_fingerprint"], fps["post_fingerprint"]):
                # scores arrive apart from the laptop's own cache: never read by a
                # new audit unless it asks for imported scores
                assert b.cache_size(fp) == 0
                # a score table is not in the store: the scores of what the run recorded do
                hashes = [
                    table_query(pid, text, "test").prompt_hash
                    for pid, text in zip(
                        a.steps(run_id)["pair_id"], a.steps(run_id)["text"], strict=True
                    )
                ]
                assert b.cached_scores(fp, hashes) == {}
                assert b.cached_scores(fp, hashes, imported=True) == a.cached_scores(fp, hashes)
                assert a.cached_scores(fp, hashes) != {}
            mine = {fps["pre_fingerprint"], fps["post_fingerprint"]}
            in_a = mine & set(a.checkpoints().get("fingerprint", []))
            # the bundle's checkpoint rows are kept apart under its origin: a local audit of
            # the same checkpoint measures its label mass and noise floor again
            origin = import_origin(b.run(run_id)["imported_from"], run_id)
            assert in_a <= set(b.checkpoints(origin=origin).get("fingerprint", []))
            assert not mine & set(b.checkpoints().get("fingerprint", []))
    # the imported run reports like the original
    code, _, err = _run(
        capsys, "report", syn_run, "--db", str(laptop), "--out", str(tmp_path / "r.html")
    )
    assert code == 0, err


def test_the_bundle_is_an_inspectable_zip(source, tmp_path, capsys):
    db, run_id, _ = source
    bundle = tmp_path / "b.zip"
    assert _run(capsys, "export-run", run_id, "--db", str(db), "--out", str(bundle))[0] == 0
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read("manifest.json"))
        steps = pd.read_parquet(zf.open("run_steps.parquet"))
    assert manifest["format"] == "eraudit-run-bundle" and manifest["format_version"] == 1
    assert manifest["schema_version"] == SCHEMA_VERSION and manifest["run_id"] == run_id
    assert {f"{t}.parquet" for t in manifest["tables"]} | {"manifest.json"} == names
    assert manifest["tables"]["run_steps"]["rows"] == len(steps) > 0
    assert {
        "runs",
        "run_pairs",
        "run_steps",
        "benchmarks",
        "pairs",
        "paraphrases",
        "score_cache",
    } <= set(manifest["tables"])


def test_importing_a_run_twice_is_refused_and_changes_nothing(source, tmp_path, capsys):
    db, run_id, _ = source
    bundle = tmp_path / "b.zip"
    assert _run(capsys, "export-run", run_id, "--db", str(db), "--out", str(bundle))[0] == 0
    laptop = tmp_path / "laptop.duckdb"
    assert _run(capsys, "import-run", str(bundle), "--db", str(laptop))[0] == 0
    with Store(laptop) as b:
        before = _snapshot(b, run_id)
    code, _, err = _run(capsys, "import-run", str(bundle), "--db", str(laptop))
    assert code == 2 and run_id in err and "already" in err
    # into the store it came from, too
    code, _, err = _run(capsys, "import-run", str(bundle), "--db", str(db))
    assert code == 2 and "already" in err
    with Store(laptop) as b:
        assert _snapshot(b, run_id) == before
        assert len(b.runs()) == 1


def test_a_damaged_bundle_is_refused_whole(source, tmp_path, capsys):
    db, run_id, _ = source
    bundle = tmp_path / "b.zip"
    assert _run(capsys, "export-run", run_id, "--db", str(db), "--out", str(bundle))[0] == 0
    damaged = tmp_path / "damaged.zip"
    with zipfile.ZipFile(bundle) as src, zipfile.ZipFile(damaged, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "run_steps.parquet":
                df = pd.read_parquet(src.open(item)).head(1)
                import io

                buf = io.BytesIO()
                df.to_parquet(buf, index=False)
                data = buf.getvalue()
            dst.writestr(item, data)
    laptop = tmp_path / "laptop.duckdb"
    code, _, err = _run(capsys, "import-run", str(damaged), "--db", str(laptop))
    assert code == 2 and "run_steps.parquet" in err and "Traceback" not in err
    with Store(laptop) as b:
        assert b.runs().empty and b.benchmarks().empty and b.cache_size() == 0
    not_zip = tmp_path / "nope.zip"
    not_zip.write_text("hello", encoding="utf-8")
    code, _, err = _run(capsys, "import-run", str(not_zip), "--db", str(laptop))
    assert code == 2 and str(not_zip) in err


def test_export_run_never_writes_over_a_store(source, tmp_path, capsys):
    db, run_id, _ = source
    before = db.read_bytes()
    code, _, err = _run(capsys, "export-run", run_id, "--db", str(db), "--out", str(db), "--force")
    assert code == 2 and "DuckDB store" in err and db.read_bytes() == before


def test_a_pool_extended_after_the_run_still_exports_the_pool_it_drew_from(
    source, tmp_path, capsys
):
    """Paraphrases added to a set after a run finished are not part of its bundle: the import
    checks every recorded pool size and search stage against the pools the bundle carries."""
    db, syn_run, _ = source
    with Store(db) as store:
        bid = store.run(syn_run)["benchmark_id"]
        pid = str(store.pair_results(syn_run)["pair_id"].iloc[0])
        later = [
            Paraphrase(pid, role, gen, 50 + j, f"added later {role} {gen} {j}")
            for role, gen in (("test", "rules"), ("search", "search"))
            for j in range(3)
        ]
        assert store.add_paraphrases(bid, later, {"source": "later"}) == 6
    bundle = tmp_path / "later.zip"
    assert _run(capsys, "export-run", syn_run, "--db", str(db), "--out", str(bundle))[0] == 0
    with zipfile.ZipFile(bundle) as zf:
        paras = pd.read_parquet(zf.open("paraphrases.parquet"))
    assert not paras["text"].str.startswith("added later").any()
    code, _, err = _run(capsys, "import-run", str(bundle), "--db", str(tmp_path / "l.duckdb"))
    assert code == 0, err


def test_a_run_read_against_an_imported_control_says_so_in_its_record(source, tmp_path, capsys):
    db, syn_run, table_run = source
    laptop = tmp_path / "laptop.duckdb"
    bundle = tmp_path / "control.zip"
    assert _run(capsys, "export-run", syn_run, "--db", str(db), "--out", str(bundle))[0] == 0
    assert _run(capsys, "import-run", str(bundle), "--db", str(laptop))[0] == 0
    with Store(laptop) as store:
        prov = with_control_origin(store, {"control_run": syn_run})
        assert prov == {"control_run": syn_run, "control_imported_from": "control.zip"}
        note = imported_note({"provenance": prov})
        assert note == "read against a control imported from control.zip (unverified)"
    with Store(db) as store:  # negative control: the same run, local, is no import
        assert with_control_origin(store, {"control_run": syn_run}) == {"control_run": syn_run}
        assert with_control_origin(store, {}) == {}
        assert imported_note({"provenance": {"control_run": syn_run}}) is None
