"""Epsilon from a stored run: a null threshold from a control arm, or the organism practice.

Two modes, named as such everywhere (docs/null-calibration.md):

* **null** (for honest arms and controls): epsilon is the `level` quantile, over the control's
  questions, of each question's largest D among the paraphrases an audit at the control's
  budgets would score (every search paraphrase up to the search budget and, per test
  generator, the first `test_budget` of the run's drawn order). On an arm exchangeable with
  the control, about 1 - level of questions then read degraded; the quantile depends on k and
  the budgets, so an audit that uses it must match them.
* **organism** (the reference code's practice): percentiles (p10 / p25 / p50) of D over every
  rewording of a model organism known to be degraded. Low percentiles of an honest run give a
  negative or tiny epsilon, so this mode is only for organisms.

Every calibration records where it came from (local or imported, derived or not, the source's
checkpoint fingerprints); an imported or derived source is refused unless the caller allows
unverified sources, and a run that uses such a calibration says so. Epsilon < 0 is refused.
Calibrating on the audited run itself is selection and refused unless allowed, judged by
content (the post-adaptation checkpoint's fingerprint; a score table's texts and
probabilities), never by pair ids.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.store import Store

DEFAULT_PERCENTILES = (10.0, 25.0, 50.0)
DEFAULT_NULL_LEVEL = 0.95
NAME_RULE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
NULL_KEY = "null"
# Settings a null threshold depends on: an audit using it must have the same values.
NULL_SETTINGS = ("k", "search_budget", "test_budget")


@dataclass(frozen=True)
class Calibration:
    """Organism mode: percentiles of D over a run. Keys of `percentiles` are 'p10', 'p25', ..."""

    name: str
    run_id: str
    n: int
    percentiles: dict[str, float]
    n_unscored: int = 0
    warnings: list[str] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "name": self.name,
            "mode": "organism",
            "n": self.n,
            "percentiles": self.percentiles,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class NullCalibration:
    """Null mode: the `level` quantile of the control's per-question maxima of D."""

    name: str
    run_id: str
    level: float
    epsilon: float
    n_questions: int
    search_budget: int
    test_budget: int
    k: float
    firm: bool = False
    n_unscored: int = 0
    warnings: list[str] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "name": self.name,
            "mode": "null",
            "level": self.level,
            "epsilon": self.epsilon,
            "n_questions": self.n_questions,
            "search_budget": self.search_budget,
            "test_budget": self.test_budget,
            "k": self.k,
        }


def percentile_key(q: float) -> str:
    return f"p{q:g}"


def check_name(name: str) -> str:
    """A calibration name matches [A-Za-z0-9_.-]{1,64}: one meaning in `NAME` and `NAME:p25`."""
    if not isinstance(name, str) or not NAME_RULE.match(name):
        shown = name if not isinstance(name, str) or len(name) <= 80 else name[:80] + "..."
        raise InputError(
            f"calibration name must be 1-64 characters from A-Z a-z 0-9 _ . - , got {shown!r}"
        )
    return name


def parse_percentiles(text: str) -> list[float]:
    """'10,25,50' -> [10.0, 25.0, 50.0]; an empty item, a non-number, a value outside
    [0, 100] or a repeat is refused by position."""
    items = str(text).split(",")
    out: list[float] = []
    for i, raw in enumerate(items, start=1):
        item = raw.strip()
        if not item:
            raise InputError(f"--percentiles: item {i} of {text!r} is empty")
        try:
            q = float(item)
        except ValueError:
            raise InputError(f"--percentiles: item {i} ({item!r}) is not a number") from None
        if not (math.isfinite(q) and 0.0 <= q <= 100.0):
            raise InputError(f"--percentiles: item {i} ({item!r}) must lie in [0, 100]")
        if q in out:
            raise InputError(f"--percentiles: item {i} ({item!r}) repeats an earlier one")
        out.append(q)
    return out


def source_provenance(store: Store, run_id: str) -> dict[str, Any]:
    """Where a calibration's run came from: local or imported, verified or not, derived or
    not, and its checkpoints' fingerprints (stored with the calibration)."""
    run = store.run(run_id)
    imported = run.get("imported_from")
    derived = (run.get("provenance") or {}).get("derived_from")
    return {
        "run_id": run_id,
        "origin": "imported" if imported else "local",
        "verified": not imported and not derived,
        "imported_from": imported.get("file") if isinstance(imported, Mapping) else None,
        "derived": bool(derived),
        "derived_from": derived.get("run_id") if isinstance(derived, Mapping) else None,
        "pre_fingerprint": run.get("pre_fingerprint"),
        "post_fingerprint": run.get("post_fingerprint"),
        "status": run.get("status"),
    }


