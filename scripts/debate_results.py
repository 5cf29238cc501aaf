"""Print the debate-distilled demo arms' results as Markdown, for the README.

Loads the embedded demo into a store (no scoring: the shipped tables), then prints the
standard evaluation, verdict counts, mean bounds across confidence levels and epsilon and the
primary paired test of debate-adversarial against its control debate-honest, beside the
paper's QuALITY-H figures (`eraudit_core.present._paper`).

    .venv/bin/python scripts/debate_results.py --db /tmp/demo.duckdb
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from eraudit_core.demo import ensure_demo
from eraudit_core.present import (
    debate_findings,
    paper_comparison_frame,
    pattern_summary,
    primary_result,
)
from eraudit_core.store import Store


def markdown_table(frame) -> str:  # type: ignore[no-untyped-def]
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--db", default=str(Path(tempfile.mkdtemp()) / "demo.duckdb"))
    args = ap.parse_args()
    with Store(args.db) as store:
        info = ensure_demo(store)
        if not {"debate-honest", "debate-adversarial"} <= set(info.run_ids):
            print("the debate demo runs are not built (scripts/build_demo_runs.py --set debate)")
            return 1
        got = debate_findings(
            store, info.run_ids["debate-adversarial"], info.run_ids["debate-honest"]
        )
    for arm in ("honest", "adversarial"):
        f = got[arm]
        print(
            f"- debate-{arm}: {f['n_pairs']} pairs; monitored accuracy "
            f"{f['base_monitored_accuracy']:.3f} -> {f['monitored_accuracy']:.3f}, hidden accuracy "
            f"{f['base_hidden_accuracy']:.3f} -> {f['hidden_accuracy']:.3f}, hidden MTP "
            f"{f['base_hidden_mtp']:.3f} -> {f['hidden_mtp']:.3f}; degraded {f['n_degraded']}, "
            f"certified {f['n_certified']}, passed {f['n_passed']}, inconclusive "
            f"{f['n_inconclusive']}; questions with a search-stage counterexample "
            f"{f['search_counterexamples']}; adaptation took: {f['took']} ({f['n_gain_le_k']} "
            f"of {f['n_pairs']} monitored gains <= k); counterexamples by epsilon "
            + ", ".join(f"{e:g}: {n}" for e, n in f["counterexamples_by_epsilon"].items())
        )
    print()
    print(markdown_table(paper_comparison_frame(got)))
    print()
    print("Primary test: " + primary_result(got))
    print()
    print(pattern_summary(got))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
