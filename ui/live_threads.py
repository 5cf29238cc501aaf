"""How many cores an audit run by the dashboard may use for its model: all of them, with
torch's threads sleeping while they wait (eraudit_core/cores.py, set by app.py before torch
loads).

Why: on the 2-core machine the page, the server and a local browser need a core now and then.
Keeping one core for them (one torch thread) costs the quiet case dearly; two threads that
spin while they wait cost the busy case as much. Measured with `scripts/bench_wait_policy.py`
(README, 2026-12-06): the one-click audit's scoring took 26.0 s with two passive threads,
26.1 s with two on OpenMP's default wait (spinning first) and 40.0 s with one on an idle
machine; with another process keeping one core busy, 43.3 s, 78.3 s and 39.3 s. Two passive
threads are as fast as the best choice in both cases. The CLI keeps torch's default count. An
explicit OMP_NUM_THREADS is obeyed.
"""

from __future__ import annotations

import os

THREADS_ENV = "OMP_NUM_THREADS"


def audit_threads(cores: int) -> int:
    """Torch intra-op threads for an audit beside the dashboard on `cores` usable cores."""
    return max(1, cores)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. a container's share)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def apply_audit_threads() -> int:
    """Set torch's intra-op threads for this process's audits (before their first forward
    pass: each thread takes the setting at its first parallel operation); returns the number
    in force. Leaves an explicit OMP_NUM_THREADS alone."""
    import torch

    if not os.environ.get(THREADS_ENV):
        wanted = audit_threads(usable_cores())
        if torch.get_num_threads() != wanted:
            torch.set_num_threads(wanted)
    return int(torch.get_num_threads())
