"""Benchmark items: import, validation and the reference pair ids (docs/design.md §2, §4).

Two layouts are read:

* the reference QuALITY-H / GPQA-H layout published with the ER-Audit paper: a JSON list of
  ``{"story_title", "Q_Y": {"question", "Y_true", "Y_false"}, "Q_H": {"question", "H_true",
  "H_false"}}``; the larger sibling files with debate transcripts (``Q_Y.honest_transcript``,
  ``Q_Y.adversarial_transcript``) are accepted and the transcripts kept in ``Pair.extra``;
* the project's own JSONL layout, one pair a line::

    {"pair_id": "...", "story_title": "...",
     "monitored": {"question": "...", "true": "...", "false": "..."},
     "hidden": {"question": "...", "true": "...", "false": "..."}}

  ``pair_id`` is optional; when absent the reference id is computed.

Every validation error names the file, the record index, the pair id (when known) and the field.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.paths import DATA_DIR
from eraudit_core.text import check_text
from eraudit_core.types import BinaryQuestion, Pair

BUNDLED_QUALITY_H = DATA_DIR / "benchmarks" / "quality_h" / "QuALITY-H-no-debate.json"
QUALITY_H_ATTRIBUTION = (
    "QuALITY-H (ER-Audit paper, CSIRO-CQS-AI-alignment-Team/Epistemic-Reliability-Auditor); "
    "questions and answers from QuALITY (Pang et al., 2022), CC BY 4.0."
)
MAX_BENCHMARK_BYTES = 200 * 1024 * 1024


@dataclass(frozen=True)
class Benchmark:
    """A named, validated list of pairs with where it came from."""

    name: str
    pairs: list[Pair]
    source: str = ""
    sha256: str = ""
    attribution: str = ""
    layout: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def benchmark_id(self) -> str:
        """Content-addressed id: the same file always imports to the same benchmark."""
        return f"{slugify(self.name)}_{self.sha256[:12]}" if self.sha256 else slugify(self.name)

    @property
    def content_digest(self) -> str:
        """Digest of the pairs themselves (ids, order and texts), whatever file they came from."""
        return pairs_content_digest(_pair_row(p) for p in self.pairs)

    def pair(self, pair_id: str) -> Pair:
        for pair in self.pairs:
            if pair.pair_id == pair_id:
                return pair
        raise KeyError(pair_id)


# The pair fields that make a benchmark's content, in the order of the `pairs` table's columns.
CONTENT_COLUMNS = (
    "pair_id",
    "pair_index",
    "story_title",
    "monitored_question",
    "monitored_true",
    "monitored_false",
    "hidden_question",
    "hidden_true",
    "hidden_false",
)


def _pair_row(p: Pair) -> tuple[Any, ...]:
    m, h = p.monitored, p.hidden
    return (
        (p.pair_id, p.index, p.story_title)
        + (m.question, m.true_option, m.false_option)
        + (
            h.question,
            h.true_option,
            h.false_option,
        )
    )


def pairs_content_digest(rows: Iterable[Sequence[Any]]) -> str:
    """sha256 of the pairs' CONTENT_COLUMNS, sorted by pair index: the benchmark's identity
    beside its name, so an edited copy under a known id is never taken for the original."""
    canon = [[str(r[0]), int(r[1]), str(r[2] or "")] + [str(x) for x in r[3:9]] for r in rows]
    canon.sort(key=lambda r: (r[1], r[0]))
    payload = json.dumps(canon, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def slugify(name: str) -> str:
    """'QuALITY-H' -> 'quality_h' (the reference code's slug rule)."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "benchmark"


def reference_pair_id(dataset: str, story_title: str, monitored_q: str, hidden_q: str) -> str:
    """The reference code's pair id: ``<slug>_`` + sha256 of the compact JSON list, 16 hex."""
    payload = json.dumps(
        [dataset, story_title, monitored_q, hidden_q], ensure_ascii=False, separators=(",", ":")
    )
    return f"{slugify(dataset)}_{hashlib.sha256(payload.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


def guess_dataset_name(path: Path) -> str:
    """'QuALITY-H-no-debate.json' -> 'QuALITY-H'; 'GPQA-H.json' -> 'GPQA-H'."""
    stem = path.name.split(".")[0]
    stem = re.sub(r"-no-debate$", "", stem)
    return stem or "benchmark"


def load_benchmark(path: str | Path, name: str | None = None) -> Benchmark:
    """Read and validate a benchmark file (reference JSON list or project JSONL).

    Raises InputError naming file, record, pair id and field on the first problem found;
    nothing is half-imported because nothing is stored here.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such benchmark file")
    size = path.stat().st_size
    if size > MAX_BENCHMARK_BYTES:
        raise InputError(
            f"{path}: file is {size} bytes, more than the {MAX_BENCHMARK_BYTES} allowed"
        )
    raw = path.read_bytes()
    return parse_benchmark(raw, source=str(path), name=name or guess_dataset_name(path))


def parse_benchmark(raw: bytes, source: str, name: str) -> Benchmark:
    """Parse benchmark bytes (used for uploads, where there is no path)."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    digest = hashlib.sha256(raw).hexdigest()
    stripped = text.lstrip()
    if not stripped:
        raise InputError(f"{source}: the file is empty")
    if stripped.startswith("["):
        try:
            records = json.loads(text)
        except RecursionError:
            raise InputError(f"{source}: the JSON is nested too deeply to read") from None
        except json.JSONDecodeError as exc:
            record = _failing_record(text)
            where = f"record {record + 1}, " if record is not None else ""
            raise InputError(
                f"{source}: malformed or truncated JSON in {where}line {exc.lineno}, column "
                f"{exc.colno}: {exc.msg}"
            ) from exc
        pairs = [_reference_record(source, name, i, rec) for i, rec in enumerate(records)]
        layout = "reference-json"
    else:
        pairs = []
        for line_no, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except RecursionError:
                raise InputError(
                    f"{source}: line {line_no} (record {len(pairs) + 1}): the JSON is nested too "
                    "deeply to read"
                ) from None
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"{source}: line {line_no} (record {len(pairs) + 1}) is not valid JSON: {exc.msg}"
                ) from exc
            pairs.append(_jsonl_record(source, name, len(pairs), rec))
        layout = "jsonl"
    if not pairs:
        raise InputError(f"{source}: no records found")
    _check_unique(source, pairs)
    attribution = QUALITY_H_ATTRIBUTION if slugify(name) == "quality_h" else ""
    return Benchmark(name, pairs, source, digest, attribution, layout)


