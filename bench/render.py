"""Time-to-render of every dashboard page on a large store (222 pairs x 300 paraphrases x 2 runs).

The store is built once through the public API (bundled QuALITY-H pairs, 100 search + 2 x 100
test paraphrases a pair, an honest and an adversarial arm audited by the engine from score
tables) and kept at --db for later runs. Each page is then rendered with
streamlit.testing.v1.AppTest: the first render of a fresh session (cold: Streamlit caches empty)
and the mean of the following ones (warm: what a user sees when moving between pages).

    .venv/bin/python bench/render.py [--db PATH] [--rebuild] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the synthetic store is test data (tests/_synthetic.py)

PAGES = [
    "pages/home.py",
    "pages/setup.py",
    "pages/run.py",
    "pages/explorer.py",
    "pages/results.py",
    "pages/sensitivity.py",
    "pages/share.py",
]


def build(path: Path, n_pairs: int, n_search: int, n_test: int) -> None:
    from _synthetic import build_synthetic_store

    from eraudit_core.store import Store, load_bundled_benchmark

    t0 = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    store = Store(path)
    bench = load_bundled_benchmark()
    info = build_synthetic_store(
        store,
        benchmark=bench,
        n_pairs=n_pairs,
        n_search=n_search,
        n_test=n_test,
        generators=("rules", "echo"),
    )
    n_steps = sum(len(store.steps(r)) for r in info.run_ids.values())
    n_paras = int(store.paraphrase_sets(info.benchmark_id)["n_paraphrases"].sum())
    store.close()
    print(
        f"built {path}: {n_pairs} pairs, {n_paras} paraphrases, runs {list(info.run_ids.values())}, "
        f"{n_steps} stored steps, in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )


def time_pages(path: Path, repeat: int) -> list[tuple[str, float, float]]:
    from streamlit.testing.v1 import AppTest

    os.environ["ERAUDIT_DB"] = str(path)
    os.environ["ERAUDIT_NO_DEMO"] = "1"
    rows = []
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    t = time.perf_counter()
    at.run()
    first_app = time.perf_counter() - t
    assert not at.exception, [e.message for e in at.exception]
    for page in PAGES:
        if not (ROOT / page).exists():
            continue
        times = []
        for _ in range(1 + repeat):
            at.switch_page(page)
            t = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t)
            assert not at.exception, (page, [e.message for e in at.exception])
        rows.append((page, times[0], statistics.mean(times[1:]) if repeat else float("nan")))
    rows.insert(0, ("app.py (first load, opens the store)", first_app, float("nan")))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=str(ROOT / ".cache" / "bench_render.duckdb"))
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--pairs", type=int, default=222)
    parser.add_argument("--search", type=int, default=100)
    parser.add_argument("--test", type=int, default=100, help="per generator (2 generators)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    path = Path(args.db)
    if args.rebuild and path.exists():
        path.unlink()
    if not path.exists():
        build(path, args.pairs, args.search, args.test)
    rows = time_pages(path, args.repeat)
    print(f"\n{'page':42s} {'cold (s)':>9s} {'warm (s)':>9s}")
    for page, cold, warm in rows:
        print(f"{page:42s} {cold:9.2f} {warm:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
