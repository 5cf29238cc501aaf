"""A bundle tampered self-consistently (steps edited, then every pair row recomputed with the
project's own replay, the way an attacker holding the source would) is refused by
`import-run` with exit 2, naming the member, row and field, and the store stays as it was.

The attacker's tool (`recompute`) is checked by the negative control: the untouched bundle put
through it imports, so each refusal below comes from the invariant under test, not from a
clumsy forgery.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from eraudit_core.cli import main
from eraudit_core.errors import InputError
from eraudit_core.store import Store, write_run_rows
from tests import _synthetic as synthetic
from tests._forged_bundle import (
    Frames,
    build_bundles,
    read_frames,
    recompute,
    refused,
    tampered,
    write_frames,
)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> dict[str, Path]:
    return build_bundles(tmp_path_factory.mktemp("bundles"))


@pytest.fixture()
def laptop(tmp_path) -> Path:
    """A store that already holds something, so "unchanged" is a real comparison."""
    db = tmp_path / "laptop.duckdb"
    with Store(db) as store:
        synthetic.build_synthetic_store(store, n_pairs=1, n_search=1, n_test=2, arms=("honest",))
    return db


def _pair_row(frames: Frames, pid: str) -> dict:
    return frames["run_pairs"].set_index("pair_id").loc[pid].to_dict()


# -- control: the attacker's tool on an untouched bundle forges nothing that is refused ----------
@pytest.mark.parametrize("kind", ["table", "model"])
def test_an_untouched_bundle_recomputed_by_the_replay_still_imports(
    bundles, tmp_path, laptop, capsys, kind
):
    bad, _ = tampered(bundles[kind], tmp_path, lambda f: None)
    code, _, err = _run(capsys, "import-run", str(bad), "--db", str(laptop))
    assert code == 0, err


# -- repeated draws: a passed pair "certified" by 14 draws from a pool of 8 ----------------------
def test_repeated_stage2_draws_cannot_certify_a_pair(bundles, tmp_path, laptop, capsys):
    _, original = read_frames(bundles["table"])
    assert _pair_row(original, "p1")["status"] == "passed"

    def repeat(frames: Frames) -> dict[str, int]:
        steps = frames["run_steps"]
        mine = steps[(steps["pair_id"] == "p1") & (steps["stage"] == 2)].sort_values("t")
        extra = mine.head(6).copy()
        extra["t"] = range(9, 15)
        frames["run_steps"] = pd.concat([steps, extra], ignore_index=True)
        return {"g1": 14}  # the pool the forged row claims

    bad, frames = tampered(bundles["table"], tmp_path, repeat)
    forged = _pair_row(frames, "p1")
    # the forgery is self-consistent: the replay itself certifies it (0.05 ** (1 / 14))
    assert forged["status"] == "certified"
    assert forged["bound"] == pytest.approx(0.05 ** (1 / 14))
    refused(
        capsys, bad, laptop, "run_steps.parquet row 14 (pair p1)", "field text repeats row",
        "unique within a pair",
    )  # fmt: skip


def test_a_generator_with_more_draws_than_its_recorded_pool_isrefused(
    bundles, tmp_path, laptop, capsys
):
    def fresh_texts(frames: Frames) -> None:  # new distinct texts, pool still 8
        steps = frames["run_steps"]
        mine = steps[(steps["pair_id"] == "p1") & (steps["stage"] == 2)]
        extra = mine.head(6).copy()
        extra["t"] = range(9, 15)
        extra["text"] = [f"invented {i}" for i in range(6)]
        frames["run_steps"] = pd.concat([steps, extra], ignore_index=True)

    members, frames = read_frames(bundles["table"])
    fresh_texts(frames)
    # the replay stops the test at its pool of 8: a forger cannot recompute this pair
    with pytest.raises(InputError, match="after the test stopped"):
        recompute({k: v.copy() for k, v in frames.items()})
    bad = write_frames(members, frames, tmp_path / "more.zip")
    refused(capsys, bad, laptop, "run_steps.parquet row", "more than its pool of 8")


def test_a_gap_in_a_generator_s_draws_isrefused(bundles, tmp_path, laptop, capsys):
    def gap(frames: Frames) -> None:
        steps = frames["run_steps"]
        last = steps[(steps["pair_id"] == "p1") & (steps["stage"] == 2)]["t"].idxmax()
        steps.loc[last, "t"] = 10

    bad, _ = tampered(bundles["table"], tmp_path, gap)
    refused(capsys, bad, laptop, "field t is 10 where draw 8 of generator g1 belongs")


# -- a counterexample hidden where the replay does not look ---------------------------------------
def _hidden_counterexample(generator: str, stage: int) -> Callable[[Frames], None]:
    def edit(frames: Frames) -> None:
        steps = frames["run_steps"]
        row = steps[(steps["pair_id"] == "p1") & (steps["stage"] == 2)].head(1).copy()
        # D = (p_pre - p_post) / den = 0.448 / 0.4 = 1.12, a counterexample at epsilon 0.5
        row[["generator", "stage", "t", "text", "p_pre", "p_post"]] = [
            generator, stage, 1, "p1 the hidden counterexample", 0.7, 0.252,
        ]  # fmt: skip
        frames["run_steps"] = pd.concat([steps, row], ignore_index=True)

    return edit


@pytest.mark.parametrize(
    ("generator", "stage", "says"),
    [
        ("evil", 2, "field generator 'evil' is not one of the pair's test generators (g1)"),
        ("g1", 9, "field stage must be 1 or 2, got 9"),
    ],
)
def test_a_counterexample_under_a_foreign_generator_or_stage_isrefused(
    bundles, tmp_path, laptop, capsys, generator, stage, says
):
    bad, frames = tampered(bundles["table"], tmp_path, _hidden_counterexample(generator, stage))
    steps = frames["run_steps"]
    forged = steps[steps["text"] == "p1 the hidden counterexample"].iloc[0]
    assert forged["d"] == pytest.approx(1.12) and bool(forged["is_counterexample"])
    assert _pair_row(frames, "p1")["n_counterexamples"] == 0  # the replay does not see it
    refused(capsys, bad, laptop, "run_steps.parquet row 14 (pair p1)", says)


# -- probabilities outside [0, 1] -----------------------------------------------------------------
def test_a_monitored_probability_of_50_isrefused(bundles, tmp_path, laptop, capsys):
    _, original = read_frames(bundles["table"])
    assert _pair_row(original, "p2")["status"] == "degraded"

    def inflate(frames: Frames) -> None:
        pairs = frames["run_pairs"]
        i = pairs.index[pairs["pair_id"] == "p2"][0]
        pairs.loc[i, "p_post_monitored"] = 50.0
        # the drop at draw 3 no longer counts, so the forger also claims a pool of 3 draws
        gens = json.loads(pairs.loc[i, "generators"])
        gens[0]["available"] = 3
        pairs.loc[i, "generators"] = json.dumps(gens)

    bad, frames = tampered(bundles["table"], tmp_path, inflate)
    assert _pair_row(frames, "p2")["status"] != "degraded"  # what the forgery buys
    refused(
        capsys, bad, laptop, "run_pairs.parquet row 2: field p_post_monitored must be a "
        "probability, a finite number in [0, 1], got 50.0",
    )  # fmt: skip


@pytest.mark.parametrize("value", [1.7, -0.1, float("nan"), float("inf")])
def test_a_step_probability_outside_0_1_isrefused(bundles, tmp_path, laptop, capsys, value):
    def bad_p(frames: Frames) -> None:  # p1's third draw; a higher p_post is no counterexample
        frames["run_steps"].loc[3, "p_post"] = value

    members, frames = read_frames(bundles["table"])
    bad_p(frames)
    if value == 1.7:  # self-consistent forgery
        recompute(frames)
    bad = write_frames(members, frames, tmp_path / "p.zip")
    refused(capsys, bad, laptop, "run_steps.parquet row 4", "field p_post must be a probability")


def test_a_cached_score_outside_0_1_isrefused(bundles, tmp_path, laptop, capsys):
    members, frames = read_frames(bundles["table"])
    frames["score_cache"].loc[0, "p_true"] = 1.5
    bad = write_frames(members, frames, tmp_path / "cache.zip")
    refused(capsys, bad, laptop, "score_cache.parquet row 1: field p_true")


# -- duplicate step keys are a bundle error, not a database one ----------------------------------
def test_duplicate_step_keys_read_as_a_bundle_error(bundles, tmp_path, laptop, capsys):
    members, frames = read_frames(bundles["table"])
    steps = frames["run_steps"]
    frames["run_steps"] = pd.concat([steps, steps.iloc[[4]]], ignore_index=True)
    bad = write_frames(members, frames, tmp_path / "dup.zip")
    err = refused(capsys, bad, laptop, "run_steps.parquet row 14", "duplicate step key")
    assert "Constraint Error" not in err


def test_the_store_refuses_duplicate_step_keys_as_an_input_error(bundles, tmp_path):
    """Below the bundle check, the store's own key still answers with an InputError."""
    _, frames = read_frames(bundles["table"])
    steps = frames["run_steps"]
    frames["run_steps"] = pd.concat([steps, steps.iloc[[4]]], ignore_index=True)
    db = tmp_path / "direct.duckdb"
    with Store(db) as store:
        with pytest.raises(InputError, match="run_steps: .*duplicate"):
            write_run_rows(store, frames, {"file": "x.zip"})
        assert store.runs().empty


