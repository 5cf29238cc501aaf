"""Rebuild data/demo_runs/: the score tables behind the dashboard's finished demo runs.

Scores the canonical monitored and hidden questions and every bundled paraphrase of the demo
pairs with the real demo checkpoints (SmolLM2-135M-Instruct before adaptation, and the arms
adapted from it), through the same backend and score cache an audit uses. Every row is
scored (no early stopping) so the dashboard can replay the audit at any epsilon or budget;
`eraudit demo` then audits these tables with the config in the set's manifest.

Two run sets (eraudit_core/demo.py, DEMO_RUN_SETS):

- `organisms` (manifest.json): the model organisms honest / adversarial / concealed on 40
  pairs, half of them the seeded targets of the adversarial and concealed arms;
- `debate` (debate_manifest.json): the two debate arms (docs/debate-distillation.md,
  docs/fit-gate.md) on every one of the 222 QuALITY-H pairs. Each arm is a folder with its
  manifest: by default the one `data/adapters/<arm>/` names (its adapter, or the folder its
  manifest's `weights.location` names), or `--arms-dir DIR` (`DIR/<arm>/`, as `eraudit adapt
  --objective reference --out DIR` writes them), or `--arm NAME=FOLDER` for one arm. Every
  weight file is checked against the sha256 in the arm's manifest before anything is scored,
  and the set's manifest records each arm's folder, weights' sha256 and fit gate. The base and
  both arms share one pass over the layers below the lowest one an arm changes
  (`SharedTrunkGroup`: a LoRA adapter on the base, or a full fine-tune of the top layers as a
  layer patch of the base).

    .venv/bin/python scripts/build_demo_runs.py --set organisms   # ~20 minutes on 2 CPU cores
    .venv/bin/python scripts/build_demo_runs.py --set debate      # ~30 minutes, 222 pairs
    .venv/bin/python scripts/build_demo_runs.py --set debate \
        --arms-dir /work/eraudit-fit/full-top2/arms               # reference-objective arms
    .venv/bin/python scripts/build_demo_runs.py --noise-floor-only   # ~1 minute: the floor

The scoring-noise floor a set declares (manifest "noise_floor") is measured here on the fixed
probe set with that set's checkpoints (the fast batched path against the naive reference path,
`eraudit_core.verifier.measure_noise_floor`); the largest |dp| over the checkpoints.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from eraudit_core.demo import (
    DEMO_AUDIT_SETTINGS,
    DEMO_RUN_SETS,
    DEMO_RUNS_DIR,
    adversarial_targets,
    ensure_demo_inputs,
)
from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig
from eraudit_core.runs import CachedScorer, build_items
from eraudit_core.store import Store
from eraudit_core.verifier import ArmFolder, read_arm_folder
from eraudit_core.verifier._arm_folder import outside_weights
from eraudit_core.verifier._spec import DEMO_ADAPTERS

ROOT = Path(__file__).resolve().parent.parent
TABLE_COLUMNS = ["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--set", choices=sorted(DEMO_RUN_SETS), default="organisms", dest="run_set")
    ap.add_argument(
        "--pairs", type=int, default=40, help="organisms: number of demo pairs (debate: all)"
    )
    ap.add_argument("--db", default=str(ROOT / ".cache" / "demo_build.duckdb"), help="score cache")
    ap.add_argument("--out", default=str(DEMO_RUNS_DIR))
    ap.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="start no new pair after this many minutes: the tables are written as a partial "
        "build (manifest complete: false) that the next run of this command continues",
    )
    ap.add_argument(
        "--reverse",
        action="store_true",
        help="score the pairs last to first: a second process with the same --db (and another "
        "--out) fills the shared score cache from the other end, and the first finds them there",
    )
    ap.add_argument(
        "--arms-dir",
        default=None,
        help="debate: take each arm from DIR/<arm>/ (a folder with manifest.json and weights)",
    )
    ap.add_argument(
        "--arm",
        action="append",
        default=[],
        metavar="NAME=FOLDER",
        help="debate: take arm NAME from FOLDER (repeatable; overrides --arms-dir for NAME)",
    )
    ap.add_argument(
        "--noise-floor-only",
        action="store_true",
        help="only measure the noise floor and write it into the set's existing manifest",
    )
    args = ap.parse_args()
    run_set = DEMO_RUN_SETS[args.run_set]
    path = Path(args.out) / run_set.manifest
    folders = arm_folders(run_set.arms, args.arms_dir, args.arm) if args.run_set == "debate" else {}
    specs = {arm: spec_of(arm, folders.get(arm)) for arm in run_set.arms}
    for arm, folder in folders.items():
        print(f"{arm}: {folder.folder} ({folder.kind}; weights checked by sha256)", flush=True)
    if args.noise_floor_only:
        manifest = json.loads(path.read_text())
        manifest["noise_floor"] = measure_demo_noise_floor(specs)
        path.write_text(json.dumps(manifest, indent=2) + "\n")
        print(json.dumps(manifest["noise_floor"], indent=2))
        return 0

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    deadline = None if args.minutes is None else t0 + 60 * args.minutes
    Path(args.db).parent.mkdir(parents=True, exist_ok=True)
    with Store(args.db) as store:
        bid = ensure_demo_inputs(store)
        cfg = AuditConfig.from_dict(DEMO_AUDIT_SETTINGS)
        all_items, cfg = build_items(store, bid, None, cfg)
        items = all_items if args.run_set == "debate" else select_pairs(all_items, args.pairs)
        manifest: dict[str, Any] = {
            "config": {**DEMO_AUDIT_SETTINGS, "test_generators": list(cfg.test_generators)},
            "benchmark_id": bid,
            "pair_ids": [it.pair_id for it in items],
            "arms": {},
            "built_with": {"python": platform.python_version(), "machine": platform.machine()},
        }
        earlier = partial_build(path, manifest, run_set.arms)

        def save(tables: dict[str, tuple[pd.DataFrame, dict[str, Any]]], complete: bool) -> None:
            for arm, (df, record) in tables.items():
                df.to_csv(
                    out / f"{arm}.csv.gz",
                    index=False,
                    float_format="%.9g",
                    compression={"method": "gzip", "mtime": 0},
                )
                manifest["arms"][arm] = record
            manifest["complete"] = complete
            manifest["pairs_done"] = len(next(iter(tables.values()))[0]["pair_id"].unique())
            if complete:
                manifest["noise_floor"] = measure_demo_noise_floor(specs)
            manifest["seconds"] = round(
                time.time() - t0 + float((earlier or {}).get("seconds", 0.0)), 1
            )
            path.write_text(json.dumps(manifest, indent=2) + "\n")

        done = score_arms(
            store, items, cfg, specs, folders, t0, earlier, deadline, save, reverse=args.reverse
        )
    print(f"wrote {path} ({'complete' if done else 'partial'}) in {time.time() - t0:.0f}s")
    return 0


def arm_folders(
    arms: tuple[str, ...], arms_dir: str | None, overrides: list[str]
) -> dict[str, ArmFolder]:
    """Each debate arm's folder, its weights checked against its manifest (InputError names
    the file and the field on a mismatch)."""
    given: dict[str, Path] = {}
    for item in overrides:
        name, eq, folder = item.partition("=")
        if not eq or name not in arms:
            raise InputError(f"--arm {item!r}: expected NAME=FOLDER with NAME one of {arms}")
        given[name] = Path(folder)
    out = {}
    for arm in arms:
        if arm in given:
            folder = given[arm]
        elif arms_dir is not None:
            folder = Path(arms_dir) / arm
        else:
            folder = outside_weights(DEMO_ADAPTERS / arm) or DEMO_ADAPTERS / arm
        out[arm] = read_arm_folder(folder, arm)
    return out


def spec_of(arm: str, folder: ArmFolder | None) -> str:
    """The checkpoint spec that scores `arm`: `demo:<arm>` for the adapter shipped in
    data/adapters, else the arm folder's own spec."""
    if folder is None or (folder.kind == "lora" and folder.folder == DEMO_ADAPTERS / arm):
        return f"demo:{arm}"
    return folder.spec


