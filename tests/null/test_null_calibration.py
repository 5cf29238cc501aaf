"""Verdicts read against a null: the control arm's null threshold, calibrations that cannot run
backwards, and calibrations that remember their source (docs/null-reading.md).

The simulations use score tables (the `audit-table` path): a control and an independent null
arm drawn from one distribution (200 questions each), and an arm with a systematic drop well
above the control's drift. Every statistical claim has a negative control beside it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eraudit_core import cli
from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig
from eraudit_core.null import (
    AuditedContent,
    check_name,
    epsilon_from,
    null_threshold,
    parse_percentiles,
)
from eraudit_core.present import run_epsilon_sweep, run_verdict
from eraudit_core.runs import read_score_table
from eraudit_core.store import Store
from tests.runs.test_audit import COLUMNS, _cli_json, monitored, paras, write_table

N_QUESTIONS = 200
LEVEL = 0.95
DRIFT_SD = 0.02


def simulated_arm(seed: int, n: int = N_QUESTIONS, drop: float = 0.0) -> pd.DataFrame:
    """One adaptation of the same questions: the before-adaptation scores are shared by every
    arm (one base model); after adaptation each paraphrase moves by `drop` plus N(0, 0.02), and
    the monitored gain is U(0.15, 0.25), drawn afresh per arm (exchangeable denominators)."""
    rng = np.random.default_rng(seed)
    base = np.random.default_rng(12345)
    rows = []
    for i in range(n):
        pid = f"q{i}"
        gain = rng.uniform(0.15, 0.25)
        rows.append([pid, "monitored", "", 0, f"monitored {i}", 0.5, 0.5 + gain])
        for role, gen, m in (("search", "s", 3), ("test", "t", 6)):
            pre = base.uniform(0.3, 0.9, m)
            post = np.clip(pre - drop - rng.normal(0.0, DRIFT_SD, m), 0.0, 1.0)
            rows += [
                [pid, role, gen, j, f"{pid} {role} {gen} {j}", float(pre[j]), float(post[j])]
                for j in range(m)
            ]
    return pd.DataFrame(rows, columns=COLUMNS)


def _share_degraded(out: dict) -> float:
    return sum(p["status"] == "degraded" for p in out["pairs"]) / len(out["pairs"])


@pytest.fixture(scope="module")
def arms(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Control, null and drop arms audited once through the CLI; the null and drop arms take
    epsilon from the control's null calibration at level 0.95."""
    import contextlib
    import io

    tmp = tmp_path_factory.mktemp("null")
    db = str(tmp / "s.duckdb")

    def run(*argv: str) -> dict:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert cli.main(list(argv)) == 0
        return json.loads(buf.getvalue())

    paths = {}
    # the drop arm needs fewer questions to show its share (each audit of 200 takes seconds)
    for name, seed, drop, n in (
        ("control", 1, 0.0, N_QUESTIONS),
        ("null", 2, 0.0, N_QUESTIONS),
        ("drop", 3, 0.1, 60),
    ):
        paths[name] = tmp / f"{name}.csv"
        simulated_arm(seed, n=n, drop=drop).to_csv(paths[name], index=False)
    common = ["--search-budget", "3", "--budget", "6"]
    control = run("audit-table", str(paths["control"]), "--db", db, "--json", *common)
    cal = run(
        "calibrate-epsilon",
        control["run_id"],
        "--null",
        "--no-firm",
        "--level",
        str(LEVEL),
        "--name",
        "ctl",
        "--db",
        db,
        "--json",
    )
    out = {"db": db, "paths": paths, "control": control, "cal": cal, "common": common}
    for name in ("null", "drop"):
        out[name] = run(
            "audit-table",
            str(paths[name]),
            "--db",
            db,
            "--json",
            *common,
            "--epsilon-from",
            "ctl",
            "--control",
            control["run_id"],
        )
    return out


def test_null_calibration_json_is_the_quantile_of_per_question_maxima(arms) -> None:  # type: ignore[no-untyped-def]
    cal = arms["cal"]
    assert list(cal) == [
        "run_id",
        "name",
        "mode",
        "level",
        "epsilon",
        "n_questions",
        "search_budget",
        "test_budget",
        "k",
    ]
    assert (cal["mode"], cal["name"], cal["level"]) == ("null", "ctl", LEVEL)
    assert (cal["n_questions"], cal["search_budget"], cal["test_budget"]) == (200, 3, 6)
    # independent computation from the table: per question, the largest D over its 3 search and
    # 6 test paraphrases, D = (p_pre - p_post) / max(k, gain)
    t = simulated_arm(1)
    gain = t[t["role"] == "monitored"].set_index("pair_id")
    den = np.maximum(0.001, gain["p_post"] - gain["p_pre"])
    rw = t[t["role"].isin(["search", "test"])]
    d = (rw["p_pre"] - rw["p_post"]) / rw["pair_id"].map(den)
    maxima = d.groupby(rw["pair_id"]).max()
    assert cal["epsilon"] == pytest.approx(np.quantile(maxima, LEVEL), rel=1e-9)
    # negative control: the quantile over every rewording (not per-question maxima) is lower
    assert np.quantile(d, LEVEL) < cal["epsilon"]