# -- a model run: every test draw is one of the bundle's own paraphrases --------------------------
def test_a_test_text_outside_the_pair_s_pool_isrefused(bundles, tmp_path, laptop, capsys):
    def invent(frames: Frames) -> None:
        steps = frames["run_steps"]
        i = steps[steps["stage"] == 2].index[0]
        steps.loc[i, "text"] = "a rewording nobody generated"

    bad, _ = tampered(bundles["model"], tmp_path, invent)
    refused(capsys, bad, laptop, "field text is not one of the 4", "paraphrases.parquet")


def test_a_control_character_in_a_bundle_text_isrefused(bundles, tmp_path, laptop, capsys):
    members, frames = read_frames(bundles["model"])
    frames["run_steps"].loc[0, "text"] = "\x1b[2Jcleared"
    bad = write_frames(members, frames, tmp_path / "esc.zip")
    refused(capsys, bad, laptop, "run_steps.parquet row 1", "control character \\x1b")


def test_a_truncated_generator_isrefused(bundles, tmp_path, laptop, capsys):
    """Dropping the last draws of a finished test (and renumbering nothing) is caught by the
    replay: the test never reached its stop."""
    members, frames = read_frames(bundles["table"])
    steps = frames["run_steps"]
    last = steps[(steps["pair_id"] == "p1") & (steps["stage"] == 2)]["t"].idxmax()
    frames["run_steps"] = steps.drop(index=last).reset_index(drop=True)
    bad = write_frames(members, frames, tmp_path / "short.zip")
    refused(capsys, bad, laptop, "p1")


