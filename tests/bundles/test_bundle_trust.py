"""A run bundle is evidence, not authority: a bundle edited by hand
(tables changed, checksums recomputed) cannot poison the store it is imported into.

Each test edits a real bundle the way an attacker would: change a Parquet table, then write a
manifest whose sha256 matches again. Negative controls: the unedited bundle imports, and an
audit that asks for imported scores (`--use-imported-scores`) does read them.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from eraudit_core.cli import main
from eraudit_core.runs import table_query
from eraudit_core.store import CONTENT_COLUMNS, Store, load_benchmark, pairs_content_digest
from tests import _synthetic as synthetic
from tests._forged_bundle import read_frames, write_frames

ROOT = Path(__file__).resolve().parents[2]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _clean_table(path: Path) -> Path:
    """Two pairs, no paraphrase degrades: passed, max D 0 under epsilon 0.5."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        for p in ("p1", "p2"):
            w.writerow([p, "monitored", "", 0, f"m {p}", 0.5, 0.5])
            w.writerows([p, "test", "g1", i, f"{p} x{i}", 0.75, 0.75] for i in range(5))
    return path


def edit_bundle(
    bundle: Path,
    out: Path,
    table: str,
    edit: Callable[[pd.DataFrame], None],
    manifest_edit: Callable[[dict], None] | None = None,
) -> Path:
    """Rewrite one table of a bundle and recompute its sha256 in the manifest (and edit the
    manifest with `manifest_edit`, as a forger keeping it in step with the tables would)."""
    members, frames = read_frames(bundle)
    if manifest_edit is not None:
        manifest = json.loads(members["manifest.json"])
        manifest_edit(manifest)
        members["manifest.json"] = json.dumps(manifest).encode()
    edit(frames[table])
    return write_frames(members, {table: frames[table]}, out)


@pytest.fixture()
def table_run(tmp_path, capsys) -> tuple[Path, Path, str]:
    """A store with a clean score-table run, and that run's bundle."""
    db = tmp_path / "gpu.duckdb"
    table = _clean_table(tmp_path / "scores.csv")
    code, out, err = _run(
        capsys, "audit-table", str(table), "--epsilon", "0.5", "--db", str(db), "--json"
    )
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    bundle = tmp_path / "run.zip"
    assert _run(capsys, "export-run", run_id, "--db", str(db), "--out", str(bundle))[0] == 0
    return table, bundle, run_id


def _audit_table(capsys, table: Path, db: Path, *extra: str) -> dict:
    code, out, err = _run(
        capsys, "audit-table", str(table), "--epsilon", "0.5", "--db", str(db), "--json", *extra
    )
    assert code == 0, err
    return json.loads(out)


# -- (a) cache poisoning -------------------------------------------------------------------------
def test_imported_cached_scores_never_feed_a_new_audit_unless_asked(table_run, tmp_path, capsys):
    table, bundle, _ = table_run

    canonical = {table_query(p, f"m {p}", "monitored").prompt_hash for p in ("p1", "p2")}

    def poison(scores: pd.DataFrame) -> None:  # every post score of a rewording says 0.25
        rewording = ~scores["prompt_hash"].isin(canonical)
        scores.loc[scores["fingerprint"].str.endswith(":p_post") & rewording, "p_true"] = 0.25

    bad = edit_bundle(bundle, tmp_path / "poisoned.zip", "score_cache", poison)
    laptop = tmp_path / "laptop.duckdb"
    code, _, err = _run(capsys, "import-run", str(bad), "--db", str(laptop))
    assert code == 0, err  # its verdicts follow from its steps: only the cache was edited
    clean = _audit_table(capsys, table, laptop)
    assert {p["status"] for p in clean["pairs"]} == {"passed"}
    assert max(p["max_d"] for p in clean["pairs"]) == 0.0
    # control: asked for (in a store that has not scored the table itself), the imported
    # scores are read, and the run says so
    fresh = tmp_path / "laptop2.duckdb"
    assert _run(capsys, "import-run", str(bad), "--db", str(fresh))[0] == 0
    used = _audit_table(capsys, table, fresh, "--use-imported-scores")
    assert {p["status"] for p in used["pairs"]} == {"degraded"}
    assert max(p["max_d"] for p in used["pairs"]) == pytest.approx(500.0)
    with Store(fresh) as store:
        prov = store.run(used["run_id"])["provenance"]
        assert "imported from bundles" in prov["cached_scores"]
    with Store(laptop) as store:
        assert store.run(clean["run_id"])["config"]["use_imported_scores"] is False
        assert "not read" in store.run(clean["run_id"])["provenance"]["cached_scores"]


