"""What the Setup page's forms do: validate an input with the library, then store it.

Each function raises InputError (with the library's message naming file, record and field)
before anything is written, so a bad upload changes nothing stored.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.store import (
    MAX_BENCHMARK_BYTES,
    guess_dataset_name,
    load_benchmark,
    parse_benchmark,
)
from ui import store_access

# Uploads above this are refused before they are read (the store keeps texts, not files).
MAX_UPLOAD_BYTES = 50 * 1024 * 1024


def _check_size(name: str, size: int, limit: int | None = None) -> None:
    limit = MAX_UPLOAD_BYTES if limit is None else limit
    if size > limit:
        raise InputError(
            f"{name}: the file is {size / 1e6:.1f} MB, more than the {limit / 1e6:.0f} MB an "
            "upload may have; import it by path instead (nothing was stored)"
        )


def import_benchmark_upload(filename: str, data: bytes, name: str = "") -> dict[str, Any]:
    """Validate an uploaded benchmark (reference JSON or project JSONL) and store it."""
    _check_size(filename, len(data))
    bench = parse_benchmark(
        data, source=filename, name=name.strip() or guess_dataset_name(Path(filename))
    )
    bid = store_access.get_store().add_benchmark(bench)
    return {"benchmark_id": bid, "n_pairs": len(bench.pairs), "layout": bench.layout}


def nearest_path(text: str, limit: int = 2000) -> str | None:
    """The existing path nearest to a mistyped one, component by component (each missing
    component replaced by the closest name in its folder), or None when the path exists or
    nothing is close."""
    import difflib

    raw = text.strip()
    if not raw:
        return None
    p = Path(raw).expanduser()
    if p.exists():
        return None
    current = Path(p.anchor) if p.is_absolute() else Path(".")
    fixed = False
    for part in p.parts[1:] if p.is_absolute() else p.parts:
        child = current / part
        if not child.exists():
            try:
                names = sorted(
                    x.name for _, x in zip(range(limit), current.iterdir(), strict=False)
                )
            except OSError:
                return None
            close = difflib.get_close_matches(part, names, n=1, cutoff=0.6)
            if not close:
                return None
            child, fixed = current / close[0], True
        current = child
    return str(current) if fixed and current.exists() else None


def _did_you_mean(path: str) -> str:
    near = nearest_path(path)
    return f"; did you mean {near}?" if near else ""


def path_hint(spec: str) -> str | None:
    """ "Did you mean ..." for a checkpoint spec naming a local path that does not exist (each
    side of BASE+ADAPTER on its own); None for demo and served specs or when nothing is close."""
    text = spec.strip()
    if not text or text.startswith(("http://", "https://")):
        return None
    sides = [part.split(";")[0] for part in text.split("+")]
    hints = [
        near for part in sides if not part.startswith("demo:") and (near := nearest_path(part))
    ]
    return f"Did you mean {' + '.join(hints)}?" if hints else None


def import_benchmark_path(path: str, name: str = "") -> dict[str, Any]:
    p = Path(path.strip()).expanduser()
    if not p.is_file():
        raise InputError(f"{p}: no such benchmark file{_did_you_mean(path)}")
    if p.is_file():
        _check_size(str(p), p.stat().st_size, MAX_BENCHMARK_BYTES)
    bench = load_benchmark(p, name=name.strip() or None)
    bid = store_access.get_store().add_benchmark(bench)
    return {"benchmark_id": bid, "n_pairs": len(bench.pairs), "layout": bench.layout}


def _store_sets(
    benchmark_id: str,
    generators: list[Any],
    role: str,
    per_pair: int,
    pair_ids: set[str],
    source: str,
) -> dict[str, Any]:
    from eraudit_core.paraphrase import build_paraphrase_sets, store_paraphrase_sets

    store = store_access.get_store()
    pairs = [p for p in store.pairs(benchmark_id) if p.pair_id in pair_ids]
    if not pairs:
        raise InputError(
            f"{source}: none of the paraphrases' pair ids belongs to this benchmark (nothing was "
            "stored); "
            "check the field pair_id, or the benchmark chosen"
        )
    search = generators if role == "search" else []
    test = generators if role == "test" else []
    sets = build_paraphrase_sets(
        pairs, search, test, n_search=per_pair, n_test=per_pair, oversample=1.0
    )
    stored = store_paraphrase_sets(store, benchmark_id, sets)
    rejected = pd.DataFrame(
        [
            {"pair_id": r.pair_id, "generator": r.generator, "text": r.text, "reason": r.reason}
            for r in sets.rejections
        ]
    )
    return {"pairs": len(pairs), "stored": stored, "rejected": rejected}


def import_paraphrase_upload(
    benchmark_id: str, filename: str, data: bytes, role: str, prefix: str = ""
) -> dict[str, Any]:
    """Read a paraphrase file (reference layout or flat JSONL), filter and store it as `role`.

    Each generator named in the file becomes its own set (name = prefix + generator).
    """
    if role not in ("search", "test"):
        raise InputError(f"role must be 'search' or 'test', got {role!r}")
    _check_size(filename, len(data))
    store = store_access.get_store()
    dataset = str(store.benchmarks().set_index("benchmark_id").loc[benchmark_id, "name"])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(filename).name
        path.write_bytes(data)
        # Every error names the file the user chose, never the temporary copy read here.
        try:
            return _import_paraphrase_file(benchmark_id, path, filename, dataset, role, prefix)
        except InputError as exc:
            raise InputError(named_after_upload(str(exc), path, filename)) from exc
        except UnicodeDecodeError as exc:
            raise InputError(f"{filename}: not UTF-8 text ({exc.reason})") from exc


def named_after_upload(message: str, path: Path, filename: str) -> str:
    """`message` with the temporary copy's path (and its folder) replaced by the uploaded
    file's name."""
    return message.replace(str(path), filename).replace(str(path.parent) + "/", "")


