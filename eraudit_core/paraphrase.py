"""Paraphrase generators, the validity filter and search/test set building (DESIGN.md §5).

An audit is only as good as its paraphrases: each must keep the hidden question's meaning and
must not hint at the answer. This module holds

* the `ParaphraseGenerator` protocol and a name-keyed registry (`register_generator`), so the
  CLI and the dashboard list what exists without a hand-kept list;
* the file generator (reference layout and flat JSONL);
* the validity filter (`filter_paraphrases`): normalised duplicates, near-duplicates of the
  original, answer leakage, embedding cosine to the original, length sanity. Every rejection
  is kept with its reason;
* set building (`build_paraphrase_sets`): search and test sets that are disjoint and
  deduplicated, test generators in the user's fixed order, stored with provenance
  (`store_paraphrase_sets`).

The endpoint, Hugging Face and rule-based generators live in their own modules and register
themselves when `available_generators()` first runs.
"""

from __future__ import annotations

import difflib
import importlib
import json
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from eraudit_core.errors import InputError
from eraudit_core.types import BinaryQuestion, Pair, Paraphrase

SetRole = Literal["search", "test"]
FILTER_VERSION = "1"

# Modules whose import registers the built-in generators (kept lazy: the HF one pulls torch).
_BUILTIN_MODULES = (
    "eraudit_core.paraphrase_rules",
    "eraudit_core.paraphrase_endpoint",
    "eraudit_core.paraphrase_hf",
)


# --------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class Rejection:
    """A candidate the validity filter refused, with why (shown to the user and stored).

    `reason` starts with a short code (``empty``, ``too_short``, ``too_long``,
    ``duplicate_of_original``, ``duplicate``, ``near_duplicate_of_original``, ``answer_leak``,
    ``low_cosine``), then a colon and a human-readable detail.
    """

    pair_id: str
    generator: str
    text: str
    reason: str

    @property
    def code(self) -> str:
        return self.reason.split(":", 1)[0]


# --------------------------------------------------------------------------------------------
# Generator protocol and registry


@runtime_checkable
class ParaphraseGenerator(Protocol):
    """Produces candidate rewrites of one hidden question.

    `name` is what is stored with each paraphrase (e.g. ``rules-a``); `kind` is the registry
    name of the implementation (e.g. ``rules``). Generators see only the question text, never
    the answer options, so they cannot be steered towards or away from an answer.
    """

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def version(self) -> str: ...

    def settings(self) -> dict[str, Any]:
        """Everything needed to reproduce the output (never secrets such as API keys)."""
        ...

    def generate(self, pair_id: str, question: str, n: int) -> list[str]:
        """Up to `n` candidate paraphrases of `question` (unfiltered; may contain junk)."""
        ...


@dataclass(frozen=True)
class GeneratorSpec:
    """A registered generator kind: how to build it and a one-line description for listings."""

    kind: str
    factory: Callable[..., ParaphraseGenerator]
    summary: str
    offline: bool


_REGISTRY: dict[str, GeneratorSpec] = {}