def partial_build(path: Path, manifest: dict[str, Any], arms: tuple[str, ...]) -> dict | None:
    """The earlier partial build of this set to continue (its manifest with each arm's table
    rows under "tables"), or None when there is none or it was made with other inputs."""
    if not path.is_file():
        return None
    old = json.loads(path.read_text())
    same = all(old.get(k) == manifest[k] for k in ("config", "benchmark_id", "pair_ids"))
    if old.get("complete", True) or not same:
        return None
    tables = {}
    for arm in arms:
        table = path.parent / f"{arm}.csv.gz"
        if not table.is_file() or arm not in old.get("arms", {}):
            return None
        tables[arm] = pd.read_csv(table, keep_default_na=False, dtype={"generator": str})
    print(f"continuing a partial build: {old.get('pairs_done')} pairs done", flush=True)
    return {**old, "tables": tables}


def item_queries(it: Any, cfg: AuditConfig) -> list[tuple[str, str, int, Any]]:
    """(role, generator, idx, query) of every row a demo table holds for one pair."""
    queries = [("monitored", "", 0, it.monitored), ("hidden", "", 0, it.hidden)]
    queries += [
        ("search", p.generator, p.idx, it.hidden_query(p.text))
        for p in it.search[: cfg.search_budget]
    ]
    for gen, paras in it.tests.items():
        queries += [("test", gen, p.idx, it.hidden_query(p.text)) for p in paras[: cfg.test_budget]]
    return queries


