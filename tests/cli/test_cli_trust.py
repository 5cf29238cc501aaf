"""No secrets stored, safe exports, exit 2 for bad input, status that tells the truth.
Each test was run against the code before these checks and failed
there; each has a control that must come out differently."""

from __future__ import annotations

import csv
import json
import os
import socket
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from eraudit_core import cli
from eraudit_core.store import Store
from eraudit_core.store._owner import Owner, _boot_id, _start_ticks, owner_alive

ROOT = Path(__file__).resolve().parents[2]
SECRET = "PLANTED-s3cret-0f9d"
FORMULAS = ["=cmd|' /C calc'!A0", '+HYPERLINK("http://x","y")', "-2+3", "@SUM(A1)"]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _table(path: Path, texts: list[str] | None = None) -> Path:
    texts = texts or [f"p1 x{i}" for i in range(4)]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        w.writerow(["p1", "monitored", "", 0, "m1", 0.5, 0.75])
        w.writerows(["p1", "test", "g1", i, t, 0.75, 0.75] for i, t in enumerate(texts))
    return path


@pytest.fixture()
def stored(tmp_path, capsys) -> tuple[Path, str]:
    db = tmp_path / "S.duckdb"
    code, out, err = _run(
        capsys, "audit-table", str(_table(tmp_path / "t.csv", FORMULAS)), "--db", str(db), "--json"
    )
    assert code == 0, err  # formula-like text is valid input
    return db, json.loads(out)["run_id"]