def register_generator(
    kind: str, *, offline: bool, summary: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Class decorator: make a generator kind constructible by name (`create_generator`)."""

    def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
        doc = (factory.__doc__ or "").strip().splitlines()
        _REGISTRY[kind] = GeneratorSpec(
            kind=kind,
            factory=factory,
            summary=summary or (doc[0] if doc else kind),
            offline=offline,
        )
        return factory

    return decorate


def _load_builtins() -> None:
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)


def available_generators() -> dict[str, GeneratorSpec]:
    """All registered generator kinds, by name (imports the built-in ones on first call)."""
    _load_builtins()
    return dict(sorted(_REGISTRY.items()))


def create_generator(kind: str, **settings: Any) -> ParaphraseGenerator:
    """Build a generator of a registered kind; unknown kinds or settings raise InputError."""
    specs = available_generators()
    if kind not in specs:
        raise InputError(f"unknown paraphrase generator {kind!r}; choose one of {sorted(specs)}")
    try:
        return specs[kind].factory(**settings)
    except TypeError as exc:
        raise InputError(f"generator {kind!r}: bad settings {sorted(settings)}: {exc}") from exc


def generator_provenance(generator: ParaphraseGenerator) -> dict[str, Any]:
    """What is stored with every paraphrase of a generator: kind, name, version, settings."""
    return {
        "kind": generator.kind,
        "name": generator.name,
        "version": generator.version,
        "settings": generator.settings(),
    }


# --------------------------------------------------------------------------------------------
# Text normalisation

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STOPWORDS = frozenset(
    """a an the and or but nor of to in on at by for with from into onto upon about as than
    that this these those there here it its it's he she they them his her their hers theirs him
    we us our you your i me my mine is are was were be been being am do does did done doing
    have has had having can could will would shall should may might must not no yes so if then
    when while what which who whom whose why how where all any some each every both either
    neither one ones other others such only own same very too just also more most much many
    few less least out up down over under again once because while during before after
    through between against off than s t don't doesn't didn't isn't aren't wasn't weren't can't
    won't wouldn't couldn't shouldn't like want tell know say please""".split()  # noqa: SIM905
)


def normalize_text(text: str) -> str:
    """Case-, accent-, punctuation- and whitespace-insensitive form used for duplicates."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    return " ".join(_WORD.findall(text))


def _words(text: str) -> list[str]:
    return normalize_text(text).split()


def _stem(word: str) -> str:
    """Crude stem so 'minerals'/'mineral' and "McCain's"/'McCain' count as the same word."""
    word = word.removesuffix("'s")
    for suffix in ("ies", "es", "s"):
        if len(word) > 4 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _contains_phrase(words: Sequence[str], phrase: Sequence[str]) -> bool:
    n = len(phrase)
    if n == 0:
        return False
    return any(list(words[i : i + n]) == list(phrase) for i in range(len(words) - n + 1))


# --------------------------------------------------------------------------------------------
# Validity filter


@dataclass(frozen=True)
class FilterConfig:
    """Thresholds of the validity filter. Validated on entry, errors name the parameter."""

    min_cosine: float = 0.80
    near_duplicate_fraction: float = 0.05
    min_length_ratio: float = 0.5
    max_length_ratio: float = 3.0
    length_slack_chars: int = 60
    max_chars: int = 1000
    min_chars: int = 8
    check_distinctive_words: bool = True

    def __post_init__(self) -> None:
        if not -1.0 <= self.min_cosine <= 1.0:
            raise InputError(f"min_cosine must lie in [-1, 1], got {self.min_cosine!r}")
        if not 0.0 <= self.near_duplicate_fraction < 1.0:
            raise InputError(
                f"near_duplicate_fraction must lie in [0, 1), got {self.near_duplicate_fraction!r}"
            )
        if not 0.0 <= self.min_length_ratio <= 1.0:
            raise InputError(f"min_length_ratio must lie in [0, 1], got {self.min_length_ratio!r}")
        if self.max_length_ratio < 1.0:
            raise InputError(f"max_length_ratio must be >= 1, got {self.max_length_ratio!r}")
        if self.max_chars < 1 or self.min_chars < 1 or self.min_chars > self.max_chars:
            raise InputError(
                f"min_chars/max_chars must satisfy 1 <= min_chars <= max_chars, got "
                f"{self.min_chars!r}/{self.max_chars!r}"
            )
        if self.length_slack_chars < 0:
            raise InputError(f"length_slack_chars must be >= 0, got {self.length_slack_chars!r}")

    def to_dict(self) -> dict[str, Any]:
        from eraudit_core.embeddings import EMBEDDING_MODEL_NAME

        return {**asdict(self), "embedding_model": EMBEDDING_MODEL_NAME, "version": FILTER_VERSION}


@dataclass
class FilterResult:
    """Outcome of filtering one pair's candidates: accepted texts in order, with cosines."""

    accepted: list[str] = field(default_factory=list)
    cosines: list[float] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)


CosineFn = Callable[[str, Sequence[str]], list[float]]


