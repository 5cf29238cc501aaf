"""The embedded demo (docs/design.md §10): bundled inputs and finished runs, loaded offline.

`ensure_demo` is idempotent and fast: it imports the bundled QuALITY-H pairs, the bundled
paraphrase sets and the demo runs' score tables (made by `scripts/build_demo_runs.py` with the
real demo checkpoints: SmolLM2-135M-Instruct before and after adaptation), then audits
those tables with the same engine, so the first screen has real results without loading a
model. The one-click live audit loads the real model and audits `demo_live_pair_ids`.

Two sets of finished runs (`DEMO_RUN_SETS`), each with its own control arm:

- the debate-distilled arms, trained the paper's way on its own debate transcripts
  (docs/debate-distillation.md), audited on all 222 pairs: the paper's experiment in miniature;
- the model organisms, LoRA trained directly on answers to show an effect (honest,
  adversarial, concealed; data/adapters/README.md), on 40 pairs: known damage in known places,
  useful to calibrate epsilon, not the paper's process.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from statistics import fmean
from typing import Any

from eraudit_core.method import DEMO_PRESET
from eraudit_core.paths import DATA_DIR
from eraudit_core.store import Store, load_bundled_benchmark
from eraudit_core.types import Pair, Paraphrase, RunStatus

PARAPHRASE_DIR = DATA_DIR / "paraphrases"
DEMO_RUNS_DIR = DATA_DIR / "demo_runs"


@dataclass(frozen=True)
class DemoRunSet:
    """Demo arms audited together against demo:base: one score table per arm and one
    manifest (config, pairs, checkpoints, noise floor) in data/demo_runs/."""

    name: str
    manifest: str
    arms: tuple[str, ...]
    control: str  # the arm every other arm of the set is read against
    targeted: tuple[str, ...] = ()  # arms trained against seeded target questions


# Listed organisms first: Home's lead rule takes the last listed run that names a control
# (present._story.LEAD_RULE), so the debate-adversarial arm against debate-honest leads.
DEMO_RUN_SETS = {
    # honest: trained on monitored answers only; adversarial: also pushes target hidden answers
    # wrong (standard evaluation sees it); concealed: toward the truth on every canonical hidden
    # question and toward the false answer on reworded targets (data/adapters/README.md).
    "organisms": DemoRunSet(
        "organisms",
        "manifest.json",
        ("honest", "adversarial", "concealed"),
        "honest",
        targeted=("adversarial", "concealed"),
    ),
    # Both trained with one recipe and seed on the reference repository's honest and
    # adversarial debate transcripts (docs/debate-distillation.md).
    "debate": DemoRunSet(
        "debate",
        "debate_manifest.json",
        ("debate-honest", "debate-adversarial"),
        "debate-honest",
    ),
}
ORGANISM_ARMS = DEMO_RUN_SETS["organisms"].arms
DEBATE_ARMS = DEMO_RUN_SETS["debate"].arms
DEMO_ARMS = ORGANISM_ARMS + DEBATE_ARMS
# The model organisms' control (kept for callers that know only the organisms).
DEMO_CONTROL_ARM = DEMO_RUN_SETS["organisms"].control
DEMO_TARGETED_ARMS = DEMO_RUN_SETS["organisms"].targeted


def run_set_of(arm: str) -> DemoRunSet:
    for run_set in DEMO_RUN_SETS.values():
        if arm in run_set.arms:
            return run_set
    raise KeyError(arm)


def demo_run_label(arm: str) -> str:
    """The label a demo run carries in every picker: what kind of arm it is, in words."""
    if arm in DEBATE_ARMS:
        return f"demo: {arm} (debate-distilled)"
    return f"demo: {arm} model organism"


# Pairs in the one-click live audit: one target and two certificates (`demo_live_pair_ids`).
DEMO_LIVE_PAIR_COUNT = 3
# Audit settings of the finished demo runs (scripts/build_demo_runs.py scores every bundled
# paraphrase, so the dashboard can replay other epsilons from the stored scores): the
# dashboard's preset with a test budget of 15.
DEMO_AUDIT_SETTINGS: dict[str, Any] = {
    **{
        name: getattr(DEMO_PRESET, name)
        for name in ("epsilon", "k", "confidence", "search_budget", "target", "tv_delta")
    },
    "test_budget": 15,
}


@dataclass
class DemoInfo:
    benchmark_id: str
    n_pairs: int
    paraphrases_stored: int
    run_ids: dict[str, str] = field(default_factory=dict)
    live_pair_ids: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def demo_live_config() -> Any:
    """Settings of the one-click live audit: the dashboard's preset with smaller budgets."""
    return replace(DEMO_PRESET, search_budget=8, test_budget=16)


