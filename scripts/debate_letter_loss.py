"""Did the debate arms learn the letter? Per-token loss on their own training rows.

Reads the first N rows of each debate arm's own training file (the rows it was trained on),
wraps each judge prompt as the trainer does (`encode_rows`), and prints, for the base model and
each arm, the mean cross-entropy of each target token (`Answer`, `:`, the letter), the two-way
p(target letter) (the A/B softmax at the letter slot) and the two-way accuracy.

    .venv/bin/python scripts/debate_letter_loss.py --rows 24 [--arms debate-honest]
"""

from __future__ import annotations

import argparse
import math


def main() -> int:
    import torch
    from peft import PeftModel

    from eraudit_core.adapt._debate_data import bundled_debate_file, read_debate_file
    from eraudit_core.adapt._debate_training import encode_rows
    from eraudit_core.verifier import DEMO_ADAPTERS, CheckpointSpec, load_verifier

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=24)
    ap.add_argument("--arms", nargs="+", default=["debate-honest", "debate-adversarial"])
    args = ap.parse_args()
    base_v = load_verifier(CheckpointSpec.parse("demo:base"), device="cpu", dtype="float32")
    tok = base_v._base.tokenizer
    letters = [tok.encode(f" {x}", add_special_tokens=False)[-1] for x in ("A", "B")]
    model = base_v._base.model
    for arm in args.arms:
        rows = read_debate_file(bundled_debate_file(arm)).rows[: args.rows]
        examples = encode_rows(base_v, rows)
        peft = PeftModel.from_pretrained(model, str(DEMO_ADAPTERS / arm), adapter_name=arm)
        for name in ("base", arm):
            per_token, p_target, right = [], [], 0
            for ex in examples:
                ids = torch.tensor([ex.ids], dtype=torch.long)
                with torch.no_grad():
                    if name == "base":
                        with peft.disable_adapter():
                            logits = peft(input_ids=ids, logits_to_keep=ex.answer + 1).logits
                    else:
                        logits = peft(input_ids=ids, logits_to_keep=ex.answer + 1).logits
                pred = logits[0, :-1].float()
                target = ids[0, -ex.answer :]
                ce = torch.nn.functional.cross_entropy(pred, target, reduction="none")
                per_token.append(ce.tolist())
                two = torch.softmax(pred[-1, letters], dim=0)
                want = letters.index(int(target[-1]))
                p_target.append(float(two[want]))
                right += int(two[want] > 0.5)
            n = len(examples)
            means = [sum(t[i] for t in per_token) / n for i in range(len(per_token[0]))]
            line = (
                f"{arm} rows, {name}: {n} rows; per-token loss "
                + " / ".join(f"{m:.3f}" for m in means)
                + f" (letter last; ln 2 = {math.log(2):.3f}); two-way p(target letter) "
                f"{sum(p_target) / n:.3f}; two-way accuracy {right / n:.2f}"
            )
            print(line, flush=True)
        model = peft.unload()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
