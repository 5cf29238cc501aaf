"""How a process's model shares the machine's cores: torch's OpenMP threads wait by sleeping.

Why: torch splits each forward pass across its intra-op threads (one per core) and waits at
the end of each for the slowest. GNU OpenMP, which torch's CPU build uses, lets a waiting
thread spin by default; when the cores also serve something else (the dashboard's page, a
browser, another job) the spinning thread holds the core that the thread it waits for needs.
With OMP_WAIT_POLICY=PASSIVE waiting threads sleep instead. Measured by
`scripts/bench_wait_policy.py` (the one-click audit's forward passes, 2 cores, README):
passive waiting costs nothing on an idle machine and, with one core kept busy by another
process, keeps two threads as fast as one where spinning nearly doubles their time.
"""

from __future__ import annotations

import os
import sys

WAIT_POLICY_ENV = "OMP_WAIT_POLICY"
PASSIVE = "PASSIVE"


def passive_omp_wait() -> bool:
    """Let torch's OpenMP threads sleep while they wait, unless OMP_WAIT_POLICY is set.

    OpenMP reads the variable once, when torch's library loads, so this must run before the
    first `import torch` of the process; returns whether it took effect (False when torch was
    already imported or the variable was set explicitly, which is obeyed)."""
    if "torch" in sys.modules or os.environ.get(WAIT_POLICY_ENV):
        return False
    os.environ[WAIT_POLICY_ENV] = PASSIVE
    return True