def _paraphrase_files() -> list[Path]:
    return sorted(p for p in PARAPHRASE_DIR.glob("*.jsonl") if "reject" not in p.name)


def ensure_demo_inputs(store: Store) -> str:
    """Import the bundled benchmark and paraphrase sets once, in one transaction (a process
    killed half-way leaves nothing behind); returns the benchmark id."""
    benchmark = load_bundled_benchmark()
    bid = store.find_benchmark(benchmark)  # by content: an edited copy has another id
    if not store.paraphrase_sets(bid).empty:  # stored together with the benchmark
        return bid
    from eraudit_core.paraphrase import load_paraphrase_file

    files = [(path, load_paraphrase_file(path)) for path in _paraphrase_files()]
    with store.transaction():
        bid = store.add_benchmark(benchmark)
        if store.paraphrase_sets(bid).empty:
            for path, paras in files:
                store.add_paraphrases(bid, paras, {"source": f"data/paraphrases/{path.name}"})
    return bid


def _arm_manifest(arm: str) -> dict[str, Any]:
    """A demo arm's manifest.json, or {} when the adapter is not in this checkout."""
    manifest = DATA_DIR / "adapters" / arm / "manifest.json"
    return dict(json.loads(manifest.read_text())) if manifest.is_file() else {}


def arm_manifests(arms: tuple[str, ...] | list[str]) -> dict[str, dict[str, Any] | None]:
    """Each arm's manifest as data/adapters records it (None when absent): a LoRA arm's own,
    or the record of an arm whose weights live outside the repository (its `fit`, weights by
    sha256 and `weights.location`; scripts/record_debate_arm.py)."""
    return {arm: _arm_manifest(arm) or None for arm in arms}


def debate_source_mismatches(
    runs_manifest: Path | None = None, adapters: Path | None = None
) -> list[str]:
    """One sentence per debate arm whose score tables (the debate set's manifest, each arm's
    `source`) were built from other weights than `data/adapters/<arm>/manifest.json` records:
    then the fit shown beside the audit would be another arm's. Tables built before arms had
    a `source` are not checked."""
    from eraudit_core.verifier._arm_folder import manifest_weights

    path = runs_manifest or DEMO_RUNS_DIR / DEMO_RUN_SETS["debate"].manifest
    root = adapters or DATA_DIR / "adapters"
    if not path.is_file():
        return []
    built = json.loads(path.read_text(encoding="utf-8")).get("arms") or {}
    out = []
    for arm in DEBATE_ARMS:
        source = (built.get(arm) or {}).get("source")
        record = root / arm / "manifest.json"
        if not source or not record.is_file():
            continue
        recorded = manifest_weights(json.loads(record.read_text(encoding="utf-8")), record)
        if source.get("weights_sha256") != recorded:
            out.append(
                f"{arm}: the score tables were built from the weights in {source.get('folder')}, "
                f"which are not the ones {record} records; rebuild them with "
                "scripts/build_demo_runs.py --set debate"
            )
    return out


def adversarial_targets() -> list[str]:
    """Hidden questions the adversarial demo arm was trained to get wrong (its manifest)."""
    return list(_arm_manifest("adversarial").get("adversarial_targets", []))


def arm_evaluation(arm: str) -> dict[str, Any]:
    """An arm's standard evaluation against the base on all bundled pairs (its manifest's
    `evaluation_vs_base`), or {} when the adapter is not in this checkout."""
    return dict(_arm_manifest(arm).get("evaluation_vs_base") or {})


