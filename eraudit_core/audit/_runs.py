"""Starting, resuming and sizing audits of real checkpoints over stored inputs.

The glue between the store (benchmark pairs, paraphrase sets), the verifier backends and the
engine, shared by the CLI and the dashboard so both start runs the same way. A run's inputs
(benchmark, pair ids, checkpoint specs) are written into `runs.source` as JSON, which is what
lets `resume_run` rebuild the same items after a crash or an app restart.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from eraudit_core.audit._config import AuditConfig, AuditItem
from eraudit_core.audit._engine import (
    AuditEngine,
    ProgressCallback,
    create_run_record,
    default_run_label,
    new_run_id,
)
from eraudit_core.audit._evidence import noise_floor_record
from eraudit_core.audit._inputs import draw_order
from eraudit_core.audit._request import RunRequest
from eraudit_core.errors import CancelledError, InputError, StoreError
from eraudit_core.jobs import Job, JobRunner
from eraudit_core.store import Store
from eraudit_core.types import Paraphrase, Query
from eraudit_core.verifier import (
    MIN_LABEL_MASS,
    MIN_TOP_SHARE,
    check_label_mass,
    measure_noise_floor,
    run_noise_floor,
    served_drift,
)


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


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class StepReporter:
    """What a run's worker is doing, written to the run (`phase`) as it starts each step, so
    any page polling the store can show "Step: <what> (<N> s)" with N counted from `origin`
    (the click that started the run). Each finished step's seconds go to `log`: where the
    time went. Asking for the next step is also where a cancel requested while loading takes
    effect (CancelledError), since loading cannot stop half way."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        origin: dt.datetime | None = None,
        should_cancel: Callable[[], bool] | None = None,
    ) -> None:
        self.store, self.run_id, self.should_cancel = store, run_id, should_cancel
        self.watch_store = False  # also read the store's cancel flag (a run not yet claimed)
        self.origin = origin or _utcnow()
        self.log: list[dict[str, Any]] = []
        self.what: str | None = None
        self.since = self.origin

    def cancelled(self) -> bool:
        if self.should_cancel is not None and self.should_cancel():
            return True
        return self.watch_store and self.store.cancel_requested(self.run_id)

    def __call__(self, what: str | None) -> None:
        """Start step `what` (None: the worker stopped)."""
        now = _utcnow()
        seconds = round((now - self.since).total_seconds(), 3)
        if self.what is not None:
            self.log.append({"step": self.what, "seconds": seconds})
        elif not self.log and seconds >= 0.5:  # from the click to the worker's first step
            self.log.append({"step": "starting", "seconds": seconds})
        self.what, self.since = what, now
        with contextlib.suppress(StoreError):  # a busy store must not fail the audit
            self.store.set_run_phase(
                self.run_id,
                {
                    "origin": self.origin.isoformat(),
                    "step": what,
                    "since": now.isoformat(),
                    "log": self.log,
                },
            )
        if what is not None and self.cancelled():
            raise CancelledError(f"run {self.run_id} was cancelled while {what}")


def _stored_label_mass(
    details: dict[str, Any], readout: str | None, minimum: float
) -> dict[str, Any] | None:
    """The label mass stored at an earlier registration of the same fingerprint (the
    fingerprint covers the weights, prompt format and readout, so the mass is the same), when
    it passes `minimum` by the same rule as `check_label_mass`; None to measure it again."""
    mass = details.get("label_mass") or {}
    if details.get("readout") != readout or mass.get("median") is None:
        return None
    if mass["median"] >= minimum:
        return dict(mass)
    share = mass.get("top_share")
    return dict(mass) if share is not None and share > MIN_TOP_SHARE else None


