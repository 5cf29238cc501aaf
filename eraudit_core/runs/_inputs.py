"""A run's inputs: run-wide test generators, the seeded test draws, digests and provenance.

Why these belong together: the bound of a run is a statement about "a paraphrase drawn at
random from generator g's pool of M", so which pools, in which drawn order, under which seed,
must be fixed when the run starts, stored with it, checked again on resume, and printed on
every report so two readers can tell whether they look at the same inputs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

import numpy as np

from eraudit_core.method import AuditConfig, AuditItem
from eraudit_core.types import Paraphrase


def tool_version() -> str:
    """The installed ER-Audit Studio version (the package's own when not installed)."""
    try:
        return metadata.version("eraudit-studio")
    except metadata.PackageNotFoundError:
        import eraudit_core

        return eraudit_core.__version__


def run_test_generators(items: Sequence[AuditItem], config: AuditConfig) -> tuple[str, ...]:
    """The run's test generators, in order: the config's, else every generator any pair has.

    Generators are run-wide: a pair with no paraphrases for one of them is inconclusive.
    """
    if config.test_generators:
        return tuple(config.test_generators)
    seen: list[str] = []
    for item in items:
        for g in item.tests:
            if g not in seen:
                seen.append(g)
    return tuple(seen)


def _sub_seed(seed: int, *keys: str) -> np.random.Generator:
    words = [seed] + [
        int.from_bytes(hashlib.sha256(k.encode("utf-8")).digest()[:8], "big") for k in keys
    ]
    return np.random.default_rng(np.random.SeedSequence(words))


def draw_order(
    pool: Sequence[Paraphrase], seed: int, pair_id: str, generator: str
) -> tuple[Paraphrase, ...]:
    """The pool in a uniformly random order (without replacement), reproducible from the seed.

    Each (pair, generator) gets its own stream, so adding a pair or a generator does not change
    the draws of the others. Sorting by idx first makes the order independent of how the store
    returned the pool.
    """
    ordered = sorted(pool, key=lambda p: p.idx)
    perm = _sub_seed(seed, pair_id, generator).permutation(len(ordered))
    return tuple(ordered[i] for i in perm)


def _digest(obj: Any) -> str:
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def items_digest(items: Sequence[AuditItem]) -> str:
    """Digest of everything a run audits, in order: questions, search sets, drawn test pools."""
    return _digest(
        [
            [
                it.pair_id,
                [it.monitored.question, it.monitored.true_option, it.monitored.false_option],
                [it.hidden.question, it.hidden.true_option, it.hidden.false_option],
                [[p.generator, p.idx, p.text] for p in it.search],
                {g: [[p.idx, p.text] for p in ps] for g, ps in it.tests.items()},
            ]
            for it in items
        ]
    )


def paraphrase_set_digests(items: Sequence[AuditItem]) -> dict[str, dict[str, Any]]:
    """Per set (`search:GEN`, `test:GEN`): digest of its texts over the run's pairs, and size.

    Order-free (sorted by pair and idx), so the same stored set gives the same digest whatever
    order a run drew it in.
    """
    sets: dict[str, list[tuple[str, int, str]]] = {}
    for it in items:
        for p in it.search:
            sets.setdefault(f"search:{p.generator}", []).append((it.pair_id, p.idx, p.text))
        for g, ps in it.tests.items():
            bucket = sets.setdefault(f"test:{g}", [])
            bucket.extend((it.pair_id, p.idx, p.text) for p in ps)
    return {
        name: {"digest": _digest(sorted(rows)), "n_paraphrases": len(rows)}
        for name, rows in sorted(sets.items())
    }


def inputs_key(items: Sequence[AuditItem], config: AuditConfig, checkpoints: Sequence[str]) -> str:
    """What makes two runs re-runs of each other: the checkpoints, the questions, the
    paraphrase pools (order-free) and the config except the draw seed. A certificate picked
    from several seeds of the same inputs is not valid, so these runs are counted."""
    cfg = {k: v for k, v in config.to_dict().items() if k not in ("draw_seed", "batch_size")}
    questions = [
        [it.pair_id, it.monitored.question, it.hidden.question, it.hidden.true_option]
        for it in sorted(items, key=lambda it: it.pair_id)
    ]
    return _digest(
        [list(checkpoints), questions, paraphrase_set_digests(items), json.loads(json.dumps(cfg))]
    )


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st ..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def rerun_note(provenance: Mapping[str, Any]) -> str | None:
    """'3rd run of these inputs: ...' for a run that repeats earlier runs' inputs, else None."""
    n = int(provenance.get("rerun_index") or 1)
    if n <= 1:
        return None
    return (
        f"{ordinal(n)} run of these inputs (same checkpoints, questions, pools and settings): "
        "a certificate chosen from several seeds is not valid"
    )


def run_provenance(
    items: Sequence[AuditItem],
    config: AuditConfig,
    *,
    benchmark_id: str | None,
    source: str,
) -> dict[str, Any]:
    """What produced a run, stored with it and printed on its reports and exports.

    The checkpoints' fingerprints are stored in the run's own columns once they are loaded.
    """
    return {
        "tool_version": tool_version(),
        "numpy_version": np.__version__,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "benchmark_id": benchmark_id,
        "source": source,
        "inputs_digest": items_digest(items),
        "paraphrase_sets": paraphrase_set_digests(items),
        "draw_seed": config.draw_seed,
        "cached_scores": (
            "this store's own and scores imported from bundles (unverified, on request)"
            if config.use_imported_scores
            else "this store's own only (scores imported from bundles not read)"
        ),
        "test_draws": (
            "uniformly at random without replacement from each generator's pool"
            if config.draw_seed is not None
            else "in the given order (a score table is already a drawn sequence)"
        ),
    }
