"""Search and test sets: disjoint, deduplicated, test generators in a fixed order, stored with
provenance (docs/design.md §4-5). Stage 2 needs paraphrases never used in stage 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from eraudit_core.errors import InputError
from eraudit_core.paraphrase._filter import (
    CosineFn,
    FilterConfig,
    Rejection,
    filter_paraphrases,
    normalize_text,
)
from eraudit_core.paraphrase._registry import ParaphraseGenerator, generator_provenance
from eraudit_core.types import Pair, Paraphrase

SetRole = Literal["search", "test"]


# --------------------------------------------------------------------------------------------
# Search and test sets


@dataclass
class ParaphraseSets:
    """Filtered, disjoint search and test sets for some pairs, with everything to store them."""

    paraphrases: list[Paraphrase] = field(default_factory=list)
    cosines: list[float] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)
    requested: dict[tuple[str, str], int] = field(default_factory=dict)

    def for_pair(
        self, pair_id: str, role: SetRole | None = None, generator: str | None = None
    ) -> list[Paraphrase]:
        return [
            p
            for p in self.paraphrases
            if p.pair_id == pair_id
            and (role is None or p.role == role)
            and (generator is None or p.generator == generator)
        ]


def build_paraphrase_sets(
    pairs: Sequence[Pair],
    search: Sequence[ParaphraseGenerator],
    test: Sequence[ParaphraseGenerator],
    n_search: int,
    n_test: int,
    config: FilterConfig | None = None,
    oversample: float = 2.0,
    cosine_fn: CosineFn | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ParaphraseSets:
    """Generate, filter and deduplicate paraphrases into disjoint search and test sets.

    Generators run in the given order (search first, then the test generators in the user's
    fixed order). Each one is asked for ``ceil(n * oversample)`` candidates; the first `n`
    that pass the filter are kept. A text already kept for the pair (by any earlier generator,
    search or test) is rejected as a duplicate, which makes every set disjoint from the others.
    """
    if n_search < 0 or n_test < 0:
        raise InputError(f"n_search and n_test must be >= 0, got {n_search}/{n_test}")
    if oversample < 1.0:
        raise InputError(f"oversample must be >= 1, got {oversample!r}")
    names = [g.name for g in (*search, *test)]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"generator names must be distinct across search and test: {dupes}")
    config = config or FilterConfig()
    out = ParaphraseSets()
    plan: list[tuple[SetRole, ParaphraseGenerator, int]] = [
        *(("search", g, n_search) for g in search),
        *(("test", g, n_test) for g in test),
    ]
    for role, gen, _n in plan:
        out.provenance[gen.name] = {
            **generator_provenance(gen),
            "role": role,
            "filter": config.to_dict(),
        }
    # Generate everything first, then embed all candidates in large batches (far faster than
    # one small batch per pair), then filter pair by pair in the fixed generator order.
    candidates: dict[tuple[str, str], list[str]] = {}
    for pair in pairs:
        for _role, gen, n in plan:
            if n == 0:
                continue
            asked = math.ceil(n * oversample)
            candidates[(pair.pair_id, gen.name)] = list(
                gen.generate(pair.pair_id, pair.hidden.question, asked)
            )
            out.requested[(pair.pair_id, gen.name)] = asked
    if cosine_fn is None:
        cosine_fn = _batched_cosines(
            [
                (p.hidden.question, candidates.get((p.pair_id, g.name), []))
                for p in pairs
                for _r, g, _n in plan
            ]
        )
    for done, pair in enumerate(pairs):
        used: dict[str, str] = {}
        for role, gen, n in plan:
            if n == 0:
                continue
            res = filter_paraphrases(
                pair.pair_id,
                pair.hidden,
                candidates[(pair.pair_id, gen.name)],
                gen.name,
                config,
                used,
                cosine_fn,
            )
            out.rejections.extend(res.rejected)
            for idx, (text, cos) in enumerate(zip(res.accepted[:n], res.cosines[:n], strict=True)):
                out.paraphrases.append(Paraphrase(pair.pair_id, role, gen.name, idx, text))
                out.cosines.append(cos)
                used[normalize_text(text)] = f"the {role} set of {gen.name}"
        if progress is not None:
            progress(done + 1, len(pairs))
    check_disjoint(out.paraphrases)
    return out


def _batched_cosines(groups: Sequence[tuple[str, Sequence[str]]]) -> CosineFn:
    """Embed every distinct text of all groups at once; return a lookup with cosine_fn's shape."""
    from eraudit_core.paraphrase._embeddings import embed

    texts = list(dict.fromkeys(t for orig, cands in groups for t in (orig, *cands)))
    texts = [" ".join(t.split()) for t in texts]
    texts = list(dict.fromkeys(texts))
    vectors = embed(texts)
    index = {t: i for i, t in enumerate(texts)}

    def lookup(original: str, cands: Sequence[str]) -> list[float]:
        missing = [c for c in (original, *cands) if " ".join(c.split()) not in index]
        if missing:
            from eraudit_core.paraphrase._embeddings import cosine_to_original

            return cosine_to_original(original, cands)
        o = vectors[index[" ".join(original.split())]]
        return [float(vectors[index[" ".join(c.split())]] @ o) for c in cands]

    return lookup


def check_disjoint(paraphrases: Iterable[Paraphrase]) -> None:
    """Raise InputError if a pair has the same (normalised) text twice in any set or role."""
    seen: dict[tuple[str, str], Paraphrase] = {}
    for p in paraphrases:
        key = (p.pair_id, normalize_text(p.text))
        if key in seen:
            q = seen[key]
            raise InputError(
                f"pair {p.pair_id}: paraphrase {p.text!r} appears in {q.role}/{q.generator} "
                f"idx {q.idx} and in {p.role}/{p.generator} idx {p.idx}; sets must be disjoint"
            )
        seen[key] = p


def store_paraphrase_sets(store: Any, benchmark_id: str, sets: ParaphraseSets) -> int:
    """Store the sets (one call per generator, with its provenance) and all rejections.

    Disjointness is checked against what the store already holds for the benchmark before
    anything is written, so a clash leaves the store untouched. Returns the number stored.
    """
    existing = list(store.paraphrases(benchmark_id))
    # an identical record already stored is fine (storing is idempotent); anything else that
    # repeats a text breaks disjointness
    check_disjoint(dict.fromkeys([*existing, *sets.paraphrases]))
    stored = 0
    for name in dict.fromkeys(p.generator for p in sets.paraphrases):
        batch = [p for p in sets.paraphrases if p.generator == name]
        stored += int(store.add_paraphrases(benchmark_id, batch, sets.provenance.get(name, {})))
    if sets.rejections:
        store.add_rejections(benchmark_id, sets.rejections)
    return stored
