"""Record a reference-objective debate arm in data/adapters/<arm>/ without its weights.

A `full-topN` arm (`eraudit adapt --objective reference --out DIR`) is a whole model folder,
too large for git. This copies its manifest (recipe, the training, grounded and held-out files
by sha256, the fit gate's `fit`, the weights by sha256, the command that rebuilds it) into
`data/adapters/<arm>/manifest.json`, with `weights.location` naming the folder, after checking
every weight file against its sha256. `demo:<arm>` then loads the weights from that folder,
Home reads the arm's fit from the record, and `scripts/build_demo_runs.py --set debate`
scores the arm from it.

    .venv/bin/python scripts/record_debate_arm.py /work/eraudit-fit/full-top2/arms/debate-honest \
        --replace     # removes the answer-token LoRA adapter that data/adapters/<arm>/ holds

Exit status 2 with the file and field named when a weight file does not match its manifest,
or the manifest has no fit-gate record.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from eraudit_core.demo import DEBATE_ARMS
from eraudit_core.errors import InputError
from eraudit_core.verifier import DEMO_ADAPTERS, read_arm_folder, record_arm


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("folder", help="the arm's folder: manifest.json and its weights")
    ap.add_argument("--arm", choices=DEBATE_ARMS, default=None, help="default: the manifest's")
    ap.add_argument("--out", default=str(DEMO_ADAPTERS), help="where the record goes")
    ap.add_argument(
        "--replace", action="store_true", help="replace an adapter already recorded there"
    )
    args = ap.parse_args()
    try:
        arm = read_arm_folder(args.folder, args.arm)
        if arm.arm not in DEBATE_ARMS:
            raise InputError(
                f"{arm.folder / 'manifest.json'}: field 'arm' is {arm.arm!r}, not a debate arm"
            )
        path = record_arm(arm, Path(args.out), replace=args.replace)
    except InputError as exc:
        ap.exit(2, f"error: {exc}\n")
    fit = arm.fit or {}
    print(
        f"wrote {path}: weights in {arm.folder} ({', '.join(arm.weights)}), fit train "
        f"{fit.get('train_two_way_accuracy')} held-out {fit.get('heldout_two_way_accuracy')} "
        f"passed={fit.get('passed')}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