def score_arms(
    store: Store,
    items: list,
    cfg: AuditConfig,
    specs: dict[str, str],
    folders: dict[str, ArmFolder],
    t0: float,
    earlier: dict | None,
    deadline: float | None,
    save: Any,
    *,
    reverse: bool = False,
) -> bool:
    """Each arm's score table against demo:base and its manifest record (with the arm
    folder's source when it has one), handed to `save` every 10 pairs and at the end; True
    when every pair is in. `specs`: arm -> checkpoint spec. When the arms allow it (adapters
    on the base, or layer patches of it), the questions none of them has in the score cache
    are scored in one shared-trunk pass per pair. Pairs of an `earlier`
    partial build made with the same checkpoints are taken from its tables. Past the deadline
    only pairs already in the score cache are added (another process may have scored them:
    `reverse` walks the pairs last to first)."""
    from eraudit_core.verifier import CheckpointSpec, load_checkpoint
    from eraudit_core.verifier.hf import SharedTrunkGroup, plan_shared_trunk_group

    arms = tuple(specs)
    verifiers = [load_checkpoint(CheckpointSpec.parse(s)) for s in ("demo:base", *specs.values())]
    scorers = [CachedScorer(v, store) for v in verifiers]
    try:
        group: SharedTrunkGroup | None = SharedTrunkGroup(
            tuple(verifiers), plan_shared_trunk_group(verifiers)
        )
    except InputError as exc:  # score each checkpoint on its own
        print(f"no shared trunk ({exc}); scoring each checkpoint separately", flush=True)
        group = None
    else:
        print(f"shared trunk: {len(verifiers)} checkpoints from layer {group.split}", flush=True)
    rows: dict[str, list[dict[str, Any]]] = {arm: [] for arm in arms}
    kept: set[str] = set()
    if earlier is not None:
        fps = {a: earlier["arms"][a] for a in arms}
        if all(
            fps[a]["pre_fingerprint"] == verifiers[0].fingerprint
            and fps[a]["post_fingerprint"] == verifiers[i].fingerprint
            for i, a in enumerate(arms, start=1)
        ):
            for arm in arms:
                rows[arm] = earlier["tables"][arm].to_dict("records")
            kept = set(earlier["tables"][arms[0]]["pair_id"])
        else:
            print("the partial build's checkpoints differ: starting over", flush=True)
    # One pair per shared-trunk pass: its prompts share the story, which the kernel's prefix
    # staging then runs once (a pass over several pairs shares only the template's head and
    # was ~4x slower here).
    complete = True
    order = items[::-1] if reverse else items
    for done, it in enumerate(order, start=1):
        if it.pair_id in kept:
            continue
        queries = item_queries(it, cfg)
        qs = [q[3] for q in queries]
        missing = {q.prompt_hash: q for s in scorers for q in s.unknown(qs)}
        if missing and deadline is not None and time.time() > deadline:
            complete = False  # past the deadline: only pairs already in the score cache
            continue
        if group is not None and missing:
            group.prime(list(missing.values()))
        pre, *posts = [s.score(qs) for s in scorers]
        for arm, post in zip(arms, posts, strict=True):
            rows[arm] += [
                {
                    "pair_id": it.pair_id,
                    "role": role,
                    "generator": gen,
                    "idx": idx,
                    "text": q.question,
                    "p_pre": sa.p_true,
                    "p_post": sb.p_true,
                }
                for (role, gen, idx, q), sa, sb in zip(queries, pre, post, strict=True)
            ]
        if done % 10 == 0 or done == len(items):
            scored = sum(s.scored for s in scorers)
            print(
                f"pairs {done}/{len(items)} ({time.time() - t0:.0f}s, {scored} scored)", flush=True
            )
            save(_tables(rows, specs, folders, scorers, group), False)
    position = {it.pair_id: i for i, it in enumerate(items)}
    for arm in arms:  # benchmark order, whichever end the pairs were scored from
        rows[arm].sort(key=lambda r: position[r["pair_id"]])
    save(_tables(rows, specs, folders, scorers, group), complete)
    return complete


