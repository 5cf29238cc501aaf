"""Every family of forged bundle a hostile review built against `import-run` is refused with
exit 2, naming member, row and field, with no traceback and the store unchanged, or imported
with its unverifiable claims shown only as the bundle's ("claimed by the bundle, unverified").

Each forgery is made with the project's forged-bundle generator (`_forged_bundle.tampered`:
edit, then every pair row replayed so the bundle agrees with itself). Negative control: the
same generator with no edit gives bundles that import.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from eraudit_core.method import run_noise_floor_value
from eraudit_core.store import Store
from tests._forged_bundle import (
    Frames,
    build_bundles,
    read_frames,
    refused,
    run_cli,
    tampered,
    write_frames,
)
from tests._synthetic import build_synthetic_store


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    return build_bundles(tmp_path_factory.mktemp("bundles"))


@pytest.fixture()
def laptop(tmp_path) -> Path:  # type: ignore[no-untyped-def]
    """A store that already holds something, so "unchanged" is a real comparison."""
    db = tmp_path / "laptop.duckdb"
    with Store(db) as store:
        build_synthetic_store(store, n_pairs=1, n_search=1, n_test=2, arms=("honest",))
    return db


def _nothing(frames: Frames) -> None:
    return None


def _set_run(**values: object) -> Callable[[Frames], None]:
    def edit(frames: Frames) -> None:
        for col, value in values.items():
            frames["runs"][col] = pd.Series([value], dtype=object)

    return edit


def _manifest(**values: object) -> Callable[[dict], None]:
    def edit(manifest: dict) -> None:
        manifest.update(values)

    return edit


def _first_pair(frames: Frames) -> str:
    return str(frames["run_pairs"]["pair_id"].iloc[0])


# -- the search stage of a certified pair deleted -------------------------------------------------
def _drop_search(frames: Frames) -> None:
    steps = frames["run_steps"]
    frames["run_steps"] = steps[
        ~((steps["pair_id"] == _first_pair(frames)) & (steps["stage"] == 1))
    ].reset_index(drop=True)


# -- pair ids not in the benchmark ----------------------------------------------------------------
def _ghost_pair(frames: Frames) -> None:
    pid = _first_pair(frames)
    for member in ("run_pairs", "run_steps", "paraphrases"):
        frames[member]["pair_id"] = frames[member]["pair_id"].replace(pid, "ghost_999")
    raw = str(frames["runs"]["source"].iloc[0] or "")
    if raw.startswith("{"):  # a model run lists the pairs it was started on
        source = json.loads(raw)
        source["pair_ids"] = [("ghost_999" if p == pid else p) for p in source["pair_ids"]]
        frames["runs"]["source"] = json.dumps(source)


def _forged_question(role: str) -> Callable[[Frames], None]:
    def edit(frames: Frames) -> None:
        frames["run_pairs"].loc[0, f"{role}_question"] = "FORGED QUESTION: is the sky green?"

    return edit


def _swap_fingerprints(frames: Frames) -> None:
    runs = frames["runs"]
    runs.loc[0, ["pre_fingerprint", "post_fingerprint"]] = [
        runs.loc[0, "post_fingerprint"],
        runs.loc[0, "pre_fingerprint"],
    ]


def _forged_worst(frames: Frames) -> None:
    """p1 names its mildest rewording (one the model got right) as the worst."""
    steps, pairs = frames["run_steps"], frames["run_pairs"]
    mine = steps[steps["pair_id"] == "p1"].sort_values("d")
    mild = mine.iloc[0]
    pairs.loc[pairs["pair_id"] == "p1", ["worst_text", "worst_stage", "worst_t"]] = [
        "a rewording the model got right",
        int(mild["stage"]),
        int(mild["t"]),
    ]
    pairs.loc[pairs["pair_id"] == "p1", "worst_generator"] = mild["generator"]


def _flip(column: str) -> Callable[[Frames], None]:
    def edit(frames: Frames) -> None:
        pairs = frames["run_pairs"]
        pairs[column] = ~pairs[column].astype(bool)

    return edit


def _nudge_step_bound(frames: Frames) -> None:
    steps = frames["run_steps"]
    i = steps[steps["stage"] == 2].index[0]
    steps.loc[i, "bound"] = 0.99


def _drop_benchmark(frames: Frames) -> None:
    frames["benchmarks"] = frames["benchmarks"].iloc[0:0]
    frames["pairs"] = frames["pairs"].iloc[0:0]


def _no_manifest_benchmark(manifest: dict) -> None:
    manifest.pop("benchmark", None)


def _drop_pair_and_count(frames: Frames) -> None:
    frames["run_pairs"] = frames["run_pairs"][frames["run_pairs"]["pair_id"] != "p2"]
    frames["run_steps"] = frames["run_steps"][frames["run_steps"]["pair_id"] != "p2"]
    frames["runs"]["n_pairs"] = pd.Series([None], dtype=object)


def _json_escape(column: str) -> Callable[[Frames], None]:
    def edit(frames: Frames) -> None:
        data = json.loads(frames["runs"][column].iloc[0] or "{}")
        data["note"] = "\x1b[2Jcleared"  # written as the JSON escape \u001b
        frames["runs"][column] = json.dumps(data)
        assert "\x1b" not in frames["runs"][column].iloc[0]

    return edit


LABEL = "x" * 1_000_000
FAMILIES = {
    "search stage deleted": (
        "model", _drop_search, None, None, ("run_pairs.parquet row 1", "field n_search"),
    ),
    "done run missing a pair, count blanked": (
        "table", _drop_pair_and_count, None, None,
        ("runs.parquet row 1: field n_pairs must be a whole number",),
    ),
    "pair id not in the benchmark": (
        "model", _ghost_pair, None, None, ("field pair_id 'ghost_999' is not a pair of benchmark",),
    ),
    "hidden question replaced": (
        "model", _forged_question("hidden"), None, None,
        ("run_pairs.parquet row 1: field hidden_question is not pair",),
    ),
    "monitored question replaced": (
        "model", _forged_question("monitored"), None, None,
        ("run_pairs.parquet row 1: field monitored_question is not pair",),
    ),
    "table question replaced": (
        "table", _forged_question("monitored"), None, None,
        ("run_pairs.parquet row 1: field p_pre_monitored", "holds no such pre score"),
    ),
    "pre and post fingerprints swapped": (
        "table", _swap_fingerprints, None, None, ("look swapped",),
    ),
    "worst rewording forged": (
        "table", _nothing, _forged_worst, None, ("run_pairs.parquet row 1 (pair p1)", "worst_"),
    ),
    "amplified forged": ("table", _nothing, _flip("amplified"), None, ("field amplified",)),
    "target_reached forged": (
        "table", _nothing, _flip("target_reached"), None, ("field target_reached",),
    ),
    "per-step bound forged": (
        "table", _nothing, _nudge_step_bound, None, ("field bound says 0.99",),
    ),
    "benchmark left out": (
        "model", _drop_benchmark, None, _no_manifest_benchmark, ("carries no benchmark",),
    ),
    "benchmark left out, named by a digest this store lacks": (
        "model", _drop_benchmark, None, None, ("holds no benchmark",),
    ),
    "unknown benchmark id": (
        "model", _set_run(benchmark_id="no_such_benchmark"), None, None,
        ("benchmarks.parquet row 1: field benchmark_id", "is not the run's benchmark"),
    ),
    "status Done": (
        "table", _set_run(status="Done"), None, _manifest(status="Done"),
        ("runs.parquet row 1: field status must be one of",),
    ),
    "status blank": (
        "table", _set_run(status=""), None, _manifest(status=""), ("field status must be one of",),
    ),
    "status HTML": (
        "table", _set_run(status="<b>done</b>"), None, _manifest(status="<b>done</b>"),
        ("field status must be one of",),
    ),
    "label of a million characters": (
        "table", _set_run(label=LABEL), None, _manifest(label=LABEL),
        ("runs.parquet row 1: field label is 1,000,000 characters long", "1,000 allowed"),
    ),
    "active_seconds inf": (
        "table", _set_run(active_seconds=float("inf")), None, None,
        ("runs.parquet row 1: field active_seconds must be a finite number >= 0",),
    ),
    "queries_scored -5": (
        "table", _set_run(queries_scored=-5), None, None,
        ("runs.parquet row 1: field queries_scored must be a whole number >= 0",),
    ),
    "ESC inside the config JSON": (
        "table", _nothing, _json_escape("config"), None,
        ("runs.parquet row 1: field config.note contains the control character \\x1b",),
    ),
    "ESC inside the provenance JSON": (
        "table", _json_escape("provenance"), None, None,
        ("field provenance.note contains the control character \\x1b",),
    ),
    "manifest disagrees with the runs table": (
        "table", _nothing, None, _manifest(status="failed"),
        ("manifest.json: field status says 'failed', runs.parquet row 1 says 'done'",),
    ),
}  # fmt: skip


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_forged_bundle_is_refused_naming_member_row_and_field(
    bundles, tmp_path, laptop, capsys, family
):
    kind, edit, after, manifest, says = FAMILIES[family]
    bad, _ = tampered(bundles[kind], tmp_path, edit, after=after, manifest=manifest)
    refused(capsys, bad, laptop, *says)


@pytest.mark.parametrize("kind", ["table", "model"])
def test_the_untampered_bundle_of_the_same_runs_imports(bundles, tmp_path, laptop, capsys, kind):
    bad, _ = tampered(bundles[kind], tmp_path, _nothing)
    code, _, err = run_cli(capsys, "import-run", str(bad), "--db", str(laptop))
    assert code == 0, err


def _zip_with(bundle: Path, out: Path, patch: Callable[[bytearray], None], extra: bool) -> Path:
    members, frames = read_frames(bundle)
    write_frames(members, {}, out)
    if extra:  # a second run_pairs.parquet after the first: `unzip` shows one, Python the other
        import zipfile

        with zipfile.ZipFile(out, "a") as zf, pytest.warns(UserWarning, match="Duplicate"):
            zf.writestr("run_pairs.parquet", members["run_pairs.parquet"])
    data = bytearray(out.read_bytes())
    patch(data)
    out.write_bytes(bytes(data))
    return out


def _encrypt_flag(data: bytearray) -> None:
    """Set the 'encrypted' bit of run_steps.parquet in its local and central headers."""
    name = b"run_steps.parquet"
    local = data.find(b"PK\x03\x04")
    while data[local + 30 : local + 30 + len(name)] != name:
        local = data.find(b"PK\x03\x04", local + 4)
    data[local + 6] |= 1
    central = data.find(b"PK\x01\x02")
    while data[central + 46 : central + 46 + len(name)] != name:
        central = data.find(b"PK\x01\x02", central + 4)
    data[central + 8] |= 1


@pytest.mark.parametrize(
    ("extra", "patch", "says"),
    [
        (True, lambda d: None, "member run_pairs.parquet appears twice"),
        (False, _encrypt_flag, "member run_steps.parquet is encrypted"),
    ],
)
def test_duplicate_and_encrypted_members_are_exit_2(
    bundles, tmp_path, laptop, capsys, extra, patch, says
):
    bad = _zip_with(bundles["table"], tmp_path / "zip.zip", patch, extra)
    refused(capsys, bad, laptop, says)


def test_forged_provenance_is_shown_only_as_the_bundle_s_unverified_claim(
    bundles, tmp_path, capsys
):
    claims = {
        "noise_floor": {"value": 0.9, "source": "measured at registration (probe set)"},
        "control_run": "run-the-control",
        "epsilon_from": {"calibration": "cal-forged", "value": 0.5},
    }

    def forge(frames: Frames) -> None:
        prov = json.loads(frames["runs"]["provenance"].iloc[0])
        frames["runs"]["provenance"] = json.dumps({**prov, **claims})

    bad, frames = tampered(bundles["table"], tmp_path, forge, name="claims.zip")
    run_id = str(frames["runs"]["run_id"].iloc[0])
    db = tmp_path / "laptop.duckdb"
    code, _, err = run_cli(capsys, "import-run", str(bad), "--db", str(db))
    assert code == 0, err
    with Store(db) as store:
        prov = store.run(run_id)["provenance"]
    assert not set(claims) & set(prov)  # no reader takes them for the run's own
    assert prov["claimed_by_bundle"] == claims
    assert run_noise_floor_value(prov) is None
    code, out, err = run_cli(capsys, "show", run_id, "--db", str(db))
    assert code == 0, err
    assert "claimed by the bundle, unverified: numerical precision 0.9" in out
    assert "control run run-the-control" in out and "cal-forged" in out
    report = tmp_path / "r.html"
    code, _, err = run_cli(capsys, "report", run_id, "--db", str(db), "--out", str(report))
    assert code == 0, err
    html = report.read_text()
    assert "claimed by the bundle, unverified" in html
    # negative control: the untampered bundle claims nothing
    other = tmp_path / "other.duckdb"
    assert run_cli(capsys, "import-run", str(bundles["table"]), "--db", str(other))[0] == 0
    code, out, _ = run_cli(capsys, "show", run_id, "--db", str(other))
    assert "claimed by the bundle" not in out
