"""Run bundles: a run exported to one inspectable zip, and imported only after it is checked.

Owns: export, import and reading (`_bundle`), reading one untrusted cell (`_cells`), the row
checks (`_rows`) and the whole-bundle check that derives every verdict again from the bundle's
own steps (`_check`). Outside reviewers use the two public readers to build and judge
forgeries: `bundle_config(runs, run_id)` gives a bundle run's validated `AuditConfig`, and
`replay_pair_verdict(pair, steps, config)` a pair's verdict re-derived from its steps
(docs/evidence.md).

May import: eraudit_core.runs (inputs, score-table queries, a run's prompts), eraudit_core.method,
eraudit_core.paraphrase, eraudit_core.store and the helpers below them; never present or the CLI.
"""

from __future__ import annotations

from eraudit_core.bundles._bundle import (
    export_run_bundle,
    import_run_bundle,
)
from eraudit_core.bundles._check import (
    bundle_config,
    replay_pair_verdict,
)

__all__ = [
    "bundle_config",
    "export_run_bundle",
    "import_run_bundle",
    "replay_pair_verdict",
]
