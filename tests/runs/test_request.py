"""A run's one description: AuditConfig's field metadata, the demo preset, EpsilonSource and
RunRequest, and what a prepared run records from its request."""

from __future__ import annotations

import math
from dataclasses import fields, replace

import pytest

from eraudit_core.errors import InputError
from eraudit_core.method import (
    DEMO_PRESET,
    AuditConfig,
    Cli,
    Range,
    Section,
    config_settings,
    field_help,
    setting_named,
    settings,
    verdict_fields,
)
from eraudit_core.null import calibrate_epsilon
from eraudit_core.runs import EpsilonSource, RunRequest, epsilon_source, prepare_model_run
from eraudit_core.store import Store, load_bundled_benchmark
from eraudit_core.types import Paraphrase
from eraudit_core.verifier import MIN_LABEL_MASS
from tests import _synthetic as synthetic


def test_every_field_is_a_declared_setting_with_help_and_a_label() -> None:
    declared = settings()
    assert [s.name for s in declared] == [f.name for f in fields(AuditConfig)]
    for s in declared:
        assert s.spec.help.strip() and s.spec.label.strip(), s.name
        assert s.default == getattr(AuditConfig(), s.name), s.name
        # a hidden setting or one the CLI does not offer says why
        assert s.spec.form.section != Section.HIDDEN or s.spec.form.reason, s.name
        assert s.spec.cli != Cli.NOT_AN_OPTION or s.spec.cli_reason, s.name
    assert field_help("epsilon").startswith("A paraphrase is a counterexample when D > epsilon")
    with pytest.raises(InputError, match="no field 'eps'"):
        field_help("eps")


def test_the_verdict_fields_are_the_rule_not_the_plumbing() -> None:
    got = set(verdict_fields())
    rule = {"epsilon", "k", "confidence", "search_budget", "test_budget", "target", "tv_delta"}
    rule |= {"stop_at_target", "min_drop", "continue_after_counterexample", "tolerant_prior"}
    rule |= {"search_generators", "test_generators"}
    assert got == rule
    plumbing = {"batch_size", "use_imported_scores", "min_label_mass", "prompt_template"}
    assert not got & plumbing


def _outside(r: Range) -> list[float]:
    out = []
    if r.low is not None:
        out.append(r.low if r.low_open else r.low - 1e-9 * max(1, abs(r.low)) - (r.low == 0) * 1)
    if r.high is not None:
        out.append(r.high if r.high_open else r.high + 1e-6)
    return out


def _inside(r: Range) -> list[float]:
    lo, hi = r.low, r.high
    if lo is not None and hi is not None:
        return [(lo + hi) / 2] + ([] if r.low_open else [lo]) + ([] if r.high_open else [hi])
    if lo is not None:
        return [lo + 1] + ([] if r.low_open else [lo])
    return [0.0, -3.0, 3.0]


RANGED = [s.name for s in settings() if isinstance(s.spec.valid, Range)]


@pytest.mark.parametrize("name", RANGED)
def test_each_stated_range_is_what_the_config_accepts(name: str) -> None:
    """The range the form and the CLI show is the one AuditConfig enforces: a value just
    outside it is refused by name, values inside it (its closed ends included) are kept."""
    r = setting_named(name).spec.valid
    assert isinstance(r, Range)
    base = AuditConfig(target=None)
    integer = isinstance(getattr(AuditConfig(draw_seed=0), name), int)

    def make(x: float) -> AuditConfig:
        x = int(x) if integer else x
        value = (x, 1.0) if name == "tolerant_prior" else x
        return replace(base, **{name: value})

    for x in _inside(r):
        assert x in r
        make(x)
    for x in _outside(r):
        assert x not in r
        with pytest.raises(InputError, match=f"AuditConfig.{name}"):
            make(x)


def test_range_membership_and_text() -> None:
    assert str(Range(0.0, 1.0, low_open=True, high_open=True)) == "(0, 1)"
    assert str(Range(0.0, 1.0, high_open=True)) == "[0, 1)"
    assert str(Range(1)) == ">= 1" and str(Range(0.0, None, low_open=True)) == "> 0"
    assert (
        0.5 in Range(0.0, 1.0)
        and 1.0 in Range(0.0, 1.0)
        and 1.0 not in Range(0.0, 1.0, False, True)
    )
    assert math.nan not in Range() and True not in Range() and "1" not in Range()


def test_min_label_mass_default_is_the_verifier_constant() -> None:
    assert AuditConfig().min_label_mass == MIN_LABEL_MASS


def test_the_demo_preset_is_one_config_the_demo_settings_derive_from() -> None:
    from eraudit_core.demo import DEMO_AUDIT_SETTINGS, demo_live_config

    assert (DEMO_PRESET.epsilon, DEMO_PRESET.target, DEMO_PRESET.confidence) == (0.5, 0.8, 0.95)
    assert (DEMO_PRESET.test_budget, DEMO_PRESET.batch_size) == (40, 8)
    # p* 0.8 at confidence 0.95: n* = ceil(ln 0.05 / ln 0.8) = ceil(13.43) = 14
    assert DEMO_PRESET.n_star == 14
    live = demo_live_config()
    assert replace(live, search_budget=DEMO_PRESET.search_budget, test_budget=40) == DEMO_PRESET
    assert (live.search_budget, live.test_budget, live.batch_size) == (8, 16, 8)
    finished = AuditConfig.from_dict(DEMO_AUDIT_SETTINGS)
    assert finished.test_budget == 15
    assert replace(finished, test_budget=40, batch_size=8) == DEMO_PRESET
    # the library's own defaults stay the library's
    assert AuditConfig().epsilon == 0.1 and AuditConfig().target is None


