"""The two-stage ER-Audit engine (DESIGN.md §4, paper §3.2-3.4, Algorithms 1-2).

Pure orchestration: it asks two verifiers for scores (through the score cache), applies the
degradation rule and the bounds, writes every step to the store, and reports progress through
a callback. It never formats a chart and never talks to a UI.

Per pair:
1. score the canonical monitored question with both checkpoints -> gain g, den = max(k, g);
   score the canonical hidden question (for the standard-evaluation views);
2. stage 1: score every search paraphrase; any D > epsilon -> DEGRADED, bound 0;
3. stage 2: for each test generator in order, t = 1, 2, ...: D(x_t) > epsilon -> DEGRADED,
   stop the pair (unless the failure-tolerant mode asks to continue); else L_t = alpha**(1/t).
   A generator stops at its budget, at its last paraphrase, or once L_t >= p*;
4. common bound min_g L_g, then max(0, L - delta) for the total-variation relaxation.

A resumed run skips pairs already finished and replays an unfinished pair from the score
cache, so it reaches the same result without scoring any stored prompt again.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from eraudit_core.audit import _bounds as B
from eraudit_core.audit._degradation import (
    DEFAULT_K,
    degradation_denominator,
    degradation_score,
    is_counterexample,
    monitored_gain,
)
from eraudit_core.errors import CancelledError, InputError
from eraudit_core.store import PairResult, StepRecord, Store
from eraudit_core.types import Paraphrase, Query, QueryScore, Verifier


@dataclass(frozen=True)
class AuditConfig:
    """Everything that decides a run's result; validated where it enters, by field name."""

    epsilon: float = 0.1
    k: float = DEFAULT_K
    confidence: float = 0.95
    search_budget: int = 100
    test_budget: int = 100
    target: float | None = None
    tv_delta: float = 0.0
    search_generators: tuple[str, ...] = ()
    test_generators: tuple[str, ...] = ()
    continue_after_counterexample: bool = False
    tolerant_prior: tuple[float, float] = (1.0, 1.0)
    batch_size: int = 16

    def __post_init__(self) -> None:
        def bad(name: str, why: str) -> InputError:
            return InputError(f"AuditConfig.{name} {why}, got {getattr(self, name)!r}")

        if not math.isfinite(self.epsilon):
            raise bad("epsilon", "must be a finite number")
        if not (self.k > 0 and math.isfinite(self.k)):
            raise bad("k", "must be a positive number")
        if not 0.0 < self.confidence < 1.0:
            raise bad("confidence", "must lie strictly between 0 and 1 (e.g. 0.95)")
        if self.search_budget < 0:
            raise bad("search_budget", "must be >= 0")
        if self.test_budget < 1:
            raise bad("test_budget", "must be >= 1")
        if self.target is not None and not 0.0 < self.target < 1.0:
            raise bad("target", "must lie strictly between 0 and 1 or be empty")
        if not 0.0 <= self.tv_delta <= 1.0:
            raise bad("tv_delta", "must lie in [0, 1]")
        if self.batch_size < 1:
            raise bad("batch_size", "must be >= 1")
        if len(set(self.test_generators)) != len(self.test_generators):
            raise bad("test_generators", "must not repeat a generator")
        a, b = self.tolerant_prior
        if not (a > 0 and b > 0):
            raise bad("tolerant_prior", "must be two positive numbers")

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def n_star(self) -> int | None:
        """Successes needed for L_t >= p* (None without a target)."""
        return None if self.target is None else B.required_successes(self.target, self.confidence)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditConfig:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise InputError(f"AuditConfig: unknown field(s) {sorted(unknown)}")
        values = dict(data)
        for key in ("search_generators", "test_generators", "tolerant_prior"):
            if key in values:
                values[key] = tuple(values[key])
        return cls(**values)


@dataclass(frozen=True)
class AuditItem:
    """One pair ready to audit: canonical queries plus its paraphrase sets."""

    pair_id: str
    index: int
    monitored: Query
    hidden: Query
    search: tuple[Paraphrase, ...] = ()
    tests: Mapping[str, tuple[Paraphrase, ...]] = field(default_factory=dict)

    def hidden_query(self, text: str) -> Query:
        """A paraphrase asked with the hidden question's options."""
        return Query(self.pair_id, text, self.hidden.true_option, self.hidden.false_option)


