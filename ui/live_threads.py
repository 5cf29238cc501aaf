"""How many cores an audit run by the dashboard may use for its model: all but one, which is
left to the page and the browser drawing it.

Why: torch splits each forward pass across its intra-op threads (one per core by default) and
waits at the end of each for the slowest of them. In the dashboard the page's refreshes, the
server and a local browser need a core too; on a 2-core machine a thread of the audit is then
often descheduled and the other spins waiting for it. Measured on the 2-core machine with other
work on it (load 12-15, docs/dashboard.md): the same 96 prompts through demo:base and
demo:concealed took 156.6 s and 30.5 CPU s with one thread, 435.0 s and 144.9 CPU s with two.
On the same machine nearly idle two threads were faster (the one-click audit's verdicts 50.9 s
against 60.6 s, one round each, README): one thread trades the quiet case for the loaded one.
The CLI keeps torch's default: it has no page to serve. An explicit OMP_NUM_THREADS is obeyed.
"""

from __future__ import annotations

import os

THREADS_ENV = "OMP_NUM_THREADS"


def audit_threads(cores: int) -> int:
    """Torch intra-op threads for an audit beside the dashboard on `cores` usable cores."""
    return max(1, cores - 1)


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