# -- (b) a benchmark with edited answers never shadows the genuine one ----------------------------
@pytest.fixture()
def bench_run(tmp_path) -> tuple[Path, Path, str]:
    """A run on a small real benchmark file (3 QuALITY-H pairs), and its bundle."""
    src = ROOT / "data" / "benchmarks" / "quality_h" / "QuALITY-H-no-debate.json"
    small = tmp_path / "small.json"
    small.write_text(json.dumps(json.loads(src.read_text())[:3]))
    db = tmp_path / "gpu.duckdb"
    with Store(db) as store:
        info = synthetic.build_synthetic_store(
            store, n_pairs=3, n_search=2, n_test=4, arms=("adversarial",),
            benchmark=load_benchmark(small),
        )  # fmt: skip
    bundle = tmp_path / "run.zip"
    assert (
        main(["export-run", info.run_ids["adversarial"], "--db", str(db), "--out", str(bundle)])
        == 0
    )
    return small, bundle, info.run_ids["adversarial"]


def _poison_answers(pairs: pd.DataFrame) -> None:
    pairs["hidden_true"], pairs["hidden_false"] = pairs["hidden_false"], pairs["hidden_true"]


def _poisoned_benchmark(bundle: Path, out: Path) -> Path:
    """The bundle with its benchmark's hidden answers swapped and every digest that names the
    benchmark's content recomputed (a forger keeping the bundle consistent with itself)."""
    with zipfile.ZipFile(bundle) as zf:
        pairs = pd.read_parquet(io.BytesIO(zf.read("pairs.parquet")))
    _poison_answers(pairs)
    filled = pairs.assign(story_title=pairs["story_title"].fillna(""))
    digest = pairs_content_digest(filled[list(CONTENT_COLUMNS)].itertuples(index=False))

    def manifest(m: dict) -> None:
        m["benchmark"]["content_digest"] = digest

    def bench(frame: pd.DataFrame) -> None:
        frame["content_digest"] = digest

    step = edit_bundle(bundle, out.with_suffix(".1.zip"), "pairs", _poison_answers, manifest)
    return edit_bundle(step, out, "benchmarks", bench)


@pytest.mark.parametrize("order", ["bundle first", "genuine first"])
def test_an_edited_benchmark_is_stored_apart_from_the_genuine_one(
    bench_run, tmp_path, capsys, order
):
    small, bundle, run_id = bench_run
    bad = _poisoned_benchmark(bundle, tmp_path / "poisoned.zip")
    laptop = tmp_path / "laptop.duckdb"
    steps = [("import-run", str(bad)), ("import-benchmark", str(small))]
    if order == "genuine first":
        steps.reverse()
    ids = {}
    for sub, path in steps:
        code, out, err = _run(capsys, sub, path, "--db", str(laptop), "--json")
        assert code == 0, err
        ids[sub] = json.loads(out).get("benchmark_id")
    genuine = load_benchmark(small)
    with Store(laptop) as store:
        assert store.pairs(ids["import-benchmark"]) == genuine.pairs  # the file's own pairs
        run_bench = store.run(run_id)["benchmark_id"]
        assert run_bench != ids["import-benchmark"]  # never merged
        kept = store.pairs(run_bench)  # the imported run keeps its own copy
        assert [p.hidden.true_option for p in kept] == [
            p.hidden.false_option for p in genuine.pairs
        ]
        assert len(store.benchmarks()) == 2
    # control: the unedited bundle shares the genuine benchmark
    other = tmp_path / "other.duckdb"
    assert _run(capsys, "import-benchmark", str(small), "--db", str(other))[0] == 0
    assert _run(capsys, "import-run", str(bundle), "--db", str(other))[0] == 0
    with Store(other) as store:
        assert len(store.benchmarks()) == 1


