"""Settings refuse what they cannot mean: every refusal exits 2, names the option, stores
nothing. Unknown generators, control characters in a run's label or checkpoint names, empty
values of options that name something, numbers Python's own parser reads too generously
(`1_0` as 10), an unknown control run, and a server's Retry-After longer than the timeout.
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eraudit_core import cli
from eraudit_core.cli._option_types import name_list, non_empty, strict_float, strict_int
from eraudit_core.errors import InputError
from eraudit_core.openai_http import EndpointError, OpenAIClient
from eraudit_core.store import Store
from tests._loopback import Loopback, QuietHandler


def _run(capsys, *argv: str) -> tuple[int, str]:
    """Exit code and stderr; argparse's own refusals (SystemExit 2) count as exit 2."""
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def _no_runs(db: Path) -> bool:
    if not db.exists():
        return True
    with Store(db) as store:
        return store.runs().empty


# -- strict numbers ---------------------------------------------------------------------------
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_finite_float_as_python_writes_it_reads_back_exactly(x: float) -> None:
    assert strict_float(repr(x)) == x
    assert strict_float(f"{x:.17e}") == x


@given(st.integers(-(10**30), 10**30))
def test_every_integer_reads_back_exactly(n: int) -> None:
    assert strict_int(str(n)) == n
    assert strict_float(str(n)) == float(n)


@given(st.text(max_size=12))
def test_what_strict_float_accepts_is_plain_decimal_ascii_and_means_what_float_says(
    text: str,
) -> None:
    try:
        value = strict_float(text)
    except argparse.ArgumentTypeError:
        return
    assert set(text) <= set("0123456789.eE+-") and math.isfinite(value)
    assert value == float(text)


@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_an_underscore_between_digits_is_refused(a: int, b: int) -> None:
    for parse in (strict_float, strict_int):
        with pytest.raises(argparse.ArgumentTypeError, match="no '_'"):
            parse(f"{a}_{b}")


@pytest.mark.parametrize(
    "text", ["1_0", " 1", "1 ", "nan", "inf", "-Infinity", "0x10", "1e400", "", "١", "1,5", "."]
)
def test_numbers_python_would_read_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        strict_float(text)


@pytest.mark.parametrize("text", ["1_0", "1.0", "1e3", " 8", "٣", ""])
def test_whole_numbers_python_would_read_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        strict_int(text)


def test_names_and_name_lists_refuse_empty_and_control_characters() -> None:
    assert non_empty("run-1") == "run-1"
    assert name_list("rules-a, rules-b") == ("rules-a", "rules-b")
    for bad in ("", "  ", "a\x1b[31mb", "a\rb"):
        with pytest.raises(argparse.ArgumentTypeError):
            non_empty(bad)
    for bad in ("", ",", "a,,b", "a,", "a,a", "a\x1bb"):
        with pytest.raises(argparse.ArgumentTypeError):
            name_list(bad)


# -- the CLI: exit 2 naming the option, nothing stored ------------------------------------------
def _table(path: Path) -> Path:
    rows = [["p1", "monitored", "", 0, "m1", 0.5, 0.75]] + [
        ["p1", "test", "g1", i, f"p1 x{i}", 0.75, 0.75] for i in range(4)
    ]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        w.writerows(rows)
    return path


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--epsilon", "1_0"], "--epsilon"),
        (["--epsilon", "nan"], "--epsilon"),
        (["--budget", "1_0"], "--budget"),
        (["--noise-floor", "1_0"], "--noise-floor"),
        (["--epsilon-from", ""], "--epsilon-from"),
        (["--control", ""], "--control"),
        (["--control", "  "], "--control"),
        (["--control", "no-such-run"], "--control"),
        (["--epsilon", "-1"], "--epsilon"),
        (["--confidence", "1.5"], "--confidence"),
    ],
)
def test_a_table_audit_refuses_each_bad_setting_naming_its_option(
    tmp_path: Path, capsys, argv: list[str], option: str
) -> None:
    db = tmp_path / "s.duckdb"
    code, err = _run(capsys, "audit-table", str(_table(tmp_path / "t.csv")), "--db", str(db), *argv)
    assert code == 2, err
    assert option in err, err
    assert _no_runs(db)


