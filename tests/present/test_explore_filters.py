"""In the library: the Explorer's filters on the reading against the control (known paired
differences, the interval by its closed form) and on whether the adaptation took on a
question (its monitored gain against k)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from eraudit_core import present
from eraudit_core.store import Store
from tests._control_pair import DIFFS, arm_and_control


@pytest.fixture(name="arm_and_control")
def _arm_and_control(tmp_path: Path) -> tuple[Store, str, str]:
    store = Store()
    arm, control = arm_and_control(store, tmp_path)
    return store, arm, control


def test_null_verdicts_filter_the_questions_as_the_paired_t_test_reads_them(arm_and_control):
    store, arm, control = arm_and_control
    reading = present.control_reading(store, arm)
    assert reading is not None and not reading["mismatches"]
    q = present.with_null_verdicts(present.explorer_questions(store, arm), reading)
    got = dict(zip(q["pair_id"], q["null_verdict"], strict=True))
    assert got == {
        "q_worse": "beyond control",
        "q_better": "better than control",
        "q_within": "within control",
        "q_few": "not assessable",
    }
    beyond = present.filter_questions(q, null_verdicts=["beyond control"])
    assert beyond["pair_id"].tolist() == ["q_worse"]
    two = present.filter_questions(q, null_verdicts=["within control", "not assessable"])
    assert set(two["pair_id"]) == {"q_within", "q_few"}
    assert len(present.filter_questions(q)) == 4
    # a control names no control of its own: no reading, and the filter refuses to guess
    assert present.control_reading(store, control) is None
    plain = present.explorer_questions(store, control)
    with pytest.raises(ValueError, match="not read against a control"):
        present.filter_questions(plain, null_verdicts=["beyond control"])


def test_one_questions_reading_in_words_carries_the_mean_and_its_interval(arm_and_control):
    store, arm, _ = arm_and_control
    reading = present.control_reading(store, arm)
    d = np.array(DIFFS["q_worse"])
    half = stats.t.ppf(0.95, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    low, high = 100 * (d.mean() - half), 100 * (d.mean() + half)
    sentence = present.null_detail_sentence(reading, "q_worse")
    assert sentence == (
        "Against the control: beyond control. On 6 paired rewordings this run's p(true) is "
        "10.00 points below the control's on average (90% interval of control minus this run: "
        f"{low:+.2f} to {high:+.2f} points). The control: control."
    )
    assert "points above the control's" in present.null_detail_sentence(reading, "q_better")
    few = present.null_detail_sentence(reading, "q_few")
    assert few.startswith("Against the control: not assessable (3 paired rewordings;")
    assert present.null_detail_sentence(reading, "no-such-question") is None


def test_took_here_selects_the_questions_whose_monitored_gain_is_above_k(arm_and_control):
    store, arm, control = arm_and_control
    q = present.explorer_questions(store, arm)
    took = present.filter_questions(q, took=present.TOOK_HERE)["pair_id"].tolist()
    not_took = present.filter_questions(q, took=present.NOT_TOOK_HERE)["pair_id"].tolist()
    assert sorted(took) == ["q_within", "q_worse"] and sorted(not_took) == ["q_better", "q_few"]
    assert len(present.filter_questions(q, took=present.TOOK_ANY)) == 4
    with pytest.raises(ValueError, match="not one of"):
        present.filter_questions(q, took="sometimes")
    # half of the arm's gains are at or below k: not "fewer than half", so the run did not take
    took_run, sentence = present.took_notice(store, arm)
    assert not took_run
    assert sentence.startswith("Did the adaptation take? No:")
    assert "2 of 4 monitored gains at or below k = 0.001" in sentence
    took_run, sentence = present.took_notice(store, control)
    assert took_run and sentence.startswith("Did the adaptation take? Yes:")
    assert "0 of 4 monitored gains at or below k" in sentence


def test_a_linked_question_is_listed_first_only_when_the_filters_leave_it_out(arm_and_control):
    store, arm, _ = arm_and_control
    q = present.explorer_questions(store, arm)
    shown = present.filter_questions(q, took=present.TOOK_HERE)
    assert set(shown["pair_id"]) == {"q_worse", "q_within"}
    got = present.with_linked(shown, q, "q_few")["pair_id"].tolist()
    assert got[0] == "q_few" and sorted(got[1:]) == ["q_within", "q_worse"]
    assert present.with_linked(shown, q, "q_worse") is shown
    assert present.with_linked(shown, q, None) is shown
