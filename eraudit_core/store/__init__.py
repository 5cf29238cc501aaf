"""Storage (docs/design.md §6): one DuckDB file per store, versioned migrations, benchmark import.

`Store` holds benchmarks, paraphrase sets, the score cache, runs, pair results and steps; the
dashboard and any number of `eraudit` processes share one file (a Store holds it only for a
transaction or a short lease). `load_benchmark` validates a benchmark file with errors naming
the record and the field; `read_run_rows` / `write_run_rows` copy a run between stores.
"""

from __future__ import annotations

from eraudit_core.store._benchmark import (
    BUNDLED_QUALITY_H,
    CONTENT_COLUMNS,
    MAX_BENCHMARK_BYTES,
    QUALITY_H_ATTRIBUTION,
    Benchmark,
    guess_dataset_name,
    load_benchmark,
    load_bundled_benchmark,
    pairs_content_digest,
    parse_benchmark,
    reference_pair_id,
    write_jsonl,
)
from eraudit_core.store._labels import (
    NOT_MEANING_PRESERVING,
    PARAPHRASE_LABELS,
)
from eraudit_core.store._records import (
    PairResult,
    StepRecord,
)
from eraudit_core.store._run_copy import (
    RUN_TABLES,
    import_origin,
    read_run_rows,
    write_run_rows,
)
from eraudit_core.store._schema import (
    SCHEMA_VERSION,
)
from eraudit_core.store._store import (
    Store,
)

__all__ = [
    "BUNDLED_QUALITY_H",
    "CONTENT_COLUMNS",
    "Benchmark",
    "MAX_BENCHMARK_BYTES",
    "NOT_MEANING_PRESERVING",
    "PARAPHRASE_LABELS",
    "PairResult",
    "QUALITY_H_ATTRIBUTION",
    "RUN_TABLES",
    "SCHEMA_VERSION",
    "StepRecord",
    "Store",
    "guess_dataset_name",
    "import_origin",
    "load_benchmark",
    "load_bundled_benchmark",
    "pairs_content_digest",
    "parse_benchmark",
    "read_run_rows",
    "reference_pair_id",
    "write_jsonl",
    "write_run_rows",
]
