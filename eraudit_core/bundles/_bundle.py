"""Run bundles: a run moved between stores as one inspectable file.

An auditor audits on a GPU box and reviews on a laptop. `export_run_bundle` writes a zip with
`manifest.json` (format, versions, run id, and per table its file, row count and sha256) and
one Parquet file per table: the run, its per-pair results and steps, its benchmark, the
paraphrases of its pairs with their provenance, its checkpoints and the cached scores (with
the label log-probabilities) of every prompt it asked. Any zip tool lists it and any Parquet
reader opens it. `import_run_bundle` checks the whole bundle first (format, versions, sizes,
checksums, row counts), then stores it in one transaction and refuses a run id twice.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tempfile
import zipfile
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from eraudit_core.bundles._cells import _is_null
from eraudit_core.bundles._check import check_bundle_claims, check_run_verdicts
from eraudit_core.bundles._rows import check_bundle_cells
from eraudit_core.errors import InputError
from eraudit_core.paths import check_output_file, umask_mode
from eraudit_core.runs import run_prompt_hashes, tool_version
from eraudit_core.store import (
    RUN_TABLES,
    SCHEMA_VERSION,
    Store,
    read_run_rows,
    write_run_rows,
)
from eraudit_core.text import parse_json

BUNDLE_FORMAT = "eraudit-run-bundle"
BUNDLE_VERSION = 1
MANIFEST = "manifest.json"
# Caps on what a bundle unpacks to (a zip bomb would otherwise fill memory): in total, and
# per member as a ratio of unpacked to packed size once past MIN_RATIO_CHECK bytes.
MAX_TOTAL_BYTES = 1024**3
MAX_RATIO = 50
MIN_RATIO_CHECK = 1024**2
CHUNK_BYTES = 1024**2
MAX_MANIFEST_BYTES = 1024**2


def export_run_bundle(store: Store, run_id: str, out: str | Path, *, force: bool = False) -> Path:
    """Write the bundle of `run_id` to `out` (a .zip); never over a store, over another
    file only with `force`. Written to a temporary file first, then moved into place."""
    path = check_output_file(out, force=force)
    rows = read_run_rows(store, run_id, run_prompt_hashes(store, run_id))
    for member, col in PATH_CELLS:
        frame = rows[member]
        if col in frame.columns:
            frame[col] = frame[col].map(lambda v: relative_paths(v) if isinstance(v, str) else v)
    run = rows["runs"].iloc[0]
    tables: dict[str, dict[str, Any]] = {}
    blobs: dict[str, bytes] = {}
    for name in RUN_TABLES:
        buf = io.BytesIO()
        rows[name].to_parquet(buf, index=False)
        data = buf.getvalue()
        blobs[f"{name}.parquet"] = data
        tables[name] = {
            "file": f"{name}.parquet",
            "rows": len(rows[name]),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    manifest = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "label": run["label"],
        "status": run["status"],
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "exported_by": f"eraudit-studio {tool_version()}",
        "tables": tables,
    }
    bench = rows["benchmarks"]
    if not bench.empty and "content_digest" in bench:
        digest = bench["content_digest"].iloc[0]
        manifest["benchmark"] = {
            "id": str(bench["benchmark_id"].iloc[0]),
            "content_digest": digest if isinstance(digest, str) else None,
        }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".export-", suffix=".zip", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(MANIFEST, json.dumps(manifest, indent=2, default=str))
            for name, data in blobs.items():
                zf.writestr(name, data)
        os.chmod(tmp, umask_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# Cells that may name files on the exporter's machine (the score table, the model cache
# under the home directory): exported with each absolute path cut to a relative name.
PATH_CELLS = (
    ("runs", "source"),
    ("runs", "pre_name"),
    ("runs", "post_name"),
    ("runs", "label"),
    ("runs", "provenance"),
    ("runs", "error"),
    ("runs", "phase"),
    ("checkpoints", "name"),
    ("checkpoints", "details"),
    ("benchmarks", "source"),
    ("paraphrases", "provenance"),
)
# An absolute POSIX path of two or more components, or one under `~`, that starts a cell or
# follows a blank, a quote, `=`, `+`, `:` (not `://`, a URL) or an opening bracket; its
# components run up to a blank, a quote, `+`, `:`, `,`, `;` or a closing bracket.
_ABSOLUTE_PATH = re.compile(
    r"""(?:(?<=^)|(?<=[\s"'=(\[{,+:]))~?(?:/(?!/)[^\s"'+:,;)\]}/]+){2,}/?"""
)
_HF_CACHE_DIR = re.compile(r"(?:^|/)((?:models|datasets)--[^/]+(?:/.*)?)$")


def relative_paths(text: str) -> str:
    """`text` with every absolute path replaced by a relative name: a Hugging Face cache
    path by its part from `models--<org>--<name>` on, any other by its file name (the
    exporter's directories, user name and home stay on the exporter's machine)."""

    def cut(match: re.Match[str]) -> str:
        path = match.group(0).rstrip("/")
        cache = _HF_CACHE_DIR.search(path)
        return cache.group(1) if cache else (path.rsplit("/", 1)[-1] or path)

    return _ABSOLUTE_PATH.sub(cut, text)


def read_bundle(path: str | Path) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    """The manifest and tables of a bundle, every member checked; InputError names the file
    and the member that is wrong.

    Members are streamed in chunks and counted as they unpack, so a zip bomb is refused after
    at most MAX_RATIO times its compressed size, whatever its headers claim: the total
    unpacked size is capped (MAX_TOTAL_BYTES), and so is each member's ratio of unpacked to
    packed size (MAX_RATIO; Parquet is compressed already, a real bundle's members stay
    near 1). A Parquet file that says it unpacks to more than the cap is refused unread.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such bundle file")
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise InputError(f"{path}: not a run bundle (not a zip file: {exc})") from None
    with zf:
        infos: dict[str, zipfile.ZipInfo] = {}
        for info in zf.infolist():
            if info.filename in infos:
                raise InputError(
                    f"{path}: member {info.filename} appears twice; zip tools disagree on "
                    "which copy they read, so a bundle holds each member once"
                )
            if info.flag_bits & 0x1:
                raise InputError(
                    f"{path}: member {info.filename} is encrypted; a bundle is read without "
                    "a password"
                )
            infos[info.filename] = info
        if MANIFEST not in infos:
            raise InputError(f"{path}: not a run bundle (no {MANIFEST})")
        budget = _Budget(path)
        raw_manifest, _ = _read_member(zf, infos[MANIFEST], budget, MAX_MANIFEST_BYTES)
        manifest = parse_json(raw_manifest.decode("utf-8", "replace"), f"{path}: {MANIFEST}")
        _check_manifest(path, manifest)
        expected = {t["file"] for t in manifest["tables"].values()} | {MANIFEST}
        extra = sorted(set(infos) - expected)
        if extra:
            raise InputError(f"{path}: unexpected member {extra[0]} (not in {MANIFEST})")
        frames = {}
        for name in RUN_TABLES:
            entry = manifest["tables"][name]
            member = entry["file"]
            found = infos.get(member)
            if found is None:
                raise InputError(f"{path}: {member} is listed in {MANIFEST} but missing")
            data, digest = _read_member(zf, found, budget, MAX_TOTAL_BYTES)
            if digest != entry["sha256"]:
                raise InputError(f"{path}: {member} does not match its sha256 in {MANIFEST}")
            frame = _read_parquet(path, member, data)
            if len(frame) != entry["rows"]:
                raise InputError(
                    f"{path}: {member} has {len(frame)} rows, {MANIFEST} says {entry['rows']}"
                )
            frames[name] = frame
    if frames["runs"]["run_id"].tolist() != [manifest["run_id"]]:
        raise InputError(f"{path}: runs.parquet does not hold run {manifest['run_id']}")
    run = frames["runs"].iloc[0]
    for field in ("label", "status"):
        same = _is_null(manifest.get(field)) and _is_null(run.get(field))
        if field in manifest and field in run and not same and manifest[field] != run[field]:
            raise InputError(
                f"{path}: {MANIFEST}: field {field} says {str(manifest[field])[:80]!r}, "
                f"runs.parquet row 1 says {str(run[field])[:80]!r}"
            )
    return manifest, frames


class _Budget:
    """What a bundle may still unpack to, in bytes, across all its members."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.left = MAX_TOTAL_BYTES


def _read_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, budget: _Budget, limit: int
) -> tuple[bytes, str]:
    """A member's bytes and sha256, read in chunks under the caps; InputError on a corrupt
    stream (a bad deflate stream, a CRC mismatch) or a member that unpacks too far."""
    where = f"{budget.path}: {info.filename}"
    if info.file_size > min(limit, budget.left):
        raise InputError(f"{where} unpacks to {info.file_size} bytes, more than allowed")
    chunks: list[bytes] = []
    sha = hashlib.sha256()
    size = 0
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(CHUNK_BYTES):
                size += len(chunk)
                if size > min(limit, budget.left):
                    raise InputError(f"{where} unpacks to more than the {limit} bytes allowed")
                if size > MIN_RATIO_CHECK and size > MAX_RATIO * max(info.compress_size, 1):
                    raise InputError(
                        f"{where} unpacks to more than {MAX_RATIO} times its packed size "
                        f"({info.compress_size} bytes): refused as a zip bomb"
                    )
                sha.update(chunk)
                chunks.append(chunk)
    # NotImplementedError: zipfile's answer to a compression method it does not support
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
        raise InputError(f"{where} cannot be unpacked ({type(exc).__name__}: {exc})") from None
    budget.left -= size
    return b"".join(chunks), sha.hexdigest()


def _read_parquet(path: Path, member: str, data: bytes) -> pd.DataFrame:
    """A member's table; refused unread when its own metadata says it unpacks past the cap."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(io.BytesIO(data)).metadata
        unpacked = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if unpacked > MAX_TOTAL_BYTES:
            raise InputError(f"{path}: {member} says it unpacks to {unpacked} bytes, too many")
        return pd.read_parquet(io.BytesIO(data))
    except InputError:
        raise
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise InputError(f"{path}: {member} is not a readable Parquet file ({exc})") from None


def _check_manifest(path: Path, manifest: Any) -> None:
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise InputError(f"{path}: {MANIFEST}: field format must be {BUNDLE_FORMAT!r}")
    if manifest.get("format_version") != BUNDLE_VERSION:
        raise InputError(
            f"{path}: {MANIFEST}: format_version {manifest.get('format_version')!r} is not one "
            f"this tool reads ({BUNDLE_VERSION})"
        )
    schema = manifest.get("schema_version")
    if not isinstance(schema, int) or schema > SCHEMA_VERSION:
        raise InputError(
            f"{path}: {MANIFEST}: schema_version {schema!r} is newer than this tool's "
            f"({SCHEMA_VERSION}); upgrade ER-Audit Studio to import it"
        )
    if not isinstance(manifest.get("run_id"), str):
        raise InputError(f"{path}: {MANIFEST}: field run_id must be a string")
    tables = manifest.get("tables")
    if not isinstance(tables, dict) or set(tables) != set(RUN_TABLES):
        raise InputError(f"{path}: {MANIFEST}: field tables must list {', '.join(RUN_TABLES)}")
    for name, entry in tables.items():
        ok = isinstance(entry, dict) and entry.get("file") == f"{name}.parquet"
        ok = ok and isinstance(entry.get("rows"), int) and isinstance(entry.get("sha256"), str)
        if not ok:
            raise InputError(f"{path}: {MANIFEST}: field tables.{name} needs file, rows, sha256")


# Provenance a bundle states that no import can derive again from its steps: kept, but only
# under CLAIMED_KEY, and shown as the bundle's unverified claim (`imported_note`).
UNVERIFIABLE_PROVENANCE = ("noise_floor", "control_run", "epsilon_from")
CLAIMED_KEY = "claimed_by_bundle"


def import_run_bundle(store: Store, path: str | Path) -> dict[str, Any]:
    """Check a bundle whole, then store its run in one transaction; returns the run id and
    the rows per table. A run id already in `store` is refused and nothing is written.

    The bundle is evidence, not authority. Its cells must be ones this tool writes
    (`check_bundle_cells`), its config must pass the validator a new run uses, every verdict,
    bound and worst rewording must follow from its own steps (`check_run_verdicts`) and its
    pairs and questions from its benchmark (`check_bundle_claims`). Provenance that cannot be
    derived again (noise floor, control run, epsilon source) is kept only as the bundle's
    claim. Everything it brings is stored apart under its origin (`write_run_rows`), and the
    run is marked imported from the file, unverified.
    """
    path = Path(path)
    manifest, frames = read_bundle(path)
    check_bundle_cells(frames, str(path))
    check_run_verdicts(frames, str(path))
    check_bundle_claims(frames, str(path))
    frames = {**frames, "runs": _claims_apart(frames["runs"])}
    imported_from = {
        "file": path.name,
        "sha256": _file_sha256(path),
        "imported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "exported_by": str(manifest.get("exported_by", ""))[:200],
        "verified": False,
    }
    bench = manifest.get("benchmark")
    digest = bench.get("content_digest") if isinstance(bench, dict) else None
    try:
        run_id = write_run_rows(
            store,
            frames,
            imported_from,
            benchmark_digest=digest if isinstance(digest, str) else None,
        )
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    return {"run_id": run_id, "rows": {name: len(df) for name, df in frames.items()}}


def _claims_apart(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs row with the provenance no import can verify moved under CLAIMED_KEY (merged
    with what an earlier import of the run had moved there)."""
    raw = runs["provenance"].iloc[0] if "provenance" in runs else None
    try:
        prov = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        raise InputError("runs.parquet row 1: field provenance is not JSON") from None
    if not isinstance(prov, dict):
        raise InputError("runs.parquet row 1: field provenance must be a JSON object")
    earlier = prov.get(CLAIMED_KEY)
    claimed: dict[str, Any] = dict(earlier) if isinstance(earlier, dict) else {}
    for key in UNVERIFIABLE_PROVENANCE:
        if prov.get(key) is not None:
            claimed[key] = prov[key]
        prov.pop(key, None)
    if claimed:
        prov[CLAIMED_KEY] = claimed
    runs = runs.copy()
    runs["provenance"] = json.dumps(prov, ensure_ascii=False, default=str)
    return runs


def _file_sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK_BYTES):
            sha.update(chunk)
    return sha.hexdigest()
