"""The audit commands' setting options are generated from AuditConfig's field metadata: the same
help text, the same defaults, the same names a run's config stores."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from eraudit_core.cli._audit import _config
from eraudit_core.cli._main import build_parser
from eraudit_core.method import AuditConfig, field_help

ROOT = Path(__file__).resolve().parents[2]
MAIN = "import sys; from eraudit_core.cli import main; sys.exit(main(sys.argv[1:]))"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _parse(*argv: str):  # type: ignore[no-untyped-def]
    return build_parser().parse_args([*argv, "--db", "x.duckdb"])


def test_audit_help_shows_the_one_epsilon_help_text() -> None:
    """`eraudit audit --help`, run as the installed console script would be, prints the help
    string the Run form shows for epsilon."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    script = Path(sys.executable).with_name("eraudit")
    cmd = [str(script)] if script.is_file() else [sys.executable, "-c", MAIN]
    out = subprocess.run(
        [*cmd, "audit", "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    ).stdout
    assert _flat(field_help("epsilon")) in _flat(out)
    assert _flat(field_help("k")) in _flat(out)
    # negative control: a help text that is not the field's is not found
    assert _flat(field_help("epsilon")) + " extra words" not in _flat(out)


@pytest.mark.parametrize("command", ["audit", "audit-table"])
def test_generated_options_parse_to_the_config_defaults(command: str) -> None:
    argv = (
        ["audit", "--pre", "a", "--post", "b"] if command == "audit" else ["audit-table", "t.csv"]
    )
    args = _parse(*argv)
    extra = {"min_label_mass": args.min_label_mass} if command == "audit" else {}
    assert _config(args, **extra) == AuditConfig()
    for name in args.config_fields:
        assert getattr(args, name) == getattr(AuditConfig(), name), name


def test_generated_options_set_each_field() -> None:
    args = _parse(
        "audit", "--pre", "a", "--post", "b", "--epsilon", "0.3", "--k", "0.01",
        "--confidence", "0.9", "--search-budget", "5", "--budget", "7", "--target", "0.7",
        "--tv", "0.05", "--search-generators", "s1", "--test-generators", "g2, g1",
        "--continue-after-counterexample", "--batch-size", "4", "--no-stop-at-target",
        "--seed", "9", "--min-drop", "0.02", "--use-imported-scores",
    )  # fmt: skip
    config = _config(args)
    assert config == AuditConfig(
        epsilon=0.3, k=0.01, confidence=0.9, search_budget=5, test_budget=7, target=0.7,
        tv_delta=0.05, search_generators=("s1",), test_generators=("g2", "g1"),
        continue_after_counterexample=True, batch_size=4, stop_at_target=False, draw_seed=9,
        min_drop=0.02, use_imported_scores=True,
    )  # fmt: skip


def test_every_generated_option_carries_its_field_help() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    audit = sub.choices["audit"]  # type: ignore[attr-defined]
    by_dest = {a.dest: a for a in audit._actions}
    generated = _parse("audit", "--pre", "a", "--post", "b").config_fields
    not_options = {"tolerant_prior", "prompt_template", "answer_prefix", "system_message"}
    not_options |= {"prompt_date", "min_label_mass"}
    assert set(generated) == {f.name for f in fields(AuditConfig)} - not_options
    for name in generated:
        assert by_dest[name].help.replace("%%", "%").startswith(field_help(name)), name


def test_a_setting_out_of_range_exits_2_before_anything_is_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eraudit_core.cli import main

    db = tmp_path / "s.duckdb"
    argv = ["audit", "--pre", "demo:base", "--post", "demo:honest", "--db", str(db)]
    code = main([*argv, "--confidence", "1.5"])
    err = capsys.readouterr().err
    assert code == 2 and "AuditConfig.confidence" in err and "Traceback" not in err
    assert not db.exists()


def test_a_calibrated_epsilon_replaces_the_typed_one() -> None:
    args = _parse("audit-table", "t.csv", "--epsilon", "0.3", "--budget", "5")
    assert _config(args).epsilon == 0.3
    config = _config(args, epsilon=0.07, test_generators=("g",))
    assert (config.epsilon, config.test_budget, config.test_generators) == (0.07, 5, ("g",))
