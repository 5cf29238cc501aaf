"""Paraphrase files: the reference layout (`{"paraphrase": {"gpt": [...]}}` per record) and a
flat JSONL, read with errors that name the file, the record and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.paraphrase._registry import register_generator
from eraudit_core.paraphrase._sets import SetRole
from eraudit_core.text import check_no_control, check_text, parse_json
from eraudit_core.types import Paraphrase

# --------------------------------------------------------------------------------------------
# Files: flat JSONL and the reference layout


def write_paraphrase_file(paraphrases: Iterable[Paraphrase], path: str | Path) -> None:
    """Flat JSONL, one paraphrase a line: pair_id, role, generator, idx, text."""
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for p in paraphrases:
            fh.write(json.dumps(asdict(p), ensure_ascii=False) + "\n")


def load_paraphrase_file(path: str | Path, default_role: SetRole | None = None) -> list[Paraphrase]:
    """Read a flat JSONL paraphrase file (pair_id, generator, text; role and idx optional).

    A missing role takes `default_role` (an error if none is given); a missing idx counts up
    per (pair, generator) in file order. Errors name the file, line and field.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such paraphrase file")
    out: list[Paraphrase] = []
    counters: dict[tuple[str, str], int] = {}
    for line_no, rec in _jsonl_records(path):
        where = f"{path}: line {line_no}"
        pair_id = _str_field(rec, "pair_id", where)
        generator = _str_field(rec, "generator", where)
        text = _str_field(rec, "text", where)
        role = rec.get("role", default_role)
        if role not in ("search", "test"):
            raise InputError(f"{where}, field 'role': must be 'search' or 'test', got {role!r}")
        key = (pair_id, generator)
        idx = rec.get("idx", counters.get(key, 0))
        if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0:
            raise InputError(f"{where}, field 'idx': must be a non-negative integer, got {idx!r}")
        counters[key] = idx + 1
        out.append(Paraphrase(pair_id, role, generator, idx, text))
    return out


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the file: {exc}") from None


def _jsonl_records(path: Path) -> Iterable[tuple[int, Mapping[str, Any]]]:
    for line_no, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except RecursionError:
            raise InputError(f"{path}: line {line_no}: the JSON is nested too deeply") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {line_no} is not valid JSON: {exc.msg}") from exc
        if not isinstance(rec, dict):
            raise InputError(f"{path}: line {line_no}: expected a JSON object")
        yield line_no, rec


def _str_field(rec: Mapping[str, Any], key: str, where: str) -> str:
    value = rec.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}, field {key!r}: missing or not a non-empty string")
    return check_no_control(check_text(value, where, repr(key)), where, repr(key))


def _optional_str(rec: Mapping[str, Any], key: str, where: str) -> str:
    value = rec.get(key)
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise InputError(f"{where}, field {key!r}: must be a string, got {type(value).__name__}")
    return check_no_control(check_text(value, where, repr(key)), where, repr(key))


def read_paraphrase_candidates(
    path: str | Path, dataset: str = "QuALITY-H", default_generator: str = "file"
) -> list[tuple[str, str, str]]:
    """Candidates ``(pair_id, generator, text)`` from either supported file layout.

    * Reference layout: a JSON list of benchmark records (story_title, Q_Y, Q_H) each with
      ``"paraphrase": {"gpt": [...], "claude": [...]}`` (generator -> texts) or
      ``"paraphrase": [{"Q_H": text}, ...]`` (one generator, named `default_generator`).
      Items may be strings or ``{"Q_H": text}``. The pair id is the reference id computed
      from the record (or the record's ``pair_id`` when present).
    * Flat JSONL: ``{"pair_id", "generator", "text"}`` per line.
    """
    from eraudit_core.store import reference_pair_id

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such paraphrase file")
    content = _read_text(path)
    if content.lstrip()[:1] != "[":
        return [
            (
                _str_field(rec, "pair_id", f"{path}: line {n}"),
                _optional_str(rec, "generator", f"{path}: line {n}") or default_generator,
                _str_field(rec, "text", f"{path}: line {n}"),
            )
            for n, rec in _jsonl_records(path)
        ]
    records = parse_json(content, str(path))
    out: list[tuple[str, str, str]] = []
    for i, rec in enumerate(records):
        where = f"{path}: record {i + 1}"  # counted from 1
        if not isinstance(rec, dict):
            raise InputError(f"{where}: expected a JSON object")
        if isinstance(rec.get("pair_id"), str):
            pair_id = rec["pair_id"]
        else:
            try:
                pair_id = reference_pair_id(
                    dataset, rec["story_title"], rec["Q_Y"]["question"], rec["Q_H"]["question"]
                )
            except (KeyError, TypeError) as exc:
                raise InputError(
                    f"{where}: needs 'pair_id' or story_title, Q_Y.question and Q_H.question "
                    f"to identify the pair (missing {exc})"
                ) from exc
        paras = rec.get("paraphrase")
        groups: dict[str, Any]
        if isinstance(paras, dict):
            groups = paras
        elif isinstance(paras, list):
            groups = {default_generator: paras}
        else:
            raise InputError(f"{where}, field 'paraphrase': expected an object or a list")
        for gen, items in groups.items():
            if not isinstance(items, list):
                raise InputError(f"{where}, field 'paraphrase.{gen}': expected a list")
            for j, item in enumerate(items):
                text = item.get("Q_H") if isinstance(item, dict) else item
                if not isinstance(text, str):
                    raise InputError(
                        f"{where}, field 'paraphrase.{gen}[{j}]': expected a string or "
                        f"{{'Q_H': string}}"
                    )
                check_text(text, where, f"'paraphrase.{gen}[{j}]'")
                check_no_control(text, where, f"'paraphrase.{gen}[{j}]'")
                out.append((pair_id, str(gen), text))
    return out


@register_generator("file", offline=True)
class FileParaphraseGenerator:
    """Paraphrases read from a file (reference {"paraphrase": {...}} layout or flat JSONL)."""

    kind = "file"
    version = "1"

    def __init__(
        self,
        path: str | Path,
        source_generator: str | None = None,
        name: str | None = None,
        dataset: str = "QuALITY-H",
    ) -> None:
        self.path = Path(path)
        self.source_generator = source_generator
        self.dataset = dataset
        self._name = name or source_generator or "file"
        self._by_pair: dict[str, list[str]] = {}
        for pair_id, gen, text in read_paraphrase_candidates(self.path, dataset):
            if source_generator is None or gen == source_generator:
                self._by_pair.setdefault(pair_id, []).append(text)

    @property
    def name(self) -> str:
        return self._name

    def settings(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "source_generator": self.source_generator,
            "dataset": self.dataset,
        }

    def generate(self, pair_id: str, question: str, n: int) -> list[str]:
        return list(self._by_pair.get(pair_id, []))[:n]

    def pair_ids(self) -> list[str]:
        return list(self._by_pair)
