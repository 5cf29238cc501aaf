"""Starting and resuming audits of real checkpoints over stored inputs.

The glue between the store (benchmark pairs, paraphrase sets), the verifier backends and the
engine, shared by the CLI and the dashboard so both start runs the same way. A run's inputs
(benchmark, pair ids, checkpoint specs) are written into `runs.source` as JSON, which is what
lets `resume_run` rebuild the same items after a crash or an app restart. Building and sizing
the items (`_run_items`), loading and registering the checkpoints (`_checkpoints`) and the
worker's live step (`_step_reporter`) live in their own modules.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from eraudit_core.errors import CancelledError, InputError
from eraudit_core.jobs import Job, JobRunner
from eraudit_core.method import AuditConfig, AuditItem
from eraudit_core.runs._checkpoints import _load_checkpoints
from eraudit_core.runs._engine import AuditEngine, ProgressCallback
from eraudit_core.runs._items import build_items, pool_warnings
from eraudit_core.runs._record import create_run_record, default_run_label, new_run_id
from eraudit_core.runs._request import RunRequest, with_control_origin
from eraudit_core.runs._step_reporter import StepReporter
from eraudit_core.store import Store
from eraudit_core.types import RunStatus


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
        provenance=with_control_origin(store, request.provenance()) or None,
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
    fresh = run["status"] == RunStatus.PENDING and not store.finished_pair_ids(run_id)
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
        store.set_run_status(run_id, RunStatus.CANCELLED, "cancelled by the user before it started")
        return
    except KeyboardInterrupt:
        step(None)
        store.set_run_status(
            run_id, RunStatus.CANCELLED, "cancelled by Ctrl-C while loading checkpoints"
        )
        raise
    except BaseException as exc:
        step(None)
        store.set_run_status(
            run_id, RunStatus.FAILED, f"loading checkpoints: {type(exc).__name__}: {exc}"
        )
        raise
    # The loaded checkpoints and their libraries are millions of objects that live as long as
    # the process: moved out of the collector's reach, a full collection (Python's own, or the
    # dashboard's after each page run) does not walk them while the audit scores.
    gc.freeze()
    if should_cancel is not None and should_cancel():  # cancelled while loading: never start
        step(None)
        store.set_run_status(run_id, RunStatus.CANCELLED, "cancelled by the user before it started")
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
        from eraudit_core.runs._table_scores import audit_table_run

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
    if run.get("status") == RunStatus.DONE:
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
            progress=runner.reporter(run_id),
            should_cancel=cancel.is_set,
        )

    runner.start(run_id, work)
    return run_id


def resume_audit(store: Store, runner: JobRunner, run_id: str) -> Job:
    """Resume a stored run in a background thread (refused at once, in the caller, when the
    run cannot be resumed)."""
    check_resumable(store.run(run_id))

    def work(cancel: threading.Event) -> None:
        resume_run(store, run_id, progress=runner.reporter(run_id), should_cancel=cancel.is_set)

    return runner.start(run_id, work)
