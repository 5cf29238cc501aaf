"""Import Inspect eval logs written by Petri v2 (`petri/audit`) and Petri 3 (`inspect_petri`).

Schema: tests/fixtures/petri/SCHEMA_NOTES.md §2. Read through `inspect_ai.log` (>= 0.3.285:
Petri 3's logs are zstd-compressed). Per sample, the judge scorers are found by name
(`alignment_judge`, `alignment_judge1`, ... for v2, `audit_judge` for Petri 3; `--scorer`
overrides), each judge's scores are read through `judge_scores`, other scorers' values go to
the rollouts file, and the log's status and each sample's error are reported as such. A rollout
is the sample's uuid (else run id / sample id / epoch), so copies of a log add nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.sensitivity._import import Collector, ImportResult, transcript_messages
from eraudit_core.sensitivity._judges import (
    is_judge_scorer,
    judge_scores,
    petri3_highlights,
    strip_provider,
    v2_highlights,
)
from eraudit_core.sensitivity._mapping import RolloutContext, TagMapping

LOG_SUFFIXES = (".eval", ".json")
# Conversations, events and their timelines are not needed and are most of a log's size
# (events cannot be skipped without their timelines: those refer to them).
_SKIP_FIELDS = {"events", "timelines", "attachments", "store"}


def find_logs(paths: Iterable[str | Path]) -> list[tuple[Path, bool]]:
    """(file, named by the user): files as given; directories searched recursively for
    `.eval` and `.json` files (a folder may also hold Petri transcripts or other JSON)."""
    out: list[tuple[Path, bool]] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.suffix in LOG_SUFFIXES and f.is_file())
            if not found:
                raise InputError(f"{p}: no .eval or .json Inspect logs found")
            out.extend((f, False) for f in found)
        elif p.is_file():
            out.append((p, True))
        else:
            raise InputError(f"{p}: file not found")
    return out


def _reader() -> Any:
    try:
        import inspect_ai.log as log_api
    except ImportError as exc:
        raise InputError(
            "reading Inspect logs needs the package inspect_ai (installed by requirements.txt; "
            "pip install inspect-ai==0.3.285)"
        ) from exc
    return log_api


def _judge_models(header: Any) -> dict[str, str | None]:
    """Scorer instance name (alignment_judge, alignment_judge1, ...) -> its judge model.

    Inspect names the n-th instance of a scorer `<name><n-1>`; eval.scorers lists them in that
    order, with the model in `options` when the task passed one.
    """
    out: dict[str, str | None] = {}
    counts: dict[str, int] = {}
    for s in getattr(header.eval, "scorers", None) or []:
        n = counts.get(s.name, 0)
        counts[s.name] = n + 1
        model = (s.options or {}).get("model") if isinstance(s.options, dict) else None
        if isinstance(model, dict):  # a serialised model config: {"model": "provider/name", ...}
            model = model.get("model")
        out[s.name if n == 0 else f"{s.name}{n}"] = str(model) if model else None
    return out


def _role(header: Any, role: str) -> str | None:
    cfg = (getattr(header.eval, "model_roles", None) or {}).get(role)
    return None if cfg is None else str(getattr(cfg, "model", cfg))


def _judge_label(
    scorer: str, judges: Sequence[str], models: dict[str, str | None], default: str | None
) -> str:
    """The judge column: its model (without provider) when known, unique within the log."""
    model = models.get(scorer) or default
    if not model:
        return scorer
    name = strip_provider(model)
    same = [j for j in judges if strip_provider(models.get(j) or default or j) == name]
    return name if len(same) <= 1 else f"{name} ({scorer})"


@dataclass(frozen=True)
class _LogInfo:
    """What a log's header says that every sample of it shares."""

    path: Path
    status: str
    log_error: str
    run_id: str
    task_args: dict[str, Any]
    eval_tags: list[str]
    models: dict[str, str | None]
    judge_role: str | None
    auditor_role: str | None
    target_role: str | None


def _error_text(err: Any) -> str:
    return str(getattr(err, "message", err) or "")[:200]


