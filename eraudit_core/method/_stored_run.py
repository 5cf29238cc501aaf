"""A stored run as the library reads it: typed settings and status instead of the store's dict.

`Store.run` hands out the row as a dict whose `config` is raw JSON (the store sits below the
audit and cannot know `AuditConfig`). Code that reads a run's settings takes a `RunRecord`,
so each setting is read from the one typed declaration with its own default and range check,
never as `run["config"].get("k", 0.001)` with a default typed a second time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from eraudit_core.method._config import AuditConfig
from eraudit_core.types import RunStatus


class _ReadsRuns(Protocol):
    def run(self, run_id: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class RunRecord:
    """One row of the store's `runs` table with its settings parsed (`AuditConfig.from_dict`,
    which refuses a stored config it cannot read by name) and its status a `RunStatus`."""

    run_id: str
    label: str | None
    status: RunStatus
    config: AuditConfig
    provenance: Mapping[str, Any]
    n_pairs: int
    benchmark_id: str | None = None
    pre_name: str | None = None
    post_name: str | None = None
    source: str | None = None
    pre_fingerprint: str | None = None
    post_fingerprint: str | None = None
    imported_from: Mapping[str, Any] | None = None
    queries_scored: int = 0
    queries_cached: int = 0

    @classmethod
    def from_stored(cls, run: Mapping[str, Any]) -> RunRecord:
        """The record of a `Store.run` dict."""

        def text(key: str) -> str | None:
            value = run.get(key)
            return None if value is None or value != value else str(value)  # None or NaN

        return cls(
            run_id=str(run["run_id"]),
            label=text("label"),
            status=RunStatus(str(run["status"])),
            config=AuditConfig.from_dict(run["config"]),
            provenance=dict(run.get("provenance") or {}),
            n_pairs=int(run.get("n_pairs") or 0),
            benchmark_id=text("benchmark_id"),
            pre_name=text("pre_name"),
            post_name=text("post_name"),
            source=text("source"),
            pre_fingerprint=text("pre_fingerprint"),
            post_fingerprint=text("post_fingerprint"),
            imported_from=run.get("imported_from"),
            queries_scored=int(run.get("queries_scored") or 0),
            queries_cached=int(run.get("queries_cached") or 0),
        )

    @classmethod
    def read(cls, store: _ReadsRuns, run_id: str) -> RunRecord:
        """The stored run `run_id` (InputError naming the store when it has no such run)."""
        return cls.from_stored(store.run(run_id))

    @property
    def name(self) -> str:
        """What a sentence calls the run: its label, else its id."""
        return self.label or self.run_id