def _failing_record(text: str) -> int | None:
    """Index of the list element where a JSON list stops parsing (None if not a list)."""
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    index = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return index if pos >= len(text) else None
        try:
            _, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return index
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos < len(text) and text[pos] == ",":
            pos += 1
            index += 1
        elif pos >= len(text) or text[pos] != "]":
            return index + 1 if pos >= len(text) else index


def load_bundled_benchmark() -> Benchmark:
    """The QuALITY-H pairs shipped under data/ (222 pairs, CC BY 4.0, see SOURCE.md)."""
    return load_benchmark(BUNDLED_QUALITY_H, name="QuALITY-H")


def _where(source: str, index: int, pair_id: str | None) -> str:
    pid = f", pair {pair_id}" if pair_id else ""
    return f"{source}: record {index + 1}{pid}"  # records are counted from 1


def _text_field(rec: Mapping[str, Any], key: str, where: str, path: str) -> str:
    if key not in rec:
        raise InputError(f"{where}: missing field {path}")
    value = rec[key]
    if not isinstance(value, str):
        raise InputError(f"{where}: field {path} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InputError(f"{where}: field {path} is empty")
    return check_text(value, where, path)


def _object_field(rec: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    if key not in rec:
        raise InputError(f"{where}: missing field {key}")
    value = rec[key]
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: field {key} must be an object, got {type(value).__name__}")
    return value


def _binary(
    obj: Mapping[str, Any], keys: tuple[str, str, str], where: str, prefix: str
) -> BinaryQuestion:
    q, t, f = (_text_field(obj, k, where, f"{prefix}.{k}") for k in keys)
    if t.strip() == f.strip():
        raise InputError(f"{where}: fields {prefix}.{keys[1]} and {prefix}.{keys[2]} are identical")
    return BinaryQuestion(q, t, f)


# (object key, (question, true, false) keys) of the monitored and the hidden question.
_REFERENCE_FIELDS = (
    ("Q_Y", ("question", "Y_true", "Y_false")),
    ("Q_H", ("question", "H_true", "H_false")),
)
_JSONL_FIELDS = (
    ("monitored", ("question", "true", "false")),
    ("hidden", ("question", "true", "false")),
)
_TRANSCRIPT_KEYS = ("honest_transcript", "adversarial_transcript")


def _reference_record(source: str, dataset: str, index: int, rec: Any) -> Pair:
    return _record(source, dataset, index, rec, _REFERENCE_FIELDS, jsonl=False)


def _jsonl_record(source: str, dataset: str, index: int, rec: Any) -> Pair:
    return _record(source, dataset, index, rec, _JSONL_FIELDS, jsonl=True)


def _record(
    source: str,
    dataset: str,
    index: int,
    rec: Any,
    fields: tuple[tuple[str, tuple[str, str, str]], tuple[str, tuple[str, str, str]]],
    jsonl: bool,
) -> Pair:
    """One validated pair; the JSONL layout may carry its own pair_id and `extra`, the reference
    layout keeps its debate transcripts (Q_Y.*_transcript) in `extra`."""
    where = _where(source, index, None)
    if not isinstance(rec, Mapping):
        raise InputError(f"{where}: must be an object, got {type(rec).__name__}")
    title = rec.get("story_title", "")
    if not isinstance(title, str):
        raise InputError(f"{where}: field story_title must be a string")
    check_text(title, where, "story_title")
    (m_key, m_fields), (h_key, h_fields) = fields
    mon = _object_field(rec, m_key, where)
    hid = _object_field(rec, h_key, where)
    pid = rec.get("pair_id") if jsonl else None
    if pid is not None and (not isinstance(pid, str) or not pid.strip()):
        raise InputError(f"{where}: field pair_id must be a non-empty string")
    if pid is not None:
        check_text(pid, where, "pair_id", max_chars=200)
    if (
        pid is None
        and isinstance(mon.get("question"), str)
        and isinstance(hid.get("question"), str)
    ):
        pid = reference_pair_id(dataset, title, mon["question"], hid["question"])
    where = _where(source, index, pid)
    monitored = _binary(mon, m_fields, where, m_key)
    hidden = _binary(hid, h_fields, where, h_key)
    assert pid is not None  # both questions are strings once _binary has passed
    if jsonl:
        raw_extra = rec.get("extra")
        if raw_extra is not None and not isinstance(raw_extra, Mapping):
            raise InputError(
                f"{where}: field extra must be an object, got {type(raw_extra).__name__}"
            )
        extra = dict(raw_extra or {})
    else:
        extra = {key: mon[key] for key in _TRANSCRIPT_KEYS if key in mon}
    return Pair(pid, index, title, monitored, hidden, extra)


def _check_unique(source: str, pairs: Sequence[Pair]) -> None:
    seen: dict[str, int] = {}
    for pair in pairs:
        if pair.pair_id in seen:
            raise InputError(
                f"{_where(source, pair.index, pair.pair_id)}: duplicate pair id (same as record "
                f"{seen[pair.pair_id] + 1}); field pair_id must be unique"
            )
        seen[pair.pair_id] = pair.index


def write_jsonl(benchmark: Benchmark, path: str | Path) -> None:
    """Write pairs in the project's JSONL layout (round-trips through load_benchmark)."""
    with Path(path).open("w", encoding="utf-8") as fh:
        for p in benchmark.pairs:
            rec = {
                "pair_id": p.pair_id,
                "story_title": p.story_title,
                "monitored": {
                    "question": p.monitored.question,
                    "true": p.monitored.true_option,
                    "false": p.monitored.false_option,
                },
                "hidden": {
                    "question": p.hidden.question,
                    "true": p.hidden.true_option,
                    "false": p.hidden.false_option,
                },
            }
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
