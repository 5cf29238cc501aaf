"""A background audit keeps the engine's latest report in memory, so a page can see that the
first paraphrases were scored without reading the store (the live panel redraws at once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eraudit_core.jobs import JobRunner
from eraudit_core.method import AuditConfig
from eraudit_core.runs import RunRequest, launch_audit, resume_audit
from eraudit_core.store import Store
from tests import _synthetic as synthetic
from tests._tiny_model import build_tiny_checkpoint


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "model", layers=2)


def test_a_launched_audit_reports_its_progress_to_its_job(tiny: Path, tmp_path: Path) -> None:
    runner = JobRunner()
    with Store(tmp_path / "s.duckdb") as store:
        info = synthetic.build_synthetic_store(store, n_pairs=2, n_search=2, n_test=3)
        request = RunRequest(
            benchmark=info.benchmark_id,
            pre_spec=str(tiny),
            post_spec=str(tiny),
            config=AuditConfig(epsilon=0.0, search_budget=2, test_budget=3, min_label_mass=0.0),
            limit=2,
        )
        run_id = launch_audit(store, runner, request)
        job = runner.get(run_id)
        assert job is not None
        runner.join(run_id, timeout=120)
        assert job.error is None and not job.alive
        assert job.progress is not None, "the job heard nothing from the engine"
        assert job.progress.run_id == run_id
        assert job.progress.pairs_done == 2 and job.progress.queries_scored > 0


def test_a_resumed_audit_reports_to_its_new_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eraudit_core.runs import _launch

    def resume_run(store: Store, run_id: str, progress=None, should_cancel=None) -> None:  # type: ignore[no-untyped-def]
        progress(f"scored something of {run_id}")

    monkeypatch.setattr(_launch, "resume_run", resume_run)
    monkeypatch.setattr(_launch, "check_resumable", lambda run: None)
    runner = JobRunner()
    with Store(tmp_path / "s.duckdb") as store:
        monkeypatch.setattr(store, "run", lambda run_id: {"run_id": run_id})
        job = resume_audit(store, runner, "r1")
        runner.join("r1", timeout=30)
    assert job.error is None and job.progress == "scored something of r1"