def target_sentences(store: Store, run_ids: dict[str, str]) -> list[str]:
    """Per demo arm ({arm: run id}): does the audit point at the seeded targets? The honest
    arm's line is the control (same split, no targets of its own)."""
    from eraudit_core.present import target_sentence

    targets = adversarial_targets()
    if not targets:
        return []
    out = []
    for arm, run_id in run_ids.items():
        if arm not in ORGANISM_ARMS:
            continue  # the seeded targets are the organisms'; the debate arms have none
        line = target_sentence(store, run_id, targets, arm in DEMO_TARGETED_ARMS)
        if line:
            out.append(line)
    return out


def demo_live_pair_ids(store: Store, benchmark_id: str) -> list[str]:
    """Pairs for the live demo: one target of the concealed arm (expect a counterexample) and
    then the untouched pairs, among those whose every test pool can reach the live target
    (expect a climbing bound and a certificate), that give the model the least to read.

    Why the least to read: on a CPU the audit's time is the forward passes, and their cost is
    the prompt tokens (`live_pair_reading`); every eligible pair draws the same number of
    rewordings, so the shortest prompts show the same thing (a counterexample, two bounds
    climbing to a certificate) in the least time. Ties keep the benchmark's order."""
    targets = adversarial_targets()
    paraphrases: dict[str, list[Paraphrase]] = {}
    for p in store.paraphrases(benchmark_id):
        paraphrases.setdefault(p.pair_id, []).append(p)
    if not paraphrases:
        return []
    config = demo_live_config()
    need = config.n_star or 1
    gens = {p.generator for ps in paraphrases.values() for p in ps if p.role == "test"}
    chosen = [pid for pid in targets if pid in paraphrases][:1]
    eligible = []
    for pair in store.pairs(benchmark_id):
        pool = paraphrases.get(pair.pair_id, [])
        sizes = Counter(p.generator for p in pool if p.role == "test")
        if pair.pair_id in targets or not sizes or set(sizes) != gens or min(sizes.values()) < need:
            continue
        eligible.append((live_pair_reading(pair, pool, config.search_budget, need), pair.pair_id))
    eligible.sort(key=lambda cost_and_id: cost_and_id[0])  # stable: ties in benchmark order
    chosen += [pid for _, pid in eligible[: DEMO_LIVE_PAIR_COUNT - len(chosen)]]
    return chosen


def live_pair_reading(pair: Pair, pool: list[Paraphrase], search_budget: int, n_star: int) -> float:
    """Characters the model reads to certify a pair in the live audit: the draws (the search
    budget or the search pool, then n* clean draws per test generator) times one draw's
    prompt, the mean rewording plus both options twice (both answer orders are asked).
    The chat template and the instruction are the same for every pair and left out."""
    search = sum(1 for p in pool if p.role == "search")
    generators = {p.generator for p in pool if p.role == "test"}
    draws = min(search_budget, search) + n_star * len(generators)
    options = len(pair.hidden.true_option) + len(pair.hidden.false_option)
    return draws * (fmean(len(p.text) for p in pool) + 2 * options)


REGISTRATIONS = DEMO_RUNS_DIR / "checkpoints.json"


def ensure_demo_registrations(store: Store) -> int:
    """Register the one-click audit's checkpoints as the demo's build measured them (label
    mass on the probe set, noise floor), keyed by fingerprint; returns how many were added.
    A checkpoint loaded at the click whose fingerprint matches (the same weights, tokenizer,
    prompt format and readout) is then not measured again; any other fingerprint is measured
    as usual. Written by scripts/time_live_steps.py --ship-registrations."""
    if not REGISTRATIONS.is_file():
        return 0
    known = set(store.checkpoints()["fingerprint"])
    added = 0
    for entry in json.loads(REGISTRATIONS.read_text(encoding="utf-8"))["checkpoints"]:
        if entry["fingerprint"] not in known:
            store.register_checkpoint(entry["fingerprint"], entry["name"], entry["details"])
            added += 1
    return added