# -- (c) edited verdicts and a bad config are refused ---------------------------------------------
def test_edited_verdicts_are_refused_naming_the_pair(bench_run, tmp_path, capsys):
    _, bundle, _ = bench_run
    with zipfile.ZipFile(bundle) as zf:
        pairs = pd.read_parquet(io.BytesIO(zf.read("run_pairs.parquet")))
    target = str(pairs["pair_id"].iloc[0])
    before = pairs.set_index("pair_id").loc[target]

    def certify(df: pd.DataFrame) -> None:
        df.loc[df["pair_id"] == target, ["status", "bound"]] = ["certified", 0.999]

    laptop = tmp_path / "laptop.duckdb"
    bad = edit_bundle(bundle, tmp_path / "edited.zip", "run_pairs", certify)
    code, _, err = _run(capsys, "import-run", str(bad), "--db", str(laptop))
    assert code == 2
    assert "verdicts do not follow from the scores" in err
    assert f"pair {target} says certified 0.999, its steps give {before['status']}" in err
    assert not laptop.exists() or Store(laptop).runs().empty

    # an edited step (D no longer (p_pre - p_post) / den) is refused too
    def shift(df: pd.DataFrame) -> None:
        df.loc[df.index[0], "d"] = -1.0

    bad = edit_bundle(bundle, tmp_path / "steps.zip", "run_steps", shift)
    code, _, err = _run(capsys, "import-run", str(bad), "--db", str(laptop))
    assert code == 2 and "stored D" in err
    # control: the bundle as exported imports, verdicts and all
    assert _run(capsys, "import-run", str(bundle), "--db", str(laptop))[0] == 0


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [("epsilon", "0.5", "epsilon must be a number"), ("confidence", 1.5, "confidence")],
)
def test_a_bundle_config_that_a_new_run_would_refuse_is_refused(
    table_run, tmp_path, capsys, field, value, says
):
    _, bundle, _ = table_run

    def edit(runs: pd.DataFrame) -> None:
        config = json.loads(runs["config"].iloc[0])
        config[field] = value
        runs.loc[:, "config"] = json.dumps(config)

    laptop = tmp_path / "laptop.duckdb"
    bad = edit_bundle(bundle, tmp_path / "config.zip", "runs", edit)
    code, _, err = _run(capsys, "import-run", str(bad), "--db", str(laptop))
    assert code == 2 and "field config" in err and says in err, err
    assert not laptop.exists() or Store(laptop).runs().empty


# -- item 7: an imported run is never `running` ----------------------------------------------------
def test_an_imported_run_claiming_a_live_owner_elsewhere_is_not_running(
    table_run, tmp_path, capsys
):
    _, bundle, run_id = table_run

    def running(runs: pd.DataFrame) -> None:
        runs["status"] = "running"
        runs["owner_pid"] = 4242
        runs["owner_host"] = "another-host"
        runs["owner_token"] = "x:1"
        runs["heartbeat_at"] = pd.Timestamp(datetime.now(UTC).replace(tzinfo=None))

    def manifest(m: dict) -> None:
        m["status"] = "running"

    laptop = tmp_path / "laptop.duckdb"
    bad = edit_bundle(bundle, tmp_path / "running.zip", "runs", running, manifest)
    assert _run(capsys, "import-run", str(bad), "--db", str(laptop))[0] == 0
    with Store(laptop) as store:
        run = store.run(run_id)
        assert run["status"] == "interrupted"
        assert run["imported_from"]["file"] == "running.zip"
    code, out, _ = _run(capsys, "show", run_id, "--db", str(laptop))
    assert code == 0 and "imported from running.zip (unverified)" in out