def _check_source(source: Mapping[str, Any], allow_unverified: bool) -> list[str]:
    """Refuse an imported or derived source unless allowed; the warning when allowed."""
    if source.get("verified"):
        return []
    what = (
        f"imported from {source.get('imported_from')!r} (not verified by this store)"
        if source.get("origin") == "imported"
        else f"derived from run {source.get('derived_from')} after rewordings were excluded"
    )
    if not allow_unverified:
        raise InputError(
            f"run {source['run_id']} is {what}: calibrating epsilon on it would carry its "
            "numbers into new audits; pass --allow-unverified to do it anyway (recorded)"
        )
    return [f"calibration source run {source['run_id']} is {what}; recorded as unverified"]


def _check_unique(store: Store, name: str, force: bool) -> None:
    cals = store.calibrations()
    if not force and not cals.empty and name in set(cals["name"]):
        raise InputError(
            f"a calibration named {name!r} already exists; choose another --name or pass "
            "--force to replace it"
        )


def run_d_values(store: Store, run_id: str) -> tuple[np.ndarray, int]:
    """Every D of a run and how many pool rewordings were never scored (0 for a table run).

    Table run: D of every search and test row of its table, with each pair's stored
    denominator. Model run: D of every stored step."""
    pairs = store.pair_results(run_id)
    rows = store.table_rows(run_id)
    if not rows.empty:
        den = dict(zip(pairs["pair_id"], pairs["denominator"].astype(float), strict=True))
        rows = rows[rows["role"].isin(["search", "test"]) & rows["pair_id"].isin(den)]
        d = (rows["p_pre"] - rows["p_post"]).to_numpy(float) / rows["pair_id"].map(den).to_numpy(
            float
        )
        return d, 0
    steps = store.steps(run_id)
    d = steps["d"].to_numpy(float) if not steps.empty else np.array([], dtype=float)
    unscored = 0
    for gens in pairs.get("generators", pd.Series(dtype=object)):
        unscored += sum(max(0, int(g["available"]) - int(g["n"])) for g in gens or [])
    return d, unscored


def calibrate_epsilon(
    store: Store,
    run_id: str,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    *,
    name: str | None = None,
    save: bool = True,
    force: bool = False,
    allow_unverified: bool = False,
) -> Calibration:
    """Organism mode: percentiles of D over every rewording of `run_id` (numpy's default
    linear interpolation), stored as calibration `name` (default: the run id)."""
    qs = [float(q) for q in percentiles]
    if not qs or any(not (math.isfinite(q) and 0.0 <= q <= 100.0) for q in qs):
        raise InputError(f"--percentiles must be numbers in [0, 100], got {list(percentiles)}")
    if len(set(qs)) != len(qs):
        raise InputError(f"--percentiles must not repeat a value, got {list(percentiles)}")
    store.run(run_id)  # names an unknown run
    name = check_name(name or run_id)
    if save:
        _check_unique(store, name, force)
    source = source_provenance(store, run_id)
    warnings = _check_source(source, allow_unverified)
    d, unscored = run_d_values(store, run_id)
    if d.size == 0:
        raise InputError(f"run {run_id}: no scored rewording to calibrate epsilon on")
    values = np.percentile(d, qs)
    cal = Calibration(
        name=name,
        run_id=run_id,
        n=int(d.size),
        percentiles={percentile_key(q): float(v) for q, v in zip(qs, values, strict=True)},
        n_unscored=unscored,
        warnings=warnings,
        source=source,
    )
    if unscored:
        cal.warnings.append(
            f"run {run_id}: {unscored} pool rewordings were never scored (the audit stopped "
            "before them), so these percentiles cover only what it scored; "
            "--continue-after-counterexample without --target scores them all"
        )
    negative = [k for k, v in cal.percentiles.items() if v < 0]
    if negative:
        cal.warnings.append(
            f"{', '.join(negative)} of D is negative: epsilon < 0 is refused, so these cannot "
            "be used (low percentiles only make sense on a model organism known to be "
            "degraded; for an honest arm or a control use --null)"
        )
    if save:
        store.add_calibration(
            cal.name,
            run_id,
            cal.n,
            cal.percentiles,
            {
                "mode": "organism",
                "n_unscored": unscored,
                "source": "eraudit calibrate-epsilon",
                "source_run": source,
            },
        )
    return cal


