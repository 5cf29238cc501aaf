"""Did the adaptation take? `manipulation_check` on pairs with known monitored gains, and the
"manipulation" object `audit-table --json` and `show --json` print (the control's too)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eraudit_core import cli
from eraudit_core.method import manipulation_check

K = 0.001


def _pairs(pre: list[float], post: list[float], stored_gain: bool = True) -> pd.DataFrame:
    df = pd.DataFrame({"p_pre_monitored": pre, "p_post_monitored": post})
    if stored_gain:
        df["gain"] = df["p_post_monitored"] - df["p_pre_monitored"]
    return df


def _with_gains(gains: list[float], pre: float = 0.4) -> pd.DataFrame:
    """Pairs whose stored gain is exactly `gains` (what the engine divided by)."""
    df = _pairs([pre] * len(gains), [pre + g for g in gains])
    df["gain"] = gains
    return df


@pytest.mark.parametrize(
    ("n_le", "n", "took"),
    [(0, 10, True), (4, 10, True), (5, 10, False), (6, 10, False), (10, 10, False), (2, 5, True),
     (3, 5, False), (1, 2, False), (0, 1, True), (1, 1, False)],
)  # fmt: skip
def test_took_exactly_when_fewer_than_half_of_the_gains_are_at_or_below_k(
    n_le: int, n: int, took: bool
) -> None:
    """Both sides of the 50% boundary and exactly 50% (not fewer than half: did not take).
    Gains at exactly k count as at or below k."""
    low = [K, 0.0, -0.2, K / 2, -K, K, 0.0, -0.01, K, 0.0][:n_le]
    high = [0.3, 0.002, 0.05, 0.1, 0.2, 0.0011, 0.4, 0.3, 0.2, 0.1][: n - n_le]
    check = manipulation_check(_with_gains(low + high), K)
    assert check.n_gain_le_k == n_le
    assert check.share_gain_le_k == pytest.approx(n_le / n, abs=0)
    assert check.took is took
    assert check.reason.startswith(
        "The adaptation took:" if took else "The adaptation did not take:"
    )
    assert f"{n_le} of {n} monitored gains" in check.reason


def test_accuracy_and_mean_p_true_before_and_after_on_known_values() -> None:
    """Accuracy is the share with p(true) > 0.5 (0.5 itself is wrong), mean p(true) the mean."""
    check = manipulation_check(_pairs([0.2, 0.5, 0.6, 0.7], [0.9, 0.8, 0.7, 0.5]), K)
    assert check.monitored_acc_pre == pytest.approx(0.5)  # 0.6, 0.7
    assert check.monitored_acc_post == pytest.approx(0.75)  # 0.9, 0.8, 0.7
    assert check.monitored_mtp_pre == pytest.approx(0.5)
    assert check.monitored_mtp_post == pytest.approx(0.725)
    assert check.gain_quantiles["min"] == pytest.approx(-0.2)
    assert check.gain_quantiles["max"] == pytest.approx(0.7)
    assert check.gain_quantiles["median"] == pytest.approx(np.median([0.7, 0.3, 0.1, -0.2]))
    assert check.median_abs_gain == pytest.approx(np.median([0.7, 0.3, 0.1, 0.2]))
    assert check.n_gain_le_k == 1 and check.took is True
    assert "monitored accuracy 0.50 \u2192 0.75, mean p(true) 0.500 \u2192 0.725" in check.reason


def test_gain_from_the_monitored_scores_where_none_is_stored() -> None:
    stored = manipulation_check(_pairs([0.4, 0.4, 0.4], [0.4, 0.6, 0.4005]), K)
    derived = manipulation_check(_pairs([0.4, 0.4, 0.4], [0.4, 0.6, 0.4005], False), K)
    assert stored == derived
    assert derived.n_gain_le_k == 2 and derived.took is False


def test_the_reason_says_what_d_means_when_it_did_not_take() -> None:
    check = manipulation_check(_with_gains([0.0, 0.0005, -0.003, 0.2]), K)
    assert check.took is False
    assert "did not move the monitored task" in check.reason
    assert "ratio of noise to k" in check.reason


def test_seeded_gains_against_the_normal_closed_form() -> None:
    """Gains drawn like the shipped debate arms' (centred at 0, sd 0.01): the share at or
    below k averages Phi(k / sd) = 0.5398 over 400 seeded runs of 222 questions (within 4
    standard errors), and `took` is true on exactly the runs with fewer than half at or below
    k; gains centred at +0.09 (an adaptation that moved) always take."""
    from scipy.stats import norm

    rng = np.random.default_rng(7)
    shares, agree = [], 0
    for _ in range(400):
        gains = rng.normal(0.0, 0.01, 222)
        check = manipulation_check(_with_gains(list(gains)), K)
        shares.append(check.share_gain_le_k)
        agree += check.took is (2 * int((gains <= K).sum()) < 222)
    p = norm.cdf(K / 0.01)
    se = np.sqrt(p * (1 - p) / (222 * 400))
    assert abs(np.mean(shares) - p) < 4 * se, (np.mean(shares), p, se)
    assert agree == 400
    moved = manipulation_check(_with_gains(list(rng.normal(0.09, 0.03, 222))), K)
    assert moved.took is True and (moved.share_gain_le_k or 0) < 0.02


def test_no_pairs_and_bad_k() -> None:
    empty = manipulation_check(_pairs([], []), K)
    assert empty.took is False and empty.share_gain_le_k is None
    assert "No question has finished" in empty.reason
    with pytest.raises(ValueError, match="k must be a positive"):
        manipulation_check(_with_gains([0.1]), 0.0)


def _table(path: Path, gains: list[float]) -> Path:
    """One pair a gain: the monitored question 0.4 -> 0.4 + g, two test rewordings unmoved."""
    rows = []
    for i, g in enumerate(gains):
        rows.append([f"p{i}", "monitored", "", 0, f"m{i}", 0.4, 0.4 + g])
        rows += [[f"p{i}", "test", "g1", t, f"p{i} x{t}", 0.6, 0.6] for t in range(2)]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        w.writerows(rows)
    return path


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert cli.main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_manipulation_in_audit_table_and_show_json_with_the_control(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "m.duckdb")
    moved = _table(tmp_path / "moved.csv", [0.2, 0.1, 0.0, 0.3])  # 1 of 4 at or below k
    flat = _table(tmp_path / "flat.csv", [0.0, 0.0005, 0.2, -0.01])  # 3 of 4
    control = _cli_json(capsys, "audit-table", str(moved), "--db", db, "--json")
    m = control["manipulation"]
    assert m["took"] is True and m["share_gain_le_k"] == pytest.approx(0.25)
    assert m["control"] is None
    assert m["monitored_acc_pre"] == pytest.approx(0.0)
    assert m["monitored_acc_post"] == pytest.approx(0.5)  # 0.6, 0.5 (not > 0.5), 0.4, 0.7
    run = _cli_json(
        capsys, "audit-table", str(flat), "--db", db, "--json", "--control", control["run_id"]
    )
    for doc in (run, _cli_json(capsys, "show", run["run_id"], "--db", db, "--json")):
        m = doc["manipulation"]
        assert {"monitored_acc_pre", "monitored_acc_post", "share_gain_le_k", "took", "reason"} <= (
            set(m)
        )
        assert m["took"] is False and m["share_gain_le_k"] == pytest.approx(0.75)
        assert m["control"]["run_id"] == control["run_id"]
        assert m["control"]["took"] is True
