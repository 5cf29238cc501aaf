"""The two-stage ER-Audit engine (docs/design.md §4, paper §3.2-3.4, Algorithms 1-2).

Pure orchestration: it asks two verifiers for scores (through the score cache), computes each
rewording's degradation score, hands it to the question's `PairAudit` (which alone decides
counterexamples, stops and the verdict), writes every step to the store, and reports progress
through a callback. It never formats a chart and never talks to a UI.

Per pair (`_audit_pair`):
1. score the canonical monitored question with both checkpoints -> gain g, den = max(k, g);
   score the canonical hidden question (for the standard-evaluation views);
2. stage 1: score every search paraphrase within the budget and feed each D to the audit;
3. stage 2 (`_stage2`, the per-step loop): while the audit names a generator that needs a
   draw, score the next batch of its pool (in the run's seeded random order) and feed the
   scores one at a time;
4. store the audit's verdict with the pair.

A resumed run skips pairs already finished and replays an unfinished pair from the score
cache, so it reaches the same result without scoring any stored prompt again; it refuses to
resume when the config, the checkpoints or the paraphrase sets changed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from eraudit_core.errors import CancelledError, InputError
from eraudit_core.method import (
    AuditConfig,
    AuditItem,
    GeneratorTest,
    PairAudit,
    RunRecord,
    degradation_denominator,
    degradation_score,
    is_amplified,
    monitored_gain,
    probability_drop,
)
from eraudit_core.runs._inputs import items_digest, run_test_generators
from eraudit_core.runs._pace_gate import wait_for_pace
from eraudit_core.runs._record import (
    create_run_record,
)
from eraudit_core.runs._scorer_cache import CachedScorer
from eraudit_core.runs._traffic import TrafficRecorder
from eraudit_core.store import PairResult, StepRecord, Store
from eraudit_core.types import Paraphrase, Query, RunStatus, Verifier


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


def shared_trunk(pre: Verifier, post: Verifier) -> Any:
    """The shared-trunk plan when pre and post are local checkpoints that allow one, else None."""
    if pre is post or not (hasattr(pre, "_base") and hasattr(post, "_base")):
        return None
    from eraudit_core.verifier.hf import try_shared_trunk

    return try_shared_trunk(pre, post)


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
        self.pre, self.post = (
            CachedScorer(
                v,
                store,
                imported=config.use_imported_scores,
                min_label_mass=config.min_label_mass,
            )
            for v in (pre, post)
        )
        self.config = config
        self._generators: tuple[str, ...] = ()
        self.progress = progress
        self.should_cancel = should_cancel
        # told what the engine starts next ("scoring question 2 of 3: ..."), for a live view
        self.on_step: Callable[[str], None] | None = None
        self._cancel_flag = False  # the store's cancel flag, as read with the last batch
        # A served checkpoint waits on the network: score pre and post at the same time then.
        # (Not when both are one object: the second call then reads what the first scored.)
        self._parallel = pre is not post and bool(
            getattr(pre, "io_bound", False) or getattr(post, "io_bound", False)
        )
        self._side: ThreadPoolExecutor | None = None
        # Pre and post on one base whose adapters sit only on top layers: both are scored from
        # one pass over the shared bottom layers (docs/debate-distillation.md).
        self._trunk = None if self._parallel else shared_trunk(pre, post)

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
        provenance: Mapping[str, Any] | None = None,
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
            provenance=provenance,
        )
        self.resume(run_id, items)
        return run_id

    def resume(self, run_id: str, items: Sequence[AuditItem]) -> None:
        """Audit the items not yet finished in `run_id` (also used for a fresh run)."""
        run = RunRecord.read(self.store, run_id)
        if run.config != self.config:
            raise InputError(f"run {run_id}: the configuration differs from the stored one")
        digest = run.provenance.get("inputs_digest")
        if digest is not None and digest != items_digest(items):
            raise InputError(
                f"run {run_id}: its paraphrase sets or questions changed since it started "
                f"(inputs digest {items_digest(items)} != stored {digest}); start a new run"
            )
        self._generators = run_test_generators(items, self.config)
        mine = (self.pre.fingerprint, self.post.fingerprint)
        stored_fps = (run.pre_fingerprint or "", run.post_fingerprint or "")
        if stored_fps == ("", ""):  # created before its checkpoints were loaded
            self.store.set_run_checkpoints(run_id, *mine)
        elif stored_fps != mine:
            raise InputError(f"run {run_id}: the checkpoints differ from the stored ones")
        done = self.store.finished_pair_ids(run_id)
        self.store.set_run_status(run_id, RunStatus.RUNNING)
        t0 = time.monotonic()
        traffic = TrafficRecorder(self.store, run_id, [self.pre.verifier, self.post.verifier])
        traffic.start()
        try:
            for item in items:
                if item.pair_id in done:
                    continue
                self._check_cancel(run_id)
                before = (self.pre.scored + self.post.scored, self.pre.cached + self.post.cached)
                result = self._audit_pair(run_id, item, len(done), len(items), t0)
                with self.store.transaction():
                    self._record(run_id, [])
                    self.store.finish_pair(run_id, result)
                    self.store.add_query_counts(
                        run_id,
                        self.pre.scored + self.post.scored - before[0],
                        self.pre.cached + self.post.cached - before[1],
                    )
                done.add(item.pair_id)
                self._report(run_id, item.pair_id, len(done), len(items), 0, "", 0, None, t0)
        except (CancelledError, KeyboardInterrupt) as exc:
            how = "Ctrl-C" if isinstance(exc, KeyboardInterrupt) else "the user"
            self.store.set_run_status(run_id, RunStatus.CANCELLED, f"cancelled by {how}")
            raise
        except BaseException as exc:
            self.store.set_run_status(run_id, RunStatus.FAILED, f"{type(exc).__name__}: {exc}")
            raise
        finally:
            traffic.stop()
            if self._side is not None:
                self._side.shutdown(wait=True)
                self._side = None
        self.store.set_run_status(run_id, RunStatus.DONE)

    # -- one pair -------------------------------------------------------------------------
    def _check_cancel(self, run_id: str) -> None:
        self._cancel_flag = wait_for_pace(self.store, run_id) or self._cancel_flag
        if (self.should_cancel and self.should_cancel()) or self._cancel_flag:
            raise CancelledError(
                f"run {run_id} was cancelled; `eraudit resume {run_id}` continues it"
            )

    def _record(self, run_id: str, steps: Sequence[StepRecord]) -> None:
        """Write a batch (the post checkpoint's fresh scores and the steps) in one
        transaction, refresh the heartbeat and read the cancel flag."""
        scores = {s.fingerprint: s.take_unwritten() for s in (self.pre, self.post) if s.unwritten}
        self._cancel_flag = self.store.record_batch(run_id, scores, steps)

    def _begin_pair(self, run_id: str, item: AuditItem) -> None:
        """Forget an unfinished pair's steps; read its cached scores and the cancel flag."""
        cfg = self.config
        self.store.start_pair(run_id, item.pair_id)
        queries = [item.monitored, item.hidden] + [
            item.hidden_query(p.text)
            for p in (
                *item.search[: cfg.search_budget],
                *(x for pool in item.tests.values() for x in pool[: cfg.test_budget]),
            )
        ]
        with self.store.reading():
            self.pre.begin_pair(queries)
            self.post.begin_pair(queries)
            self._cancel_flag = self.store.cancel_requested(run_id)
        self._check_cancel(run_id)

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
        """Scores before and after. The pre scores are written at once; the post scores go
        with the batch's steps (`_record`, called right after), so one write per checkpoint
        and batch, and a process killed while the post checkpoint scores keeps the pre
        scores."""
        if self._parallel:
            if self._side is None:
                self._side = ThreadPoolExecutor(1, thread_name_prefix="score-pre")
            pending = self._side.submit(self.pre.score, queries)
            try:
                post = self.post.score(queries, write=False)
            finally:
                pre = pending.result()  # waits for pre even when post failed (keeps its scores)
        else:
            if self._trunk is not None:
                self._trunk.prime(self.pre.unknown(queries) + self.post.unknown(queries))
            pre = self.pre.score(queries)
            post = self.post.score(queries, write=False)
        return [(a.p_true, b.p_true) for a, b in zip(pre, post, strict=True)]

    def _audit_pair(
        self, run_id: str, item: AuditItem, done: int, n_pairs: int, t0: float
    ) -> PairResult:
        cfg = self.config
        if self.on_step is not None:
            self.on_step(f"scoring question {done + 1} of {n_pairs}: counterexample search")
        self._begin_pair(run_id, item)
        canon = [item.monitored] + ([item.hidden] if item.hidden.question else [])
        scores = self._pre_post(canon)
        p_pre_m, p_post_m = scores[0]
        p_pre_h, p_post_h = scores[1] if len(scores) > 1 else (None, None)
        gain = monitored_gain(p_pre_m, p_post_m)
        den = degradation_denominator(gain, cfg.k)
        all_steps: list[StepRecord] = []
        audit = PairAudit(cfg, [(gen, len(item.tests.get(gen, ()))) for gen in self._generators])

        # Stage 1: counterexample search over the whole (budgeted) search set.
        search = list(item.search[: cfg.search_budget])
        steps: list[StepRecord] = []
        for p, (a, b) in zip(
            search, self._pre_post([item.hidden_query(x.text) for x in search]), strict=True
        ):
            d, drop = degradation_score(a, b, den), probability_drop(a, b)
            cex = audit.search(d, drop)
            steps.append(self._step(item, p, 1, len(steps) + 1, (a, b, d, drop), cex))
        all_steps.extend(steps)
        self._record(run_id, steps)
        audit.end_search()
        if search:
            self._report(run_id, item.pair_id, done, n_pairs, 1, "search", len(search), None, t0)

        if self.on_step is not None:
            self.on_step(f"scoring question {done + 1} of {n_pairs}: sequential test")
        self._stage2(run_id, item, den, audit, all_steps, done, n_pairs, t0)
        verdict = audit.verdict()
        worst = max(all_steps, key=lambda x: x.d) if all_steps else None  # first of ties
        return PairResult(
            pair_id=item.pair_id,
            pair_index=item.index,
            monitored_question=item.monitored.question,
            hidden_question=item.hidden.question,
            status=verdict.status,
            stage=audit.stage,
            gain=gain,
            denominator=den,
            p_pre_monitored=p_pre_m,
            p_post_monitored=p_post_m,
            p_pre_hidden=p_pre_h,
            p_post_hidden=p_post_h,
            max_d=worst.d if worst else None,
            n_counterexamples=audit.n_counterexamples,
            n_search=audit.n_search,
            n_test=audit.n_test,
            bound_common=verdict.bound_common,
            bound=verdict.bound,
            bound_tolerant=verdict.bound_tolerant,
            generators=[g.to_dict() for g in audit.tests],
            target_reached=verdict.target_reached,
            worst_drop=worst.prob_drop if worst else None,
            amplified=is_amplified(gain, cfg.k),
            worst_stage=worst.stage if worst else None,
            worst_generator=worst.generator if worst else None,
            worst_t=worst.t if worst else None,
            worst_text=worst.text if worst else None,
            worst_p_pre=worst.p_pre if worst else None,
            worst_p_post=worst.p_post if worst else None,
            worst_prompt=(worst.prompt or self._prompt(item, worst.text)) if worst else None,
        )

    def _step(
        self,
        item: AuditItem,
        p: Paraphrase,
        stage: int,
        t: int,
        scores: tuple[float, float, float, float],
        cex: bool,
        test: GeneratorTest | None = None,
    ) -> StepRecord:
        """A scored rewording as stored: `scores` are p_pre, p_post, D and the drop; a stage-2
        step carries its generator's bounds right after the draw."""
        a, b, d, drop = scores
        return StepRecord(
            item.pair_id,
            stage,
            p.generator if test is None else test.generator,
            t,
            p.idx,
            p.text,
            a,
            b,
            d,
            cex,
            None if test is None else test.bound,
            None if test is None else test.bound_tolerant,
            prob_drop=drop,
            prompt=self._prompt(item, p.text) if cex else None,
        )

    def _prompt(self, item: AuditItem, text: str) -> str | None:
        """The exact texts the adapted checkpoint read for a rewording (true answer as A, as
        B), from the verifier's own rendering; None when scores came from a table."""
        render = getattr(self.post.verifier, "render", None)
        if render is None:
            return None
        return json.dumps(list(render(item.hidden_query(text))), ensure_ascii=False)

    def _stage2(
        self,
        run_id: str,
        item: AuditItem,
        den: float,
        audit: PairAudit,
        all_steps: list[StepRecord],
        done: int,
        n_pairs: int,
        t0: float,
    ) -> None:
        """The per-step loop of stage 2: score the draws the audit asks for, one batch of the
        current generator's pool at a time, and write each batch's steps."""
        cfg = self.config
        while (test := audit.current) is not None:
            self._check_cancel(run_id)
            pool = item.tests.get(test.generator, ())
            chunk = pool[test.n : test.n + min(cfg.batch_size, test.wanted())]
            scored = self._pre_post([item.hidden_query(p.text) for p in chunk])
            steps = []
            for p, (a, b) in zip(chunk, scored, strict=True):
                d, drop = degradation_score(a, b, den), probability_drop(a, b)
                cex = audit.test(d, drop)
                steps.append(self._step(item, p, 2, test.n, (a, b, d, drop), cex, test))
                if test.stop:
                    break
            all_steps.extend(steps)
            self._record(run_id, steps)
            self._report(
                run_id, item.pair_id, done, n_pairs, 2, test.generator, test.n, test.bound, t0
            )