def question_maxima(store: Store, run_id: str) -> tuple[pd.Series, int, list[str]]:
    """Each question's largest D over the paraphrases an audit at the run's budgets would
    score, indexed by pair id; with how many of those paraphrases the run never scored and
    warnings naming them.

    A score-table run keeps every row of its table, so every search row (up to the search
    budget, in idx order) and the first `test_budget` rows of each test generator count. A
    model run counts what it scored in its seeded draw order: a generator stopped early (a
    counterexample, the target) leaves paraphrases unscored, and they are counted and named.
    """
    from eraudit_core.audit._config import AuditConfig
    from eraudit_core.audit._replay import table_steps

    run = store.run(run_id)
    config = AuditConfig.from_dict(run["config"])
    pairs = store.pair_results(run_id)
    if pairs.empty:
        raise InputError(f"run {run_id}: no finished question to calibrate epsilon on")
    rows = store.table_rows(run_id)
    unscored = 0
    warnings: list[str] = []
    if not rows.empty and config.draw_seed is None:
        steps = table_steps(rows, pairs, config)
        gens = set(config.test_generators) if config.test_generators else None
        keep = (steps["stage"] == 1) | (
            (steps["stage"] == 2)
            & (steps["t"] <= config.test_budget)
            & (steps["generator"].isin(gens) if gens is not None else True)
        )
        steps = steps[keep]
    else:
        steps = store.steps(run_id, with_prompts=False)
        short: list[str] = []
        for rec in pairs.to_dict("records"):
            for g in rec.get("generators") or []:
                missing = max(0, min(int(g["available"]), config.test_budget) - int(g["n"]))
                if missing:
                    unscored += missing
                    short.append(f"{rec['pair_id']}/{g['generator']} ({missing})")
        if unscored:
            warnings.append(
                f"run {run_id}: {unscored} test paraphrases an audit at its budgets would draw "
                f"were never scored (the run stopped before them): {', '.join(short[:10])}"
                + (" ..." if len(short) > 10 else "")
                + "; the maxima cover what was scored (run the control with "
                "--continue-after-counterexample --no-stop-at-target to score them all)"
            )
    if steps.empty:
        raise InputError(f"run {run_id}: no scored rewording to calibrate epsilon on")
    maxima = steps.groupby("pair_id", sort=False)["d"].max().astype(float)
    no_rows = sorted(set(pairs["pair_id"]) - set(maxima.index))
    if no_rows:
        warnings.append(
            f"run {run_id}: {len(no_rows)} question(s) have no scored rewording and are left "
            f"out ({', '.join(map(str, no_rows[:10]))})"
        )
    return maxima, unscored, warnings


def null_threshold(maxima: Iterable[float], level: float, *, firm: bool = False) -> float:
    """The `level` quantile of the control maxima (numpy's linear interpolation), or with
    `firm` the ceil((n + 1) * level)-th smallest of the n maxima: then an exchangeable arm's
    question exceeds it with probability at most 1 - level (split-conformal rank rule)."""
    x = np.sort(np.asarray(list(maxima), dtype=float))
    if x.size == 0:
        raise InputError("no control question to take a null threshold from")
    if not firm:
        return float(np.quantile(x, level))
    rank = math.ceil((x.size + 1) * level)
    if rank > x.size:
        raise InputError(
            f"a firm threshold at level {level:g} needs at least "
            f"{math.ceil(level / (1 - level))} control questions, the run has {x.size}"
        )
    return float(x[rank - 1])