def _one_log(
    path: Path,
    named: bool,
    mapping: TagMapping,
    scorers: Sequence[str] | None,
    out: Collector,
    api: Any,
) -> None:
    source = str(path)
    try:
        header = api.read_eval_log(str(path), header_only=True)
    except Exception as exc:  # inspect raises its own types on a broken log
        if named:
            raise InputError(f"{path}: cannot be read as an Inspect eval log: {exc}") from exc
        # Found in a folder: other JSON (e.g. Petri transcripts) may sit beside the logs.
        out.drop(path.name, source, "malformed", f"not an Inspect eval log ({str(exc)[:120]})")
        return
    status = str(getattr(header, "status", "success"))
    log_error = _error_text(header.error) if getattr(header, "error", None) else ""
    if status == "error":
        out.note(f"{path}: log status is error ({log_error})")
    elif status != "success":
        out.note(f"{path}: log status is {status}")
    ev = header.eval
    run_id = str(getattr(ev, "run_id", "") or "")
    task_args = dict(getattr(ev, "task_args", None) or {})
    eval_tags = [str(t) for t in (getattr(ev, "tags", None) or [])]
    eval_tags += [str(t) for t in (getattr(header, "tags", None) or []) if str(t) not in eval_tags]
    models = _judge_models(header)
    judge_role = _role(header, "judge")
    auditor_role, target_role = _role(header, "auditor"), _role(header, "target")
    info = _LogInfo(
        path, status, log_error, run_id, task_args, eval_tags, models, judge_role,
        auditor_role, target_role,
    )  # fmt: skip
    n_samples = 0
    samples = iter(
        api.read_eval_log_samples(
            str(path), all_samples_required=False, exclude_fields=_SKIP_FIELDS
        )
    )
    while True:
        try:
            sample = next(samples)
        except StopIteration:
            break
        except Exception as exc:  # a truncated or corrupt sample
            raise InputError(f"{path}: cannot read the samples of this Inspect log: {exc}") from exc
        n_samples += 1
        _one_sample(sample, info, mapping, scorers, out)
    if n_samples == 0:
        code = "run_error" if status == "error" else "run_not_finished"
        if status == "success":
            out.note(f"{path}: the log has no samples")
        else:
            out.drop(f"{path.name} (whole log)", source, code, log_error or f"status {status}")


