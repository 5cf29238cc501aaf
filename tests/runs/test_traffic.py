"""Live traffic in the store, and pre/post scored at the same time for served checkpoints.

Stand-in verifiers here answer from a fixed table but behave like served ones where it matters:
they say they are network-bound (`io_bound`), count requests (`traffic()`) and take time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from eraudit_core.method import AuditConfig, AuditItem
from eraudit_core.runs import AuditEngine
from eraudit_core.runs._traffic import TrafficRecorder
from eraudit_core.store import Store
from eraudit_core.types import Paraphrase, Query, QueryScore


class SlowServed:
    """Answers p_true from `p`, sleeping `delay` per call; counts like a served verifier."""

    io_bound = True

    def __init__(self, name: str, p: float, delay: float, log: list) -> None:
        self.name, self.p, self.delay, self.log = name, p, delay, log
        self.prompts = 0
        self.in_flight = 0

    @property
    def fingerprint(self) -> str:
        return f"slow-{self.name}"

    def traffic(self) -> dict[str, int]:
        return {"in_flight": self.in_flight, "requests": self.prompts, "prompts": self.prompts}

    def score(self, queries: Sequence[Query]) -> list[QueryScore]:
        self.in_flight = 2 * len(queries)
        start = time.monotonic()
        time.sleep(self.delay)
        self.log.append((self.name, start, time.monotonic(), threading.get_ident()))
        self.in_flight = 0
        self.prompts += 2 * len(queries)
        return [QueryScore(self.p) for _ in queries]


def _items(n: int) -> list[AuditItem]:
    out = []
    for i in range(n):
        pid = f"p{i}"
        tests = tuple(
            Paraphrase(pid, "test", "g", j, f"Question {i} variant {j}?") for j in range(4)
        )
        out.append(
            AuditItem(
                pair_id=pid,
                index=i,
                monitored=Query(pid, f"Monitored {i}?", "yes", "no"),
                hidden=Query(pid, f"Hidden {i}?", "yes", "no"),
                search=(),
                tests={"g": tests},
            )
        )
    return out


def test_served_pre_and_post_are_scored_at_the_same_time_and_traffic_is_stored() -> None:
    log: list = []
    store = Store(":memory:")
    pre, post = SlowServed("pre", 0.6, 0.3, log), SlowServed("post", 0.6, 0.3, log)
    config = AuditConfig(epsilon=0.1, test_budget=4, batch_size=4, test_generators=("g",))
    engine = AuditEngine(store, pre, post, config)
    run_id = engine.start(_items(2))
    calls = {name: [(a, b, tid) for n, a, b, tid in log if n == name] for name in ("pre", "post")}
    # Every pre call overlaps the post call of the same batch, on another thread: that is the
    # concurrency, shown without timing the run (a wall-clock bound fails on a loaded machine).
    for (a1, b1, t1), (a2, b2, t2) in zip(calls["pre"], calls["post"], strict=True):
        assert max(a1, a2) < min(b1, b2) and t1 != t2
    traffic = store.run_progress(run_id)["traffic"]
    assert traffic["prompts"] == pre.prompts + post.prompts > 0
    assert traffic["in_flight"] == 0 and traffic["prompts_per_s_session"] > 0


def test_local_verifiers_run_one_after_the_other_and_store_no_traffic() -> None:
    """Negative control: without io_bound, pre and post never overlap, and nothing is stored."""
    log: list = []
    store = Store(":memory:")
    pre, post = SlowServed("pre", 0.6, 0.05, log), SlowServed("post", 0.6, 0.05, log)
    for v in (pre, post):
        v.io_bound = False  # type: ignore[misc]
        v.traffic = None  # type: ignore[assignment,method-assign]
    config = AuditConfig(epsilon=0.1, test_budget=2, batch_size=2, test_generators=("g",))
    run_id = AuditEngine(store, pre, post, config).start(_items(1))
    spans = sorted((a, b) for _, a, b, _ in log)
    assert all(b1 <= a2 for (_, b1), (a2, _) in zip(spans, spans[1:], strict=False))
    assert store.run_progress(run_id)["traffic"] is None


def test_recorder_counts_from_its_start_and_measures_a_recent_rate() -> None:
    store = Store(":memory:")
    store.create_run("r", label="r", config=AuditConfig().to_dict(), n_pairs=1)

    class Counter:
        def __init__(self) -> None:
            self.n = 100  # done before this run started: not this run's

        def traffic(self) -> dict[str, int]:
            return {"in_flight": 4, "prompts_in_flight": 32, "prompts": self.n}

    c = Counter()
    rec = TrafficRecorder(store, "r", [c, c], interval_s=0.05).start()
    for _ in range(10):
        c.n += 5
        time.sleep(0.03)
    rec.stop()
    snap = store.run_progress("r")["traffic"]
    assert snap["prompts"] == 50  # counted once although pre and post are the same object
    assert snap["in_flight"] == 0 and snap["peak_in_flight"] == 4
    # Prompts in flight are a gauge like requests in flight (8 prompts a request here), not
    # a total counted from the start (which would read 32 - 32 = 0).
    assert snap["prompts_in_flight"] == 0 and snap["peak_prompts_in_flight"] == 32
    assert 50 < snap["prompts_per_s_session"] < 250  # 50 prompts in ~0.3-0.5 s