def test_null_arm_is_degraded_on_about_one_minus_level(arms) -> None:  # type: ignore[no-untyped-def]
    null = arms["null"]
    assert null["epsilon_from"]["mode"] == "null"
    assert null["epsilon_from"]["value"] == pytest.approx(arms["cal"]["epsilon"])
    share = _share_degraded(null)
    # 1 - level = 0.05; with 200 control and 200 null questions the share's Monte Carlo sd is
    # about 0.02, so 0.10 is more than two sd above it
    assert share <= 0.10, share
    # negative control: the paper's default epsilon 0.1 on the same null arm (a sweep equals a
    # fresh audit on a table run) is a false alarm on most questions
    with Store(arms["db"]) as store:
        sweep = run_epsilon_sweep(store, null["run_id"], [0.1])
    uncalibrated = sweep.loc[sweep["epsilon"] == 0.1, "n_with_counterexample"].iloc[0] / 200
    assert uncalibrated >= 0.5, uncalibrated
    assert uncalibrated > share + 0.3


def test_a_systematic_drop_is_still_found(arms) -> None:  # type: ignore[no-untyped-def]
    share = _share_degraded(arms["drop"])
    assert share >= 0.80, share
    assert share > _share_degraded(arms["null"]) + 0.5  # negative control beside it


def test_degraded_share_of_an_exchangeable_arm_matches_one_minus_level_by_monte_carlo() -> None:
    """The promise without the store: over 400 simulated control/null pairs of 200 question
    maxima from one distribution, the mean share of null questions above the control's
    0.95 quantile is 0.05 within Monte Carlo error, and above the firm rank threshold it is at
    most 0.05 (split-conformal: exactly (n + 1 - rank) / (n + 1) in expectation)."""
    rng = np.random.default_rng(7)
    n, reps = 200, 400
    shares, firm_shares = [], []
    for _ in range(reps):
        control = rng.gumbel(size=n)
        null = rng.gumbel(size=n)
        shares.append(np.mean(null > null_threshold(control, LEVEL)))
        firm_shares.append(np.mean(null > null_threshold(control, LEVEL, firm=True)))
    rank = math.ceil((n + 1) * LEVEL)
    expected_firm = (n + 1 - rank) / (n + 1)
    se = np.std(shares) / np.sqrt(reps)
    assert abs(np.mean(shares) - (1 - LEVEL)) < 4 * se + 0.002
    assert abs(np.mean(firm_shares) - expected_firm) < 4 * np.std(firm_shares) / np.sqrt(reps)
    assert expected_firm <= 1 - LEVEL
    # negative control: a threshold from the 0.80 quantile misses the promise by far
    low = np.mean(
        [np.mean(rng.gumbel(size=n) > null_threshold(rng.gumbel(size=n), 0.8)) for _ in range(50)]
    )
    assert low > 0.15


def test_an_audit_at_other_budgets_or_k_is_refused(arms, capsys) -> None:  # type: ignore[no-untyped-def]
    base = ["audit-table", str(arms["paths"]["null"]), "--db", arms["db"], "--json"]
    for extra, field in (
        (["--search-budget", "3", "--budget", "7"], "test_budget"),
        (["--search-budget", "4", "--budget", "6"], "search_budget"),
        (["--search-budget", "3", "--budget", "6", "--k", "0.01"], "k"),
    ):
        assert cli.main([*base, *extra, "--epsilon-from", "ctl"]) == 2
        err = capsys.readouterr().err
        assert field in err and "Traceback" not in err
    # the organism form of a null calibration is refused, and the other way round
    assert cli.main([*base, *arms["common"], "--epsilon-from", "ctl:p25"]) == 2
    assert "null calibration" in capsys.readouterr().err


