"""A run stopped and resumed ends bit for bit where an unstopped run ends; the manifest's fit
object is what an independent scoring of the saved weights gives; the CLI refuses to start
over an existing checkpoint and refuses a tampered grounded file with file, line and field."""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path

import pytest
import torch

from eraudit_core.adapt._fit_run import run_fit_arm
from eraudit_core.adapt._fit_training import CHECKPOINT, FitConfig
from eraudit_core.errors import InputError
from eraudit_core.verifier import load_verifier
from tests._debate_rows import short_rows, write_jsonl
from tests._tiny_model import build_tiny_checkpoint, one_torch_thread

CONFIG = FitConfig(capacity="full-top2", learning_rate=3e-3, epochs=2, batch_size=2, seed=5)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    with one_torch_thread():
        yield


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "model", layers=4, scale=1.0)


def _files(folder: Path, first: int, n_pairs: int, grounded: bool) -> tuple[Path, Path | None]:
    """Short rows and, when asked, one grounded analysis per pair bound to both of its rows
    by their digests."""
    rows = short_rows(first, n_pairs)
    train = write_jsonl(folder / "train.jsonl", rows)
    if not grounded:
        return train, None
    analysis = (
        'Debater A\'s key evidence: "quote" (verified)\n'
        "Conclusion: Debater A presents the stronger case."
    )
    analyses = [
        {
            "pair_id": a["pair_id"],
            "analysis": analysis,
            "grounded_sha256": hashlib.sha256(analysis.encode()).hexdigest(),
            "base_row_sha256": {"A=Y_true": a["row_sha256"], "A=Y_false": b["row_sha256"]},
            "winner_debater": "Debater A",
        }
        for a, b in zip(rows[::2], rows[1::2], strict=True)
    ]
    return train, write_jsonl(folder / "grounded.jsonl", analyses)


def _run(tiny: Path, tmp: Path, work: str, config: FitConfig = CONFIG, **kw):
    train, grounded = _files(tmp / "data", 0, 3, True)
    heldout, _ = _files(tmp / "heldout", 10, 2, False)
    return run_fit_arm(
        "debate-honest",
        tmp / work,
        tmp / f"{work}-out",
        config=config,
        base=str(tiny),
        data_file=train,
        grounded_file=grounded,
        heldout_file=heldout,
        cache_root=tmp / "cache",
        progress=lambda _: None,
        **kw,
    )


def test_resume_is_bit_for_bit(tiny: Path, tmp_path: Path) -> None:
    early = _run(tiny, tmp_path, "parts", deadline=time.time() - 1)  # before the trunk cache
    assert early["stage"] == "trunk cache" and early["trunk_cache"]["computed"] == 0
    whole = _run(tiny, tmp_path, "whole")
    assert whole["status"] == "complete" and whole["steps"] == 2 * 3
    first = _run(tiny, tmp_path, "parts", stop_after_steps=2)
    assert first["status"] == "stopped" and first["steps"] == 2
    with pytest.raises(InputError, match="a checkpoint exists; pass --resume"):
        _run(tiny, tmp_path, "parts")
    second = _run(tiny, tmp_path, "parts", resume=True, stop_after_steps=2)  # into epoch 2
    assert second["status"] == "stopped" and second["steps"] == 4
    last = _run(tiny, tmp_path, "parts", resume=True)
    assert last["status"] == "complete" and last["steps"] == 6
    a = torch.load(tmp_path / "whole" / "debate-honest" / CHECKPOINT, weights_only=False)
    b = torch.load(tmp_path / "parts" / "debate-honest" / CHECKPOINT, weights_only=False)
    assert a["trainable"].keys() == b["trainable"].keys() and len(a["trainable"]) > 0
    for k in a["trainable"]:
        assert torch.equal(a["trainable"][k], b["trainable"][k]), k
    sa, sb = a["optim"]["state"], b["optim"]["state"]
    assert sa.keys() == sb.keys()
    for k in sa:
        assert all(torch.equal(sa[k][x], sb[k][x]) for x in ("exp_avg", "exp_avg_sq", "step"))
    assert a["state"]["step_losses"] == b["state"]["step_losses"]
    assert whole["fit"]["train"] == last["fit"]["train"]
    ma = json.loads((tmp_path / "whole-out" / "debate-honest" / "manifest.json").read_text())
    mb = json.loads((tmp_path / "parts-out" / "debate-honest" / "manifest.json").read_text())
    assert ma["weights"] == mb["weights"] and "model.safetensors" in ma["weights"]["files"]
    # Each step took other rows: no two steps' losses are the same.
    assert len({x[0] for x in a["state"]["step_losses"]}) == 6
    kinds = [c["kind"] for c in b["state"]["curve"]]
    assert kinds == ["stop", "epoch", "stop", "epoch"]