def test_unknown_generators_exit_2_naming_them_and_the_known_ones(tmp_path: Path, capsys) -> None:
    db = tmp_path / "g.duckdb"
    base = ["audit", "--db", str(db), "--benchmark", "bundled", "--pre", "demo:base"]
    base += ["--post", "demo:adversarial", "--limit", "1"]
    code, err = _run(capsys, *base, "--test-generators", "nope,rules-a")
    assert code == 2, err
    assert "'nope'" in err and "--test-generators" in err
    assert "rules-a" in err.split("are", 1)[1]  # the known ones are listed
    assert _no_runs(db)
    code, err = _run(capsys, *base, "--search-generators", "nope")
    assert code == 2 and "--search-generators" in err and "'nope'" in err, err
    code, err = _run(capsys, *base, "--test-generators", "")
    assert code == 2 and "--test-generators" in err, err
    assert _no_runs(db)


def test_a_label_with_a_control_character_is_refused_at_creation(tmp_path: Path, capsys) -> None:
    db = tmp_path / "l.duckdb"
    code, err = _run(
        capsys, "audit-table", str(_table(tmp_path / "t.csv")), "--db", str(db),
        "--label", "run \x1b[2J cleared",
    )  # fmt: skip
    assert code == 2, err
    assert "label" in err and "\\x1b" in err and "\x1b" not in err
    assert _no_runs(db)
    code, err = _run(
        capsys, "audit", "--db", str(db), "--benchmark", "bundled", "--pre", "demo:base",
        "--post", "demo:adversarial", "--limit", "1", "--label", "a\x07b",
    )  # fmt: skip
    assert code == 2 and "label" in err, err
    assert _no_runs(db)


def test_the_library_refuses_control_characters_in_labels_and_checkpoint_names(
    tmp_path: Path,
) -> None:
    from eraudit_core.demo import ensure_demo_inputs
    from eraudit_core.method import AuditConfig
    from eraudit_core.runs import RunRequest, prepare_model_run

    with Store(tmp_path / "lib.duckdb") as store:
        bid = ensure_demo_inputs(store)
        config = AuditConfig(search_budget=1, test_budget=1)
        for label in ("a\x1bb", "a\x00b", "a\x9bb"):
            request = RunRequest(bid, "demo:base", "demo:adversarial", config, limit=1, label=label)
            with pytest.raises(InputError, match="label contains the control character"):
                prepare_model_run(store, request)
        assert store.runs().empty


# -- Retry-After never outlasts the timeout -----------------------------------------------------
class _Busy(QuietHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server API
        self.read_json()
        self.send_json(429, {"error": {"message": "slow down"}}, {"Retry-After": "100000"})


def test_retry_after_longer_than_the_timeout_waits_only_the_timeout() -> None:
    server = Loopback(_Busy)
    waits: list[float] = []
    try:
        client = OpenAIClient(server.url, timeout_s=3, max_retries=2, sleep=waits.append)
        with pytest.raises(EndpointError) as info:
            client.post("/completions", {"prompt": "x"})
    finally:
        server.close()
    assert len(waits) == 2 and all(w <= 3.0 for w in waits), waits
    assert "Retry-After '100000'" in str(info.value) and "timeout of 3 s" in str(info.value)
    assert info.value.status == 429


def test_retry_after_within_the_timeout_is_honoured() -> None:
    class Short(QuietHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.read_json()
            self.send_json(429, {"error": {"message": "slow down"}}, {"Retry-After": "2"})

    server = Loopback(Short)
    waits: list[float] = []
    try:
        client = OpenAIClient(
            server.url, timeout_s=3, max_retries=1, jitter=False, sleep=waits.append
        )
        with pytest.raises(EndpointError):
            client.post("/completions", {"prompt": "x"})
    finally:
        server.close()
    assert waits == [2.0]


def test_a_list_of_numbers_is_read_strictly_too(tmp_path: Path, capsys) -> None:
    db = tmp_path / "w.duckdb"
    code, err = _run(capsys, "audit-table", str(_table(tmp_path / "t.csv")), "--db", str(db))
    assert code == 0, err
    with Store(db) as store:
        run_id = str(store.runs()["run_id"].iloc[0])
    code, err = _run(capsys, "sweeps", run_id, "--db", str(db), "--epsilons", "0.1,1_0")
    assert code == 2 and "--epsilons" in err and "'1_0'" in err, err