@dataclass(frozen=True)
class Progress:
    """What the engine tells its caller after each step (for live views and the CLI)."""

    run_id: str
    pair_id: str
    pairs_done: int
    n_pairs: int
    stage: int
    generator: str
    t: int
    bound: float | None
    queries_scored: int
    queries_cached: int
    elapsed_s: float


ProgressCallback = Callable[[Progress], None]


class CachedScorer:
    """A verifier behind the store's score cache: no (fingerprint, prompt) is scored twice."""

    def __init__(self, verifier: Verifier, store: Store) -> None:
        self.verifier = verifier
        self.store = store
        self.fingerprint = verifier.fingerprint
        self.scored = 0
        self.cached = 0

    def score(self, queries: Sequence[Query]) -> list[QueryScore]:
        hashes = [q.prompt_hash for q in queries]
        found = self.store.cached_scores(self.fingerprint, hashes)
        missing: dict[str, Query] = {}
        for q, h in zip(queries, hashes, strict=True):
            if h not in found and h not in missing:
                missing[h] = q
        if missing:
            fresh = self.verifier.score(list(missing.values()))
            if len(fresh) != len(missing):
                raise RuntimeError(
                    f"verifier {self.fingerprint} returned {len(fresh)} scores for "
                    f"{len(missing)} queries"
                )
            new = dict(zip(missing, fresh, strict=True))
            self.store.put_scores(self.fingerprint, new)
            found.update(new)
        self.scored += len(missing)
        self.cached += len(queries) - len(missing)
        return [found[h] for h in hashes]


