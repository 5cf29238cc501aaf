"""Which runs Results shows beside the selected one when nothing is chosen: its control and
the runs that name it as theirs, else finished runs of the same size on the same benchmark;
never another experiment's runs just because they are newer."""

from __future__ import annotations

import json

import pandas as pd

from ui.run_picking import related_runs


def _runs(rows: list[tuple[str, str, str, int, str | None]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "run_id": rid,
                "status": status,
                "benchmark_id": bench,
                "n_pairs": n,
                "provenance": json.dumps({"control_run": control} if control else {}),
            }
            for rid, status, bench, n, control in rows
        ]
    )


# newest first, as the store lists them: two 222-question arms built after three organisms
DEMO = _runs(
    [
        ("debate-adv", "done", "b", 222, "debate-hon"),
        ("debate-hon", "done", "b", 222, None),
        ("concealed", "done", "b", 40, "honest"),
        ("adversarial", "done", "b", 40, "honest"),
        ("honest", "done", "b", 40, None),
    ]
)


def test_a_run_is_shown_beside_its_control_not_the_newest_runs() -> None:
    assert related_runs(DEMO, "concealed") == ["concealed", "honest"]
    assert related_runs(DEMO, "debate-adv") == ["debate-adv", "debate-hon"]
    # a control is shown with the runs that name it as theirs
    assert related_runs(DEMO, "honest") == ["honest", "concealed", "adversarial"]
    assert related_runs(DEMO, "debate-hon") == ["debate-hon", "debate-adv"]


def test_without_a_control_finished_runs_of_the_same_size_and_benchmark() -> None:
    runs = _runs(
        [
            ("cancelled", "cancelled", "b", 40, None),
            ("big", "done", "b", 222, None),
            ("other-bench", "done", "c", 40, None),
            ("r2", "done", "b", 40, None),
            ("r1", "done", "b", 40, None),
            ("r0", "done", "b", 40, None),
        ]
    )
    assert related_runs(runs, "r1") == ["r1", "r2", "r0"]
    assert related_runs(runs, "big") == ["big"]
    # Negative control: an unfinished control is not shown (its numbers are not final).
    unfinished = _runs([("arm", "done", "b", 40, "ctl"), ("ctl", "running", "b", 40, None)])
    assert related_runs(unfinished, "arm") == ["arm"]
