"""Runs that share a label stay apart in every figure and table."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from eraudit_core import present
from eraudit_core.cli import main
from eraudit_core.store import Store
from tests import _synthetic as synthetic


def _newplot_data(html: str, div_id: str) -> list[dict]:
    """The trace list passed to Plotly.newPlot for one figure div of the report."""
    match = re.search(r'Plotly\.newPlot\(\s*"' + re.escape(div_id) + r'",\s*', html)
    assert match, div_id
    return json.JSONDecoder().raw_decode(html[match.end() :])[0]


def _two_runs_with_one_label(tmp_path: Path) -> tuple[Store, list[str]]:
    store = Store(tmp_path / "same.duckdb")
    ids = []
    for seed, arms in ((0, ("honest",)), (3, ("adversarial",))):
        info = synthetic.build_synthetic_store(
            store, n_pairs=3, n_search=2, n_test=3, arms=arms, seed=seed
        )
        ids += list(info.run_ids.values())
    with store.transaction() as tx:
        tx.execute("UPDATE runs SET label = 'table scores.csv'")
    return store, ids


def test_report_keeps_runs_with_the_same_label_apart(tmp_path):
    store, ids = _two_runs_with_one_label(tmp_path)
    names = present.run_names(store, ids)
    assert len(set(names.values())) == 2 and all("table scores.csv" in n for n in names.values())
    html = present.build_report(store, ids)
    status = _newplot_data(html, "status")
    assert len(status[0]["x"]) == 2 and len(set(status[0]["x"])) == 2
    scatter = _newplot_data(html, "scatter")
    runs = [t for t in scatter if t.get("legendgroup") != "markers"]  # not the marker legend
    assert len({t["name"] for t in runs}) == 2
    standard = _newplot_data(html, "standard")
    assert len(set(standard[0]["x"])) == 4  # two runs x (pre, post)
    store.close()


def test_results_figures_keep_runs_with_the_same_label_apart(tmp_path):
    store, ids = _two_runs_with_one_label(tmp_path)
    names = present.run_names(store, ids)
    sweeps = {names[r]: present.run_views(store, r)["epsilon"] for r in ids}
    fig = present.epsilon_figure(sweeps)
    # each run keeps its own traces (a run may add a "not judgeable" trace under its name)
    assert {str(t.name).split(": ")[0] for t in fig.data} == set(names.values())
    assert len(set(names.values())) == 2
    store.close()


def _table(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        w.writerow(["p1", "monitored", "", 0, "m", 0.5, 0.75])
        w.writerows(["p1", "test", "g", i, f"x{i}", 0.75, 0.75] for i in range(3))
    return path


def test_default_labels_are_distinct(tmp_path, capsys):
    table = _table(tmp_path / "scores.csv")
    db = tmp_path / "d.duckdb"
    for eps in ("0.1", "0.1", "0.3"):
        assert main(["audit-table", str(table), "--db", str(db), "--epsilon", eps, "--json"]) == 0
    capsys.readouterr()
    with Store(db) as store:
        labels = list(store.runs()["label"])
    assert len(set(labels)) == 3
    assert all("scores.csv" in label for label in labels)
    assert sum("eps 0.3" in label for label in labels) == 1