def test_fit_object_is_computed_from_the_weights(tiny: Path, tmp_path: Path) -> None:
    result = _run(tiny, tmp_path, "fit")
    out = tmp_path / "fit-out" / "debate-honest"
    manifest = json.loads((out / "manifest.json").read_text())
    fit = manifest["fit"]
    assert set(fit) >= {
        "objective", "capacity", "train_two_way_accuracy", "heldout_two_way_accuracy",
        "letter_loss", "passed", "curve",
    }  # fmt: skip
    assert fit == result["fit"] and manifest["seed"] == CONFIG.seed == fit["capacity"]["seed"]
    assert fit["objective"] == "2.0 * forced-choice + 1.0 * grounded LM"
    assert fit["capacity"]["name"] == "full-top2" and fit["capacity"]["trainable_parameters"] > 0
    for part in ("grounded", "heldout", "train"):
        assert len(manifest["data"][part]["sha256"]) == 64
    sha = hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest()
    assert manifest["weights"]["files"]["model.safetensors"] == sha
    # Independent scoring: the saved model as a checkpoint, two-way softmax at the slot.
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(out)).eval()
    v = load_verifier(str(tiny), share_base=False)
    tok = v._base.tokenizer
    a_id, b_id = (tok(" " + x, add_special_tokens=False).input_ids[0] for x in "AB")
    for part, folder, n in (("train", "data", 3), ("heldout", "heldout", 2)):
        ps, by = [], {}
        for line in (tmp_path / folder / "train.jsonl").read_text().splitlines():
            row = json.loads(line)
            ids = tok(v._chat(row["messages"][0]["content"]) + "Answer:", add_special_tokens=False)
            with torch.no_grad():
                z = model(input_ids=torch.tensor([ids.input_ids])).logits[0, -1, [a_id, b_id]]
            p = float(torch.softmax(z.double(), -1)["AB".index(row["target"][-1])])
            ps.append(p)
            by.setdefault(row["row_id"].split("|")[1], []).append(p)
        acc = sum(p > 0.5 for p in ps) / len(ps)
        loss = -sum(math.log(p) for p in ps) / len(ps)
        assert fit[part]["two_way_accuracy"] == pytest.approx(acc, abs=1e-4)
        assert fit[part]["letter_loss"] == pytest.approx(loss, abs=1e-4)
        for o, vals in by.items():
            assert fit[part]["by_orientation"][o]["rows"] == len(vals) == n
    assert fit["train_two_way_accuracy"] == fit["train"]["two_way_accuracy"]
    assert fit["passed"] == (fit["train_two_way_accuracy"] >= 0.9)
    curve = fit["curve"]
    assert [c["step"] for c in curve] == [3, 6] and curve[-1]["finished"]
    assert all(0 <= c["running_train_two_way_accuracy"] <= 1 for c in curve)


def test_cli_reference_objective_and_tampered_grounded_file(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eraudit_core.cli import main

    train, grounded = _files(tmp_path / "data", 0, 2, True)
    heldout, _ = _files(tmp_path / "heldout", 10, 1, False)
    assert grounded is not None
    args = [
        "adapt", "--objective", "reference", "--arm", "debate-adversarial",
        "--base", str(tiny), "--data", str(train), "--grounded", str(grounded),
        "--heldout", str(heldout), "--capacity", "lora-r4-top2", "--epochs", "1",
        "--batch-size", "2", "--lr", "1e-2", "--work", str(tmp_path / "work"),
        "--out", str(tmp_path / "out"), "--trunk-cache", str(tmp_path / "cache"),
    ]  # fmt: skip
    assert main(args) == 0
    assert "debate-adversarial: complete at step 2" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "out" / "debate-adversarial" / "manifest.json").read_text())
    assert manifest["fit"]["capacity"]["name"] == "lora-r4-top2"
    assert "adapter_model.safetensors" in manifest["weights"]["files"]
    lines = grounded.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace("quote", "quota", 1)
    grounded.write_text("".join(lines))
    assert main([*args, "--resume"]) == 2
    err = capsys.readouterr().err
    assert "grounded.jsonl: line 2: field 'grounded_sha256'" in err and "Traceback" not in err


def test_time_checkpoints_come_within_the_interval(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step that would end past the interval is preceded by a checkpoint, so no stretch of
    training between two saves exceeds `checkpoint_seconds`: on a clock that only a training
    row moves (3 s a row, one row a step) and an interval of 10 s, saves come every 9 s, where
    saving once the interval has passed would leave 12 s between them."""
    from eraudit_core.adapt import _fit_training

    now = [0.0]
    saved_at: list[float] = []
    loss_of_row, save = _fit_training.example_loss, _fit_training.save_checkpoint

    def row_taking_3_s(*args, **kwargs):
        now[0] += 3.0
        return loss_of_row(*args, **kwargs)

    def save_noting_when(*args, **kwargs):
        saved_at.append(now[0])
        return save(*args, **kwargs)

    monkeypatch.setattr(_fit_training, "_clock", lambda: now[0])
    monkeypatch.setattr(_fit_training, "example_loss", row_taking_3_s)
    monkeypatch.setattr(_fit_training, "save_checkpoint", save_noting_when)
    config = FitConfig(
        capacity="full-top2", learning_rate=3e-3, epochs=2, batch_size=1, seed=5,
        checkpoint_seconds=10.0,
    )  # fmt: skip
    _run(tiny, tmp_path, "work", config=config)
    state = torch.load(tmp_path / "work" / "debate-honest" / CHECKPOINT, weights_only=False)
    assert [c["kind"] for c in state["state"]["curve"]].count("time") >= 2
    stretches = [b - a for a, b in zip([0.0, *saved_at[:-1]], saved_at, strict=True)]
    assert max(stretches) <= config.checkpoint_seconds, stretches
