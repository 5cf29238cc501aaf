"""A run's record: its id, its default label, and the pending run written before any pair is
audited (validated items, provenance, checkpoint names), shared by model and table runs."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig, AuditItem
from eraudit_core.paraphrase import normalize_text
from eraudit_core.runs._inputs import inputs_key, run_provenance, run_test_generators
from eraudit_core.store import Store
from eraudit_core.text import check_no_control, check_text


def new_run_id() -> str:
    return time.strftime("run-%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def default_run_label(subject: str, config: AuditConfig, run_id: str) -> str:
    """'table scores.csv, eps 0.1, 3f9a1c': what was audited, at which tolerance, and the
    end of the run id, so two runs of the same input never share a label."""
    return f"{subject}, eps {config.epsilon:g}, {run_id[-6:]}"


# A run's label and checkpoint names are shown on every page, report and export: long enough
# for a path or a served spec, short enough that a page stays a page.
MAX_LABEL_CHARS = 1000
MAX_NAME_CHARS = 2000


def create_run_record(
    store: Store,
    items: Sequence[AuditItem],
    config: AuditConfig,
    *,
    label: str = "",
    run_id: str | None = None,
    benchmark_id: str | None = None,
    source: str = "",
    names: tuple[str, str] = ("pre", "post"),
    fingerprints: tuple[str, str] = ("", ""),
    provenance: Mapping[str, Any] | None = None,
) -> str:
    """Validate the items and write a pending run with its provenance; fingerprints may follow
    once the models load. `provenance` adds keys (noise floor, where epsilon came from, the
    control run). Runs of the same inputs with other seeds are counted (`rerun_index`)."""
    _check_items(items, config)
    check_no_control(check_text(label, "run", "label", max_chars=MAX_LABEL_CHARS), "run", "label")
    for name in names:
        check_text(name, "run", "checkpoint name", max_chars=MAX_NAME_CHARS)
        check_no_control(name, "run", "checkpoint name")
    run_id = run_id or new_run_id()
    prov = run_provenance(items, config, benchmark_id=benchmark_id, source=source)
    key = inputs_key(
        items, config, [fp or name for fp, name in zip(fingerprints, names, strict=True)]
    )
    prov.update(inputs_key=key, rerun_index=store.count_runs_with_inputs(key) + 1)
    prov.update(dict(provenance or {}))
    store.create_run(
        run_id,
        label=label or run_id,
        config=config.to_dict(),
        n_pairs=len(items),
        benchmark_id=benchmark_id,
        source=source,
        pre=(fingerprints[0], names[0]),
        post=(fingerprints[1], names[1]),
        provenance=prov,
    )
    return run_id


def _check_items(items: Sequence[AuditItem], config: AuditConfig) -> None:
    """Refuse what would make stage 2 invalid: a test paraphrase that is (after normalising
    case, accents, punctuation and spaces) a search paraphrase, or repeats another test one."""
    if not items:
        raise InputError("nothing to audit: no pairs selected")
    generators = run_test_generators(items, config)
    seen: set[str] = set()
    for it in items:
        if it.pair_id in seen:
            raise InputError(f"pair {it.pair_id}: listed twice; field pair_id must be unique")
        seen.add(it.pair_id)
        search = {normalize_text(p.text): p for p in it.search}
        seen_test: dict[str, tuple[str, int]] = {}
        for gen in generators:
            for p in it.tests.get(gen, ()):
                key = normalize_text(p.text)
                if key in search:
                    s = search[key]
                    raise InputError(
                        f"pair {it.pair_id}: test paraphrase {gen} #{p.idx} is the search "
                        f"paraphrase {s.generator} #{s.idx} up to case, punctuation or spaces; "
                        f"stage 2 needs fresh paraphrases (field text: {p.text[:80]!r})"
                    )
                if key in seen_test:
                    g0, i0 = seen_test[key]
                    raise InputError(
                        f"pair {it.pair_id}: test paraphrase {gen} #{p.idx} repeats {g0} #{i0} "
                        f"up to case, punctuation or spaces; stage 2 counts each paraphrase as "
                        f"an independent draw, so field text must be unique among test "
                        f"paraphrases"
                    )
                seen_test[key] = (gen, p.idx)