def _one_sample(
    sample: Any, log: _LogInfo, mapping: TagMapping, scorers: Sequence[str] | None, out: Collector
) -> None:
    source = str(log.path)
    epoch = int(getattr(sample, "epoch", 1) or 1)
    uuid = getattr(sample, "uuid", None)
    rollout = str(uuid) if uuid else f"{log.run_id}/{sample.id}/{epoch}"
    if getattr(sample, "error", None) is not None:
        if log.status == "error":
            detail = _error_text(sample.error)
            if detail != log.log_error:
                detail += f" (the run stopped with: {log.log_error})"
            out.drop(rollout, source, "run_error", detail)
        else:
            out.drop(rollout, source, "sample_error", _error_text(sample.error))
        return
    meta = dict(getattr(sample, "metadata", None) or {})
    seed_text = sample.input if isinstance(sample.input, str) else meta.get("seed_instruction")
    sample_tags = [str(t) for t in (meta.get("tags") or [])]
    ctx = RolloutContext(
        tags=tuple(dict.fromkeys(sample_tags + log.eval_tags)),
        seed_id=str(sample.id),
        seed_text=str(seed_text) if seed_text else None,
        task_args=log.task_args,
        directories=log.path.resolve().parent.parts,
    )
    scores = dict(getattr(sample, "scores", None) or {})
    if not scores:
        if log.status == "error":
            out.drop(rollout, source, "run_error", log.log_error)
        elif log.status != "success":
            out.drop(rollout, source, "run_not_finished", f"status {log.status}")
        else:
            out.drop(rollout, source, "judge_missing", "sample.scores is empty")
        return
    condition, behaviour, code, reason = mapping.resolve_context(ctx)
    if code:
        out.drop(rollout, source, code, reason or "")
        return
    assert condition is not None and behaviour is not None
    judges = (
        [s for s in scorers if s in scores]
        if scorers
        else [s for s in scores if is_judge_scorer(s)]
    )
    if scorers and not judges:
        wanted = ", ".join(scorers)
        out.drop(
            rollout, source, "judge_missing", f"no '{wanted}' score (scorers: {', '.join(scores)})"
        )
        return
    if not judges:
        out.drop(rollout, source, "no_judge_scorer", f"scorers present: {', '.join(scores)}")
        return
    auditor = log.auditor_role or meta.get("auditor_model")
    target = log.target_role or meta.get("target_model")
    if not auditor or not target:
        out.drop(rollout, source, "malformed", "no auditor/target model in eval.model_roles")
        return
    other: dict[str, Any] = {}
    other_text: dict[str, str] = {}
    for name, sc in scores.items():
        if name in judges:
            continue
        value = sc.value
        if isinstance(value, dict):
            other.update({f"{name}/{k}": v for k, v in value.items()})
        else:
            other[name] = value
        if sc.answer or sc.explanation:
            other_text[name] = str(sc.answer or sc.explanation)
    if other:
        names = sorted({k.split("/")[0] for k in other})
        out.note(
            f"scorer(s) {', '.join(names)} are not judges: their values are kept in the "
            "rollouts file (other_scores), not in the score table"
        )
    labels = (behaviour, condition, strip_provider(str(auditor)), strip_provider(str(target)))
    common = {
        "format": "inspect-log",
        "run_id": log.run_id,
        "sample_id": str(sample.id),
        "epoch": epoch,
        "sample_uuid": str(uuid) if uuid else None,
        "seed_instruction": ctx.seed_text,
        "tags": sample_tags,
        "task_args": {k: v for k, v in log.task_args.items() if k != "seed_instructions"},
        "auditor_model": str(auditor),
        "target_model": str(target),
        "other_scores": ({**other, **{f"{k} (text)": v for k, v in other_text.items()}} or None),
        "messages": transcript_messages(getattr(sample, "messages", None)),
    }
    for scorer in judges:
        sc = scores[scorer]
        md = dict(sc.metadata or {})
        # Petri 3 keeps the summary in metadata; Petri v2 in `answer`.
        summary = md.get("summary") if "summary" in md else sc.answer
        value = sc.value
        n_values = len(value) if isinstance(value, dict) else 0
        js = judge_scores(value, summary, sc.explanation, md.get("response"), md)
        judge = _judge_label(scorer, judges, log.models, log.judge_role)
        if js.failure:
            out.drop(rollout, source, js.failure, js.detail, judge, n_values)
            continue
        for drop_code, dims in js.dropped.items():
            out.drop(rollout, source, drop_code, ", ".join(dims)[:300], judge, len(dims))
        raw_hl = md.get("highlights")
        highlights = (
            petri3_highlights(raw_hl, md.get("scanner_references"))
            if isinstance(raw_hl, str)
            else v2_highlights(raw_hl)
        )
        details = {
            **common,
            "scorer": scorer,
            "judge_model": log.models.get(scorer) or log.judge_role,
            "summary": summary,
            "justification": sc.explanation,
            "highlights": highlights,
            "dimensions_dropped": js.dropped or None,
            "notes": js.notes or None,
        }
        out.add(rollout, source, labels, judge, js.scores, details)


def import_inspect_logs(
    paths: Iterable[str | Path],
    mapping: TagMapping,
    scorer: str | Sequence[str] | None = None,
) -> ImportResult:
    """Read Inspect eval logs (files, or directories searched for .eval/.json logs).

    `scorer` names the judge scorer(s); by default every Petri judge scorer in each sample
    (`alignment_judge*`, `audit_judge`). The judge column is the judge model without its
    provider (as Petri v2 transcripts write model names), and so are auditor and target.
    """
    api = _reader()
    scorers = [scorer] if isinstance(scorer, str) else (list(scorer) if scorer else None)
    files = find_logs(paths)
    if not files:
        raise InputError("no Inspect logs given")
    out = Collector()
    for path, named in files:
        _one_log(path, named, mapping, scorers, out, api)
    return out.result("inspect logs")