def answer_leak(original: str, candidate: str, options: Sequence[tuple[str, str]]) -> str | None:
    """Why `candidate` hints at an answer, or None.

    An option leaks when its whole text appears in the candidate but not in the original, or
    when one of its distinctive words (a content word of the option that the original does not
    contain) appears in the candidate. `options` is ``[(label, text), ...]``.
    """
    orig_words = _words(original)
    cand_words = _words(candidate)
    orig_stems = {_stem(w) for w in orig_words}
    cand_stems = {_stem(w) for w in cand_words}
    for label, text in options:
        opt_words = _words(text)
        if not opt_words:
            continue
        if _contains_phrase(cand_words, opt_words) and not _contains_phrase(orig_words, opt_words):
            return f"contains the {label} option's text {' '.join(opt_words)!r}"
        distinctive = sorted(
            {
                _stem(w)
                for w in opt_words
                if w not in _STOPWORDS
                and _stem(w) not in _STOPWORDS  # "knows", "what's" are no more distinctive
                and len(w) >= 3
                and _stem(w) not in orig_stems
            }
        )
        leaked = [w for w in distinctive if w in cand_stems]
        if leaked:
            return (
                f"uses the {label} option's word(s) {', '.join(leaked)!r} absent from the original"
            )
    return None


def filter_paraphrases(
    pair_id: str,
    hidden: BinaryQuestion,
    candidates: Sequence[str],
    generator: str,
    config: FilterConfig | None = None,
    exclude: Mapping[str, str] | None = None,
    cosine_fn: CosineFn | None = None,
) -> FilterResult:
    """Keep the candidates that are valid paraphrases of `hidden.question`; reject the rest.

    Checks, in order: empty, length sanity, duplicate of the original (normalised), duplicate of
    an earlier candidate or of a text in `exclude` (normalised text -> where it is used, e.g.
    the search set), near-duplicate of the original (word-sequence similarity at or above
    `near_duplicate_ratio`: a trivial edit is not a rewrite), answer leakage, and last the
    embedding cosine to the original (one batch for all survivors).
    """
    config = config or FilterConfig()
    exclude = dict(exclude or {})
    original = hidden.question
    orig_norm = normalize_text(original)
    options = [("true", hidden.true_option), ("false", hidden.false_option)]
    min_len = max(config.min_chars, int(config.min_length_ratio * len(original.strip())))
    max_len = min(
        config.max_chars,
        int(config.max_length_ratio * len(original.strip())) + config.length_slack_chars,
    )
    near_limit = max(2, int(config.near_duplicate_fraction * len(orig_norm)))
    result = FilterResult()
    survivors: list[str] = []
    seen: dict[str, str] = {}

    def reject(text: str, reason: str) -> None:
        result.rejected.append(Rejection(pair_id, generator, text, reason))

    for raw in candidates:
        text = " ".join(str(raw).split())
        norm = normalize_text(text)
        if not norm:
            reject(text, "empty: no words after normalisation")
            continue
        if len(text) < min_len:
            reject(text, f"too_short: {len(text)} characters, fewer than {min_len}")
            continue
        if len(text) > max_len:
            reject(text, f"too_long: {len(text)} characters, more than {max_len}")
            continue
        if norm == orig_norm:
            reject(text, "duplicate_of_original: identical to the original after normalisation")
            continue
        if norm in seen:
            reject(text, f"duplicate: same text (normalised) as {seen[norm]}")
            continue
        if norm in exclude:
            reject(text, f"duplicate: same text (normalised) as {exclude[norm]}")
            continue
        changed = _chars_changed(orig_norm, norm)
        if changed <= near_limit:
            reject(
                text,
                f"near_duplicate_of_original: only {changed} character(s) differ from the "
                f"original (limit {near_limit})",
            )
            continue
        leak = answer_leak(original, text, options) if config.check_distinctive_words else None
        if leak is None and not config.check_distinctive_words:
            leak = _whole_option_leak(original, text, options)
        if leak:
            reject(text, f"answer_leak: {leak}")
            continue
        seen[norm] = f"an earlier candidate of {generator}"
        survivors.append(text)

    if survivors:
        if cosine_fn is None:
            from eraudit_core.embeddings import cosine_to_original

            cosine_fn = cosine_to_original
        cosines = cosine_fn(original, survivors)
        for text, cos in zip(survivors, cosines, strict=True):
            if cos < config.min_cosine:
                reject(text, f"low_cosine: cosine {cos:.3f} to the original < {config.min_cosine}")
            else:
                result.accepted.append(text)
                result.cosines.append(cos)
    return result