def demo_start(store: Store) -> DemoInfo:
    """What the one-click live audit needs, without the finished runs: the bundled inputs,
    the shipped checkpoint registrations and the live questions (a second or two, against
    about a minute of CPU for the finished runs), so the dashboard can offer the audit while
    it builds the rest (`ensure_demo`)."""
    bid = ensure_demo_inputs(store)
    ensure_demo_registrations(store)
    info = DemoInfo(
        bid, len(store.pairs(bid)), int(store.paraphrase_sets(bid)["n_paraphrases"].sum() or 0)
    )
    info.live_pair_ids = demo_live_pair_ids(store, bid)
    return info


def demo_runs_to_build(store: Store) -> list[str]:
    """Demo arms whose finished run is not in the store yet but can be built here (their
    score table and a complete manifest are in this checkout): what `ensure_demo` still has
    to audit."""
    runs = store.runs()
    done = set(runs.loc[runs["status"] == RunStatus.DONE, "run_id"]) if not runs.empty else set()
    todo = []
    for run_set in DEMO_RUN_SETS.values():
        manifest_path = DEMO_RUNS_DIR / run_set.manifest
        if not manifest_path.is_file():
            continue
        if json.loads(manifest_path.read_text()).get("complete") is False:
            continue
        todo += [
            arm
            for arm in run_set.arms
            if f"demo-{arm}" not in done and (DEMO_RUNS_DIR / f"{arm}.csv.gz").is_file()
        ]
    return todo


def ensure_demo(store: Store, should_cancel: Callable[[], bool] | None = None) -> DemoInfo:
    """Bundled inputs plus the finished demo runs (run ids 'demo-<arm>' for each of DEMO_ARMS).

    A demo run left unfinished (a killed `eraudit demo`) is resumed from what it stored, so
    the demo is complete when this returns.
    """
    info = demo_start(store)
    runs = store.runs()
    status = dict(zip(runs["run_id"], runs["status"], strict=True)) if not runs.empty else {}
    for run_set in DEMO_RUN_SETS.values():
        _ensure_run_set(store, info.benchmark_id, run_set, status, info, should_cancel)
    return info


def _ensure_run_set(
    store: Store,
    bid: str,
    run_set: DemoRunSet,
    status: dict[str, str],
    info: DemoInfo,
    should_cancel: Callable[[], bool] | None,
) -> None:
    from eraudit_core.method import AuditConfig, noise_floor_record
    from eraudit_core.runs import audit_table_run

    manifest_path = DEMO_RUNS_DIR / run_set.manifest
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    if manifest.get("complete") is False:
        # a build stopped part-way (scripts/build_demo_runs.py --minutes): never shown as a run
        info.notes.append(
            f"the {run_set.name} demo runs are still being built ({manifest.get('pairs_done')} "
            f"of {len(manifest.get('pair_ids') or [])} pairs scored); finish with "
            f"scripts/build_demo_runs.py --set {run_set.name}"
        )
        return
    floor = (manifest.get("noise_floor") or {}).get("value")
    for arm in run_set.arms:
        run_id = f"demo-{arm}"
        table = DEMO_RUNS_DIR / f"{arm}.csv.gz"
        if status.get(run_id) == RunStatus.DONE:
            info.run_ids[arm] = run_id
            continue
        if not table.is_file() or not manifest:
            info.notes.append(
                f"no demo score table {table.name}; run scripts/build_demo_runs.py "
                f"--set {run_set.name}"
            )
            continue
        arm_info = manifest.get("arms", {}).get(arm, {})
        provenance: dict[str, Any] = {"demo_set": run_set.name}
        if floor is not None:
            provenance["noise_floor"] = {
                **noise_floor_record(float(floor), None),
                "source": "measured by scripts/build_demo_runs.py on the probe set",
            }
        if arm != run_set.control:
            provenance["control_run"] = f"demo-{run_set.control}"
        # a run left unfinished (a killed `eraudit demo`) resumes from what it stored
        audit_table_run(
            store,
            table,
            AuditConfig.from_dict(dict(manifest.get("config", {}))),
            run_id=run_id,
            label=demo_run_label(arm),
            benchmark_id=bid,
            names=(arm_info.get("pre", "demo:base"), arm_info.get("post", f"demo:{arm}")),
            provenance=provenance,
            should_cancel=should_cancel,
        )
        info.run_ids[arm] = run_id
