"""Which questions the one-click live audit asks (`eraudit_core.demo.demo_live_pair_ids`).

The audit's time on a CPU is its prompt tokens, so after one adversarial target the untouched
pairs whose pools can reach n* are taken shortest prompts first. Built on a hand-made store
whose expected choice is read off the lengths written here, not from the function.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eraudit_core import demo
from eraudit_core.store import Store, parse_benchmark
from eraudit_core.types import Paraphrase

N_STAR = demo.demo_live_config().n_star
GENERATORS = ("rules-a", "rules-b")


def _pair(pid: str, option_chars: int) -> dict[str, object]:
    return {
        "pair_id": pid,
        "story_title": f"Story {pid}",
        "monitored": {"question": f"Monitored {pid}?", "true": "yes", "false": "no"},
        "hidden": {
            "question": f"Hidden question of {pid}?",
            "true": "t" * option_chars,
            "false": "f" * option_chars,
        },
    }


def _pool(pid: str, test_sizes: tuple[int, int]) -> list[Paraphrase]:
    out = [
        Paraphrase(pid, "search", "search", j, f"Search wording {j} of {pid}?") for j in range(8)
    ]
    for generator, size in zip(GENERATORS, test_sizes, strict=True):
        out += [
            Paraphrase(pid, "test", generator, j, f"{generator} wording {j} of {pid}?")
            for j in range(size)
        ]
    return out


def test_the_live_audit_asks_one_target_then_the_shortest_untouched_pairs_that_can_certify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert N_STAR is not None
    # (pair, characters of each hidden option, test pool size per generator)
    layout = [
        ("long", 80, (N_STAR, N_STAR)),  # first in the benchmark, the longest prompts
        ("short-pool", 5, (N_STAR, N_STAR - 1)),  # shortest, but one pool cannot reach n*
        ("medium", 40, (N_STAR + 3, N_STAR)),
        ("target-a", 1, (N_STAR, N_STAR)),  # adversarial targets: only the first is asked
        ("target-b", 1, (N_STAR, N_STAR)),
        ("short", 10, (N_STAR, N_STAR + 5)),
    ]
    monkeypatch.setattr(demo, "adversarial_targets", lambda: ["target-a", "target-b"])
    raw = "".join(json.dumps(_pair(pid, chars)) + "\n" for pid, chars, _ in layout).encode()
    with Store(tmp_path / "s.duckdb") as store:
        bid = store.add_benchmark(parse_benchmark(raw, source="live.jsonl", name="Live"))
        pool = [p for pid, _, sizes in layout for p in _pool(pid, sizes)]
        store.add_paraphrases(bid, pool, {"generator": "test"})
        assert demo.demo_live_pair_ids(store, bid) == ["target-a", "short", "medium"]


def test_a_store_without_test_pools_offers_only_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo, "adversarial_targets", lambda: ["target-a"])
    layout = [("target-a", 1), ("untested", 1)]
    raw = "".join(json.dumps(_pair(pid, chars)) + "\n" for pid, chars in layout).encode()
    with Store(tmp_path / "s.duckdb") as store:
        bid = store.add_benchmark(parse_benchmark(raw, source="live.jsonl", name="Live"))
        store.add_paraphrases(bid, [p for pid, _ in layout for p in _pool(pid, (0, 0))], {})
        assert demo.demo_live_pair_ids(store, bid) == ["target-a"]


def test_the_bundled_live_pairs_read_less_than_the_benchmark_order_would(tmp_path: Path) -> None:
    """On the bundled demo: the target first, then two untouched pairs that can certify and
    read no more than the first two eligible ones in benchmark order (the choice before)."""
    with Store(tmp_path / "s.duckdb") as store:
        info = demo.demo_start(store)
        bid, live = info.benchmark_id, info.live_pair_ids
        targets = demo.adversarial_targets()
        assert live[0] == targets[0] and not set(live[1:]) & set(targets)
        pairs = {p.pair_id: p for p in store.pairs(bid)}
        pools: dict[str, list[Paraphrase]] = {}
        for p in store.paraphrases(bid):
            pools.setdefault(p.pair_id, []).append(p)

        def reading(pid: str) -> float:
            return demo.live_pair_reading(
                pairs[pid], pools[pid], demo.demo_live_config().search_budget, N_STAR or 1
            )

        def can_certify(pid: str) -> bool:
            sizes = [
                sum(1 for p in pools.get(pid, []) if p.role == "test" and p.generator == g)
                for g in GENERATORS
            ]
            return min(sizes) >= (N_STAR or 1)

        assert all(can_certify(pid) for pid in live[1:])
        in_order = [pid for pid in pairs if can_certify(pid) and pid not in targets][:2]
        assert sum(map(reading, live[1:])) < 0.7 * sum(map(reading, in_order))