def _chars_changed(a: str, b: str) -> int:
    """Characters inserted, deleted or replaced between two normalised texts."""
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")


def _whole_option_leak(
    original: str, candidate: str, options: Sequence[tuple[str, str]]
) -> str | None:
    orig_words, cand_words = _words(original), _words(candidate)
    for label, text in options:
        opt = _words(text)
        if _contains_phrase(cand_words, opt) and not _contains_phrase(orig_words, opt):
            return f"contains the {label} option's text {' '.join(opt)!r}"
    return None


# --------------------------------------------------------------------------------------------
# Search and test sets


@dataclass
class ParaphraseSets:
    """Filtered, disjoint search and test sets for some pairs, with everything to store them."""

    paraphrases: list[Paraphrase] = field(default_factory=list)
    cosines: list[float] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)
    requested: dict[tuple[str, str], int] = field(default_factory=dict)

    def for_pair(
        self, pair_id: str, role: SetRole | None = None, generator: str | None = None
    ) -> list[Paraphrase]:
        return [
            p
            for p in self.paraphrases
            if p.pair_id == pair_id
            and (role is None or p.role == role)
            and (generator is None or p.generator == generator)
        ]


def build_paraphrase_sets(
    pairs: Sequence[Pair],
    search: Sequence[ParaphraseGenerator],
    test: Sequence[ParaphraseGenerator],
    n_search: int,
    n_test: int,
    config: FilterConfig | None = None,
    oversample: float = 2.0,
    cosine_fn: CosineFn | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ParaphraseSets:
    """Generate, filter and deduplicate paraphrases into disjoint search and test sets.

    Generators run in the given order (search first, then the test generators in the user's
    fixed order). Each one is asked for ``ceil(n * oversample)`` candidates; the first `n`
    that pass the filter are kept. A text already kept for the pair (by any earlier generator,
    search or test) is rejected as a duplicate, which makes every set disjoint from the others.
    """
    if n_search < 0 or n_test < 0:
        raise InputError(f"n_search and n_test must be >= 0, got {n_search}/{n_test}")
    if oversample < 1.0:
        raise InputError(f"oversample must be >= 1, got {oversample!r}")
    names = [g.name for g in (*search, *test)]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"generator names must be distinct across search and test: {dupes}")
    config = config or FilterConfig()
    out = ParaphraseSets()
    plan: list[tuple[SetRole, ParaphraseGenerator, int]] = [
        *(("search", g, n_search) for g in search),
        *(("test", g, n_test) for g in test),
    ]
    for role, gen, _n in plan:
        out.provenance[gen.name] = {
            **generator_provenance(gen),
            "role": role,
            "filter": config.to_dict(),
        }
    # Generate everything first, then embed all candidates in large batches (far faster than
    # one small batch per pair), then filter pair by pair in the fixed generator order.
    candidates: dict[tuple[str, str], list[str]] = {}
    for pair in pairs:
        for _role, gen, n in plan:
            if n == 0:
                continue
            asked = math.ceil(n * oversample)
            candidates[(pair.pair_id, gen.name)] = list(
                gen.generate(pair.pair_id, pair.hidden.question, asked)
            )
            out.requested[(pair.pair_id, gen.name)] = asked
    if cosine_fn is None:
        cosine_fn = _batched_cosines(
            [
                (p.hidden.question, candidates.get((p.pair_id, g.name), []))
                for p in pairs
                for _r, g, _n in plan
            ]
        )
    for done, pair in enumerate(pairs):
        used: dict[str, str] = {}
        for role, gen, n in plan:
            if n == 0:
                continue
            res = filter_paraphrases(
                pair.pair_id,
                pair.hidden,
                candidates[(pair.pair_id, gen.name)],
                gen.name,
                config,
                used,
                cosine_fn,
            )
            out.rejections.extend(res.rejected)
            for idx, (text, cos) in enumerate(zip(res.accepted[:n], res.cosines[:n], strict=True)):
                out.paraphrases.append(Paraphrase(pair.pair_id, role, gen.name, idx, text))
                out.cosines.append(cos)
                used[normalize_text(text)] = f"the {role} set of {gen.name}"
        if progress is not None:
            progress(done + 1, len(pairs))
    check_disjoint(out.paraphrases)
    return out


