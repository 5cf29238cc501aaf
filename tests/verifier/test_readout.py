"""Readout profiles and the label-mass check on four real architectures (docs/design.md §3).

Each family's tiny model (tests/_family_models.py: real config class, the family's special
tokens, a chat template in the family's format) answers at its own slot. The tests check the
exact text read, the read position, the label tokens, detection, and the label-mass check,
each with a negative control: the same model read at a wrong slot fails the check.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from eraudit_core.errors import InputError
from eraudit_core.store import Store
from eraudit_core.verifier import (
    DEFAULT_TEMPLATE,
    PROBE,
    PROBE_SET,
    CheckpointSpec,
    ServedSpec,
    check_label_mass,
    detect_readout,
    get_readout,
    load_verifier,
    probe_label_mass,
    probe_top_share,
    prompt_label_masses,
    render_messages,
    summarise_label_mass,
)
from eraudit_core.verifier._chat import chat_format
from eraudit_core.verifier._readout import complete_prefill
from tests._family_models import FAMILIES, QWEN35_TEMPLATE, build_family_checkpoint

DAY = dt.date(2026, 12, 1)
USER = render_messages(PROBE, DEFAULT_TEMPLATE)[0]
# The exact text read for the probe (true option as A), written out by hand from each
# family's format: the slot the reference code reads at, then the answer prefix.
EXPECTED = {
    "gpt-oss": (
        "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
        "Knowledge cutoff: 2024-06\nCurrent date: 2026-12-01\n\nReasoning: medium\n\n"
        "# Valid channels: analysis, commentary, final. Channel must be included for every "
        f"message.<|end|><|start|>user<|message|>{USER}<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Answer:"
    ),
    "qwen3": (
        f"<|im_start|>user\n{USER}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nAnswer:"
    ),
    "llama3": (
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        "Cutting Knowledge Date: December 2023\nToday Date: 01 Dec 2026\n\n<|eot_id|>"
        f"<|start_header_id|>user<|end_header_id|>\n\n{USER}<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nAnswer:"
    ),
    "gemma3": f"<bos><start_of_turn>user\n{USER}<end_of_turn>\n<start_of_turn>model\nAnswer:",
}
# The slot the studio read every model at before profiles: generation prompt + `Answer:`.
# For Llama and Gemma that is their own slot; for them the wrong slot is the bare
# generation prompt (where they write "Answer", as the reference's native prefill implies).
WRONG = {
    "gpt-oss": {"readout": "chat-answer"},
    "qwen3": {"readout": "chat-answer"},
    "llama3": {"prefix": ""},
    "gemma3": {"prefix": ""},
}


@pytest.fixture(scope="module")
def family_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("families")
    return {name: build_family_checkpoint(name, root / name) for name in FAMILIES}


def _load(directory: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    return load_verifier(str(directory), device="cpu", dtype="float32", today=DAY, **kwargs)


# -- profiles, detection, spec ----------------------------------------------------------------


def test_detection_reads_template_markers_before_model_type() -> None:
    chatml = "{% for m in messages %}<|im_start|>{{ m['role'] }}{% endfor %}"
    assert detect_readout(FAMILIES["gpt-oss"].template).name == "harmony-final"
    assert detect_readout(FAMILIES["qwen3"].template).name == "qwen-think-off"
    assert detect_readout(QWEN35_TEMPLATE).name == "qwen-think-off"
    assert detect_readout(FAMILIES["llama3"].template, "llama").name == "llama3-answer"
    assert detect_readout(FAMILIES["gemma3"].template).name == "gemma-answer"
    # SmolLM2: model_type llama, ChatML template -> the markers decide
    assert detect_readout(chatml, "llama").name == "chat-answer"
    assert detect_readout(None, "gpt_oss").name == "plain"
    # a template without known markers falls back on model_type, then chat-answer
    assert detect_readout("{{ messages }}", "gpt_oss").name == "harmony-final"
    assert detect_readout("{{ messages }}", "qwen3").name == "qwen-think-off"
    assert detect_readout("{{ messages }}", "llama").name == "chat-answer"


def test_prefill_completes_what_the_template_already_wrote() -> None:
    think = get_readout("qwen-think-off").prefill
    assert complete_prefill("x<|im_start|>assistant\n", think) == "x<|im_start|>assistant\n" + think
    assert complete_prefill("a\n<think>\n", think) == "a\n" + think  # Qwen3.5 opens it
    assert complete_prefill("a\n" + think, think) == "a\n" + think  # Qwen3 think-off wrote it
    harmony = get_readout("harmony-final").prefill
    assert complete_prefill("<|start|>assistant", harmony).endswith(
        "<|start|>assistant<|channel|>final<|message|>"
    )


def test_specs_carry_a_readout_and_refuse_unknown_ones(tmp_path: Path) -> None:
    spec = CheckpointSpec.parse("demo:honest;readout=harmony-final")
    assert spec.readout == "harmony-final" and spec.text == "demo:honest;readout=harmony-final"
    assert CheckpointSpec.parse(spec.text) == spec
    assert spec.base == CheckpointSpec.parse("demo:base")  # one model in memory either way
    with pytest.raises(InputError, match="readout 'nope': unknown; use one of harmony-final"):
        CheckpointSpec.parse("demo:base;readout=nope")
    with pytest.raises(InputError, match="only ;readout=NAME"):
        CheckpointSpec.parse("demo:base;top_k=3")
    served = ServedSpec.parse("http://127.0.0.1:9/v1#m;tokenizer=demo:base;readout=plain")
    assert served.readout == "plain" and ServedSpec.parse(served.text) == served
    with pytest.raises(InputError, match="readout 'x': unknown"):
        ServedSpec.parse("http://127.0.0.1:9/v1#m;tokenizer=demo:base;readout=x")


class _SpreadVerifier:
    """Labels at `mass` of the probability on every probe prompt, on top on `on_top` of them."""

    name = "spread"

    def __init__(self, mass: float, on_top: list[bool] | None) -> None:
        import math
        from types import SimpleNamespace

        from eraudit_core.types import QueryScore

        half = math.log(mass / 2)
        self._score = QueryScore(0.5, (half, half, half, half))
        self.format = SimpleNamespace(readout=get_readout("chat-answer"), detected="chat-answer")
        if on_top is not None:
            self.top_is_label = lambda queries: on_top[: 2 * len(queries)]

    def score(self, queries: list) -> list:
        return [self._score for _ in queries]


def test_low_mass_passes_only_where_a_label_is_the_most_likely_token() -> None:
    """The rule behind the demo's honest arm (mass 0.28, labels on top everywhere): below the
    mass threshold the check passes when a label tops more than half of the probe prompts,
    and refuses at half or less, or when the backend cannot say."""
    n = 2 * len(PROBE_SET)
    passed = check_label_mass(_SpreadVerifier(0.28, [True] * n))
    assert passed["median"] == pytest.approx(0.28) and passed["top_share"] == 1.0
    half = [True, False] * (n // 2)
    with pytest.raises(InputError, match="on only 50% of them"):
        check_label_mass(_SpreadVerifier(0.28, half))
    with pytest.raises(InputError, match="below the minimum label mass 0.5: the label"):
        check_label_mass(_SpreadVerifier(0.28, None))  # a table cannot say: mass alone
    # above the threshold the second signal is not asked for
    assert "top_share" not in check_label_mass(_SpreadVerifier(0.8, [False] * n))


def test_label_mass_summary_is_the_sum_of_both_label_probabilities() -> None:
    import math

    masses = prompt_label_masses((math.log(0.5), math.log(0.25), math.log(0.01), math.log(0.02)))
    assert masses == pytest.approx((0.75, 0.03))
    assert summarise_label_mass([0.75, 0.03, 0.5]) == {"median": 0.5, "min": 0.03, "n": 3}
    assert summarise_label_mass([]) == {"median": None, "min": None, "n": 0}


# -- per family --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(FAMILIES))
def test_each_family_is_read_at_its_own_slot(name: str, family_dirs: dict[str, Path]) -> None:
    family = FAMILIES[name]
    v = _load(family_dirs[name])
    assert v.format.readout.name == family.readout == v.describe()["readout"]
    ab, _ = v.render(PROBE)
    assert ab == EXPECTED[name]
    # the read position is the last prompt token, the end of the answer prefix
    tok = v._base.tokenizer
    ids = tok(ab, add_special_tokens=False).input_ids
    assert tok.decode(ids[-1:]).endswith(":")
    labels = v.describe()["label_tokens"]
    assert [len(x) for x in labels] == [1, 1] and labels[0] != labels[1]
    assert [tok.decode(x) for x in labels] == [" A", " B"]
    mass = check_label_mass(v)  # passes
    assert mass["n"] == 2 * len(PROBE_SET) and mass["median"] > 0.5
    # the fast path reads the same position as the one-prompt-at-a-time reference
    fast = v.label_logprobs(list(PROBE_SET))
    naive = v.label_logprobs(list(PROBE_SET), naive=True)
    assert float((fast - naive).abs().max()) < 1e-4


@pytest.mark.parametrize("name", list(FAMILIES))
def test_each_family_read_at_a_wrong_slot_fails_the_check(
    name: str, family_dirs: dict[str, Path]
) -> None:
    right = probe_label_mass(_load(family_dirs[name]))
    wrong_v = _load(family_dirs[name], **WRONG[name])  # type: ignore[arg-type]
    wrong = probe_label_mass(wrong_v)
    assert right["median"] > 0.5 > wrong["median"], (right, wrong)
    # the second signal agrees: at the wrong slot a label is not the most likely next token
    assert probe_top_share(_load(family_dirs[name])) > 0.5 >= probe_top_share(wrong_v)
    with pytest.raises(InputError, match=r"below the minimum label mass 0.5, and a label is its"):
        check_label_mass(wrong_v)
    check_label_mass(wrong_v, minimum=0.0)  # the threshold is the user's to lower


def test_registration_refuses_the_wrong_readout_and_names_the_right_one(
    family_dirs: dict[str, Path], tmp_path: Path
) -> None:
    from eraudit_core.runs import register_checkpoint

    wrong = _load(family_dirs["gpt-oss"], readout="chat-answer")
    with Store(tmp_path / "s.duckdb") as store:
        with pytest.raises(InputError, match=r"readout 'chat-answer'.*Try ;readout=harmony-final"):
            register_checkpoint(store, wrong, wrong.name)
        assert store.checkpoints().empty  # nothing registered
        right = _load(family_dirs["gpt-oss"])
        details = register_checkpoint(store, right, right.name)
        assert details["readout"] == "harmony-final"
        assert details["label_mass"]["n"] == 16 and details["label_mass"]["median"] > 0.5
        stored = json.loads(store.checkpoints()["details"].iloc[0])
        assert stored["label_mass"] == details["label_mass"]


# -- dates and cache keys ---------------------------------------------------------------------


def test_a_date_embedding_template_is_pinned_and_keys_the_cache(
    family_dirs: dict[str, Path],
) -> None:
    one = _load(family_dirs["llama3"])
    other = load_verifier(
        str(family_dirs["llama3"]), device="cpu", dtype="float32", today=dt.date(2026, 12, 2)
    )
    assert one.format.pinned_date == DAY and "Today Date: 01 Dec 2026" in one.render(PROBE)[0]
    assert "Today Date: 02 Dec 2026" in other.render(PROBE)[0]
    assert one.fingerprint != other.fingerprint  # two prompts never share a cache key
    # negative control: a template without a date is not pinned, its key does not move
    gemma = _load(family_dirs["gemma3"])
    gemma2 = load_verifier(
        str(family_dirs["gemma3"]), device="cpu", dtype="float32", today=dt.date(2026, 12, 2)
    )
    assert gemma.format.pinned_date is None and gemma.fingerprint == gemma2.fingerprint


def test_readout_system_message_and_wording_change_the_cache_key(
    family_dirs: dict[str, Path],
) -> None:
    base = _load(family_dirs["qwen3"])
    assert _load(family_dirs["qwen3"]).fingerprint == base.fingerprint
    assert _load(family_dirs["qwen3"], readout="chat-answer").fingerprint != base.fingerprint
    with_system = _load(family_dirs["qwen3"], system="You are a careful judge.")
    assert with_system.fingerprint != base.fingerprint
    assert with_system.render(PROBE)[0].startswith(
        "<|im_start|>system\nYou are a careful judge.<|im_end|>\n<|im_start|>user\n"
    )
    assert _load(family_dirs["qwen3"], prefix="Final answer:").fingerprint != base.fingerprint


def test_a_qwen35_style_template_reads_the_same_text(family_dirs: dict[str, Path]) -> None:
    class Tok:  # the Qwen3 tokenizer with a template that always opens a think block
        def __init__(self, inner: object) -> None:
            self._inner = inner
            self.chat_template = QWEN35_TEMPLATE

        def apply_chat_template(self, *args: object, **kwargs: object) -> str:
            return self._inner.apply_chat_template(  # type: ignore[attr-defined]
                *args, chat_template=QWEN35_TEMPLATE, **kwargs
            )

    v = _load(family_dirs["qwen3"])
    fmt = chat_format(Tok(v._base.tokenizer), name="qwen35", model_type="qwen3_5")
    assert fmt.readout.name == "qwen-think-off"
    assert fmt.wrap(Tok(v._base.tokenizer), USER) + "Answer:" == EXPECTED["qwen3"]


# -- CLI ---------------------------------------------------------------------------------------


def test_cli_lists_readouts_and_reports_label_mass(
    family_dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from eraudit_core import cli

    assert cli.main(["readouts", "--json"]) == 0
    names = [r["name"] for r in json.loads(capsys.readouterr().out)]
    assert names[:2] == ["harmony-final", "qwen-think-off"] and "plain" in names
    assert cli.main(["checkpoint-info", str(family_dirs["gpt-oss"]), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["readout"] == "harmony-final" and info["path"] == str(family_dirs["gpt-oss"])
    assert set(info["label_mass"]) == {"median", "min", "n"} and info["label_mass"]["n"] == 16
    # negative control: the wrong readout is refused (exit 2) and the message names the right one
    code = cli.main(["checkpoint-info", str(family_dirs["gpt-oss"]), "--readout", "chat-answer"])
    assert code == 2
    assert "Try ;readout=harmony-final" in capsys.readouterr().err


def test_a_runs_label_mass_is_shown_per_checkpoint(
    family_dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eraudit_core.cli._audit import pair_summary_json
    from eraudit_core.demo import ensure_demo_inputs
    from eraudit_core.method import AuditConfig
    from eraudit_core.runs import RunRequest, run_label_mass, run_model_audit

    gemma = str(family_dirs["gemma3"])
    with Store(tmp_path / "r.duckdb") as store:
        bench = ensure_demo_inputs(store)
        small = {"search_budget": 2, "test_budget": 2, "batch_size": 2}
        # the tiny model's labels carry little mass on QuALITY questions (see below): at the
        # default minimum every such prompt fails its own answer check, so both runs lower it
        right = run_model_audit(
            store,
            RunRequest(bench, gemma, gemma, AuditConfig(min_label_mass=0.0, **small), limit=1),  # type: ignore[arg-type]
        )
        # negative control: read at the bare generation prompt, let through with minimum 0
        loose = AuditConfig(answer_prefix="", min_label_mass=0.0, **small)  # type: ignore[arg-type]
        wrong = run_model_audit(store, RunRequest(bench, gemma, gemma, loose, limit=1))
        good, bad = run_label_mass(store, right), run_label_mass(store, wrong)
        n = store.cache_size(store.run(right)["pre_fingerprint"])
        # the tiny model was fitted on the probe questions only, so on QuALITY questions its
        # mass at the right slot is small too; at the bare generation prompt (where it writes
        # "Answer") it is smaller still: the run's summary must show that difference
        assert good["pre"]["n"] == 2 * n
        same = ("median", "min", "n")  # pre and post are one checkpoint here
        assert [good["pre"][k] for k in same] == [good["post"][k] for k in same]
        assert good["pre"]["median"] > 10 * bad["pre"]["median"], (good, bad)
        assert bad["pre"]["min"] <= bad["pre"]["median"] < 0.5
        assert pair_summary_json(store, right)["label_mass"] == good
        assert store.run(wrong)["config"]["answer_prefix"] == ""  # the wording is recorded
        assert store.run(right)["config"]["prompt_date"]  # pinned to the run's start date
        from eraudit_core.present import build_report

        assert "label mass (pre): median, min over prompts" in build_report(store, [right])


def test_wording_files_are_read_exactly_and_a_missing_one_is_named(tmp_path: Path) -> None:
    import argparse

    from eraudit_core.cli._audit import _wording_config
    from eraudit_core.cli._wording import loader_kwargs, spec_with_readout

    template = tmp_path / "t.txt"
    template.write_text("Q: {question}\n{label_a}) {option_a}\n{label_b}) {option_b}\n")
    system = tmp_path / "s.txt"
    system.write_text("Be brief.")
    args = argparse.Namespace(
        prompt_template=template, system_file=system, prefix_file=None, readout="plain",
        template=DEFAULT_TEMPLATE, prefix="Answer:",
    )  # fmt: skip
    kwargs = loader_kwargs(args)
    # the file's last newline is the editor's; everything else is kept
    assert kwargs["template"] == "Q: {question}\n{label_a}) {option_a}\n{label_b}) {option_b}"
    assert kwargs["system"] == "Be brief." and kwargs["readout"] == "plain"
    assert _wording_config(args) == {
        "prompt_template": kwargs["template"],
        "system_message": "Be brief.",
    }
    assert spec_with_readout("demo:base", "plain") == "demo:base;readout=plain"
    assert spec_with_readout("demo:base;readout=chat-answer", "plain").endswith("chat-answer")
    args.system_file = tmp_path / "missing.txt"
    with pytest.raises(InputError, match=r"missing.txt: no such file \(--system-file\)"):
        loader_kwargs(args)