def register_checkpoint(
    store: Store,
    verifier: Any,
    name: str,
    *,
    min_label_mass: float = MIN_LABEL_MASS,
    step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Record a loaded checkpoint (fingerprint, name, description) in the store.

    The probe set is scored first: a checkpoint whose labels get a median label mass below
    `min_label_mass` is refused (read at the wrong slot), and the mass is kept in its details
    with the readout profile used. A served checkpoint is first compared with its earlier registration: its probe question
    must still get the log-probs it got then (`check_registration` refuses otherwise, before
    any cached score is reused), and that first registration stays the reference.
    """
    details = dict(verifier.describe())
    fmt = getattr(verifier, "format", None)
    details["readout"] = fmt.readout.name if fmt is not None else None
    check = getattr(verifier, "check_registration", None)
    known = store.checkpoints()
    row = known.loc[known["fingerprint"] == verifier.fingerprint]
    before = row["details"].iloc[0] if not row.empty else None
    stored = (json.loads(before) if isinstance(before, str) else before or {}) if before else {}
    # A local checkpoint's label mass and noise floor are measured once per fingerprint (the
    # same weights and prompt format give the same numbers); a served one is measured again,
    # since the server behind a name can change.
    again = (
        None
        if check is not None
        else _stored_label_mass(stored, details["readout"], min_label_mass)
    )
    if again is None:
        if step is not None:
            step(f"registering {name}: label-mass check")
        again = check_label_mass(verifier, min_label_mass)
    details["label_mass"] = again
    if check is not None:
        known = store.checkpoints()
        row = known.loc[known["fingerprint"] == verifier.fingerprint]
        if not row.empty:
            before = row["details"].iloc[0]
            registered = json.loads(before) if isinstance(before, str) else before or {}
            check(registered, row["registered_at"].iloc[0])
            drift = served_drift(registered, verifier)
            if drift is not None and drift != registered.get("noise_floor"):
                registered = {**registered, "noise_floor": drift}
                store.register_checkpoint(verifier.fingerprint, row["name"].iloc[0], registered)
            return registered
    if not stored.get("noise_floor") and step is not None:
        step(f"registering {name}: precision probe")
    # measured once per fingerprint (the same weights give the same floor)
    details["noise_floor"] = stored.get("noise_floor") or measure_noise_floor(verifier)
    store.register_checkpoint(verifier.fingerprint, name, details)
    return details


def _load_checkpoints(
    store: Store,
    pre_spec: str,
    post_spec: str,
    config: AuditConfig,
    run_id: str | None = None,
    step: Callable[[str], None] | None = None,
) -> tuple[Any, Any]:
    """Load and register both checkpoints (read with the run's wording and readout); a run
    records the noise floor it uses: the larger of the two checkpoints' measured floors, or
    the auditor's declared one if larger. Two local checkpoints on one base share one copy of
    it (`load_checkpoint`'s share_base): the second load only adds its adapter."""
    from eraudit_core.verifier import load_checkpoint, parse_spec

    say = step or (lambda what: None)
    settings = config.prompt_settings()
    say(f"loading {pre_spec} weights")
    pre = load_checkpoint(parse_spec(pre_spec), **settings)
    a, b = parse_spec(pre_spec), parse_spec(post_spec)
    shared = getattr(a, "base", None) is not None and getattr(a, "base", None) == getattr(
        b, "base", None
    )
    say(f"loading {post_spec}" + (" (adapter on the shared base)" if shared else " weights"))
    post = load_checkpoint(b, **settings)
    details = [
        register_checkpoint(store, v, s, min_label_mass=config.min_label_mass, step=step)
        for v, s in ((pre, pre_spec), (post, post_spec))
    ]
    if run_id is not None:
        measured = run_noise_floor(details)
        declared = (store.run(run_id)["provenance"].get("noise_floor") or {}).get("value")
        store.update_run_provenance(run_id, {"noise_floor": noise_floor_record(measured, declared)})
    return pre, post


def prepare_model_run(
    store: Store, request: RunRequest, *, run_id: str | None = None
) -> tuple[str, list[AuditItem], AuditConfig]:
    """Validate the request and write a pending run record before any model is loaded, so a
    run that fails while loading is still listed with its error. A run without a draw seed
    gets a fresh random one, stored with it. The checkpoint specs are parsed first: a mistyped
    one (`demo:nope`, a URL with a password) leaves no run behind."""
    from eraudit_core.verifier import parse_spec

    parse_spec(request.pre_spec)
    parse_spec(request.post_spec)
    request.check(store)
    config = request.config
    if config.draw_seed is None:
        config = replace(config, draw_seed=secrets.randbelow(2**31))
    if config.prompt_date is None:  # date-embedding chat templates read the run's start date
        config = replace(config, prompt_date=dt.datetime.now(dt.UTC).date().isoformat())
    items, config = build_items(
        store, request.benchmark, request.pair_ids or None, config, request.limit
    )
    pre_spec, post_spec = request.pre_spec, request.post_spec
    source = {
        "kind": "models",
        "benchmark_id": request.benchmark,
        "pair_ids": [it.pair_id for it in items],
        "pre_spec": pre_spec,
        "post_spec": post_spec,
    }
    run_id = run_id or new_run_id()
    run_id = create_run_record(
        store,
        items,
        config,
        label=request.label or default_run_label(f"{post_spec} vs {pre_spec}", config, run_id),
        run_id=run_id,
        benchmark_id=request.benchmark,
        source=json.dumps(source),
        names=(pre_spec, post_spec),
        provenance=request.provenance() or None,
    )
    return run_id, items, config


def execute_model_run(
    store: Store,
    run_id: str,
    items: Sequence[AuditItem],
    config: AuditConfig,
    pre_spec: str,
    post_spec: str,
    progress: ProgressCallback | None = None,
    should_cancel: Callable[[], bool] | None = None,
) -> None:
    """Load the checkpoints (recording a failure in the run) and audit what is not done. The
    worker's steps are written to the run as it goes (`StepReporter`), timed from the click
    that created a fresh run, or from now for a resumed one."""
    run = store.run(run_id)
    fresh = run["status"] == "pending" and not store.finished_pair_ids(run_id)
    created: Any = run.get("created_at")
    if hasattr(created, "to_pydatetime"):
        created = created.to_pydatetime()
    origin = created if fresh and isinstance(created, dt.datetime) else None
    step = StepReporter(store, run_id, origin, should_cancel)
    step.watch_store = fresh  # a cancel asked from another process before the run started
    try:
        pre, post = _load_checkpoints(store, pre_spec, post_spec, config, run_id, step)
    except CancelledError:
        step(None)
        store.set_run_status(run_id, "cancelled", "cancelled by the user before it started")
        return
    except KeyboardInterrupt:
        step(None)
        store.set_run_status(run_id, "cancelled", "cancelled by Ctrl-C while loading checkpoints")
        raise
    except BaseException as exc:
        step(None)
        store.set_run_status(run_id, "failed", f"loading checkpoints: {type(exc).__name__}: {exc}")
        raise
    if should_cancel is not None and should_cancel():  # cancelled while loading: never start
        step(None)
        store.set_run_status(run_id, "cancelled", "cancelled by the user before it started")
        return
    step.should_cancel, step.watch_store = None, False  # the engine checks from here
    engine = AuditEngine(store, pre, post, config, progress, should_cancel)
    engine.on_step = step
    try:
        engine.resume(run_id, items)
    finally:
        step(None)


def run_model_audit(
    store: Store,
    request: RunRequest,
    *,
    run_id: str | None = None,
    progress: ProgressCallback | None = None,
    should_cancel: Callable[[], bool] | None = None,
    warn: Callable[[str], None] | None = None,
) -> str:
    """Audit the request's post checkpoint against its pre checkpoint; blocks until done.

    `warn` hears about pools smaller than the budget or n* before the run starts (the run
    proceeds)."""
    run_id, items, config = prepare_model_run(store, request, run_id=run_id)
    if warn is not None:
        for message in pool_warnings(items, config):
            warn(message)
    execute_model_run(
        store, run_id, items, config, request.pre_spec, request.post_spec, progress, should_cancel
    )
    return run_id


def resume_run(
    store: Store,
    run_id: str,
    progress: ProgressCallback | None = None,
    should_cancel: Callable[[], bool] | None = None,
) -> None:
    """Finish a run from what is stored: done pairs are kept, cached scores are reused.
    A finished, imported or derived run is refused before anything is read or written."""
    run = store.run(run_id)
    check_resumable(run)
    config = AuditConfig.from_dict(run["config"])
    source = run["source"] or ""
    if source.startswith("table:"):
        from eraudit_core.audit._table_runs import audit_table_run

        audit_table_run(
            store,
            source.removeprefix("table:"),
            config,
            run_id=run_id,
            progress=progress,
            should_cancel=should_cancel,
        )
        return
    try:
        spec = json.loads(source)
    except json.JSONDecodeError:
        raise InputError(
            f"run {run_id}: its inputs were not recorded; it cannot be resumed"
        ) from None
    items, _ = build_items(store, spec["benchmark_id"], spec["pair_ids"], config)
    execute_model_run(
        store, run_id, items, config, spec["pre_spec"], spec["post_spec"], progress, should_cancel
    )


def check_resumable(run: Mapping[str, Any]) -> None:
    """InputError unless `run` is one this store started and did not finish: a done run's
    results are final, an imported run is evidence from elsewhere (its recorded source, a
    path on another machine, is never opened), a derived run has no inputs of its own."""
    run_id = run["run_id"]
    if run.get("imported_from"):
        origin = (run["imported_from"] or {}).get("file", "a bundle")
        raise InputError(
            f"run {run_id} was imported from {origin}: an imported run is kept as it arrived "
            "and cannot be resumed here (resume it where it was run, then export it again)"
        )
    if (run.get("provenance") or {}).get("derived_from"):
        raise InputError(
            f"run {run_id} was derived from run {run['provenance']['derived_from'].get('run_id')} "
            "and cannot be resumed (derive it again from a resumed parent instead)"
        )
    if run.get("status") == "done":
        raise InputError(
            f"run {run_id} is done: its results are final and resume changes nothing; only an "
            "interrupted, cancelled or failed run can be resumed (start a new audit to run "
            "it again)"
        )


def launch_audit(store: Store, runner: JobRunner, request: RunRequest) -> str:
    """Write the pending run now (bad input fails here, in the caller), then load the models
    and audit in a background thread; returns the run id at once."""
    run_id, items, config = prepare_model_run(store, request)

    def work(cancel: threading.Event) -> None:
        execute_model_run(
            store,
            run_id,
            items,
            config,
            request.pre_spec,
            request.post_spec,
            should_cancel=cancel.is_set,
        )

    runner.start(run_id, work)
    return run_id


def resume_audit(store: Store, runner: JobRunner, run_id: str) -> Job:
    """Resume a stored run in a background thread (refused at once, in the caller, when the
    run cannot be resumed)."""
    check_resumable(store.run(run_id))

    def work(cancel: threading.Event) -> None:
        resume_run(store, run_id, should_cancel=cancel.is_set)

    return runner.start(run_id, work)