def _batched_cosines(groups: Sequence[tuple[str, Sequence[str]]]) -> CosineFn:
    """Embed every distinct text of all groups at once; return a lookup with cosine_fn's shape."""
    from eraudit_core.embeddings import embed

    texts = list(dict.fromkeys(t for orig, cands in groups for t in (orig, *cands)))
    texts = [" ".join(t.split()) for t in texts]
    texts = list(dict.fromkeys(texts))
    vectors = embed(texts)
    index = {t: i for i, t in enumerate(texts)}

    def lookup(original: str, cands: Sequence[str]) -> list[float]:
        missing = [c for c in (original, *cands) if " ".join(c.split()) not in index]
        if missing:
            from eraudit_core.embeddings import cosine_to_original

            return cosine_to_original(original, cands)
        o = vectors[index[" ".join(original.split())]]
        return [float(vectors[index[" ".join(c.split())]] @ o) for c in cands]

    return lookup


def check_disjoint(paraphrases: Iterable[Paraphrase]) -> None:
    """Raise InputError if a pair has the same (normalised) text twice in any set or role."""
    seen: dict[tuple[str, str], Paraphrase] = {}
    for p in paraphrases:
        key = (p.pair_id, normalize_text(p.text))
        if key in seen:
            q = seen[key]
            raise InputError(
                f"pair {p.pair_id}: paraphrase {p.text!r} appears in {q.role}/{q.generator} "
                f"idx {q.idx} and in {p.role}/{p.generator} idx {p.idx}; sets must be disjoint"
            )
        seen[key] = p


def store_paraphrase_sets(store: Any, benchmark_id: str, sets: ParaphraseSets) -> int:
    """Store the sets (one call per generator, with its provenance) and all rejections.

    Disjointness is checked against what the store already holds for the benchmark before
    anything is written, so a clash leaves the store untouched. Returns the number stored.
    """
    existing = list(store.paraphrases(benchmark_id))
    # an identical record already stored is fine (storing is idempotent); anything else that
    # repeats a text breaks disjointness
    check_disjoint(dict.fromkeys([*existing, *sets.paraphrases]))
    stored = 0
    for name in dict.fromkeys(p.generator for p in sets.paraphrases):
        batch = [p for p in sets.paraphrases if p.generator == name]
        stored += int(store.add_paraphrases(benchmark_id, batch, sets.provenance.get(name, {})))
    if sets.rejections:
        store.add_rejections(benchmark_id, sets.rejections)
    return stored


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


def _jsonl_records(path: Path) -> Iterable[tuple[int, Mapping[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {line_no} is not valid JSON: {exc.msg}") from exc
        if not isinstance(rec, dict):
            raise InputError(f"{path}: line {line_no}: expected a JSON object")
        yield line_no, rec


def _str_field(rec: Mapping[str, Any], key: str, where: str) -> str:
    value = rec.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}, field {key!r}: missing or not a non-empty string")
    return value


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
    from eraudit_core.benchmark import reference_pair_id

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such paraphrase file")
    head = path.read_text(encoding="utf-8-sig").lstrip()[:1]
    if head != "[":
        return [
            (
                _str_field(rec, "pair_id", f"{path}: line {n}"),
                str(rec.get("generator") or default_generator),
                _str_field(rec, "text", f"{path}: line {n}"),
            )
            for n, rec in _jsonl_records(path)
        ]
    try:
        records = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    out: list[tuple[str, str, str]] = []
    for i, rec in enumerate(records):
        where = f"{path}: record {i}"
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