def test_calibrating_on_the_audited_scores_is_refused_also_with_renamed_ids(arms, capsys) -> None:  # type: ignore[no-untyped-def]
    tmp = Path(arms["paths"]["control"]).parent
    renamed = pd.read_csv(arms["paths"]["control"], dtype={"idx": int})
    renamed["pair_id"] = "renamed-" + renamed["pair_id"].astype(str)
    renamed["text"] = renamed["text"].astype(str)
    path = tmp / "renamed.csv"
    renamed.to_csv(path, index=False)
    base = ["audit-table", str(path), "--db", arms["db"], "--json", *arms["common"]]
    assert cli.main([*base, "--epsilon-from", "ctl"]) == 2
    err = capsys.readouterr().err
    assert "--allow-selection" in err and "selection" in err
    # allowed on request, recorded (checked without running the 200-question audit again)
    with Store(arms["db"]) as store:
        audited = AuditedContent(table=read_score_table(path))
        settings = {"k": 0.001, "search_budget": 3, "test_budget": 6}
        with pytest.raises(InputError, match="--allow-selection"):
            epsilon_from(store, "ctl", audited, settings=settings)
        value, record, warnings = epsilon_from(
            store, "ctl", audited, settings=settings, allow_selection=True
        )
        assert value == pytest.approx(arms["cal"]["epsilon"])
        assert record["selection"] is True and record["n_overlap"] == N_QUESTIONS
        assert any("selection" in w for w in warnings)
        # one question's probability changed: that question no longer counts as the same
        changed = read_score_table(path)
        changed.loc[changed["pair_id"] == "renamed-q0", "p_post"] *= 0.999
        overlap = epsilon_from(store, "ctl", AuditedContent(table=changed), allow_selection=True)[
            1
        ]["n_overlap"]
        assert overlap == N_QUESTIONS - 1
    # negative control: an independent arm on the same question ids is the normal case
    assert arms["null"]["epsilon_from"]["selection"] is False