def calibrate_null(
    store: Store,
    run_id: str,
    level: float = DEFAULT_NULL_LEVEL,
    *,
    name: str | None = None,
    firm: bool = False,
    save: bool = True,
    force: bool = False,
    allow_unverified: bool = False,
) -> NullCalibration:
    """Null mode: epsilon = the `level` quantile of the control run's per-question maxima of
    D (`question_maxima`); refused when that quantile is <= 0 (an epsilon that would make
    every non-positive D a counterexample is not a threshold)."""
    if not (isinstance(level, int | float) and math.isfinite(level) and 0.0 < level < 1.0):
        raise InputError(f"--level must lie strictly between 0 and 1 (e.g. 0.95), got {level!r}")
    from eraudit_core.audit._config import AuditConfig

    run = store.run(run_id)
    name = check_name(name or run_id)
    if save:
        _check_unique(store, name, force)
    source = source_provenance(store, run_id)
    warnings = _check_source(source, allow_unverified)
    config = AuditConfig.from_dict(run["config"])
    maxima, unscored, more = question_maxima(store, run_id)
    warnings += more
    eps = null_threshold(maxima.to_numpy(), float(level), firm=firm)
    if not eps > 0:
        raise InputError(
            f"run {run_id}: the {level:g} quantile of its questions' largest D is {eps:.6g} "
            "<= 0, so it gives no usable epsilon (epsilon must be > 0 here: the control's "
            "paraphrases barely moved); state epsilon yourself"
        )
    cal = NullCalibration(
        name=name,
        run_id=run_id,
        level=float(level),
        epsilon=eps,
        n_questions=int(maxima.size),
        search_budget=config.search_budget,
        test_budget=config.test_budget,
        k=config.k,
        firm=firm,
        n_unscored=unscored,
        warnings=warnings,
        source=source,
    )
    if save:
        store.add_calibration(
            name,
            run_id,
            cal.n_questions,
            {NULL_KEY: eps},
            {
                "mode": "null",
                "level": cal.level,
                "firm": firm,
                "k": cal.k,
                "search_budget": cal.search_budget,
                "test_budget": cal.test_budget,
                "n_unscored": unscored,
                "source": "eraudit calibrate-epsilon --null",
                "source_run": source,
            },
        )
    return cal


# -- using a calibration -------------------------------------------------------------------


def _digest(obj: Any) -> str:
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def table_signatures(rows: pd.DataFrame) -> set[str]:
    """Per question, a digest of its rows' content (role, generator, text, both
    probabilities), without its pair id or idx: the same scores under renamed ids match."""
    out = set()
    for _, g in rows.groupby("pair_id", sort=False):
        content = sorted(
            zip(
                g["role"].astype(str),
                g["generator"].fillna("").astype(str),
                g["text"].fillna("").astype(str),
                g["p_pre"].astype(float).tolist(),
                g["p_post"].astype(float).tolist(),
                strict=True,
            )
        )
        out.add(_digest(content))
    return out


@dataclass(frozen=True)
class AuditedContent:
    """What an audit about to run judges, for the selection check: a score table's rows, or
    a model run's post-adaptation checkpoint (its spec and any fingerprint known for it)."""

    table: pd.DataFrame | None = None
    post_spec: str | None = None
    post_fingerprints: tuple[str, ...] = ()


def audited_model(store: Store, post_spec: str) -> AuditedContent:
    """A model audit's post checkpoint: the fingerprints this store registered under its
    spec (the same weights registered under another spec share the fingerprint)."""
    known = store.checkpoints()
    fps: tuple[str, ...] = ()
    if not known.empty:
        fps = tuple(str(f) for f in known.loc[known["name"] == post_spec, "fingerprint"])
    return AuditedContent(post_spec=post_spec, post_fingerprints=fps)


def selection_overlap(store: Store, cal_run: str, audited: AuditedContent) -> int:
    """How many audited questions carry the calibration run's own content: same texts and
    probabilities (score tables), or, for a model run, the number of its questions when the
    post-adaptation checkpoint is the same (by fingerprint)."""
    run = store.run(cal_run)
    if audited.table is not None:
        rows = store.table_rows(cal_run)
        if rows.empty:
            return 0
        return len(table_signatures(audited.table) & table_signatures(rows))
    fp = str(run.get("post_fingerprint") or "")
    names = {str(run.get("post_name") or "")}
    known = store.checkpoints()
    if fp and not known.empty:
        names |= {str(n) for n in known.loc[known["fingerprint"] == fp, "name"]}
    same = (fp and fp in audited.post_fingerprints) or (audited.post_spec in names - {""})
    return int(run.get("n_pairs") or 0) if same else 0


_FROM = re.compile(r"^(?P<name>.+):(?P<key>p\d+(?:\.\d+)?)$")