def test_settings_text_covers_every_field() -> None:
    rows = dict(config_settings(replace(DEMO_PRESET, draw_seed=7)))
    assert len(rows) == len(fields(AuditConfig))
    assert rows["Tolerance epsilon"] == "0.5" and rows["Target p*"] == "0.8"
    assert rows["Test-draw seed"] == "7" and rows["Stop early at p*"] == "yes"
    plain = dict(config_settings(AuditConfig()))
    assert plain["Target p*"] == "none" and plain["Stop early at p*"] == "no (no target)"
    assert plain["Test-draw seed"] == "score-table order"


RECORD = {
    "calibration": "organism",
    "percentile": "p25",
    "value": 0.25,
    "calibration_run": "run-cal",
    "n": 40,
    "n_overlap": 0,
    "selection": False,
}


def test_epsilon_source_round_trips_its_record_and_keeps_unknown_fields() -> None:
    src = EpsilonSource.from_record(RECORD)
    assert (src.value, src.calibration, src.source_run) == (0.25, "organism", "run-cal")
    # a record from before calibrations had modes is a percentile of D: organism mode
    assert src.mode == "organism" and src.details["percentile"] == "p25"
    assert src.to_record() == {**RECORD, "mode": "organism"} and src.spec == "organism:p25"
    # a calibration that records more (another mode, its level, its source) keeps it all
    null = {
        **RECORD,
        "mode": "null",
        "percentile": None,
        "level": 0.95,
        "source_run": {"run_id": "run-cal", "verified": True},
    }
    again = EpsilonSource.from_record(null)
    assert again.mode == "null" and again.to_record() == null and again.spec == "organism"
    assert EpsilonSource.stated(0.3).to_record() is None
    with pytest.raises(InputError, match="missing calibration_run"):
        EpsilonSource.from_record({k: v for k, v in RECORD.items() if k != "calibration_run"})
    with pytest.raises(InputError, match="finite"):
        EpsilonSource.stated(math.inf)


def test_run_request_validates_and_takes_epsilon_from_its_source() -> None:
    src = EpsilonSource.from_record(RECORD)
    req = RunRequest("b", " demo:base ", "demo:honest", AuditConfig(epsilon=0.1), epsilon=src)
    assert req.config.epsilon == 0.25 and req.pre_spec == "demo:base"
    assert req.provenance() == {"epsilon_from": {**RECORD, "mode": "organism"}}
    stated = RunRequest("b", "a", "c", AuditConfig(epsilon=0.4), control="run-x", noise_floor=0.02)
    assert stated.epsilon_source == EpsilonSource.stated(0.4)
    prov = stated.provenance()
    assert prov["control_run"] == "run-x" and prov["noise_floor"]["value"] == 0.02
    assert "epsilon_from" not in prov
    for bad, match in (
        ({"limit": 0}, "limit"),
        ({"pre_spec": " "}, "pre_spec"),
        ({"noise_floor": 1.5}, "noise-floor"),
        ({"pair_ids": "p1"}, "pair_ids"),
    ):
        with pytest.raises(InputError, match=match):
            RunRequest(**{"benchmark": "b", "pre_spec": "a", "post_spec": "c", **bad})  # type: ignore[arg-type]


def _store_with_pool() -> tuple[Store, str, str]:
    store = Store()
    bench = load_bundled_benchmark()
    bid = store.add_benchmark(bench)
    pid = bench.pairs[0].pair_id
    pool = [Paraphrase(pid, "test", "g", i, f"rewrite number {i}") for i in range(6)]
    store.add_paraphrases(bid, pool, {"source": "test"})
    return store, bid, pid


def test_a_prepared_run_records_what_its_request_says() -> None:
    store, bid, pid = _store_with_pool()
    info = synthetic.build_synthetic_store(store, n_pairs=2, n_search=2, n_test=3)
    control = info.run_ids["honest"]
    # an organism calibration (percentiles of D on the arm known to be degraded); low
    # percentiles of these small synthetic runs are negative, which is refused
    organism = info.run_ids["adversarial"]
    cal = calibrate_epsilon(store, organism, [90.0], name="organism-cal")
    source, warnings = epsilon_source(store, "organism-cal:p90")
    assert warnings == [] and source.value == pytest.approx(cal.percentiles["p90"])
    assert source.value > 0
    req = RunRequest(
        bid, "demo:base", "demo:honest", AuditConfig(), pair_ids=(pid,), label="mine",
        control=control, epsilon=source, noise_floor=0.01,
    )  # fmt: skip
    run_id, items, config = prepare_model_run(store, req)
    run = store.run(run_id)
    assert [it.pair_id for it in items] == [pid] and run["label"] == "mine"
    assert run["config"]["epsilon"] == config.epsilon == source.value
    prov = run["provenance"]
    assert prov["epsilon_from"] == source.to_record()
    assert prov["epsilon_from"]["calibration_run"] == organism
    assert prov["control_run"] == control and prov["noise_floor"]["value"] == 0.01
    # negative control: a stated epsilon records no calibration
    plain, _, _ = prepare_model_run(store, replace(req, epsilon=None, control=None))
    assert "epsilon_from" not in store.run(plain)["provenance"]


def test_an_unknown_control_run_leaves_no_run_behind() -> None:
    store, bid, pid = _store_with_pool()
    before = len(store.runs())
    with pytest.raises(InputError, match="no-such-run"):
        prepare_model_run(store, RunRequest(bid, "demo:base", "demo:honest", control="no-such-run"))
    assert len(store.runs()) == before
