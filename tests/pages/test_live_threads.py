"""The dashboard's audits use every usable core (their threads wait passively,
tests/test_cores.py): torch's intra-op threads in the server, set inside each audit's thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import torch

from ui import live_threads


@pytest.fixture
def restore_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_every_usable_core_goes_to_the_audit() -> None:
    assert live_threads.audit_threads(2) == 2
    assert live_threads.audit_threads(16) == 16
    assert live_threads.audit_threads(0) == 1  # never zero
    assert live_threads.usable_cores() >= 1


def test_an_audit_thread_started_after_it_uses_the_setting(
    restore_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(live_threads.THREADS_ENV, raising=False)
    monkeypatch.setattr(live_threads, "usable_cores", lambda: 2)
    torch.set_num_threads(3)
    assert live_threads.apply_audit_threads() == 2
    seen: list[int] = []

    def audit() -> None:  # as the JobRunner's worker: a new thread's first forward pass
        torch.ones(64, 64) @ torch.ones(64, 64)
        seen.append(torch.get_num_threads())

    worker = threading.Thread(target=audit)
    worker.start()
    worker.join()
    assert seen == [2]


def test_an_explicit_omp_setting_is_obeyed(
    restore_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(live_threads.THREADS_ENV, "3")
    monkeypatch.setattr(live_threads, "usable_cores", lambda: 8)
    torch.set_num_threads(3)
    assert live_threads.apply_audit_threads() == 3


def test_the_dashboards_runner_sets_the_threads_inside_each_audit_thread(
    restore_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A click only starts the thread: the torch setting (and torch's import, about 1.5 s on
    this machine) happens in the audit's own thread, so the page redraws at once."""
    from ui import store_access

    monkeypatch.delenv(live_threads.THREADS_ENV, raising=False)
    monkeypatch.setattr(live_threads, "usable_cores", lambda: 3)
    torch.set_num_threads(1)
    caller = threading.get_ident()
    seen: list[tuple[bool, int]] = []

    def audit(cancel: threading.Event) -> None:
        torch.ones(64, 64) @ torch.ones(64, 64)
        seen.append((threading.get_ident() != caller, torch.get_num_threads()))

    job = store_access.get_runner().start("run-threads-test", audit)
    job.thread.join(timeout=30)
    assert seen == [(True, 3)]
