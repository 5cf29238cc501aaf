"""What a run of stored inputs audits and what it will cost, before it starts.

`build_items` turns a benchmark's stored pairs and paraphrase sets into audit items (with the
run's seeded draw order); `expected_queries` and `pool_warnings` size a run from those items
for the CLI's and the dashboard's confirmation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig, AuditItem
from eraudit_core.runs._inputs import draw_order
from eraudit_core.store import Store
from eraudit_core.types import Paraphrase, Query


def build_items(
    store: Store,
    benchmark_id: str,
    pair_ids: Sequence[str] | None,
    config: AuditConfig,
    limit: int | None = None,
) -> tuple[list[AuditItem], AuditConfig]:
    """Audit items from stored pairs and paraphrases; fills in the generators when unset.

    Test generators default to every stored test generator, by name; the returned config
    records the ones used so the run is reproducible. With `config.draw_seed` set, each
    generator's pool is put in its seeded random draw order (stage 2 takes a prefix).
    """
    if limit is not None and not (isinstance(limit, int) and limit >= 1):
        raise InputError(f"limit must be a whole number >= 1 (pairs to audit), got {limit!r}")
    pairs = store.pairs(benchmark_id)
    if pair_ids:
        known = {p.pair_id: p for p in pairs}
        unknown = [pid for pid in pair_ids if pid not in known]
        if unknown:
            raise InputError(
                f"benchmark {benchmark_id}: unknown pair id(s) {', '.join(unknown[:5])}"
            )
        pairs = [known[pid] for pid in pair_ids]
    if limit:
        pairs = pairs[:limit]
    sets = store.paraphrase_sets(benchmark_id)
    _check_generators(benchmark_id, sets, config)
    test_gens = config.test_generators or tuple(
        sorted(sets.loc[sets["role"] == "test", "generator"].unique())
    )
    search_gens = config.search_generators or tuple(
        sorted(sets.loc[sets["role"] == "search", "generator"].unique())
    )
    config = replace(config, test_generators=tuple(test_gens), search_generators=tuple(search_gens))
    items = []
    for pair in pairs:
        paras = store.paraphrases(benchmark_id, pair_id=pair.pair_id)
        search = tuple(p for p in paras if p.role == "search" and p.generator in search_gens)
        tests: dict[str, tuple[Paraphrase, ...]] = {
            g: tuple(p for p in paras if p.role == "test" and p.generator == g) for g in test_gens
        }
        if config.draw_seed is not None:
            tests = {
                g: draw_order(pool, config.draw_seed, pair.pair_id, g) for g, pool in tests.items()
            }
        items.append(
            AuditItem(
                pair_id=pair.pair_id,
                index=pair.index,
                monitored=Query(
                    pair.pair_id,
                    pair.monitored.question,
                    pair.monitored.true_option,
                    pair.monitored.false_option,
                ),
                hidden=Query(
                    pair.pair_id,
                    pair.hidden.question,
                    pair.hidden.true_option,
                    pair.hidden.false_option,
                ),
                search=search,
                tests=tests,
            )
        )
    return items, config


def _check_generators(benchmark_id: str, sets: Any, config: AuditConfig) -> None:
    """Refuse a named generator that has no paraphrase set of its role for the benchmark: a
    run configured with it would audit nothing under that name (every pair inconclusive) and
    store the name as if it had been used. The error lists the generators there are."""
    for role, names in (("search", config.search_generators), ("test", config.test_generators)):
        known = sorted(str(g) for g in sets.loc[sets["role"] == role, "generator"].unique())
        unknown = [g for g in names if g not in known]
        if unknown:
            raise InputError(
                f"{role}_generators (--{role}-generators): unknown generator(s) "
                f"{', '.join(map(repr, unknown))} for benchmark {benchmark_id}; its stored "
                f"{role} generators are {', '.join(known) or 'none'} "
                "(`eraudit paraphrase` adds a set)"
            )


def expected_queries(
    store: Store,
    benchmark_id: str,
    pair_ids: Sequence[str] | None,
    config: AuditConfig,
    limit: int | None = None,
) -> dict[str, Any]:
    """What a run will cost before it starts: n*, pool sizes and the most model queries.

    A query is one question put to one checkpoint (two forward passes: both answer orders).
    `pools` gives each test generator's pool size M over the selected pairs (smallest,
    median, largest); `warnings` names pools smaller than the test budget or than n* (the
    run proceeds: such a generator stops at the end of its pool, with a weaker bound).
    """
    items, config = build_items(store, benchmark_id, pair_ids, config, limit)
    stop_after = config.stop_after
    per_gen_cap = config.test_budget if stop_after is None else min(config.test_budget, stop_after)
    search = sum(min(len(it.search), config.search_budget) for it in items)
    test = sum(min(len(ps), per_gen_cap) for it in items for ps in it.tests.values())
    canonical = 2 * len(items)
    pools = {
        g: {"min": sizes[0], "median": sizes[len(sizes) // 2], "max": sizes[-1]}
        for g in config.test_generators
        if (sizes := sorted(len(it.tests.get(g, ())) for it in items))
    }
    return {
        "n_pairs": len(items),
        "n_star": config.n_star,
        "test_generators": list(config.test_generators),
        "pools": pools,
        "warnings": pool_warnings(items, config),
        "search_paraphrases": search,
        "max_test_paraphrases": test,
        "max_model_queries": 2 * (canonical + search + test),
        "max_forward_passes": 4 * (canonical + search + test),
    }


def pool_warnings(items: Sequence[AuditItem], config: AuditConfig) -> list[str]:
    """Pools that cannot give the configured test: empty (inconclusive pairs) or smaller than
    the budget / n* (those pairs stop at the end of their pool, with a weaker bound)."""
    out = []
    if config.n_star is not None and config.test_budget < config.n_star:
        out.append(
            f"the test budget {config.test_budget} is below n* = {config.n_star}: no pair can "
            f"reach p* = {config.target:g}, so none can be certified"
        )
    need = min(config.test_budget, config.n_star or config.test_budget)
    what = f"n* = {config.n_star}" if config.n_star is not None else "the test budget"
    for g in config.test_generators:
        sizes = [len(it.tests.get(g, ())) for it in items]
        empty = sum(1 for n in sizes if n == 0)
        small = sorted(n for n in sizes if 0 < n < need)
        if empty:
            out.append(
                f"generator {g}: {empty} of {len(sizes)} pairs have no paraphrases; they will "
                "be inconclusive"
            )
        if small:
            out.append(
                f"generator {g}: the pool of {len(small)} of {len(sizes)} pairs is smaller than "
                f"{what} (smallest {small[0]}); those pairs stop at the end of their pool"
            )
    return out
