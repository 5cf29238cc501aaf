"""Property: whatever a file or a spec holds, every command answers with exit 0 or 2, never a
traceback, and a command that exits 2 leaves the store as it was.

Hypothesis draws random bytes, random JSON, JSON and CSV/Parquet tables shaped like each
importer's input (the right field names with random values), run bundles with random members,
and random checkpoint specs (loopback hosts only, retries off). Examples are capped so the whole
file stays well under the fast suite's 3 minutes.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from eraudit_core import cli
from eraudit_core.errors import InputError
from eraudit_core.verifier import parse_spec

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "data" / "benchmarks" / "quality_h" / "QuALITY-H-no-debate.json"
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

text = st.text(max_size=30)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), text)
json_values = st.recursive(
    scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(text, kids, max_size=4),
    max_leaves=12,
)  # fmt: skip


def records(fields: list[str]) -> st.SearchStrategy[list[dict]]:
    """Records with (some of) an importer's field names and random values."""
    return st.lists(
        st.dictionaries(st.sampled_from(fields) | text, json_values, max_size=len(fields) + 1),
        max_size=4,
    )


BENCH_FIELDS = ["pair_id", "story_title", "monitored", "hidden", "Q_Y", "Q_H", "question",
                "true", "false", "Y_true", "Y_false", "H_true", "H_false", "extra"]  # fmt: skip
TABLE_FIELDS = ["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"]
TIDY_FIELDS = ["rollout", "behaviour", "condition", "auditor", "target", "judge", "dimension",
               "score"]  # fmt: skip
PARA_FIELDS = ["pair_id", "generator", "text", "role", "idx", "paraphrase"]


def table_rows(fields: list[str]) -> st.SearchStrategy[list[dict]]:
    cell = st.one_of(
        text, st.integers(-(2**70), 2**70), st.floats(), st.sampled_from(["monitored", "test"])
    )
    return st.lists(st.fixed_dictionaries({f: cell for f in fields}), max_size=5)


def file_bytes(fields: list[str]) -> st.SearchStrategy[tuple[str, bytes]]:
    """(suffix, content): random bytes, random JSON, shaped JSON / JSONL, CSV or Parquet."""

    def as_csv(rows: list[dict]) -> bytes:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue().encode("utf-8", "surrogatepass")

    def as_parquet(rows: list[dict]) -> bytes:
        buf = io.BytesIO()
        frame = pd.DataFrame(rows, columns=fields).astype(str)
        frame.to_parquet(buf, index=False)
        return buf.getvalue()

    def dumps(value: object) -> bytes:
        return json.dumps(value).encode("utf-8", "surrogatepass")

    def lines(recs: list[dict]) -> bytes:
        return b"\n".join(dumps(r) for r in recs)

    return st.one_of(
        st.tuples(st.sampled_from([".json", ".csv", ".parquet"]), st.binary(max_size=300)),
        st.tuples(st.just(".json"), json_values.map(dumps)),
        st.tuples(st.just(".json"), records(fields).map(dumps)),
        st.tuples(st.just(".jsonl"), records(fields).map(lines)),
        st.tuples(st.just(".csv"), table_rows(fields).map(as_csv)),
        st.tuples(st.just(".parquet"), table_rows(fields).map(as_parquet)),
    )


def bundles() -> st.SearchStrategy[bytes]:
    """Zips with a manifest (random, or nearly right) and random members."""

    def build(manifest: object, members: dict[str, bytes]) -> bytes:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("manifest.json", json.dumps(manifest))
            for name, data in members.items():
                zf.writestr(name, data)
        return buf.getvalue()

    tables = ["runs", "run_pairs", "run_steps", "benchmarks", "pairs", "paraphrases",
              "checkpoints", "score_cache"]  # fmt: skip
    near = st.fixed_dictionaries(
        {
            "format": st.just("eraudit-run-bundle"),
            "format_version": st.just(1),
            "schema_version": st.integers(0, 9),
            "run_id": text,
            "tables": st.fixed_dictionaries(
                {
                    t: st.fixed_dictionaries(
                        {
                            "file": st.just(f"{t}.parquet"),
                            "rows": st.integers(0, 3),
                            "sha256": st.text("0123456789abcdef", min_size=64, max_size=64),
                        }
                    )
                    for t in tables
                }  # fmt: skip
            ),
        }
    )
    members = st.dictionaries(
        st.sampled_from([f"{t}.parquet" for t in tables]), st.binary(max_size=200), max_size=8
    )
    return st.builds(build, json_values | near, members)