def _import_paraphrase_file(
    benchmark_id: str, path: Path, filename: str, dataset: str, role: str, prefix: str
) -> dict[str, Any]:
    from eraudit_core.paraphrase import FileParaphraseGenerator, read_paraphrase_candidates

    candidates = read_paraphrase_candidates(path, dataset)
    if not candidates:
        raise InputError(f"{filename}: no paraphrases found (nothing was stored)")
    names = list(dict.fromkeys(g for _, g, _ in candidates))
    per_pair = max(pd.Series([(p, g) for p, g, _ in candidates]).value_counts().max(), 1)
    gens = [
        FileParaphraseGenerator(path, source_generator=g, name=f"{prefix}{g}", dataset=dataset)
        for g in names
    ]
    return _store_sets(
        benchmark_id, gens, role, int(per_pair), {p for p, _, _ in candidates}, filename
    )


def generate_paraphrases(
    benchmark_id: str, kind: str, role: str, per_pair: int, n_pairs: int, name: str = ""
) -> dict[str, Any]:
    """Run an offline registered generator over the first `n_pairs` pairs and store the set."""
    from eraudit_core.paraphrase import create_generator

    settings = {"name": name.strip()} if name.strip() else {}
    gen = create_generator(kind, **settings)
    store = store_access.get_store()
    pair_ids = {p.pair_id for p in store.pairs(benchmark_id)[: max(1, n_pairs)]}
    return _store_sets(benchmark_id, [gen], role, per_pair, pair_ids, f"generator {kind}")


def generator_kinds() -> pd.DataFrame:
    from eraudit_core.paraphrase import available_generators

    return pd.DataFrame(
        [
            {"kind": k, "offline": s.offline, "description": s.summary}
            for k, s in available_generators().items()
        ]
    )


def served_spec(
    url: str,
    model: str,
    tokenizer: str,
    key_env: str = "",
    concurrency: int = 8,
    batch: int = 1,
) -> str:
    """The spec string of a served checkpoint from the Setup form's fields (validated)."""
    from eraudit_core.verifier import ServedSpec

    spec = ServedSpec(
        base_url=url.strip(),
        model=model.strip(),
        tokenizer=tokenizer.strip(),
        api_key_env=key_env.strip() or None,
        concurrency=int(concurrency),
        batch=int(batch),
    )
    spec.tokenizer_spec  # noqa: B018 - refuse a tokenizer spec that names nothing here
    return spec.text


def check_served(spec_text: str, min_label_mass: float = 0.0) -> dict[str, Any]:
    """Connect to a served checkpoint (all load checks and the probe) and score one question,
    checking its answer as an audit would (`check_answers` at `min_label_mass`): a p(true)
    the audit would refuse to store is not shown as a result either.

    The question is the first monitored question of the first stored benchmark (the probe
    question when there is none); the answer carries the latency of that one query (two
    prompts, both answer orders) and how the server is read.
    """
    import time

    from eraudit_core.types import Query
    from eraudit_core.verifier import PROBE, check_answers, load_checkpoint

    t0 = time.monotonic()
    verifier = load_checkpoint(spec_text)
    connect_s = time.monotonic() - t0
    query = PROBE
    benchmarks = store_access.get_store().benchmarks()
    if not benchmarks.empty:
        pair = store_access.get_store().pairs(str(benchmarks["benchmark_id"].iloc[0]))[0]
        m = pair.monitored
        query = Query(pair.pair_id, m.question, m.true_option, m.false_option)
    t1 = time.monotonic()
    score = verifier.score([query])[0]
    check_answers(verifier, [query], [score], min_label_mass)
    info = verifier.describe()
    return {
        "question": query.question,
        "p_true": score.p_true,
        "latency_s": time.monotonic() - t1,
        "connect_s": connect_s,
        "fingerprint": verifier.fingerprint,
        "prompts_sent_as": info.get("prompts_sent_as"),
        "label_logprobs": info.get("label_logprobs"),
        "prompts_per_request": info.get("prompts_per_request", 1),
        "prompts_per_request_note": info.get("prompts_per_request_note"),
        "spec": info.get("spec"),
    }