def _store_text(db: Path) -> str:
    """Every value of every table of a store, as text (DuckDB compresses strings on disk)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return "\n".join(con.execute(f"SELECT * FROM {t}").df().to_csv() for t in tables)
    finally:
        con.close()


def _files_text(root: Path) -> str:
    """Every file under root as text; zip members and Parquet tables opened."""
    parts = []
    for path in root.rglob("*"):
        if not path.is_file() or path.suffix == ".duckdb":
            continue
        parts.append(path.read_bytes().decode("utf-8", "replace"))
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as zf:
                for name in zf.namelist():
                    data = zf.read(name)
                    parts.append(data.decode("utf-8", "replace"))
                    if name.endswith(".parquet"):
                        parts.append(pd.read_parquet(__import__("io").BytesIO(data)).to_csv())
    return "\n".join(parts)


# -- item 3: no secrets anywhere ---------------------------------------------------------------
def test_a_password_in_a_served_url_is_refused_masked_before_any_run(stored, tmp_path, capsys):
    db, run_id = stored
    url = f"http://alice:{SECRET}@127.0.0.1:9/v1"
    code, out, err = _run(
        capsys, "audit", "--db", str(db), "--pre", f"{url}#m;tokenizer=demo:base",
        "--post", "demo:base", "--limit", "1",
    )  # fmt: skip
    assert code == 2
    assert "alice:***@" in err and "api_key_env" in err and SECRET not in err + out
    code, out, err = _run(
        capsys, "paraphrase", "bundled", "--generator", "endpoint", "--base-url", url,
        "--model", "m", "--n", "1", "--db", str(db),
    )  # fmt: skip
    assert code == 2 and "alice:***@" in err and SECRET not in err + out
    with Store(db) as store:
        assert list(store.runs()["run_id"]) == [run_id]  # no run record was created
    out_dir = tmp_path / "out"
    for argv in (
        ["report", run_id, "--db", str(db), "--out", str(out_dir / "r.html")],
        ["export", run_id, "--db", str(db), "--out", str(out_dir / "export")],
        ["export-run", run_id, "--db", str(db), "--out", str(out_dir / "run.zip")],
        ["runs", "--db", str(db), "--json"],
    ):
        code, out, err = _run(capsys, *argv)
        assert code == 0, err
        assert SECRET not in out + err
    assert SECRET not in _store_text(db)
    assert SECRET not in db.read_bytes().decode("latin-1")
    assert SECRET not in _files_text(out_dir)
    # control: the grep finds a secret that is there (a label is stored and exported)
    code, out, err = _run(
        capsys, "audit-table", str(_table(tmp_path / "t2.csv")), "--db", str(db),
        "--label", f"label {SECRET}", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert SECRET in _store_text(db)


# -- item 4: safe exports ------------------------------------------------------------------------
def test_csv_cells_that_start_like_a_formula_are_quoted(stored, tmp_path, capsys):
    db, run_id = stored
    out_dir = tmp_path / "export"
    code, _, err = _run(capsys, "export", run_id, "--db", str(db), "--out", str(out_dir))
    assert code == 0, err
    with (out_dir / f"{run_id}_paraphrases.csv").open(newline="", encoding="utf-8") as fh:
        texts = [row["text"] for row in csv.DictReader(fh)]
    assert sorted(texts) == sorted("'" + t for t in FORMULAS)
    with (out_dir / f"{run_id}_pairs.csv").open(newline="", encoding="utf-8") as fh:
        row = next(csv.DictReader(fh))
    # control: plain text and numbers are written as they are (a negative number stays one)
    assert row["monitored_question"] == "m1" and float(row["gain"]) == 0.25
    assert "'" not in row["gain"]


def test_exports_use_the_umask(stored, tmp_path, capsys):
    db, run_id = stored
    old = os.umask(0o022)
    try:
        paths = [tmp_path / "run.zip", tmp_path / "r.html"]
        assert _run(capsys, "export-run", run_id, "--db", str(db), "--out", str(paths[0]))[0] == 0
        assert _run(capsys, "report", run_id, "--db", str(db), "--out", str(paths[1]))[0] == 0
        assert _run(capsys, "export", run_id, "--db", str(db), "--out", str(tmp_path / "e"))[0] == 0
        paths += sorted((tmp_path / "e").iterdir())
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in paths}
        assert set(modes.values()) == {0o644}, modes
        os.umask(0o077)  # control: a stricter umask gives stricter files
        assert (
            _run(capsys, "export-run", run_id, "--db", str(db), "--out", str(paths[0]), "--force")[
                0
            ]
            == 0
        )
        assert stat.S_IMODE(paths[0].stat().st_mode) == 0o600
    finally:
        os.umask(old)


# -- item 6: exit 2 for every bad input, refused before anything is stored ------------------------
@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["audit", "--pre", "demo:nope", "--post", "demo:base", "--limit", "1"], "demo:nope"),
        (["audit", "--pre", "demo:base", "--post", "demo:base", "--limit", "0"], "limit"),
        (["audit", "--pre", "demo:base", "--post", "demo:base", "--limit", "-5"], "limit"),
        (["audit", "--pre", "http://[::1#m;tokenizer=demo:base", "--post", "demo:base"], "URL"),
        (
            [
                "audit",
                "--pre",
                "http://h:1/v1#m;tokenizer=demo:base;timeout=inf",
                "--post",
                "demo:base",
            ],
            "timeout",
        ),  # fmt: skip
        (
            [
                "audit",
                "--pre",
                "http://g\u043e\u043egle.com:1/v1#m;tokenizer=demo:base",
                "--post",
                "demo:base",
            ],
            "ASCII",
        ),  # fmt: skip
        (
            [
                "audit",
                "--pre",
                "http://g\u202eoogle.com:1/v1#m;tokenizer=demo:base",
                "--post",
                "demo:base",
            ],
            "control character \\u202e",
        ),  # fmt: skip
        (["audit-table", "TABLE", "--label", "x" * 10_000_000], "label"),
    ],
)
def test_bad_options_are_exit_2_and_store_nothing(stored, tmp_path, capsys, argv, says):
    db, run_id = stored
    before = _store_text(db)
    argv = [str(_table(tmp_path / "ok.csv")) if a == "TABLE" else a for a in argv]
    code, out, err = _run(capsys, *argv, "--db", str(db))
    assert code == 2, err
    assert says in err and "Traceback" not in err
    assert _store_text(db) == before


def test_bad_numbers_in_files_and_sweeps_are_exit_2(stored, tmp_path, capsys):
    db, run_id = stored
    code, _, err = _run(capsys, "sweeps", run_id, "--db", str(db), "--epsilons", "0.5,nan")
    assert code == 2 and "--epsilons" in err and "'nan' is not a number" in err
    big = _table(tmp_path / "big.csv")
    big.write_text(big.read_text().replace("p1,test,g1,0,", "p1,test,g1,1e23,"))
    code, _, err = _run(capsys, "audit-table", str(big), "--db", str(db))
    assert code == 2 and "64-bit" in err
    lone = tmp_path / "lone.jsonl"
    lone.write_text(
        '{"monitored": {"question": "q\\ud800?", "true": "a", "false": "b"}, '
        '"hidden": {"question": "h?", "true": "a", "false": "b"}}\n'
    )
    code, _, err = _run(capsys, "import-benchmark", str(lone), "--db", str(db))
    assert code == 2 and "surrogate" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, _, err = _run(
        capsys, "import-paraphrases", str(empty), "--db", str(db), "--benchmark", str(lone)
    )
    assert code == 2
    # control: the same sweep with finite epsilons answers
    assert _run(capsys, "sweeps", run_id, "--db", str(db), "--epsilons", "0.5,1")[0] == 0


def test_sensitivity_refuses_a_negative_seed_and_an_unknown_reference_pair(capsys):
    table = str(ROOT / "data" / "sensitivity" / "petri_like_rollouts.csv")
    base = ["sensitivity", table, "--reference-condition", "none", "--bootstrap", "100"]
    code, _, err = _run(capsys, *base, "--seed", "-1")
    assert code == 2 and "seed" in err
    code, _, err = _run(capsys, *base, "--reference-pair", "nobody -> nothing")
    assert code == 2 and "reference pair" in err


def test_a_non_finite_busy_timeout_is_refused(stored, monkeypatch, capsys):
    db, _ = stored
    monkeypatch.setenv("ERAUDIT_BUSY_TIMEOUT", "nan")
    code, _, err = _run(capsys, "runs", "--db", str(db))
    assert code == 2 and "ERAUDIT_BUSY_TIMEOUT" in err
    monkeypatch.setenv("ERAUDIT_BUSY_TIMEOUT", "5")  # control
    assert _run(capsys, "runs", "--db", str(db))[0] == 0


# -- item 7: status tells the truth ---------------------------------------------------------------
def test_a_zombie_owner_counts_as_dead():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    ticks = ""
    for _ in range(200):
        ticks = ticks or _start_ticks(child.pid)
        state = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            break
        time.sleep(0.01)
    try:
        assert state == "Z"  # exited, not reaped: pid and start time are still there
        owner = Owner(child.pid, socket.gethostname(), f"{_boot_id()}:{ticks}")
        assert not owner_alive(owner, None, pd.Timestamp.now().to_pydatetime())
        assert owner_alive(Owner.me(), None, pd.Timestamp.now().to_pydatetime())  # control
    finally:
        child.wait()


def test_terminal_output_strips_control_characters(capsys):
    code, out, err = _run(
        capsys, "paraphrase", "bundled", "--generator", "rules", "--n", "1",
        "--pair-ids", "x\x1b[2J\x1b]0;pwned\x07",
    )  # fmt: skip
    assert code == 2
    assert "\x1b" not in err and "\x07" not in err
    assert "\\x1b[2J" in err  # shown, as a visible escape