def specs() -> st.SearchStrategy[str]:
    hosts = st.sampled_from(["127.0.0.1:9", "[::1]:9", "localhost:9", "[::1", "127.0.0.1:x"])
    setting = st.sampled_from(
        ["tokenizer=demo:base", "retries=0", "timeout=inf", "timeout=nan", "top_k=1", "x=1",
         "concurrency=-3", "method=other", "api_key_env=A-B", "tokenizer=/no/such"]
    )  # fmt: skip
    served = st.builds(
        lambda h, m, s: f"http://{h}/v1#{m};" + ";".join(s),
        hosts, text, st.lists(setting, max_size=4),
    )  # fmt: skip
    local = st.builds(lambda t: f"demo:{t}", text) | text
    return served | local


def _store_text(db: Path) -> str:
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return "\n".join(con.execute(f"SELECT * FROM {t}").df().to_csv() for t in names)
    finally:
        con.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the bundled benchmark and one run, so an exit 2 has something to keep."""
    tmp = tmp_path_factory.mktemp("prop")
    db = tmp / "S.duckdb"
    table = tmp / "t.csv"
    table.write_text(
        "pair_id,role,generator,idx,text,p_pre,p_post\np1,monitored,,0,m,0.5,0.6\n"
        "p1,test,g,0,x,0.7,0.7\n"
    )
    assert cli.main(["import-benchmark", str(BENCH), "--db", str(db)]) == 0
    assert cli.main(["audit-table", str(table), "--db", str(db)]) == 0
    return db


def check(capsys, db: Path, argv: list[str]) -> None:
    before = _store_text(db)
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse refusing an option is exit 2 too
        code = exc.code
    err = capsys.readouterr().err
    assert code in (0, 2), (argv, code, err[-1500:])
    assert "Traceback" not in err
    if code == 2:
        assert _store_text(db) == before, argv


def _write(tmp: Path, suffix: str, data: bytes) -> Path:
    path = tmp / f"input{suffix}"
    path.write_bytes(data)
    return path


COMMANDS = {
    "import-benchmark": (BENCH_FIELDS, lambda f, db: ["import-benchmark", f, "--db", db]),
    "audit-table": (TABLE_FIELDS, lambda f, db: ["audit-table", f, "--db", db, "--json"]),
    "import-paraphrases": (
        PARA_FIELDS,
        lambda f, db: ["import-paraphrases", f, "--db", db, "--benchmark", str(BENCH)],
    ),
    "sensitivity": (
        TIDY_FIELDS,
        lambda f, db: ["sensitivity", f, "--reference-condition", "none", "--bootstrap", "100"],
    ),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_file_input_is_exit_0_or_2(command, store, tmp_path_factory, capsys):
    fields, argv = COMMANDS[command]
    tmp = tmp_path_factory.mktemp(command)

    @SETTINGS
    @given(file_bytes(fields))
    def prop(content: tuple[str, bytes]) -> None:
        path = _write(tmp, *content)
        check(capsys, store, argv(str(path), str(store)))

    prop()


def test_every_bundle_is_exit_0_or_2(store, tmp_path_factory, capsys):
    tmp = tmp_path_factory.mktemp("bundles")

    @SETTINGS
    @given(bundles())
    def prop(data: bytes) -> None:
        check(capsys, store, ["import-run", str(_write(tmp, ".zip", data)), "--db", str(store)])

    prop()


def test_every_checkpoint_spec_is_exit_0_or_2(store, capsys):
    @SETTINGS
    @given(specs())
    def prop(spec: str) -> None:
        try:
            parse_spec(spec)
        except InputError:
            pass
        else:  # a spec that parses would load a model or reach a server: not what this tests
            assume(False)
        check(capsys, store, ["audit", "--db", str(store), "--pre", spec, "--post", "demo:base"])

    prop()