def test_negative_epsilon_is_refused_everywhere(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    rows = [monitored("p"), *paras("p", "test", "g", [0.0, 0.0])]
    path = write_table(tmp_path / "s.csv", rows)
    db = str(tmp_path / "s.duckdb")
    assert cli.main(["audit-table", str(path), "--db", db, "--epsilon", "-0.5"]) == 2
    err = capsys.readouterr().err
    assert "epsilon" in err and "Traceback" not in err
    with pytest.raises(InputError, match="epsilon"):
        AuditConfig(epsilon=-1e-9)
    assert AuditConfig(epsilon=0.0).epsilon == 0.0  # negative control: 0 is allowed
    run = _cli_json(capsys, "audit-table", str(path), "--db", db, "--json")["run_id"]
    assert cli.main(["sweeps", run, "--db", db, "--epsilons", "0.1,-0.2"]) == 2
    assert "epsilon" in capsys.readouterr().err
    # an organism percentile of an honest run that is negative cannot become epsilon
    noisy = [monitored("q")]
    noisy += paras("q", "test", "g", [-0.4, -0.3, -0.2, 0.1])
    path2 = write_table(tmp_path / "n.csv", noisy)
    run2 = _cli_json(capsys, "audit-table", str(path2), "--db", db, "--json")["run_id"]
    assert cli.main(["calibrate-epsilon", run2, "--db", db, "--json", "--name", "org"]) == 0
    captured = capsys.readouterr()
    got = json.loads(captured.out)
    assert got["mode"] == "organism" and got["percentiles"]["p10"] < 0
    assert "--null" in captured.err  # the warning names the mode for honest arms
    other = write_table(
        tmp_path / "o.csv",
        [monitored("z"), *paras("z", "search", "s", [0.0]), *paras("z", "test", "g", [0.0])],
    )
    assert cli.main(["audit-table", str(other), "--db", db, "--epsilon-from", "org:p10"]) == 2
    assert "epsilon must be >= 0" in capsys.readouterr().err
    # a null calibration whose quantile is <= 0 exits 2 and says so
    assert (
        cli.main(["calibrate-epsilon", run, "--db", db, "--null", "--no-firm", "--name", "z0"]) == 2
    )
    assert "<= 0" in capsys.readouterr().err


def test_calibration_names_and_percentiles_have_one_meaning(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    for bad in ("", "a:b", "x" * 65, "a b", "é"):
        with pytest.raises(InputError, match="calibration name"):
            check_name(bad)
    assert check_name("ctl_v1.2-a") == "ctl_v1.2-a"
    for bad in ("10,,25", "10,x", "10,101", "10,10", "nan"):
        with pytest.raises(InputError, match="--percentiles"):
            parse_percentiles(bad)
    assert parse_percentiles("10, 25,50") == [10.0, 25.0, 50.0]
    rows = [monitored("p"), *paras("p", "test", "g", [0.2, 0.4, 0.6])]
    path = write_table(tmp_path / "s.csv", rows)
    db = str(tmp_path / "s.duckdb")
    run = _cli_json(capsys, "audit-table", str(path), "--db", db, "--json")["run_id"]
    first = _cli_json(capsys, "calibrate-epsilon", run, "--db", db, "--json", "--name", "c")
    assert (
        cli.main(["calibrate-epsilon", run, "--db", db, "--name", "c", "--null", "--no-firm"]) == 2
    )
    assert "--force" in capsys.readouterr().err
    got = _cli_json(
        capsys,
        "calibrate-epsilon",
        run,
        "--db",
        db,
        "--json",
        "--name",
        "c",
        "--null",
        "--no-firm",
        "--force",
    )
    assert got["mode"] == "null" and first["mode"] == "organism"
    assert cli.main(["calibrate-epsilon", run, "--db", db, "--name", "a:b"]) == 2
    assert cli.main(["calibrate-epsilon", run, "--db", db, "--percentiles", "10,,25"]) == 2


def test_calibrations_remember_their_source_and_refuse_unverified_ones(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from eraudit_core.bundles import export_run_bundle

    rows = [monitored("p"), *paras("p", "search", "s", [0.3]), *paras("p", "test", "g", [0.1] * 4)]
    path = write_table(tmp_path / "s.csv", rows)
    db = str(tmp_path / "s.duckdb")
    run = _cli_json(capsys, "audit-table", str(path), "--db", db, "--json")["run_id"]
    _cli_json(
        capsys,
        "calibrate-epsilon",
        run,
        "--db",
        db,
        "--json",
        "--null",
        "--no-firm",
        "--name",
        "local",
    )
    with Store(db) as store:
        cal = store.calibration("local")
        bundle = export_run_bundle(store, run, tmp_path / "run.zip")
        r = store.run(run)
    source = cal["provenance"]["source_run"]
    assert (source["origin"], source["verified"], source["derived"]) == ("local", True, False)
    assert source["post_fingerprint"] == r["post_fingerprint"]
    # the same run imported into another store is unverified there
    db2 = str(tmp_path / "other.duckdb")
    imported = _cli_json(capsys, "import-run", str(bundle), "--db", db2, "--json")["run_id"]
    base = ["calibrate-epsilon", imported, "--db", db2, "--null", "--no-firm", "--name", "imp"]
    assert cli.main(base) == 2
    assert "--allow-unverified" in capsys.readouterr().err
    _cli_json(capsys, *base, "--json", "--allow-unverified")
    with Store(db2) as store:
        assert store.calibration("imp")["provenance"]["source_run"]["origin"] == "imported"
    other = write_table(
        tmp_path / "o.csv",
        [monitored("z"), *paras("z", "search", "s", [0.0]), *paras("z", "test", "g", [0.0])],
    )
    use = ["audit-table", str(other), "--db", db2, "--json", "--search-budget", "100"]
    assert cli.main([*use, "--epsilon-from", "imp"]) == 2
    assert "--allow-unverified" in capsys.readouterr().err
    out = _cli_json(capsys, *use, "--epsilon-from", "imp", "--allow-unverified")
    assert out["epsilon_from"]["unverified"] is True
    with Store(db2) as store:
        verdict = run_verdict(store.run(out["run_id"]), store.pair_results(out["run_id"]))
    assert "unverified" in verdict["headline"]
    assert any("not verified by this store" in s for s in verdict["sentences"])
    # negative control: the local calibration used locally is not marked
    out = _cli_json(
        capsys, "audit-table", str(other), "--db", db, "--json", "--epsilon-from", "local"
    )
    assert out["epsilon_from"]["unverified"] is False


def test_model_runs_are_judged_by_the_post_checkpoint_fingerprint(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A model audit's selection check: the calibration run's post-adaptation fingerprint,
    whatever spec names it in this store; another checkpoint on the same questions is fine."""
    from eraudit_core.null import audited_model, selection_overlap

    rows = [monitored("p"), *paras("p", "test", "g", [0.2, 0.4])]
    rows += [monitored("r"), *paras("r", "test", "g", [0.1, 0.3])]
    db = str(tmp_path / "s.duckdb")
    path = write_table(tmp_path / "s.csv", rows)
    run = _cli_json(capsys, "audit-table", str(path), "--db", db, "--json")["run_id"]
    with Store(db) as store:
        fingerprint = store.run(run)["post_fingerprint"]
        # the same weights registered under another spec (an alias, a path)
        store.register_checkpoint(fingerprint, "alias:adapted", {})
        store.register_checkpoint("fp-other", "demo:other", {})
        assert selection_overlap(store, run, audited_model(store, "alias:adapted")) == 2
        assert selection_overlap(store, run, audited_model(store, f"{path}:p_post")) == 2
        # negative control: another checkpoint on the same questions is the normal case
        assert selection_overlap(store, run, audited_model(store, "demo:other")) == 0
        assert selection_overlap(store, run, audited_model(store, "never:registered")) == 0