def new_run_id() -> str:
    return time.strftime("run-%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


class AuditEngine:
    """Runs (or resumes) one audit and writes it to the store."""

    def __init__(
        self,
        store: Store,
        pre: Verifier,
        post: Verifier,
        config: AuditConfig,
        progress: ProgressCallback | None = None,
        should_cancel: Callable[[], bool] | None = None,
    ) -> None:
        self.store = store
        self.pre = CachedScorer(pre, store)
        self.post = CachedScorer(post, store)
        self.config = config
        self.progress = progress
        self.should_cancel = should_cancel

    # -- public ---------------------------------------------------------------------------
    def start(
        self,
        items: Sequence[AuditItem],
        *,
        label: str = "",
        run_id: str | None = None,
        benchmark_id: str | None = None,
        source: str = "",
        names: tuple[str, str] = ("pre", "post"),
    ) -> str:
        """Create the run record, then audit every item. Returns the run id."""
        run_id = create_run_record(
            self.store,
            items,
            self.config,
            label=label,
            run_id=run_id,
            benchmark_id=benchmark_id,
            source=source,
            names=names,
            fingerprints=(self.pre.fingerprint, self.post.fingerprint),
        )
        self.resume(run_id, items)
        return run_id

    def resume(self, run_id: str, items: Sequence[AuditItem]) -> None:
        """Audit the items not yet finished in `run_id` (also used for a fresh run)."""
        run = self.store.run(run_id)
        stored = AuditConfig.from_dict(run["config"])
        if stored != self.config:
            raise InputError(f"run {run_id}: the configuration differs from the stored one")
        mine = (self.pre.fingerprint, self.post.fingerprint)
        stored_fps = (run["pre_fingerprint"] or "", run["post_fingerprint"] or "")
        if stored_fps == ("", ""):  # created before its checkpoints were loaded
            self.store.set_run_checkpoints(run_id, *mine)
        elif stored_fps != mine:
            raise InputError(f"run {run_id}: the checkpoints differ from the stored ones")
        done = self.store.finished_pair_ids(run_id)
        self.store.set_run_status(run_id, "running")
        t0 = time.monotonic()
        try:
            for item in items:
                if item.pair_id in done:
                    continue
                self._check_cancel(run_id)
                before = (self.pre.scored + self.post.scored, self.pre.cached + self.post.cached)
                result = self._audit_pair(run_id, item, len(done), len(items), t0)
                self.store.finish_pair(run_id, result)
                self.store.add_query_counts(
                    run_id,
                    self.pre.scored + self.post.scored - before[0],
                    self.pre.cached + self.post.cached - before[1],
                )
                done.add(item.pair_id)
                self._report(run_id, item.pair_id, len(done), len(items), 0, "", 0, None, t0)
        except CancelledError:
            self.store.set_run_status(run_id, "cancelled", "cancelled by the user")
            raise
        except BaseException as exc:
            self.store.set_run_status(run_id, "failed", f"{type(exc).__name__}: {exc}")
            raise
        self.store.set_run_status(run_id, "done")

    # -- one pair -------------------------------------------------------------------------
    def _check_cancel(self, run_id: str) -> None:
        if (self.should_cancel and self.should_cancel()) or self.store.cancel_requested(run_id):
            raise CancelledError(f"run {run_id} cancelled")

    def _report(
        self,
        run_id: str,
        pair_id: str,
        done: int,
        n: int,
        stage: int,
        gen: str,
        t: int,
        bound: float | None,
        t0: float,
    ) -> None:
        if self.progress:
            self.progress(
                Progress(
                    run_id,
                    pair_id,
                    done,
                    n,
                    stage,
                    gen,
                    t,
                    bound,
                    self.pre.scored + self.post.scored,
                    self.pre.cached + self.post.cached,
                    time.monotonic() - t0,
                )
            )

    def _pre_post(self, queries: Sequence[Query]) -> list[tuple[float, float]]:
        pre = self.pre.score(queries)
        post = self.post.score(queries)
        return [(a.p_true, b.p_true) for a, b in zip(pre, post, strict=True)]

    def _audit_pair(
        self, run_id: str, item: AuditItem, done: int, n_pairs: int, t0: float
    ) -> PairResult:
        cfg = self.config
        self.store.start_pair(run_id, item.pair_id)
        canon = [item.monitored] + ([item.hidden] if item.hidden.question else [])
        scores = self._pre_post(canon)
        p_pre_m, p_post_m = scores[0]
        p_pre_h, p_post_h = scores[1] if len(scores) > 1 else (None, None)
        gain = monitored_gain(p_pre_m, p_post_m)
        den = degradation_denominator(gain, cfg.k)
        all_d: list[float] = []

        # Stage 1: counterexample search over the whole (budgeted) search set.
        search = list(item.search[: cfg.search_budget])
        steps: list[StepRecord] = []
        for p, (a, b) in zip(
            search, self._pre_post([item.hidden_query(x.text) for x in search]), strict=True
        ):
            d = degradation_score(a, b, den)
            all_d.append(d)
            steps.append(
                StepRecord(
                    item.pair_id,
                    1,
                    p.generator,
                    len(steps) + 1,
                    p.idx,
                    p.text,
                    a,
                    b,
                    d,
                    is_counterexample(d, cfg.epsilon),
                )
            )
        self.store.add_steps(run_id, steps)
        n_cex = sum(s.is_counterexample for s in steps)
        if search:
            self._report(run_id, item.pair_id, done, n_pairs, 1, "search", len(search), None, t0)

        generators: list[dict[str, Any]] = []
        status, stage = "inconclusive", None
        n_test = 0
        target_reached = False
        if n_cex:
            status, stage = "degraded", 1
        else:
            stage2 = self._stage2(run_id, item, den, all_d, generators, done, n_pairs, t0)
            n_test, n_cex, target_reached = stage2
            ran = any(g["n"] > 0 for g in generators)
            if n_cex:
                status, stage = "degraded", 2
            elif ran and all(g["n"] > 0 for g in generators):
                status, stage = "certified", 2
        paper = [g["bound"] for g in generators]
        bound_common = 0.0 if status != "certified" else B.common_bound(paper)
        tolerant = [g["bound_tolerant"] for g in generators if g["n"] > 0]
        return PairResult(
            pair_id=item.pair_id,
            pair_index=item.index,
            monitored_question=item.monitored.question,
            hidden_question=item.hidden.question,
            status=status,
            stage=stage,
            gain=gain,
            denominator=den,
            p_pre_monitored=p_pre_m,
            p_post_monitored=p_post_m,
            p_pre_hidden=p_pre_h,
            p_post_hidden=p_post_h,
            max_d=max(all_d) if all_d else None,
            n_counterexamples=n_cex,
            n_search=len(search),
            n_test=n_test,
            bound_common=bound_common,
            bound=B.tv_relaxed_bound(bound_common, cfg.tv_delta),
            bound_tolerant=min(tolerant) if tolerant and stage != 1 else None,
            generators=generators,
            target_reached=target_reached,
        )

    def _stage2(
        self,
        run_id: str,
        item: AuditItem,
        den: float,
        all_d: list[float],
        generators: list[dict[str, Any]],
        done: int,
        n_pairs: int,
        t0: float,
    ) -> tuple[int, int, bool]:
        """Sequential test per generator; returns (rows scored, counterexamples, target hit)."""
        cfg = self.config
        n_star = cfg.n_star
        n_test = n_cex = 0
        all_reached = True
        stop_pair = False
        for gen in cfg.test_generators or tuple(item.tests):
            rows = list(item.tests.get(gen, ()))[: cfg.test_budget]
            record: dict[str, Any] = {
                "generator": gen,
                "available": len(item.tests.get(gen, ())),
                "n": 0,
                "n_counterexamples": 0,
                "bound": 0.0,
                "bound_tolerant": 0.0,
                "stop": "not run" if stop_pair else "no paraphrases",
            }
            generators.append(record)
            if stop_pair or not rows:
                all_reached = False
                continue
            outcomes: list[bool] = []
            t = 0
            stop = ""
            while not stop:
                self._check_cancel(run_id)
                want = len(rows) - t
                if n_star is not None:
                    want = min(want, max(1, n_star - sum(outcomes)))
                chunk = rows[t : t + min(cfg.batch_size, want)]
                scored = self._pre_post([item.hidden_query(p.text) for p in chunk])
                steps = []
                for p, (a, b) in zip(chunk, scored, strict=True):
                    t += 1
                    d = degradation_score(a, b, den)
                    all_d.append(d)
                    cex = is_counterexample(d, cfg.epsilon)
                    outcomes.append(not cex)
                    paper = (
                        0.0 if not all(outcomes) else B.lower_confidence_bound(t, cfg.confidence)
                    )
                    tol = B.failure_tolerant_lower_bound(
                        sum(outcomes), t, cfg.confidence, cfg.tolerant_prior
                    )
                    tol = max(tol, record["bound_tolerant"])
                    record.update(n=t, bound=paper, bound_tolerant=tol)
                    steps.append(
                        StepRecord(item.pair_id, 2, gen, t, p.idx, p.text, a, b, d, cex, paper, tol)
                    )
                    if cex:
                        record["n_counterexamples"] += 1
                        if not cfg.continue_after_counterexample:
                            stop = "counterexample"
                            break
                    if n_star is not None and all(outcomes) and t >= n_star:
                        stop = "target reached"
                        break
                    if t >= len(rows):
                        stop = "budget" if t >= cfg.test_budget else "last paraphrase"
                        break
                self.store.add_steps(run_id, steps)
                self._report(run_id, item.pair_id, done, n_pairs, 2, gen, t, record["bound"], t0)
            record["stop"] = stop
            n_test += t
            n_cex += record["n_counterexamples"]
            if record["n_counterexamples"] and not cfg.continue_after_counterexample:
                stop_pair = True
            if stop != "target reached":
                all_reached = False
        return n_test, n_cex, bool(n_star is not None and all_reached and generators)


def create_run_record(
    store: Store,
    items: Sequence[AuditItem],
    config: AuditConfig,
    *,
    label: str = "",
    run_id: str | None = None,
    benchmark_id: str | None = None,
    source: str = "",
    names: tuple[str, str] = ("pre", "post"),
    fingerprints: tuple[str, str] = ("", ""),
) -> str:
    """Validate the items and write a pending run; fingerprints may follow once models load."""
    _check_items(items, config)
    run_id = run_id or new_run_id()
    store.create_run(
        run_id,
        label=label or run_id,
        config=config.to_dict(),
        n_pairs=len(items),
        benchmark_id=benchmark_id,
        source=source,
        pre=(fingerprints[0], names[0]),
        post=(fingerprints[1], names[1]),
    )
    return run_id


def _check_items(items: Sequence[AuditItem], config: AuditConfig) -> None:
    if not items:
        raise InputError("nothing to audit: no pairs selected")
    seen: set[str] = set()
    for it in items:
        if it.pair_id in seen:
            raise InputError(f"pair {it.pair_id}: listed twice; field pair_id must be unique")
        seen.add(it.pair_id)
        search_texts = {p.text for p in it.search}
        seen_test: dict[str, tuple[str, int]] = {}
        for gen in config.test_generators or tuple(it.tests):
            for p in it.tests.get(gen, ()):
                if p.text in search_texts:
                    raise InputError(
                        f"pair {it.pair_id}: test paraphrase {gen} #{p.idx} was also in the search "
                        f"set; stage 2 needs fresh paraphrases"
                    )
                if p.text in seen_test:
                    g0, i0 = seen_test[p.text]
                    raise InputError(
                        f"pair {it.pair_id}: test paraphrase {gen} #{p.idx} repeats {g0} #{i0}; "
                        f"stage 2 counts each paraphrase as an independent draw, so field text "
                        f"must be unique among test paraphrases"
                    )
                seen_test[p.text] = (gen, p.idx)