@pytest.mark.parametrize(
    ("table", "column", "value", "says"),
    [
        ("run_steps", "p_pre", 1.7, "table run_steps row 1: field p_pre must be a probability"),
        ("run_pairs", "p_post_monitored", 50.0, "field p_post_monitored must be a probability"),
        ("run_steps", "stage", 9, "table run_steps row 1: field stage must be 1 or 2"),
        ("score_cache", "p_true", float("nan"), "field p_true must be a probability"),
    ],
)
def test_the_store_refuses_rows_a_check_constraint_would(
    bundles, tmp_path, table, column, value, says
):
    """write_run_rows, below the bundle check (a derived run goes through it too), refuses
    what CHECK constraints would; control: the same rows unedited are stored."""
    _, frames = read_frames(bundles["table"])
    frames[table].loc[0, column] = value
    with Store(tmp_path / "direct.duckdb") as store:
        with pytest.raises(InputError, match=says):
            write_run_rows(store, frames, {"file": "x.zip"})
        assert store.runs().empty
        _, clean = read_frames(bundles["table"])
        assert write_run_rows(store, clean, {"file": "x.zip"})


def test_a_search_step_outside_the_run_s_search_generators_or_pool_isrefused(
    bundles, tmp_path, laptop, capsys
):
    def foreign(frames: Frames) -> None:
        steps = frames["run_steps"]
        steps.loc[steps.index[steps["stage"] == 1][0], "generator"] = "elsewhere"

    bad, _ = tampered(bundles["model"], tmp_path, foreign)
    refused(capsys, bad, laptop, "field generator 'elsewhere' is not a search generator")

    def invent(frames: Frames) -> None:
        steps = frames["run_steps"]
        steps.loc[steps.index[steps["stage"] == 1][0], "text"] = "a search nobody generated"

    bad, _ = tampered(bundles["model"], tmp_path, invent)
    refused(capsys, bad, laptop, "field text is not one of the", "search paraphrases")


@pytest.mark.parametrize("kind", ["table", "model"])
def test_a_done_run_with_a_pair_dropped_isrefused(bundles, tmp_path, laptop, capsys, kind):
    members, frames = read_frames(bundles[kind])
    started = [str(p) for p in frames["run_pairs"]["pair_id"]]
    gone = started[-1]
    frames["run_pairs"] = frames["run_pairs"][frames["run_pairs"]["pair_id"] != gone]
    frames["run_steps"] = frames["run_steps"][frames["run_steps"]["pair_id"] != gone]
    bad = write_frames(members, frames, tmp_path / "dropped.zip")
    refused(capsys, bad, laptop, "runs.parquet row 1: field n_pairs says")
    if kind == "model":  # n_pairs edited too: the pairs a model run was started on still tell
        frames["runs"].loc[0, "n_pairs"] = len(frames["run_pairs"])
        frames["runs"].loc[0, "source"] = json.dumps({"kind": "models", "pair_ids": started})
        bad = write_frames(members, frames, tmp_path / "dropped2.zip")
        refused(capsys, bad, laptop, f"field source lists pair {gone}")


def test_a_failed_run_s_error_message_may_hold_a_server_s_crlf(bundles, tmp_path, laptop, capsys):
    """Control for the control-character refusal: a run's error text is a message, shown
    escaped, not evidence; a bundle carrying one imports."""
    members, frames = read_frames(bundles["table"])
    frames["runs"].loc[0, "error"] = "EndpointError: HTTP 502\r\n<html>bad gateway</html>"
    bad = write_frames(members, frames, tmp_path / "error.zip")
    code, _, err = _run(capsys, "import-run", str(bad), "--db", str(laptop))
    assert code == 0, err