def test_an_imported_run_says_so_in_its_report(table_run, tmp_path, capsys):
    _, bundle, run_id = table_run
    laptop = tmp_path / "laptop.duckdb"
    assert _run(capsys, "import-run", str(bundle), "--db", str(laptop))[0] == 0
    report = tmp_path / "r.html"
    assert _run(capsys, "report", run_id, "--db", str(laptop), "--out", str(report))[0] == 0
    assert "imported from run.zip (unverified)" in report.read_text()


# -- item 5: a zip bomb is refused within bounded memory --------------------------------------------
def _zip_bomb(bundle: Path, out: Path, unpacked: int) -> Path:
    """The bundle with run_steps.parquet replaced by `unpacked` zero bytes, deflated (about
    1/1000 of that on disk), and a manifest whose size and sha256 say the same."""
    with zipfile.ZipFile(bundle) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(members["manifest.json"])
    sha = hashlib.sha256()
    chunk = b"\0" * (16 * 1024**2)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open("run_steps.parquet", "w", force_zip64=True) as fh:
            left = unpacked
            while left:
                part = chunk[: min(left, len(chunk))]
                fh.write(part)
                sha.update(part)
                left -= len(part)
        manifest["tables"]["run_steps"]["sha256"] = sha.hexdigest()
        for name, data in members.items():
            if name not in ("run_steps.parquet", "manifest.json"):
                zf.writestr(name, data)
        zf.writestr("manifest.json", json.dumps(manifest))
    return out


def test_a_zip_bomb_is_refused_with_bounded_memory(table_run, tmp_path):
    _, bundle, _ = table_run
    bomb = _zip_bomb(bundle, tmp_path / "bomb.zip", unpacked=1700 * 1024**2)
    size = bomb.stat().st_size
    assert size < 2.5 * 1024**2, size  # about 1.7 MB on disk
    laptop = tmp_path / "laptop.duckdb"
    # The child's own peak: VmHWM of its address space. Not ru_maxrss, which Linux carries
    # over an exec from the forked copy of this (large, test-suite) process: in the full suite
    # that read 786 MB for a child whose own peak was about 300 MB.
    print_peak = (
        "import re; print(re.search(r'VmHWM:\\s+(\\d+) kB', "
        "open('/proc/self/status').read()).group(1))"
    )
    script = (
        "import sys\n"
        "from eraudit_core.cli import main\n"
        "code = main(['import-run', sys.argv[1], '--db', sys.argv[2]])\n"
        f"{print_peak}\n"
        "sys.exit(code)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(bomb), str(laptop)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    peak_mb = int(proc.stdout.strip().splitlines()[-1]) / 1024
    # Negative control: the same measurement sees a child that does hold 600 MB.
    hog = subprocess.run(
        [sys.executable, "-c", f"held = b'x' * (600 * 1024**2)\n{print_peak}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert int(hog.stdout.strip()) / 1024 > 500, hog.stderr
    print(f"zip bomb {size / 1024**2:.2f} MB -> peak RSS {peak_mb:.0f} MB, exit {proc.returncode}")
    assert proc.returncode == 2, proc.stderr
    assert "zip bomb" in proc.stderr or "more than" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert peak_mb < 500


def test_a_corrupt_deflate_stream_is_exit_2(table_run, tmp_path, capsys):
    _, bundle, _ = table_run
    data = bytearray(bundle.read_bytes())
    with zipfile.ZipFile(bundle) as zf:
        info = zf.getinfo("run_steps.parquet")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for i in range(start + 4, start + min(info.compress_size, 64)):
        data[i] ^= 0x5A
    bad = tmp_path / "corrupt.zip"
    bad.write_bytes(bytes(data))
    code, _, err = _run(capsys, "import-run", str(bad), "--db", str(tmp_path / "x.duckdb"))
    assert code == 2 and "run_steps.parquet" in err, err
    # the damage is in the deflate stream itself: a plain read fails there, and the import
    # above turned that failure into exit 2 naming the member
    with zipfile.ZipFile(bad) as zf, pytest.raises((zlib.error, zipfile.BadZipFile)):
        zf.read("run_steps.parquet")