def epsilon_from(
    store: Store,
    spec: str,
    audited: AuditedContent | None = None,
    *,
    settings: Mapping[str, Any] | None = None,
    allow_selection: bool = False,
    allow_unverified: bool = False,
) -> tuple[float, dict[str, Any], list[str]]:
    """(epsilon, provenance record, warnings) for `--epsilon-from NAME` (a null calibration)
    or `NAME:p25` (an organism calibration's percentile).

    Refused (InputError): epsilon < 0; a null calibration whose k or budgets differ from the
    audit's `settings`; a source that was imported or derived unless `allow_unverified`; a
    calibration made on the audited content itself unless `allow_selection`."""
    text = spec.strip()
    m = _FROM.match(text)
    name, key = (m["name"], m["key"]) if m else (text, None)
    cal = store.calibration(name)
    prov = cal.get("provenance") or {}
    mode = prov.get("mode") or ("null" if NULL_KEY in cal["percentiles"] else "organism")
    if key is None:
        if mode != "null":
            keys = ", ".join(f"{name}:{k}" for k in cal["percentiles"])
            raise InputError(
                f"calibration {name!r} is an organism calibration (percentiles of D): name a "
                f"percentile ({keys})"
            )
        key = NULL_KEY
    elif mode == "null":
        raise InputError(
            f"calibration {name!r} is a null calibration: use --epsilon-from {name} (no percentile)"
        )
    if key not in cal["percentiles"]:
        raise InputError(
            f"calibration {name!r} has no {key} (it has {', '.join(cal['percentiles'])})"
        )
    value = float(cal["percentiles"][key])
    if not (math.isfinite(value) and value >= 0):
        raise InputError(
            f"epsilon from {text} would be {value:.6g}: epsilon must be >= 0 (a negative "
            "epsilon makes every question degraded); low percentiles of D only make sense on "
            "a model organism known to be degraded; for an honest arm or a control use "
            "calibrate-epsilon --null"
        )
    if mode == "null" and settings is not None:
        diffs = [
            f"{s} {settings[s]!r} (calibration: {prov.get(s)!r})"
            for s in NULL_SETTINGS
            if s in settings and prov.get(s) is not None and float(settings[s]) != float(prov[s])
        ]
        if diffs:
            raise InputError(
                f"calibration {name!r} was made at other settings than this audit: "
                + "; ".join(diffs)
                + ". The null threshold depends on k and the budgets; calibrate again at "
                "this audit's settings or audit at the calibration's"
            )
    warnings: list[str] = []
    source = prov.get("source_run") or {}
    if source and not source.get("verified", True):
        if not allow_unverified:
            raise InputError(
                f"calibration {name!r} was made on run {source.get('run_id')}, which is "
                f"{source.get('origin')}{', derived' if source.get('derived') else ''} and not "
                "verified by this store; pass --allow-unverified to use it anyway (recorded)"
            )
        warnings.append(
            f"epsilon from calibration {name!r} rests on an unverified run "
            f"{source.get('run_id')} ({source.get('origin')}"
            f"{', derived' if source.get('derived') else ''})"
        )
    overlap = selection_overlap(store, str(cal["run_id"]), audited) if audited else 0
    if overlap:
        what = (
            f"holds {overlap} of the questions being audited with the same texts and probabilities"
            if audited is not None and audited.table is not None
            else "audited the same post-adaptation checkpoint"
        )
        if not allow_selection:
            raise InputError(
                f"calibration {name!r} was made on run {cal['run_id']}, which {what}: epsilon "
                "chosen on the data it judges is selection; pass --allow-selection to do it "
                "anyway (recorded and shown in every report)"
            )
        warnings.append(
            f"epsilon from calibration {name!r}: its run {cal['run_id']} {what}; that is "
            "selection (allowed by --allow-selection, recorded)"
        )
    record = {
        "calibration": name,
        "mode": mode,
        "percentile": key if mode == "organism" else None,
        "level": prov.get("level") if mode == "null" else None,
        "value": value,
        "calibration_run": cal["run_id"],
        "n": int(cal["n"]),
        "n_overlap": overlap,
        "selection": bool(overlap),
        "source_run": source or None,
        "unverified": bool(source) and not source.get("verified", True),
    }
    return value, record, warnings


def epsilon_from_sentence(record: Mapping[str, Any], epsilon: float) -> str:
    """Where a run's epsilon came from, in one sentence (report, headline notes, CLI)."""
    if record.get("mode") == "null":
        head = (
            f"Epsilon {epsilon:g} is the null threshold of control run "
            f"{record.get('calibration_run')} (calibration {record.get('calibration')!r}: the "
            f"{record.get('level')} quantile of its questions' largest D)"
        )
    else:
        head = (
            f"Epsilon {epsilon:g} is the {record.get('percentile')} of D on calibration run "
            f"{record.get('calibration_run')} (calibration {record.get('calibration')!r}, "
            "organism mode, an assumption beyond the paper)"
        )
    if record.get("unverified"):
        src = record.get("source_run") or {}
        head += (
            f"; its source run is {src.get('origin')}"
            f"{' and derived' if src.get('derived') else ''}, not verified by this store"
        )
    if record.get("selection"):
        head += (
            "; it was calibrated on the data it judges (selection, allowed by --allow-selection)"
        )
    return head + "."