def _tables(
    rows: dict[str, list[dict[str, Any]]],
    specs: dict[str, str],
    folders: dict[str, ArmFolder],
    scorers: list,
    group: Any,
) -> dict[str, tuple[pd.DataFrame, dict[str, Any]]]:
    """Each arm's rows so far as a table, with its manifest record."""
    base = scorers[0]
    out = {}
    for arm_i, arm in enumerate(specs, start=1):
        post = scorers[arm_i]
        df = pd.DataFrame(rows[arm], columns=TABLE_COLUMNS)
        out[arm] = (
            df,
            {
                "pre": "demo:base",
                # the name the demo shows; `scored_with` is the spec that loaded the weights
                # (data/adapters/<arm> records that folder: scripts/record_debate_arm.py)
                "post": f"demo:{arm}",
                "scored_with": specs[arm],
                "pre_fingerprint": base.verifier.fingerprint,
                "post_fingerprint": post.verifier.fingerprint,
                "rows": len(df),
                "queries_scored": post.scored + (base.scored if arm_i == 1 else 0),
                "queries_cached": post.cached + (base.cached if arm_i == 1 else 0),
                "shared_trunk_split": None if group is None else group.split,
                **({"source": folders[arm].source()} if arm in folders else {}),
            },
        )
    return out


def measure_demo_noise_floor(specs: dict[str, str]) -> dict:
    """The scoring-noise floor of the base and each arm (`specs`: arm -> checkpoint spec) on
    the probe set; the runs use the largest (a run's floor is the larger of its two
    checkpoints')."""
    from eraudit_core.verifier import CheckpointSpec, load_checkpoint, measure_noise_floor

    per = {}
    for spec in ("demo:base", *specs.values()):
        verifier = load_checkpoint(CheckpointSpec.parse(spec))
        per[spec] = measure_noise_floor(verifier)["value"]
    return {
        "value": max(per.values()),
        "per_checkpoint": per,
        "method": "probe set (8 questions): fast batched path vs naive one-prompt reference "
        "path, float32 on CPU",
    }


def select_pairs(items: list, n: int) -> list:
    """Half adversarial targets, half untouched pairs, so both arms' pictures differ."""
    targets = set(adversarial_targets())
    usable = [it for it in items if it.search and all(it.tests.values())]
    hit = [it for it in usable if it.pair_id in targets][: n // 2]
    rest = [it for it in usable if it.pair_id not in targets][: n - len(hit)]
    chosen = {it.pair_id for it in hit + rest}
    return [it for it in usable if it.pair_id in chosen]


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
